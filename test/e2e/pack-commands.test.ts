/** Command groups packs contribute, run through the compiled CLI (`memo contrib ping`). */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { requireFreshBuild } from '../helpers/dist.js';
import { tempDir } from '../helpers/kernel-fixture.js';
import { ServeProcess } from '../mcp/mcp-helpers.js';

const BIN = path.resolve('bin/memo');
const PACKS = path.resolve('test/fixtures/contrib-packs');

function memo(...args: string[]) {
  const data = path.join(tempDir('memo-packcmd-'), 'data');
  const res = spawnSync(process.execPath, [BIN, '--data', data, '--packs', PACKS, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr, data };
}

beforeAll(requireFreshBuild);

describe('memo <pack command>', () => {
  it('runs a subcommand a pack contributes, which calls its tool through the pipeline', () => {
    const r = memo('contrib', 'ping', 'hello');
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('pong hello\n');
    expect(r.code).toBe(0);
  });

  it('passes options and reports a failed tool call with the exit code the pack returns', () => {
    const ok = memo('contrib', 'ping', 'hi', '--json');
    expect(JSON.parse(ok.stdout)).toEqual({ word: 'hi', note: null, greeting: 'hello hi' });
    const failed = memo('contrib', 'ping', 'fail');
    expect(failed.stdout).toBe('failed: NOT_FOUND\n');
    expect(failed.code).toBe(1);
  });

  it('boots the kernel on the global options, before or after the command word', () => {
    for (const order of ['before', 'after'] as const) {
      const data = path.join(tempDir('memo-packcmd-'), 'data');
      const args = order === 'before' ? ['--data', data, '--packs', PACKS, 'contrib', 'ping', 'x'] : ['--packs', PACKS, 'contrib', '--data', data, 'ping', 'x'];
      const res = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8' });
      expect(res.stdout).toBe('pong x\n');
      // The call was audited in that data folder, not in ./data.
      expect(fs.readFileSync(path.join(data, 'agent-audit.jsonl'), 'utf8')).toContain('"tool":"contrib_ping"');
    }
  });

  it('says a command is unknown when no pack provides it (exit 2)', () => {
    const r = memo('nosuch', 'thing');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/unknown command 'nosuch'/);
  });
});

describe('memo serve and pack services', () => {
  it('starts the services of the loaded packs and stops them when it is stopped', async () => {
    const base = tempDir('memo-serve-services-');
    const data = path.join(base, 'data');
    const root = path.join(base, 'root');
    fs.mkdirSync(root);
    const serve = ServeProcess.start(['--packs', PACKS, '--root', root, '--data', data, 'serve', '--json']);
    await serve.json(0);
    const events = path.join(data, 'packs-data', 'contrib-demo', 'events.log');
    // The ready line comes after start(): the service has run its first tool call by then.
    expect(fs.readFileSync(events, 'utf8')).toBe('service started\n');
    expect(await serve.stop()).toBe(0);
    expect(fs.readFileSync(events, 'utf8')).toBe('service started\nservice stopped\n');
    const audit = fs.readFileSync(path.join(data, 'agent-audit.jsonl'), 'utf8');
    expect(audit).toContain('"caller":{"kind":"host","id":"contrib-demo/ticker"}');
  });
});
