/**
 * Waiting in tests: on events, with deadlines sized for a busy 2-core machine (a deadline only
 * bounds a failure; a passing test never waits for one). No fixed sleeps.
 */

/** Per-test timeout for tests that spawn processes (node start-up alone takes seconds under load). */
export const SPAWN_TIMEOUT_MS = 120_000;
/** Default deadline of `waitFor`: well inside SPAWN_TIMEOUT_MS, so a stuck wait says what it waited for. */
export const WAIT_DEADLINE_MS = 60_000;

export interface WaitOptions {
  /** Give up after this long (default WAIT_DEADLINE_MS). */
  timeoutMs?: number;
  /** What is awaited, for the error message (a function is asked at the deadline, to say what it saw). */
  what?: string | (() => string);
  /** Time between checks (default 20 ms). */
  intervalMs?: number;
}

/**
 * Resolves with the first truthy value `condition` returns, checking it now and then every
 * `intervalMs`; rejects after `timeoutMs` naming `what`. A condition that throws fails at once.
 */
export async function waitFor<T>(condition: () => T | Promise<T>, options: WaitOptions = {}): Promise<NonNullable<T>> {
  const { timeoutMs = WAIT_DEADLINE_MS, what = 'a condition', intervalMs = 20 } = options;
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value;
    if (Date.now() >= until) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${typeof what === 'function' ? what() : what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** A promise with its resolve exposed. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
