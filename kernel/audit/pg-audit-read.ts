import type { KeyObject } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Writable } from 'node:stream';
import type { Client } from 'pg';
import type { DatabaseUrl } from '../storage/database-url.js';
import { encodeHead, GENESIS_HASH, HEAD_SIZE, headPathFor, KEY_FILE, parseLine, readHeadFile, readKey, sealOf, tagOf, type ParsedLine } from './audit-chain.js';
import { isAuditEvent, type AuditLine } from './audit-record.js';
import { AuditPageCollector, type AuditSearchPage, type AuditSearchQuery } from './audit-search.js';
import { lineCounts, lostLinesMessage, recordedGap, type AuditProblem, type RecordedGap } from './audit-verify.js';
import { AUDIT_SCHEMA, auditKeyId, LOCAL_HEAD_FILE } from './pg-audit-schema.js';

/**
 * Reading the audit chains in PostgreSQL (`memo audit verify|export|tail` with MEMO_DATABASE_URL):
 * every instance's chain, read in one snapshot (a REPEATABLE READ transaction), so chains that keep
 * growing while they are read are checked, or exported, as they were at one moment.
 */

const S = AUDIT_SCHEMA;
const PAGE = 5000;

export interface ChainReport {
  instance: string;
  ok: boolean;
  /** The id of the key the chain says it is sealed with (pg-audit-schema.ts auditKeyId). */
  keyId: string;
  entries: number;
  events: number;
  /** A person's changes (admin lines). */
  changes: number;
  lastSeq: number;
  /** What the chain's head row says (its tag is not shown). */
  head: { seq: number; hash: string };
  /** True for this data folder's own instance: its `audit-chain.head` was compared too. */
  local: boolean;
  gaps: ChainGap[];
  problem?: AuditProblem;
}

/** A recorded gap; `lost` for a `lines-lost` one: lines a kernel could not write while the database could not be used. */
export type ChainGap = RecordedGap;

export interface AuditDatabaseReport {
  ok: boolean;
  /** The database, password masked. */
  database: string;
  chains: ChainReport[];
  /** The keys at hand, by id (this data folder's first). */
  keys: string[];
  /** A problem that is no single chain's (this instance's chain is missing from the database). */
  problem?: AuditProblem & { instance: string };
}

async function connect(url: DatabaseUrl): Promise<Client> {
  const pg = (await import('pg')).default;
  const client = new pg.Client({
    ...url.clientOptions(),
    connectionTimeoutMillis: 10_000,
    application_name: 'memo-audit',
  });
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (err) {
    await client.end().catch(() => {});
    throw new Error(`The audit trail's database ${url.display} cannot be reached: ${url.scrub((err as Error).message)}`, { cause: err });
  }
  return client;
}

/** Runs `fn` in one read-only snapshot of the database; false from `hasSchema` when no chain was ever written. */
async function inSnapshot<T>(url: DatabaseUrl, fn: (c: Client, hasSchema: boolean) => Promise<T>): Promise<T> {
  const client = await connect(url);
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const found = await client.query(`SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'entry'`, [S]);
    const out = await fn(client, found.rows.length > 0);
    await client.query('COMMIT');
    return out;
  } catch (err) {
    throw new Error(url.scrub((err as Error).message), { cause: err });
  } finally {
    await client.end().catch(() => {});
  }
}

interface ChainRow {
  instance: string;
  key_id: string;
  head_seq: string;
  head_hash: string;
  head_tag: string;
}

async function chains(c: Client, instance?: string): Promise<ChainRow[]> {
  const res = await c.query<ChainRow>(
    `SELECT instance, key_id, head_seq, head_hash, head_tag FROM ${S}.chain ${instance ? 'WHERE instance = $1' : ''} ORDER BY created_at, instance`,
    instance ? [instance] : [],
  );
  return res.rows;
}

