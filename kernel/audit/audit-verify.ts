import type { KeyObject } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  GENESIS_HASH,
  headPathFor,
  keyPathFor,
  looksTorn,
  parseLine,
  readHeadFile,
  readKey,
  sealOf,
  tagOf,
  type AuditHead,
  type HeadState,
  type ParsedLine,
} from './audit-chain.js';

const KEY_NAME = 'audit.key';

export type AuditProblemKind =
  'altered' | 'removed' | 'inserted' | 'reordered' | 'not-an-entry' | 'torn' | 'unkeyed' | 'bad-key' | 'cut-tail' | 'emptied' | 'deleted' | 'replaced' | 'head';

export interface AuditProblem {
  /** 1-based line of the log (0 when the problem is the file as a whole). */
  line: number;
  /** The entry number concerned, when there is one. */
  entry?: number;
  kind: AuditProblemKind;
  message: string;
  /** True when a running kernel saw it happen and wrote a `gap` event about it (the message says where). */
  recorded?: boolean;
}

export interface RecordedGap {
  line: number;
  seen: string;
  missing?: { from: number; to: number };
  ts?: string;
  pid?: number;
  detail?: string;
  recoveredTo?: string;
  /** The instance whose kernel wrote the event (lines of a PostgreSQL chain, also once exported, name it). */
  instance?: string;
  /** For a `lines-lost` gap: the lines a kernel could not write while its database could not be used. */
  lost?: LostLines;
}

/** What a `lines-lost` gap event records (pg-audit-lost.ts lostEvent): calls by id and tool, never their arguments. */
export interface LostLines {
  lines: number;
  calls: Array<{ id: string; tool: string; outcome?: 'ok' | 'error' }>;
  /** Calls lost beyond those listed one by one. */
  unlisted?: number;
  /** Kernel events (not calls) among the lines. */
  events?: number;
  /** Lines sent in a statement that got no answer (the server may have committed them). */
  unconfirmed?: number;
  from: string;
  to: string;
  /** The lines include those of earlier runs of the instance (read back from their records at start): their pids. */
  earlier?: number[];
  /** An earlier run's record of lost lines could not be read: how many it held is not known. */
  unreadable?: boolean;
}

/** How many lost calls the sentence names one by one; the rest are counted. */
const LOST_CALLS_NAMED = 10;

/**
 * The sentence for a `lines-lost` gap, the same in `memo audit verify` on the database and on an
 * exported chain (`--file`): what was lost, the calls it names (tool and id, the first ten, then a
 * count), and which instance's kernel recorded it, where (`at`: "entry #5", "line 5").
 */
export function lostLinesMessage(g: RecordedGap, at: string): string {
  const lost = g.lost && typeof g.lost === 'object' ? g.lost : undefined;
  const count = lost && Number.isInteger(lost.lines) ? lost.lines : undefined;
  const what =
    g.detail ??
    (count !== undefined ? `${count} line${count === 1 ? '' : 's'} could not be written (the database could not be used)` : 'lines could not be written');
  const calls = lost && Array.isArray(lost.calls) ? lost.calls : [];
  const more = Math.max(0, calls.length - LOST_CALLS_NAMED) + (lost && Number.isInteger(lost.unlisted) ? (lost.unlisted ?? 0) : 0);
  const named = calls
    .slice(0, LOST_CALLS_NAMED)
    .map((c) => `${String(c?.tool)} ${String(c?.id)}`)
    .join(', ');
  const which = named ? ` (calls: ${named}${more > 0 ? ` and ${more} more` : ''})` : '';
  const who = `a kernel${g.instance ? ` of instance ${g.instance}` : ''} (pid ${g.pid ?? '?'})`;
  return `lines are missing: ${what}${which}; ${who} recorded it${g.ts ? ` at ${g.ts}` : ''} as ${at}`;
}

