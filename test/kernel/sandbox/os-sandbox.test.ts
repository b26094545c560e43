/**
 * The OS wall (bubblewrap) under run_command and runProcess, tried as an attacker would: with the
 * default layout (the data folder inside the root), by spellings the command judge cannot see (a
 * script file run by bash), so only the sandbox stands in the way. Real bwrap, real files, real
 * loopback listeners; nothing of the sandbox is mocked.
 */
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { osSandboxStatus, BWRAP_ENV } from '../../../kernel/sandbox/os-sandbox.js';
import { runProcess, type RunOptions } from '../../../kernel/sandbox/process-runner.js';
import { isPublicAddress } from '../../../kernel/util/public-address.js';
import type { ToolResult } from '../../../kernel/tools/contract.js';
import { makeKernel, tempDir, type Fixture } from '../../helpers/kernel-fixture.js';
import { requireFreshBuild } from '../../helpers/dist.js';
import { ControlServer } from '../../../kernel/control/control-server.js';
import { MemoryLogger } from '../../../kernel/logger.js';
import { waitFor } from '../../helpers/wait.js';

const value = (r: ToolResult): any => (r.ok ? r.value : undefined);
const REPO = path.resolve('.');
const MEMO_BIN = path.join(REPO, 'bin', 'memo');

const status = await osSandboxStatus();
if (!status.available) throw new Error(`these tests need bubblewrap: ${status.reason}`);

/** A kernel whose data folder is inside its root (the default layout), with the built-in packs. */
async function defaultLayout(): Promise<Fixture> {
  const root = tempDir('memo-root-');
  const fx = makeKernel({ packs: [], root, dataDir: path.join(root, 'data') });
  await fx.kernel.loadPacks([{ dir: path.resolve('plugins'), source: 'builtin' }]);
  fx.prompter.setFallback('allow-once');
  // The audit trail and its key exist once a call was recorded.
  await fx.kernel.invoke({ tool: 'read_env', args: { names: ['PATH'] }, caller: { kind: 'agent' } });
  return fx;
}

const run = (fx: Fixture, command: string) => fx.kernel.invoke({ tool: 'run_command', args: { command }, caller: { kind: 'agent' } });

/** Runs a script file the judge cannot read: only the OS stands between it and the kernel's state. */
async function runScript(fx: Fixture, body: string): Promise<{ stdout: string; stderr: string; exitCode: number | null; sandboxed: boolean }> {
  fs.writeFileSync(path.join(fx.root, 'attack.sh'), body);
  const r = await run(fx, 'bash attack.sh');
  if (!r.ok) throw new Error(`run_command failed: ${r.error.code}: ${r.error.message}`);
  return value(r);
}

