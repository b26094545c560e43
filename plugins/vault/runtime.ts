/**
 * The vault pack's state in one kernel: its api, its database, and the vault that is open. Several
 * kernels can share this module in one process (tests, host apps), so state is kept per kernel, by the
 * pack's data folder (which the kernel hands to both `activate` and every call).
 */
import { existsSync, renameSync, statSync } from 'node:fs';
import { lstat } from 'node:fs/promises';
import path from 'node:path';
import type { DataSource } from 'typeorm';
import type { Database } from 'better-sqlite3';
import { isSqliteDamage, MemoError, runHeavy, type Logger, type PackApi, type ToolContext } from 'memo-kernel/pack';
import type { SyncProgress, Vault } from './vault.js';
import { backupsOf, backUpDaily } from './planning-backup.js';

export const NOT_CONFIGURED = 'no vault configured: run memo vault init';

/**
 * An index up to this size is checked (`PRAGMA quick_check`) before the first call uses it; a larger
 * one in a worker thread while calls are served (about 1 to 1.5 s for 100 MB: most of the 2 s a
 * reopen may take). MEMO_VAULT_CHECK_ON_LOOP_BYTES changes it (tests of the worker path).
 */
const CHECK_ON_LOOP_BYTES = Number(process.env.MEMO_VAULT_CHECK_ON_LOOP_BYTES ?? 8 * 1024 * 1024);

let vaultModule: Promise<typeof import('./vault.js')> | undefined;
/** The vault's code (files, index, markdown), imported with the first vault rather than when the pack loads. */
const vaultCode = () => (vaultModule ??= import('./vault.js'));

/** What became of a damaged index: set aside (never deleted) and built again from the files. */
export interface IndexHealing {
  at: string;
  /** Why it could not be used (SQLite's words). */
  problem: string;
  /** Where the damaged file now is. */
  setAside: string;
}

export class VaultRuntime {
  private db: Promise<DataSource> | null = null;
  /** Set when this run found the index damaged and built it again (memo vault status, the pack's log line). */
  healed: IndexHealing | null = null;
  /** The open vault's note id journal (note-ids.ts). */
  private journal: { readonly size: number } | null = null;

  /** How many note ids the open vault's journal keeps (memo vault status); null before a vault opens. */
  get journalSize(): number | null {
    return this.journal?.size ?? null;
  }
  private planningDs: Promise<DataSource> | null = null;
  private planningReady: Promise<DataSource> | null = null;
  private current: { key: string; vault: Promise<Vault> } | null = null;
  private disposed = false;

  constructor(readonly api: PackApi) {}

  /** The index's DataSource (vault.sqlite): a per-instance cache of the files, always a SQLite file (FTS5). */
  database(): Promise<DataSource> {
    this.db ??= this.openIndex();
    const opening = this.db;
    opening.catch(() => {
      if (this.db === opening) this.db = null;
    });
    return opening;
  }

  /** vault.sqlite in the pack's data folder. */
  get indexFile(): string {
    return path.join(this.api.dataDir, 'vault.sqlite');
  }

  /**
   * Opens the index, checked (`PRAGMA quick_check`). One that cannot be opened or fails the check is
   * set aside (renamed `vault.sqlite.broken-<time>`, with its -wal and -shm; never deleted), the
   * person is told in one line, and a new one is made: the vault's next open fills it from the files,
   * each note taking its id back from note-ids.jsonl.
   */
  private async openIndex(): Promise<DataSource> {
    const { ENTITIES, MIGRATIONS } = await import('./schema.js');
    const open = () => this.api.database({ name: 'vault', entities: ENTITIES, migrations: MIGRATIONS });
    let ds: DataSource | undefined;
    let problem: string;
    try {
      ds = await open();
      // A small index is checked here (milliseconds); a large one in a worker, while calls are served.
      if ((statSync(this.indexFile, { throwIfNoEntry: false })?.size ?? 0) > CHECK_ON_LOOP_BYTES) {
        this.checkInWorker(ds);
        return ds;
      }
      const check = sqliteOf(ds).pragma('quick_check(1)', { simple: true });
      if (check === 'ok') {
        this.indexCheck = 'ok';
        return ds;
      }
      problem = `quick_check: ${String(check)}`;
    } catch (err) {
      if (!isSqliteDamage(err)) throw err;
      problem = damageText(err);
    }
    if (ds?.isInitialized) await ds.destroy();
    this.setAside(problem);
    const fresh = await open();
    // Made just now from nothing: there is nothing in it to check.
    this.indexCheck = 'ok';
    return fresh;
  }

