/**
 * Rate limits shared by two kernels on one real PostgreSQL database (MEMO_DATABASE_URL): the
 * per-caller rolling window, the identical-call cooldown and the global ceiling hold across both,
 * with the refusals the in-memory limiter gives, and no slot is granted twice when both hammer one
 * budget at once. While the server is down, calls fail closed; once it is back they are admitted again.
 */
import { SystemClock } from '../../kernel/clock.js';
import { DatabaseUrl } from '../../kernel/storage/database-url.js';
import { SharedLimits } from '../../kernel/storage/shared-limits.js';
import { RateLimiter, type RateLimitOptions } from '../../kernel/rate-limit/rate-limiter.js';
import type { AuditRecord } from '../../kernel/audit/audit-record.js';
import type { Caller, ToolResult } from '../../kernel/tools/contract.js';
import { makeKernel, type Fixture } from '../helpers/kernel-fixture.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';

let server: TestPostgres;
beforeAll(async () => {
  server = await startPostgres();
}, 120_000);
afterEach(async () => {
  await server.start();
});

const client: Caller = { kind: 'mcp', id: 'team-client@1.0' };

/** Two kernels (two instances: their own data folders) on one fresh database, with these limits. */
async function twoInstances(limits: Partial<RateLimitOptions>): Promise<[Fixture, Fixture, string]> {
  const databaseUrl = await server.database();
  const instance = () => makeKernel({ databaseUrl, rateLimits: limits });
  return [instance(), instance(), databaseUrl];
}

function call(fx: Fixture, args: Record<string, unknown>, caller: Caller = client): Promise<ToolResult> {
  return fx.kernel.invoke({ tool: 'echo_safe', args, caller: { ...caller } });
}

function refusal(r: ToolResult): { code: string; message: string; details?: Record<string, unknown> } | null {
  return r.ok ? null : r.error;
}

