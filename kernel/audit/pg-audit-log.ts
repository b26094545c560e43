/**
 * The audit trail on PostgreSQL: PgAuditLog, this instance's hash chain in the shared database. Here:
 * opening the chain, queueing lines and committing them in groups, sealing them after the chain's
 * head, taking the chain up again when it is not the way this instance left it (a `gap` event), and
 * the in-memory tail. Its worker thread and guard are in pg-audit-link.ts, the lines it could not
 * write in pg-audit-lost.ts.
 */
import type { KeyObject } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { DatabaseUrl } from '../storage/database-url.js';
import {
  encodeHead,
  GENESIS_HASH,
  HEAD_SIZE,
  KEY_FILE,
  loadOrCreateKey,
  parseLine,
  readHeadFile,
  sealLine,
  sealOf,
  tagOf,
  type AuditHead,
} from './audit-chain.js';
import { adminFields, type AdminRecord, type AuditEntry, type AuditEvent, type AuditFilter, type AuditRecord, type GapSeen } from './audit-record.js';
import { auditRawMatches, type AuditSearchPage, type AuditSearchQuery } from './audit-search.js';
import { PgAuditLink } from './pg-audit-link.js';
import { forEachAuditDatabaseLine, searchAuditDatabase } from './pg-audit-read.js';
import { lostEvent, PgLostRecord, type Draft, type EventFields, type Lost } from './pg-audit-lost.js';
import { AUDIT_SCHEMA, auditKeyId, LOCAL_HEAD_FILE } from './pg-audit-schema.js';
import type { AppendValue, AuditReply, ChainState, OpenValue, StoredRow } from './pg-audit-worker.js';

export interface PgAuditLogOptions {
  /** How many entries (all instances) to keep in memory for tail(). Default 1000. */
  memory?: number;
  /**
   * How long a statement (and, at most 5 s, a connection attempt) may take before the database counts
   * as unreachable: the line is not written and calls are refused until it answers. Default 10 s.
   */
  timeoutMs?: number;
}

type Line = AuditEntry | AuditEvent;

/** Lines handed to append, appendBatch or note, waiting for their commit. */
interface Waiter {
  drafts: readonly Draft[];
  resolve: (lines: Line[]) => void;
  reject: (err: unknown) => void;
}

/** A batch sealed after the chain's head, ready to commit. */
interface Sealed {
  rows: Array<{ seq: number; ts: string; prev: string; hash: string; line: string }>;
  lines: Line[];
  seq: number;
  prev: string;
  tag: string;
  /** The lost lines its `lines-lost` event names (cleared once it is committed). */
  lost: Lost | null;
}

/** How long a person's change waits for a database marked unusable to answer again before it is refused (its line first: admin). */
const ADMIN_WAIT_MS = 10_000;

/** How often a batch is sealed again after another writer of the same chain got there first, before giving up. */
const MAX_TRIES = 20;

/**
 * The audit trail on PostgreSQL (`MEMO_DATABASE_URL`): this instance's own hash chain in schema
 * `memo_audit`, beside the chains of the other instances sharing the database. It keeps the file
 * trail's promises (audit-log.ts): every line is sealed with the data folder's `audit.key` (the
 * same keyed HMAC chain and head tag), a call's line is committed before the call returns (append
 * answers with a promise, resolved when the worker thread that runs the transaction reports the
 * commit; the pipeline waits for it, the event loop does not), lines arriving while a commit is in
 * flight wait for it and go together in the next one (one INSERT in one transaction), and the chain
 * never forks: a batch commits only if the chain's head row (locked FOR UPDATE) is still the one it
 * was sealed after, else it is sealed again after the newer head (another process with the same
 * instance id, e.g. a CLI call beside `memo serve`); the table's unique (instance, seq) and
 * (instance, prev) refuse a second successor whatever happens.
 *
 * Tamper evidence against whoever can write the database but not the data folder: the key stays in
 * the data folder (the database only holds its id), so rows cannot be rewritten so that they
 * verify; the chain's head row carries the head tag, and `data/audit-chain.head` keeps this
 * instance's own copy of its head, so a cut tail or a deleted chain shows too. When the chain is not
 * the way this instance left it, a chained `gap` event says what it found, as on files.
 *
 * While the database cannot be reached (refused, or no answer within `timeoutMs`: a hung server
 * counts as unreachable, and its stuck connection is dropped), `append`'s promise rejects (the
 * pipeline logs the lost line and says so in the call's summary) and `guard` refuses every call
 * before it runs; any lost line trips the guard so. The worker probes the server every 2 s and calls
 * go through again as soon as it answers. The lines lost meanwhile are remembered (in memory, and in a file of this process's own in the data folder for the next start) and,
 * once the database can be used again, a chained `gap` event (`seen: 'lines-lost'`) names them first
 * in the next batch (see lostEvent). The guard's question to a database marked unusable waits
 * on this thread at most PROBE_WAIT_MS (PROBE_HUNG_WAIT_MS once a question went unanswered), and not
 * at all while one is in flight; opening the chain while the kernel is built waits (see call).
 */
