/**
 * The kernel's stored state for one CLI command: the stores a command changes (PermissionStore,
 * PackSettings, ProviderSettings, SettingsStore) on whichever backend the data folder uses, the
 * files in it or the shared database (read once, not kept in step; the data folder's files copied in
 * the first time, as a kernel does).
 */
import { StderrLogger, type Logger } from '../logger.js';
import { SettingsStore } from './kernel-state-settings.js';
import type { Settings } from './shapes.js';
import { databaseFromSetting } from '../storage/database-url.js';
import type { KernelStateDb } from '../storage/kernel-state-db.js';
import { kernelStateDb } from './kernel-state-import.js';

/** For one CLI command: the shared kernel state when MEMO_DATABASE_URL is set (read once, not kept in step), else null. */
export function commandStateDb(dataDir: string, logger: Logger, env: NodeJS.ProcessEnv = process.env): KernelStateDb | null {
  const url = databaseFromSetting(env.MEMO_DATABASE_URL);
  return url ? kernelStateDb(url, dataDir, logger, { live: false }) : null;
}

/**
 * One command's use of a store (PermissionStore, PackSettings, ProviderSettings, SettingsStore) on
 * whichever backend this data folder uses: made, read, used, and every change saved (committed, on
 * the database) before it returns what `use` returned; closed in any case.
 */
export async function withCommandStore<S extends { ready(): Promise<void>; saved(): Promise<void> }, R>(
  dataDir: string,
  logger: Logger,
  make: (db: KernelStateDb | undefined) => S,
  use: (store: S) => R | Promise<R>,
): Promise<R> {
  const db = commandStateDb(dataDir, logger);
  try {
    const store = make(db ?? undefined);
    await store.ready();
    const out = await use(store);
    await store.saved();
    return out;
  } finally {
    await db?.close();
  }
}

/** The settings as stored now (the file, or the shared database when MEMO_DATABASE_URL is set). */
export function storedSettings(dataDir: string, logger: Logger = new StderrLogger()): Promise<Settings> {
  return withCommandStore(
    dataDir,
    logger,
    (db) => new SettingsStore(dataDir, logger, db),
    (store) => store.read(),
  );
}
