/**
 * Searching the whole audit trail, not only the entries a sink keeps in memory: the console's audit
 * page and its export. A page is found in one pass over the trail in storage order (the file's lines,
 * or the database's rows by time), counting every match and keeping only the page's lines, so memory
 * stays at one page whatever the trail's size. A line is parsed only when a filter needs its fields;
 * free text is matched on the line as written (arguments are masked before they are written).
 *
 * Paging is by cursor: the position of the page's last line (older) or first line (newer), opaque to
 * the client. A cursor whose line is gone (the file was replaced, rows deleted) gives the newest page,
 * marked `restarted`.
 */
import fs from 'node:fs/promises';
import { isAuditEvent, type AuditLine } from './audit-record.js';

export type AuditOutcomeFilter = 'ok' | 'error' | 'denied';
/** Which lines: tool calls, people's changes to the settings (admin events), or the log's own events. */
export type AuditKindFilter = 'calls' | 'changes' | 'events';

export interface AuditSearchQuery {
  /** Calls to tools whose name starts with this (`vault_` finds every vault tool; a whole name finds that one). */
  tool?: string;
  /** A caller kind (`agent`, `mcp`, ...) or part of its id (an MCP client's name, a routine's id); for changes, the face. */
  caller?: string;
  /** `ok`, `error` (any failure) or `denied` (refused at the permission question). */
  outcome?: AuditOutcomeFilter;
  kind?: AuditKindFilter;
  /** Words anywhere in the line as written (tool, arguments as masked, summary, error), any case. */
  text?: string;
  /** On PostgreSQL: only this instance's chain. */
  instance?: string;
  /** ISO times, inclusive. */
  since?: string;
  until?: string;
  /** From a previous page: `older:<pos>`, `newer:<pos>`, or `oldest`. None: the newest page. */
  cursor?: string;
  /** Lines per page (1..MAX_AUDIT_PAGE). */
  limit?: number;
}

export interface AuditSearchPage {
  /** The page's lines, newest first. */
  entries: AuditLine[];
  /** How many lines of the whole trail match. */
  total: number;
  /** How many matching lines are newer than this page's first (0 on the newest page). */
  newerCount: number;
  /** Cursors to the neighbouring pages, null at either end. */
  older: string | null;
  newer: string | null;
  /** Lines read to answer. */
  scanned: number;
  /** The cursor's line was not found (the trail changed under it): this is the newest page instead. */
  restarted?: true;
}

export const MAX_AUDIT_PAGE = 1000;
export const DEFAULT_AUDIT_PAGE = 100;
const OUTCOMES: ReadonlySet<string> = new Set(['ok', 'error', 'denied']);
const KINDS: ReadonlySet<string> = new Set(['calls', 'changes', 'events']);

/** The query a URL's search parameters ask for, or the reason it is not one (a person reads it). */
export function auditSearchQuery(params: URLSearchParams): AuditSearchQuery | { problem: string } {
  const q: AuditSearchQuery = {};
  for (const name of ['tool', 'instance', 'caller', 'text', 'since', 'until', 'cursor'] as const) {
    const v = params.get(name)?.trim();
    if (v) q[name] = v.slice(0, 500);
  }
  for (const name of ['since', 'until'] as const) {
    if (q[name] !== undefined && Number.isNaN(Date.parse(q[name]))) return { problem: `${name} must be a date and time (ISO 8601)` };
  }
  if (q.cursor !== undefined && !parseCursor(q.cursor)) return { problem: 'cursor is not one this server gave out; start again from the newest page' };
  const outcome = params.get('outcome');
  if (outcome) {
    if (!OUTCOMES.has(outcome)) return { problem: 'outcome must be ok, error or denied' };
    q.outcome = outcome as AuditOutcomeFilter;
  }
  const kind = params.get('kind');
  if (kind) {
    if (!KINDS.has(kind)) return { problem: 'kind must be calls, changes or events' };
    q.kind = kind as AuditKindFilter;
  }
  const limit = params.get('limit');
  if (limit) {
    const n = Number(limit);
    if (!Number.isInteger(n) || n < 1) return { problem: 'limit must be a whole number of at least 1' };
    q.limit = Math.min(n, MAX_AUDIT_PAGE);
  }
  return q;
}

type Cursor = { dir: 'older' | 'newer'; pos: string } | { dir: 'oldest' };

function parseCursor(c: string): Cursor | null {
  if (c === 'oldest') return { dir: 'oldest' };
  const m = /^(older|newer):(.{1,200})$/.exec(c);
  return m ? { dir: m[1] as 'older' | 'newer', pos: m[2]! } : null;
}