describe('run_command in the OS sandbox, with the data folder inside the root', () => {
  let fx: Fixture;
  beforeEach(async () => (fx = await defaultLayout()));
  afterEach(async () => fx.close());

  it('runs everyday commands sandboxed and gives their output: ls, git status, a write inside the root', async () => {
    fs.writeFileSync(path.join(fx.root, 'notes.txt'), 'hello\n');
    const ls = value(await run(fx, 'ls'));
    expect(ls).toMatchObject({ exitCode: 0, sandboxed: true });
    expect(ls.stdout).toContain('notes.txt');
    const git = value(await run(fx, 'git init -q . && git status --short'));
    expect(git).toMatchObject({ exitCode: 0, sandboxed: true });
    expect(git.stdout).toContain('notes.txt');
    expect(value(await run(fx, 'echo written > out.txt && cat out.txt'))).toMatchObject({ exitCode: 0, stdout: 'written\n' });
    expect(fs.readFileSync(path.join(fx.root, 'out.txt'), 'utf8')).toBe('written\n');
  });

  it('runs npm test in a project, with a private writable HOME for npm', async () => {
    fs.writeFileSync(path.join(fx.root, 'package.json'), JSON.stringify({ name: 'p', version: '1.0.0', scripts: { test: 'echo tests-ran' } }));
    const r = value(await run(fx, 'npm test'));
    expect(r).toMatchObject({ exitCode: 0, sandboxed: true });
    expect(r.stdout).toContain('tests-ran');
  });

  it('shows no spelling of the data folder or the audit key, and changes nothing in it', async () => {
    const key = fs.readFileSync(path.join(fx.dataDir, 'audit.key'), 'utf8').trim();
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    const before = fs.readdirSync(fx.dataDir).sort();
    const r = await runScript(
      fx,
      [
        'cat data/audit.key',
        'cat ~+/data/audit.key',
        'cat "$PWD/data/audit.key"',
        'cat "$(pwd)/data/audit.key"',
        `cat ${fx.dataDir}/audit.key`,
        'ls -la data',
        'grep -r . . 2>/dev/null | rev',
        'tar c . 2>/dev/null | base64',
        'echo \'{"decisions":[{"tool":"write_file","decision":"allow","scope":"forever"}]}\' > data/permissions.json',
        'touch data/planted',
        'rm -rf data/*',
        'echo done',
      ].join('\n'),
    );
    expect(r.sandboxed).toBe(true);
    expect(r.stdout).toContain('done');
    const all = `${r.stdout}\n${r.stderr}`;
    expect(all).not.toContain(key);
    expect(all).not.toContain([...key].reverse().join(''));
    expect(Buffer.from(all.replace(/\s/g, ''), 'base64').toString('latin1')).not.toContain(key);
    expect(fs.readdirSync(fx.dataDir).sort()).toEqual(before);
    expect(fs.readFileSync(path.join(fx.dataDir, 'audit.key'), 'utf8').trim()).toBe(key);
    // write_file is still asked.
    const asked = fx.prompter.asked.length;
    await fx.kernel.invoke({ tool: 'write_file', args: { path: 'x.txt', content: 'x' }, caller: { kind: 'agent' } });
    expect(fx.prompter.asked.length).toBe(asked + 1);
  });

  it("lets everyday recursive commands run: the data folder is out of the sandbox's reach, not in their way", async () => {
    fs.mkdirSync(path.join(fx.root, 'src'));
    fs.writeFileSync(path.join(fx.root, 'src', 'a.pyc'), '');
    const r = await runScript(fx, "find . -name '*.pyc' -delete && echo deleted");
    expect(r.stdout).toContain('deleted');
    expect(fs.existsSync(path.join(fx.root, 'src', 'a.pyc'))).toBe(false);
    expect(fs.existsSync(path.join(fx.dataDir, 'audit.key'))).toBe(true);
  });

  it("cannot turn on always-allow or answer approvals through memo's own CLI, whatever it is called", async () => {
    const r = await runScript(
      fx,
      [
        `node ${MEMO_BIN} permissions always-allow on`,
        `node ${MEMO_BIN} --data ${fx.dataDir} permissions always-allow on`,
        `node ${MEMO_BIN} --data ${fx.dataDir} permissions allow write_file`,
        `node ${MEMO_BIN} --data ${fx.dataDir} approvals answer 1 allow-once`,
        'echo done',
      ].join('\n'),
    );
    expect(r.stdout).toContain('done');
    const status = spawnSync(process.execPath, [MEMO_BIN, '--root', fx.root, '--data', fx.dataDir, 'permissions', 'always-allow', 'status'], {
      encoding: 'utf8',
    });
    expect(status.stdout).toMatch(/is off/);
    expect(fx.kernel.permissions.list().filter((d) => d.tool === 'write_file')).toEqual([]);
  });

  it('writes nothing outside the root: not HOME, not a sibling folder, and /tmp is private to the call', async () => {
    const outside = tempDir('memo-outside-');
    const r = await runScript(
      fx,
      [`touch ${outside}/escaped 2>&1`, `touch ${os.homedir()}/memo-escaped 2>&1`, 'echo private > /tmp/memo-private-file', 'echo "home=$HOME"'].join('\n'),
    );
    expect(r.stdout).toContain('home=/tmp/home');
    expect(fs.existsSync(path.join(outside, 'escaped'))).toBe(false);
    expect(fs.existsSync(path.join(os.homedir(), 'memo-escaped'))).toBe(false);
    expect(fs.existsSync('/tmp/memo-private-file')).toBe(false);
    expect(r.stdout).toMatch(/Read-only file system/);
  });
});

