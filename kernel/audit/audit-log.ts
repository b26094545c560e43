import type { KeyObject } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  encodeHead,
  GENESIS_HASH,
  HEAD_SIZE,
  headPathFor,
  keyPathFor,
  loadOrCreateKey,
  lockPathFor,
  looksTorn,
  parseLine,
  readHeadFd,
  sealLine,
  sealOf,
  tagOf,
  type AuditHead,
  type ParsedLine,
} from './audit-chain.js';
import { AuditFileLock } from './audit-lock.js';
import type { LostLines } from './audit-verify.js';
import { MemoError } from '../errors.js';

export { verifyAuditFile, formatVerifyReport, type AuditProblem, type AuditProblemKind, type AuditVerifyReport, type RecordedGap } from './audit-verify.js';

/** One line of `agent-audit.jsonl`. Arguments are masked before they get here. */
export interface AuditRecord {
  ts: string;
  id: string;
  /** Who called: a caller kind of the tool contract (`agent`, `mcp`, `cli`, `routine`, `host`), its id and conversation. */
  caller: { kind: string; id?: string; conversationId?: string };
  tool: string;
  pack: string | null;
  args: unknown;
  /** How the permission question was settled: `auto`, `allow:once`, `deny:forever`, `deny:timeout`, `none`, ... */
  decision: string;
  /** Who allowed the call when a person was asked (a face's name: `terminal`, `cli`, `host`, ...). */
  answeredBy?: string;
  /** Who edited the arguments before approving (a face's name); `args` are then the edited ones. */
  editedBy?: string;
  outcome: 'ok' | 'error';
  error?: { code: string; message: string };
  summary: string;
  durationMs: number;
}

export interface AuditEntry extends AuditRecord {
  seq: number;
  /** On PostgreSQL: the instance whose chain the entry belongs to (storage/instance-id.ts). */
  instance?: string;
  /** Hash of the previous line: removing, inserting or editing a line breaks the chain. */
  prev: string;
  /** HMAC-SHA256 of `prev + "\n" + this line without its hash`, keyed with the data folder's `audit.key`. */
  hash: string;
}

/** What a running kernel saw when its file did not continue the way it left it. */
export type GapSeen = 'cut-tail' | 'emptied' | 'deleted' | 'replaced' | 'head-missing' | 'head-altered' | 'foreign-line' | 'lines-lost';

/**
 * A line the kernel writes about the log itself, chained and MACed like any entry (it takes the
 * next entry number):
 * - `gap`: the file was cut, emptied, deleted or replaced (or the head was), seen by this process;
 * - `keyed-chain-start`: the first keyed line after lines written before the keyed chain existed;
 * - `torn-tail-recovered`: the line before was torn by a crash mid-write;
 * - `agent-access`: an agent turn handed to an agent CLI (`note()`): which CLI, and whether it ran
 *   in Vault only (every tool call through this kernel) or with Computer access (its own file,
 *   shell and web tools too, which this trail does not see).
 * Any of them carries `torn: true` when it follows a torn line.
 */
export interface AuditEvent {
  seq: number;
  ts: string;
  event: 'gap' | 'keyed-chain-start' | 'torn-tail-recovered' | 'agent-access' | 'admin';
  pid: number;
  /** On PostgreSQL: the instance whose chain the event belongs to. */
  instance?: string;
  /** agent-access: the turn's conversation, the CLI and its version, and the access it had. */
  conversationId?: string;
  backend?: string;
  version?: string;
  access?: 'vault' | 'computer';
  seen?: GapSeen;
  /** Entry numbers the file no longer has, when they are known. */
  missing?: { from: number; to: number };
  /** The last entry this process (or the head) knew of before it looked. */
  known?: { seq: number; hash: string };
  detail?: string;
  /** keyed-chain-start: how many unkeyed entries come before it. */
  legacyEntries?: number;
  /** The previous line is a torn fragment that this event closes. */
  torn?: true;
  /** gap: where the kernel saved the content it still held of a deleted file (beside the log). */
  recoveredTo?: string;
  /** gap `lines-lost`: the lines this process could not write (calls by id and tool, never their arguments). */
  lost?: LostLines;
  /** admin: what was done (`pack.disable`, `permission.allow`, ...), by which face, to what, and how. */
  action?: string;
  by?: string;
  target?: string;
  change?: Record<string, unknown>;
  outcome?: 'failed';
  error?: string;
  prev: string;
  hash: string;
}

export type AuditLine = AuditEntry | AuditEvent;

