/**
 * The kernel's own settings (permissions, pack choices, providers, settings) in the PostgreSQL schema
 * `memo_kernel` when MEMO_DATABASE_URL is set, shared by every instance on the database.
 *
 * These stores are read synchronously (the permission gate asks on every call), so each instance
 * keeps a view in memory: loaded at start, written through (a change applies to the local view at
 * once and is sent to the database as row-level statements in one transaction; `saved()` resolves
 * once the database committed it), and re-read when another instance changes it. Every write bumps
 * its store's counter in `state_versions` and sends `NOTIFY memo_kernel` in the same transaction, so
 * the others hear of it after the commit (milliseconds); as the fallback, each instance compares the
 * counters every REREAD_MS (1 s), so a lost notification or a dropped listening connection costs at
 * most that. A view that could not be confirmed for STALE_MS (3 s: the database does not answer) is
 * stale, and the permission store then applies no stored allow (see PermissionStore).
 *
 * A write that fails (the database is down, another instance removed the row) is dropped from the
 * view, which goes back to what the database holds, and reported: to whoever awaits `saved()`, else
 * in the log. Messages never hold a stored key (they are encrypted before they reach a statement).
 */
import { performance } from 'node:perf_hooks';
import * as path from 'node:path';
import type { DataSource, EntityManager } from 'typeorm';
import type { Disposable } from '../disposable.js';
import type { Logger } from '../logger.js';
import type { DatabaseUrl } from './database-url.js';
import { instanceId } from './instance-id.js';
import { connectionLossReason, isConnectionLoss } from './connection-loss.js';
import { ConversationCipher } from '../secrets/conversation-cipher.js';

export const KERNEL_SCHEMA = 'memo_kernel';
const CHANNEL = 'memo_kernel';
/** How often the store counters are compared (the fallback for a lost notification). */
export const REREAD_MS = 1000;
/** A view not confirmed by the database for this long is stale. */
export const STALE_MS = 3000;
/** The longest wait before the listening connection is opened again after it dropped. */
const MAX_RELISTEN_MS = 5000;

export type KernelStoreName = 'permissions' | 'packs' | 'providers' | 'settings';

/** Decrypts and encrypts the stored provider secrets (kernel-state-tables.ts). */
export interface SecretBox {
  /** The id of the key new values are sealed with. */
  readonly keyId: string;
  seal(plaintext: string, context: string): string;
  open(value: string, context: string): string;
}

/** What the database side of one store does: read everything, and copy its file once. */
export interface StoreTable<T> {
  readonly name: KernelStoreName;
  empty(): T;
  load(m: EntityManager, box: SecretBox | null, warn: (what: string) => void): Promise<T>;
}

/** A write to the database: row-level statements run inside the store's transaction. */
export type RemoteChange = (m: EntityManager, box: SecretBox | null) => Promise<void>;

interface PendingChange<T> {
  apply: (value: T) => void;
  /** The store counter its transaction committed, once it did. */
  committed: number | null;
}

/**
 * One store's view: the newest snapshot read from the database, with this instance's changes that are
 * not yet in it applied on top (each change is idempotent, so applying one the snapshot already holds
 * changes nothing).
 */
export class ReplicatedView<T> {
  private snapshot: T;
  private snapshotVersion = -1;
  private pending: PendingChange<T>[] = [];
  private view: T;
  private changes = 0;
  private confirmed = Number.NEGATIVE_INFINITY;
  private queue: Promise<void> = Promise.resolve();
  private failures: Error[] = [];
  private waiting = 0;
  private readonly listeners = new Set<() => void>();

  constructor(
    readonly table: StoreTable<T>,
    private readonly db: KernelStateDb,
  ) {
    this.snapshot = table.empty();
    this.view = table.empty();
  }

  /** The view now (never undefined: empty until the first read). Mutate it only through `change`. */
  read(): T {
    return this.view;
  }

  /** True once the database has been read. */
  get loaded(): boolean {
    return this.snapshotVersion >= 0;
  }

  /** Bumped whenever the view changes. */
  get version(): number {
    return this.changes;
  }

  /** The store counter of the snapshot (-1 before the first read). */
  get seen(): number {
    return this.snapshotVersion;
  }

  /** Whether the database confirmed the view within STALE_MS. */
  fresh(): boolean {
    return performance.now() - this.confirmed <= STALE_MS;
  }

  /** Milliseconds since the database last confirmed the view (Infinity: never). */
  age(): number {
    return performance.now() - this.confirmed;
  }

