/**
 * The WhatsApp pack's state in one kernel: its database and store, the linked device's credentials,
 * the connection (when `memo serve` or `memo whatsapp link` runs it) and the send limit. Several
 * kernels can share this module in one process (tests, host apps), so state is kept per kernel, by
 * the pack's data folder (which the kernel hands to both `activate` and every call).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { MemoError, type PackApi, type ToolContext } from 'memo-kernel/pack';
import type { Database } from 'better-sqlite3';
import type { DataSource } from 'typeorm';
import { isLinked, openAuthStore, removeAuth, type AuthStore } from './auth-store.js';
import { WhatsAppConnection, type ConnectionEvents, type SocketMaker } from './connection.js';
import type { LeaseHolder, OwnerLease } from './lease.js';
import type { WhatsAppStore } from './store.js';

/** The marker file of a `memo whatsapp link` in progress (its pid). */
const LINKING = 'linking.pid';

/** The seed's limit for this pack's own sends, on top of the kernel's 30 calls a minute. */
export const SENDS_PER_MINUTE = 10;

/** Sends in the last minute: a sliding window, counted when a message is actually handed to WhatsApp. */
export class SendLimiter {
  private sent: number[] = [];
  constructor(
    /** The kernel's clock (a test's fake one moves the window). */
    private readonly clock: () => number,
    private readonly limit = SENDS_PER_MINUTE,
    private readonly windowMs = 60_000,
  ) {}

  /** Seconds until one more send is allowed (0: now). */
  waitSeconds(now = this.clock()): number {
    this.sent = this.sent.filter((t) => t > now - this.windowMs);
    return this.sent.length < this.limit ? 0 : Math.max(1, Math.ceil((this.sent[0]! + this.windowMs - now) / 1000));
  }

  record(now = this.clock()): void {
    this.sent.push(now);
  }
}

export class WhatsAppRuntime {
  private db: Promise<DataSource> | null = null;
  private store: Promise<WhatsAppStore> | null = null;
  private _lease: OwnerLease | null = null;
  private auth: Promise<AuthStore> | null = null;
  private _connection: WhatsAppConnection | null = null;
  readonly limiter: SendLimiter;
  private disposed = false;

  constructor(readonly api: PackApi) {
    this.limiter = new SendLimiter(() => api.clock.now());
  }

  get dataDir(): string {
    return this.api.dataDir;
  }

  linked(): boolean {
    return isLinked(this.api.dataDir);
  }

  get connection(): WhatsAppConnection | null {
    return this._connection;
  }

  history(): Promise<WhatsAppStore> {
    if (this.disposed) return Promise.reject(new MemoError('CANCELLED', 'The WhatsApp pack is unloading.'));
    this.store ??= (async () => {
      this.db ??= (async () => {
        const { ENTITIES, MIGRATIONS } = await import('./schema.js');
        // Portable: in the shared PostgreSQL database when MEMO_DATABASE_URL is set, else whatsapp.sqlite.
        return this.api.database({ name: 'whatsapp', entities: ENTITIES, migrations: MIGRATIONS, portable: true });
      })();
      const ds = await this.db;
      // One import after the other: jest's ESM loader can stall on two at once that share modules.
      const engines = await import('./store-engines.js');
      const { WhatsAppStore } = await import('./store.js');
      if (ds.options.type === 'postgres') {
        const { copySqliteOnce } = await import('./sqlite-copy.js');
        const { OwnerLease } = await import('./lease.js');
        await copySqliteOnce(this.api.dataDir, ds, this.api.logger);
        this._lease = new OwnerLease(ds, this.api.instanceId, this.leaseMs());
        return new WhatsAppStore(new engines.PostgresEngine(ds));
      }
      // typeorm's better-sqlite3 driver keeps the connection here: the store's batches use it directly.
      return new WhatsAppStore(new engines.SqliteEngine((ds.driver as unknown as { databaseConnection: Database }).databaseConnection));
    })();
    this.store.catch(() => {
      this.store = null;
      this.db = null;
    });
    return this.store;
  }

  /** How long an owner's lease lasts unless renewed (pack setting ownerLeaseSeconds, default 30). */
  leaseMs(): number {
    const s = this.api.config().ownerLeaseSeconds;
    return (typeof s === 'number' && s > 0 ? s : 30) * 1000;
  }

  /** The connection's owner lease, when the history is in PostgreSQL (null on SQLite: one instance per data folder). */
  async lease(): Promise<OwnerLease | null> {
    await this.history();
    return this._lease;
  }