/**
 * A person's change to what the kernel may do, for the trail (`AuditLog.admin`, `PgAuditLog.admin`):
 * `action` names it (`pack.disable`, `permission.allow`, `provider.add`, `token.rotate`, ...), `by`
 * the face it came through (`cli`, `console`, `host`), `target` what it changed (a pack, a tool, a
 * provider), `change` how: masked by the caller before it gets here, as a call's arguments are
 * (Kernel.recordAdmin masks values under secret-looking names and secret-shaped values).
 */
export interface AdminRecord {
  action: string;
  by: string;
  target?: string;
  change?: Record<string, unknown>;
  /** On a second line for the same change: it failed after its first line was written, and why. */
  outcome?: 'failed';
  error?: string;
}

/** An admin record as its line carries it: bounded. */
export function adminFields(record: AdminRecord): Omit<AuditEvent, 'seq' | 'ts' | 'pid' | 'prev' | 'hash'> {
  const change = record.change;
  const text = change ? JSON.stringify(change) : '';
  return {
    event: 'admin',
    action: String(record.action).slice(0, 100),
    by: String(record.by).slice(0, 100),
    ...(record.target !== undefined ? { target: String(record.target).slice(0, 200) } : {}),
    ...(change ? { change: text.length > 4000 ? { truncated: `${text.slice(0, 4000)}…` } : change } : {}),
    ...(record.outcome ? { outcome: record.outcome } : {}),
    ...(record.error !== undefined ? { error: String(record.error).slice(0, 500) } : {}),
  };
}

/** How many lost calls a file trail's `lines-lost` event names one by one; the rest are counted. */
const MAX_LOST_LISTED = 100;

/** What the OS said when a line could not be written, in words a person reads. */
export function writeFailureCause(err: unknown): string {
  const code = (err as NodeJS.ErrnoException)?.code;
  switch (code) {
    case 'ENOSPC':
      return 'the disk is full (ENOSPC)';
    case 'EDQUOT':
      return 'the disk quota is used up (EDQUOT)';
    case 'EACCES':
    case 'EPERM':
      return `permission denied (${code})`;
    case 'EROFS':
      return 'the file system is read-only (EROFS)';
    case 'EIO':
      return 'an input/output error (EIO)';
    case 'EFBIG':
      return 'the file is too large (EFBIG)';
    default:
      return (err as Error)?.message ?? String(err);
  }
}

export function isAuditEvent(line: AuditLine): line is AuditEvent {
  return typeof (line as AuditEvent).event === 'string';
}

export interface AuditFilter {
  limit?: number;
  tool?: string;
}

export interface AuditLogOptions {
  /** How many entries to keep in memory (and reload from the file tail on open). Default 1000. */
  memory?: number;
  /** How long an append waits for another process holding the lock. Default 10 s. */
  lockTimeoutMs?: number;
  /**
   * How often an append checks that the path still names the file it writes to (a stat of the path
   * against the open descriptor, about 2 us): a deleted, renamed-over or moved-away file. Default
   * 100 ms; 0 checks on every append. Lines appended in between go to the old file, which the gap
   * event points to (or which the kernel saves beside the log when it was deleted). Another
   * process's lines and a cut, emptied or rewritten file are caught on every append (a pread).
   */
  pathCheckMs?: number;
  /**
   * How long the head checkpoint may trail the lines it seals, in ms. Default 5. An append writes
   * it (under its own lock) when the last head write is that old; otherwise it marks it due and a
   * timer rewrites it (under the lock, unless another process appended since: its head is newer), so
   * a run of calls shares a head write or two instead of paying a pwrite each; close() writes it at
   * once. A process killed in that window leaves its head up to this far behind its trail,
   * which verify accepts (a trail ahead of its head); only lines cut within the window after such a
   * crash would go unnoticed. 0 writes the head with every batch, under the batch's lock.
   */
  headLagMs?: number;
  /** Called (synchronously) when an append or open has to wait for another process's lock. */
  onLockWait?: () => void;
}

type AuditEventDraft = Omit<AuditEvent, 'seq' | 'prev' | 'hash' | 'ts' | 'pid'>;

interface FileId {
  ino: number;
  dev: number;
}

const { O_RDWR, O_CREAT, O_APPEND } = fs.constants;
/** Linux only: reads through this descriptor leave the file's access time alone. */
const O_NOATIME = (fs.constants as { O_NOATIME?: number }).O_NOATIME ?? 0;

/**
 * Opens the trail for appending and for the one-byte probe read before each append (a+). Where the
 * system allows (Linux, and the file is this user's), without access-time updates: on a relatime
 * mount every probe after a write would otherwise mark the file's inode dirty again, a journal
 * update for a read that changes nothing.
 */
function openTrail(file: string): number {
  const flags = O_RDWR | O_CREAT | O_APPEND;
  if (O_NOATIME) {
    try {
      return fs.openSync(file, flags | O_NOATIME, 0o600);
    } catch (err) {
      // Someone else's file (only its owner may ask for O_NOATIME): opened the ordinary way.
      if ((err as NodeJS.ErrnoException).code !== 'EPERM') throw err;
    }
  }
  return fs.openSync(file, flags, 0o600);
}