  /** Told after every change of the view (a write here, another instance's write read back). */
  onChange(listener: () => void): Disposable {
    this.listeners.add(listener);
    return { dispose: () => void this.listeners.delete(listener) };
  }

  /** Applies `local` to the view now and sends `remote` to the database, after this store's earlier writes. */
  change(local: (value: T) => void, remote: RemoteChange): void {
    const entry: PendingChange<T> = { apply: local, committed: null };
    this.pending.push(entry);
    this.recompute();
    this.queue = this.queue.then(async () => {
      try {
        entry.committed = await this.db.write(this.table.name, remote);
        if (this.snapshotVersion >= entry.committed) this.settle();
        else await this.db.reload(this.table.name).catch(() => {});
      } catch (err) {
        this.pending = this.pending.filter((p) => p !== entry);
        this.recompute();
        const failure = err instanceof Error ? err : new Error(String(err));
        if (this.waiting > 0) this.failures.push(failure);
        else this.db.logger.warn(`a change of the ${this.table.name} in ${this.db.where} was not saved and is undone: ${failure.message}`);
      }
    });
  }

  /** Resolves once every change made so far is committed; rejects with the first one that failed. */
  async saved(): Promise<void> {
    this.waiting++;
    try {
      await this.queue;
    } finally {
      this.waiting--;
    }
    const failed = this.failures.splice(0);
    if (failed.length) throw failed[0]!;
  }

  /** Marks the view confirmed by a read that started at `startedAt` and found the store at `version`. */
  confirm(version: number, startedAt: number): void {
    if (version === this.snapshotVersion && startedAt > this.confirmed) this.confirmed = startedAt;
  }

  /** A snapshot read in one transaction that started at `startedAt`. Older snapshots than the one held are ignored. */
  accept(value: T, version: number, startedAt: number): void {
    if (version < this.snapshotVersion) return;
    if (startedAt > this.confirmed) this.confirmed = startedAt;
    if (version === this.snapshotVersion) return;
    this.snapshot = value;
    this.snapshotVersion = version;
    this.settle();
  }

  /** Drops the changes the snapshot holds, and recomputes. */
  private settle(): void {
    this.pending = this.pending.filter((p) => p.committed === null || p.committed > this.snapshotVersion);
    this.recompute();
  }

  private recompute(): void {
    const next = structuredClone(this.snapshot);
    for (const p of this.pending) p.apply(next);
    this.view = next;
    this.changes++;
    for (const l of [...this.listeners]) {
      try {
        l();
      } catch (err) {
        this.db.logger.warn(`a listener of the ${this.table.name} failed: ${(err as Error).message}`);
      }
    }
  }

  /** Waits for the writes in flight (closing). */
  drain(): Promise<void> {
    return this.queue;
  }
}

export interface KernelStateOptions {
  /** Listen and re-read (a kernel); false for one command that reads, writes and closes (the CLI). */
  live?: boolean;
  /**
   * How long the first read waits for a database that cannot be reached yet (refused, starting up,
   * no answer), trying again with a line saying so, before it fails saying it waited. Default 60 s
   * for a kernel, 10 s for one command (`live: false`); 0 does not wait. Once the state was read,
   * nothing waits: an outage later is the stores' and the audit's to handle (they refuse clearly).
   */
  startWaitMs?: number;
  /** The key file for the provider secrets (default `<dataDir>/kernel.key`). */
  keyFile?: string;
  /**
   * Run once the schema is open, before the first read: copies the data folder's own files (the
   * stores kept there before the database was used) into the schema, the first time an instance
   * opens it. The stores above this engine know their files and tables (kernel/state/).
   */
  importFiles?: (ds: DataSource, dataDir: string, instance: string, box: SecretBox | null, logger: Logger) => Promise<void>;
}

/**
 * The `memo_kernel` schema of one instance: the open DataSource, the views of the four stores, the
 * listening connection and the fallback timer. Opening starts at construction, in the background;
 * `ready()` waits for the first read of every store (and the one-time copy of the files before it).
 */
export class KernelStateDb {
  private ds: DataSource | null = null;
  private box: SecretBox | null = null;
  private opening: Promise<void> | null = null;
  private readonly views = new Map<KernelStoreName, ReplicatedView<unknown>>();
  private readonly reloading = new Map<KernelStoreName, { running: Promise<void>; again: boolean }>();
  private timer: NodeJS.Timeout | null = null;
  private listener: { release: () => void } | null = null;
  private relistenMs = 250;
  private relistenTimer: NodeJS.Timeout | null = null;
  private closed = false;
  /** The first read succeeded once (from then on ready() never waits for the database). */
  private everOpened = false;
  /** The first read waiting for the database (shared by every caller of ready() meanwhile). */
  private waiting: Promise<void> | null = null;
  private checking = false;
  private lastProblem = '';
  readonly instance: string;
  readonly keyFile: string;