export interface AuditVerifyReport {
  ok: boolean;
  file: string;
  lines: number;
  /** Tool-call entries that verified. */
  entries: number;
  /** Kernel event lines (gap, keyed-chain-start, torn-tail-recovered, agent-access) that verified. */
  events: number;
  /** A person's changes (admin lines: a pack disabled, a permission stored, the token rotated) that verified. */
  changes: number;
  /** The number of the last line that verified (entries and events share the numbering). */
  lastSeq: number;
  /** Lines torn by a crash mid-write: the last line, or one the kernel closed with a recovery event. */
  torn: number[];
  /** Entries written before the keyed chain existed (plain SHA-256 hashes). */
  legacy?: { entries: number; lines: number; sealedByLine?: number };
  /** What the head checkpoint says (null: there is none or it cannot be read). Its tag is not shown. */
  head: Omit<AuditHead, 'tag'> | null;
  /** Gaps a running kernel saw and recorded. */
  gaps: RecordedGap[];
  /** The first problem (an unrecorded one before any recorded gap): verify cannot vouch for what follows a break. */
  problem?: AuditProblem;
  /** Something a person should know that is not tampering (an unkeyed legacy file). */
  warning?: string;
}

function chainBreak(n: number, seq: number, prevSeq: number): AuditProblem {
  if (seq > prevSeq + 1) {
    const range = seq - 1 > prevSeq + 1 ? `#${prevSeq + 1} to #${seq - 1}` : `#${prevSeq + 1}`;
    return { line: n, entry: seq, kind: 'removed', message: `entry ${range} was removed before line ${n}` };
  }
  if (seq === prevSeq + 1) {
    // Numbering is intact but the link is not: the line before was rewritten with a fresh hash.
    return { line: n - 1, entry: prevSeq, kind: 'altered', message: `line ${n - 1} (entry #${prevSeq}) was altered: line ${n} no longer links to it` };
  }
  if (seq < prevSeq) return { line: n, entry: seq, kind: 'reordered', message: `line ${n} (entry #${seq}) is out of order: lines were moved or duplicated` };
  return { line: n, entry: seq, kind: 'inserted', message: `line ${n} (entry #${seq}) was inserted: it repeats the number of the line before` };
}

function range(m: { from: number; to: number }): string {
  return m.from === m.to ? `entry #${m.from} is` : `entries #${m.from} to #${m.to} are`;
}

const SEEN_WORDS: Record<string, string> = {
  'cut-tail': 'its end cut off',
  emptied: 'it emptied',
  deleted: 'it deleted',
  replaced: 'it replaced by another file',
  'head-missing': 'its head checkpoint missing',
  'head-altered': 'its head checkpoint altered',
  'foreign-line': "a line at its end not sealed with this data folder's key",
};

function gapProblem(g: RecordedGap, logName: string): AuditProblem {
  if (g.seen === 'lines-lost') return { line: g.line, kind: 'removed', recorded: true, message: `${logName}: ${lostLinesMessage(g, `line ${g.line}`)}` };
  const kind: AuditProblemKind =
    g.seen === 'head-missing' || g.seen === 'head-altered' ? 'head' : g.seen === 'foreign-line' ? 'inserted' : (g.seen as AuditProblemKind);
  const lost = g.missing ? `${range(g.missing)} missing from ${logName}` : logName;
  const who = `a kernel (pid ${g.pid ?? '?'}) found ${SEEN_WORDS[g.seen] ?? g.seen}${g.ts ? ` at ${g.ts}` : ''}`;
  const saved = g.recoveredTo ? `; it saved what it still held of the old file to ${g.recoveredTo}` : '';
  return { line: g.line, kind, recorded: true, message: `${lost}: ${who} and recorded it at line ${g.line}${saved}` };
}

