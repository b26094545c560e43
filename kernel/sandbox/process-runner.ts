import { spawn } from 'node:child_process';

export interface RunOptions {
  cwd: string;
  /** Aborting kills the whole process group. */
  signal: AbortSignal;
  /** A backstop of the runner's own; the pipeline's timeout aborts `signal` first. */
  timeoutMs: number;
  /** stdout and stderr are each cut to this many bytes (head and tail kept, the middle dropped). */
  maxOutputBytes: number;
  env?: NodeJS.ProcessEnv;
}

export interface RunResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** True when either stream was cut; the text says how much was dropped. */
  truncated: boolean;
  timedOut: boolean;
  cancelled: boolean;
  durationMs: number;
}

/** How long a process group gets between SIGTERM and SIGKILL. */
const KILL_GRACE_MS = 2000;

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
 * Runs an argv (no shell unless argv[0] is one) in its own process group. On timeout or
 * cancellation the whole group gets SIGTERM, then SIGKILL: children a command started die with it.
 */
export function runProcess(argv: string[], opts: RunOptions): Promise<RunResult> {
  const started = performance.now();
  return new Promise<RunResult>((resolve) => {
    const stdout = new CappedBuffer(opts.maxOutputBytes);
    const stderr = new CappedBuffer(opts.maxOutputBytes);
    let timedOut = false;
    let cancelled = false;
    let spawnError: Error | null = null;
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd: opts.cwd,
      env: opts.env ?? process.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.on('data', (c: Buffer) => stdout.push(c));
    child.stderr.on('data', (c: Buffer) => stderr.push(c));

    let killTimer: NodeJS.Timeout | undefined;
    const killGroup = () => {
      if (child.pid === undefined || child.exitCode !== null) return;
      try {
        process.kill(-child.pid, 'SIGTERM');
      } catch {
        // already gone
      }
      killTimer = setTimeout(() => {
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          // already gone
        }
      }, KILL_GRACE_MS);
      killTimer.unref();
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, opts.timeoutMs);
    const onAbort = () => {
      cancelled = true;
      killGroup();
    };
    if (opts.signal.aborted) onAbort();
    else opts.signal.addEventListener('abort', onAbort, { once: true });

    child.on('error', (err) => (spawnError = err));
    child.on('close', (code, sig) => {
      clearTimeout(timer);
      opts.signal.removeEventListener('abort', onAbort);
      // The leader is gone; make sure nothing it started lingers in the group.
      if (child.pid !== undefined && (timedOut || cancelled)) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // nothing left
        }
      }
      if (killTimer) clearTimeout(killTimer);
      const errText = spawnError ? `${(spawnError as NodeJS.ErrnoException).code === 'ENOENT' ? `command not found: ${argv[0]}` : (spawnError as Error).message}\n` : '';
      resolve({
        exitCode: code,
        signal: sig,
        stdout: stdout.text(),
        stderr: errText + stderr.text(),
        truncated: stdout.truncated || stderr.truncated,
        timedOut,
        cancelled,
        durationMs: performance.now() - started,
      });
    });
  });
}