  constructor(
    readonly url: DatabaseUrl,
    readonly dataDir: string,
    readonly logger: Logger,
    private readonly options: KernelStateOptions = {},
  ) {
    this.instance = instanceId(dataDir);
    this.keyFile = options.keyFile ?? path.join(dataDir, 'kernel.key');
    // A kernel's state opens at once, in the background; a start while the database is down is tried again.
    if (options.live !== false) this.openInBackground();
  }

  private openInBackground(delayMs = 0): void {
    const attempt = () => {
      if (this.closed || this.ds) return;
      // One try each time (this loop has its own pace and its own line): not the first read's waiting.
      (this.ds || this.everOpened ? this.ready() : this.openOnce()).then(
        () => {
          if (this.lastProblem) this.logger.info(`the kernel state in ${this.where} is read`);
          this.lastProblem = '';
        },
        (err: unknown) => {
          const problem = (err as Error)?.message ?? String(err);
          if (problem !== this.lastProblem) this.logger.warn(`the kernel state cannot be read yet: ${problem}`);
          this.lastProblem = problem;
          this.openInBackground(Math.min(Math.max(delayMs * 2, REREAD_MS), MAX_RELISTEN_MS));
        },
      );
    };
    if (delayMs === 0) return attempt();
    const t = setTimeout(attempt, delayMs);
    t.unref();
  }

  /** Where the state is, for messages (password masked). */
  get where(): string {
    return `${this.url.display} (schema "${KERNEL_SCHEMA}")`;
  }

  /** The view of a store (made on first ask; filled once the database is read). */
  view<T>(table: StoreTable<T>): ReplicatedView<T> {
    let v = this.views.get(table.name) as ReplicatedView<T> | undefined;
    if (!v) {
      v = new ReplicatedView(table, this);
      this.views.set(table.name, v as ReplicatedView<unknown>);
      if (this.ds) void this.reload(table.name).catch(() => {});
    }
    return v;
  }

  /**
   * Opens the schema (migrations, the one-time copy of the data folder's files), reads every store,
   * and (live) starts listening and the fallback timer. A failure rejects; the next call tries again.
   */
  ready(): Promise<void> {
    if (this.ds) {
      // Views asked for after the opening are read now.
      const unread = [...this.views.entries()].filter(([, v]) => !v.loaded).map(([name]) => this.reload(name));
      return unread.length ? Promise.all(unread).then(() => {}) : Promise.resolve();
    }
    if (this.closed) return Promise.reject(new Error(`The kernel state in ${this.where} is closed.`));
    if (this.everOpened) return this.openOnce();
    return (this.waiting ??= this.openWaiting().finally(() => (this.waiting = null)));
  }

  /** One try at opening (shared by the callers meanwhile); a failure rejects and the next call tries again. */
  private openOnce(): Promise<void> {
    const opening = (this.opening ??= this.open());
    return opening.catch((err: unknown) => {
      if (this.opening === opening) this.opening = null;
      throw err;
    });
  }

