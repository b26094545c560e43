/** The DI token of the kernel's clock (a host or a test may bring its own). */
export const Clock = Symbol('Clock');

/** Time as the kernel sees it. Tests drive a fake one so timeouts and windows need no waiting. */
export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): ClockTimer;
  clearTimeout(timer: ClockTimer): void;
}

export type ClockTimer = { readonly id: unknown };

export class SystemClock implements Clock {
  now(): number {
    return Date.now();
  }
  setTimeout(fn: () => void, ms: number): ClockTimer {
    const t = setTimeout(fn, ms);
    // A pending permission prompt or tool timeout must not keep a finished process alive.
    t.unref?.();
    return { id: t };
  }
  clearTimeout(timer: ClockTimer): void {
    clearTimeout(timer.id as NodeJS.Timeout);
  }
}

/** A clock that moves only when told to. Timers fire in due order during `advance`. */
export class ManualClock implements Clock {
  private current: number;
  private seq = 0;
  private timers = new Map<number, { at: number; fn: () => void }>();

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.current = start;
  }
  now(): number {
    return this.current;
  }
  setTimeout(fn: () => void, ms: number): ClockTimer {
    const id = ++this.seq;
    this.timers.set(id, { at: this.current + Math.max(0, ms), fn });
    return { id };
  }
  clearTimeout(timer: ClockTimer): void {
    this.timers.delete(timer.id as number);
  }
  /** Number of timers still waiting. */
  get pending(): number {
    return this.timers.size;
  }
  /** Moves time forward, firing each timer that falls due, in order. */
  advance(ms: number): void {
    const target = this.current + ms;
    for (;;) {
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const entry of this.timers) {
        if (entry[1].at <= target && (!next || entry[1].at < next[1].at)) next = entry;
      }
      if (!next) break;
      this.timers.delete(next[0]);
      this.current = next[1].at;
      next[1].fn();
    }
    this.current = target;
  }
}
