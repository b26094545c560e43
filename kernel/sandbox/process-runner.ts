import { spawn } from 'node:child_process';
import { commandSandbox, prepareSandbox, type SandboxRequest, type SandboxRun } from './os-sandbox.js';
import {
  createContainment,
  executableExists,
  plainContainment,
  resolveContainment,
  UNSHARE_SIGKILL,
  type Containment,
  type ContainmentChoice,
} from './process-containment.js';

export { containmentInfo } from './process-containment.js';

/**
 * The kernel's own secrets that may sit in its environment: the database URL (with its password),
 * the MCP token and write capabilities handed to agent CLIs and stdio clients. A command a tool runs
 * never needs them, and scrubbing its output is best effort (`printenv X | rev` defeats it), so they
 * are taken out of every child's environment instead.
 */
const KERNEL_SECRET_ENV: readonly string[] = ['MEMO_DATABASE_URL', 'MEMO_MCP_TOKEN', 'MEMO_MCP_WRITE_CAPABILITY', 'MEMO_WRITE_CAPABILITY'];

/** `env` without the kernel's own secrets (a copy; `env` is not changed). */
function withoutKernelSecrets(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  if (!KERNEL_SECRET_ENV.some((name) => env[name] !== undefined)) return env;
  const copy = { ...env };
  for (const name of KERNEL_SECRET_ENV) delete copy[name];
  return copy;
}

export interface RunOptions {
  cwd: string;
  /** Aborting kills the command and everything it started. */
  signal: AbortSignal;
  /** A backstop of the runner's own; the pipeline's timeout aborts `signal` first. */
  timeoutMs: number;
  /** stdout and stderr are each cut to this many bytes (head and tail kept, the middle dropped). */
  maxOutputBytes: number;
  /** The child's environment (default this process's); the kernel's own secrets are always left out. */
  env?: NodeJS.ProcessEnv;
  /**
   * How the command's processes are contained: `auto` (default) uses a PID namespace where one can
   * be made and the environment-marker sweep otherwise; `sweep` forces the sweep (also through the
   * environment variable `MEMO_PROCESS_CONTAINMENT=sweep`); `namespace` fails when none can be made.
   */
  containment?: ContainmentChoice;
  /**
   * The OS sandbox (os-sandbox.ts) the command runs in: by default one whose only writable folder is
   * `cwd`, with no network. `false` runs it on the host as it is, for the kernel's own helpers only
   * (never a command an agent or a model chose). Where the sandbox cannot start the command is refused
   * (COMMAND_BLOCKED, rule sandbox-unavailable) unless a person chose `memo settings sandbox judged`.
   */
  sandbox?: SandboxRequest | false;
  /** SIGTERM to SIGKILL on timeout or cancellation (default 2000 ms). */
  killGraceMs?: number;
  /** After the command exited, how long stdout/stderr may stay open before reading stops (default 1000 ms). */
  drainMs?: number;
}

export interface RunResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** True when either stream was cut; the text says how much was dropped. */
  truncated: boolean;
  /** Whether it ran in the OS sandbox (false: judged only, or `sandbox: false`). */
  sandboxed: boolean;
  timedOut: boolean;
  cancelled: boolean;
  durationMs: number;
}

/**
 * A command's result in a few words, for its tool's summary (what `memo audit tail` shows): how it
 * ended and how much it printed, never what (the output can hold anything): `exit 0, 3 lines`,
 * `exit 1, 1 line, 2 lines on stderr`, `SIGTERM, nothing printed, output cut`.
 */
export function runSummary(r: Pick<RunResult, 'exitCode' | 'signal' | 'stdout' | 'stderr' | 'truncated'>): string {
  const lines = (text: string) => {
    const n = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
    return `${n} line${n === 1 ? '' : 's'}`;
  };
  const printed = [r.stdout ? lines(r.stdout) : '', r.stderr ? `${lines(r.stderr)} on stderr` : ''].filter(Boolean);
  const ended = r.exitCode !== null ? `exit ${r.exitCode}` : (r.signal ?? 'stopped');
  return [ended, printed.length ? printed.join(', ') : 'nothing printed', ...(r.truncated ? ['output cut'] : [])].join(', ');
}

