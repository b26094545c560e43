/**
 * The rate limits of instances that share one PostgreSQL database (`MEMO_DATABASE_URL`), in the
 * schema `memo_limits`. Same rules as the in-memory limiter (kernel/rate-limit/rate-limiter.ts): a
 * rolling window per caller (a log of admitted calls, not a counter that resets), a cooldown on an
 * identical call by canonical arguments, and a ceiling across all callers, with the same refusals.
 *
 * rate-limiter-flexible's Postgres store was the maintained candidate, but it counts in fixed windows
 * (a key's points reset whole when its expiry passes, so a caller could use twice its budget across
 * a boundary within one rolling minute) and cannot take a point from three limiters at once, so a
 * call refused by the ceiling would still spend the caller's point. Hence one PL/pgSQL function,
 * one statement per call: it takes the caller's transaction advisory lock, then (for the ceiling)
 * the global one, always in that order (no deadlock), checks and records in the same transaction,
 * so two instances can never both take the last slot. Times are the database server's clock, the
 * one clock every instance shares. The tables are UNLOGGED: limits are minutes-long state, not worth
 * a WAL write per call; a crash of the server empties them (every budget full again).
 */
import { createHash } from 'node:crypto';
import type { DataSource, MigrationInterface, QueryRunner } from 'typeorm';
import type { DatabaseUrl } from './database-url.js';

export const LIMITS_SCHEMA = 'memo_limits';

/** How long one check may take before the call is refused as unchecked (a server that accepts connections but does not answer). */
const CHECK_TIMEOUT_MS = 5_000;

class CreateLimits1796188000000 implements MigrationInterface {
  async up(qr: QueryRunner): Promise<void> {
    await qr.query(`CREATE UNLOGGED TABLE "admitted" ("budget" text NOT NULL, "at" bigint NOT NULL)`);
    await qr.query(`CREATE INDEX "admitted_budget_at" ON "admitted" ("budget", "at")`);
    await qr.query(`CREATE UNLOGGED TABLE "recent" ("budget" text NOT NULL, "call" text NOT NULL, "at" bigint NOT NULL, PRIMARY KEY ("budget", "call"))`);
    await qr.query(`CREATE INDEX "recent_at" ON "recent" ("at")`);
    // '*' is the ceiling's own budget (no caller's key is '*'). SET search_path FROM CURRENT: the
    // function finds its tables in this schema whoever calls it.
    await qr.query(`
      CREATE FUNCTION "admit"(p_budget text, p_call text, p_max int, p_window bigint, p_cooldown bigint, p_global int)
      RETURNS TABLE (out_rule text, out_ms bigint)
      LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
      DECLARE
        v_now bigint := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint;
        v_n bigint;
        v_oldest bigint;
        v_last bigint;
      BEGIN
        PERFORM pg_advisory_xact_lock(hashtext('memo-limits:' || p_budget));
        IF p_cooldown > 0 AND p_call IS NOT NULL THEN
          SELECT r."at" INTO v_last FROM "recent" r WHERE r."budget" = p_budget AND r."call" = p_call;
          IF v_last IS NOT NULL AND v_now - v_last < p_cooldown THEN
            RETURN QUERY SELECT 'duplicate'::text, v_now - v_last;
            RETURN;
          END IF;
        END IF;
        IF p_max > 0 THEN
          DELETE FROM "admitted" a WHERE a."budget" = p_budget AND a."at" <= v_now - p_window;
          SELECT count(*), min(a."at") INTO v_n, v_oldest FROM "admitted" a WHERE a."budget" = p_budget;
          IF v_n >= p_max THEN
            RETURN QUERY SELECT 'window'::text, v_oldest + p_window - v_now;
            RETURN;
          END IF;
        END IF;
        IF p_global > 0 THEN
          PERFORM pg_advisory_xact_lock(hashtext('memo-limits:*'));
          DELETE FROM "admitted" a WHERE a."budget" = '*' AND a."at" <= v_now - p_window;
          SELECT count(*), min(a."at") INTO v_n, v_oldest FROM "admitted" a WHERE a."budget" = '*';
          IF v_n >= p_global THEN
            RETURN QUERY SELECT 'global'::text, v_oldest + p_window - v_now;
            RETURN;
          END IF;
          INSERT INTO "admitted" ("budget", "at") VALUES ('*', v_now);
        END IF;
        IF p_max > 0 THEN
          INSERT INTO "admitted" ("budget", "at") VALUES (p_budget, v_now);
        END IF;
        IF p_cooldown > 0 AND p_call IS NOT NULL THEN
          INSERT INTO "recent" ("budget", "call", "at") VALUES (p_budget, p_call, v_now)
            ON CONFLICT ("budget", "call") DO UPDATE SET "at" = EXCLUDED."at";
        END IF;
        RETURN QUERY SELECT 'admitted'::text, 0::bigint;
      END
      $$`);
  }
  async down(qr: QueryRunner): Promise<void> {
    await qr.query(`DROP FUNCTION "admit"`);
    await qr.query(`DROP TABLE "recent"`);
    await qr.query(`DROP TABLE "admitted"`);
  }
}

