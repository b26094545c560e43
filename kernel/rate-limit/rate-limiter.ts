import stringify from 'safe-stable-stringify';
import type { Clock } from '../clock.js';
import { inject, injectable } from '../di.js';
import * as T from '../tokens.js';
import { MemoError } from '../errors.js';

export interface RateLimitOptions {
  /** Calls admitted per rolling window, across all tools. 0 turns the window limit off. */
  maxCalls: number;
  windowMs: number;
  /** An identical call (same tool, same canonical arguments) within this many ms is refused. 0 = off. */
  duplicateCooldownMs: number;
}

export const DEFAULT_RATE_LIMITS: RateLimitOptions = { maxCalls: 30, windowMs: 60_000, duplicateCooldownMs: 5_000 };

/** Canonical JSON: key order ignored, so `{a,b}` and `{b,a}` are the same call. */
export function canonicalArgs(args: unknown): string {
  return stringify(args) ?? 'undefined';
}

/**
 * The seed's limiter: N calls per rolling minute across all tools, and a cooldown (not a ban) on
 * repeating the exact same call. Admitted calls are counted when admitted, so a call that is later
 * denied by the permission gate still used its slot: a model looping on denied calls is throttled too.
 */
@injectable()
export class RateLimiter {
  private readonly admitted: number[] = [];
  private readonly lastSeen = new Map<string, number>();
  private options: RateLimitOptions;

  constructor(
    @inject(T.Clock) private readonly clock: Clock,
    @inject(T.RateLimits) options: Partial<RateLimitOptions> = {},
  ) {
    this.options = { ...DEFAULT_RATE_LIMITS, ...options };
  }

  get limits(): RateLimitOptions {
    return { ...this.options };
  }

  configure(options: Partial<RateLimitOptions>): void {
    this.options = { ...this.options, ...options };
  }

  /** Admits the call or throws RATE_LIMITED with the whole seconds to wait. */
  admit(tool: string, args: unknown): void {
    const now = this.clock.now();
    const { maxCalls, windowMs, duplicateCooldownMs } = this.options;

    let key: string | undefined;
    if (duplicateCooldownMs > 0) {
      key = `${tool}\u0000${canonicalArgs(args)}`;
      const last = this.lastSeen.get(key);
      if (last !== undefined && now - last < duplicateCooldownMs) {
        const wait = Math.max(1, Math.ceil((duplicateCooldownMs - (now - last)) / 1000));
        throw new MemoError(
          'RATE_LIMITED',
          `The same ${tool} call was made ${((now - last) / 1000).toFixed(1)} s ago; identical calls are allowed once every ${duplicateCooldownMs / 1000} s. Retry in ${wait} s.`,
          { tool, details: { retryAfterSeconds: wait, rule: 'duplicate' } },
        );
      }
    }

    if (maxCalls > 0) {
      for (let first = this.admitted[0]; first !== undefined && now - first >= windowMs; first = this.admitted[0]) this.admitted.shift();
      if (this.admitted.length >= maxCalls) {
        const wait = Math.max(1, Math.ceil((this.admitted[0]! + windowMs - now) / 1000)); // not empty: length >= maxCalls > 0
        throw new MemoError('RATE_LIMITED', `Tool call limit reached: ${maxCalls} calls per ${windowMs / 1000} s across all tools. Retry in ${wait} s.`, {
          tool,
          details: { retryAfterSeconds: wait, rule: 'window' },
        });
      }
      this.admitted.push(now);
    }

    if (key !== undefined) {
      this.lastSeen.set(key, now);
      // Bound the map: forget entries whose cooldown has long passed.
      if (this.lastSeen.size > 4096) {
        for (const [k, t] of this.lastSeen) if (now - t >= duplicateCooldownMs) this.lastSeen.delete(k);
      }
    }
  }
}
