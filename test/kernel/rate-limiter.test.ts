import { ManualClock } from '../../kernel/clock.js';
import { RateLimiter, canonicalArgs } from '../../kernel/rate-limit/rate-limiter.js';

function refused(fn: () => void): { code: string; details: any } | null {
  try {
    fn();
    return null;
  } catch (e: any) {
    return { code: e.code, details: e.details };
  }
}

describe('the rate limiter', () => {
  it('admits 30 calls in a rolling minute and refuses the 31st with the seconds to wait', () => {
    const clock = new ManualClock();
    const rl = new RateLimiter(clock);
    for (let i = 0; i < 30; i++) {
      expect(refused(() => rl.admit('t', { i }))).toBeNull();
      clock.advance(1000);
    }
    const r = refused(() => rl.admit('t', { i: 30 }));
    expect(r).toEqual({ code: 'RATE_LIMITED', details: { retryAfterSeconds: 30, rule: 'window' } });
  });

  it('frees a slot exactly when the oldest call leaves the window', () => {
    const clock = new ManualClock();
    const rl = new RateLimiter(clock);
    for (let i = 0; i < 30; i++) rl.admit('t', { i });
    clock.advance(59_999);
    expect(refused(() => rl.admit('t', { i: 'late' }))?.code).toBe('RATE_LIMITED');
    clock.advance(1);
    expect(refused(() => rl.admit('t', { i: 'late' }))).toBeNull();
  });

  it('counts calls across all tools together', () => {
    const clock = new ManualClock();
    const rl = new RateLimiter(clock, { maxCalls: 3 });
    rl.admit('a', {});
    rl.admit('b', {});
    rl.admit('c', {});
    expect(refused(() => rl.admit('d', {}))?.code).toBe('RATE_LIMITED');
  });

  it('refuses an identical call within 5 s (key order ignored) and admits it again after the cooldown', () => {
    const clock = new ManualClock();
    const rl = new RateLimiter(clock);
    rl.admit('read_file', { path: 'a', limit: 1 });
    clock.advance(4000);
    expect(refused(() => rl.admit('read_file', { limit: 1, path: 'a' }))).toEqual({
      code: 'RATE_LIMITED',
      details: { retryAfterSeconds: 1, rule: 'duplicate' },
    });
    expect(refused(() => rl.admit('read_file', { path: 'b', limit: 1 }))).toBeNull();
    expect(refused(() => rl.admit('list_directory', { path: 'a', limit: 1 }))).toBeNull();
    clock.advance(1000);
    expect(refused(() => rl.admit('read_file', { path: 'a', limit: 1 }))).toBeNull();
  });

  it('does not restart the cooldown when a repeat is refused', () => {
    const clock = new ManualClock();
    const rl = new RateLimiter(clock);
    rl.admit('t', { a: 1 });
    clock.advance(4900);
    expect(refused(() => rl.admit('t', { a: 1 }))?.code).toBe('RATE_LIMITED');
    clock.advance(100);
    expect(refused(() => rl.admit('t', { a: 1 }))).toBeNull();
  });

  it('can be configured, including switched off', () => {
    const clock = new ManualClock();
    const rl = new RateLimiter(clock, { maxCalls: 0, duplicateCooldownMs: 0 });
    for (let i = 0; i < 1000; i++) rl.admit('t', { same: true });
    rl.configure({ maxCalls: 1 });
    expect(refused(() => rl.admit('t', {}))).toBeNull();
    expect(refused(() => rl.admit('t', { x: 1 }))?.code).toBe('RATE_LIMITED');
  });

  it('canonicalises nested arguments', () => {
    expect(canonicalArgs({ b: { d: 1, c: [2, { f: 1, e: 2 }] }, a: 0 })).toBe(canonicalArgs({ a: 0, b: { c: [2, { e: 2, f: 1 }], d: 1 } }));
  });
});