/**
 * What a line `q` selects must contain as written, whatever else it holds: lines are JSON written
 * without spaces, so a call to a tool starting `vault_` holds `"tool":"vault_` (a change, its target).
 * Only a necessary test: the parsed line is still checked.
 */
function rawNeeds(q: AuditSearchQuery): string[][] {
  const needs: string[][] = [];
  if (q.tool) {
    const start = JSON.stringify(q.tool).slice(0, -1);
    needs.push([`"tool":${start}`, `"target":${start}`]);
  }
  if (q.outcome === 'denied') needs.push(['"decision":"deny']);
  if (q.kind === 'changes') needs.push(['"event":"admin"']);
  return needs;
}

/** True when the query needs a line's fields (not only its text). */
function needsFields(q: AuditSearchQuery): boolean {
  return Boolean(q.tool || q.caller || q.outcome || q.kind || q.instance || q.since || q.until);
}

/** True when `line` is what `q` asks for (text aside: that is matched on the raw line). */
export function auditLineMatches(line: AuditLine, q: AuditSearchQuery): boolean {
  const event = isAuditEvent(line);
  if (q.kind === 'calls' && event) return false;
  if (q.kind === 'changes' && !(event && line.event === 'admin')) return false;
  if (q.kind === 'events' && !(event && line.event !== 'admin')) return false;
  if (q.tool) {
    if (event) {
      // A change names its target (a tool, a pack): a prefix of that counts.
      if (line.event !== 'admin' || !(line.target ?? '').startsWith(q.tool)) return false;
    } else if (!line.tool.startsWith(q.tool)) return false;
  }
  if (q.instance && line.instance !== q.instance) return false;
  if (q.caller) {
    const c = q.caller.toLowerCase();
    if (event) {
      if (!(line.by ?? '').toLowerCase().includes(c)) return false;
    } else if (line.caller.kind !== c && !(line.caller.id ?? '').toLowerCase().includes(c)) return false;
  }
  if (q.outcome) {
    if (event) {
      // A change that failed after its first line is the only event with an outcome.
      if (q.outcome !== 'error' || line.outcome !== 'failed') return false;
    } else if (q.outcome === 'ok' ? line.outcome !== 'ok' : q.outcome === 'error' ? line.outcome !== 'error' : !line.decision.startsWith('deny')) return false;
  }
  if (q.since || q.until) {
    const t = Date.parse(line.ts);
    if (q.since && !(t >= Date.parse(q.since))) return false;
    if (q.until && !(t <= Date.parse(q.until))) return false;
  }
  return true;
}

/**
 * Collects one page while the trail is fed to it oldest first (`feed`), counting every match;
 * `page()` then says what was found. `pos` is the line's position in storage order, unique and
 * stable while the trail only grows (a file offset, a database row's key).
 */
export class AuditPageCollector {
  private readonly limit: number;
  private readonly cursor: Cursor | null;
  private readonly fields: boolean;
  private readonly text: string;
  /** Texts a selected line must contain as written (a cheap test before parsing it): each inner list, one of. */
  private readonly needs: string[][];
  private total = 0;
  private scanned = 0;
  /** The newest `limit` matches so far (the newest page, and the fallback for a cursor not found). */
  private readonly newest: Array<{ pos: string; line: string | AuditLine; index: number }> = [];
  /** older:<pos>: the `limit` matches just before it, frozen once it is seen. */
  private before: Array<{ pos: string; line: string | AuditLine; index: number }> | null = null;
  /** newer:<pos> and oldest: the first `limit` matches after it. */
  private readonly after: Array<{ pos: string; line: string | AuditLine; index: number }> = [];
  private found = false;

  constructor(private readonly q: AuditSearchQuery) {
    this.limit = Math.min(Math.max(1, q.limit ?? DEFAULT_AUDIT_PAGE), MAX_AUDIT_PAGE);
    this.cursor = q.cursor ? parseCursor(q.cursor) : null;
    this.fields = needsFields(q);
    this.text = (q.text ?? '').toLowerCase();
    this.needs = rawNeeds(q);
    if (this.cursor?.dir === 'oldest') this.found = true;
  }