export class PgAuditLog extends PgAuditLink {
  readonly instance: string;
  readonly keyFile: string;
  readonly localHeadFile: string;
  /** Events this instance wrote (gaps seen, agent access). */
  readonly events: AuditEvent[] = [];

  private key: KeyObject | null = null;
  private lastSeq = 0;
  private lastHash = GENESIS_HASH;
  private lastTag = GENESIS_HASH;
  /** A gap event waiting to be written first in the next batch. */
  private pendingGap: EventFields | null = null;
  /** This log's record of the lines it could not write (pg-audit-lost.ts), and its file. */
  private readonly lostRecord: PgLostRecord;
  readonly lostFile: string;
  private localHeadFd: number | null = null;
  private readonly headBuf = Buffer.alloc(HEAD_SIZE);
  private recent: AuditEntry[] = [];
  /** Lines waiting for the commit in flight to end: they go together in the next one. */
  private waiting: Waiter[] = [];
  /** True while a commit is in flight (drain runs); `drained` settles when it stops. */
  private draining = false;
  private drained: Promise<void> = Promise.resolve();
  /** How many batches this instance has committed (one statement each). */
  private commits = 0;
  private seen = new Set<string>();
  private readonly appended = new Set<(entries: readonly AuditEntry[]) => void>();
  private readonly memory: number;

  constructor(
    url: DatabaseUrl,
    readonly dataDir: string,
    instance: string,
    options: PgAuditLogOptions = {},
  ) {
    super(url, options.timeoutMs ?? 10_000);
    this.instance = instance;
    this.memory = options.memory ?? 1000;
    this.keyFile = path.join(dataDir, KEY_FILE);
    this.localHeadFile = path.join(dataDir, LOCAL_HEAD_FILE);
    this.lostRecord = new PgLostRecord(dataDir, instance);
    this.lostFile = this.lostRecord.lostFile;
  }

  /** Opens the worker and the chain (made on first use), and loads the newest entries of every chain. */
  open(): void {
    if (this.worker) return;
    fs.mkdirSync(this.dataDir, { recursive: true });
    this.key = loadOrCreateKey(this.keyFile).key;
    this.keyId = auditKeyId(this.key);
    this.startWorker(this.instance, this.memory);
    this.lostRecord.opened();
    try {
      this.openChain();
    } catch (err) {
      // A server that cannot be used yet (down, restarting, refusing the connection) does not stop
      // the kernel: calls are refused until the chain opens, which every refused call tries again.
      if ((err as { unreachable?: boolean }).unreachable) return;
      void this.stop();
      throw err;
    }
  }

  /** Makes the chain (and the schema) on first use, checks its key, and continues from its head. */
  private openChain(): void {
    let opened: OpenValue;
    try {
      opened = this.call<OpenValue>({ op: 'open', keyId: this.keyId, genesis: GENESIS_HASH });
    } catch (err) {
      throw this.openFailure(err);
    }
    this.opened(opened);
    // A gap found at open, or lines an earlier run lost, are written at once (the next calls' lines follow in the same queue).
    if (this.pendingGap || this.lostRecord.lost) this.enqueue([]).catch(() => {});
    else this.writeLocalHead();
  }

  /** openChain without blocking this thread (from a commit that found the chain deleted); a gap found goes first in the batch being sealed. */
  private async openChainAsync(): Promise<void> {
    let opened: OpenValue;
    try {
      opened = await this.request<OpenValue>({ op: 'open', keyId: this.keyId, genesis: GENESIS_HASH });
    } catch (err) {
      throw this.openFailure(err);
    }
    this.opened(opened);
  }

