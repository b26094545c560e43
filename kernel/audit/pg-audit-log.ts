import type { KeyObject } from 'node:crypto';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import { MemoError } from '../errors.js';
import { connectionLossReason } from '../storage/connection-loss.js';
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
import { adminFields, type AdminRecord, type AuditEntry, type AuditEvent, type AuditFilter, type AuditRecord, type GapSeen } from './audit-log.js';
import { AUDIT_CHANNEL, AUDIT_LOCK, AUDIT_MIGRATIONS, AUDIT_SCHEMA, auditKeyId, LOCAL_HEAD_FILE } from './pg-audit-schema.js';
import {
  auditWorkerMain,
  type AppendValue,
  type AuditReply,
  type AuditRequest,
  type AuditWorkerData,
  type ChainState,
  type OpenValue,
  type StoredRow,
} from './pg-audit-worker.js';

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
type Request = DistributiveOmit<AuditRequest, 'id'>;

export interface PgAuditLogOptions {
  /** How many entries (all instances) to keep in memory for tail(). Default 1000. */
  memory?: number;
  /**
   * How long a statement (and, at most 5 s, a connection attempt) may take before the database counts
   * as unreachable: the line is not written and calls are refused until it answers. Default 10 s.
   */
  timeoutMs?: number;
}

/** A line to seal: its fields after `seq` (and the instance), before `prev`. */
type EventFields = Record<string, unknown> & { event: AuditEvent['event'] };
type Draft = { kind: 'entry'; record: AuditRecord } | { kind: 'event'; fields: EventFields };
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

/**
 * Lines that could not be written (the database was down, hung or refused them), kept until a
 * chained `lines-lost` gap event naming them is committed: calls by id and tool (never their
 * arguments), at most MAX_LOST_LISTED of them, then counted. Kept in memory and in a file of this
 * process's own in the data folder (lostFileName), so a kernel stopped or killed before the database
 * came back has them named by the next start of the instance (adoptLost).
 */
interface Lost {
  /** Lines this process itself lost (the rest were read back from the records of earlier runs). */
  mine: number;
  /** Earlier runs of this instance whose records were read back at start: their pids. */
  earlier: number[];
  /** Records of earlier runs that could not be read: which, and why (how many lines they held is not known). */
  unreadable: string[];
  count: number;
  calls: Array<{ id: string; tool: string; outcome: 'ok' | 'error' }>;
  /** Kernel events (not calls) among them, by kind. */
  events: number;
  /** When the first and the last of them were lost (this clock). */
  from: string;
  to: string;
  /** Lines whose statement timed out: a hung server may still have committed them when it woke up. */
  unconfirmed: number;
}

const emptyLost = (now: string): Lost => ({ mine: 0, earlier: [], unreadable: [], count: 0, calls: [], events: 0, from: now, to: now, unconfirmed: 0 });

/** A batch whose statement got no answer (a hung server may have committed it): its last hash, its calls, how many lines. */
interface Unconfirmed {
  hash: string;
  calls: Set<string>;
  lines: number;
}

/**
 * The lost-lines record of one PgAuditLog: `audit-lost.<pid>-<n>.json` (n counts the logs this process
 * opened), `.claim-<k>` added while it takes over the record of a run that ended. Each process writes
 * and removes only its own files, so a CLI call beside `memo serve` never overwrites serve's record.
 */
const LOST_NAME = /^audit-lost\.(\d+)-(\d+)(?:\.claim-\d+)?\.json(\.tmp)?$/;
const lostFileName = (pid: number, n: number, claim?: number) => `audit-lost.${pid}-${n}${claim === undefined ? '' : `.claim-${claim}`}.json`;
/** Lost-lines files of the logs open in this process (by owner `<pid>-<n>`): never taken over. */
const lostOwnersOpen = new Set<string>();
let lostLogs = 0;

