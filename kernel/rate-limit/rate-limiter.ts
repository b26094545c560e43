import stringify from 'safe-stable-stringify';
import { Clock } from '../clock.js';
import { KernelConfig } from '../kernel-config.js';
import { inject, injectable } from '../di.js';
import { MemoError } from '../errors.js';
import type { Caller } from '../tools/contract.js';
import { instanceId } from '../storage/instance-id.js';
import { SharedLimits, type LimitVerdict } from '../storage/shared-limits.js';

/** `KernelOptions.rateLimits`, as given (the limiter fills in its defaults): its DI token. */
export const RateLimits = Symbol('RateLimits');

export interface RateLimitOptions {
  /** Calls admitted per rolling window to each caller, across all tools. 0 turns the per-caller limit off. */
  maxCalls: number;
  windowMs: number;
  /** An identical call (same tool, same canonical arguments) by the same caller within this many ms is refused. 0 = off. */
  duplicateCooldownMs: number;
  /**
   * Calls admitted per rolling window across all callers together: protects the machine. 0 = off.
   * Left out, it is 300, or off when `maxCalls` is set to 0 (no limits asked for).
   */
  globalMaxCalls: number;
}

export const DEFAULT_RATE_LIMITS: RateLimitOptions = { maxCalls: 30, windowMs: 60_000, duplicateCooldownMs: 5_000, globalMaxCalls: 300 };

/** Every limit off (`memo serve --rate-limit off`, benchmarks). */
export const NO_RATE_LIMITS: RateLimitOptions = { ...DEFAULT_RATE_LIMITS, maxCalls: 0, duplicateCooldownMs: 0, globalMaxCalls: 0 };

/** Canonical JSON: key order ignored, so `{a,b}` and `{b,a}` are the same call. */
export function canonicalArgs(args: unknown): string {
  return stringify(args) ?? 'undefined';
}

/** A caller's name can come from a client: keep keys and messages bounded whatever it says. */
const NAME_MAX = 200;

/**
 * Whose budget a call uses: each MCP session its own (a client without a session: its declared name
 * and version, self-declared, so fairness rather than security), each agent conversation, each
 * routine, and one for the CLI and one for the host. `whose` names it in a refusal.
 */
function budgetOf(caller: Caller): { key: string; whose: string; who: string } {
  const id = caller.id === undefined ? undefined : String(caller.id).slice(0, NAME_MAX);
  switch (caller.kind) {
    case 'mcp':
      // A client token is who the caller is, whatever name it declares or however many sessions it opens.
      if (caller.token !== undefined) {
        const token = String(caller.token).slice(0, NAME_MAX);
        return { key: `mcp-token:${token}`, whose: `the MCP client token ${token}'s`, who: `the MCP client token ${token}` };
      }
      if (caller.sessionId !== undefined)
        return { key: `mcp-session:${String(caller.sessionId).slice(0, NAME_MAX)}`, whose: "this MCP session's", who: 'this MCP session' };
      return { key: `mcp:${id ?? 'unknown-client'}`, whose: `the MCP client ${id ?? 'unknown-client'}'s`, who: `the MCP client ${id ?? 'unknown-client'}` };
    case 'agent':
      if (caller.conversationId !== undefined)
        return { key: `agent:${String(caller.conversationId).slice(0, NAME_MAX)}`, whose: "this agent conversation's", who: 'this agent conversation' };
      return { key: 'agent', whose: "the agent's", who: 'the agent' };
    case 'routine':
      return { key: `routine:${id ?? ''}`, whose: `the routine ${id ?? '(unnamed)'}'s`, who: `the routine ${id ?? '(unnamed)'}` };
    case 'cli':
      return { key: 'cli', whose: "the CLI's", who: 'the CLI' };
    default:
      return { key: 'host', whose: "the host's", who: 'the host' };
  }
}

/** "per minute" for the seed's window, "per 10 s" otherwise. */
function per(windowMs: number): string {
  return windowMs === 60_000 ? 'per minute' : `per ${windowMs / 1000} s`;
}

/** Fills in the defaults; asking for `maxCalls: 0` without a global ceiling means no ceiling either. */
function resolve(base: RateLimitOptions, given: Partial<RateLimitOptions>): RateLimitOptions {
  const out = { ...base, ...given };
  if (given.maxCalls === 0 && given.globalMaxCalls === undefined) out.globalMaxCalls = 0;
  return out;
}

type BudgetName = ReturnType<typeof budgetOf>;

