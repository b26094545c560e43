/**
 * Where every tool call's outcome goes: the DI token and the interface a host's own sink implements
 * (`createKernel({ services: { auditSink } })`); the kernel's own is the hash-chained file
 * (audit-log.ts) or this instance's chain on PostgreSQL (pg-audit-log.ts).
 */
import type { AdminRecord, AuditFilter, AuditRecord } from './audit-record.js';
import type { AuditSearchPage, AuditSearchQuery } from './audit-search.js';

/** Where every tool call's outcome goes (default: the hash-chained `data/agent-audit.jsonl`). */
export const AuditSink = Symbol('AuditSink');
export interface AuditSink {
  /** Records one outcome. Called once per call, denied and invalid ones included; must not throw for long. */
  append(record: AuditRecord): unknown;
  /** The most recent records, oldest first (for `memo audit`-like views and tests). */
  tail(filter?: AuditFilter): readonly AuditRecord[];
  /**
   * Optional change feed: `listener` hears the records this process appends, right after they are
   * written (the web console's live tail). Returns the function that stops it. A sink without one
   * is polled.
   */
  onAppend?(listener: (records: readonly AuditRecord[]) => void): () => void;
  /**
   * Optional: records that an agent turn was handed to an agent CLI, with the access it had (Vault
   * only, or Computer access: the CLI's own tools, which no audit line will show).
   */
  note?(event: { event: 'agent-access'; conversationId: string; backend: string; version?: string; access: 'vault' | 'computer' }): unknown;
  /**
   * Optional: records a person's change to the kernel's settings (`pack.disable`, `permission.allow`,
   * `token.rotate`, ...), before it is made; throws (or rejects) when the line cannot be written, and
   * the change is then not made. A sink without one records nothing of them.
   */
  admin?(record: AdminRecord): unknown;
  /**
   * Optional: a page of the whole trail, not only what `tail` keeps in memory (the console's audit
   * page), newest first, with the number of lines that match. Without it the console pages `tail`.
   */
  search?(q: AuditSearchQuery): Promise<AuditSearchPage>;
  /**
   * Optional: every line `q` selects (its cursor and limit aside), oldest first, exactly as written
   * (the console's export). When `fn` returns a promise, the next line waits for it.
   */
  lines?(q: AuditSearchQuery, fn: (raw: string) => void | Promise<void>): Promise<void>;
  close(): void | Promise<void>;
}