/** Every row of one chain, in order, a page at a time. */
async function* rowsOf(c: Client, instance: string): AsyncGenerator<{ seq: number; prev: string; hash: string; line: string }> {
  let after = 0;
  for (;;) {
    const res = await c.query<{ seq: string; prev: string; hash: string; line: string }>(
      `SELECT seq, prev, hash, line FROM ${S}.entry WHERE instance = $1 AND seq > $2 ORDER BY seq LIMIT ${PAGE}`,
      [instance, after],
    );
    for (const r of res.rows) yield { seq: Number(r.seq), prev: r.prev, hash: r.hash, line: r.line };
    if (res.rows.length < PAGE) return;
    after = Number(res.rows.at(-1)!.seq);
  }
}

/** The keys verify can check with: this data folder's `audit.key`, then any `extra` key files, by id. */
function keysAt(dataDir: string, extra: readonly string[]): Map<string, KeyObject> {
  const keys = new Map<string, KeyObject>();
  for (const file of [path.join(dataDir, KEY_FILE), ...extra]) {
    const key = readKey(file);
    if (key) keys.set(auditKeyId(key), key);
    else if (file !== path.join(dataDir, KEY_FILE)) throw new Error(`the key file ${file} does not exist`);
  }
  return keys;
}

function chainBreak(seq: number, prevSeq: number): AuditProblem {
  if (seq > prevSeq + 1) {
    const range = seq - 1 > prevSeq + 1 ? `#${prevSeq + 1} to #${seq - 1}` : `#${prevSeq + 1}`;
    return { line: 0, entry: seq, kind: 'removed', message: `entry ${range} was removed before entry #${seq}` };
  }
  if (seq === prevSeq + 1) return { line: 0, entry: prevSeq, kind: 'altered', message: `entry #${prevSeq} was altered: entry #${seq} no longer links to it` };
  return { line: 0, entry: seq, kind: 'reordered', message: `entry #${seq} comes after #${prevSeq}: entries were renumbered` };
}

/**
 * Checks one chain: every row's line sealed with its key and matching its columns, numbered without a
 * hole, each linked to the one before, the head row naming the last entry with a tag only the key
 * makes, and (for this data folder's instance) the chain reaching the head this instance recorded
 * in its own folder. The first problem is reported; gaps a kernel recorded are reported with its
 * explanation (still a problem: entries are gone).
 */