/** How long a command's processes get between SIGTERM and SIGKILL. */
const KILL_GRACE_MS = 2000;
/** How long stdout/stderr may stay open after the command exited. */
const DRAIN_MS = 1000;

/** Keeps the first 60% and the last 40% of a stream within the cap: errors tend to be at the end. */
class CappedBuffer {
  private head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  total = 0;
  constructor(private readonly cap: number) {}
  push(chunk: Buffer): void {
    this.total += chunk.length;
    const headCap = Math.floor(this.cap * 0.6);
    if (this.headBytes < headCap) {
      const take = chunk.subarray(0, headCap - this.headBytes);
      this.head.push(take);
      this.headBytes += take.length;
      chunk = chunk.subarray(take.length);
    }
    if (chunk.length === 0) return;
    this.tail.push(chunk);
    this.tailBytes += chunk.length;
    const tailCap = this.cap - headCap;
    while (this.tailBytes - (this.tail[0]?.length ?? 0) >= tailCap && this.tail.length > 1) this.tailBytes -= this.tail.shift()!.length;
  }
  get truncated(): boolean {
    return this.total > this.cap;
  }
  text(): string {
    const head = Buffer.concat(this.head).toString('utf8');
    let tail = Buffer.concat(this.tail);
    if (!this.truncated) return head + tail.toString('utf8');
    const tailCap = this.cap - Math.floor(this.cap * 0.6);
    tail = tail.subarray(Math.max(0, tail.length - tailCap));
    const dropped = this.total - this.headBytes - tail.length;
    return `${head}\n[… output cut: ${dropped} bytes omitted …]\n${tail.toString('utf8')}`;
  }
}

/**
 * Runs an argv (no shell unless argv[0] is one) so that nothing it starts outlives it.
 *
 * Where PID namespaces are available (see `process-containment.ts`) the command is the init of its
 * own PID namespace: when it ends, times out or is cancelled, every process it started ends too,
 * including children that called `setsid`, double-forked or closed their stdio. Background children
 * (`server &`) therefore die when the command ends. Elsewhere the runner sweeps the command's
 * processes by an environment marker, process group, session and parentage.
 *
 * On timeout or cancellation the command's processes get SIGTERM, then SIGKILL after a grace. Once
 * the command has exited, the runner waits at most `drainMs` for stdout/stderr to reach end of file
 * (a process that escaped containment could hold them open), then stops reading and says so.
 */
export function runProcess(argv: string[], opts: RunOptions): Promise<RunResult> {
  const started = performance.now();
  const env = withoutKernelSecrets(opts.env ?? process.env);
  const notStarted = (): RunResult => ({
    exitCode: null,
    signal: null,
    stdout: '',
    stderr: '',
    truncated: false,
    sandboxed: false,
    timedOut: false,
    cancelled: true,
    durationMs: performance.now() - started,
  });
  // Cancelled before it started: nothing runs.
  if (opts.signal.aborted) return Promise.resolve(notStarted());
  return (async () => {
    // A command that cannot be started is spawned plainly, so the error is the runtime's own.
    if (!executableExists(argv[0] ?? '', env)) return runContained(argv, opts, env, plainContainment(), started, null);
    const mode = opts.sandbox === false ? null : await commandSandbox();
    if (mode?.sandboxed) {
      const request = { cwd: opts.cwd, ...(opts.sandbox || { writable: [opts.cwd] }) };
      const box = await prepareSandbox(request, mode.status);
      if (opts.signal.aborted) {
        await box.dispose();
        return notStarted();
      }
      // bwrap makes the PID namespace (its reaper is pid 1, the command pid 2): the namespace
      // containment finds it through bwrap's child, and --die-with-parent ties it to this process.
      const containment = createContainment({ mode: 'namespace', plan: { prefix: [], userNamespace: false, mountProc: true, reaper: true } });
      try {
        return await runContained(box.argv(argv), opts, box.env(env), containment, started, box);
      } finally {
        await box.dispose();
      }
    }
    const info = await resolveContainment(opts.containment);
    if (opts.signal.aborted) return notStarted();
    return runContained(argv, opts, env, createContainment(info), started, null);
  })();
}

