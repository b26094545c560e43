import { ManualClock } from '../../kernel/clock.js';
import { RateLimiter, canonicalArgs, NO_RATE_LIMITS } from '../../kernel/rate-limit/rate-limiter.js';
import type { Caller } from '../../kernel/tools/contract.js';
import { makeKernel, type Fixture } from '../helpers/kernel-fixture.js';

const cli: Caller = { kind: 'cli' };
const session = (id: string): Caller => ({ kind: 'mcp', id: 'client', sessionId: id });

function refused(fn: () => void): { code: string; details: any; message: string } | null {
  try {
    fn();
    return null;
  } catch (e: any) {
    return { code: e.code, details: e.details, message: e.message };
  }
}

describe('the rate limiter', () => {
  it('admits 30 calls in a rolling minute and refuses the 31st with the seconds to wait', () => {
    const clock = new ManualClock();
    const rl = new RateLimiter(clock);
    for (let i = 0; i < 30; i++) {
      expect(refused(() => rl.admit('t', { i }, cli))).toBeNull();
      clock.advance(1000);
    }
    const r = refused(() => rl.admit('t', { i: 30 }, cli));
    expect(r).toMatchObject({ code: 'RATE_LIMITED', details: { retryAfterSeconds: 30, rule: 'window' } });
  });

  it('frees a slot exactly when the oldest call leaves the window', () => {
    const clock = new ManualClock();
    const rl = new RateLimiter(clock);
    for (let i = 0; i < 30; i++) rl.admit('t', { i }, cli);
    clock.advance(59_999);
    expect(refused(() => rl.admit('t', { i: 'late' }, cli))?.code).toBe('RATE_LIMITED');
    clock.advance(1);
    expect(refused(() => rl.admit('t', { i: 'late' }, cli))).toBeNull();
  });

  it("counts a caller's calls across all tools together", () => {
    const clock = new ManualClock();
    const rl = new RateLimiter(clock, { maxCalls: 3 });
    rl.admit('a', {}, cli);
    rl.admit('b', {}, cli);
    rl.admit('c', {}, cli);
    expect(refused(() => rl.admit('d', {}, cli))?.code).toBe('RATE_LIMITED');
  });

  it('refuses an identical call within 5 s (key order ignored) and admits it again after the cooldown', () => {
    const clock = new ManualClock();
    const rl = new RateLimiter(clock);
    rl.admit('read_file', { path: 'a', limit: 1 }, cli);
    clock.advance(4000);
    expect(refused(() => rl.admit('read_file', { limit: 1, path: 'a' }, cli))).toMatchObject({
      code: 'RATE_LIMITED',
      details: { retryAfterSeconds: 1, rule: 'duplicate' },
    });
    expect(refused(() => rl.admit('read_file', { path: 'b', limit: 1 }, cli))).toBeNull();
    expect(refused(() => rl.admit('list_directory', { path: 'a', limit: 1 }, cli))).toBeNull();
    clock.advance(1000);
    expect(refused(() => rl.admit('read_file', { path: 'a', limit: 1 }, cli))).toBeNull();
  });

  it('does not restart the cooldown when a repeat is refused', () => {
    const clock = new ManualClock();
    const rl = new RateLimiter(clock);
    rl.admit('t', { a: 1 }, cli);
    clock.advance(4900);
    expect(refused(() => rl.admit('t', { a: 1 }, cli))?.code).toBe('RATE_LIMITED');
    clock.advance(100);
    expect(refused(() => rl.admit('t', { a: 1 }, cli))).toBeNull();
  });

  it('can be configured, including switched off', () => {
    const clock = new ManualClock();
    const rl = new RateLimiter(clock, { maxCalls: 0, duplicateCooldownMs: 0 });
    for (let i = 0; i < 1000; i++) rl.admit('t', { same: true }, cli);
    rl.configure({ maxCalls: 1 });
    expect(refused(() => rl.admit('t', {}, cli))).toBeNull();
    expect(refused(() => rl.admit('t', { x: 1 }, cli))?.code).toBe('RATE_LIMITED');
  });

  it('canonicalises nested arguments', () => {
    expect(canonicalArgs({ b: { d: 1, c: [2, { f: 1, e: 2 }] }, a: 0 })).toBe(canonicalArgs({ a: 0, b: { c: [2, { e: 2, f: 1 }], d: 1 } }));
  });

  it("gives each MCP session its own 30 calls per minute, and the refusal names the session's budget and when it refills", () => {
    const clock = new ManualClock();
    const rl = new RateLimiter(clock);
    for (let i = 0; i < 30; i++) rl.admit('read_file', { i }, session('s1'));
    clock.advance(20_000);
    const r = refused(() => rl.admit('read_file', { i: 30 }, session('s1')));
    expect(r).toMatchObject({ code: 'RATE_LIMITED', details: { retryAfterSeconds: 40, rule: 'window' } });
    expect(r?.message).toContain("this MCP session's 30 calls per minute");
    expect(r?.message).toContain('refills in 40 s');
    for (let i = 0; i < 30; i++) expect(refused(() => rl.admit('read_file', { i }, session('s2')))).toBeNull();
    expect(refused(() => rl.admit('read_file', { i: 30 }, session('s2')))?.code).toBe('RATE_LIMITED');
  });

  it('lets two MCP sessions read the same file 0.2 s apart, and still cools down a repeat within one session', () => {
    const clock = new ManualClock();
    const rl = new RateLimiter(clock);
    rl.admit('read_file', { path: 'notes.md' }, session('s1'));
    clock.advance(200);
    expect(refused(() => rl.admit('read_file', { path: 'notes.md' }, session('s2')))).toBeNull();
    clock.advance(200);
    const r = refused(() => rl.admit('read_file', { path: 'notes.md' }, session('s1')));
    expect(r).toMatchObject({ code: 'RATE_LIMITED', details: { retryAfterSeconds: 5, rule: 'duplicate' } });
    expect(r?.message).toContain('the identical call cooldown of this caller');
    expect(r?.message).toContain('by this MCP session 0.4 s ago');
  });

  it('keeps separate budgets for the agent per conversation, each routine, the CLI, the host and a sessionless MCP client', () => {
    const clock = new ManualClock();
    const rl = new RateLimiter(clock, { maxCalls: 1 });
    const callers: Caller[] = [
      { kind: 'agent', conversationId: 'c1' },
      { kind: 'agent', conversationId: 'c2' },
      { kind: 'routine', id: 'daily' },
      { kind: 'routine', id: 'weekly' },
      { kind: 'cli' },
      { kind: 'host' },
      { kind: 'mcp', id: 'inspector@1.0' },
      { kind: 'mcp', id: 'cursor@2.1' },
    ];
    for (const c of callers) expect(refused(() => rl.admit('t', {}, c))).toBeNull();
    expect(rl.callers).toBe(callers.length);
    expect(refused(() => rl.admit('t', { again: 1 }, { kind: 'routine', id: 'daily' }))?.message).toContain("the routine daily's 1 calls per minute");
    expect(refused(() => rl.admit('t', { again: 1 }, { kind: 'mcp', id: 'cursor@2.1' }))?.message).toContain("the MCP client cursor@2.1's");
    expect(refused(() => rl.admit('t', { again: 1 }, { kind: 'agent', conversationId: 'c2' }))?.message).toContain("this agent conversation's");
  });

  it('refuses across callers at the machine-wide ceiling and says so', () => {
    const clock = new ManualClock();
    const rl = new RateLimiter(clock);
    expect(rl.limits.globalMaxCalls).toBe(300);
    for (let s = 0; s < 10; s++) for (let i = 0; i < 30; i++) rl.admit('read_file', { i }, session(`s${s}`));
    clock.advance(15_000);
    const r = refused(() => rl.admit('read_file', { i: 0 }, session('fresh')));
    expect(r).toMatchObject({ code: 'RATE_LIMITED', details: { retryAfterSeconds: 45, rule: 'global' } });
    expect(r?.message).toContain('the machine-wide 300 calls per minute');
    expect(r?.message).toContain('refills in 45 s');
    clock.advance(45_000);
    expect(refused(() => rl.admit('read_file', { i: 0 }, session('fresh')))).toBeNull();
  });

  it("does not use up a caller's budget with a call the machine-wide ceiling refused", () => {
    const clock = new ManualClock();
    const rl = new RateLimiter(clock, { maxCalls: 2, globalMaxCalls: 2 });
    rl.admit('t', { a: 1 }, session('s1'));
    rl.admit('t', { a: 2 }, session('s2'));
    expect(refused(() => rl.admit('t', { a: 3 }, session('s1')))?.details.rule).toBe('global');
    rl.configure({ globalMaxCalls: 10 });
    // The refused call neither used s1's second slot nor started a cooldown.
    expect(refused(() => rl.admit('t', { a: 3 }, session('s1')))).toBeNull();
    expect(refused(() => rl.admit('t', { a: 4 }, session('s1')))?.details.rule).toBe('window');
  });

  it('admits everything with every limit off', () => {
    const clock = new ManualClock();
    const rl = new RateLimiter(clock, NO_RATE_LIMITS);
    for (let i = 0; i < 2000; i++) expect(refused(() => rl.admit('read_file', { path: 'same' }, session(`s${i % 3}`)))).toBeNull();
    expect(rl.callers).toBe(0);
  });

  it('treats maxCalls 0 without a global ceiling as no ceiling either', () => {
    const rl = new RateLimiter(new ManualClock(), { maxCalls: 0, duplicateCooldownMs: 0 });
    expect(rl.limits.globalMaxCalls).toBe(0);
    for (let i = 0; i < 500; i++) rl.admit('t', {}, cli);
  });

  it('forgets callers idle for longer than the window: 10,000 sessions leave one behind a minute later', () => {
    const clock = new ManualClock();
    const rl = new RateLimiter(clock, { globalMaxCalls: 0 });
    for (let i = 0; i < 10_000; i++) rl.admit('read_file', { path: 'a' }, session(`s${i}`));
    expect(rl.callers).toBe(10_000);
    clock.advance(59_999);
    rl.admit('read_file', { path: 'a' }, session('late'));
    expect(rl.callers).toBe(10_001);
    clock.advance(1);
    rl.admit('read_file', { path: 'b' }, session('late'));
    expect(rl.callers).toBe(1);
    // A forgotten caller starts again with a full budget (its old calls are out of the window anyway).
    expect(refused(() => rl.admit('read_file', { path: 'a' }, session('s0')))).toBeNull();
  });
});

describe('the pipeline and per-caller limits', () => {
  let fx: Fixture | undefined;
  afterEach(async () => {
    await fx?.close();
    fx = undefined;
  });

  it('does not share the identical call cooldown between two callers with different sessionIds', async () => {
    fx = makeKernel({ rateLimits: { maxCalls: 30, duplicateCooldownMs: 5000 } });
    const call = (sessionId: string) => fx!.kernel.invoke({ tool: 'echo_safe', args: { text: 'same' }, caller: { kind: 'mcp', id: 'client', sessionId } });
    expect((await call('one')).ok).toBe(true);
    fx.clock.advance(200);
    expect((await call('two')).ok).toBe(true);
    const again = await call('one');
    expect(again.ok).toBe(false);
    expect(!again.ok && again.error.code).toBe('RATE_LIMITED');
    expect(!again.ok && again.error.message).toContain('the identical call cooldown of this caller');
  });
});