  private openFailure(err: unknown): Error {
    return Object.assign(
      new Error(`The audit trail cannot be opened in ${this.url.display} (schema "${AUDIT_SCHEMA}"): ${(err as Error).message}`, { cause: err }),
      { unreachable: (err as { unreachable?: boolean }).unreachable === true },
    );
  }

  private opened(opened: OpenValue): void {
    if (opened.chain.keyId !== this.keyId) {
      throw new Error(
        `The audit chain of instance "${this.instance}" in ${this.url.display} is sealed with the key ${opened.chain.keyId}, not with ${this.keyFile} (key ${this.keyId}): ` +
          `copy the audit.key this instance used (every instance sharing the database should hold the same one), or give this data folder its own MEMO_INSTANCE_ID.`,
      );
    }
    this.localHeadFd ??= fs.openSync(this.localHeadFile, fs.constants.O_RDWR | fs.constants.O_CREAT, 0o600);
    this.chainOpen = true;
    this.adopt(opened.chain, true);
    this.received(opened.recent, false);
  }

  /** Resolves with the entry once it is committed (rejects when it could not be written). */
  async append(record: AuditRecord): Promise<AuditEntry> {
    return (await this.enqueue([{ kind: 'entry', record }]))[0] as AuditEntry;
  }

  /** Appends several records in one transaction (the pipeline's group commit); resolves once they are committed. */
  async appendBatch(records: readonly AuditRecord[]): Promise<AuditEntry[]> {
    return (await this.enqueue(records.map((record) => ({ kind: 'entry', record })))) as AuditEntry[];
  }

  /**
   * An `agent-access` event (see AuditLog.note), chained and sealed like an entry; resolves once it
   * is committed. A caller that does not wait still leaves no unhandled rejection: a failed write
   * marks the database unusable, so the guard refuses the next calls.
   */
  note(event: { event: 'agent-access'; conversationId: string; backend: string; version?: string; access: 'vault' | 'computer' }): Promise<AuditEvent> {
    const fields = {
      event: event.event,
      pid: process.pid,
      conversationId: String(event.conversationId).slice(0, 100),
      backend: String(event.backend).slice(0, 100),
      ...(event.version ? { version: String(event.version).slice(0, 100) } : {}),
      access: event.access,
    };
    const written = this.enqueue([{ kind: 'event', fields }]).then((lines) => lines[0] as AuditEvent);
    written.catch(() => {});
    return written;
  }

  /**
   * An `admin` event (see AuditLog.admin): a person's change, who made it and what changed;
   * resolves once it is committed. The change is made only after that: one whose line cannot be
   * committed is not made.
   */
  async admin(record: AdminRecord): Promise<AuditEvent> {
    const fields = { ...adminFields(record), pid: process.pid } as EventFields;
    // A person's change is rare and waits for its line: a database marked unusable (a start while
    // it was away, a blip) is asked again first, without blocking this thread, for up to ADMIN_WAIT_MS.
    if (!this.worker) this.open();
    if (!(await this.usable(ADMIN_WAIT_MS))) throw this.downError();
    return (await this.enqueue([{ kind: 'event', fields }]))[0] as AuditEvent;
  }

  /** How many batches this instance has committed, each one statement and one transaction (group commit). */
  get committedBatches(): number {
    return this.commits;
  }

  /** Hears every batch of entries: this process's, right after commit, and the other instances' as they arrive. */
  onAppend(listener: (entries: readonly AuditEntry[]) => void): () => void {
    this.appended.add(listener);
    return () => void this.appended.delete(listener);
  }

  /** A page of every instance's chain that `q` asks for (audit-search.ts), read in one snapshot. */
  search(q: AuditSearchQuery): Promise<AuditSearchPage> {
    return searchAuditDatabase(this.url, q);
  }

  /** Every line of the chains that `q` selects, oldest first, as written. */
  lines(q: AuditSearchQuery, fn: (raw: string) => void | Promise<void>): Promise<void> {
    return forEachAuditDatabaseLine(this.url, q, (_pos, raw) => (auditRawMatches(raw, q) ? fn(raw) : undefined));
  }