/**
 * The append-only audit trail.
 *
 * Each batch of lines is written with one synchronous `write(2)` on an O_APPEND descriptor before
 * the call returns, so a `kill -9` right after a call loses nothing; there is no fsync per call (the
 * OS owns the page). Around the write, under an exclusive flock shared with every other process
 * writing this file: a one-pread probe tells whether someone else appended (or the file shrank or
 * was rewritten), and a throttled stat whether the path still names our file; if not, the tail is
 * re-read and the chain continues from it. The head checkpoint (`agent-audit.head`) follows
 * within `headLagMs` (one pwrite under the lock for a whole run of calls), and at close.
 *
 * When the file is not the way this process left it (cut, emptied, deleted, replaced, a head that
 * is gone), the log reopens or recreates it and writes a `gap` event saying what it saw, so
 * `memo audit verify` can explain the hole instead of only finding it.
 */
export class AuditLog {
  private fd: number | null = null;
  private headFd: number | null = null;
  private key: KeyObject | null = null;
  private lock: AuditFileLock | null = null;
  private fileId: FileId = { ino: -1, dev: -1 };
  private headId: FileId = { ino: -1, dev: -1 };
  private lastHash = GENESIS_HASH;
  /** The head tag of the last line (second half of its MAC). */
  private lastTag = GENESIS_HASH;
  private lastSeq = 0;
  private knownSize = 0;
  private lastPathCheck = 0;
  private headDue = false;
  private headWrittenAt = 0;
  private headTimer: NodeJS.Timeout | null = null;
  private recent: AuditEntry[] = [];
  private readonly appended = new Set<(entries: readonly AuditEntry[]) => void>();
  private readonly headBuf = Buffer.alloc(HEAD_SIZE);
  private readonly probe = Buffer.alloc(2);
  private readonly memory: number;
  private readonly lockTimeoutMs: number;
  private readonly pathCheckMs: number;
  private readonly headLagMs: number;
  private readonly onLockWait: (() => void) | undefined;
  readonly headFile: string;
  readonly keyFile: string;
  readonly lockFile: string;
  /** Lines skipped at start because a crash tore them mid-write (kept for compatibility; see `events`). */
  readonly tornLines: number[] = [];
  /** Events this instance wrote (gaps seen, torn tails recovered, the keyed chain started). */
  readonly events: AuditEvent[] = [];
  /**
   * Lines this process could not write (a full disk, a permission taken away, another writer
   * holding the lock), since the last `lines-lost` event: while there are any, `guard` refuses
   * every call, and the next write puts that event first.
   */
  private lost: (LostLines & { cause: string; events: number }) | null = null;
  /**
   * The pipeline's check before every call (kernel.ts registers it): while a line could not be
   * written, it tries to write the `lines-lost` event naming the lost lines, and refuses the call
   * when that fails too. Reads are refused as well: an unrecorded read is what an attacker wants.
   */
  readonly guard = {
    check: (): void => {
      if (this.lost && !this.recover()) {
        const lost = this.lost;
        throw new MemoError(
          'PERMISSION_DENIED',
          `The audit trail ${this.file} cannot be written (${lost.cause}), so this call could not be recorded and was not run: calls are refused until writing works again. ${lost.lines} line${lost.lines === 1 ? '' : 's'} could not be written since ${lost.from}; the trail names them once it can be written.`,
          { details: { decision: 'deny:audit-unavailable' } },
        );
      }
    },
  };

  constructor(
    readonly file: string,
    memory: number | AuditLogOptions = 1000,
    options: AuditLogOptions = {},
  ) {
    const opts = typeof memory === 'number' ? { ...options, memory } : memory;
    this.memory = opts.memory ?? 1000;
    this.lockTimeoutMs = opts.lockTimeoutMs ?? 10_000;
    this.pathCheckMs = opts.pathCheckMs ?? 100;
    this.headLagMs = opts.headLagMs ?? 5;
    this.onLockWait = opts.onLockWait;
    this.headFile = headPathFor(file);
    this.keyFile = keyPathFor(file);
    this.lockFile = lockPathFor(file);
  }

  /** Opens (creating) the file, its key, head and lock, and reloads the last `memory` entries. */
  open(): void {
    if (this.fd !== null) return;
    fs.mkdirSync(path.dirname(this.file), { recursive: true });
    this.key = loadOrCreateKey(this.keyFile).key;
    const lock = new AuditFileLock(this.lockFile, this.lockTimeoutMs, this.onLockWait);
    lock.open();
    this.lock = lock;
    const existed = fs.existsSync(this.file);
    this.fd = openTrail(this.file);
    this.openHead();
    lock.acquire();
    try {
      this.reconcile(true, existed);
    } finally {
      lock.release();
    }
  }

