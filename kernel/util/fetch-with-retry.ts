import { SystemClock, type Clock } from '../clock.js';
import { MemoError } from '../errors.js';
import { withDeadline } from './with-deadline.js';

/** How hard a request is retried. */
export interface RetryPolicy {
  /** Attempts in all, the first one included. */
  attempts: number;
  /** The wait before retry n (1-based) is baseDelayMs * 2^(n-1), capped by maxDelayMs, less up to `jitter` of it. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** 0..1: the share of each backoff taken off at random, so clients that failed together do not retry together. */
  jitter: number;
  /** A Retry-After longer than this is not waited out: the call fails at once and says when to retry. */
  maxRetryAfterMs: number;
  /** Each attempt's own time limit (the request and whatever `judge` reads of the reply); Infinity for none. */
  attemptTimeoutMs: number;
  /** No retry starts that could not end within this, counted from the first attempt; Infinity for none. */
  budgetMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  attempts: 3,
  baseDelayMs: 1000,
  maxDelayMs: 8000,
  jitter: 0.2,
  maxRetryAfterMs: 30_000,
  attemptTimeoutMs: Infinity,
  budgetMs: Infinity,
};

/** What one attempt produced: a reply (any status), or a failure to get one. */
export type AttemptOutcome = { response: Response } | { error: unknown; timedOut: boolean };

/** Done with a value, or worth another attempt (after the server's `retryAfterMs` when it gave one). */
export type AttemptVerdict<T> = { done: T } | { retry: unknown; retryAfterMs?: number };

/** Why the retries stopped without a value. */
export interface GiveUp {
  why: 'attempts' | 'retry-after' | 'budget';
  attempts: number;
  /** What the last attempt's verdict said (the judge's `retry` value). */
  last: unknown;
  /** With `retry-after`: the wait the server asked for, and the epoch ms it points at. */
  retryAfterMs?: number;
  retryAt?: number;
}

export interface FetchRetryOptions<T> extends Partial<RetryPolicy> {
  /** The time source for waits, deadlines and HTTP dates (a ManualClock in tests). */
  clock?: Clock;
  /** Replaces the clock's wait (it must reject when the signal aborts). */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** 0 <= x < 1, for the jitter. */
  random?: () => number;
  fetch?: typeof fetch;
  /**
   * Reads an attempt's outcome. It runs inside the attempt's time limit (read the body here) and
   * may throw to stop at once. The default retries network errors, time-outs, 408, 429 and 5xx,
   * honouring Retry-After, and returns any other reply, unread.
   */
  judge?: (outcome: AttemptOutcome, attempt: number, signal: AbortSignal) => AttemptVerdict<T> | Promise<AttemptVerdict<T>>;
  /** Told before each wait (for progress lines). */
  onRetry?: (info: { attempt: number; delayMs: number; last: unknown }) => void;
  /** The error to throw when retrying stops without a value; the default is a TOOL_FAILED MemoError. */
  giveUp?: (info: GiveUp) => unknown;
}

const systemClock = new SystemClock();