  /** The newest entries of all instances (at most the in-memory window), oldest first. */
  tail(filter: AuditFilter = {}): AuditEntry[] {
    let list = this.recent.slice(-this.memory);
    if (filter.tool) list = list.filter((e) => e.tool === filter.tool);
    if (filter.limit !== undefined) list = list.slice(-filter.limit);
    return list;
  }

  /** Waits for the lines handed over (in flight and queued) to be committed, then ends the connections. */
  async close(): Promise<void> {
    if (!this.worker) return;
    while (this.draining) await this.drained;
    try {
      await this.request({ op: 'close' }, 5000);
    } catch {
      // Closing: the connections end with the thread anyway.
    }
    await this.stop();
  }

  private async stop(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    this.port?.close();
    this.port = null;
    this.abandon();
    if (this.localHeadFd !== null) fs.closeSync(this.localHeadFd);
    this.localHeadFd = null;
    // Its record stays (lines still lost): the next start of the instance takes it over.
    this.lostRecord.closed();
    await worker?.terminate();
  }

  /** The guard's question answered: the chain opens if it was not, and calls go through again if it answered. */
  protected override probed(r: AuditReply, { op, write }: { op: 'ping' | 'open'; write: boolean }): void {
    this.probe = null;
    if (!r.ok) {
      const err = this.failure(r);
      if (!r.unreachable) this.reason = this.why(err);
      return;
    }
    if (op === 'open') {
      try {
        this.opened(r.value as OpenValue);
      } catch (err) {
        this.reason = (err as Error).message;
        return;
      }
    }
    if (write) this.writeRefused = false;
    Atomics.store(this.signal, 1, 0);
    // The database answers again: what was lost meanwhile goes into the chain at once (and with the next line if this fails).
    if (this.pendingGap || this.lostRecord.lost) this.enqueue([]).catch(() => {});
    else if (op === 'open') this.writeLocalHead();
  }

  /**
   * Queues `drafts` for the next commit and resolves with their sealed lines once it is done. One
   * commit is in flight at a time: lines handed over meanwhile wait and go together in the next
   * one (real group commit: the more calls at once, the more lines per statement).
   */
  private enqueue(drafts: readonly Draft[]): Promise<Line[]> {
    return new Promise<Line[]>((resolve, reject) => {
      this.waiting.push({ drafts, resolve, reject });
      if (this.draining) return;
      this.draining = true;
      this.drained = this.drain();
    });
  }

  private async drain(): Promise<void> {
    try {
      while (this.waiting.length > 0) {
        const group = this.waiting;
        this.waiting = [];
        const drafts = group.length === 1 ? group[0]!.drafts : group.flatMap((w) => w.drafts);
        try {
          const lines = await this.commit(drafts);
          // A gap event written first belongs to nobody's call.
          let at = lines.length - drafts.length;
          for (const w of group) {
            w.resolve(lines.slice(at, at + w.drafts.length));
            at += w.drafts.length;
          }
        } catch (err) {
          // Whatever kept these lines out of the database, no further call runs unaudited: the guard
          // refuses calls until the database answers again (the worker's probe, or the guard's).
          this.markDown(err);
          this.lostRecord.noteLost(drafts, err);
          for (const w of group) w.reject(err);
        }
      }
    } finally {
      this.draining = false;
    }
  }

  /** Seals `drafts` after the chain's head and commits them; sealed again after a newer head when another writer got there first. */
  private async commit(drafts: readonly Draft[]): Promise<Line[]> {
    if (!this.worker) this.open();
    // A database marked unusable is not asked again for each line (a hung server would hold every
    // refused call's line, and so the refusal, until its timeout): the line is lost at once.
    if (this.worker && (Atomics.load(this.signal, 1) === 1 || this.writeRefused)) throw this.downError();
    if (!this.chainOpen) await this.openChainAsync();
    for (let attempt = 1; ; attempt++) {
      const sealed = this.seal(drafts);
      if (!sealed) return [];
      let result: AppendValue;
      try {
        result = await this.request<AppendValue>({
          op: 'append',
          expect: { seq: this.lastSeq, hash: this.lastHash },
          rows: sealed.rows,
          head: { seq: sealed.seq, hash: sealed.prev, tag: sealed.tag },
        });
      } catch (err) {
        // Sent but not answered: the batch may still commit, and would then end with this hash.
        if (err && typeof err === 'object' && /may not have been written/.test((err as Error).message)) Object.assign(err, { sealedHash: sealed.prev });
        throw err;
      }
      if (result.committed) return this.committed(sealed);
      // A chain deleted from the database is made again; its first line is the gap event saying so.
      if (result.chain) this.adopt(result.chain, false);
      else await this.openChainAsync();
      if (attempt >= MAX_TRIES) {
        throw new Error(
          `the audit chain of instance "${this.instance}" kept moving while ${records(drafts)} waited (${MAX_TRIES} tries): another process with the same instance id writes it without pause`,
        );
      }
    }
  }