/** What one check found: admitted, or which rule refused and its milliseconds (since the identical call, or until the budget refills). */
export type LimitVerdict = { rule: 'admitted' } | { rule: 'duplicate'; sinceMs: number } | { rule: 'window' | 'global'; refillMs: number };

export interface LimitCheck {
  budget: string;
  /** `tool\0canonical args`, or null when the cooldown is off. Stored as its hash (arguments can hold a person's data). */
  call: string | null;
  maxCalls: number;
  windowMs: number;
  duplicateCooldownMs: number;
  globalMaxCalls: number;
}

/** The shared limits' store: opened on first use (again after a failed opening), closed with the kernel. */
export class SharedLimits {
  private opening: Promise<DataSource> | undefined;
  private lastSweep = 0;
  private closed = false;

  constructor(private readonly url: DatabaseUrl) {}

  /** Checks and (when admitted) records one call, in one statement. Rejects when the database cannot be asked. */
  async check(c: LimitCheck): Promise<LimitVerdict> {
    const ds = await this.open();
    const call = c.call === null ? null : createHash('sha256').update(c.call).digest('base64url');
    const rows = await withTimeout(
      ds.query<Array<{ out_rule: string; out_ms: string | number }>>(`SELECT "out_rule", "out_ms" FROM "admit"($1, $2, $3, $4, $5, $6)`, [
        c.budget,
        call,
        c.maxCalls,
        c.windowMs,
        c.duplicateCooldownMs,
        c.globalMaxCalls,
      ]),
      this.url,
    );
    this.sweep(ds, Math.max(c.windowMs, c.duplicateCooldownMs));
    const row = rows[0];
    const ms = Number(row?.out_ms ?? 0);
    switch (row?.out_rule) {
      case 'admitted':
        return { rule: 'admitted' };
      case 'duplicate':
        return { rule: 'duplicate', sinceMs: ms };
      case 'window':
      case 'global':
        return { rule: row.out_rule, refillMs: ms };
      default:
        throw new Error(`the limits function of ${this.url.display} answered ${JSON.stringify(row?.out_rule ?? null)}`);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const opening = this.opening;
    this.opening = undefined;
    const ds = await opening?.catch(() => undefined);
    if (ds?.isInitialized) await ds.destroy().catch(() => {});
  }

  private open(): Promise<DataSource> {
    if (this.closed) return Promise.reject(new Error('the kernel is shutting down'));
    if (!this.opening) {
      const opening = import('./postgres.js').then(({ openPostgres }) =>
        openPostgres(this.url, LIMITS_SCHEMA, { entities: [], migrations: [CreateLimits1796188000000] }),
      );
      this.opening = opening;
      // A failed opening (the server was down) is tried again by the next call.
      opening.catch(() => {
        if (this.opening === opening) this.opening = undefined;
      });
    }
    return this.opening;
  }

  /**
   * Forgets callers idle for longer than the window and the cooldown (each check prunes its own
   * caller's old rows; this takes the rest), at most once per horizon, never waiting on a row a
   * check holds (SKIP LOCKED), so it cannot deadlock with one.
   */
  private sweep(ds: DataSource, horizonMs: number): void {
    const now = Date.now();
    if (now - this.lastSweep < horizonMs) return;
    this.lastSweep = now;
    const cutoff = `floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint - $1`;
    void ds
      .query(`DELETE FROM "admitted" WHERE ctid IN (SELECT ctid FROM "admitted" WHERE "at" <= ${cutoff} FOR UPDATE SKIP LOCKED)`, [horizonMs])
      .then(() => ds.query(`DELETE FROM "recent" WHERE ctid IN (SELECT ctid FROM "recent" WHERE "at" <= ${cutoff} FOR UPDATE SKIP LOCKED)`, [horizonMs]))
      .catch(() => {
        // The next sweep tries again; the checks prune their own callers meanwhile.
      });
  }
}

function withTimeout<T>(p: Promise<T>, url: DatabaseUrl): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`The database ${url.display} (schema "${LIMITS_SCHEMA}") did not answer within ${CHECK_TIMEOUT_MS / 1000} s`)),
      CHECK_TIMEOUT_MS,
    );
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}