  /** The index's check: `ok`, `running` (a large index, in a worker), what it found, or null (not checked: see the log). */
  indexCheck: string | null = null;

  /** Checks a large index off the event loop; a damaged one is then healed as a call that met the damage would. */
  private checkInWorker(ds: DataSource): void {
    this.indexCheck = 'running';
    void runHeavy<string>(new URL('./index-check.js', import.meta.url), 'quickCheck', this.indexFile, {
      what: 'checking the vault index',
      deadlineMs: 10 * 60_000,
    }).then(
      async (result) => {
        this.indexCheck = result;
        // Still the index this check was for (not one already closed or replaced).
        if (result !== 'ok' && this.db !== null && (await this.db.catch(() => null)) === ds) await this.healIndex(new Error(`quick_check: ${result}`));
      },
      (err: unknown) => {
        this.indexCheck = null;
        this.api.logger.warn(`vault: the index could not be checked (${(err as Error).message}); it is used unchecked`);
      },
    );
  }

  /** Renames the damaged index (and its -wal, -shm) out of the way and says so once. */
  private setAside(problem: string): void {
    const at = new Date(this.api.clock.now());
    const aside = `${this.indexFile}.broken-${at.toISOString().replace(/[:.]/g, '-')}`;
    for (const suffix of ['', '-wal', '-shm']) if (existsSync(this.indexFile + suffix)) renameSync(this.indexFile + suffix, aside + suffix);
    this.healed = { at: at.toISOString(), problem, setAside: aside };
    this.api.logger.warn(
      `vault: the index ${this.indexFile} could not be used (${problem}); it was set aside as ${path.basename(aside)} and is being built again from the notes, each keeping its id`,
    );
  }

  /**
   * A call found the index damaged while the vault was open: the open vault is closed, the index set
   * aside and opened anew (the next call fills it from the files). Resolves once that is done.
   */
  healIndex(err: unknown): Promise<void> {
    // Calls that failed together on the same damaged index heal it once.
    this.healing ??= this.setAsideOpen(err).finally(() => (this.healing = null));
    return this.healing;
  }

  private healing: Promise<void> | null = null;

  private async setAsideOpen(err: unknown): Promise<void> {
    const current = this.current;
    this.current = null;
    if (current) await (await current.vault.catch(() => null))?.close();
    const db = this.db;
    this.db = null;
    const ds = await db?.catch(() => null);
    if (ds?.isInitialized) await ds.destroy();
    this.setAside(damageText(err));
  }

  /**
   * The planning DataSource (statuses, projects, tasks, inbox, settings): vault-planning.sqlite, or the
   * pack's PostgreSQL schema when the kernel has MEMO_DATABASE_URL (shared by every instance). On first
   * use the rows an older version kept in vault.sqlite are copied over once (planning-copy.ts); when
   * that fails the call fails saying so, and the next call tries again.
   */
  planningDatabase(): Promise<DataSource> {
    this.planningDs ??= this.openPlanning();
    const opening = this.planningDs;
    opening.catch(() => {
      if (this.planningDs === opening) this.planningDs = null;
    });
    if (!this.planningReady) {
      const ready = (async () => {
        const planning = await opening;
        // The planning rows an older version kept in the index: a damaged index (set aside and built
        // anew) has none to give, and never keeps the tasks from working.
        const index = await this.database().catch((err: unknown) => {
          this.api.logger.warn(`vault: the index could not be opened to look for planning rows of an older version (${(err as Error).message})`);
          return null;
        });
        const { copyOldPlanning } = await import('./planning-copy.js');
        if (index) await copyOldPlanning(sqliteOf(index), planning, this.api.logger);
        return planning;
      })();
      this.planningReady = ready;
      ready.catch(() => {
        if (this.planningReady === ready) this.planningReady = null;
      });
    }
    return this.planningReady;
  }

  /**
   * Whether this instance has planning data to look at without making any: the database is open, its
   * file exists, or it is the shared PostgreSQL one. The reminder service looks only then, so a
   * `memo serve` without a vault never creates one.
   */
  planningInUse(): boolean {
    return this.planningDs !== null || existsSync(this.planningFile) || this.api.sharedDatabase;
  }

  /** The reminder service (reminder-delivery.ts), once activate made it: writes poke it to look again. */
  reminders: { poke(): void } | null = null;

  /** vault-planning.sqlite in the pack's data folder (when the planning data is not in PostgreSQL). */
  get planningFile(): string {
    return path.join(this.api.dataDir, 'vault-planning.sqlite');
  }