  /** Seals a waiting gap event and a `lines-lost` event (first) and `drafts` after the chain's head as this instance knows it. */
  private seal(drafts: readonly Draft[]): Sealed | null {
    const key = this.key!;
    const all: Draft[] = [];
    if (this.pendingGap) all.push({ kind: 'event', fields: this.pendingGap });
    const lost = this.lostRecord.lost;
    if (lost) all.push({ kind: 'event', fields: lostEvent(lost) });
    all.push(...drafts);
    if (all.length === 0) return null;
    const rows: Sealed['rows'] = [];
    const lines: Line[] = [];
    let prev = this.lastHash;
    let seq = this.lastSeq;
    let tag = this.lastTag;
    for (const d of all) {
      const gapSeq = d.kind === 'event' && typeof d.fields.seq === 'number' ? d.fields.seq : undefined;
      seq = gapSeq ?? seq + 1;
      let obj: Record<string, unknown>;
      if (d.kind === 'entry') obj = { seq, instance: this.instance, ...d.record, prev };
      else {
        const { seq: _s, ...rest } = d.fields;
        obj = { seq, ts: new Date().toISOString(), instance: this.instance, ...rest, prev };
      }
      const line = sealLine(key, prev, JSON.stringify(obj));
      const ts = typeof obj.ts === 'string' ? obj.ts : new Date().toISOString();
      rows.push({ seq, ts, prev, hash: line.hash, line: line.line.slice(0, -1) });
      lines.push({ ...obj, hash: line.hash } as unknown as Line);
      prev = line.hash;
      tag = line.tag;
    }
    return { rows, lines, seq, prev, tag, lost };
  }

  /** The batch is in the database: the head moves on, and the tail and change feed hear its entries. */
  private committed(sealed: Sealed): Line[] {
    this.commits++;
    this.lastSeq = sealed.seq;
    this.lastHash = sealed.prev;
    this.lastTag = sealed.tag;
    this.pendingGap = null;
    const record = this.lostRecord;
    if (sealed.lost && record.lost === sealed.lost) {
      record.lost = null;
      record.unconfirmed = null;
      record.saveLost();
    }
    this.writeLocalHead();
    const entries: AuditEntry[] = [];
    for (const l of sealed.lines) {
      if ('event' in l) this.events.push(l);
      else entries.push(l);
    }
    if (entries.length) this.remember(entries);
    return sealed.lines;
  }

