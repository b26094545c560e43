/**
 * The PostgreSQL audit trail's side of its worker thread (pg-audit-worker.ts runs the transactions):
 * starting it, requests waited for on this thread (call) or answered by a message (request), the
 * errors that mark the database unusable, and the guard that refuses calls meanwhile, asking the
 * database again first (reachableAgain). PgAuditLog (pg-audit-log.ts) builds the chain on it.
 */
import { createRequire } from 'node:module';
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import { MemoError } from '../errors.js';
import { connectionLossReason } from '../storage/connection-loss.js';
import type { DatabaseUrl } from '../storage/database-url.js';
import { GENESIS_HASH } from './audit-chain.js';
import { AUDIT_CHANNEL, AUDIT_LOCK, AUDIT_MIGRATIONS, AUDIT_SCHEMA } from './pg-audit-schema.js';
import { auditWorkerMain, type AuditReply, type AuditRequest, type AuditWorkerData, type StoredRow } from './pg-audit-worker.js';

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
type Request = DistributiveOmit<AuditRequest, 'id'>;

/** A request to the worker answered asynchronously (see request). */
interface InFlight {
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
  timer: NodeJS.Timeout;
}

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

/** The worker thread and the guard under PgAuditLog: what it asks the database, and what it does when the database does not answer. */
export abstract class PgAuditLink {
  /** Refuses calls while the database cannot be reached (their lines could not be written). */
  readonly guard: { check(): void };
  protected keyId = '';
  protected worker: Worker | null = null;
  protected port: MessagePort | null = null;
  protected readonly signal = new Int32Array(new SharedArrayBuffer(8));
  private nextId = 0;
  /** The guard's question to a database marked unusable, still in flight (its answer is handled in answered). */
  protected probe: { id: number; op: 'ping' | 'open'; write: boolean } | null = null;
  /**
   * A line was refused by a database that answers (no room, read only, no permission): calls are
   * refused until a row can be written again (the guard's question then writes one and rolls it back).
   */
  protected writeRefused = false;
  /** The guard's last question was left unanswered within its wait (the server hangs): the next ones wait less. */
  private probeHung = false;
  /** Set when the worker thread is gone (it failed, or was stopped). */
  protected workerGone: string | undefined;
  /** False until the chain has been opened in the database (the server may be away at start). */
  protected chainOpen = false;
  /** Why the database last could not be used (for the refusal's message; password scrubbed). */
  protected reason = '';
  /** Requests posted to the worker whose answers arrive as messages (by id). */
  private readonly inFlight = new Map<number, InFlight>();
  private readonly timeoutMs: number;

  constructor(
    protected readonly url: DatabaseUrl,
    timeoutMs: number,
  ) {
    this.timeoutMs = timeoutMs + WORKER_GRACE_MS;
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

  /** What the log does with the guard's answered question (probed), and with rows the worker hears of (received). */
  protected abstract probed(r: AuditReply, probe: { op: 'ping' | 'open'; write: boolean }): void;
  protected abstract received(rows: readonly StoredRow[]): void;

  /** Starts the worker thread and its message port for `instance`'s chain (`recent`: how many newest entries it loads). */
  protected startWorker(instance: string, recent: number): void {
    const { port1, port2 } = new MessageChannel();
    const workerData: AuditWorkerData = {
      pgPath: createRequire(import.meta.url).resolve('pg'),
      connection: this.url.clientOptions(),
      instance,
      schema: AUDIT_SCHEMA,
      lock: AUDIT_LOCK,
      channel: AUDIT_CHANNEL,
      migrations: AUDIT_MIGRATIONS,
      signal: this.signal.buffer,
      port: port2,
      recent,
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
  }

  /** Whether the database can be used, asking it again while it is marked unusable (answers read as they come, this thread never waits). */
  protected async usable(waitMs: number): Promise<boolean> {
    const down = () => !this.chainOpen || Atomics.load(this.signal, 1) === 1 || this.writeRefused;
    const deadline = Date.now() + waitMs;
    while (down()) {
      if (this.reachableAgain(false)) return true;
      if (Date.now() >= deadline || this.workerGone) return false;
      await new Promise((r) => setTimeout(r, 25));
    }
    return true;
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

  /** A line could not be written: the guard refuses the next calls until the database answers again. */
  protected markDown(err: unknown): void {
    if ((err as { unreachable?: boolean }).unreachable) Atomics.store(this.signal, 1, 1);
    else {
      this.reason = this.why(err);
      this.writeRefused = true;
    }
  }

  /** An error's message for the refusal's parentheses: without the database's name (the refusal names it), password scrubbed. */
  protected why(err: unknown): string {
    // pg's words for its own client state read as what happened ("the server closed the connection").
    return this.url.scrub(connectionLossReason(err)).replace(`the audit trail's database ${this.url.display} `, '');
  }

  /**
   * One request to the worker, waited for synchronously: posted, then this thread sleeps on the
   * shared flag until the worker has answered (or `timeoutMs` passed). Only for what must be
   * synchronous: opening the chain while the kernel is built, and the guard's question whether a
   * database marked unusable answers again. Answers to asynchronous requests read meanwhile are
   * handed on; a late answer to an earlier request that timed out is dropped.
   */
  protected call<T>(request: Request, timeoutMs = this.timeoutMs): T {
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
  protected request<T>(request: Request, timeoutMs = this.timeoutMs): Promise<T> {
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
  protected abandon(): void {
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
  protected downError(): Error {
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

  protected failure(r: Extract<AuditReply, { ok: false }>): Error {
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
