/**
 * `memo audit tail --admin` with MEMO_DATABASE_URL: real `memo` processes (the built CLI) on two data
 * folders sharing one PostgreSQL database; the admin lines of both instances' chains, and no calls.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { requireFreshBuild } from '../helpers/dist.js';
import { tempDir } from '../helpers/kernel-fixture.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';

const BIN = path.resolve('bin/memo');
const PACKS = path.resolve('test/fixtures/packs');

let server: TestPostgres;
let url: string;
beforeAll(async () => {
  requireFreshBuild();
  server = await startPostgres();
  url = await server.database();
}, 120_000);

function memo(data: string, ...args: string[]): { code: number | null; stdout: string; stderr: string } {
  const res = spawnSync(process.execPath, [BIN, '--packs', PACKS, '--root', path.dirname(data), '--data', data, ...args], {
    encoding: 'utf8',
    env: { ...process.env, MEMO_DATABASE_URL: url },
  });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr };
}

function instance(id: string): string {
  const dir = path.join(tempDir('memo-pg-admin-'), 'data');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'instance-id'), `${id}\n`);
  return dir;
}

describe('memo audit tail --admin with MEMO_DATABASE_URL', () => {
  it("lists every instance's admin lines, newest last, with an INSTANCE column, and leaves out the calls", () => {
    const a = instance('alpha');
    const b = instance('beta');
    expect(memo(a, 'tools', 'call', 'echo', '--args', '{"text":"a"}').code).toBe(0);
    expect(memo(b, 'tools', 'call', 'echo', '--args', '{"text":"b"}').code).toBe(0);
    // The packs' settings are the database's, shared: one instance disables, the other enables again.
    expect(memo(a, 'plugins', 'disable', 'echo-tools').code).toBe(0);
    expect(memo(b, 'plugins', 'enable', 'echo-tools').code).toBe(0);
    expect(fs.existsSync(path.join(a, 'agent-audit.jsonl'))).toBe(false);

    const json = memo(a, 'audit', 'tail', '--admin', '--json');
    expect(json.code).toBe(0);
    const lines = json.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((e) => [e.instance, e.event, e.action, e.target, e.by])).toEqual([
      ['alpha', 'admin', 'pack.disable', 'echo-tools', 'cli'],
      ['beta', 'admin', 'pack.enable', 'echo-tools', 'cli'],
    ]);

    const text = memo(b, 'audit', 'tail', '--admin');
    expect(text.code).toBe(0);
    expect(text.stdout.trimEnd().split('\n')).toEqual([
      expect.stringMatching(/^INSTANCE +TIME +BY +ACTION +TARGET +CHANGE$/),
      expect.stringMatching(new RegExp(`^alpha +${lines[0].ts} +cli +pack\\.disable +echo-tools +-$`)),
      expect.stringMatching(new RegExp(`^beta +${lines[1].ts} +cli +pack\\.enable +echo-tools +-$`)),
    ]);

    const newest = memo(a, 'audit', 'tail', '--admin', '-n', '1', '--json');
    expect(JSON.parse(newest.stdout)).toMatchObject({ instance: 'beta', action: 'pack.enable' });
  }, 120_000);
});