/** A gap event's fields, as verify reports them (`line`: the line number in a file, the entry number in the database). */
export function recordedGap(line: number, obj: Record<string, unknown>): RecordedGap {
  const o = obj as {
    seen?: string;
    missing?: { from: number; to: number };
    ts?: string;
    pid?: number;
    detail?: string;
    recoveredTo?: string;
    instance?: string;
    lost?: LostLines;
  };
  return {
    line,
    seen: typeof o.seen === 'string' ? o.seen : 'gap',
    ...(o.missing ? { missing: o.missing } : {}),
    ...(o.ts ? { ts: o.ts } : {}),
    ...(o.pid ? { pid: o.pid } : {}),
    ...(o.detail ? { detail: o.detail } : {}),
    ...(o.recoveredTo ? { recoveredTo: o.recoveredTo } : {}),
    ...(typeof o.instance === 'string' ? { instance: o.instance } : {}),
    ...(o.lost && typeof o.lost === 'object' ? { lost: o.lost } : {}),
  };
}

/**
 * Walks the whole file and reports the first problem: a line altered, removed, inserted, reordered
 * or torn in the middle; lines rewritten without the key (unkeyed) or with another key (bad-key);
 * and, against the head checkpoint, a cut tail, an emptied, deleted or replaced file. Gaps that a
 * running kernel recorded are reported with its explanation (still a problem: entries are gone).
 */