  /** One line of the trail, as written (a line that is not JSON is skipped, and verify reports it). */
  feed(pos: string, raw: string): void {
    this.scanned++;
    if (this.text && !raw.toLowerCase().includes(this.text)) return;
    if (!this.needs.every((any) => any.some((t) => raw.includes(t)))) return;
    let line: string | AuditLine = raw;
    if (this.fields) {
      const parsed = parse(raw);
      if (!parsed || !auditLineMatches(parsed, this.q)) return;
      line = parsed;
    } else if (!raw.startsWith('{')) return;
    const index = this.total++;
    const item = { pos, line, index };
    const c = this.cursor;
    if (c?.dir === 'older' && !this.found) {
      if (pos === c.pos) {
        this.found = true;
        this.before = this.newest.slice();
      }
    } else if (c && this.found && this.after.length < this.limit && !(c.dir === 'newer' && pos === c.pos)) {
      this.after.push(item);
    }
    if (c?.dir === 'newer' && pos === c.pos) this.found = true;
    this.newest.push(item);
    if (this.newest.length > this.limit) this.newest.shift();
  }

  page(): AuditSearchPage {
    const c = this.cursor;
    let items: Array<{ pos: string; line: string | AuditLine; index: number }>;
    let restarted = false;
    if (!c) items = this.newest;
    else if (!this.found) {
      items = this.newest;
      restarted = true;
    } else if (c.dir === 'older') items = this.before ?? [];
    else items = this.after;
    const entries: AuditLine[] = [];
    const kept: typeof items = [];
    for (const it of items) {
      const line = typeof it.line === 'string' ? parse(it.line) : it.line;
      if (!line) continue;
      entries.push(line);
      kept.push(it);
    }
    entries.reverse();
    kept.reverse();
    const first = kept[0];
    const last = kept.at(-1);
    return {
      entries,
      total: this.total,
      newerCount: first ? this.total - 1 - first.index : c?.dir === 'newer' ? this.total : 0,
      older: last && last.index > 0 ? `older:${last.pos}` : null,
      newer: first && first.index < this.total - 1 ? `newer:${first.pos}` : null,
      scanned: this.scanned,
      ...(restarted ? { restarted: true as const } : {}),
    };
  }
}

/** True when `raw` is a line `q` selects (for an export, which keeps every match). */
export function auditRawMatches(raw: string, q: AuditSearchQuery): boolean {
  if (q.text && !raw.toLowerCase().includes(q.text.toLowerCase())) return false;
  const line = parse(raw);
  return line !== null && auditLineMatches(line, q);
}

function parse(raw: string): AuditLine | null {
  try {
    const v = JSON.parse(raw) as unknown;
    return v && typeof v === 'object' && typeof (v as { ts?: unknown }).ts === 'string' ? (v as AuditLine) : null;
  } catch {
    return null;
  }
}

/**
 * Feeds every whole line of an audit file to `fn`, oldest first, with its byte offset as its
 * position (a torn last line, without its newline, is left out). Reads 1 MiB at a time and lets the
 * event loop run between reads. When `fn` returns a promise (a slow reader), the next line waits for it.
 */
export async function forEachAuditFileLine(file: string, fn: (pos: string, raw: string) => void | Promise<void>): Promise<void> {
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  try {
    const chunk = Buffer.alloc(1 << 20);
    let carry: Buffer = Buffer.alloc(0);
    let base = 0; // file offset of carry[0]
    for (;;) {
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, base + carry.length);
      if (bytesRead === 0) break;
      const buf = carry.length ? Buffer.concat([carry, chunk.subarray(0, bytesRead)]) : chunk.subarray(0, bytesRead);
      let start = 0;
      for (let nl = buf.indexOf(0x0a, start); nl !== -1; nl = buf.indexOf(0x0a, start)) {
        if (nl > start) {
          const wait = fn(String(base + start), buf.toString('utf8', start, nl));
          if (wait) await wait;
        }
        start = nl + 1;
      }
      base += start;
      carry = Buffer.from(buf.subarray(start));
    }
  } finally {
    await handle.close();
  }
}

/** One page of an audit file's lines that `q` asks for (see AuditPageCollector). */
export async function searchAuditFile(file: string, q: AuditSearchQuery): Promise<AuditSearchPage> {
  const collector = new AuditPageCollector(q);
  await forEachAuditFileLine(file, (pos, raw) => collector.feed(pos, raw));
  return collector.page();
}

/**
 * A page of `records` (a host's sink without `search`: only what its `tail` keeps), as
 * searchAuditFile pages the file; a record's position is its entry number, else its time and id.
 */
export function searchAuditRecords(records: readonly object[], q: AuditSearchQuery): AuditSearchPage {
  const collector = new AuditPageCollector(q);
  for (const r of records) {
    const { seq, ts, id } = r as { seq?: unknown; ts?: unknown; id?: unknown };
    collector.feed(typeof seq === 'number' ? `#${seq}` : `${String(ts)}|${String(id)}`, JSON.stringify(r));
  }
  return collector.page();
}
