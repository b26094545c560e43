/**
 * Heavy and CPU-bound work off the kernel's event loop: a small pool of worker threads that runs an
 * exported function of a module, under a deadline that ends the worker (code that never awaits cannot
 * be stopped any other way) and a heap limit. The kernel's own calls (`/healthz`, other tools) keep
 * being served while a recurrence expansion or a canvas render runs.
 *
 * Packs use it through `memo-kernel/pack`: `runHeavy(new URL('./task.js', import.meta.url), 'fn', input,
 * { signal: ctx.signal })`. The function gets `input` (structured-cloned) and may return a value or a
 * promise of one; a thrown MemoError comes back with its code. What a worker cannot bound by itself is
 * the caller's to check before it asks (a native allocation, such as a bitmap's size).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { MemoError, isErrorCode, isMemoError } from '../errors.js';

export interface HeavyOptions {
  /** Aborting ends the work (the worker is terminated): the tool's timeout and the caller's cancel. */
  signal?: AbortSignal;
  /** Ends the work after this long (ms), whatever the signal says. Default 120 s. */
  deadlineMs?: number;
  /** Says what the work was, in the error a deadline or the heap limit gives ("rendering the canvas"). */
  what?: string;
  /**
   * ArrayBuffers in `input` moved to the worker rather than copied (they are unusable here after).
   * The other way, a function moves buffers back by returning `{ [HEAVY_TRANSFER]: [buffers], value }`:
   * the caller gets `value`.
   */
  transfer?: ArrayBuffer[];
}

/** The key under which a heavy function returns the ArrayBuffers it moves back (see `HeavyOptions.transfer`). */
export const HEAVY_TRANSFER = 'memoHeavyTransfer';

/** The most heap (MB) one piece of heavy work may use; over it the worker is stopped. */
export const HEAVY_HEAP_MB = 1024;
const DEFAULT_DEADLINE_MS = 120_000;
/** How long an idle worker is kept for the next piece of work. */
const IDLE_MS = 30_000;
/** Workers at once: the machine's cores less one for the event loop, at least 2 so two heavy calls run side by side. */
const MAX_WORKERS = Math.max(2, Math.min(4, (os.availableParallelism?.() ?? os.cpus().length) - 1));

const ENTRY = fileURLToPath(new URL('./heavy-worker.mjs', import.meta.url));

interface Slot {
  worker: Worker;
  busy: boolean;
  idleTimer: NodeJS.Timeout | null;
}

interface Job {
  module: string;
  fn: string;
  input: unknown;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
  opts: HeavyOptions;
  started: boolean;
  settle?: () => void;
}

const slots = new Set<Slot>();
const waiting: Job[] = [];
let seq = 0;

/**
 * The module a worker imports for `url`: itself when it is JavaScript; for a TypeScript source (the
 * test suite runs packs from source) its compiled copy under dist/, which `npm run build` writes.
 */
export function workerModule(url: URL | string): string {
  const href = typeof url === 'string' ? url : url.href;
  if (!href.startsWith('file:')) return href;
  let file = fileURLToPath(href);
  if (fs.existsSync(file) && !file.endsWith('.ts')) return href;
  // `new URL('./x.js', import.meta.url)` in a TypeScript source names a file that exists only as x.ts.
  if (!file.endsWith('.ts')) file = file.replace(/\.js$/, '.ts');
  if (!fs.existsSync(file)) throw new MemoError('TOOL_FAILED', `Heavy work names ${href}, which does not exist.`);
  let dir = path.dirname(file);
  while (dir !== path.dirname(dir)) {
    const pkg = path.join(dir, 'package.json');
    if (fs.existsSync(pkg) && fs.existsSync(path.join(dir, 'dist'))) {
      const compiled = path.join(dir, 'dist', path.relative(dir, file)).replace(/\.ts$/, '.js');
      if (fs.existsSync(compiled)) return pathToFileURL(compiled).href;
      break;
    }
    dir = path.dirname(dir);
  }
  throw new MemoError('TOOL_FAILED', `Heavy work needs the compiled ${path.basename(file).replace(/\.ts$/, '.js')}: run npm run build.`);
}

function spawnSlot(): Slot {
  const worker = new Worker(ENTRY, { resourceLimits: { maxOldGenerationSizeMb: HEAVY_HEAP_MB } });
  worker.unref();
  const slot: Slot = { worker, busy: false, idleTimer: null };
  slots.add(slot);
  worker.once('exit', () => slots.delete(slot));
  return slot;
}

function release(slot: Slot): void {
  slot.busy = false;
  const next = waiting.shift();
  if (next) return start(next, slot);
  slot.idleTimer = setTimeout(() => void slot.worker.terminate(), IDLE_MS);
  slot.idleTimer.unref();
}