  /**
   * The first read: while the database cannot be reached (a kernel started during an outage, or
   * while PostgreSQL is still starting), tries again every 0.25 s to 2 s, with one line saying it
   * waits, for up to startWaitMs; then fails saying what it waited for. Any other failure (a wrong
   * password, a missing database) fails at once.
   */
  private async openWaiting(): Promise<void> {
    const waitMs = this.options.startWaitMs ?? (this.options.live === false ? 10_000 : 60_000);
    const started = performance.now();
    let delay = 250;
    let said = false;
    for (;;) {
      try {
        await this.openOnce();
        if (said) this.logger.info(`the database answers: the kernel state in ${this.where} is read`);
        return;
      } catch (err) {
        const unreachable = isConnectionLoss(err) || isConnectionLoss((err as { cause?: unknown })?.cause);
        const waited = performance.now() - started;
        if (this.closed || !unreachable || waited + delay > waitMs) {
          if (!said || !unreachable) throw err;
          throw new Error(`${(err as Error).message} (Memo waited ${Math.round(waited / 1000)} s for it to answer)`, { cause: err });
        }
        if (!said) {
          const why = connectionLossReason((err as { cause?: unknown })?.cause ?? err);
          this.logger.warn(
            `the database for the kernel state, ${this.where}, cannot be reached yet (${why}): waiting up to ${Math.round(waitMs / 1000)} s for it, trying again every few seconds`,
          );
          said = true;
        }
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 2000);
      }
    }
  }

  private async open(): Promise<void> {
    const [{ openPostgres }, { KERNEL_STATE_MIGRATIONS }] = await Promise.all([import('./postgres.js'), import('./kernel-state-migrations.js')]);
    const ds = await openPostgres(this.url, KERNEL_SCHEMA, { entities: [], migrations: KERNEL_STATE_MIGRATIONS });
    try {
      this.box = await openSecretBox(ds, this.keyFile, this.logger);
      await this.options.importFiles?.(ds, this.dataDir, this.instance, this.box, this.logger);
      if (this.closed) throw new Error(`The kernel state in ${this.where} was closed while it opened.`);
      this.ds = ds;
      for (const name of this.views.keys()) await this.reload(name);
      this.everOpened = true;
    } catch (err) {
      this.ds = null;
      await ds.destroy().catch(() => {});
      throw err;
    }
    if (this.options.live !== false) {
      this.listen();
      this.timer = setInterval(() => void this.check(), REREAD_MS);
      this.timer.unref();
    }
  }

  /**
   * Runs `remote` in one transaction that first bumps the store's counter (so writers of one store
   * take turns on that row) and ends by notifying the other instances; returns the counter committed.
   */
  async write(store: KernelStoreName, remote: RemoteChange): Promise<number> {
    await this.ready();
    const ds = this.ds!;
    return ds.transaction(async (m) => {
      const rows = await m.query<Array<{ version: string }>>(
        `WITH bumped AS (UPDATE "state_versions" SET "version" = "version" + 1 WHERE "store" = $1 RETURNING "version") SELECT "version" FROM bumped`,
        [store],
      );
      const version = Number(rows[0]?.version);
      await remote(m, this.box);
      await m.query(`SELECT pg_notify($1, $2)`, [CHANNEL, JSON.stringify({ store, version, instance: this.instance })]);
      return version;
    });
  }

  /** Reads one store again, in one snapshot (coalesced: one read at a time per store, one more queued). */
  reload(store: KernelStoreName): Promise<void> {
    const busy = this.reloading.get(store);
    if (busy) {
      busy.again = true;
      return busy.running;
    }
    const entry = { running: Promise.resolve(), again: false };
    entry.running = (async () => {
      try {
        do {
          entry.again = false;
          await this.readStore(store);
        } while (entry.again && !this.closed);
      } finally {
        this.reloading.delete(store);
      }
    })();
    this.reloading.set(store, entry);
    return entry.running;
  }

  private async readStore(store: KernelStoreName): Promise<void> {
    const view = this.views.get(store);
    const ds = this.ds;
    if (!view || !ds) return;
    const startedAt = performance.now();
    const problems: string[] = [];
    const { value, version } = await ds.transaction('REPEATABLE READ', async (m) => {
      const rows = await m.query<Array<{ version: string }>>(`SELECT "version" FROM "state_versions" WHERE "store" = $1`, [store]);
      return { version: Number(rows[0]?.version ?? 0), value: await view.table.load(m, this.box, (w) => problems.push(w)) };
    });
    for (const p of problems) this.logger.warn(p);
    view.accept(value, version, startedAt);
  }

  /** The fallback: compares every store's counter with the view's, and reads the ones that moved. */
  private async check(): Promise<void> {
    const ds = this.ds;
    // One check at a time: a slow or unreachable database must not pile up a query per second.
    if (!ds || this.closed || this.checking) return;
    this.checking = true;
    const startedAt = performance.now();
    try {
      const rows = await ds.query<Array<{ store: KernelStoreName; version: string }>>(`SELECT "store", "version" FROM "state_versions"`);
      for (const r of rows) {
        const view = this.views.get(r.store);
        if (!view) continue;
        const version = Number(r.version);
        if (version === view.seen) view.confirm(version, startedAt);
        else await this.reload(r.store);
      }
      if (this.lastProblem) this.logger.info(`the kernel state in ${this.where} is read again`);
      this.lastProblem = '';
      if (!this.listener && !this.relistenTimer) this.listen();
    } catch (err) {
      const problem = (err as Error).message;
      if (problem !== this.lastProblem) this.logger.warn(`the kernel state cannot be read again: ${problem}`);
      this.lastProblem = problem;
    } finally {
      this.checking = false;
    }
  }

  /** Holds one connection with LISTEN memo_kernel; a dropped one is opened again (backing off to 5 s). */
  private listen(): void {
    const ds = this.ds;
    if (!ds || this.closed || this.listener) return;
    const pool = (ds.driver as unknown as { master?: { connect(): Promise<ListeningClient> } }).master;
    if (!pool) return;
    const retry = () => {
      this.listener = null;
      if (this.closed || this.relistenTimer) return;
      this.relistenTimer = setTimeout(() => {
        this.relistenTimer = null;
        this.listen();
      }, this.relistenMs);
      this.relistenTimer.unref();
      this.relistenMs = Math.min(this.relistenMs * 2, MAX_RELISTEN_MS);
    };
    let released = false;
    const holder = { release: () => {} };
    this.listener = holder;
    pool
      .connect()
      .then(async (client) => {
        const drop = (err?: Error) => {
          if (released) return;
          released = true;
          client.removeListener('notification', onNotice);
          client.release(err ?? true);
        };
        const onNotice = (msg: { channel: string; payload?: string }) => {
          if (msg.channel !== CHANNEL || !msg.payload) return;
          let note: { store?: KernelStoreName; version?: number };
          try {
            note = JSON.parse(msg.payload) as typeof note;
          } catch {
            return;
          }
          const view = note.store ? this.views.get(note.store) : undefined;
          if (view && note.store && (typeof note.version !== 'number' || note.version > view.seen)) void this.reload(note.store).catch(() => {});
        };
        client.on('notification', onNotice);
        client.once('error', (err: Error) => {
          drop(err);
          retry();
        });
        client.once('end', () => {
          drop();
          retry();
        });
        holder.release = () => drop();
        if (this.closed) return drop();
        await client.query(`LISTEN ${CHANNEL}`);
        this.relistenMs = 250;
        // What changed while nobody listened is read now.
        await this.check();
      })
      .catch(() => {
        if (!released) holder.release();
        retry();
      });
  }

  /** Waits for the writes in flight, stops listening and closes the connections. */
  async close(): Promise<void> {
    if (this.closed) return;
    // Closed first: no new opening starts; an open store still takes the writes in flight.
    this.closed = true;
    await this.opening?.catch(() => {});
    await Promise.all([...this.views.values()].map((v) => v.drain()));
    if (this.timer) clearInterval(this.timer);
    if (this.relistenTimer) clearTimeout(this.relistenTimer);
    this.timer = this.relistenTimer = null;
    this.listener?.release();
    this.listener = null;
    await Promise.all([...this.reloading.values()].map((r) => r.running.catch(() => {})));
    const ds = this.ds;
    this.ds = null;
    await ds?.destroy().catch(() => {});
  }
}

