/** `memo calendar ...` through the compiled CLI: a CalDAV password from standard input is stored 0600 and never shown. */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { requireFreshBuild } from '../../helpers/dist.js';
import { tempDir } from '../../helpers/kernel-fixture.js';

const BIN = path.resolve('bin/memo');
const PASSWORD = 'stdin-app-password-91c2';

beforeAll(requireFreshBuild);

describe('memo calendar through the CLI', () => {
  const base = tempDir('memo-calendar-cli-');
  const root = path.join(base, 'root');
  const data = path.join(base, 'data');
  fs.mkdirSync(root);
  const memo = (args: string[], input?: string) => {
    const r = spawnSync(process.execPath, [BIN, '--root', root, '--data', data, ...args], {
      encoding: 'utf8',
      ...(input !== undefined ? { input } : { stdio: ['ignore', 'pipe', 'pipe'] }),
    });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  };

  let closedPort = 0;
  beforeAll(async () => {
    // A loopback port nobody listens on: the account's server is down, which must not matter to the password.
    const s = net.createServer();
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    closedPort = (s.address() as net.AddressInfo).port;
    await new Promise((r) => s.close(r));
  });

  it('stores a password given on standard input in a 0600 file and shows it nowhere', () => {
    const added = memo(
      ['calendar', 'add', 'caldav', 'work', `http://127.0.0.1:${closedPort}/`, '--username', 'alice', '--password-stdin', '--writable', '*', '--json'],
      `${PASSWORD}\n`,
    );
    expect(added.code).toBe(0);
    const result = JSON.parse(added.stdout).result;
    expect(result).toMatchObject({ id: 'work', kind: 'caldav', service: 'caldav:work', consent: 'not asked', sync: { status: 'failed' } });
    const secret = path.join(data, 'packs-data', 'calendar', 'credentials', 'work.secret');
    expect(fs.statSync(secret).mode & 0o777).toBe(0o600);
    expect(fs.readFileSync(secret, 'utf8')).toBe(PASSWORD);

    const list = memo(['calendar', 'list', '--json']);
    expect(list.code).toBe(0);
    expect(JSON.parse(list.stdout).result.calendars[1]).toMatchObject({ id: 'work', password: '[stored, masked]', consent: 'not asked' });

    expect(memo(['calendar', 'consent', 'caldav:work', 'allow']).stdout).toBe('The AI may now read events from caldav:work.\n');
    const read = memo(['tools', 'call', 'get_calendar_events', '--args', '{"start":"2026-05-05"}', '--json']);
    const v = JSON.parse(read.stdout);
    expect(v).toMatchObject({ ok: true, result: { sources: ['local', 'work'], warnings: [expect.stringMatching(/^work: /)] } });

    for (const out of [added.stdout, added.stderr, list.stdout, read.stdout, read.stderr]) expect(out).not.toContain(PASSWORD);
    expect(fs.readFileSync(path.join(data, 'agent-audit.jsonl'), 'utf8')).not.toContain(PASSWORD);
    expect(fs.readFileSync(path.join(data, 'packs-data', 'calendar', 'sources.json'), 'utf8')).not.toContain(PASSWORD);
  });

  it('refuses a CalDAV account without a password, and a name that is not kebab-case', () => {
    const none = memo(['calendar', 'add', 'caldav', 'home', 'http://127.0.0.1:1/', '--username', 'bo']);
    expect(none.code).toBe(2);
    expect(none.stdout).toMatch(/^VALIDATION: A CalDAV account needs a password/);
    const bad = memo(['calendar', 'add', 'file', 'My Cal', 'x.ics']);
    expect(bad.code).toBe(2);
  });
});