export function verifyAuditFile(file: string): AuditVerifyReport {
  const logName = path.basename(file);
  const headName = path.basename(headPathFor(file));
  const report: AuditVerifyReport = { ok: true, file, lines: 0, entries: 0, events: 0, changes: 0, lastSeq: 0, torn: [], head: null, gaps: [] };
  const done = (problem?: AuditProblem): AuditVerifyReport => {
    const [firstGap] = report.gaps;
    if (!problem && firstGap) problem = gapProblem(firstGap, logName);
    if (problem) report.problem = problem;
    report.ok = report.problem === undefined;
    return report;
  };

  let key: KeyObject | null;
  try {
    key = readKey(keyPathFor(file));
  } catch (err) {
    return done({ line: 0, kind: 'bad-key', message: (err as Error).message });
  }
  const head: HeadState = readHeadFile(headPathFor(file));
  if (head.state === 'ok') report.head = { seq: head.head.seq, size: head.head.size, hash: head.head.hash };

  if (!fs.existsSync(file)) {
    if (head.state === 'ok' && head.head.seq > 0) {
      return done({ line: 0, kind: 'deleted', message: `${logName} is missing, while ${headName} says it held ${head.head.seq} entries: it was deleted` });
    }
    if (key && head.state === 'missing') {
      return done({
        line: 0,
        kind: 'deleted',
        message: `${logName} and ${headName} are both missing, while ${KEY_NAME} shows a keyed trail was kept here: they were deleted`,
      });
    }
    if (head.state === 'invalid') return done({ line: 0, kind: 'head', message: `${headName} cannot be trusted: ${head.reason}` });
    return done();
  }

  const text = fs.readFileSync(file, 'utf8');
  const endsClean = text === '' || text.endsWith('\n');
  const lines = text.split('\n');
  if (endsClean) lines.pop();
  report.lines = lines.length;

  let prevHash = GENESIS_HASH;
  let prevSeq = 0;
  let phase: 'start' | 'legacy' | 'keyed' = 'start';
  let firstPlainLine = 0;
  let legacyEntries = 0;
  let offset = 0;
  let atHead: { hash: string; size: number; tag: string } | null = null;
  const parsed = (i: number): ParsedLine | null => {
    const line = lines[i];
    return line === undefined ? null : parseLine(line);
  };

  for (let i = 0; i < lines.length; i++) {
    const n = i + 1;
    const line = lines[i]!; // i < lines.length
    const isLast = i === lines.length - 1;
    const bytes = Buffer.byteLength(line, 'utf8') + (isLast && !endsClean ? 0 : 1);
    offset += bytes;
    const p = parseLine(line);
    if (!p) {
      if (looksTorn(line, prevSeq + 1)) {
        const next = parsed(i + 1);
        const nextSeal = next ? sealOf(next, key) : null;
        const closedByKernel = next !== null && nextSeal === 'keyed' && next.event !== undefined && next.obj.torn === true;
        // The writer before the keyed chain closed a torn line with a newline and carried on.
        const closedByOldWriter = phase !== 'keyed' && nextSeal === 'plain';
        if ((isLast && !endsClean) || closedByKernel || closedByOldWriter) {
          report.torn.push(n);
          continue;
        }
        return done({
          line: n,
          entry: prevSeq + 1,
          kind: 'torn',
          message: `line ${n} is cut short in the middle of the file: a line torn by a crash is accepted only as the last line or right before the kernel's torn-tail-recovered event`,
        });
      }
      return done({ line: n, kind: 'not-an-entry', message: `line ${n} is not an audit entry (edited or inserted by hand)` });
    }

    const seal = sealOf(p, key);
    if (seal === 'bad') {
      if (!key) {
        return done({
          line: n,
          entry: p.seq,
          kind: 'bad-key',
          message: `${KEY_NAME} is missing, so line ${n} (entry #${p.seq}) and the keyed lines after it cannot be checked`,
        });
      }
      const next = parsed(i + 1);
      if (next && sealOf(next, key) === 'bad' && next.prev === p.hash) {
        return done({
          line: n,
          entry: p.seq,
          kind: 'bad-key',
          message: `line ${n} (entry #${p.seq}) and the lines after it are sealed with another key: ${KEY_NAME} was replaced, or the file was rewritten with a key that is not this data folder's`,
        });
      }
      return done({ line: n, entry: p.seq, kind: 'altered', message: `line ${n} (entry #${p.seq}) was altered: its content no longer matches its MAC` });
    }
    if (seal === 'plain') {
      if (phase === 'keyed') {
        return done({
          line: n,
          entry: p.seq,
          kind: 'unkeyed',
          message: `line ${n} (entry #${p.seq}) carries an unkeyed hash inside the keyed chain: it was rewritten without the key`,
        });
      }
      if (phase === 'start') firstPlainLine = n;
      phase = 'legacy';
    } else {
      if (phase === 'legacy') {
        if (p.event !== 'keyed-chain-start') {
          return done({
            line: firstPlainLine,
            kind: 'unkeyed',
            message: `lines ${firstPlainLine} to ${n - 1} carry unkeyed hashes and no keyed-chain-start event closes them: they were rewritten without the key`,
          });
        }
        report.legacy = { entries: legacyEntries, lines: n - 1, sealedByLine: n };
      }
      phase = 'keyed';
    }

    const isGap = seal === 'keyed' && p.event === 'gap';
    if (p.prev !== prevHash || (isGap ? p.seq <= prevSeq : p.seq !== prevSeq + 1)) {
      if (p.seq > prevSeq + 1) {
        // A skipped number that shows up further down was moved, not removed.
        for (let j = i + 1; j < lines.length && j < i + 10_000; j++) {
          if (parsed(j)?.seq === prevSeq + 1) {
            return done({
              line: n,
              entry: p.seq,
              kind: 'reordered',
              message: `line ${n} (entry #${p.seq}) is out of order: entry #${prevSeq + 1} comes later, at line ${j + 1}`,
            });
          }
        }
      }
      return done(chainBreak(n, p.seq, prevSeq));
    }
    if (isGap) {
      report.gaps.push(recordedGap(n, p.obj));
    }
    if (p.event === 'admin') report.changes++;
    else if (p.event) report.events++;
    else report.entries++;
    if (seal === 'plain') legacyEntries++;
    prevHash = p.hash;
    prevSeq = p.seq;
    report.lastSeq = p.seq;
    if (head.state === 'ok' && p.seq === head.head.seq) atHead = { hash: p.hash, size: offset, tag: seal === 'keyed' ? tagOf(key!, p) : '' };
  }

  if (phase === 'legacy') {
    // Only unkeyed lines. Fine for a log no keyed kernel has opened yet; not once a key or head exists.
    if (key || head.state !== 'missing') {
      return done({
        line: firstPlainLine,
        kind: 'unkeyed',
        message: `all ${legacyEntries} entries carry unkeyed hashes although this data folder has ${key ? KEY_NAME : headName}: the file was rewritten without the key`,
      });
    }
    report.legacy = { entries: legacyEntries, lines: lines.length };
    report.warning = `UNKEYED: the ${legacyEntries} entries carry plain hashes (written before the keyed audit chain): anyone able to write the file could have rewritten them. The keyed chain starts, and pins them, the next time a kernel opens this data folder.`;
  }

  if (head.state === 'invalid') return done({ line: 0, kind: 'head', message: `${headName} cannot be trusted: ${head.reason}` });
  if (head.state === 'missing') {
    if (key && report.lines === 0) {
      return done({
        line: 0,
        kind: 'emptied',
        message: `${logName} is empty and ${headName} is missing, while ${KEY_NAME} shows a keyed trail was kept here: it was emptied`,
      });
    }
    if (phase === 'keyed') return done({ line: 0, kind: 'head', message: `${headName} is missing: a cut tail cannot be ruled out` });
    return done();
  }
  const h = head.head;
  if (report.lastSeq < h.seq) {
    if (report.entries + report.events + report.changes === 0) {
      return done({ line: 0, kind: 'emptied', message: `${logName} holds no entries, while ${headName} says it held ${h.seq}: it was emptied` });
    }
    return done({
      line: report.lines,
      entry: report.lastSeq + 1,
      kind: 'cut-tail',
      message: `${range({ from: report.lastSeq + 1, to: h.seq })} missing at the end: the file was cut after line ${report.lines} (entry #${report.lastSeq}), while ${headName} says it went on to #${h.seq}`,
    });
  }
  if (h.seq === 0) return done(); // a head written before the first entry: the log may only be ahead of it
  if (atHead && atHead.hash === h.hash && atHead.tag !== h.tag) {
    return done({
      line: 0,
      entry: h.seq,
      kind: 'head',
      message: `${headName} cannot be trusted: its tag does not match entry #${h.seq} (it was rewritten without the key)`,
    });
  }
  if (!atHead || atHead.hash !== h.hash || atHead.size !== h.size) {
    return done({
      line: 0,
      entry: h.seq,
      kind: 'replaced',
      message: `entry #${h.seq} in ${logName} is not the one ${headName} recorded: the file was replaced`,
    });
  }
  return done();
}