/** Whether the process that owns a lost-lines file still runs (its own logs: whether that log is open). */
function ownerRuns(pid: number, owner: string): boolean {
  if (pid === process.pid) return lostOwnersOpen.has(owner);
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/** How many lost calls a `lines-lost` gap event names one by one; the rest are counted. */
const MAX_LOST_LISTED = 100;
/** How long a person's change waits for a database marked unusable to answer again before it is refused (its line first: admin). */
const ADMIN_WAIT_MS = 10_000;

/** A request to the worker answered asynchronously (see request). */
interface InFlight {
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
  timer: NodeJS.Timeout;
}

/** How often a batch is sealed again after another writer of the same chain got there first, before giving up. */
const MAX_TRIES = 20;
/**
 * How long the guard waits for its question to a database marked unusable: a server that is back
 * answers well within PROBE_WAIT_MS (the first call after a restart goes through). Once a question
 * was left unanswered (a server that accepts connections but never answers: hung, stopped), the
 * next ones wait PROBE_HUNG_WAIT_MS at most, and calls are refused at once while one is in flight.
 */
const PROBE_WAIT_MS = 500;
const PROBE_HUNG_WAIT_MS = 20;
/** How much longer than the database's own timeout this thread waits for the worker's answer (connection attempt included). */
const WORKER_GRACE_MS = 6000;

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
export class PgAuditLog {
  readonly instance: string;
  readonly keyFile: string;
  readonly localHeadFile: string;
  /** Refuses calls while the database cannot be reached (their lines could not be written). */
  readonly guard: { check(): void };
  /** Events this instance wrote (gaps seen, agent access). */
  readonly events: AuditEvent[] = [];

  private key: KeyObject | null = null;
  private keyId = '';
  private worker: Worker | null = null;
  private port: MessagePort | null = null;
  private readonly signal = new Int32Array(new SharedArrayBuffer(8));
  private nextId = 0;
  /** The guard's question to a database marked unusable, still in flight (its answer is handled in answered). */
  private probe: { id: number; op: 'ping' | 'open'; write: boolean } | null = null;
  /**
   * A line was refused by a database that answers (no room, read only, no permission): calls are
   * refused until a row can be written again (the guard's question then writes one and rolls it back).
   */
  private writeRefused = false;
  /** The guard's last question was left unanswered within its wait (the server hangs): the next ones wait less. */
  private probeHung = false;
  /** Set when the worker thread is gone (it failed, or was stopped). */
  private workerGone: string | undefined;
  /** False until the chain has been opened in the database (the server may be away at start). */
  private chainOpen = false;
  /** Why the database last could not be used (for the refusal's message; password scrubbed). */
  private reason = '';
  private lastSeq = 0;
  private lastHash = GENESIS_HASH;
  private lastTag = GENESIS_HASH;
  /** A gap event waiting to be written first in the next batch. */
  private pendingGap: EventFields | null = null;
  /** Lines lost since the last `lines-lost` event was committed (also in `lostFile`, see saveLost). */
  private lost: Lost | null = null;
  /** This log's own lost-lines file (lostFileName); `lostOwner` is its `<pid>-<n>`. */
  readonly lostFile: string;
  private readonly lostOwner: string;
  /**
   * The last batch whose statement timed out (a hung server may commit it when it wakes up): its
   * last hash and how many call lines it held. Found as the chain's last row later, it was written
   * after all and is taken off `lost`.
   */
  private unconfirmed: Unconfirmed | null = null;
  private localHeadFd: number | null = null;
  private readonly headBuf = Buffer.alloc(HEAD_SIZE);
  private recent: AuditEntry[] = [];
  /** Lines waiting for the commit in flight to end: they go together in the next one. */
  private waiting: Waiter[] = [];
  /** True while a commit is in flight (drain runs); `drained` settles when it stops. */
  private draining = false;
  private drained: Promise<void> = Promise.resolve();
  /** Requests posted to the worker whose answers arrive as messages (by id). */
  private readonly inFlight = new Map<number, InFlight>();
  /** How many batches this instance has committed (one statement each). */
  private commits = 0;
  private seen = new Set<string>();
  private readonly appended = new Set<(entries: readonly AuditEntry[]) => void>();
  private readonly memory: number;
  private readonly timeoutMs: number;

  constructor(
    private readonly url: DatabaseUrl,
    readonly dataDir: string,
    instance: string,
    options: PgAuditLogOptions = {},
  ) {
    this.instance = instance;
    this.memory = options.memory ?? 1000;
    this.timeoutMs = (options.timeoutMs ?? 10_000) + WORKER_GRACE_MS;
    this.keyFile = path.join(dataDir, KEY_FILE);
    this.localHeadFile = path.join(dataDir, LOCAL_HEAD_FILE);
    const n = ++lostLogs;
    this.lostOwner = `${process.pid}-${n}`;
    this.lostFile = path.join(dataDir, lostFileName(process.pid, n));
    this.guard = {
      check: () => {
        if (this.worker && (Atomics.load(this.signal, 1) === 1 || !this.chainOpen || this.writeRefused) && !this.reachableAgain()) {
          throw new MemoError(
            'PERMISSION_DENIED',
            `The audit trail's database ${this.url.display} cannot be used (${this.reason || 'no answer'}), so this call could not be recorded: calls are refused until it answers again (Memo reconnects by itself).`,
            { details: { decision: 'deny:audit-unavailable' } },
          );
        }
      },
    };
  }

  /** Opens the worker and the chain (made on first use), and loads the newest entries of every chain. */
  open(): void {
    if (this.worker) return;
    fs.mkdirSync(this.dataDir, { recursive: true });
    this.key = loadOrCreateKey(this.keyFile).key;
    this.keyId = auditKeyId(this.key);
    const { port1, port2 } = new MessageChannel();
    const workerData: AuditWorkerData = {
      pgPath: createRequire(import.meta.url).resolve('pg'),
      connection: this.url.clientOptions(),
      instance: this.instance,
      schema: AUDIT_SCHEMA,
      lock: AUDIT_LOCK,
      channel: AUDIT_CHANNEL,
      migrations: AUDIT_MIGRATIONS,
      signal: this.signal.buffer,
      port: port2,
      recent: this.memory,
      queryTimeoutMs: this.timeoutMs - WORKER_GRACE_MS,
    };
    const worker = new Worker(`(${auditWorkerMain.toString()})()`, { eval: true, workerData, transferList: [port2] });
    worker.unref();
    port1.on('message', (r: AuditReply) => this.answered(r));
    port1.unref();
    worker.on('message', (m: { type?: string; rows?: StoredRow[] }) => {
      if (m.type === 'entries' && m.rows) this.received(m.rows);
    });
    // The worker never throws out of its handlers; if it dies anyway, every later call says so at once.
    worker.on('error', (err) => {
      if (this.worker !== worker) return;
      this.workerGone = `its worker thread failed: ${this.url.scrub(err.message)}`;
      this.abandon();
    });
    worker.on('exit', () => {
      if (this.worker !== worker) return;
      this.workerGone ??= 'its worker thread ended';
      this.abandon();
    });
    this.workerGone = undefined;
    this.worker = worker;
    this.port = port1;
    lostOwnersOpen.add(this.lostOwner);
    this.adoptLost();
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
    if (this.pendingGap || this.lost) this.enqueue([]).catch(() => {});
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

  /** Whether the database can be used, asking it again while it is marked unusable (answers read as they come, this thread never waits). */
  private async usable(waitMs: number): Promise<boolean> {
    const down = () => !this.chainOpen || Atomics.load(this.signal, 1) === 1 || this.writeRefused;
    const deadline = Date.now() + waitMs;
    while (down()) {
      if (this.reachableAgain(false)) return true;
      if (Date.now() >= deadline || this.workerGone) return false;
      await new Promise((r) => setTimeout(r, 25));
    }
    return true;
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
    lostOwnersOpen.delete(this.lostOwner);
    await worker?.terminate();
  }

  /**
   * While the database is marked unusable, the guard asks it again (a ping, or opening the chain if it
   * never opened) and waits a little for the answer (PROBE_WAIT_MS): a server that is back (or refuses
   * at once) answers within it, so the first call after a restart goes through. A server that does not
   * answer leaves the question in flight, and calls are refused at once until its answer arrives (then
   * handled in answered); the questions after it wait PROBE_HUNG_WAIT_MS at most.
   */
  private reachableAgain(wait = true): boolean {
    const port = this.port;
    if (!port || this.workerGone) {
      this.reason = this.workerGone ?? 'closed';
      return false;
    }
    // A question already in flight is not waited for: the call is refused at once unless its answer is here.
    const fresh = !this.probe;
    if (!this.probe) {
      const op = this.chainOpen ? 'ping' : 'open';
      const id = ++this.nextId;
      this.probe = { id, op, write: this.writeRefused };
      Atomics.store(this.signal, 0, 0);
      port.postMessage(op === 'ping' ? { id, op, write: this.writeRefused } : { id, op, keyId: this.keyId, genesis: GENESIS_HASH });
    }
    const probe = this.probe;
    const deadline = Date.now() + (fresh && wait ? (this.probeHung ? PROBE_HUNG_WAIT_MS : PROBE_WAIT_MS) : 0);
    for (;;) {
      let received: { message: unknown } | undefined;
      while ((received = receiveMessageOnPort(port))) this.answered(received.message as AuditReply);
      if (this.probe !== probe) {
        this.probeHung = false;
        return this.chainOpen && Atomics.load(this.signal, 1) === 0 && !this.writeRefused;
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        if (fresh && wait) this.probeHung = true;
        return false;
      }
      Atomics.wait(this.signal, 0, 0, left);
      Atomics.store(this.signal, 0, 0);
    }
  }

  /** The guard's question answered: the chain opens if it was not, and calls go through again if it answered. */
  private probed(r: AuditReply, { op, write }: { op: 'ping' | 'open'; write: boolean }): void {
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
    if (this.pendingGap || this.lost) this.enqueue([]).catch(() => {});
    else if (op === 'open') this.writeLocalHead();
  }

  /** Lines that could not be written are remembered (in memory and `lostFile`) for the `lines-lost` event written once the database is usable again. */
  private noteLost(drafts: readonly Draft[], err: unknown): void {
    if (drafts.length === 0) return;
    const now = new Date().toISOString();
    const lost = (this.lost ??= emptyLost(now));
    lost.mine += drafts.length;
    const calls = new Set<string>();
    for (const d of drafts) {
      lost.count++;
      if (d.kind === 'entry') {
        calls.add(d.record.id);
        if (lost.calls.length < MAX_LOST_LISTED) lost.calls.push({ id: d.record.id, tool: d.record.tool, outcome: d.record.outcome });
      } else lost.events++;
    }
    lost.to = now;
    const sealedHash = (err as { sealedHash?: unknown } | null)?.sealedHash;
    if (typeof sealedHash === 'string') {
      lost.unconfirmed += drafts.length;
      this.unconfirmed = { hash: sealedHash, calls, lines: drafts.length };
    }
    this.saveLost();
  }

  /**
   * Writes `lost` (and the batch that may have been committed after all) to this log's own file, or
   * removes it once nothing is lost: replaced whole by a rename, so a crash leaves the old record or
   * the new. Not fsynced, like the trail's own lines. Should it fail (no room), the record stays in memory.
   */
  private saveLost(): boolean {
    try {
      if (!this.lost) {
        fs.rmSync(this.lostFile, { force: true });
        return true;
      }
      const u = this.unconfirmed;
      const text = JSON.stringify({
        version: 1,
        instance: this.instance,
        lost: this.lost,
        ...(u ? { unconfirmed: { hash: u.hash, calls: [...u.calls], lines: u.lines } } : {}),
      });
      fs.writeFileSync(`${this.lostFile}.tmp`, text, { mode: 0o600 });
      fs.renameSync(`${this.lostFile}.tmp`, this.lostFile);
      return true;
    } catch {
      // Kept in memory: the event is still written if this process lives until the database answers.
      return false;
    }
  }

  /**
   * Takes over the lost-lines records of runs of this instance that ended (their process is gone, or
   * their log in this process was closed): each is claimed by a rename (of two starts, one gets it),
   * added to this log's record, which is saved, and only then removed. A record that cannot be read is
   * named in the event rather than dropped. Records of another instance id are left to it.
   */
  private adoptLost(): void {
    let names: string[];
    try {
      names = fs.readdirSync(this.dataDir);
    } catch {
      return;
    }
    let claims = 0;
    for (const name of names) {
      const m = LOST_NAME.exec(name);
      if (!m) continue;
      const pid = Number(m[1]);
      if (ownerRuns(pid, `${m[1]}-${m[2]}`)) continue;
      const file = path.join(this.dataDir, name);
      if (m[3]) {
        // A write cut short by a crash: the record it was replacing is still there.
        fs.rmSync(file, { force: true });
        continue;
      }
      const claimed = path.join(this.dataDir, lostFileName(process.pid, Number(this.lostOwner.split('-')[1]), ++claims));
      try {
        fs.renameSync(file, claimed);
      } catch {
        continue; // another start took it
      }
      let text = '';
      try {
        text = fs.readFileSync(claimed, 'utf8');
      } catch {
        // named as unreadable below
      }
      const read = parseLostFile(text, pid);
      if ('instance' in read && read.instance !== this.instance) {
        // Another instance's chain (MEMO_INSTANCE_ID differs): given back under its own name.
        fs.renameSync(claimed, file);
        continue;
      }
      this.merge(name, read);
      // Removed once its lines are in this log's own record (kept, should that not be written).
      if (this.saveLost()) fs.rmSync(claimed, { force: true });
    }
  }

  /** Adds an earlier run's record (or the reason it cannot be read) to this log's. */
  private merge(name: string, read: ReturnType<typeof parseLostFile>): void {
    const lost = (this.lost ??= emptyLost(new Date().toISOString()));
    if (!('lost' in read)) {
      lost.unreadable.push(`${name}: ${read.why}`);
      return;
    }
    const r = read.lost;
    const fresh = lost.count === 0;
    for (const pid of [...r.earlier, ...(r.mine > 0 ? [read.pid] : [])]) if (!lost.earlier.includes(pid)) lost.earlier.push(pid);
    lost.unreadable.push(...r.unreadable);
    lost.count += r.count;
    lost.events += r.events;
    lost.unconfirmed += r.unconfirmed;
    lost.calls.push(...r.calls.slice(0, Math.max(0, MAX_LOST_LISTED - lost.calls.length)));
    if (fresh || r.from < lost.from) lost.from = r.from;
    if (fresh || r.to > lost.to) lost.to = r.to;
    if (!this.unconfirmed && read.unconfirmed) this.unconfirmed = read.unconfirmed;
  }

  /** The batch whose statement timed out was committed after all (found as the chain's last row): its lines are not lost. */
  private confirmed(batch: { calls: Set<string>; lines: number }): void {
    this.unconfirmed = null;
    const lost = this.lost;
    if (!lost) return;
    lost.count -= batch.lines;
    lost.unconfirmed = Math.max(0, lost.unconfirmed - batch.lines);
    lost.calls = lost.calls.filter((c) => !batch.calls.has(c.id));
    if (lost.count <= 0 && lost.unreadable.length === 0) this.lost = null;
    this.saveLost();
  }

  /** A line could not be written: the guard refuses the next calls until the database answers again. */
  private markDown(err: unknown): void {
    if ((err as { unreachable?: boolean }).unreachable) Atomics.store(this.signal, 1, 1);
    else {
      this.reason = this.why(err);
      this.writeRefused = true;
    }
  }

  /** An error's message for the refusal's parentheses: without the database's name (the refusal names it), password scrubbed. */
  private why(err: unknown): string {
    // pg's words for its own client state read as what happened ("the server closed the connection").
    return this.url.scrub(connectionLossReason(err)).replace(`the audit trail's database ${this.url.display} `, '');
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
          this.noteLost(drafts, err);
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
    const lost = this.lost;
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
    if (sealed.lost && this.lost === sealed.lost) {
      this.lost = null;
      this.unconfirmed = null;
      this.saveLost();
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
    if (this.unconfirmed && lastOk && chain.last!.hash === this.unconfirmed.hash) this.confirmed(this.unconfirmed);
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
  private received(rows: readonly StoredRow[], tell = true): void {
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

  /**
   * One request to the worker, waited for synchronously: posted, then this thread sleeps on the
   * shared flag until the worker has answered (or `timeoutMs` passed). Only for what must be
   * synchronous: opening the chain while the kernel is built, and the guard's question whether a
   * database marked unusable answers again. Answers to asynchronous requests read meanwhile are
   * handed on; a late answer to an earlier request that timed out is dropped.
   */
  private call<T>(request: Request, timeoutMs = this.timeoutMs): T {
    const port = this.port;
    if (!port || this.workerGone) throw this.closedError();
    const id = ++this.nextId;
    Atomics.store(this.signal, 0, 0);
    port.postMessage({ ...request, id });
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      let received: { message: unknown } | undefined;
      while ((received = receiveMessageOnPort(port))) {
        const r = received.message as AuditReply;
        if (r.id !== id) {
          this.answered(r);
          continue;
        }
        if (r.ok) return r.value as T;
        throw this.failure(r);
      }
      const left = deadline - Date.now();
      if (left <= 0) throw this.lateError(timeoutMs);
      Atomics.wait(this.signal, 0, 0, left);
      Atomics.store(this.signal, 0, 0);
    }
  }

  /** One request to the worker, answered by a message (see answered): this thread goes on meanwhile. */
  private request<T>(request: Request, timeoutMs = this.timeoutMs): Promise<T> {
    const port = this.port;
    if (!port || this.workerGone) return Promise.reject(this.closedError());
    const id = ++this.nextId;
    return new Promise<T>((resolve, reject) => {
      // A referenced timer: the process stays up until the answer (a CLI call's line is committed before it exits).
      const timer = setTimeout(() => {
        this.inFlight.delete(id);
        reject(this.lateError(timeoutMs));
      }, timeoutMs);
      this.inFlight.set(id, { resolve: resolve as (value: unknown) => void, reject, timer });
      port.postMessage({ ...request, id });
    });
  }

  private answered(r: AuditReply): void {
    if (this.probe && r.id === this.probe.id) return this.probed(r, this.probe);
    const waiting = this.inFlight.get(r.id);
    if (!waiting) return;
    this.inFlight.delete(r.id);
    clearTimeout(waiting.timer);
    if (r.ok) waiting.resolve(r.value);
    else waiting.reject(this.failure(r));
  }

  /** The worker is gone: every request still waiting fails now, saying so. */
  private abandon(): void {
    this.probe = null;
    const error = this.closedError();
    for (const [id, waiting] of this.inFlight) {
      this.inFlight.delete(id);
      clearTimeout(waiting.timer);
      waiting.reject(error);
    }
  }

  private closedError(): Error {
    return new Error(`the audit trail's connection to ${this.url.display} is closed${this.workerGone ? `: ${this.workerGone}` : ''}`);
  }

  /** No answer in time: the database counts as unreachable (the guard refuses calls until it answers). */
  private downError(): Error {
    return Object.assign(
      new Error(
        `the audit trail's database ${this.url.display} cannot be used (${this.reason || 'no answer'}): this line was not written, and calls are refused until it answers again (Memo reconnects by itself)`,
      ),
      { unreachable: true },
    );
  }

  private lateError(timeoutMs: number): Error {
    this.reason = `no answer within ${Math.round(timeoutMs / 1000)} s`;
    Atomics.store(this.signal, 1, 1);
    return Object.assign(
      new Error(`the audit trail's database ${this.url.display} did not answer within ${Math.round(timeoutMs / 1000)} s: this line may not have been written`),
      { unreachable: true },
    );
  }

  private failure(r: Extract<AuditReply, { ok: false }>): Error {
    const why = this.url.scrub(r.unreachable ? connectionLossReason({ message: r.message }) : r.message);
    if (r.unreachable) {
      this.reason = why;
      // A statement that timed out was sent: the server may still commit it when it wakes up.
      const written = /timeout/i.test(why) ? 'this line may not have been written' : 'this line was not written';
      return Object.assign(
        new Error(
          `the audit trail's database ${this.url.display} cannot be used (${why}): ${written}, and calls are refused until it answers again (Memo reconnects by itself)`,
        ),
        { unreachable: true },
      );
    }
    return new Error(`the audit trail's database ${this.url.display} refused the write: ${why}`);
  }
}

/**
 * The chained `gap` event (seen `lines-lost`) for lines that could not be written: how many, the
 * calls by id and tool (never their arguments; at most MAX_LOST_LISTED), and when.
 */
function lostEvent(lost: Lost): EventFields {
  const calls = lost.count - lost.events;
  const runs = lost.earlier.length === 1 ? 'an earlier run' : 'earlier runs';
  const earlier = lost.earlier.length ? ` (${lost.mine ? 'some ' : ''}by ${runs} of this instance, pid ${lost.earlier.join(', ')})` : '';
  const unreadable = lost.unreadable.length
    ? `${lost.count ? '; also, ' : ''}the record of lines an earlier run of this instance could not write could not be read (${lost.unreadable.join('; ')}): how many are missing is not known`
    : '';
  const what = [calls ? `${calls} call line${calls === 1 ? '' : 's'}` : '', lost.events ? `${lost.events} kernel event${lost.events === 1 ? '' : 's'}` : '']
    .filter(Boolean)
    .join(' and ');
  const unconfirmed = lost.unconfirmed
    ? ` (${lost.unconfirmed} of them sent in a statement that got no answer: the server may have committed ${lost.unconfirmed === 1 ? 'it' : 'them'} before this event)`
    : '';
  return {
    event: 'gap',
    pid: process.pid,
    seen: 'lines-lost',
    lost: {
      lines: lost.count,
      calls: lost.calls,
      ...(calls > lost.calls.length ? { unlisted: calls - lost.calls.length } : {}),
      ...(lost.events ? { events: lost.events } : {}),
      ...(lost.unconfirmed ? { unconfirmed: lost.unconfirmed } : {}),
      from: lost.from,
      to: lost.to,
      ...(lost.earlier.length ? { earlier: lost.earlier } : {}),
      ...(lost.unreadable.length ? { unreadable: true } : {}),
    },
    detail: lost.count
      ? `${what} could not be written between ${lost.from} and ${lost.to}${earlier} (the database could not be used)${unconfirmed}${unreadable}`
      : unreadable.replace(/^t/, 'T'),
  };
}

/** A lost-lines file's text, checked field by field: the record (with the instance and pid that wrote it), or why it cannot be used. */
function parseLostFile(text: string, pid: number): { instance: string; pid: number; lost: Lost; unconfirmed?: Unconfirmed } | { why: string } {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return { why: text ? 'it is not JSON' : 'it cannot be read' };
  }
  const o = v as { version?: unknown; instance?: unknown; lost?: Record<string, unknown>; unconfirmed?: Record<string, unknown> };
  const l = o?.lost;
  const count = (x: unknown): x is number => Number.isSafeInteger(x) && (x as number) >= 0;
  const call = (c: unknown) => {
    const r = c as Record<string, unknown> | null;
    return typeof r?.id === 'string' && typeof r.tool === 'string' && (r.outcome === 'ok' || r.outcome === 'error');
  };
  if (
    o?.version !== 1 ||
    typeof o.instance !== 'string' ||
    !l ||
    !count(l.mine) ||
    !Array.isArray(l.earlier) ||
    !l.earlier.every(count) ||
    !Array.isArray(l.unreadable) ||
    !l.unreadable.every((u) => typeof u === 'string') ||
    !count(l.count) ||
    !count(l.events) ||
    !count(l.unconfirmed) ||
    typeof l.from !== 'string' ||
    typeof l.to !== 'string' ||
    !Array.isArray(l.calls) ||
    !l.calls.every(call)
  )
    return { why: 'it is not a record of lost lines' };
  const lost: Lost = {
    mine: l.mine,
    earlier: l.earlier,
    unreadable: l.unreadable,
    count: l.count,
    calls: (l.calls as Lost['calls']).slice(0, MAX_LOST_LISTED).map((c) => ({ id: c.id, tool: c.tool, outcome: c.outcome })),
    events: l.events,
    from: l.from,
    to: l.to,
    unconfirmed: l.unconfirmed,
  };
  const u = o.unconfirmed;
  const unconfirmed =
    u && typeof u.hash === 'string' && count(u.lines) && Array.isArray(u.calls) && u.calls.every((c) => typeof c === 'string')
      ? { hash: u.hash, calls: new Set(u.calls), lines: u.lines }
      : undefined;
  return { instance: o.instance, pid, lost, ...(unconfirmed ? { unconfirmed } : {}) };
}

function records(drafts: readonly Draft[]): string {
  return drafts.length === 1 ? 'one line' : `${drafts.length} lines`;
}
