/**
 * Which Memo instance owns the WhatsApp connection, when several share one PostgreSQL database: one
 * row in wa_owner, taken by an instance (its id, PackApi.instanceId) until a time the database sets
 * (its clock, so the instances' clocks need not agree), renewed by the owner every few seconds and
 * deleted when it stops cleanly. An owner that dies (kill -9) stops renewing, and once the time has
 * passed any other linked instance takes the row over. Taking and renewing are one INSERT … ON
 * CONFLICT DO UPDATE … WHERE (the row is the owner's or has expired): PostgreSQL locks the row and
 * checks the condition again on its newest version, so two instances racing for it never both win.
 * On SQLite (one instance per data folder) there is no lease.
 */
import type { DataSource } from 'typeorm';

export interface LeaseHolder {
  instance: string;
  /** When the lease runs out unless renewed (the database's clock). */
  expiresAt: Date;
}

const NAME = 'connection';

export class OwnerLease {
  constructor(
    private readonly ds: DataSource,
    readonly instance: string,
    readonly ttlMs: number,
  ) {}

  /** Takes the lease, or renews it: true when this instance holds it afterwards. */
  async claim(): Promise<boolean> {
    const rows = await this.ds.query<Array<{ instance: string }>>(
      `INSERT INTO wa_owner (name, instance, expires_at, since)
       VALUES ($1, $2, clock_timestamp() + $3 * interval '1 millisecond', clock_timestamp())
       ON CONFLICT (name) DO UPDATE SET instance = excluded.instance, expires_at = excluded.expires_at,
         since = CASE WHEN wa_owner.instance = excluded.instance THEN wa_owner.since ELSE excluded.since END
       WHERE wa_owner.instance = excluded.instance OR wa_owner.expires_at < clock_timestamp()
       RETURNING instance`,
      [NAME, this.instance, this.ttlMs],
    );
    return rows.length === 1;
  }

  /** The instance holding an unexpired lease, or null. */
  async holder(): Promise<LeaseHolder | null> {
    const rows = await this.ds.query<Array<{ instance: string; expires_at: Date }>>(
      `SELECT instance, expires_at FROM wa_owner WHERE name = $1 AND expires_at > clock_timestamp()`,
      [NAME],
    );
    const r = rows[0];
    return r ? { instance: r.instance, expiresAt: new Date(r.expires_at) } : null;
  }

  /** Gives the lease up (a clean stop), if this instance holds it. */
  async release(): Promise<void> {
    await this.ds.query(`DELETE FROM wa_owner WHERE name = $1 AND instance = $2`, [NAME, this.instance]);
  }
}