interface ListeningClient {
  query(sql: string): Promise<unknown>;
  on(event: 'notification', fn: (msg: { channel: string; payload?: string }) => void): void;
  once(event: 'error', fn: (err: Error) => void): void;
  once(event: 'end', fn: () => void): void;
  removeListener(event: 'notification', fn: (msg: { channel: string; payload?: string }) => void): void;
  release(err?: Error | boolean): void;
}

/**
 * The box for provider secrets: the key file when there is one; a new one when there is none and no
 * stored secret needs it; null (stored keys unreadable, none can be written) when secrets are stored
 * and this instance lacks the file: a new key would hide why they cannot be read.
 */
async function openSecretBox(m: EntityManager | { query: EntityManager['query'] }, keyFile: string, logger: Logger): Promise<SecretBox | null> {
  let cipher: ConversationCipher | null;
  try {
    cipher = ConversationCipher.load(keyFile);
  } catch {
    logger.warn(`the key file ${keyFile} is damaged: stored provider keys cannot be read or written until it is restored (it is left as it is)`);
    return null;
  }
  if (!cipher) {
    const sealed = await m.query<unknown[]>(`SELECT 1 FROM "providers" WHERE "secret" IS NOT NULL LIMIT 1`);
    if (sealed.length > 0) {
      logger.warn(
        `the key file ${keyFile} is missing: the stored provider keys in the shared database cannot be read; copy kernel.key from the data folder of an instance that has it`,
      );
      return null;
    }
    cipher = ConversationCipher.create(keyFile);
  }
  const c = cipher;
  return {
    keyId: c.currentKeyId,
    seal: (plaintext, context) => c.encrypt(plaintext, context),
    open: (value, context) => {
      try {
        return c.decrypt(value, context);
      } catch {
        // The cipher's own message speaks of conversations.
        throw new Error(`it is sealed with a key ${keyFile} does not hold, or was altered`);
      }
    },
  };
}