/** The refusals, word for word the same whether the limits are in memory or shared. */
function duplicateRefusal(tool: string, budget: BudgetName, sinceMs: number, cooldownMs: number): MemoError {
  const wait = Math.max(1, Math.ceil((cooldownMs - sinceMs) / 1000));
  return new MemoError(
    'RATE_LIMITED',
    `The same ${tool} call was made by ${budget.who} ${(sinceMs / 1000).toFixed(1)} s ago; the identical call cooldown of this caller allows it once every ${cooldownMs / 1000} s. Retry in ${wait} s.`,
    { tool, details: { retryAfterSeconds: wait, rule: 'duplicate' } },
  );
}

function windowRefusal(tool: string, budget: BudgetName, refillMs: number, maxCalls: number, windowMs: number): MemoError {
  const wait = Math.max(1, Math.ceil(refillMs / 1000));
  return new MemoError(
    'RATE_LIMITED',
    `Tool call limit reached: ${budget.whose} ${maxCalls} calls ${per(windowMs)} (across all tools) are used up. The budget refills in ${wait} s; retry then.`,
    { tool, details: { retryAfterSeconds: wait, rule: 'window' } },
  );
}

function globalRefusal(tool: string, refillMs: number, globalMaxCalls: number, windowMs: number): MemoError {
  const wait = Math.max(1, Math.ceil(refillMs / 1000));
  return new MemoError(
    'RATE_LIMITED',
    `Tool call limit reached: the machine-wide ${globalMaxCalls} calls ${per(windowMs)} (all callers together) are used up. The budget refills in ${wait} s; retry then.`,
    { tool, details: { retryAfterSeconds: wait, rule: 'global' } },
  );
}

/** When the shared limits cannot be checked: how soon to try again (the pool reconnects by itself). */
const UNCHECKED_RETRY_S = 5;

/** One caller's budget: the times of its admitted calls in the window, and when it last made each distinct call. */
interface Budget {
  admitted: number[];
  lastSeen: Map<string, number>;
  lastAdmitted: number;
}

/** Drops the times that have left the window (the list is in time order). */
function expire(times: number[], now: number, windowMs: number): void {
  let n = 0;
  while (n < times.length && now - times[n]! >= windowMs) n++;
  if (n > 0) times.splice(0, n);
}

/**
 * The seed's limiter, per caller: each caller gets N calls per rolling minute across all tools and a
 * cooldown (not a ban) on repeating the exact same call, and a machine-wide ceiling holds across all
 * callers together. Admitted calls are counted when admitted, so a call that is later denied by the
 * permission gate still used its slot: a model looping on denied calls is throttled too. A caller
 * idle for longer than the window (and the cooldown) is forgotten: its budget is full again anyway.
 */
@injectable()
export class RateLimiter {
  private readonly budgets = new Map<string, Budget>();
  private readonly admitted: number[] = [];
  private lastSweep: number;
  private options: RateLimitOptions;

  /** With a shared database: the limits of every instance on it, in PostgreSQL. */
  private readonly shared: { store: SharedLimits; instance: () => string } | undefined;

  constructor(
    @inject(Clock) private readonly clock: Clock,
    @inject(RateLimits) options: Partial<RateLimitOptions> = {},
    @inject(KernelConfig) config?: KernelConfig,
  ) {
    this.options = resolve(DEFAULT_RATE_LIMITS, options);
    this.lastSweep = clock.now();
    if (config?.database) {
      let id: string | undefined;
      this.shared = { store: new SharedLimits(config.database), instance: () => (id ??= instanceId(config.dataDir)) };
    }
  }

  get limits(): RateLimitOptions {
    return { ...this.options };
  }

  /** How many callers the limiter currently remembers. */
  get callers(): number {
    return this.budgets.size;
  }

  configure(options: Partial<RateLimitOptions>): void {
    this.options = resolve(this.options, options);
  }

  /** True when the limits are shared through a database: calls are admitted with `admitShared`, not `admit`. */
  get isShared(): boolean {
    return this.shared !== undefined;
  }

