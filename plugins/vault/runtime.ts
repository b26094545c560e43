/**
 * The vault pack's state in one kernel: its api, its database, and the vault that is open. Several
 * kernels can share this module in one process (tests, host apps), so state is kept per kernel, by the
 * pack's data folder (which the kernel hands to both `activate` and every call).
 */
import { lstat } from 'node:fs/promises';
import path from 'node:path';
import type { DataSource } from 'typeorm';
import type { Database } from 'better-sqlite3';
import { MemoError, type PackApi, type ToolContext } from 'memo-kernel/pack';
import type { Vault } from './vault.js';

export const NOT_CONFIGURED = 'no vault configured: run memo vault init';

let vaultModule: Promise<typeof import('./vault.js')> | undefined;
/** The vault's code (files, index, markdown), imported with the first vault rather than when the pack loads. */
const vaultCode = () => (vaultModule ??= import('./vault.js'));

export class VaultRuntime {
  private db: Promise<DataSource> | null = null;
  private planningDs: Promise<DataSource> | null = null;
  private planningReady: Promise<DataSource> | null = null;
  private current: { key: string; vault: Promise<Vault> } | null = null;
  private disposed = false;

  constructor(readonly api: PackApi) {}

  /** The index's DataSource (vault.sqlite): a per-instance cache of the files, always a SQLite file (FTS5). */
  database(): Promise<DataSource> {
    this.db ??= (async () => {
      const { ENTITIES, MIGRATIONS } = await import('./schema.js');
      return this.api.database({ name: 'vault', entities: ENTITIES, migrations: MIGRATIONS });
    })();
    return this.db;
  }

  /**
   * The planning DataSource (statuses, projects, tasks, inbox, settings): vault-planning.sqlite, or the
   * pack's PostgreSQL schema when the kernel has MEMO_DATABASE_URL (shared by every instance). On first
   * use the rows an older version kept in vault.sqlite are copied over once (planning-copy.ts); when
   * that fails the call fails saying so, and the next call tries again.
   */
  planningDatabase(): Promise<DataSource> {
    this.planningDs ??= (async () => {
      const { PLANNING_ENTITIES, PLANNING_MIGRATIONS } = await import('./schema.js');
      return this.api.database({ name: 'vault-planning', entities: PLANNING_ENTITIES, migrations: PLANNING_MIGRATIONS, portable: true });
    })();
    const opening = this.planningDs;
    opening.catch(() => {
      if (this.planningDs === opening) this.planningDs = null;
    });
    if (!this.planningReady) {
      const ready = (async () => {
        const [planning, index] = await Promise.all([opening, this.database()]);
        const { copyOldPlanning } = await import('./planning-copy.js');
        await copyOldPlanning(sqliteOf(index), planning, this.api.logger);
        return planning;
      })();
      this.planningReady = ready;
      ready.catch(() => {
        if (this.planningReady === ready) this.planningReady = null;
      });
    }
    return this.planningReady;
  }

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
    const { VaultIndex } = await import('./vault-index.js');
    // typeorm's better-sqlite3 driver keeps the connection here: the index's batches use it directly.
    const index = new VaultIndex(sqliteOf(ds));
    const vault = new Vault(real, folder, ctx.sandbox, index, this.api.logger);
    if (index.meta('vault_path') !== real) {
      // Another folder than the one indexed: its ids and links mean nothing here.
      index.clearFiles();
      index.setMeta('vault_path', real);
    }
    await vault.sync();
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