async function verifyChain(c: Client, row: ChainRow, keys: Map<string, KeyObject>, localHead: { seq: number; hash: string; tag: string } | null) {
  const report: ChainReport = {
    instance: row.instance,
    ok: true,
    keyId: row.key_id,
    entries: 0,
    events: 0,
    changes: 0,
    lastSeq: 0,
    head: { seq: Number(row.head_seq), hash: row.head_hash },
    local: localHead !== null,
    gaps: [],
  };
  const done = (problem?: AuditProblem): ChainReport => {
    const [gap] = report.gaps;
    if (!problem && gap) {
      const lost = gap.missing
        ? gap.missing.from === gap.missing.to
          ? `entry #${gap.missing.from} is missing`
          : `entries #${gap.missing.from} to #${gap.missing.to} are missing`
        : 'the chain changed';
      problem = {
        line: 0,
        kind: gap.seen === 'foreign-line' ? 'inserted' : gap.seen === 'head-altered' || gap.seen === 'head-missing' ? 'head' : 'removed',
        recorded: true,
        message:
          gap.seen === 'lines-lost'
            ? lostLinesMessage(gap, `entry #${gap.line}`)
            : `${lost}: a kernel (pid ${gap.pid ?? '?'}) found ${gap.detail ?? gap.seen}${gap.ts ? ` at ${gap.ts}` : ''} and recorded it as entry #${gap.line}`,
      };
    }
    if (problem) report.problem = problem;
    report.ok = report.problem === undefined;
    return report;
  };
  const key = keys.get(row.key_id);
  if (!key) {
    return done({
      line: 0,
      kind: 'bad-key',
      message: `the chain is sealed with the key ${row.key_id}, which is not at hand (this data folder's ${KEY_FILE} is ${[...keys.keys()][0] ?? 'missing'}): copy that instance's ${KEY_FILE} here, or pass it with --key, to check it`,
    });
  }
  let prevHash = GENESIS_HASH;
  let prevSeq = 0;
  let last: ParsedLine | null = null;
  let atLocal: ParsedLine | null = null;
  for await (const r of rowsOf(c, row.instance)) {
    const p = parseLine(r.line);
    if (!p) return done({ line: 0, entry: r.seq, kind: 'not-an-entry', message: `entry #${r.seq} is not an audit line (edited by hand)` });
    if (p.seq !== r.seq || p.prev !== r.prev || p.hash !== r.hash || p.obj.instance !== row.instance) {
      return done({
        line: 0,
        entry: r.seq,
        kind: 'altered',
        message: `entry #${r.seq} was altered: its line no longer matches its row (number, link, hash or instance)`,
      });
    }
    const seal = sealOf(p, key);
    if (seal === 'plain')
      return done({ line: 0, entry: r.seq, kind: 'unkeyed', message: `entry #${r.seq} carries an unkeyed hash: it was rewritten without the key` });
    if (seal === 'bad') {
      const other = [...keys.values()].some((k) => k !== key && sealOf(p, k) === 'keyed');
      return done(
        other
          ? { line: 0, entry: r.seq, kind: 'bad-key', message: `entry #${r.seq} is sealed with another key than the chain's: it was copied from another chain` }
          : { line: 0, entry: r.seq, kind: 'altered', message: `entry #${r.seq} was altered: its content no longer matches its MAC` },
      );
    }
    const isGap = p.event === 'gap';
    if (p.prev !== prevHash || (isGap ? p.seq <= prevSeq : p.seq !== prevSeq + 1)) return done(chainBreak(p.seq, prevSeq));
    if (isGap) report.gaps.push(recordedGap(p.seq, p.obj));
    if (p.event === 'admin') report.changes++;
    else if (p.event) report.events++;
    else report.entries++;
    if (localHead && p.seq === localHead.seq) atLocal = p;
    prevHash = p.hash;
    prevSeq = p.seq;
    last = p;
  }
  report.lastSeq = prevSeq;
  const h = report.head;
  if (h.seq > prevSeq) {
    return done({
      line: 0,
      entry: prevSeq + 1,
      kind: prevSeq === 0 ? 'emptied' : 'cut-tail',
      message: `entries #${prevSeq + 1} to #${h.seq} are missing at the end: the chain's head row says it went on to #${h.seq}`,
    });
  }
  if (h.seq < prevSeq) return done({ line: 0, entry: h.seq + 1, kind: 'inserted', message: `entries after #${h.seq} were added behind the chain's head row` });
  if (last && (h.hash !== last.hash || row.head_tag !== tagOf(key, last))) {
    return done({ line: 0, entry: h.seq, kind: 'head', message: `the chain's head row does not match entry #${h.seq} (it was rewritten without the key)` });
  }
  if (localHead && localHead.seq > 0) {
    if (localHead.seq > prevSeq) {
      return done({
        line: 0,
        entry: prevSeq + 1,
        kind: prevSeq === 0 ? 'emptied' : 'cut-tail',
        message: `entries #${prevSeq + 1} to #${localHead.seq} are missing: this data folder's ${LOCAL_HEAD_FILE} says this instance wrote up to #${localHead.seq}`,
      });
    }
    if (!atLocal || atLocal.hash !== localHead.hash) {
      return done({
        line: 0,
        entry: localHead.seq,
        kind: 'replaced',
        message: `entry #${localHead.seq} is not the one this data folder's ${LOCAL_HEAD_FILE} recorded`,
      });
    }
    if (atLocal.hash === localHead.hash && tagOf(key, atLocal) !== localHead.tag) {
      return done({
        line: 0,
        entry: localHead.seq,
        kind: 'head',
        message: `${LOCAL_HEAD_FILE} cannot be trusted: its tag does not match entry #${localHead.seq}`,
      });
    }
  }
  return done();
}

