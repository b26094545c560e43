/**
 * The append-only audit trail on a file (`data/agent-audit.jsonl`): AuditLog seals calls' records and
 * the kernel's events after the chain's head and writes them before the call returns (the file itself,
 * its head checkpoint and lock: audit-file.ts), and remembers the lines it could not write, refusing
 * calls (guard) until the `lines-lost` event naming them is on the trail.
 */
import { sealLine } from './audit-chain.js';
import { AuditTrailFile } from './audit-file.js';
import { auditRawMatches, forEachAuditFileLine, searchAuditFile, type AuditSearchPage, type AuditSearchQuery } from './audit-search.js';
import { adminFields, writeFailureCause, type AdminRecord, type AuditEntry, type AuditEvent, type AuditFilter, type AuditRecord } from './audit-record.js';
import type { LostLines } from './audit-verify.js';
import { MemoError } from '../errors.js';

/** How many lost calls a file trail's `lines-lost` event names one by one; the rest are counted. */
const MAX_LOST_LISTED = 100;

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
export class AuditLog extends AuditTrailFile {
  private readonly appended = new Set<(entries: readonly AuditEntry[]) => void>();
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

  override close(): void {
    // Lines lost and not yet named: one last try to name them (else they are only on stderr).
    if (this.lost && this.fd !== null) this.recover();
    super.close();
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

  /** A page of the whole file that `q` asks for (audit-search.ts), read without the lock: only whole lines count. */
  search(q: AuditSearchQuery): Promise<AuditSearchPage> {
    return searchAuditFile(this.file, q);
  }

  /** Every line of the file that `q` selects, oldest first, as written. */
  lines(q: AuditSearchQuery, fn: (raw: string) => void | Promise<void>): Promise<void> {
    return forEachAuditFileLine(this.file, (_pos, raw) => (auditRawMatches(raw, q) ? fn(raw) : undefined));
  }

  /** The newest entries (at most the in-memory window), oldest first. Events are not included. */
  tail(filter: AuditFilter = {}): AuditEntry[] {
    let list = this.recent.slice(-this.memory);
    if (filter.tool) list = list.filter((e) => e.tool === filter.tool);
    if (filter.limit !== undefined) list = list.slice(-filter.limit);
    return list;
  }
}