describe("memo's own CLI run as a command, with memo serve's control socket on the data folder", () => {
  it('cannot answer a waiting approval, in any spelling of the data folder', async () => {
    const root = tempDir('memo-root-');
    const fx = makeKernel({ packs: [], root, dataDir: path.join(root, 'data'), prompter: null });
    const control = await ControlServer.start({ kernel: fx.kernel, packFolders: [], skillFolders: [], logger: new MemoryLogger() });
    try {
      if (!control) throw new Error('no control socket');
      await fx.kernel.loadPacks([{ dir: path.resolve('plugins'), source: 'builtin' }]);
      const pendingOf = (tool: string) => fx.kernel.approvals.pending().find((p) => p.request.tool === tool);
      // Another caller's write waits for a person.
      const write = fx.kernel.invoke({ tool: 'write_file', args: { path: 'x.txt', content: 'x' }, caller: { kind: 'host', id: 'another-caller' } });
      await waitFor(() => pendingOf('write_file') !== undefined, { what: 'the write to wait' });
      const id = pendingOf('write_file')!.id;
      const answer = (data: string) => `node ${MEMO_BIN} --data ${data} approvals answer ${id} allow-once`;
      fs.writeFileSync(path.join(root, 'answer.sh'), [answer('"$PWD/data"'), answer(fx.dataDir), 'echo done'].join('\n'));
      const command = fx.kernel.invoke({ tool: 'run_command', args: { command: 'bash answer.sh' }, caller: { kind: 'agent' } });
      await waitFor(() => pendingOf('run_command') !== undefined, { what: 'run_command to be asked' });
      fx.kernel.approvals.answer(pendingOf('run_command')!.id, 'allow-once');
      const r = await command;
      expect(r.ok && (r.value as { stdout: string }).stdout).toContain('done');
      // The write still waits: nobody answered it.
      expect(pendingOf('write_file')?.id).toBe(id);
      fx.kernel.approvals.answer(id, 'deny-once');
      expect((await write).ok).toBe(false);
      expect(fs.existsSync(path.join(root, 'x.txt'))).toBe(false);
    } finally {
      await control?.close();
      await fx.close();
    }
  });
});