/** Verifies every chain in the database (and this data folder's own chain against its head file). */
export async function verifyAuditDatabase(
  url: DatabaseUrl,
  dataDir: string,
  instance: string,
  extraKeys: readonly string[] = [],
): Promise<AuditDatabaseReport> {
  const keys = keysAt(dataDir, extraKeys);
  const headState = readHeadFile(path.join(dataDir, LOCAL_HEAD_FILE));
  const localHead = headState.state === 'ok' ? headState.head : null;
  return inSnapshot(url, async (c, hasSchema) => {
    const report: AuditDatabaseReport = { ok: true, database: url.display, chains: [], keys: [...keys.keys()] };
    const rows = hasSchema ? await chains(c) : [];
    for (const row of rows) report.chains.push(await verifyChain(c, row, keys, row.instance === instance ? localHead : null));
    if (localHead && localHead.seq > 0 && !rows.some((r) => r.instance === instance)) {
      report.problem = {
        instance,
        line: 0,
        kind: 'deleted',
        message: `the chain of this instance (${instance}) is not in the database, while this data folder's ${LOCAL_HEAD_FILE} says it went up to #${localHead.seq}: it was deleted`,
      };
    }
    if (headState.state === 'invalid' && !report.problem) {
      report.problem = { instance, line: 0, kind: 'head', message: `this data folder's ${LOCAL_HEAD_FILE} cannot be trusted: ${headState.reason}` };
    }
    report.ok = !report.problem && report.chains.every((ch) => ch.ok);
    return report;
  });
}

/** One line per chain for a person, then any problem that is no single chain's. */
export function formatAuditDatabaseReport(r: AuditDatabaseReport, instance: string): string {
  let out = r.chains.length === 0 ? `No audit chains in ${r.database}.\n` : '';
  for (const ch of r.chains) {
    const who = `instance ${ch.instance}${ch.instance === instance ? ' (this one)' : ''}`;
    if (ch.problem) out += `${who}: ${ch.problem.recorded ? 'GAP' : 'TAMPERED'}: ${ch.problem.message}.\n`;
    else {
      const what = ch.entries + ch.events + ch.changes === 0 ? 'no entries' : `${lineCounts(ch)}, keyed chain intact, head matches (#${ch.head.seq})`;
      out += `${who}: OK: ${what}${ch.local ? `, reaches this data folder's ${LOCAL_HEAD_FILE}` : ''}.\n`;
    }
  }
  if (r.problem) out += `instance ${r.problem.instance} (this one): TAMPERED: ${r.problem.message}.\n`;
  return out;
}

/** What `export` wrote: per chain, where and how many lines. */
export interface ExportedChain {
  instance: string;
  lines: number;
  file?: string;
}

/**
 * Writes chains in the JSONL format of `data/agent-audit.jsonl`, exactly the lines as sealed. To a
 * folder: one `agent-audit.<instance>.jsonl` per chain, each with its head checkpoint beside it
 * (`agent-audit.<instance>.head`, from the chain's head row), so `memo audit verify --file` (the file
 * verifier) checks an exported chain once the chain's `audit.key` is put beside it. To a stream: the
 * lines of each chain in turn (no head).
 */
export async function exportAuditChains(
  url: DatabaseUrl,
  to: { dir: string } | { file: string } | { stream: Writable },
  instance?: string,
): Promise<ExportedChain[]> {
  return inSnapshot(url, async (c, hasSchema) => {
    const rows = hasSchema ? await chains(c, instance) : [];
    if (instance && rows.length === 0) throw new Error(`no audit chain of instance "${instance}" in ${url.display}`);
    if ('file' in to && rows.length !== 1) throw new Error('an export to one file takes one chain: name it with --instance, or export to a folder');
    const out: ExportedChain[] = [];
    for (const row of rows) {
      const file = 'dir' in to ? path.join(to.dir, `agent-audit.${row.instance}.jsonl`) : 'file' in to ? to.file : undefined;
      let fd: number | null = null;
      if (file) {
        fs.mkdirSync(path.dirname(file), { recursive: true });
        fd = fs.openSync(file, 'wx', 0o600);
      }
      let size = 0;
      let lines = 0;
      try {
        let chunk = '';
        const flush = async () => {
          if (!chunk) return;
          if (fd !== null) fs.writeSync(fd, chunk);
          else if ('stream' in to && !to.stream.write(chunk)) await new Promise((r) => to.stream.once('drain', r));
          chunk = '';
        };
        for await (const r of rowsOf(c, row.instance)) {
          const line = `${r.line}\n`;
          chunk += line;
          size += Buffer.byteLength(line, 'utf8');
          lines++;
          if (chunk.length > 1 << 20) await flush();
        }
        await flush();
      } finally {
        if (fd !== null) fs.closeSync(fd);
      }
      if (file) {
        const head = { seq: Number(row.head_seq), size, hash: row.head_hash, tag: row.head_tag };
        fs.writeFileSync(headPathFor(file), encodeHead(head, Buffer.alloc(HEAD_SIZE)), { mode: 0o600, flag: 'wx' });
      }
      out.push({ instance: row.instance, lines, ...(file ? { file } : {}) });
    }
    return out;
  });
}

