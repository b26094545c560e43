import { ManualClock } from '../../../kernel/clock.js';
import { withDeadline } from '../../../kernel/util/with-deadline.js';

describe('withDeadline', () => {
  it('fires after its time on the clock, with cause timeout and a TimeoutError reason', () => {
    const clock = new ManualClock();
    const d = withDeadline(undefined, 1000, clock);
    clock.advance(999);
    expect(d.signal.aborted).toBe(false);
    clock.advance(1);
    expect(d.signal.aborted).toBe(true);
    expect(d.cause).toBe('timeout');
    expect((d.signal.reason as DOMException).name).toBe('TimeoutError');
  });

  it("fires when the caller's signal aborts, with cause cancelled and the caller's reason, and clears its timer", () => {
    const clock = new ManualClock();
    const outer = new AbortController();
    const d = withDeadline(outer.signal, 1000, clock);
    const why = new Error('stop');
    outer.abort(why);
    expect(d.signal.aborted).toBe(true);
    expect(d.cause).toBe('cancelled');
    expect(d.signal.reason).toBe(why);
    expect(clock.pending).toBe(0);
  });

  it('starts aborted, with no timer, when the caller has already aborted', () => {
    const clock = new ManualClock();
    const outer = new AbortController();
    outer.abort('early');
    const d = withDeadline(outer.signal, 1000, clock);
    expect(d.signal.aborted).toBe(true);
    expect(d.cause).toBe('cancelled');
    expect(d.signal.reason).toBe('early');
    expect(clock.pending).toBe(0);
  });

  it("keeps the first cause: a timeout is not turned into a cancel by the caller's later abort", () => {
    const clock = new ManualClock();
    const outer = new AbortController();
    const d = withDeadline(outer.signal, 10, clock);
    clock.advance(10);
    outer.abort();
    expect(d.cause).toBe('timeout');
  });

  it("on dispose clears the timer and stops following the caller's signal, leaving its own signal as it is", () => {
    const clock = new ManualClock();
    const outer = new AbortController();
    const d = withDeadline(outer.signal, 1000, clock);
    d.dispose();
    d.dispose();
    expect(clock.pending).toBe(0);
    outer.abort();
    clock.advance(5000);
    expect(d.signal.aborted).toBe(false);
    expect(d.cause).toBeNull();
  });

  it('leaves no listener on a long-lived caller signal after many disposed deadlines', () => {
    const clock = new ManualClock();
    const outer = new AbortController();
    let added = 0;
    let removed = 0;
    const add = outer.signal.addEventListener.bind(outer.signal);
    const remove = outer.signal.removeEventListener.bind(outer.signal);
    outer.signal.addEventListener = (...args: Parameters<typeof add>) => (added++, add(...args));
    outer.signal.removeEventListener = (...args: Parameters<typeof remove>) => (removed++, remove(...args));
    for (let i = 0; i < 100; i++) withDeadline(outer.signal, 1000, clock).dispose();
    expect(added).toBe(100);
    expect(removed).toBe(100);
    expect(clock.pending).toBe(0);
  });

  it("ends early by its owner's abort, with that reason and no cause", () => {
    const clock = new ManualClock();
    const d = withDeadline(undefined, 1000, clock);
    d.abort('answered');
    expect(d.signal.aborted).toBe(true);
    expect(d.signal.reason).toBe('answered');
    expect(d.cause).toBeNull();
    expect(clock.pending).toBe(0);
  });

  it('with Infinity starts no timer and follows only the caller', () => {
    const clock = new ManualClock();
    const outer = new AbortController();
    const d = withDeadline(outer.signal, Infinity, clock);
    expect(clock.pending).toBe(0);
    outer.abort();
    expect(d.cause).toBe('cancelled');
  });

  it('runs on the real clock by default', async () => {
    const d = withDeadline(undefined, 1);
    await new Promise((resolve) => d.signal.addEventListener('abort', resolve, { once: true }));
    expect(d.cause).toBe('timeout');
  });
});

describe('withDeadline on a lent controller', () => {
  it('aborts the lent controller itself at the deadline, with cause timeout', () => {
    const clock = new ManualClock();
    const own = new AbortController();
    const d = withDeadline(own.signal, 1000, clock, own);
    expect(d.signal).toBe(own.signal);
    clock.advance(1000);
    expect(own.signal.aborted).toBe(true);
    expect(d.cause).toBe('timeout');
    expect((own.signal.reason as DOMException).name).toBe('TimeoutError');
  });

  it('counts an abort of the lent controller by someone else as a cancellation, and stops its timer', () => {
    const clock = new ManualClock();
    const own = new AbortController();
    const d = withDeadline(own.signal, 1000, clock, own);
    own.abort(new Error('caller stopped'));
    expect(d.cause).toBe('cancelled');
    clock.advance(5000);
    expect((own.signal.reason as Error).message).toBe('caller stopped');
  });

  it('is cancelled at once when the lent controller has already aborted', () => {
    const own = new AbortController();
    own.abort();
    expect(withDeadline(own.signal, 1000, new ManualClock(), own).cause).toBe('cancelled');
  });
});