  close(): void {
    try {
      // Lines lost and not yet named: one last try to name them (else they are only on stderr).
      if (this.lost && this.fd !== null) this.recover();
      this.flushHead();
    } finally {
      // A head that could not be written (the lock not to be had) still lets go of the files; the
      // error says why, and verify accepts a trail ahead of its head.
      if (this.fd !== null) fs.closeSync(this.fd);
      if (this.headFd !== null) fs.closeSync(this.headFd);
      this.lock?.close();
      this.fd = null;
      this.headFd = null;
      this.lock = null;
    }
  }

  append(record: AuditRecord): AuditEntry {
    return this.appendBatch([record])[0]!; // one entry per record
  }

  /**
   * Appends several records under one lock and one write (the shape a group commit of several
   * calls' lines needs). Returns the entries as written.
   */
  appendBatch(records: readonly AuditRecord[]): AuditEntry[] {
    let written: AuditEntry[];
    try {
      written = this.appendLocked(records);
    } catch (err) {
      this.loseLines(records, 0, err);
      throw err;
    }
    for (const entry of written) this.recent.push(entry);
    if (this.recent.length > this.memory * 2) this.recent.splice(0, this.recent.length - this.memory);
    for (const listener of this.appended) {
      try {
        listener(written);
      } catch {
        // A watcher's failure never turns a written line into a failed append.
      }
    }
    return written;
  }

  /** True while lines this process could not write are waiting for their `lines-lost` event (the guard refuses calls). */
  get failing(): { cause: string; lines: number; since: string } | null {
    return this.lost ? { cause: this.lost.cause, lines: this.lost.lines, since: this.lost.from } : null;
  }

  private appendLocked(records: readonly AuditRecord[]): AuditEntry[] {
    if (this.fd === null) this.open();
    const lock = this.lock!;
    const written: AuditEntry[] = [];
    lock.acquire();
    try {
      // Someone else appended, or the file shrank or was rewritten, or (checked every pathCheckMs)
      // the path no longer names this file: look before writing.
      if (this.fileChanged() || this.pathCheckDue()) this.reconcile(false);
      let prev = this.lastHash;
      let seq = this.lastSeq;
      let tag = this.lastTag;
      let text = '';
      // Lines lost before: the event naming them comes first, in the same write.
      const lostEvent = this.lost ? this.sealLost(seq + 1, prev) : null;
      if (lostEvent) {
        text += lostEvent.line;
        seq = lostEvent.event.seq;
        prev = lostEvent.event.hash;
        tag = lostEvent.tag;
      }
      for (const record of records) {
        seq++;
        // One object: sealed as it stands, then given its hash (the line carries the hash last, as the entry does).
        const entry = { seq, ...record, prev } as AuditEntry;
        const sealed = sealLine(this.key!, prev, JSON.stringify(entry));
        entry.hash = sealed.hash;
        text += sealed.line;
        written.push(entry);
        prev = sealed.hash;
        tag = sealed.tag;
      }
      this.knownSize += this.writeAll(text);
      this.lastHash = prev;
      this.lastTag = tag;
      this.lastSeq = seq;
      if (lostEvent) this.lostWritten(lostEvent.event);
      this.headLater();
    } finally {
      lock.release();
    }
    return written;
  }

  /**
   * Writes `text` at the end of the file in one write(2) and returns its length in bytes. A write
   * the system cut short (the disk filled up in the middle of it) is taken back, so no torn line
   * stays behind, and fails as ENOSPC; a failed one is taken back too (a partial write then error).
   */
  private writeAll(text: string): number {
    const size = Buffer.byteLength(text, 'utf8');
    let n: number;
    try {
      n = fs.writeSync(this.fd!, text, null, 'utf8');
    } catch (err) {
      this.takeBack();
      throw err;
    }
    if (n !== size) {
      this.takeBack();
      throw Object.assign(new Error(`no space left on device: ${n} of ${size} bytes written`), { code: 'ENOSPC' });
    }
    return n;
  }

  /** Cuts the file back to what this process knows it holds (under the lock): the end of the last whole line. */
  private takeBack(): void {
    try {
      fs.ftruncateSync(this.fd!, this.knownSize);
    } catch {
      // Truncating frees space and needs none; if even that fails, the next look finds the fragment (foreign-line).
    }
  }