/** A retryable reply: 408 Request Timeout, 429 Too Many Requests, and every 5xx (529 overloaded included). */
export function retryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/** `retry-after-ms`, else `Retry-After` (seconds or an HTTP date), in ms; undefined when absent or unreadable. */
export function retryAfterMs(headers: Headers, now: number): number | undefined {
  const ms = headers.get('retry-after-ms')?.trim();
  if (ms && /^\d+(?:\.\d+)?$/.test(ms)) return Math.round(Number(ms));
  const v = headers.get('retry-after')?.trim();
  if (!v) return undefined;
  if (/^\d+(?:\.\d+)?$/.test(v)) return Math.round(Number(v) * 1000);
  // An HTTP date starts with the day's name; anything else ("soon", "-5") is unreadable.
  if (!/^[A-Za-z]{3},/.test(v)) return undefined;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * A wait on `clock` that rejects (with the signal's reason) as soon as the signal aborts. On the
 * system clock, whose timers do not keep the process alive, the wait holds it for as long as it
 * lasts: the caller awaits it, and between attempts nothing else may (a refused connection leaves
 * no socket), so node would otherwise exit in the middle of a call, with no result and no audit line.
 */
function clockSleep(clock: Clock): (ms: number, signal: AbortSignal) => Promise<void> {
  return (ms, signal) => {
    const d = withDeadline(signal, ms, clock);
    const hold = clock instanceof SystemClock && !d.signal.aborted ? setTimeout(() => {}, ms) : undefined;
    return new Promise<void>((resolve, reject) => {
      const settle = () => {
        clearTimeout(hold);
        if (d.cause === 'timeout') resolve();
        else reject(d.signal.reason as Error);
      };
      if (d.signal.aborted) settle();
      else d.signal.addEventListener('abort', settle, { once: true });
    });
  };
}

function cancelledBy(signal: AbortSignal): MemoError {
  return new MemoError('CANCELLED', 'The request was cancelled.', { cause: signal.reason });
}

function defaultJudge(outcome: AttemptOutcome, now: number): AttemptVerdict<Response> {
  if ('error' in outcome) return { retry: outcome.error };
  const res = outcome.response;
  if (!retryableStatus(res.status)) return { done: res };
  // The body of a reply that is retried is not needed: release the connection.
  void res.body?.cancel().catch(() => {});
  const after = retryAfterMs(res.headers, now);
  return after === undefined ? { retry: res } : { retry: res, retryAfterMs: after };
}

function defaultGiveUp(info: GiveUp): MemoError {
  const last = info.last instanceof Response ? `HTTP ${info.last.status}` : info.last instanceof Error ? info.last.message : String(info.last);
  const details = { retry: info.why, attempts: info.attempts, ...(info.retryAfterMs !== undefined ? { retryAfterMs: info.retryAfterMs } : {}) };
  if (info.why === 'retry-after') {
    const at = new Date(info.retryAt ?? 0).toISOString().replace(/\.\d{3}Z$/, 'Z');
    return new MemoError('TOOL_FAILED', `${last}: the server asks to retry after ${at} (in ${Math.ceil((info.retryAfterMs ?? 0) / 1000)} s).`, {
      details,
      cause: info.last,
    });
  }
  return new MemoError('TOOL_FAILED', `${last} (tried ${info.attempts} time${info.attempts === 1 ? '' : 's'}).`, { details, cause: info.last });
}

/**
 * `fetch` with retries: network errors, time-outs and retryable statuses are tried again, up to
 * `attempts` in all, after an exponential backoff with jitter, or after exactly what the server's
 * Retry-After (or `retry-after-ms`) asks for. A Retry-After beyond `maxRetryAfterMs` ends the call at
 * once with the time to retry. The signal in `init` stops everything: a running attempt, a wait
 * (no further attempt starts), and the result is a CANCELLED MemoError.
 *
 * Without `judge` it resolves with the first reply that is not retried (a 404 included: check
 * `ok`); with one, with the judge's `done` value.
 */
export async function fetchWithRetry<T = Response>(url: string | URL, init: RequestInit = {}, options: FetchRetryOptions<T> = {}): Promise<T> {
  const policy: RetryPolicy = { ...DEFAULT_RETRY_POLICY };
  for (const key of Object.keys(DEFAULT_RETRY_POLICY) as Array<keyof RetryPolicy>) {
    const v = options[key];
    if (typeof v === 'number' && !Number.isNaN(v)) policy[key] = v;
  }
  const attempts = Math.max(1, Math.floor(policy.attempts));
  const clock = options.clock ?? systemClock;
  const sleep = options.sleep ?? clockSleep(clock);
  const random = options.random ?? Math.random;
  const doFetch = options.fetch ?? fetch;
  const judge = options.judge ?? ((outcome: AttemptOutcome) => defaultJudge(outcome, clock.now()) as AttemptVerdict<T>);
  const giveUp = options.giveUp ?? defaultGiveUp;
  const signal = init.signal ?? new AbortController().signal;
  const started = clock.now();

  for (let attempt = 1; ; attempt++) {
    if (signal.aborted) throw cancelledBy(signal);
    const d = withDeadline(signal, policy.attemptTimeoutMs, clock);
    let verdict: AttemptVerdict<T>;
    try {
      let outcome: AttemptOutcome;
      try {
        outcome = { response: await doFetch(url, { ...init, signal: d.signal }) };
      } catch (error) {
        if (signal.aborted) throw cancelledBy(signal);
        outcome = { error, timedOut: d.cause === 'timeout' };
      }
      verdict = await judge(outcome, attempt, d.signal);
    } catch (err) {
      // A judge reading the body sees the abort as its own failure: the caller's stop wins.
      if (signal.aborted) throw cancelledBy(signal);
      throw err;
    } finally {
      d.dispose();
    }
    if ('done' in verdict) return verdict.done;

    let wait = Math.min(policy.baseDelayMs * 2 ** (attempt - 1), policy.maxDelayMs);
    wait = Math.round(wait * (1 - Math.min(1, Math.max(0, policy.jitter)) * random()));
    if (verdict.retryAfterMs !== undefined) {
      if (verdict.retryAfterMs > policy.maxRetryAfterMs) {
        throw giveUp({
          why: 'retry-after',
          attempts: attempt,
          last: verdict.retry,
          retryAfterMs: verdict.retryAfterMs,
          retryAt: clock.now() + verdict.retryAfterMs,
        });
      }
      wait = verdict.retryAfterMs;
    }
    if (attempt >= attempts) throw giveUp({ why: 'attempts', attempts: attempt, last: verdict.retry });
    // A retry that could not finish within the budget is not started (its attempt limit counts, when there is one).
    const next = Number.isFinite(policy.attemptTimeoutMs) ? policy.attemptTimeoutMs : 0;
    if (clock.now() - started + wait + next > policy.budgetMs) throw giveUp({ why: 'budget', attempts: attempt, last: verdict.retry });
    options.onRetry?.({ attempt, delayMs: wait, last: verdict.retry });
    try {
      await sleep(wait, signal);
    } catch {
      throw cancelledBy(signal);
    }
    if (signal.aborted) throw cancelledBy(signal);
  }
}