/** What bwrap exits with when its command died of a signal (128 + the signal's number, as a shell says it). */
const BWRAP_SIGNALS: Partial<Record<number, NodeJS.Signals>> = {
  129: 'SIGHUP',
  130: 'SIGINT',
  131: 'SIGQUIT',
  134: 'SIGABRT',
  137: 'SIGKILL',
  139: 'SIGSEGV',
  141: 'SIGPIPE',
  143: 'SIGTERM',
};

function runContained(
  argv: string[],
  opts: RunOptions,
  env: NodeJS.ProcessEnv,
  containment: Containment,
  started: number,
  box: SandboxRun | null,
): Promise<RunResult> {
  return new Promise<RunResult>((resolve) => {
    const stdout = new CappedBuffer(opts.maxOutputBytes);
    const stderr = new CappedBuffer(opts.maxOutputBytes);
    let timedOut = false;
    let cancelled = false;
    let spawnError: Error | null = null;
    let streamsAbandoned = false;
    const [file, ...args] = containment.argv(argv);
    if (file === undefined) throw new TypeError('runProcess: empty argv');
    const child = spawn(file, args, {
      cwd: opts.cwd,
      env: containment.env(env),
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    if (child.pid !== undefined) containment.started(child.pid);
    child.stdout.on('data', (c: Buffer) => stdout.push(c));
    child.stderr.on('data', (c: Buffer) => stderr.push(c));

    let markExited!: () => void;
    const exited = new Promise<void>((r) => (markExited = r));
    let exitInfo: { code: number | null; sig: NodeJS.Signals | null } | null = null;
    let terminating: Promise<void> | null = null;
    const terminate = () => {
      terminating ??= containment.terminate(opts.killGraceMs ?? KILL_GRACE_MS, exited).catch(() => undefined);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      terminate();
    }, opts.timeoutMs);
    const onAbort = () => {
      cancelled = true;
      terminate();
    };
    opts.signal.addEventListener('abort', onAbort, { once: true });

    let cleanup: Promise<void> = Promise.resolve();
    let drainTimer: NodeJS.Timeout | undefined;
    const onExit = (code: number | null, sig: NodeJS.Signals | null) => {
      if (exitInfo) return;
      exitInfo = { code, sig };
      clearTimeout(timer);
      opts.signal.removeEventListener('abort', onAbort);
      markExited();
      cleanup = Promise.all([terminating ?? Promise.resolve(), containment.afterExit().catch(() => undefined)]).then(() => undefined);
      void cleanup.then(() => {
        if (child.stdout.readableEnded && child.stderr.readableEnded) return;
        drainTimer = setTimeout(() => {
          if (!child.stdout.destroyed || !child.stderr.destroyed) streamsAbandoned = true;
          child.stdout.destroy();
          child.stderr.destroy();
        }, opts.drainMs ?? DRAIN_MS);
      });
    };
    child.on('exit', onExit);
    child.on('error', (err) => (spawnError = err));
    child.on('close', (code, sig) => {
      onExit(code, sig);
      void cleanup.then(() => {
        if (drainTimer) clearTimeout(drainTimer);
        let { code: exitCode, sig: signal } = exitInfo!;
        let errText = stderr.text();
        // unshare cannot re-raise SIGKILL on itself when its child (the command) died of one (OOM killer).
        if (containment.mode === 'namespace' && exitCode === 1 && UNSHARE_SIGKILL.test(errText)) {
          exitCode = null;
          signal = 'SIGKILL';
          errText = errText.replace(UNSHARE_SIGKILL, '$1');
        }
        if (box && exitCode !== null && BWRAP_SIGNALS[exitCode]) {
          signal = BWRAP_SIGNALS[exitCode]!;
          exitCode = null;
        }
        const spawnText = spawnError
          ? `${(spawnError as NodeJS.ErrnoException).code === 'ENOENT' ? `command not found: ${argv[0]}` : spawnError.message}\n`
          : '';
        const abandonedText = streamsAbandoned
          ? `\n[output no longer read: a background process kept stdout/stderr open ${opts.drainMs ?? DRAIN_MS} ms after the command exited]\n`
          : '';
        resolve({
          exitCode,
          signal,
          stdout: stdout.text(),
          stderr: spawnText + errText + abandonedText,
          truncated: stdout.truncated || stderr.truncated,
          sandboxed: box !== null,
          timedOut,
          cancelled,
          durationMs: performance.now() - started,
        });
      });
    });
  });
}