  /**
   * Continues the chain from what the database holds. Another writer of this chain (a CLI beside
   * `memo serve`) is normal and silent; anything else (the last row not sealed with our key, rows
   * cut, the head altered, the chain behind this instance's own head file) queues a `gap` event.
   */
  private adopt(chain: ChainState, atOpen: boolean): void {
    const key = this.key!;
    const last = chain.last ? parseLine(chain.last.line) : null;
    const lastOk = last !== null && last.seq === chain.last!.seq && sealOf(last, key) === 'keyed' && last.obj.instance === this.instance;
    let known = atOpen ? this.localHead() : { seq: this.lastSeq, hash: this.lastHash };
    if (chain.head.seq > known.seq) known = { seq: chain.head.seq, hash: chain.head.hash };
    const lastSeq = chain.last?.seq ?? 0;
    let seen: GapSeen | null = null;
    let detail = '';
    if (chain.last && !lastOk) {
      seen = 'foreign-line';
      detail = `entry #${lastSeq} of the chain in the database is not sealed with this data folder's key`;
    } else if (lastSeq < known.seq) {
      seen = lastSeq === 0 ? 'emptied' : 'cut-tail';
      detail = lastSeq === 0 ? 'the chain in the database holds no entries' : `the chain in the database ends at entry #${lastSeq}`;
    } else if (lastSeq === known.seq && last && last.hash !== known.hash && known.seq > 0) {
      seen = 'replaced';
      detail = `entry #${lastSeq} in the database is not the one last written`;
    } else if (last && (chain.head.seq !== lastSeq || chain.head.hash !== last.hash || chain.head.tag !== tagOf(key, last))) {
      seen = 'head-altered';
      detail = `the chain's head row does not match its entry #${lastSeq}`;
    }
    const unconfirmed = this.lostRecord.unconfirmed;
    if (unconfirmed && lastOk && chain.last!.hash === unconfirmed.hash) this.lostRecord.confirmed(unconfirmed);
    this.lastSeq = lastSeq;
    // The chain goes on from the last row whatever it is (the next line links to the hash it is stored
    // under), so the database's one-successor rule holds and verify points at the row itself.
    this.lastHash = chain.last?.hash ?? GENESIS_HASH;
    this.lastTag = last && lastOk ? tagOf(key, last) : GENESIS_HASH;
    if (!seen) {
      // A gap seen earlier and not yet written (another writer got in first) still goes in, after its lines.
      if (this.pendingGap) this.pendingGap.seq = Math.max(lastSeq + 1, Number(this.pendingGap.seq));
      return;
    }
    this.pendingGap = {
      event: 'gap',
      seq: Math.max(lastSeq, known.seq) + 1,
      pid: process.pid,
      seen,
      ...(lastSeq < known.seq ? { missing: { from: lastSeq + 1, to: known.seq } } : {}),
      ...(known.seq > 0 ? { known } : {}),
      detail,
    };
  }

  /** This instance's own record of its head (`data/audit-chain.head`), unless it cannot be trusted. */
  private localHead(): { seq: number; hash: string } {
    const h = readHeadFile(this.localHeadFile);
    return h.state === 'ok' ? { seq: h.head.seq, hash: h.head.hash } : { seq: 0, hash: GENESIS_HASH };
  }

  private writeLocalHead(): void {
    if (this.localHeadFd === null) return;
    const head: AuditHead = { seq: this.lastSeq, size: 0, hash: this.lastHash, tag: this.lastTag };
    fs.writeSync(this.localHeadFd, encodeHead(head, this.headBuf), 0, HEAD_SIZE, 0);
  }

  /** Rows from the database (other writers, or the newest at open): entries join the tail, events do not. */
  protected override received(rows: readonly StoredRow[], tell = true): void {
    const fresh: AuditEntry[] = [];
    for (const r of rows) {
      if (this.seen.has(`${r.instance}#${r.seq}`)) continue;
      const p = parseLine(r.line);
      if (!p || p.event) continue;
      fresh.push(p.obj as unknown as AuditEntry);
    }
    if (fresh.length === 0) return;
    this.remember(fresh, tell);
  }

  private remember(all: AuditEntry[], tell = true): void {
    // This process's own entries may come back from the change feed before the commit's answer: each is kept (and told) once.
    const entries = all.filter((e) => !this.seen.has(`${e.instance ?? this.instance}#${e.seq}`));
    if (entries.length === 0) return;
    const before = this.recent.at(-1)?.ts;
    for (const e of entries) {
      this.recent.push(e);
      this.seen.add(`${e.instance ?? this.instance}#${e.seq}`);
    }
    // Other instances' entries arrive a little late: keep the window in time order.
    if (before !== undefined && entries.some((e) => e.ts < before)) this.recent.sort((a, b) => (a.ts < b.ts ? -1 : a.ts > b.ts ? 1 : 0));
    if (this.recent.length > this.memory * 2) {
      this.recent.splice(0, this.recent.length - this.memory);
      this.seen = new Set(this.recent.map((e) => `${e.instance ?? this.instance}#${e.seq}`));
    }
    if (!tell) return;
    for (const listener of this.appended) {
      try {
        listener(entries);
      } catch {
        // A watcher's failure never turns a written line into a failed append.
      }
    }
  }
}

function records(drafts: readonly Draft[]): string {
  return drafts.length === 1 ? 'one line' : `${drafts.length} lines`;
}
