import { execFileSync, spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import * as fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { containmentInfo, runProcess, type RunOptions } from '../../../kernel/sandbox/process-runner.js';
import { resolveContainment, type ContainmentMode } from '../../../kernel/sandbox/process-containment.js';
import { requireFreshBuild } from '../../helpers/dist.js';
import { nth } from '../../helpers/nth.js';
import { processesWithArg } from '../../helpers/processes.js';
import { waitFor } from '../../helpers/wait.js';

/**
 * Real child processes. Every process a test starts carries a unique number (a `sleep` duration) in
 * its command line, so the test can find it in /proc, check that it is gone, and kill it if not.
 */

const info = await containmentInfo();
const modes: ContainmentMode[] = info.mode === 'namespace' ? ['namespace', 'sweep'] : ['sweep'];
const has = (bin: string) => {
  try {
    execFileSync('sh', ['-c', `command -v ${bin}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};
const hasPython = has('python3');
const hasPerl = has('perl');

const started: string[] = [];
/** A unique `sleep` duration, long enough to outlive any test. */
const token = () => {
  const t = `4${randomInt(100, 999)}.${randomInt(100000, 999999)}${randomInt(100000, 999999)}`;
  started.push(t);
  return t;
};

const processesWith = processesWithArg;

/** Polls until no live process carries `needle` (true), or the deadline passes (false). */
async function goneWithin(needle: string, ms = 15_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (processesWith(needle).length === 0) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return processesWith(needle).length === 0;
}

let tmp: string;
beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'memo-runner-')));
});
afterEach(() => {
  // Kill whatever a failing test left behind: only processes carrying this file's tokens.
  for (const t of started.splice(0)) {
    for (const pid of processesWith(t)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
  }
  fs.rmSync(tmp, { recursive: true, force: true });
});

/**
 * Ways a process can leave a process group or session. Each starts `escapee` (which touches its
 * ready file, then becomes `sleep <token>`).
 */
const escapes: { name: string; script: (esc: string) => string; when?: boolean }[] = [
  { name: 'setsid -f', script: (esc) => `setsid -f ${esc}` },
  { name: 'setsid … &', script: (esc) => `setsid ${esc} &` },
  { name: 'double fork (… &)', script: (esc) => `(${esc} &)` },
  { name: 'nohup … & disown', script: (esc) => `nohup ${esc} >/dev/null 2>&1 & disown` },
  { name: 'a daemon that closes its stdio', script: (esc) => `setsid -f sh -c 'exec 0<&- 1>&- 2>&-; exec "$@"' daemon ${esc}` },
  {
    name: 'a python daemon (double fork, setsid, closed fds)',
    when: hasPython,
    script: (esc) =>
      `python3 -c 'import os,sys
if os.fork(): sys.exit(0)
os.setsid()
if os.fork(): os._exit(0)
os.closerange(0, 3)
os.execvp(sys.argv[1], sys.argv[1:])' ${esc}`,
  },
  { name: 'setpgid via perl', when: hasPerl, script: (esc) => `perl -e 'use POSIX; if (!fork()) { setpgid(0, 0); exec @ARGV } ' ${esc}` },
  {
    name: 'setpgid via python',
    when: hasPython,
    script: (esc) => `python3 -c 'import os,sys; os.setpgid(0, 0); os.execvp(sys.argv[1], sys.argv[1:])' ${esc} &`,
  },
];
const usable = escapes.filter((e) => e.when !== false);

function escapee(ready: string, t: string): string {
  return `sh -c 'touch "$1"; exec sleep "$2"' escapee ${ready} ${t}`;
}

// The containment strategies on their own, as they run where a person chose commands judged only
// (memo settings sandbox judged) or for the kernel's own helpers; os-sandbox.test.ts runs the same
// behaviours inside bubblewrap.
const opts = (extra: Partial<RunOptions> = {}): RunOptions => ({
  sandbox: false,
  cwd: tmp,
  signal: new AbortController().signal,
  timeoutMs: 30_000,
  maxOutputBytes: 64 * 1024,
  ...extra,
});

describe.each(modes)('runProcess with %s containment', (mode) => {
  const run = (argv: string[], extra: Partial<RunOptions> = {}) => runProcess(argv, opts({ containment: mode, ...extra }));

  it('uses the containment asked for', async () => {
    expect((await resolveContainment(mode)).mode).toBe(mode);
  });

  it('kills every escaped process when the command times out', async () => {
    // All cases at once: the timeout is the trigger, so it must leave time to start the escapee.
    const cases = usable.map((e, i) => ({ e, t: token(), ready: path.join(tmp, `ready-${i}`) }));
    const results = await Promise.all(
      cases.map(({ e, t, ready }) => run(['/bin/bash', '-c', `${e.script(escapee(ready, t))}\nsleep ${t}`], { timeoutMs: 4000, killGraceMs: 500 })),
    );
    for (const [i, { e, t, ready }] of cases.entries()) {
      expect({ name: e.name, timedOut: nth(results, i).timedOut }).toEqual({ name: e.name, timedOut: true });
      expect({ name: e.name, started: fs.existsSync(ready) }).toEqual({ name: e.name, started: true });
      expect({ name: e.name, gone: await goneWithin(t) }).toEqual({ name: e.name, gone: true });
    }
  }, 60_000);

  it('kills every escaped process when the call is cancelled', async () => {
    const cases = usable.map((e, i) => ({ e, t: token(), ready: path.join(tmp, `ready-${i}`), ac: new AbortController() }));
    const results = await Promise.all(
      cases.map(async ({ e, t, ready, ac }) => {
        const pending = run(['/bin/bash', '-c', `${e.script(escapee(ready, t))}\nsleep ${t}`], { signal: ac.signal, killGraceMs: 500 });
        await waitFor(() => fs.existsSync(ready));
        expect(processesWith(t).length).toBeGreaterThanOrEqual(1);
        ac.abort();
        return pending;
      }),
    );
    for (const [i, { e, t }] of cases.entries()) {
      expect({ name: e.name, cancelled: nth(results, i).cancelled }).toEqual({ name: e.name, cancelled: true });
      expect({ name: e.name, gone: await goneWithin(t) }).toEqual({ name: e.name, gone: true });
    }
  }, 60_000);

  it('leaves nothing behind when cancelled at any moment of its start', async () => {
    const t = token();
    const runs = [0, 1, 2, 5, 10, 20].map(async (ticks) => {
      const ac = new AbortController();
      const pending = run(['/bin/sh', '-c', `setsid -f sleep ${t}; sleep ${t}`], { signal: ac.signal, killGraceMs: 500 });
      for (let i = 0; i < ticks; i++) await new Promise((r) => setImmediate(r));
      ac.abort();
      return pending;
    });
    for (const r of await Promise.all(runs)) expect(r.cancelled).toBe(true);
    expect(await goneWithin(t)).toBe(true);
  });

  it('ends background children when the command itself ends, without waiting for them', async () => {
    const t = token();
    const ready = path.join(tmp, 'ready');
    const r = await run(['/bin/bash', '-c', `${escapee(ready, t)} & setsid -f sleep ${t}; until [ -e ${ready} ]; do sleep 0.01; done; echo done`]);
    expect(r).toMatchObject({ exitCode: 0, signal: null, stdout: 'done\n', stderr: '', timedOut: false, cancelled: false });
    expect(await goneWithin(t)).toBe(true);
  });

  it('reports the exit code and output of a normal command unchanged', async () => {
    const r = await run(['/bin/bash', '-c', 'echo out; echo err >&2; exit 3']);
    expect(r).toMatchObject({ exitCode: 3, signal: null, stdout: 'out\n', stderr: 'err\n', truncated: false, timedOut: false, cancelled: false });
    expect(await run(['/bin/true'])).toMatchObject({ exitCode: 0, signal: null, stdout: '', stderr: '' });
  });

  it('passes cwd and env, and cuts long output', async () => {
    const r = await run(['/bin/sh', '-c', 'pwd; echo "$MEMO_TEST_VALUE"; head -c 5000 /dev/zero | tr "\\0" a >&2'], {
      env: { ...process.env, MEMO_TEST_VALUE: 'v1' },
      maxOutputBytes: 1000,
    });
    expect(r.stdout).toBe(`${tmp}\nv1\n`);
    expect(r.truncated).toBe(true);
    expect(r.stderr).toContain('output cut');
  });

  it("keeps the kernel's own secrets (database URL, MCP token, write capabilities) out of the command's environment", async () => {
    const env = {
      ...process.env,
      MEMO_DATABASE_URL: 'postgres://memo:s3cret-pw@127.0.0.1:5432/memo',
      MEMO_MCP_TOKEN: 'token-value',
      MEMO_MCP_WRITE_CAPABILITY: 'cap-1',
      MEMO_WRITE_CAPABILITY: 'cap-2',
      MEMO_TEST_VALUE: 'kept',
    };
    // The value is reversed before it is printed, so scrubbing the output could not have hidden it.
    const r = await run(['/bin/sh', '-c', 'env | rev'], { env });
    expect(r.exitCode).toBe(0);
    const seen = r.stdout.split('\n').map((l) => [...l].reverse().join(''));
    expect(seen).toContain('MEMO_TEST_VALUE=kept');
    expect(seen.filter((l) => /^MEMO_(DATABASE_URL|MCP_TOKEN|MCP_WRITE_CAPABILITY|WRITE_CAPABILITY)=/.test(l))).toEqual([]);
    // The caller's object is not changed.
    expect(env.MEMO_DATABASE_URL).toContain('s3cret-pw');
  });

  it('reports a command killed from outside by SIGKILL as killed by SIGKILL', async () => {
    const t = token();
    const pending = run(['sleep', t]);
    await waitFor(() => processesWith(t).some((pid) => fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('sleep')));
    for (const pid of processesWith(t)) if (fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('sleep')) process.kill(pid, 'SIGKILL');
    expect(await pending).toMatchObject({ exitCode: null, signal: 'SIGKILL', stderr: '', timedOut: false, cancelled: false });
  });

  (hasPython ? it : it.skip)('reports a command that crashes with the crash signal', async () => {
    const r = await run(['python3', '-c', 'import ctypes; ctypes.string_at(0)']);
    expect(r).toMatchObject({ exitCode: null, signal: 'SIGSEGV' });
  });

  it('gives a command that handles SIGTERM its grace, and reports its own exit code', async () => {
    const t = token();
    const ready = path.join(tmp, 'trap-ready');
    const ac = new AbortController();
    const pending = run(['/bin/bash', '-c', `trap 'echo cleaning; exit 7' TERM; touch ${ready}; sleep ${t} & wait`], {
      signal: ac.signal,
      killGraceMs: 20_000,
    });
    await waitFor(() => fs.existsSync(ready));
    ac.abort();
    expect(await pending).toMatchObject({ exitCode: 7, signal: null, stdout: 'cleaning\n', cancelled: true });
    expect(await goneWithin(t)).toBe(true);
  });

  it('does not let a script go on to its next step after a timeout', async () => {
    const t = token();
    const after = path.join(tmp, 'after');
    const r = await run(['/bin/bash', '-c', `sleep ${t}; touch ${after}`], { timeoutMs: 300, killGraceMs: 500 });
    expect(r.timedOut).toBe(true);
    expect(r.exitCode).toBeNull();
    expect(await goneWithin(t)).toBe(true);
    expect(fs.existsSync(after)).toBe(false);
  });

  it('creates files owned by the current user, and the command sees its own uid', async () => {
    const r = await run(['/bin/sh', '-c', 'id -u > made.txt']);
    expect(r.exitCode).toBe(0);
    const st = fs.statSync(path.join(tmp, 'made.txt'));
    expect(st.uid).toBe(process.getuid!());
    expect(st.gid).toBe(process.getgid!());
    if (!(info.plan?.prefix ?? []).includes('--map-root-user')) expect(fs.readFileSync(path.join(tmp, 'made.txt'), 'utf8')).toBe(`${process.getuid!()}\n`);
  });

  it('runs nothing when the signal is already aborted', async () => {
    const ac = new AbortController();
    ac.abort();
    const r = await run(['/bin/sh', '-c', `touch ${path.join(tmp, 'ran')}`], { signal: ac.signal });
    expect(r).toMatchObject({ cancelled: true, exitCode: null });
    expect(fs.existsSync(path.join(tmp, 'ran'))).toBe(false);
  });

  it('reports a command that does not exist', async () => {
    const r = await run(['memo-no-such-command-xyz']);
    expect(r.stderr).toContain('command not found: memo-no-such-command-xyz');
    expect(r.exitCode).not.toBe(0);
  });
});

describe('the sweep fallback', () => {
  it('is chosen by MEMO_PROCESS_CONTAINMENT=sweep', async () => {
    process.env.MEMO_PROCESS_CONTAINMENT = 'sweep';
    try {
      expect((await resolveContainment()).mode).toBe('sweep');
    } finally {
      delete process.env.MEMO_PROCESS_CONTAINMENT;
    }
  });

  it('kills a setsid child on its own when the command exits, and marks it with MEMO_RUN_ID', async () => {
    const t = token();
    const ready = path.join(tmp, 'ready');
    const r = await runProcess(
      [
        '/bin/sh',
        '-c',
        `setsid -f sh -c 'tr "\\0" "\\n" < /proc/$$/environ | grep ^MEMO_RUN_ID= > ${ready}.env; touch ${ready}; exec sleep ${t}'; until [ -e ${ready} ]; do sleep 0.01; done`,
      ],
      opts({ containment: 'sweep' }),
    );
    expect(r.exitCode).toBe(0);
    expect(fs.readFileSync(`${ready}.env`, 'utf8')).toMatch(/^MEMO_RUN_ID=[0-9a-f-]{36}\n$/);
    expect(await goneWithin(t)).toBe(true);
  });

  it('cannot catch a process that cleared its environment and left the tree, but still returns', async () => {
    // The documented limit: `env -i` after `setsid -f`. The runner stops reading the pipes it holds.
    const t = token();
    const ready = path.join(tmp, 'ready');
    // The escapee says it is ready only once its environment is empty.
    const r = await runProcess(
      ['/bin/sh', '-c', `setsid -f env -i /bin/sh -c 'touch ${ready}; exec /bin/sleep ${t}'; until [ -e ${ready} ]; do sleep 0.01; done; echo started`],
      opts({ containment: 'sweep', drainMs: 200 }),
    );
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('started\n');
    expect(r.stderr).toContain('output no longer read');
    expect(processesWith(t).length).toBe(1); // killed by afterEach
  });
});

(info.mode === 'namespace' ? describe : describe.skip)('the PID namespace', () => {
  it('catches even a process that cleared its environment', async () => {
    const t = token();
    const ready = path.join(tmp, 'ready');
    const r = await runProcess(
      ['/bin/sh', '-c', `setsid -f env -i /bin/sh -c 'touch ${ready}; exec /bin/sleep ${t}'; until [ -e ${ready} ]; do sleep 0.01; done; echo started`],
      opts({ containment: 'namespace', drainMs: 200 }),
    );
    expect(r).toMatchObject({ exitCode: 0, stdout: 'started\n', stderr: '' });
    expect(await goneWithin(t)).toBe(true);
  });

  it('ends the command, and what it started in a session of its own, when the process that ran it is killed with SIGKILL', async () => {
    requireFreshBuild();
    const t = token();
    const ready = path.join(tmp, 'ready');
    // A node process of its own runs the command through the compiled runner, then is killed outright:
    // it gets no chance to clean up, so only the parent-death signal can end the command.
    const runner = pathToFileURL(path.resolve('dist/kernel/sandbox/process-runner.js')).href;
    const script = `const { runProcess } = await import(${JSON.stringify(runner)});
      await runProcess(['/bin/sh', '-c', ${JSON.stringify(`setsid -f /bin/sleep ${t}; touch ${ready}; exec /bin/sleep ${t}`)}],
        { cwd: ${JSON.stringify(tmp)}, env: process.env, timeoutMs: 600000, maxOutputBytes: 1000, signal: new AbortController().signal, containment: 'namespace', sandbox: false });`;
    const host = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: 'ignore' });
    const exited = new Promise<void>((r) => host.once('exit', () => r()));
    try {
      await waitFor(() => fs.existsSync(ready), { what: 'the command to start' });
      // The two sleeps, and the unshare that contains them (the token is in its command line too).
      expect(processesWith(t).filter((pid) => pid !== host.pid).length).toBeGreaterThanOrEqual(3);
      host.kill('SIGKILL');
      await exited;
      expect(await goneWithin(t)).toBe(true);
    } finally {
      host.kill('SIGKILL');
    }
  });

  it('shows the command only its own processes', async () => {
    const r = await runProcess(['/bin/sh', '-c', 'echo $$'], opts({ containment: 'namespace' }));
    expect(r.stdout).toBe('1\n');
  });
});