  /**
   * Opens the planning database. Its SQLite file is the truth for statuses, projects, tasks and the
   * inbox, so it is never set aside: it is checked (`PRAGMA quick_check`) when opened, and a damaged
   * one stops only the calls that need it, each saying which file and which backup to restore (notes,
   * search and the index go on). A sound one is copied to a dated backup beside it once a day
   * (`VACUUM INTO`, the newest BACKUPS_KEPT kept).
   */
  private async openPlanning(): Promise<DataSource> {
    const { PLANNING_ENTITIES, PLANNING_MIGRATIONS } = await import('./schema.js');
    let ds: DataSource;
    try {
      ds = await this.api.database({ name: 'vault-planning', entities: PLANNING_ENTITIES, migrations: PLANNING_MIGRATIONS, portable: true });
    } catch (err) {
      if (isSqliteDamage(err)) throw this.planningDamaged(damageText(err));
      throw err;
    }
    if (ds.options.type !== 'better-sqlite3') return ds;
    const db = sqliteOf(ds);
    const check = String(db.pragma('quick_check(1)', { simple: true }));
    if (check !== 'ok') {
      await ds.destroy();
      throw this.planningDamaged(`quick_check: ${check}`);
    }
    backUpDaily(db, this.planningFile, this.api.clock.now(), this.api.logger);
    return ds;
  }

  /** The error a planning call gets while the file is damaged (said once in the log too). */
  private planningDamaged(problem: string): MemoError {
    const backups = backupsOf(this.planningFile);
    const newest = backups.at(-1);
    const restore = newest
      ? `stop memo, move it aside, and copy the newest backup ${newest} (of ${backups.length}) in its place`
      : `stop memo and restore it from a backup of your own (memo keeps dated copies beside it once it has run a day with a sound file; there are none yet)`;
    const message = `The vault's planning database ${this.planningFile} is damaged (${problem}): statuses, projects, tasks and the inbox cannot be used until it is restored; ${restore}. Notes and search keep working.`;
    if (!this.planningWarned) this.api.logger.warn(`vault: ${message}`);
    this.planningWarned = true;
    return new MemoError('TOOL_FAILED', message, { details: { file: this.planningFile, ...(newest ? { backup: newest } : {}) } });
  }

  private planningWarned = false;

  /** The folder setting, as text (the manifest's default is `vault`). */
  folderSetting(ctx: ToolContext): string {
    const f = ctx.config.folder;
    return typeof f === 'string' && f.trim() ? f.trim() : 'vault';
  }

  /**
   * The open vault for this call's settings: opened (index brought in line with the files, watcher
   * started) on first use, and again when the folder setting changes. `create` makes the folder
   * (memo vault init); otherwise a missing folder is NOT_FOUND saying how to set one up.
   */
  async vault(ctx: ToolContext, options: { create?: boolean } = {}): Promise<Vault> {
    if (this.disposed) throw new MemoError('CANCELLED', 'The vault pack is unloading.');
    const folder = this.folderSetting(ctx);
    const { shown } = await vaultCode();
    const resolved = await ctx.sandbox.resolve(folder, options.create ? 'write' : 'read');
    if (resolved.relative === '') {
      throw new MemoError(
        'VALIDATION',
        `The vault folder ${shown(folder)} is the workspace root itself; a vault is a folder inside it (memo vault init notes), so the whole checkout is never indexed.`,
      );
    }
    if (!resolved.exists) {
      if (!options.create) {
        throw new MemoError('NOT_FOUND', `${NOT_CONFIGURED} (the vault folder ${shown(folder)} does not exist under the workspace root).`, {
          details: { folder },
        });
      }
      await makeFolder(ctx, resolved.real);
    } else if (!resolved.isDirectory) {
      throw new MemoError('VALIDATION', `The vault folder ${shown(folder)} is a file, not a folder.`, { details: { folder } });
    }
    const key = resolved.real;
    if (this.current?.key !== key) {
      const previous = this.current;
      const opening = (async () => {
        if (previous) await (await previous.vault.catch(() => null))?.close();
        return this.open(ctx, key, folder);
      })();
      this.current = { key, vault: opening };
      opening.catch(() => {
        if (this.current?.vault === opening) this.current = null;
      });
    }
    return this.current.vault;
  }