/** The same refusal from the in-memory limiter, for comparing messages word for word. */
function inMemoryRefusal(limits: Partial<RateLimitOptions>, calls: Array<[Record<string, unknown>, Caller]>): string {
  const rl = new RateLimiter(new SystemClock(), limits);
  for (const [args, caller] of calls) {
    try {
      rl.admit('echo_safe', args, caller);
    } catch (err) {
      return (err as Error).message;
    }
  }
  throw new Error('the in-memory limiter admitted every call');
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('rate limits shared through PostgreSQL', () => {
  it('admits at most maxCalls per window in total when two instances hammer one budget concurrently', async () => {
    const [a, b] = await twoInstances({ maxCalls: 7, windowMs: 60_000, duplicateCooldownMs: 0, globalMaxCalls: 0 });
    const results = await Promise.all(Array.from({ length: 120 }, (_, i) => call(i % 2 ? a : b, { n: i })));
    const admitted = results.filter((r) => r.ok);
    expect(admitted).toHaveLength(7);
    const refused = results.filter((r) => !r.ok).map(refusal);
    expect(new Set(refused.map((r) => r!.code))).toEqual(new Set(['RATE_LIMITED']));
    expect(new Set(refused.map((r) => r!.details?.rule))).toEqual(new Set(['window']));
    // Word for word the in-memory refusal (its seconds may differ by the time that passed).
    const expected = inMemoryRefusal(
      { maxCalls: 7, duplicateCooldownMs: 0 },
      Array.from({ length: 8 }, (_, n) => [{ n }, client]),
    );
    const seconds = /\d+ s/g;
    for (const r of refused) expect(r!.message.replace(seconds, 'N s')).toBe(expected.replace(seconds, 'N s'));
    // Both instances were refused: the budget is one, not one each.
    expect(results.filter((r, i) => !r.ok && i % 2 === 0).length).toBeGreaterThan(0);
    expect(results.filter((r, i) => !r.ok && i % 2 === 1).length).toBeGreaterThan(0);
    await Promise.all([a.close(), b.close()]);
  });

  it('grants each of many budgets its single slot once, with four instances racing for every one', async () => {
    const databaseUrl = await server.database();
    const limits = { maxCalls: 1, windowMs: 60_000, duplicateCooldownMs: 0, globalMaxCalls: 0 };
    const kernels = Array.from({ length: 4 }, () => makeKernel({ databaseUrl, rateLimits: limits }));
    // Opened first, so the race is on the slots, not on the pools' first connections.
    await Promise.all(kernels.map((k) => call(k, { n: 0 }, { kind: 'routine', id: 'warm-up' })));
    const callers = Array.from({ length: 30 }, (_, i): Caller => ({ kind: 'mcp', id: `client-${i}@1` }));
    const results = await Promise.all(callers.flatMap((caller, c) => Array.from({ length: 8 }, (_, i) => call(kernels[i % 4]!, { n: c * 8 + i }, caller))));
    const admittedPer = new Map<number, number>();
    results.forEach((r, i) => r.ok && admittedPer.set(Math.floor(i / 8), (admittedPer.get(Math.floor(i / 8)) ?? 0) + 1));
    expect([...admittedPer.values()]).toEqual(Array(30).fill(1));
    await Promise.all(kernels.map((k) => k.close()));
  });

  it('never grants one slot twice when sixteen connections of four stores race on the check itself', async () => {
    // Straight at the shared store, without a kernel in between, so the statements really overlap
    // in the server: without the caller's lock, a few dozen of these 150 budgets get two slots.
    const url = DatabaseUrl.parse(await server.database());
    const stores = Array.from({ length: 4 }, () => new SharedLimits(url));
    const check = (store: SharedLimits, budget: string) =>
      store.check({ budget, call: null, maxCalls: 1, windowMs: 60_000, duplicateCooldownMs: 0, globalMaxCalls: 0 });
    await Promise.all(stores.map((s) => check(s, 'warm-up')));
    let granted = 0;
    for (let round = 0; round < 150; round++) {
      const verdicts = await Promise.all(Array.from({ length: 16 }, (_, i) => check(stores[i % 4]!, `budget-${round}`)));
      const admitted = verdicts.filter((v) => v.rule === 'admitted').length;
      expect(admitted).toBe(1);
      granted += admitted;
    }
    expect(granted).toBe(150);
    await Promise.all(stores.map((s) => s.close()));
  });

  it('refuses the identical call on the other instance within the cooldown, arguments in any key order', async () => {
    const [a, b] = await twoInstances({ maxCalls: 30, duplicateCooldownMs: 5_000 });
    expect((await call(a, { text: 'x', n: 1 })).ok).toBe(true);
    const r = refusal(await call(b, { n: 1, text: 'x' }));
    expect(r).toMatchObject({ code: 'RATE_LIMITED', details: { rule: 'duplicate' } });
    expect(r!.details!.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(r!.details!.retryAfterSeconds).toBeLessThanOrEqual(5);
    expect(r!.message).toMatch(
      /^The same echo_safe call was made by the MCP client team-client@1\.0 \d+\.\d s ago; the identical call cooldown of this caller allows it once every 5 s\. Retry in [1-5] s\.$/,
    );
    // A different call, or the same call by another caller, is not held up.
    expect((await call(b, { text: 'y', n: 1 })).ok).toBe(true);
    expect((await call(b, { text: 'x', n: 1 }, { kind: 'mcp', id: 'other-client@2' })).ok).toBe(true);
    await Promise.all([a.close(), b.close()]);
  });

  it('holds the global ceiling across all callers of both instances', async () => {
    const [a, b] = await twoInstances({ maxCalls: 30, duplicateCooldownMs: 0, globalMaxCalls: 5 });
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => call(i % 2 ? a : b, { n: i }, { kind: 'routine', id: `routine-${i % 8}` })));
    expect(results.filter((r) => r.ok)).toHaveLength(5);
    const r = refusal(results.find((x) => !x.ok)!);
    expect(r).toMatchObject({ code: 'RATE_LIMITED', details: { rule: 'global' } });
    expect(r!.message).toMatch(
      /^Tool call limit reached: the machine-wide 5 calls per minute \(all callers together\) are used up\. The budget refills in \d+ s; retry then\.$/,
    );
    await Promise.all([a.close(), b.close()]);
  });

  it('keeps a rolling window: a slot comes back when the oldest call leaves it, not the whole budget', async () => {
    const [a, b] = await twoInstances({ maxCalls: 2, windowMs: 3_000, duplicateCooldownMs: 0, globalMaxCalls: 0 });
    expect((await call(a, { n: 1 })).ok).toBe(true);
    await sleep(1_500);
    expect((await call(b, { n: 2 })).ok).toBe(true);
    const full = refusal(await call(a, { n: 3 }));
    expect(full).toMatchObject({ code: 'RATE_LIMITED', details: { rule: 'window' } });
    expect(full!.message).toContain('2 calls per 3 s');
    // Wait for the first call to leave the window (about 1.5 s from here), trying every 100 ms.
    let i = 4;
    for (;;) {
      const r = await call(i % 2 ? a : b, { n: i++ });
      if (r.ok) break;
      expect(r.error.details?.rule).toBe('window');
      await sleep(100);
    }
    // The second call is still in the window: one slot came back, not two.
    expect(refusal(await call(a, { n: i }))).toMatchObject({ code: 'RATE_LIMITED', details: { rule: 'window' } });
    await Promise.all([a.close(), b.close()]);
  });

  it("gives the CLI and the host a budget per instance (they are each instance's own processes)", async () => {
    const [a, b] = await twoInstances({ maxCalls: 2, duplicateCooldownMs: 0, globalMaxCalls: 0 });
    const cli: Caller = { kind: 'cli' };
    expect((await call(a, { n: 1 }, cli)).ok).toBe(true);
    expect((await call(a, { n: 2 }, cli)).ok).toBe(true);
    expect(refusal(await call(a, { n: 3 }, cli))?.message).toMatch(/^Tool call limit reached: the CLI's 2 calls per minute/);
    expect((await call(b, { n: 4 }, cli)).ok).toBe(true);
    // An agent conversation is one caller on every instance.
    const conv: Caller = { kind: 'agent', conversationId: 'c-1' };
    expect((await call(a, { n: 5 }, conv)).ok).toBe(true);
    expect((await call(b, { n: 6 }, conv)).ok).toBe(true);
    expect(refusal(await call(a, { n: 7 }, conv))?.message).toMatch(/^Tool call limit reached: this agent conversation's 2 calls per minute/);
    await Promise.all([a.close(), b.close()]);
  });

  it('fails closed while the database is down, without the password, and admits again once it is back', async () => {
    const databaseUrl = await server.database();
    // An audit sink in memory: what is checked here is the limiter, not the audit trail's own outage rules.
    const instance = (limits: Partial<RateLimitOptions>) => {
      const records: AuditRecord[] = [];
      const sink = { append: (r: AuditRecord) => records.push(r), tail: () => records, close: () => {} };
      return makeKernel({ databaseUrl, rateLimits: limits, services: { auditSink: sink } });
    };
    const a = instance({ maxCalls: 30, duplicateCooldownMs: 0 });
    const b = instance({ maxCalls: 30, duplicateCooldownMs: 0 });
    const free = instance({ maxCalls: 0, duplicateCooldownMs: 0 });
    expect((await call(a, { n: 1 })).ok).toBe(true);
    await server.stop();
    const down = refusal(await call(a, { n: 2 }));
    expect(down).toMatchObject({ code: 'RATE_LIMITED', details: { rule: 'unavailable', retryAfterSeconds: 5 } });
    expect(down!.message).toMatch(
      /^The shared rate limits could not be checked, so the call was not admitted: The database postgres:\/\/memo:\[masked\]@127\.0\.0\.1:\d+\/t\d+ \(schema "memo_limits"\) cannot be reached \(connect ECONNREFUSED [^)]*\); calls that need it fail until it answers again, and Memo reconnects by itself\. Retry in 5 s\.$/,
    );
    expect(down!.message).not.toContain(server.password);
    // A kernel whose limits were never opened fails closed too.
    const never = refusal(await call(b, { n: 3 }));
    expect(never).toMatchObject({ code: 'RATE_LIMITED', details: { rule: 'unavailable' } });
    expect(never!.message).toMatch(
      /^The shared rate limits could not be checked, so the call was not admitted: The database .* \(schema "memo_limits"\) cannot be opened/,
    );
    expect(never!.message).not.toContain(server.password);
    // With every limit off, nothing needs the database.
    expect((await call(free, { n: 4 })).ok).toBe(true);
    await server.start();
    expect((await call(a, { n: 5 })).ok).toBe(true);
    expect((await call(b, { n: 6 })).ok).toBe(true);
    await Promise.all([a.close(), b.close(), free.close()]);
  });
});