  /**
   * Admits the caller's call or throws RATE_LIMITED saying whose budget ran out and the whole seconds
   * to wait. In memory, synchronously: the pipeline's hot path gets no extra tick.
   */
  admit(tool: string, args: unknown, caller: Caller): void {
    if (this.shared) throw new Error('these rate limits are shared through a database: admit calls with admitShared');
    const now = this.clock.now();
    const { maxCalls, windowMs, duplicateCooldownMs, globalMaxCalls } = this.options;
    this.sweep(now);
    const budgetId = budgetOf(caller);
    const budget = this.budgets.get(budgetId.key);

    let call: string | undefined;
    if (duplicateCooldownMs > 0) {
      call = `${tool}\u0000${canonicalArgs(args)}`;
      const last = budget?.lastSeen.get(call);
      if (last !== undefined && now - last < duplicateCooldownMs) throw duplicateRefusal(tool, budgetId, now - last, duplicateCooldownMs);
    }

    if (maxCalls > 0 && budget) {
      expire(budget.admitted, now, windowMs);
      // not empty: length >= maxCalls > 0
      if (budget.admitted.length >= maxCalls) throw windowRefusal(tool, budgetId, budget.admitted[0]! + windowMs - now, maxCalls, windowMs);
    }

    if (globalMaxCalls > 0) {
      expire(this.admitted, now, windowMs);
      if (this.admitted.length >= globalMaxCalls) throw globalRefusal(tool, this.admitted[0]! + windowMs - now, globalMaxCalls, windowMs);
      this.admitted.push(now);
    }

    // Admitted: record it against the caller.
    if (maxCalls <= 0 && call === undefined) return; // nothing per caller to remember
    const mine = budget ?? { admitted: [], lastSeen: new Map<string, number>(), lastAdmitted: now };
    if (!budget) this.budgets.set(budgetId.key, mine);
    mine.lastAdmitted = now;
    if (maxCalls > 0) mine.admitted.push(now);
    if (call !== undefined) {
      mine.lastSeen.set(call, now);
      // Bound the caller's map when its window is off: forget entries whose cooldown has long passed.
      if (mine.lastSeen.size > 4096) for (const [k, t] of mine.lastSeen) if (now - t >= duplicateCooldownMs) mine.lastSeen.delete(k);
    }
  }

  /** Closes the shared limits' connections (nothing to do in memory). */
  async close(): Promise<void> {
    await this.shared?.store.close();
  }

  /**
   * Admits or refuses like `admit`, against the shared database: one statement that checks and records under the
   * caller's lock (kernel/storage/shared-limits.ts). The CLI's and the host's budgets are each
   * instance's own (they are that instance's own processes); every other caller's key names the same
   * caller on every instance (a conversation, a routine, an MCP client by name and version), except
   * an MCP session, whose id exists on the one instance that holds the session. Rejects with
   * RATE_LIMITED (rule `unavailable`) when the limits cannot be checked: fail closed, not admitted.
   */
  async admitShared(tool: string, args: unknown, caller: Caller): Promise<void> {
    const shared = this.shared;
    if (!shared) return this.admit(tool, args, caller);
    const { maxCalls, windowMs, duplicateCooldownMs, globalMaxCalls } = this.options;
    if (maxCalls <= 0 && duplicateCooldownMs <= 0 && globalMaxCalls <= 0) return;
    const budgetId = budgetOf(caller);
    let verdict: LimitVerdict;
    try {
      const key = budgetId.key === 'cli' || budgetId.key === 'host' ? `${budgetId.key}@${shared.instance()}` : budgetId.key;
      verdict = await shared.store.check({
        budget: key,
        call: duplicateCooldownMs > 0 ? `${tool}\u0000${canonicalArgs(args)}` : null,
        maxCalls,
        windowMs,
        duplicateCooldownMs,
        globalMaxCalls,
      });
    } catch (err) {
      const why = (err as Error)?.message ?? String(err);
      throw new MemoError(
        'RATE_LIMITED',
        `The shared rate limits could not be checked, so the call was not admitted: ${why.replace(/\.$/, '')}. Retry in ${UNCHECKED_RETRY_S} s.`,
        { tool, details: { retryAfterSeconds: UNCHECKED_RETRY_S, rule: 'unavailable' } },
      );
    }
    switch (verdict.rule) {
      case 'admitted':
        return;
      case 'duplicate':
        throw duplicateRefusal(tool, budgetId, verdict.sinceMs, duplicateCooldownMs);
      case 'window':
        throw windowRefusal(tool, budgetId, verdict.refillMs, maxCalls, windowMs);
      case 'global':
        throw globalRefusal(tool, verdict.refillMs, globalMaxCalls, windowMs);
    }
  }

  /** Forgets callers idle for longer than the window and the cooldown (their state would admit anything now). */
  private sweep(now: number): void {
    const horizon = Math.max(this.options.windowMs, this.options.duplicateCooldownMs);
    if (now - this.lastSweep < horizon) return;
    this.lastSweep = now;
    for (const [key, b] of this.budgets) if (now - b.lastAdmitted >= horizon) this.budgets.delete(key);
  }
}