function start(job: Job, slot: Slot): void {
  job.started = true;
  slot.busy = true;
  if (slot.idleTimer) clearTimeout(slot.idleTimer);
  slot.idleTimer = null;
  const id = ++seq;
  const { worker } = slot;
  let done = false;
  const what = job.opts.what ?? 'the work';
  const finish = (outcome: { ok: true; value: unknown } | { ok: false; error: unknown }, reusable: boolean) => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    job.opts.signal?.removeEventListener('abort', onAbort);
    worker.off('message', onMessage);
    worker.off('error', onError);
    worker.off('exit', onExit);
    if (reusable) release(slot);
    else {
      slots.delete(slot);
      void worker.terminate();
      const next = waiting.shift();
      if (next) start(next, spawnSlot());
    }
    if (outcome.ok) job.resolve(outcome.value);
    else job.reject(outcome.error);
  };
  const onMessage = (m: { id: number; ok: boolean; value?: unknown; error?: { code?: string; message: string; details?: Record<string, unknown> } }) => {
    if (m.id !== id) return;
    if (m.ok) return finish({ ok: true, value: m.value }, true);
    const e = m.error ?? { message: 'failed' };
    const err = isErrorCode(e.code) ? new MemoError(e.code, e.message, e.details ? { details: e.details } : {}) : new MemoError('TOOL_FAILED', e.message);
    finish({ ok: false, error: err }, true);
  };
  const onError = (err: Error & { code?: string }) => {
    const message =
      err.code === 'ERR_WORKER_OUT_OF_MEMORY' ? `${what} needed more than ${HEAVY_HEAP_MB} MB of memory and was stopped.` : `${what} failed: ${err.message}`;
    finish({ ok: false, error: new MemoError('TOOL_FAILED', message) }, false);
  };
  const onExit = () => finish({ ok: false, error: new MemoError('TOOL_FAILED', `${what} ended before it answered.`) }, false);
  const deadline = job.opts.deadlineMs ?? DEFAULT_DEADLINE_MS;
  const timer = setTimeout(
    () => finish({ ok: false, error: new MemoError('TIMEOUT', `${what} took longer than ${Math.round(deadline / 1000)} s and was stopped.`) }, false),
    deadline,
  );
  timer.unref();
  const onAbort = () => {
    const reason: unknown = job.opts.signal?.reason;
    // The pipeline aborts with a MemoError (TIMEOUT, CANCELLED); a bare abort() gives a DOMException.
    const err = isMemoError(reason) ? reason : new MemoError('CANCELLED', `${what} was stopped.`);
    finish({ ok: false, error: err }, false);
  };
  job.opts.signal?.addEventListener('abort', onAbort, { once: true });
  worker.on('message', onMessage);
  worker.once('error', onError);
  worker.once('exit', onExit);
  worker.postMessage({ id, module: job.module, fn: job.fn, input: job.input }, job.opts.transfer ?? []);
}

/**
 * Runs `fn` exported by `module` in a worker thread and resolves with what it returns. Rejects with
 * TIMEOUT when the deadline passes, CANCELLED (or the signal's own reason) when the signal aborts,
 * and TOOL_FAILED when the worker runs out of heap or dies; in each case the worker is terminated.
 */
export function runHeavy<T>(module: URL | string, fn: string, input: unknown, opts: HeavyOptions = {}): Promise<T> {
  if (opts.signal?.aborted) return Promise.reject(new MemoError('CANCELLED', `${opts.what ?? 'the work'} was stopped before it started.`));
  let target: string;
  try {
    target = workerModule(module);
  } catch (err) {
    return Promise.reject(err instanceof Error ? err : new Error(String(err)));
  }
  return new Promise<T>((resolve, reject) => {
    const job: Job = { module: target, fn, input, resolve: resolve as (v: unknown) => void, reject, opts, started: false };
    const idle = [...slots].find((s) => !s.busy);
    if (idle) return start(job, idle);
    if (slots.size < MAX_WORKERS) return start(job, spawnSlot());
    waiting.push(job);
    // Waiting counts against the caller's signal too: a cancelled call leaves the queue.
    opts.signal?.addEventListener(
      'abort',
      () => {
        if (job.started) return;
        const i = waiting.indexOf(job);
        if (i >= 0) waiting.splice(i, 1);
        reject(new MemoError('CANCELLED', `${opts.what ?? 'the work'} was stopped while it waited for a worker.`));
      },
      { once: true },
    );
  });
}

/** Workers now alive (for tests and the bench). */
export function heavyWorkers(): number {
  return slots.size;
}