  /** The lease if the history is already open on PostgreSQL (never opens it). */
  get openLease(): OwnerLease | null {
    return this._lease;
  }

  /** Another instance holding the connection's lease (PostgreSQL), or null. */
  async ownerElsewhere(): Promise<LeaseHolder | null> {
    const lease = await this.lease();
    const holder = lease ? await lease.holder() : null;
    return holder && holder.instance !== lease!.instance ? holder : null;
  }

  private authStore(): Promise<AuthStore> {
    this.auth ??= (async () => openAuthStore(this.api.dataDir, await import('baileys')))();
    this.auth.catch(() => (this.auth = null));
    return this.auth;
  }

  /** Baileys' makeWASocket, or the socket maker a host app offers under `whatsapp.socket`. */
  private async socketMaker(): Promise<SocketMaker> {
    const offered = this.api.lookup<SocketMaker>('whatsapp.socket');
    if (offered) return offered;
    const baileys = await import('baileys');
    return (options) =>
      baileys.makeWASocket({
        auth: { creds: options.auth.creds, keys: baileys.makeCacheableSignalKeyStore(options.auth.keys, options.logger) },
        logger: options.logger,
        browser: options.browser,
        markOnlineOnConnect: false,
        syncFullHistory: false,
        getMessage: (key) => options.getMessage(key),
      });
  }

  /**
   * Starts the connection (once); the linked device's credentials are created on first pairing.
   * `events` listen from before the socket exists, so its first QR or its opening is never missed.
   */
  async connect(events?: ConnectionEvents): Promise<WhatsAppConnection> {
    if (this.disposed) throw new MemoError('CANCELLED', 'The WhatsApp pack is unloading.');
    if (this._connection && !this._connection.finished) {
      if (events) this._connection.on(events);
      return this._connection;
    }
    // One that ended (logged out, taken over) is replaced.
    await this.disconnect();
    const maker = await this.socketMaker();
    const conn = new WhatsAppConnection(
      maker,
      () => this.authStore(),
      () => this.history(),
      this.api.logger,
      () => this.forgetCredentials(),
    );
    this._connection = conn;
    if (events) conn.on(events);
    try {
      await conn.start();
    } catch (err) {
      // A connection that never started is not kept: the next connect() tries afresh.
      if (this._connection === conn) this._connection = null;
      await conn.stop();
      throw err;
    }
    return conn;
  }

  async disconnect(): Promise<void> {
    const conn = this._connection;
    this._connection = null;
    await conn?.stop();
  }

  /**
   * Marks a `memo whatsapp link` in progress (by its pid) until the returned function runs, so a
   * `memo serve` on the same data folder waits before it opens a second socket on the new credentials.
   */
  markLinking(): () => void {
    const file = path.join(this.api.dataDir, LINKING);
    fs.mkdirSync(this.api.dataDir, { recursive: true });
    fs.writeFileSync(file, String(process.pid), { mode: 0o600 });
    return () => fs.rmSync(file, { force: true });
  }

  /** True while a link runs in another live process. */
  linkingElsewhere(): boolean {
    let pid: number;
    try {
      pid = Number(fs.readFileSync(path.join(this.api.dataDir, LINKING), 'utf8'));
    } catch {
      return false;
    }
    if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false;
    try {
      process.kill(pid, 0);
      return true;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'EPERM';
    }
  }

  /** Drops the credentials (after a logout, from here or from the phone); the history stays. */
  forgetCredentials(): void {
    this.auth = null;
    removeAuth(this.api.dataDir);
  }

  async dispose(): Promise<void> {
    await this.disconnect();
    this.disposed = true;
  }
}

const runtimes = new Map<string, WhatsAppRuntime>();

export function register(api: PackApi): WhatsAppRuntime {
  const rt = new WhatsAppRuntime(api);
  runtimes.set(api.dataDir, rt);
  return rt;
}

export function unregister(rt: WhatsAppRuntime): Promise<void> {
  if (runtimes.get(rt.dataDir) === rt) runtimes.delete(rt.dataDir);
  return rt.dispose();
}

export function runtimeOf(ctx: ToolContext): WhatsAppRuntime {
  const rt = runtimes.get(ctx.dataDir);
  if (!rt) throw new MemoError('TOOL_FAILED', 'The WhatsApp pack is not active (its activate() has not run).');
  return rt;
}