/** The newest lines of all chains (entries and events), oldest first: what `memo audit tail` shows. */
export async function readAuditDatabaseTail(url: DatabaseUrl, count: number, tool?: string): Promise<AuditLine[]> {
  return inSnapshot(url, async (c, hasSchema) => {
    if (!hasSchema) return [];
    const res = await c.query<{ line: string }>(
      tool
        ? // A text match first (a tampered row need not be JSON), then the exact check below.
          `SELECT line FROM (SELECT line, ts, seq FROM ${S}.entry WHERE strpos(line, '"tool":' || to_json($2::text)::text) > 0 ORDER BY ts DESC, seq DESC LIMIT $1) t ORDER BY ts, seq`
        : `SELECT line FROM (SELECT line, ts, seq FROM ${S}.entry ORDER BY ts DESC, seq DESC LIMIT $1) t ORDER BY ts, seq`,
      tool ? [count, tool] : [count],
    );
    const out: AuditLine[] = [];
    for (const r of res.rows) {
      const p = parseLine(r.line);
      if (!p) continue;
      const line = p.obj as unknown as AuditLine;
      if (tool && (isAuditEvent(line) || line.tool !== tool)) continue;
      out.push(line);
    }
    return out;
  });
}

/**
 * Every line of the chains that a search could select, oldest first (by time, then instance and
 * number), read in one snapshot through a server-side cursor PAGE rows at a time: the database does
 * the filters it can (instance, time, text), the caller the rest (audit-search.ts).
 */
export async function forEachAuditDatabaseLine(url: DatabaseUrl, q: AuditSearchQuery, fn: (pos: string, raw: string) => void | Promise<void>): Promise<void> {
  await inSnapshot(url, async (c, hasSchema) => {
    if (!hasSchema) return;
    const where: string[] = [];
    const params: unknown[] = [];
    if (q.instance) where.push(`instance = $${params.push(q.instance)}`);
    if (q.since) where.push(`ts >= $${params.push(new Date(q.since).toISOString())}`);
    if (q.until) where.push(`ts <= $${params.push(new Date(q.until).toISOString())}`);
    if (q.text) where.push(`strpos(lower(line), lower($${params.push(q.text)})) > 0`);
    await c.query(
      `DECLARE audit_search NO SCROLL CURSOR FOR SELECT instance, seq, line FROM ${S}.entry ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY ts, instance, seq`,
      params,
    );
    for (;;) {
      const res = await c.query<{ instance: string; seq: string; line: string }>(`FETCH ${PAGE} FROM audit_search`);
      for (const r of res.rows) {
        const wait = fn(`${r.instance}/${r.seq}`, r.line);
        if (wait) await wait;
      }
      if (res.rows.length < PAGE) break;
    }
  });
}

/** One page of the chains' lines that `q` asks for (see AuditPageCollector). */
export async function searchAuditDatabase(url: DatabaseUrl, q: AuditSearchQuery): Promise<AuditSearchPage> {
  const collector = new AuditPageCollector(q);
  await forEachAuditDatabaseLine(url, q, (pos, raw) => collector.feed(pos, raw));
  return collector.page();
}
