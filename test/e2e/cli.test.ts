import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { killWhenDone } from '../helpers/cleanup.js';
import { requireFreshBuild } from '../helpers/dist.js';
import { tempDir } from '../helpers/kernel-fixture.js';

const BIN = path.resolve('bin/memo');
const PACKS = path.resolve('test/fixtures/packs');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  json: any;
}

function memo(args: string[], opts: { root?: string; data?: string; packs?: string | null } = {}): Run {
  const full = [
    ...(opts.packs === null ? [] : ['--packs', opts.packs ?? PACKS]),
    ...(opts.root ? ['--root', opts.root] : []),
    ...(opts.data ? ['--data', opts.data] : []),
    ...args,
  ];
  const res = spawnSync(process.execPath, [BIN, ...full], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  let json: any;
  try {
    json = JSON.parse(res.stdout);
  } catch {
    json = undefined;
  }
  return { code: res.status, stdout: res.stdout, stderr: res.stderr, json };
}

beforeAll(requireFreshBuild);

function workspace() {
  const base = tempDir('memo-cli-');
  const root = path.join(base, 'root');
  fs.mkdirSync(root);
  return { root, data: path.join(base, 'data') };
}

describe('memo CLI', () => {
  it('lists the loaded tools as JSON with danger, effect and schema', () => {
    const w = workspace();
    const r = memo(['tools', 'list', '--json'], w);
    expect(r.code).toBe(0);
    const fixture = r.json.filter((t: any) => t.pack === 'echo-tools');
    expect(fixture.map((t: any) => t.name)).toEqual(['echo', 'note_delete', 'note_write']);
    expect(fixture[0]).toMatchObject({ danger: 'safe', effect: 'read', parameters: { type: 'object' } });
    expect(r.json.map((t: any) => t.name)).toEqual(expect.arrayContaining(['list_skills', 'read_skill']));
  });

  it('calls a safe tool and prints {"ok":true,"result":...} with exit 0', () => {
    const r = memo(['tools', 'call', 'echo', '--args', '{"text":"héllo"}', '--json'], workspace());
    expect(r.code).toBe(0);
    expect(r.json).toEqual({ ok: true, result: { text: 'héllo', summary: 'echoed 5 chars' } });
  });

  it('reports an unknown tool as a tool error with exit 1, and audits it', () => {
    const w = workspace();
    const r = memo(['tools', 'call', 'nope', '--json'], w);
    expect(r.code).toBe(1);
    expect(r.json).toEqual({ ok: false, error: { code: 'UNKNOWN_TOOL', message: expect.stringContaining('nope') } });
    expect(memo(['audit', 'tail', '--json'], w).stdout).toContain('"UNKNOWN_TOOL"');
  });

  it('names each failing field when the arguments fail the schema', () => {
    const r = memo(['tools', 'call', 'echo', '--args', '{"text":3,"x":1}', '--json'], workspace());
    expect(r.code).toBe(1);
    expect(r.json.error.code).toBe('INVALID_ARGS');
    expect(r.json.error.message).toMatch(/text must be string/);
    expect(r.json.error.message).toMatch(/x is not an accepted field/);
  });

  it('refuses arguments that are not JSON with exit 2 and writes nothing', () => {
    const w = workspace();
    const r = memo(['tools', 'call', 'echo', '--args', '{text: hi}', '--json'], w);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('--args is not valid JSON');
    expect(fs.existsSync(w.data)).toBe(false);
  });

  it('refuses a --root that does not exist with exit 2 and writes nothing', () => {
    const w = workspace();
    const r = memo(['tools', 'call', 'echo', '--args', '{"text":"a"}'], { root: path.join(w.root, 'missing'), data: w.data });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('does not exist');
    expect(fs.existsSync(w.data)).toBe(false);
  });

  it('refuses an unwritable --data with exit 2', () => {
    const w = workspace();
    const file = path.join(w.root, 'a-file');
    fs.writeFileSync(file, 'x');
    const r = memo(['tools', 'list'], { root: w.root, data: path.join(file, 'data') });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('cannot be written');
  });

  it('refuses an unknown --approve answer with exit 2', () => {
    const r = memo(['tools', 'call', 'echo', '--approve', 'sure'], workspace());
    expect(r.code).toBe(2);
  });

  it('denies a medium tool when there is no terminal to ask, and the tool does not run', () => {
    const w = workspace();
    const r = memo(['tools', 'call', 'note_write', '--args', '{"line":"x"}', '--json'], w);
    expect(r.code).toBe(1);
    expect(r.json.error).toEqual({ code: 'PERMISSION_DENIED', message: expect.stringContaining('--approve') });
    expect(fs.existsSync(path.join(w.root, 'notes.txt'))).toBe(false);
  });

  it('stores allow-forever, lists it, applies it to later calls, and revokes it', () => {
    const w = workspace();
    expect(memo(['tools', 'call', 'note_write', '--args', '{"line":"one"}', '--approve', 'allow-forever', '--json'], w).code).toBe(0);
    expect(memo(['tools', 'call', 'note_write', '--args', '{"line":"two"}', '--json'], w).code).toBe(0);
    expect(fs.readFileSync(path.join(w.root, 'notes.txt'), 'utf8')).toBe('one\ntwo\n');
    const list = memo(['permissions', 'list', '--json'], w);
    expect(list.json).toEqual([expect.objectContaining({ tool: 'note_write', decision: 'allow', plugin: 'echo-tools' })]);
    expect(memo(['permissions', 'revoke', 'note_write'], w).code).toBe(0);
    expect(memo(['permissions', 'list', '--json'], w).json).toEqual([]);
    expect(memo(['permissions', 'revoke', 'note_write'], w).code).toBe(1);
    expect(memo(['tools', 'call', 'note_write', '--args', '{"line":"three"}', '--json'], w).json.error.code).toBe('PERMISSION_DENIED');
  });

  it('keeps a deny-forever even when a later call comes with --approve allow-once', () => {
    const w = workspace();
    expect(memo(['tools', 'call', 'note_write', '--args', '{"line":"a"}', '--approve', 'deny-forever', '--json'], w).code).toBe(1);
    const r = memo(['tools', 'call', 'note_write', '--args', '{"line":"b"}', '--approve', 'allow-once', '--json'], w);
    expect(r.json.error.code).toBe('PERMISSION_DENIED');
    expect(fs.existsSync(path.join(w.root, 'notes.txt'))).toBe(false);
  });

  it('asks for a delete every time: allow-forever is not stored for it', () => {
    const w = workspace();
    fs.writeFileSync(path.join(w.root, 'notes.txt'), 'x');
    expect(memo(['tools', 'call', 'note_delete', '--approve', 'allow-forever', '--json'], w).code).toBe(0);
    expect(memo(['permissions', 'list', '--json'], w).json).toEqual([]);
    expect(memo(['tools', 'call', 'note_delete', '--json'], w).json.error.code).toBe('PERMISSION_DENIED');
  });

  it('never prints or audits a secret argument', () => {
    const w = workspace();
    const secret = 'sk-test-0123456789abcdefABCDEF';
    const r = memo(['tools', 'call', 'note_write', '--args', JSON.stringify({ line: 'l', token: secret }), '--approve', 'allow-once', '--json'], w);
    expect(r.code).toBe(0);
    const tail = memo(['audit', 'tail', '--json'], w);
    expect(r.stdout + r.stderr + tail.stdout + fs.readFileSync(path.join(w.data, 'agent-audit.jsonl'), 'utf8')).not.toContain(secret);
    expect(tail.stdout).toContain('[masked]');
  });

  it('tails the audit trail filtered by tool, and verifies the chain', () => {
    const w = workspace();
    for (const t of ['a', 'b', 'c']) memo(['tools', 'call', 'echo', '--args', JSON.stringify({ text: t })], w);
    memo(['tools', 'call', 'note_write', '--args', '{"line":"z"}'], w);
    const tail = memo(['audit', 'tail', '-n', '2', '--tool', 'echo', '--json'], w);
    const entries = tail.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(entries.map((e) => e.args.text)).toEqual(['b', 'c']);
    const text = memo(['audit', 'tail'], w);
    expect(text.stdout).toMatch(/note_write\s+deny:unanswered\s+PERMISSION_DENIED/);
    const ok = memo(['audit', 'verify', '--json'], w);
    expect(ok.code).toBe(0);
    expect(ok.json).toMatchObject({ ok: true, entries: 4 });
  });

  it('reports the first tampered line and exits 1', () => {
    const w = workspace();
    for (const t of ['a', 'b', 'c']) memo(['tools', 'call', 'echo', '--args', JSON.stringify({ text: t })], w);
    const file = path.join(w.data, 'agent-audit.jsonl');
    fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('"text":"b"', '"text":"B"'));
    const r = memo(['audit', 'verify'], w);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('line 2');
  });

  it('exits 2 on an unknown command', () => {
    expect(memo(['frobnicate'], workspace()).code).toBe(2);
  });

  it('serve --json prints one line with the pid and stops cleanly on SIGTERM', async () => {
    const w = workspace();
    const child = killWhenDone(
      spawn(process.execPath, [BIN, '--packs', PACKS, '--root', w.root, '--data', w.data, 'serve', '--json'], { stdio: ['ignore', 'pipe', 'pipe'] }),
    );
    try {
      const line = await new Promise<string>((resolve, reject) => {
        let buf = '';
        child.stdout.on('data', (d) => {
          buf += d;
          if (buf.includes('\n')) resolve(buf.slice(0, buf.indexOf('\n')));
        });
        child.on('exit', () => reject(new Error(`exited early: ${buf}`)));
      });
      const info = JSON.parse(line);
      expect(info.pid).toBe(child.pid);
      expect(info.tools).toBe(memo(['tools', 'list', '--json'], w).json.length);
      const code = await new Promise<number | null>((resolve) => {
        child.on('exit', (c) => resolve(c));
        child.kill('SIGTERM');
      });
      expect(code).toBe(0);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
});

describe('memo plugins', () => {
  it('lists every pack with version, source, enabled state, tool count and status', () => {
    const r = memo(['plugins', 'list', '--json'], workspace());
    expect(r.code).toBe(0);
    expect(r.json.find((p: any) => p.id === 'echo-tools')).toEqual(
      expect.objectContaining({ version: '1.0.0', source: 'extra', enabled: true, tools: 3, status: 'loaded' }),
    );
    expect(r.json.every((p: any) => p.status === 'loaded')).toBe(true);
  });

  it('shows each tool with its danger level and schema in info', () => {
    const r = memo(['plugins', 'info', 'echo-tools'], workspace());
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/note_delete\s+\[dangerous, delete\]/);
    expect(r.stdout).toContain('parameters: {"type":"object"');
    expect(memo(['plugins', 'info', 'nope'], workspace()).code).toBe(1);
  });

  it('disables a pack so its tools vanish and calls get TOOL_DISABLED, and the choice survives restarts until enabled', () => {
    const w = workspace();
    expect(memo(['plugins', 'disable', 'echo-tools'], w).code).toBe(0);
    expect(memo(['tools', 'list', '--json'], w).json.filter((t: any) => t.pack === 'echo-tools')).toEqual([]);
    expect(memo(['tools', 'call', 'echo', '--args', '{"text":"a"}', '--json'], w).json.error.code).toBe('TOOL_DISABLED');
    expect(memo(['plugins', 'list', '--json'], w).json.find((p: any) => p.id === 'echo-tools').enabled).toBe(false);
    expect(memo(['plugins', 'enable', 'echo-tools'], w).code).toBe(0);
    expect(memo(['tools', 'call', 'echo', '--args', '{"text":"a"}', '--json'], w).json.ok).toBe(true);
  });

  it('refuses to enable a pack that does not exist', () => {
    const r = memo(['plugins', 'enable', 'ghost'], workspace());
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/There is no pack "ghost" \(packs: .*echo-tools/);
  });

  it('shows settings with defaults, sets valid ones, and refuses invalid ones with the schema reason', () => {
    const w = workspace();
    expect(memo(['plugins', 'config', 'echo-tools', '--json'], w).json).toEqual({ prefix: '', repeat: 1 });
    expect(memo(['plugins', 'config', 'echo-tools', 'prefix=>> ', 'repeat=2', '--json'], w).json).toEqual({ prefix: '>> ', repeat: 2 });
    expect(memo(['tools', 'call', 'echo', '--args', '{"text":"ab"}', '--json'], w).json.result.text).toBe('>> abab');
    const bad = memo(['plugins', 'config', 'echo-tools', 'repeat=9'], w);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('repeat must be <= 5');
    const unknown = memo(['plugins', 'config', 'echo-tools', 'colour=red'], w);
    expect(unknown.stderr).toContain('colour is not an accepted field (accepted: prefix, repeat)');
    expect(memo(['plugins', 'config', 'echo-tools', '--json'], w).json).toEqual({ prefix: '>> ', repeat: 2 });
  });
});