  /** Remembers lines that could not be written, for the `lines-lost` event; the guard refuses calls meanwhile. */
  private loseLines(records: readonly AuditRecord[], events: number, err: unknown): void {
    const now = new Date().toISOString();
    const lost = (this.lost ??= { lines: 0, calls: [], events: 0, from: now, to: now, cause: '' });
    lost.cause = writeFailureCause(err);
    lost.to = now;
    lost.lines += records.length + events;
    lost.events += events;
    for (const r of records) {
      if (lost.calls.length < MAX_LOST_LISTED) lost.calls.push({ id: r.id, tool: r.tool, outcome: r.outcome });
      else lost.unlisted = (lost.unlisted ?? 0) + 1;
    }
  }

  /** The `lines-lost` gap event for the lines lost so far, sealed as line `seq` after `prev`. */
  private sealLost(seq: number, prev: string): { line: string; tag: string; event: AuditEvent } {
    const lost = this.lost!;
    const calls = lost.lines - lost.events;
    const what = [calls ? `${calls} call line${calls === 1 ? '' : 's'}` : '', lost.events ? `${lost.events} kernel event${lost.events === 1 ? '' : 's'}` : '']
      .filter(Boolean)
      .join(' and ');
    const { cause, events, ...record } = lost;
    const fields = {
      seq,
      ts: new Date().toISOString(),
      event: 'gap' as const,
      pid: process.pid,
      seen: 'lines-lost' as const,
      lost: { ...record, ...(events ? { events } : {}) },
      detail: `${what} could not be written between ${lost.from} and ${lost.to} (${cause})`,
      prev,
    };
    const sealed = sealLine(this.key!, prev, JSON.stringify(fields));
    return { line: sealed.line, tag: sealed.tag, event: { ...fields, hash: sealed.hash } };
  }

  private lostWritten(event: AuditEvent): void {
    this.events.push(event);
    this.lost = null;
  }

