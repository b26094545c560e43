import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { CallerKind } from '../tools/contract.js';

/** One line of `agent-audit.jsonl`. Arguments are masked before they get here. */
export interface AuditRecord {
  ts: string;
  id: string;
  caller: { kind: CallerKind; id?: string; conversationId?: string };
  tool: string;
  pack: string | null;
  args: unknown;
  /** How the permission question was settled: `auto`, `allow:once`, `deny:forever`, `deny:timeout`, `none`, ... */
  decision: string;
  outcome: 'ok' | 'error';
  error?: { code: string; message: string };
  summary: string;
  durationMs: number;
}

export interface AuditEntry extends AuditRecord {
  seq: number;
  /** Hash of the previous line: removing, inserting or editing a line breaks the chain. */
  prev: string;
  hash: string;
}

export interface AuditFilter {
  limit?: number;
  tool?: string;
}

export const GENESIS_HASH = '0'.repeat(64);
const HASH_SUFFIX = /,"hash":"([0-9a-f]{64})"\}$/;

function chainHash(prev: string, body: string): string {
  return createHash('sha256').update(prev).update('\n').update(body).digest('hex');
}

/** Splits a stored line into the hashed body and its recorded hash, or null if it is not one of ours. */
function splitLine(line: string): { body: string; hash: string } | null {
  const m = HASH_SUFFIX.exec(line);
  if (!m) return null;
  return { body: line.slice(0, m.index) + '}', hash: m[1]! };
}

/**
 * The append-only audit trail. Each line is written with one synchronous `write(2)` on an
 * O_APPEND descriptor before the call returns, so a `kill -9` right after a call loses nothing
 * and concurrent calls never interleave lines; there is no fsync per call (the OS owns the page).
 */
export class AuditLog {
  private fd: number | null = null;
  private lastHash = GENESIS_HASH;
  private lastSeq = 0;
  private knownSize = 0;
  private recent: AuditEntry[] = [];
  private readonly probeByte = Buffer.alloc(1);
  /** Lines skipped at start because a crash tore them mid-write. */
  readonly tornLines: number[] = [];

  constructor(
    readonly file: string,
    private readonly memory = 1000,
  ) {}

  /** Opens (creating) the file and reloads the last `memory` entries from its tail. */
  open(): void {
    if (this.fd !== null) return;
    fs.mkdirSync(path.dirname(this.file), { recursive: true });
    this.fd = fs.openSync(this.file, 'a+', 0o600);
    this.resync(true);
  }

  close(): void {
    if (this.fd !== null) fs.closeSync(this.fd);
    this.fd = null;
  }

  /** Reads the file's tail: the chain head, and (on start) the in-memory window. */
  private resync(loadMemory: boolean): void {
    const fd = this.fd!;
    const size = fs.fstatSync(fd).size;
    const wanted = loadMemory ? this.memory + 1 : 2;
    const { lines, endsClean } = readTailLines(fd, size, wanted);
    if (!endsClean && size > 0) {
      // A crash tore the last line. Terminate it so the next entry starts on a line of its own;
      // verify reports it as torn, and the chain continues from the last whole entry.
      fs.writeSync(fd, '\n');
    }
    const entries: AuditEntry[] = [];
    for (const line of lines) {
      if (!line) continue;
      const parts = splitLine(line);
      if (!parts) continue;
      try {
        const entry = JSON.parse(line) as AuditEntry;
        entries.push(entry);
      } catch {
        // not a whole line: skipped
      }
    }
    const last = entries[entries.length - 1];
    this.lastHash = last ? last.hash : GENESIS_HASH;
    this.lastSeq = last ? last.seq : 0;
    if (loadMemory) this.recent = entries.slice(-this.memory);
    this.knownSize = fs.fstatSync(fd).size;
  }

  append(record: AuditRecord): AuditEntry {
    if (this.fd === null) this.open();
    const fd = this.fd!;
    // Another process (a CLI call beside a running server) may have appended: continue its chain.
    // A one-byte read at our idea of the end is cheaper than fstat and says the same thing.
    if (fs.readSync(fd, this.probeByte, 0, 1, this.knownSize) > 0) this.resync(false);
    const seq = this.lastSeq + 1;
    const prev = this.lastHash;
    const body = JSON.stringify({ seq, ...record, prev });
    const hash = chainHash(prev, body);
    const line = body.slice(0, -1) + `,"hash":"${hash}"}\n`;
    const bytes = Buffer.from(line, 'utf8');
    fs.writeSync(fd, bytes);
    this.knownSize += bytes.length;
    this.lastHash = hash;
    this.lastSeq = seq;
    const entry: AuditEntry = { seq, ...record, prev, hash };
    this.recent.push(entry);
    if (this.recent.length > this.memory * 2) this.recent.splice(0, this.recent.length - this.memory);
    return entry;
  }

