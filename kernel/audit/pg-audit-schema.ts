import { createHmac, type KeyObject } from 'node:crypto';

/**
 * The audit trail's tables on PostgreSQL (schema `memo_audit`), shared by the writer's worker
 * (pg-audit-worker.ts), and by `memo audit verify|export|tail` (pg-audit-read.ts).
 *
 * One hash chain per instance: `chain` holds each instance's head (last entry number, hash and head
 * tag, updated in the same transaction as the entries, so it is never behind) and the id of the key
 * its entries are sealed with; `entry` holds every line exactly as the file would (`line`, the JSONL
 * text without its newline), with its number, link and hash repeated in columns so the database
 * itself refuses a fork: `(instance, seq)` is the primary key and `(instance, prev)` is unique, so two
 * writers can never both extend the same entry.
 *
 * The migrations are plain SQL run by the worker (the writer opens synchronously, inside the kernel's
 * constructor, so it cannot use the typeorm opening the other stores share); they keep the same rules:
 * oldest first, each in its own transaction, recorded in `migrations`, a database that records one
 * this code does not know refused untouched, and instances that start together take turns under the
 * same per-schema advisory lock `openPostgres` takes (`memo-store:memo_audit`).
 */

export const AUDIT_SCHEMA = 'memo_audit';
export const AUDIT_LOCK = `memo-store:${AUDIT_SCHEMA}`;
/** The NOTIFY channel a writer signals on commit (payload: its instance id). */
export const AUDIT_CHANNEL = 'memo_audit';

export interface AuditMigration {
  id: number;
  name: string;
  sql: string;
}

export const AUDIT_MIGRATIONS: readonly AuditMigration[] = [
  {
    id: 1,
    name: 'CreateAuditChains',
    sql: `
      CREATE TABLE ${AUDIT_SCHEMA}.chain (
        instance text PRIMARY KEY,
        key_id text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        head_seq bigint NOT NULL,
        head_hash text NOT NULL,
        head_tag text NOT NULL
      );
      CREATE TABLE ${AUDIT_SCHEMA}.entry (
        instance text NOT NULL REFERENCES ${AUDIT_SCHEMA}.chain (instance),
        seq bigint NOT NULL,
        ts timestamptz NOT NULL,
        prev text NOT NULL,
        hash text NOT NULL,
        line text NOT NULL,
        PRIMARY KEY (instance, seq),
        CONSTRAINT entry_one_successor UNIQUE (instance, prev)
      );
      CREATE INDEX entry_ts ON ${AUDIT_SCHEMA}.entry (ts);
    `,
  },
];

/**
 * A key's public name: 16 hex characters of an HMAC of a fixed text under the key. It tells which
 * key sealed a chain (so verify can say "sealed with another key" instead of "altered") without
 * revealing anything that helps forge a MAC.
 */
export function auditKeyId(key: KeyObject): string {
  return createHmac('sha256', key).update('memo audit key id').digest('hex').slice(0, 16);
}

/** `data/audit-chain.head`: this instance's own record of its chain's head, outside the database. */
export const LOCAL_HEAD_FILE = 'audit-chain.head';
