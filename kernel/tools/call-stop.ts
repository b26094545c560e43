/** Why a call was stopped: its tool's time ran out, or the caller (or the kernel's shutdown) cancelled it. */
export type StopCause = 'timeout' | 'cancelled';

/**
 * One tool call's cancellation. The caller's signal, the kernel's shutdown and the tool's timeout
 * stop it; the pipeline hears that through a plain callback, and the handler through `signal`.
 *
 * The AbortSignal is made only when something reads it (a handler that passes it to a child process
 * or a fetch, a permission prompt waiting for a person): most calls never look, and an
 * AbortController with its listeners costs more than the rest of a small call's bookkeeping (about
 * 8 us here). Read after the call was stopped, the signal is already aborted with the stop's reason.
 */
export class CallStop {
  private controller: AbortController | null = null;
  private listener: (() => void) | null = null;
  private stoppedWith: { cause: StopCause; reason: unknown } | null = null;

  /** The signal the handler sees; aborted once the call is stopped. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.stoppedWith) this.controller.abort(this.stoppedWith.reason);
    }
    return this.controller.signal;
  }

  /** What stopped the call, or null while it runs. */
  get cause(): StopCause | null {
    return this.stoppedWith?.cause ?? null;
  }

  get stopped(): boolean {
    return this.stoppedWith !== null;
  }

  /** Stops the call (the first stop wins): aborts the signal if it was made, then tells the pipeline. */
  stop(cause: StopCause, reason: unknown): void {
    if (this.stoppedWith) return;
    this.stoppedWith = { cause, reason };
    this.controller?.abort(reason);
    const listener = this.listener;
    this.listener = null;
    listener?.();
  }

  /** The pipeline's one listener (the run waiting for the handler); null removes it. */
  onStop(listener: (() => void) | null): void {
    this.listener = listener;
  }
}
