import { SystemClock, type Clock, type ClockTimer } from '../clock.js';

/** Why a deadline's signal fired: its time ran out, or the caller's own signal aborted. */
export type DeadlineCause = 'timeout' | 'cancelled';

/**
 * One abort signal for a piece of work that has a time limit and a caller who may stop it. Like an
 * AbortController whose signal also follows the caller's signal and a timer on the kernel's clock.
 */
export interface Deadline {
  readonly signal: AbortSignal;
  /** What fired the signal; null while it has not fired, or when its owner ended it with `abort`. */
  readonly cause: DeadlineCause | null;
  /** Ends the work now, as its owner (after an answer arrived, say): aborts the signal with `reason`, then disposes. */
  abort(reason?: unknown): void;
  /** Clears the timer and stops following the caller's signal. The signal is left as it is. Idempotent. */
  dispose(): void;
}

const systemClock = new SystemClock();

/**
 * A deadline of `ms` on `clock` (the real one by default; a ManualClock in tests) that also fires
 * when `outer` aborts. On timeout the signal's reason is a `TimeoutError` DOMException (what
 * `AbortSignal.timeout` gives); on cancellation it is the caller's own reason. An `outer` that has
 * already aborted gives a signal that has too, and no timer is started. `ms` of Infinity means no
 * timer, only the caller's signal.
 *
 * Every deadline must be disposed when its work ends (in a `finally`), so a long-lived caller
 * signal does not collect a listener per call and no timer outlives the work.
 */
export function withDeadline(outer: AbortSignal | undefined, ms: number, clock: Clock = systemClock, own?: AbortController): Deadline {
  // A caller that already holds the work's controller (the pipeline, once per call) lends it: its
  // signal is the deadline's, no second controller is made, and the timer aborts it directly.
  const controller = own ?? new AbortController();
  let cause: DeadlineCause | null = null;
  let timer: ClockTimer | null = null;
  let disposed = false;

  const dispose = () => {
    if (disposed) return;
    disposed = true;
    if (timer) clock.clearTimeout(timer);
    timer = null;
    outer?.removeEventListener('abort', onOuterAbort);
  };
  const fire = (why: DeadlineCause, reason: unknown) => {
    if (controller.signal.aborted) return;
    cause = why;
    dispose();
    controller.abort(reason);
  };
  function onOuterAbort(): void {
    if (outer === controller.signal) {
      // The lent controller was aborted by someone else: a cancellation, already signalled.
      if (cause === null) cause = 'cancelled';
      dispose();
      return;
    }
    fire('cancelled', outer?.reason);
  }

  if (outer?.aborted) {
    if (outer === controller.signal) cause = 'cancelled';
    else fire('cancelled', outer.reason);
  } else {
    outer?.addEventListener('abort', onOuterAbort, { once: true });
    if (Number.isFinite(ms)) {
      timer = clock.setTimeout(() => fire('timeout', new DOMException(`The deadline of ${ms} ms passed.`, 'TimeoutError')), Math.max(0, ms));
    }
  }

  return {
    signal: controller.signal,
    get cause() {
      return cause;
    },
    abort(reason?: unknown) {
      dispose();
      if (!controller.signal.aborted) controller.abort(reason);
    },
    dispose,
  };
}