  private async open(ctx: ToolContext, real: string, folder: string): Promise<Vault> {
    const ds = await this.database();
    const { Vault } = await vaultCode();
    const { VaultIndex, BULK_MARK } = await import('./vault-index.js');
    // typeorm's better-sqlite3 driver keeps the connection here: the index's batches use it directly.
    const index = new VaultIndex(sqliteOf(ds));
    const vault = new Vault(real, folder, ctx.sandbox, index, this.api.logger);
    if (index.meta('vault_path') !== real) {
      // Another folder than the one indexed: its ids and links mean nothing here.
      index.clearFiles();
      index.setMeta('vault_path', real);
    }
    if (index.meta(BULK_MARK) !== undefined) {
      // A build that was stopped (the process killed) left notes without their links or text: built again.
      this.api.logger.warn(`vault: the index of ${folder} was left half built by a build that was stopped; it is being built again, each note keeping its id`);
      index.clearFiles();
    }
    // Made again if such a build had dropped them.
    index.ensureIndexes();
    // Ids kept outside the index: a new or rebuilt index takes them back; a journal that is missing (a
    // vault indexed by an older version) or of another folder is written from the index as it is.
    const { NoteIdJournal } = await import('./note-ids.js');
    const { journal, fresh } = NoteIdJournal.open(path.join(this.api.dataDir, 'note-ids.jsonl'), real, this.api.logger);
    if (fresh) journal.rewrite(index.idEntries());
    index.useJournal(journal, (rel) => existsSync(path.join(real, rel)));
    this.journal = journal;
    await vault.sync({ progress: buildProgress(this.api.logger, folder, this.api.clock) });
    if (ctx.config.watch !== false) await vault.watch();
    if (this.disposed) {
      await vault.close();
      throw new MemoError('CANCELLED', 'The vault pack is unloading.');
    }
    return vault;
  }

  dispose(): Promise<void> {
    this.disposed = true;
    const current = this.current;
    this.current = null;
    return current ? current.vault.then((v) => v.close()).catch(() => undefined) : Promise.resolve();
  }
}

/**
 * A line in serve's output every few seconds while a vault's files are read into its index (a first
 * build of a large vault takes seconds), and one when it is done.
 */
function buildProgress(logger: Logger, folder: string, clock: { now(): number }): SyncProgress {
  const started = clock.now();
  let said = started;
  return (done, total) => {
    const now = clock.now();
    if (done < total && now - said < PROGRESS_EVERY_MS) return;
    said = now;
    const seconds = ((now - started) / 1000).toFixed(1);
    logger.info(
      done < total
        ? `vault: indexing ${folder}: ${done.toLocaleString('en')} of ${total.toLocaleString('en')} files (${Math.floor((done / total) * 100)}%, ${seconds} s)`
        : `vault: indexed ${folder}: ${total.toLocaleString('en')} files in ${seconds} s`,
    );
  };
}

/** How often a long build says how far it is. */
const PROGRESS_EVERY_MS = 2000;

/** SQLite's words for a damage, without the path (said beside it). */
function damageText(err: unknown): string {
  for (let e = err as { message?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++)
    if (typeof e.message === 'string' && /not a database|malformed|corrupt/i.test(e.message))
      return /not a database/.test(e.message) ? 'file is not a database' : 'database disk image is malformed';
  return (err as Error)?.message ?? String(err);
}

/** typeorm's better-sqlite3 driver keeps the connection here: the index's batches use it directly. */
function sqliteOf(ds: DataSource): Database {
  return (ds.driver as unknown as { databaseConnection: Database }).databaseConnection;
}

/** The vault folder itself, made one level at a time inside the root, never through a link. */
async function makeFolder(ctx: ToolContext, real: string): Promise<void> {
  const missing: string[] = [];
  for (let cur = real; ; cur = path.dirname(cur)) {
    try {
      if (!(await lstat(cur)).isDirectory()) throw new MemoError('VALIDATION', `Part of the vault folder's path is a file.`);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    if (!ctx.sandbox.isInside(cur)) throw new MemoError('PATH_OUTSIDE_ROOT', 'The vault folder leads outside the workspace root.');
    missing.unshift(cur);
  }
  const { mkdir } = await import('node:fs/promises');
  for (const d of missing) {
    await mkdir(d).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err;
    });
    if (!(await lstat(d)).isDirectory()) throw new MemoError('CONFLICT', 'The vault folder changed while it was being created.');
  }
}

/** Each kernel's runtime, by the pack's data folder. */
const runtimes = new Map<string, VaultRuntime>();

export function register(api: PackApi): VaultRuntime {
  const rt = new VaultRuntime(api);
  runtimes.set(api.dataDir, rt);
  return rt;
}

export function unregister(rt: VaultRuntime): Promise<void> {
  if (runtimes.get(rt.api.dataDir) === rt) runtimes.delete(rt.api.dataDir);
  return rt.dispose();
}

export function runtimeOf(ctx: ToolContext): VaultRuntime {
  const rt = runtimes.get(ctx.dataDir);
  if (!rt) throw new MemoError('TOOL_FAILED', 'The vault pack is not active (its activate() has not run).');
  return rt;
}