  /** Tries to write the `lines-lost` event on its own (the guard's question); true once it is written. */
  private recover(): boolean {
    try {
      this.writeEvent(null);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Writes an `agent-access` event (chained and MACed like an entry, under the same lock): an agent
   * turn was handed to an agent CLI, with the access it had. Written before the CLI starts, so a
   * turn that crashes or hangs is on record too.
   */
  note(event: { event: 'agent-access'; conversationId: string; backend: string; version?: string; access: 'vault' | 'computer' }): AuditEvent {
    return this.writeEvent({
      event: event.event,
      conversationId: String(event.conversationId).slice(0, 100),
      backend: String(event.backend).slice(0, 100),
      ...(event.version ? { version: String(event.version).slice(0, 100) } : {}),
      access: event.access,
    });
  }

  /**
   * Writes an `admin` event: a person's change to the kernel's settings (a pack disabled, a
   * permission granted, a token rotated), who made it and what changed (adminFields: bounded,
   * secrets masked). Written before the change is applied; a change whose line cannot be written
   * is not made (the error says why).
   */
  admin(record: AdminRecord): AuditEvent {
    return this.writeEvent(adminFields(record));
  }

  /**
   * Seals one event line after the chain's head and writes it, under the lock, after the
   * `lines-lost` event when lines were lost before (`body` null: that event alone). A line that
   * cannot be written is remembered as lost, and the error thrown.
   */
  private writeEvent(body: Omit<AuditEvent, 'seq' | 'ts' | 'pid' | 'prev' | 'hash'> | null): AuditEvent {
    try {
      return this.writeEventLocked(body);
    } catch (err) {
      if (body) this.loseLines([], 1, err);
      else if (this.lost) this.lost.cause = writeFailureCause(err);
      throw err;
    }
  }

  private writeEventLocked(body: Omit<AuditEvent, 'seq' | 'ts' | 'pid' | 'prev' | 'hash'> | null): AuditEvent {
    if (this.fd === null) this.open();
    const lock = this.lock!;
    lock.acquire();
    try {
      if (this.fileChanged() || this.pathCheckDue()) this.reconcile(false);
      let seq = this.lastSeq;
      let prev = this.lastHash;
      let tag = this.lastTag;
      let text = '';
      const lostEvent = this.lost ? this.sealLost(seq + 1, prev) : null;
      let last: AuditEvent | null = null;
      if (lostEvent) {
        text += lostEvent.line;
        seq = lostEvent.event.seq;
        prev = lostEvent.event.hash;
        tag = lostEvent.tag;
        last = lostEvent.event;
      }
      if (body) {
        seq++;
        const { event, ...rest } = body;
        const fields = { seq, ts: new Date().toISOString(), event, pid: process.pid, ...rest, prev };
        const sealed = sealLine(this.key!, prev, JSON.stringify(fields));
        text += sealed.line;
        prev = sealed.hash;
        tag = sealed.tag;
        last = { ...fields, hash: sealed.hash };
      }
      if (!last) throw new Error('nothing to write');
      this.knownSize += this.writeAll(text);
      this.lastHash = prev;
      this.lastTag = tag;
      this.lastSeq = seq;
      if (lostEvent) this.lostWritten(lostEvent.event);
      if (body) this.events.push(last);
      this.headLater();
      return last;
    } finally {
      lock.release();
    }
  }

  /** Hears every batch of entries this log writes, after the write (the web console's live tail). */
  onAppend(listener: (entries: readonly AuditEntry[]) => void): () => void {
    this.appended.add(listener);
    return () => void this.appended.delete(listener);
  }

  /** How many times this log waited for another process's lock (appends, opens, head flushes). */
  get lockWaits(): number {
    return this.lock?.waits ?? 0;
  }

  /** The newest entries (at most the in-memory window), oldest first. Events are not included. */
  tail(filter: AuditFilter = {}): AuditEntry[] {
    let list = this.recent.slice(-this.memory);
    if (filter.tool) list = list.filter((e) => e.tool === filter.tool);
    if (filter.limit !== undefined) list = list.slice(-filter.limit);
    return list;
  }

  private openHead(): void {
    this.headFd = fs.openSync(this.headFile, fs.constants.O_RDWR | fs.constants.O_CREAT, 0o600);
    const st = fs.fstatSync(this.headFd);
    this.headId = { ino: st.ino, dev: st.dev };
  }

  /** Rewrites the head checkpoint in place (one pwrite); the caller holds the lock. */
  private writeHead(): void {
    const head: AuditHead = { seq: this.lastSeq, size: this.knownSize, hash: this.lastHash, tag: this.lastTag };
    fs.writeSync(this.headFd!, encodeHead(head, this.headBuf), 0, HEAD_SIZE, 0);
    this.headDue = false;
    this.headWrittenAt = performance.now();
  }

  /** After a write, under its lock: the head now, or (headLagMs > 0) by the timer. */
  private headLater(): void {
    if (this.headLagMs <= 0 || performance.now() - this.headWrittenAt >= this.headLagMs) return this.writeHead();
    this.headDue = true;
    if (!this.headTimer) {
      this.headTimer = setTimeout(() => {
        try {
          this.flushHead();
        } catch {
          // The lock was not to be had (another process stuck holding it): the head stays due, and
          // the next append or close() writes it; the lines themselves are already in the file.
          this.headTimer = null;
        }
      }, this.headLagMs);
      // A due head never keeps the process alive: close() writes it, and a crash is what the lag allows.
      this.headTimer.unref();
    }
  }

  /** Writes a due head, unless another process appended since (its head is newer). */
  private flushHead(): void {
    if (this.headTimer) clearTimeout(this.headTimer);
    this.headTimer = null;
    if (!this.headDue || this.fd === null || !this.lock) return;
    this.lock.acquire();
    try {
      if (!this.fileChanged()) this.writeHead();
      this.headDue = false;
    } finally {
      this.lock.release();
    }
  }

  /**
   * Whether the file is not the size we left it, or no longer ends with our newline: one pread of
   * the last byte we wrote and the one after it (cheaper than an fstat right after a write, which
   * costs about 2 us here).
   */
  private fileChanged(): boolean {
    if (this.knownSize === 0) return fs.readSync(this.fd!, this.probe, 0, 1, 0) !== 0;
    const n = fs.readSync(this.fd!, this.probe, 0, 2, this.knownSize - 1);
    return n !== 1 || this.probe[0] !== 0x0a;
  }

  private pathCheckDue(): boolean {
    if (this.pathCheckMs > 0) {
      const now = Date.now();
      if (now - this.lastPathCheck < this.pathCheckMs) return false;
      this.lastPathCheck = now;
    }
    const st = fs.statSync(this.file, { throwIfNoEntry: false });
    if (!st || st.ino !== this.fileId.ino || st.dev !== this.fileId.dev) return true;
    const hst = fs.statSync(this.headFile, { throwIfNoEntry: false });
    return !hst || hst.ino !== this.headId.ino || hst.dev !== this.headId.dev;
  }

  /**
   * Under the lock: makes the in-memory chain head agree with the file, and writes an event when
   * the file is not the way this process (or the head checkpoint) left it.
   */
  private reconcile(atOpen: boolean, existedAtOpen = true): void {
    const key = this.key!;
    let seen: AuditEvent['seen'];
    let detail: string | undefined;
    let oldFd: number | null = null;

    // 1. Does the path still name our file?
    const fst = fs.fstatSync(this.fd!);
    const pst = fs.statSync(this.file, { throwIfNoEntry: false });
    if (!pst || pst.ino !== fst.ino || pst.dev !== fst.dev) {
      seen = pst ? 'replaced' : 'deleted';
      detail = pst ? `${path.basename(this.file)} now names another file` : `${path.basename(this.file)} was deleted`;
      oldFd = this.fd!;
      this.fd = openTrail(this.file);
    }
    // The head too (a deleted head is recreated; the log says the rest).
    const hst = fs.statSync(this.headFile, { throwIfNoEntry: false });
    if (!hst || hst.ino !== this.headId.ino || hst.dev !== this.headId.dev) {
      if (this.headFd !== null) fs.closeSync(this.headFd);
      this.openHead();
    }

    // 2. What the file holds now, and what we knew.
    const fd = this.fd!;
    const size = fs.fstatSync(fd).size;
    const tail = readTailLines(fd, size, atOpen ? Math.max(this.memory + 1, 8) : 8);
    let last: ParsedLine | null = null;
    for (let i = tail.lines.length - 1; i >= 0 && !last; i--) last = parseLine(tail.lines[i]!); // i indexes tail.lines;
    const lastLine = tail.lines.at(-1);
    const lastIsWhole = lastLine !== undefined && parseLine(lastLine) !== null;
    const seal = last ? sealOf(last, key) : null;
    const fileSeq = last?.seq ?? 0;
    const fileHash = last?.hash ?? GENESIS_HASH;
    const fragment = tail.fragment;
    const tornOk = fragment.length > 0 && looksTorn(fragment, fileSeq + 1);
    let headState = readHeadFd(this.headFd!);
    // The head names a line we can see: its tag must be that line's (a head rewritten without the key is not).
    if (headState.state === 'ok' && last && seal === 'keyed' && last.seq === headState.head.seq) {
      const h = headState.head;
      if (h.hash !== last.hash || h.tag !== tagOf(key, last)) headState = { state: 'invalid', reason: `its tag does not match entry #${h.seq}` };
    }
    let known = { seq: this.lastSeq, hash: this.lastHash };
    if (headState.state === 'ok' && headState.head.seq > known.seq) known = { seq: headState.head.seq, hash: headState.head.hash };

    // 3. Decide what to write, if anything.
    const gap = (seenNow: GapSeen, why: string): AuditEventDraft => ({
      event: 'gap',
      seen: seenNow,
      ...(fileSeq < known.seq ? { missing: { from: fileSeq + 1, to: known.seq } } : {}),
      ...(known.seq > 0 ? { known } : {}),
      detail: why,
    });
    const foreign = "the last line of the file is not an entry sealed with this data folder's key";
    let event: AuditEventDraft | null = null;
    const nothingThere = !last && fragment.length === 0;
    if (seen) {
      // Nothing lost if the new file carries on from what we knew (another process of ours may
      // already have reopened it and said so), or if there was never anything to lose.
      const carriesOn = seal === 'keyed' && lastIsWhole && fileSeq >= known.seq && (fileSeq > known.seq || fileHash === known.hash);
      if (carriesOn || (known.seq === 0 && nothingThere)) seen = undefined;
      else event = gap(seen, detail!);
    }
    if (!event && headState.state === 'invalid' && (known.seq > 0 || !nothingThere)) {
      event = gap('head-altered', `${path.basename(this.headFile)} could not be trusted: ${headState.reason}`);
    }
    if (!event && known.seq === 0) {
      // Neither we nor the head know of an entry: a fresh log, the first keyed open of a log written
      // before the keyed chain, or a log whose head was deleted.
      if (last && !lastIsWhole) event = gap('foreign-line', foreign);
      else if (seal === 'keyed' && headState.state === 'missing') {
        event = gap('head-missing', `${path.basename(this.headFile)} was missing: a cut tail before this line cannot be ruled out`);
      } else if (seal === 'plain' && headState.state === 'missing') event = { event: 'keyed-chain-start', legacyEntries: fileSeq };
      else if (last && seal !== 'keyed') event = gap('foreign-line', foreign);
    } else if (!event) {
      if (!last && !existedAtOpen) event = gap('deleted', `${path.basename(this.file)} did not exist`);
      else if (!last) event = gap(size === 0 ? 'emptied' : 'replaced', size === 0 ? 'the file was emptied' : 'the file holds no entry of ours');
      else if (fileSeq < known.seq) event = gap('cut-tail', `the file ends at entry #${fileSeq}`);
      else if (fileSeq === known.seq && fileHash !== known.hash) event = gap('replaced', `entry #${fileSeq} in the file is not the one last written`);
      else if (seal !== 'keyed' || !lastIsWhole) event = gap('foreign-line', foreign);
    }
    if (!event && fragment.length > 0) {
      event = tornOk ? { event: 'torn-tail-recovered' } : gap('foreign-line', 'the file ended in a fragment that is not the start of an entry');
    }

    // 4. A deleted file that only we still hold: save what we have of it before letting go.
    if (oldFd !== null) {
      if (event && event.event === 'gap') {
        const recoveredTo = this.salvage(oldFd);
        if (recoveredTo) event.recoveredTo = recoveredTo;
        else if (seen === 'replaced' && fs.fstatSync(oldFd).nlink > 0) event.detail += '; the old file still exists under another name';
      }
      fs.closeSync(oldFd);
    }

    // 5. Write it.
    this.lastSeq = fileSeq;
    this.lastHash = fileHash;
    this.lastTag = last ? tagOf(key, last) : GENESIS_HASH;
    let text = fragment.length > 0 ? '\n' : '';
    if (event) {
      const seq = Math.max(fileSeq, known.seq) + 1;
      const fields = { seq, ts: new Date().toISOString(), ...event, pid: process.pid, ...(tornOk ? { torn: true as const } : {}), prev: fileHash };
      const sealed = sealLine(key, fileHash, JSON.stringify(fields));
      text += sealed.line;
      this.events.push({ ...fields, hash: sealed.hash });
      this.lastSeq = seq;
      this.lastHash = sealed.hash;
      this.lastTag = sealed.tag;
    }
    if (text) fs.writeSync(fd, text);
    const after = fs.fstatSync(fd);
    this.knownSize = after.size;
    this.fileId = { ino: after.ino, dev: after.dev };
    this.lastPathCheck = Date.now();
    this.writeHead();

    if (atOpen) {
      const entries: AuditEntry[] = [];
      for (const line of tail.lines) {
        const p = parseLine(line);
        if (p && !p.event) entries.push(p.obj as unknown as AuditEntry);
      }
      this.recent = entries.slice(-this.memory);
    }
  }

  /** Copies an unlinked file's content (reachable only through our descriptor) beside the log. */
  private salvage(oldFd: number): string | undefined {
    const st = fs.fstatSync(oldFd);
    if (st.nlink > 0 || st.size === 0) return undefined;
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    const base = path.basename(this.file).replace(/\.jsonl$/, '');
    const name = `${base}.recovered-${stamp}-${process.pid}.jsonl`;
    const target = path.join(path.dirname(this.file), name);
    const out = fs.openSync(target, 'wx', 0o600);
    try {
      const buf = Buffer.alloc(1 << 20);
      let pos = 0;
      for (;;) {
        const n = fs.readSync(oldFd, buf, 0, buf.length, pos);
        if (n <= 0) break;
        fs.writeSync(out, buf, 0, n);
        pos += n;
      }
    } finally {
      fs.closeSync(out);
    }
    // Its own head, so the saved copy can be verified on its own.
    if (st.size === this.knownSize) {
      const headFile = headPathFor(target);
      const head: AuditHead = { seq: this.lastSeq, size: this.knownSize, hash: this.lastHash, tag: this.lastTag };
      fs.writeFileSync(headFile, encodeHead(head, Buffer.alloc(HEAD_SIZE)), { mode: 0o600, flag: 'wx' });
    }
    return name;
  }
}

/** Reads up to `count` last whole lines of a file from its end, and any fragment after the last newline. */
function readTailLines(fd: number, size: number, count: number): { lines: string[]; fragment: string } {
  if (size === 0) return { lines: [], fragment: '' };
  const chunk = 64 * 1024;
  let pos = size;
  const parts: Buffer[] = [];
  let newlines = 0;
  while (pos > 0 && newlines <= count) {
    const len = Math.min(chunk, pos);
    pos -= len;
    const part = Buffer.alloc(len);
    fs.readSync(fd, part, 0, len, pos);
    parts.push(part);
    for (const b of part) if (b === 10) newlines++;
  }
  const text = Buffer.concat(parts.reverse()).toString('utf8');
  const lines = text.split('\n');
  const fragment = lines.pop()!; // '' when the file ends with a newline
  if (pos > 0) lines.shift(); // the first line may be partial
  return { lines: lines.slice(-count), fragment };
}

/**
 * The newest lines of an audit file (entries and events), read from its end without creating or
 * locking anything: what `memo audit tail` shows. `tool` keeps only that tool's entries.
 */
export function readAuditFileTail(file: string, count: number, tool?: string): AuditLine[] {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  try {
    const size = fs.fstatSync(fd).size;
    // Filtering by tool may need the whole file; otherwise the tail is enough.
    const { lines } = readTailLines(fd, size, tool ? Number.MAX_SAFE_INTEGER : count);
    const out: AuditLine[] = [];
    for (const line of lines) {
      const p = parseLine(line);
      if (!p) continue;
      const entry = p.obj as unknown as AuditLine;
      if (tool && (isAuditEvent(entry) || entry.tool !== tool)) continue;
      out.push(entry);
    }
    return out.slice(-count);
  } finally {
    fs.closeSync(fd);
  }
}