describe('a SKILL.md command tool in the OS sandbox', () => {
  let fx: Fixture;
  afterEach(async () => fx?.close());

  it('runs its bundled script from its own folder, which is read-only, and reaches neither kernel state nor memo settings nor loopback', async () => {
    fx = await defaultLayout();
    const server = http.createServer((_req, res) => res.end('local-service-secret'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      // The skill lives in the data folder's skills/ (masked inside): only its own folder is shown again.
      const dir = path.join(fx.dataDir, 'skills', 'probe');
      fs.mkdirSync(path.join(dir, 'scripts'), { recursive: true });
      fs.writeFileSync(
        path.join(dir, 'SKILL.md'),
        [
          '---',
          'name: probe',
          'description: Probes the sandbox.',
          'tools:',
          '  - name: probe_sandbox',
          '    description: d',
          '    script: scripts/probe.sh',
          '    command: "bash {script}"',
          '    parameters: { type: object }',
          '---',
          'Probe.',
          '',
        ].join('\n'),
      );
      const script = path.join(dir, 'scripts', 'probe.sh');
      fs.writeFileSync(
        script,
        [
          'cat data/audit.key',
          `node ${MEMO_BIN} --data "$PWD/data" permissions always-allow on`,
          `curl -sS --max-time 5 http://127.0.0.1:${port}/`,
          'echo tampered >> "$(dirname "$0")/probe.sh"; echo "own-folder=$?"',
          'echo from-skill > skill-out.txt',
          'echo done',
        ].join('\n'),
      );
      const original = fs.readFileSync(script, 'utf8');
      await fx.kernel.loadSkills([{ dir: path.join(fx.dataDir, 'skills'), source: 'extra' }]);
      const key = fs.readFileSync(path.join(fx.dataDir, 'audit.key'), 'utf8').trim();
      const r = await fx.kernel.invoke({ tool: 'probe_sandbox', args: {}, caller: { kind: 'agent' } });
      if (!r.ok) throw new Error(`${r.error.code}: ${r.error.message}`);
      const v = r.value as { stdout: string; stderr: string };
      const out = `${v.stdout}\n${v.stderr}`;
      expect(v.stdout).toContain('done');
      expect(out).not.toContain(key);
      expect(out).not.toContain('local-service-secret');
      expect(v.stdout).toMatch(/own-folder=[1-9]/);
      expect(fs.readFileSync(script, 'utf8')).toBe(original);
      expect(fs.readFileSync(path.join(fx.root, 'skill-out.txt'), 'utf8')).toBe('from-skill\n');
      expect(fx.kernel.permissions.alwaysAllow).toBe(false);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});

describe('the network of a sandboxed command', () => {
  let server: http.Server;
  let port: number;
  let hits = 0;
  beforeAll(async () => {
    server = http.createServer((_req, res) => {
      hits++;
      res.end('kernel-endpoint-secret');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => new Promise<void>((r) => server.close(() => r())));

  const opts = (extra: Partial<RunOptions> = {}): RunOptions => ({
    cwd: tempDir('memo-net-'),
    signal: new AbortController().signal,
    timeoutMs: 30_000,
    maxOutputBytes: 64 * 1024,
    ...extra,
  });

  it('is off by default: a loopback listener of the host cannot be reached', async () => {
    const before = hits;
    const r = await runProcess(['/bin/sh', '-c', `curl -sS --max-time 5 http://127.0.0.1:${port}/ 2>&1; echo "exit=$?"`], opts());
    expect(r.sandboxed).toBe(true);
    expect(r.stdout).not.toContain('kernel-endpoint-secret');
    expect(r.stdout).toMatch(/exit=[1-9]/);
    expect(hits).toBe(before);
  });

  it('allowed, still never reaches loopback, link-local or private addresses: not through the proxy, not around it', async () => {
    const cwd = tempDir('memo-net-');
    const before = hits;
    const r = await runProcess(
      [
        '/bin/sh',
        '-c',
        [
          `curl -fsS --max-time 5 http://127.0.0.1:${port}/ 2>&1; echo " proxied=$?"`,
          `curl -fsS --max-time 5 http://localhost:${port}/ 2>&1; echo " by-name=$?"`,
          `curl -sS --max-time 5 --noproxy '*' http://127.0.0.1:${port}/ 2>&1; echo " direct=$?"`,
          'curl -fsS --max-time 5 http://169.254.169.254/latest/meta-data/ 2>&1; echo " metadata=$?"',
          `curl -sS --max-time 5 -p http://10.1.2.3:${port}/ 2>&1; echo " private=$?"`,
        ].join('\n'),
      ],
      opts({ cwd, sandbox: { writable: [cwd], network: { domains: 'any' } } }),
    );
    expect(r.stdout).not.toContain('kernel-endpoint-secret');
    expect(r.stdout).toMatch(/error: 403/);
    for (const k of ['proxied', 'by-name', 'direct', 'metadata', 'private']) expect(r.stdout).toMatch(new RegExp(`${k}=[1-9]`));
    expect(hits).toBe(before);
  });

  it('refuses a domain the grant does not name', async () => {
    const cwd = tempDir('memo-net-');
    const r = await runProcess(
      ['/bin/sh', '-c', 'curl -sS --max-time 5 https://example.org/ 2>&1; echo " exit=$?"'],
      opts({ cwd, sandbox: { writable: [cwd], network: { domains: ['registry.npmjs.org'] } } }),
    );
    expect(r.stdout).toMatch(/exit=[1-9]/);
  });

  it('through run_command: network use is a concern asked every time, naming the domains; allowed, it runs with network that still refuses loopback', async () => {
    const fx = await defaultLayout();
    try {
      const before = hits;
      fx.prompter.answer('allow-session');
      // A plain command: the session grant covers the next one.
      expect(value(await run(fx, 'echo plain'))).toMatchObject({ stdout: 'plain\n', network: 'off' });
      const asked = fx.prompter.asked.length;
      expect(value(await run(fx, 'echo again'))).toMatchObject({ stdout: 'again\n' });
      expect(fx.prompter.asked.length).toBe(asked);
      // A network command is asked anyway, with the concern and its domains.
      fx.prompter.answer('allow-once');
      const r = value(await run(fx, `curl -sS --max-time 5 http://127.0.0.1:${port}/`));
      expect(fx.prompter.asked.length).toBe(asked + 1);
      expect(fx.prompter.asked.at(-1)!.concern).toMatchObject({ rule: 'network', reason: expect.stringContaining('curl') });
      expect(fx.prompter.asked.at(-1)!.concern!.reason).toContain('any public address');
      expect(r).toMatchObject({ network: 'any', sandboxed: true });
      expect(r.stdout).not.toContain('kernel-endpoint-secret');
      expect(r.stdout).toContain('not a public address');
      // Denied, it does not run.
      fx.prompter.answer('deny-once');
      const denied = await run(fx, `curl -sS --max-time 5 http://127.0.0.1:${port}/ > curl-ran.txt`);
      expect(denied.ok).toBe(false);
      expect(fs.existsSync(path.join(fx.root, 'curl-ran.txt'))).toBe(false);
      expect(hits).toBe(before);
    } finally {
      await fx.close();
    }
  });

  it('classifies addresses: public unicast only', () => {
    for (const a of [
      '127.0.0.1',
      '10.0.0.1',
      '172.20.1.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      '::',
      'fe80::1',
      'fd00::1',
      '::ffff:127.0.0.1',
      '::ffff:10.0.0.1',
      '64:ff9b::7f00:1',
      '224.0.0.1',
    ])
      expect([a, isPublicAddress(a)]).toEqual([a, false]);
    for (const a of ['1.1.1.1', '104.16.0.1', '2606:4700::1111', '::ffff:8.8.8.8']) expect([a, isPublicAddress(a)]).toEqual([a, true]);
  });
});

describe('processes of a sandboxed command', () => {
  it('stops a fork bomb at the process limit, and ends all of it with the call', async () => {
    const cwd = tempDir('memo-bomb-');
    fs.writeFileSync(path.join(cwd, 'bomb.sh'), 'b(){ b | b & }; b\nsleep 30\n');
    const ac = new AbortController();
    const r = runProcess(['/bin/bash', 'bomb.sh'], { cwd, signal: ac.signal, timeoutMs: 4000, maxOutputBytes: 4096, killGraceMs: 200 });
    // Meanwhile another command runs.
    const other = await runProcess(['/bin/echo', 'still-serving'], { cwd, signal: new AbortController().signal, timeoutMs: 60_000, maxOutputBytes: 4096 });
    expect(other.stdout).toBe('still-serving\n');
    const res = await r;
    expect(res.timedOut || res.signal !== null || res.exitCode !== 0).toBe(true);
    // Nothing of it is left: no bash running bomb.sh.
    const left = spawnSync('pgrep', ['-f', 'bomb.sh'], { encoding: 'utf8' }).stdout.trim();
    expect(left).toBe('');
  });
});

describe('a sandboxed command ending', () => {
  const procs = (t: string) => spawnSync('pgrep', ['-f', t], { encoding: 'utf8' }).stdout.trim();

  it('gives a command that handles SIGTERM its grace on cancellation, and reports its own exit code', async () => {
    const cwd = tempDir('memo-term-');
    const ready = path.join(cwd, 'ready');
    const ac = new AbortController();
    const pending = runProcess(['/bin/bash', '-c', `trap 'echo cleaning; exit 7' TERM; touch ${ready}; sleep 300 & wait`], {
      cwd,
      signal: ac.signal,
      timeoutMs: 60_000,
      maxOutputBytes: 4096,
    });
    await waitFor(() => fs.existsSync(ready), { what: 'the command to start' });
    ac.abort();
    expect(await pending).toMatchObject({ exitCode: 7, signal: null, stdout: 'cleaning\n', cancelled: true, sandboxed: true });
  });

  it('ends with the process that ran it when that is killed with SIGKILL, a setsid child too', async () => {
    requireFreshBuild();
    const cwd = tempDir('memo-host-');
    const ready = path.join(cwd, 'ready');
    const t = `4${Date.now() % 100000}.${process.pid}7`;
    const runner = pathToFileURL(path.resolve('dist/kernel/sandbox/process-runner.js')).href;
    const script = `const { runProcess } = await import(${JSON.stringify(runner)});
      await runProcess(['/bin/sh', '-c', ${JSON.stringify(`setsid -f /bin/sleep ${t}; touch ${ready}; exec /bin/sleep ${t}`)}],
        { cwd: ${JSON.stringify(cwd)}, timeoutMs: 600000, maxOutputBytes: 1000, signal: new AbortController().signal });`;
    // Its own temp folder: the killed runner cannot remove its call's folder; the next Memo does.
    const tmp = tempDir('memo-host-tmp-');
    const host = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: 'ignore', env: { ...process.env, TMPDIR: tmp } });
    const exited = new Promise<void>((r) => host.once('exit', () => r()));
    try {
      await waitFor(() => fs.existsSync(ready), { what: 'the command to start' });
      expect(procs(t)).not.toBe('');
      host.kill('SIGKILL');
      await exited;
      await waitFor(() => procs(t) === '', { what: 'the sandboxed processes to end' });
      const left = () => fs.readdirSync(tmp).filter((n) => n.startsWith(`memo-sandbox-${host.pid}-`));
      expect(left()).toHaveLength(1);
      // The next Memo's first sandboxed call removes the folder of the one that died.
      const next = `const { runProcess } = await import(${JSON.stringify(runner)});
        await runProcess(['/bin/true'], { cwd: ${JSON.stringify(cwd)}, timeoutMs: 60000, maxOutputBytes: 1000, signal: new AbortController().signal });`;
      expect(spawnSync(process.execPath, ['--input-type=module', '-e', next], { env: { ...process.env, TMPDIR: tmp } }).status).toBe(0);
      expect(left()).toEqual([]);
    } finally {
      host.kill('SIGKILL');
      spawnSync('pkill', ['-9', '-f', t]);
    }
  });
});

// As root the tests run as, a pids cgroup limits processes; a user that is not root usually cannot make
// one, and gets RLIMIT_NPROC inside the sandbox instead. Run as nobody to check that path for real.
const asNobody = process.geteuid?.() === 0 ? it : it.skip;

describe('the sandbox for a user that is not root', () => {
  asNobody('runs commands, limits processes with RLIMIT_NPROC inside, and keeps the proxy in front of the network', () => {
    requireFreshBuild();
    const dir = tempDir('memo-nobody-');
    fs.chmodSync(dir, 0o777);
    const work = path.join(dir, 'work');
    fs.mkdirSync(work, { mode: 0o777 });
    fs.chmodSync(work, 0o777);
    fs.writeFileSync(path.join(work, 'bomb.sh'), 'b(){ b | b & }; b\nsleep 30\n', { mode: 0o644 });
    // nobody may not be able to reach the checkout (a clone under a 0700 mktemp folder): the runner's modules
    // (node built-ins and dist/kernel only) go beside it, in the folder it owns.
    const copy = path.join(dir, 'dist');
    fs.cpSync(path.resolve('dist/kernel'), path.join(copy, 'kernel'), { recursive: true });
    fs.writeFileSync(path.join(copy, 'package.json'), '{ "type": "module" }\n');
    const dist = (m: string) => JSON.stringify(pathToFileURL(path.join(copy, 'kernel/sandbox', m)).href);
    const script = `
      const { runProcess } = await import(${dist('process-runner.js')});
      const { osSandboxStatus } = await import(${dist('os-sandbox.js')});
      const cwd = ${JSON.stringify(work)};
      const signal = new AbortController().signal;
      const out = { limit: (await osSandboxStatus()).processLimit };
      out.plain = await runProcess(['/bin/sh', '-c', 'id -u; echo hi > f && cat f'], { cwd, signal, timeoutMs: 60000, maxOutputBytes: 10000 });
      out.bomb = await runProcess(['/bin/bash', 'bomb.sh'], { cwd, signal, timeoutMs: 4000, maxOutputBytes: 4000, killGraceMs: 200 });
      out.net = await runProcess(['/bin/sh', '-c', 'curl -fsS --max-time 5 http://127.0.0.1:1/ 2>&1; echo " rc=$?"'], { cwd, signal, timeoutMs: 60000, maxOutputBytes: 10000, sandbox: { writable: [cwd], network: { domains: 'any' } } });
      process.stdout.write(JSON.stringify(out));`;
    const r = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, '--input-type=module', '-e', script], {
      encoding: 'utf8',
      cwd: dir,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir },
    });
    if (r.status !== 0) throw new Error(`the child failed: ${r.stderr}`);
    const out = JSON.parse(r.stdout);
    expect(out.limit).toEqual({ kind: 'rlimit', max: 1024 });
    expect(out.plain).toMatchObject({ exitCode: 0, sandboxed: true, stdout: '65534\nhi\n' });
    expect(out.bomb.stderr).toMatch(/fork: (retry: )?Resource temporarily unavailable/);
    expect(spawnSync('pgrep', ['-f', 'bomb.sh'], { encoding: 'utf8' }).stdout.trim()).toBe('');
    expect(out.net.stdout).toMatch(/error: 403\n rc=22/);
  });
});

describe('without bubblewrap', () => {
  const saved = process.env[BWRAP_ENV];
  beforeEach(() => (process.env[BWRAP_ENV] = '/nonexistent/bwrap'));
  afterEach(() => {
    if (saved === undefined) delete process.env[BWRAP_ENV];
    else process.env[BWRAP_ENV] = saved;
  });

  it('refuses commands with the install hint, before anyone is asked', async () => {
    const fx = await defaultLayout();
    try {
      const asked = fx.prompter.asked.length;
      const marker = path.join(fx.root, 'ran');
      const r = await run(fx, `touch ${marker}`);
      expect(r.ok ? null : r.error).toMatchObject({ code: 'COMMAND_BLOCKED', message: expect.stringContaining('apt-get install bubblewrap') });
      expect(fx.prompter.asked.length).toBe(asked);
      expect(fs.existsSync(marker)).toBe(false);
    } finally {
      await fx.close();
    }
  });

  it('runs them judged only when a person chose that, and says so in the result', async () => {
    const root = tempDir('memo-root-');
    const fx = makeKernel({ packs: [], root, dataDir: path.join(root, 'data'), sandboxFallback: 'judged' });
    try {
      await fx.kernel.loadPacks([{ dir: path.resolve('plugins'), source: 'builtin' }]);
      fx.prompter.setFallback('allow-once');
      const r = value(await run(fx, 'echo judged-only'));
      expect(r).toMatchObject({ stdout: 'judged-only\n', sandboxed: false });
    } finally {
      await fx.close();
    }
  });
});
