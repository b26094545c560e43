import * as fs from 'node:fs';
import * as path from 'node:path';
import type { DataSource } from 'typeorm';
import { checkSynchronize, describeFailure, destroyQuietly, migrate, namedMigrations, SILENT, trackedMigrations, type StoreOptions } from './migrations.js';

/**
 * typeorm turns foreign keys off while a SQLite migration runs (a table rebuild needs it), so each
 * migration checks them itself, inside its transaction, before its commit.
 */
async function foreignKeysHold(qr: import('typeorm').QueryRunner): Promise<void> {
  const broken = (await qr.query('PRAGMA foreign_key_check')) as Array<{ table: string; rowid: number; parent: string }>;
  if (broken.length) {
    const first = broken[0]!; // length checked on the line above
    throw new Error(`it leaves ${broken.length} row(s) whose foreign key points nowhere (first: ${first.table} row ${first.rowid} -> ${first.parent})`);
  }
}

/**
 * Opens a typeorm DataSource on a SQLite file (better-sqlite3): WAL, foreign keys on, the folder
 * made on demand (0700) and the file owner-only (0600; SQLite gives its -wal and -shm files the same
 * mode). Pending migrations run oldest first, each in its own transaction; if one fails, its
 * transaction is rolled back, the DataSource is closed and the error names the migration. A file
 * that records a migration this code does not know (written by a newer version) is refused
 * untouched (see migrations.ts). typeorm is imported on demand: it costs about half a second, and
 * most CLI commands never touch a database.
 */
export async function openSqlite(file: string, options: StoreOptions): Promise<DataSource> {
  checkSynchronize(file, options.synchronize);
  const named = namedMigrations(file, options.migrations);
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  fs.closeSync(fs.openSync(file, 'a', 0o600));

  const typeorm = await import('typeorm');
  const tracked = trackedMigrations(named, foreignKeysHold);
  const ds = new typeorm.DataSource({
    type: 'better-sqlite3',
    database: file,
    entities: options.entities,
    migrations: tracked.classes,
    migrationsRun: false,
    migrationsTransactionMode: 'each',
    synchronize: Boolean(options.synchronize),
    enableWAL: true,
    // typeorm prints failed migrations to the console even with logging off; the error thrown says it all.
    logger: SILENT,
  });
  try {
    await ds.initialize();
  } catch (err) {
    await destroyQuietly(ds);
    throw new Error(`The database ${file} cannot be opened: ${describeFailure(err)}`, { cause: err });
  }
  if (options.synchronize) return ds;
  await migrate(ds, file, named, tracked.running);
  return ds;
}