/** "12 entries, 3 changes by a person and 1 kernel event": the lines that verified, by kind. */
export function lineCounts(r: { entries: number; events: number; changes: number }): string {
  const parts = [`${r.entries} entr${r.entries === 1 ? 'y' : 'ies'}`];
  if (r.changes) parts.push(`${r.changes} change${r.changes === 1 ? '' : 's'} by a person`);
  if (r.events) parts.push(`${r.events} kernel event${r.events === 1 ? '' : 's'}`);
  return parts.length === 1 ? parts[0]! : `${parts.slice(0, -1).join(', ')} and ${parts.at(-1)!}`;
}

/** One line (or a few) for a person: the verdict, then the first problem or what to know. */
export function formatVerifyReport(r: AuditVerifyReport): string {
  if (r.problem) {
    const p = r.problem;
    return `${p.recorded ? 'GAP' : 'TAMPERED'}: ${p.message}.\n`;
  }
  const notes: string[] = [];
  if (r.legacy && r.legacy.sealedByLine)
    notes.push(
      `the first ${r.legacy.entries} entries were written before the keyed chain (unkeyed hashes), pinned by the keyed chain from line ${r.legacy.sealedByLine}`,
    );
  if (r.torn.length) notes.push(`torn by a crash (not tampering): line ${r.torn.join(', ')}`);
  const what =
    r.lines === 0
      ? 'no entries'
      : `${lineCounts(r)}, ${r.legacy && !r.legacy.sealedByLine ? 'unkeyed chain intact' : 'keyed chain intact'}${r.head ? `, head matches (#${r.head.seq})` : ''}`;
  let out = `OK: ${what}${notes.length ? `; ${notes.join('; ')}` : ''}.\n`;
  if (r.warning) out += `${r.warning}\n`;
  return out;
}
