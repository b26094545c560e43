import * as fs from 'node:fs';
import { createRequire } from 'node:module';

/**
 * The lock that serialises appends from several processes (a CLI call beside `memo serve`, two
 * CLI calls) so the chain never forks: an exclusive `flock(2)` on `agent-audit.lock`, taken once
 * per batch of lines and released right after.
 *
 * Why flock through the `fs-ext` native module rather than a lock made of files: measured on this
 * machine (ext4), an O_EXCL lock file or a symlink lock costs 43-50 us per acquire+release (two
 * directory updates), which alone is twice the pipeline's whole overhead budget (< 25 us per call);
 * flock costs about 1.2 us. And the kernel drops a flock when its holder dies, however it dies
 * (SIGKILL included), so there is no stale-lock recovery to get wrong: no owner pid to probe, no
 * pid reuse, no two waiters breaking the same stale lock, no lock "lease" held across tool code.
 * The project already needs a C++ toolchain (better-sqlite3), and fs-ext builds with it.
 *
 * flock locks belong to an open file description: two AuditLog instances in one process (each
 * with its own descriptor) exclude each other too. A waiter polls with a non-blocking flock and
 * short synchronous sleeps, so a holder stuck for `timeoutMs` (a stopped process) produces a clear
 * error instead of a hang.
 */

interface FsExt {
  flockSync(fd: number, flags: 'ex' | 'exnb' | 'sh' | 'shnb' | 'un'): void;
}

let fsExt: FsExt | null = null;
function flockModule(): FsExt {
  if (!fsExt) {
    try {
      fsExt = createRequire(import.meta.url)('fs-ext') as FsExt;
    } catch (err) {
      throw new Error(`the audit log needs the fs-ext module for file locking (npm install): ${(err as Error).message}`, { cause: err });
    }
  }
  return fsExt;
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));
function sleepSync(ms: number): void {
  Atomics.wait(sleeper, 0, 0, ms);
}

export class AuditLockTimeout extends Error {
  constructor(file: string, ms: number) {
    super(`the audit log is locked by another process (${file}) and was not released within ${ms / 1000} s`);
    this.name = 'AuditLockTimeout';
  }
}

export class AuditFileLock {
  private fd: number | null = null;
  private held = false;
  private readonly flock: FsExt;

  /** How many acquisitions had to wait for another holder. */
  waits = 0;

  constructor(
    readonly file: string,
    private readonly timeoutMs = 10_000,
    /** Called (synchronously) when an acquisition has to wait for another holder. */
    private readonly onWait?: () => void,
  ) {
    this.flock = flockModule();
  }

  open(): void {
    if (this.fd === null) this.fd = fs.openSync(this.file, 'a', 0o600);
  }

  get isHeld(): boolean {
    return this.held;
  }

  /** Takes the lock, waiting for another holder at most `timeoutMs`. */
  acquire(): void {
    if (this.fd === null) this.open();
    const fd = this.fd!;
    if (this.tryLock(fd)) return;
    this.waits++;
    this.onWait?.();
    const deadline = Date.now() + this.timeoutMs;
    let pause = 0.05;
    for (;;) {
      sleepSync(pause);
      if (this.tryLock(fd)) return;
      if (Date.now() > deadline) throw new AuditLockTimeout(this.file, this.timeoutMs);
      pause = Math.min(pause * 2, 5);
    }
  }

  private tryLock(fd: number): boolean {
    try {
      this.flock.flockSync(fd, 'exnb');
      this.held = true;
      return true;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EAGAIN' || code === 'EWOULDBLOCK') return false;
      throw err;
    }
  }

  release(): void {
    if (!this.held || this.fd === null) return;
    this.held = false;
    this.flock.flockSync(this.fd, 'un');
  }

  close(): void {
    this.release();
    if (this.fd !== null) fs.closeSync(this.fd);
    this.fd = null;
  }
}
