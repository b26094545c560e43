/**
 * Which Memo instance owns the WhatsApp connection, when several share one PostgreSQL database: one
 * row in wa_owner, taken by an instance (its id, PackApi.instanceId) until a time the database sets
 * (its clock, so the instances' clocks need not agree), renewed by the owner every few seconds and
 * deleted when it stops cleanly. An owner that dies (kill -9) stops renewing, and once the time has
 * passed any other linked instance takes the row over. Taking and renewing are one INSERT … ON
 * CONFLICT DO UPDATE … WHERE (the row is the owner's or has expired): PostgreSQL locks the row and
 * checks the condition again on its newest version, so two instances racing for it never both win.
 * On SQLite (one instance per data folder) there is no lease.
 *
 * Every statement here is bounded (`timeoutMs`): one whose answer does not come in time (the network
 * to the database is cut, the server hangs) fails, and its connection is dropped from the pool rather
 * than handed to the next caller, so a stuck link never holds the owner's renewals up. A claim also
 * says when it was sent: the database counts the lease from when the statement ran, which is no
 * earlier, so `sentAt + ttlMs` is a time by which the lease has surely not run out yet.
 */
import type { Pool, PoolClient } from 'pg';
import type { DataSource } from 'typeorm';

export interface LeaseHolder {
  instance: string;
  /** When the lease runs out unless renewed (the database's clock). */
  expiresAt: Date;
}

export interface Claim {
  /** True when this instance holds the lease afterwards. */
  owned: boolean;
  /** Date.now() just before the statement was sent: the lease, if owned, lasts at least until sentAt + ttlMs. */
  sentAt: number;
}

const NAME = 'connection';
/** How long a lease statement may take unless the caller says otherwise. */
const DEFAULT_TIMEOUT_MS = 10_000;

export class OwnerLease {
  constructor(
    private readonly ds: DataSource,
    readonly instance: string,
    readonly ttlMs: number,
  ) {}

  /** Takes the lease, or renews it; fails if the database does not answer within `timeoutMs`. */
  async claim(timeoutMs = DEFAULT_TIMEOUT_MS): Promise<Claim> {
    const sentAt = Date.now();
    const rows = await this.bounded<{ instance: string }>(
      'Claiming',
      timeoutMs,
      `INSERT INTO wa_owner (name, instance, expires_at, since)
       VALUES ($1, $2, clock_timestamp() + $3 * interval '1 millisecond', clock_timestamp())
       ON CONFLICT (name) DO UPDATE SET instance = excluded.instance, expires_at = excluded.expires_at,
         since = CASE WHEN wa_owner.instance = excluded.instance THEN wa_owner.since ELSE excluded.since END
       WHERE wa_owner.instance = excluded.instance OR wa_owner.expires_at < clock_timestamp()
       RETURNING instance`,
      [NAME, this.instance, this.ttlMs],
    );
    return { owned: rows.length === 1, sentAt };
  }

  /** The instance holding an unexpired lease, or null. */
  async holder(timeoutMs = DEFAULT_TIMEOUT_MS): Promise<LeaseHolder | null> {
    const rows = await this.bounded<{ instance: string; expires_at: Date }>(
      'Reading',
      timeoutMs,
      `SELECT instance, expires_at FROM wa_owner WHERE name = $1 AND expires_at > clock_timestamp()`,
      [NAME],
    );
    const r = rows[0];
    return r ? { instance: r.instance, expiresAt: new Date(r.expires_at) } : null;
  }

  /** Gives the lease up (a clean stop), if this instance holds it. */
  async release(timeoutMs = DEFAULT_TIMEOUT_MS): Promise<void> {
    await this.bounded('Releasing', timeoutMs, `DELETE FROM wa_owner WHERE name = $1 AND instance = $2`, [NAME, this.instance]);
  }

  /**
   * One statement on a connection of the store's pool (typeorm's pg Pool, which starts each one in the
   * store's schema), failing after `timeoutMs` whether it is still waiting for a connection or for the
   * answer; a connection that timed out or failed is destroyed, never returned to the pool.
   */
  private async bounded<R>(what: string, timeoutMs: number, sql: string, params: unknown[]): Promise<R[]> {
    const pool = (this.ds.driver as unknown as { master?: Pool }).master;
    if (!pool) throw new Error('The WhatsApp history database is not open.');
    let timedOut = false;
    let client: PoolClient | null = null;
    let released = false;
    // The pool listens for a connection's errors only while it is idle: while checked out here, a socket
    // that dies (the network cut) would otherwise be an unhandled 'error' event. The query gets the error anyway.
    const ignore = () => undefined;
    const drop = (c: PoolClient, err?: Error) => {
      if (released) return;
      released = true;
      // A dropped connection may report its socket's end later still: it keeps the listener.
      if (!err) c.removeListener('error', ignore);
      c.release(err);
    };
    const work = (async () => {
      const c = await pool.connect();
      c.on('error', ignore);
      client = c;
      if (timedOut) {
        drop(c);
        throw new Error('timed out');
      }
      try {
        const result = await c.query(sql, params);
        drop(c);
        return result.rows as R[];
      } catch (err) {
        drop(c, err instanceof Error ? err : new Error(String(err)));
        throw err;
      }
    })();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        timedOut = true;
        if (client) drop(client, new Error('lease statement timed out'));
        reject(new Error(`${what} the WhatsApp owner lease got no answer from the database within ${timeoutMs} ms.`));
      }, timeoutMs);
    });
    try {
      return await Promise.race([work, deadline]);
    } finally {
      clearTimeout(timer);
      // The loser's outcome is not wanted (a late answer or the dropped connection's error).
      work.catch(() => undefined);
      deadline.catch(() => undefined);
    }
  }
}