  /** The newest entries (at most the in-memory window), oldest first. */
  tail(filter: AuditFilter = {}): AuditEntry[] {
    let list = this.recent.slice(-this.memory);
    if (filter.tool) list = list.filter((e) => e.tool === filter.tool);
    if (filter.limit !== undefined) list = list.slice(-filter.limit);
    return list;
  }
}

/** Reads up to `count` last lines of a file, from its end, in chunks. */
function readTailLines(fd: number, size: number, count: number): { lines: string[]; endsClean: boolean } {
  if (size === 0) return { lines: [], endsClean: true };
  const chunk = 64 * 1024;
  let pos = size;
  let buf = Buffer.alloc(0);
  let newlines = 0;
  while (pos > 0 && newlines <= count) {
    const len = Math.min(chunk, pos);
    pos -= len;
    const part = Buffer.alloc(len);
    fs.readSync(fd, part, 0, len, pos);
    buf = Buffer.concat([part, buf]);
    for (const b of part) if (b === 10) newlines++;
  }
  const text = buf.toString('utf8');
  const endsClean = text.endsWith('\n');
  const lines = text.split('\n');
  if (endsClean) lines.pop();
  else lines.pop(); // the torn fragment is not an entry
  if (pos > 0) lines.shift(); // the first line may be partial
  return { lines: lines.slice(-count), endsClean };
}

export interface AuditProblem {
  line: number;
  kind: 'altered' | 'removed' | 'inserted' | 'reordered' | 'not-an-entry';
  message: string;
}

export interface AuditVerifyReport {
  ok: boolean;
  lines: number;
  entries: number;
  /** Lines torn by a crash mid-write: reported, not counted as tampering. */
  torn: number[];
  /** The first problem found (verify stops there: later lines cannot be judged against a broken chain). */
  problem?: AuditProblem;
}

function chainBreak(n: number, seq: number, prevSeq: number): AuditProblem {
  if (seq > prevSeq + 1) {
    const range = seq - 1 > prevSeq + 1 ? `#${prevSeq + 1} to #${seq - 1}` : `#${prevSeq + 1}`;
    return { line: n, kind: 'removed', message: `entry ${range} was removed before line ${n}` };
  }
  if (seq === prevSeq + 1) {
    // Numbering is intact but the link is not: the line before was rewritten with a fresh hash.
    return { line: n - 1, kind: 'altered', message: `line ${n - 1} (entry #${prevSeq}) was altered: line ${n} no longer links to it` };
  }
  if (seq < prevSeq) return { line: n, kind: 'reordered', message: `line ${n} (entry #${seq}) is out of order: lines were moved or duplicated` };
  return { line: n, kind: 'inserted', message: `line ${n} (entry #${seq}) was inserted: it repeats the number of the line before` };
}

/** Walks the whole chain and reports the first line that was altered, removed or inserted. */
export function verifyAuditFile(file: string): AuditVerifyReport {
  const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  const report: AuditVerifyReport = { ok: true, lines: lines.length, entries: 0, torn: [] };
  let prevHash = GENESIS_HASH;
  let prevSeq = 0;
  for (let i = 0; i < lines.length; i++) {
    const n = i + 1;
    const line = lines[i]!;
    const parts = splitLine(line);
    let entry: AuditEntry | null = null;
    if (parts) {
      try {
        entry = JSON.parse(line) as AuditEntry;
      } catch {
        entry = null;
      }
    }
    if (!parts || !entry) {
      // A torn line is a prefix of a real entry that a crash cut short, followed by a fresh entry.
      if ((line.startsWith('{"seq":') || '{"seq":'.startsWith(line)) && !line.endsWith('}')) {
        report.torn.push(n);
        continue;
      }
      report.problem = { line: n, kind: 'not-an-entry', message: `line ${n} is not an audit entry (edited or inserted by hand)` };
      break;
    }
    if (chainHash(entry.prev, parts.body) !== parts.hash) {
      report.problem = { line: n, kind: 'altered', message: `line ${n} (entry #${entry.seq}) was altered: its content no longer matches its hash` };
      break;
    }
    if (entry.prev !== prevHash || entry.seq !== prevSeq + 1) {
      report.problem = chainBreak(n, entry.seq, prevSeq);
      break;
    }
    prevHash = parts.hash;
    prevSeq = entry.seq;
    report.entries++;
  }
  report.ok = report.problem === undefined;
  return report;
}
