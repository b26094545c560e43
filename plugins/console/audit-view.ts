import type { AuditRecord } from 'memo-kernel/pack';

/*
 * With MEMO_DATABASE_URL the kernel's audit sink (kernel/audit/pg-audit-log.ts) keeps the newest
 * entries of every instance sharing the database, each carrying its `instance`, and its change feed
 * passes on the other instances' entries as they are committed: the viewer and the live tail show
 * them all, and `?instance=` keeps one instance's.
 */

/** What the audit viewer filters by; every field is optional, and all given ones must match. */
export interface AuditQuery {
  tool?: string;
  /**
   * On PostgreSQL, where the trail shows every instance's entries (each names its `instance`): only
   * this instance's.
   */
  instance?: string;
  /** A caller kind (`agent`, `mcp`, ...) or part of its id (an MCP client's name, a routine's id). */
  caller?: string;
  /** `ok`, `error` (any failure), or `denied` (refused at the permission question). */
  outcome?: 'ok' | 'error' | 'denied';
  /** ISO times, inclusive. */
  since?: string;
  until?: string;
  limit?: number;
}

const OUTCOMES = new Set(['ok', 'error', 'denied']);
/** The most entries one answer carries (the kernel keeps the newest 1000 in memory). */
export const MAX_AUDIT_ROWS = 1000;

/** The query a URL's search parameters ask for, or the reason it is not one. */
export function auditQuery(params: URLSearchParams): AuditQuery | { problem: string } {
  const q: AuditQuery = {};
  const text = (name: 'tool' | 'instance' | 'caller' | 'since' | 'until') => {
    const v = params.get(name)?.trim();
    if (v) q[name] = v;
  };
  text('tool');
  text('instance');
  text('caller');
  text('since');
  text('until');
  for (const name of ['since', 'until'] as const) {
    if (q[name] !== undefined && Number.isNaN(Date.parse(q[name]))) return { problem: `${name} must be a date and time (ISO 8601)` };
  }
  const outcome = params.get('outcome');
  if (outcome) {
    if (!OUTCOMES.has(outcome)) return { problem: 'outcome must be ok, error or denied' };
    q.outcome = outcome as 'ok' | 'error' | 'denied';
  }
  const limit = params.get('limit');
  if (limit) {
    const n = Number(limit);
    if (!Number.isInteger(n) || n < 1) return { problem: 'limit must be a whole number of at least 1' };
    q.limit = Math.min(n, MAX_AUDIT_ROWS);
  }
  return q;
}

/** The instance whose chain holds the entry (on PostgreSQL; undefined for the file trail). */
export function instanceOf(entry: AuditRecord): string | undefined {
  const instance = (entry as { instance?: unknown }).instance;
  return typeof instance === 'string' ? instance : undefined;
}

/** True when `entry` is what `q` asks for. */
export function auditMatches(entry: AuditRecord, q: AuditQuery): boolean {
  if (q.tool && entry.tool !== q.tool) return false;
  if (q.instance && instanceOf(entry) !== q.instance) return false;
  if (q.caller) {
    const c = q.caller.toLowerCase();
    if (entry.caller.kind !== c && !(entry.caller.id ?? '').toLowerCase().includes(c)) return false;
  }
  if (q.outcome === 'ok' && entry.outcome !== 'ok') return false;
  if (q.outcome === 'error' && entry.outcome !== 'error') return false;
  if (q.outcome === 'denied' && !entry.decision.startsWith('deny')) return false;
  const t = Date.parse(entry.ts);
  if (q.since && t < Date.parse(q.since)) return false;
  if (q.until && t > Date.parse(q.until)) return false;
  return true;
}

/** The entries `q` asks for, oldest first, at most `q.limit` (the newest ones). */
export function auditRows(entries: readonly AuditRecord[], q: AuditQuery): AuditRecord[] {
  const rows = entries.filter((e) => auditMatches(e, q));
  return rows.slice(-(q.limit ?? 200));
}
