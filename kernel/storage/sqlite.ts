import * as fs from 'node:fs';
import * as path from 'node:path';
import type { DataSource, MigrationInterface, QueryRunner } from 'typeorm';
import { MemoError } from '../errors.js';

/** An entity class (decorated with typeorm's @Entity). */
export type EntityClass = abstract new (...args: never[]) => unknown;

/**
 * A typeorm migration class. typeorm runs migrations in the order of the 13-digit timestamp at
 * the end of their names (`CreateNotes1796064597881`), whatever order they are listed in.
 */
export type MigrationClass = new () => MigrationInterface;

export interface SqliteOptions {
  entities: EntityClass[];
  /** Listed oldest first; each name ends with a later 13-digit timestamp than the one before. */
  migrations: MigrationClass[];
  /**
   * Tests only: tables are made from the entities and migrations are neither run nor recorded.
   * Refused outside tests, where a changed entity would silently alter (or drop) a person's data.
   */
  synchronize?: boolean;
}

interface NamedMigration {
  name: string;
  timestamp: number;
  cls: MigrationClass;
}

const TIMESTAMP = /(?<!\d)(\d{13})$/;

const SILENT = { logQuery() {}, logQueryError() {}, logQuerySlow() {}, logSchemaBuild() {}, logMigration() {}, log() {} };

/** True under jest (or when a test runner says so): the only place `synchronize` is allowed. */
function underTest(): boolean {
  return process.env.NODE_ENV === 'test' || process.env.JEST_WORKER_ID !== undefined;
}

/**
 * Names each migration as typeorm will (the instance's `name`, else its class name) and checks that
 * typeorm's order is the listed order: unique names, each ending with a later timestamp.
 */
function namedMigrations(file: string, classes: MigrationClass[]): NamedMigration[] {
  const out: NamedMigration[] = [];
  for (const cls of classes) {
    const instance = new cls();
    const name = instance.name ?? cls.name;
    const m = TIMESTAMP.exec(name);
    if (!m) {
      throw new MemoError(
        'VALIDATION',
        `Migration "${name}" for ${file} has no timestamp: typeorm orders migrations by the 13-digit JavaScript timestamp (Date.now()) that ends the class name, e.g. CreateNotes1796064597881.`,
      );
    }
    if (instance.transaction === false) {
      throw new MemoError(
        'VALIDATION',
        `Migration "${name}" for ${file} asks to run outside a transaction; each migration runs in its own, so a failure leaves nothing half done.`,
      );
    }
    const timestamp = Number(m[1]);
    const previous = out.at(-1);
    if (out.some((o) => o.name === name)) throw new MemoError('VALIDATION', `Migration "${name}" is listed twice for ${file}; migration names must be unique.`);
    if (previous && timestamp <= previous.timestamp) {
      throw new MemoError(
        'VALIDATION',
        `Migration "${name}" is listed after "${previous.name}" but its timestamp is not later: typeorm runs migrations in timestamp order, not list order. List them oldest first, and give a new migration a later timestamp than every existing one.`,
      );
    }
    out.push({ name, timestamp, cls });
  }
  return out;
}

/**
 * Wraps a migration so a failure can name it, and so it cannot leave rows that break a foreign key:
 * typeorm turns foreign keys off while a migration runs (a SQLite table rebuild needs it), so the
 * check runs inside the migration's transaction, before its commit.
 */
function tracked({ name, cls }: NamedMigration, onStart: (name: string) => void): MigrationClass {
  return class {
    readonly name = name;
    private readonly inner = new cls();
    async up(qr: QueryRunner): Promise<void> {
      onStart(name);
      await this.inner.up(qr);
      const broken = (await qr.query('PRAGMA foreign_key_check')) as Array<{ table: string; rowid: number; parent: string }>;
      if (broken.length) {
        const first = broken[0]!; // length checked on the line above
        throw new Error(`it leaves ${broken.length} row(s) whose foreign key points nowhere (first: ${first.table} row ${first.rowid} -> ${first.parent})`);
      }
    }
    down(qr: QueryRunner): Promise<unknown> {
      return this.inner.down(qr);
    }
  };
}

function describeFailure(err: unknown): string {
  const e = err as { message?: unknown; query?: unknown };
  const message = typeof e?.message === 'string' ? e.message : String(err);
  // The statement, not its parameters: parameters can hold a person's data.
  const query = typeof e?.query === 'string' ? ` (in: ${e.query.replace(/\s+/g, ' ').trim().slice(0, 300)})` : '';
  return message + query;
}

async function destroyQuietly(ds: DataSource): Promise<void> {
  try {
    if (ds.isInitialized) await ds.destroy();
  } catch {
    // Closing after a failure: the first error is the one to report.
  }
}

/**
 * Opens a typeorm DataSource on a SQLite file (better-sqlite3): WAL, foreign keys on, the folder
 * made on demand (0700) and the file owner-only (0600; SQLite gives its -wal and -shm files the same
 * mode). Pending migrations run oldest first, each in its own transaction; if one fails, its
 * transaction is rolled back, the DataSource is closed and the error names the migration. A file
 * that records a migration this code does not know (written by a newer version) is refused
 * untouched. typeorm is imported on demand: it costs about half a second, and most CLI commands
 * never touch a database.
 */
export async function openSqlite(file: string, options: SqliteOptions): Promise<DataSource> {
  if (options.synchronize && !underTest()) {
    throw new MemoError(
      'VALIDATION',
      `synchronize is for tests only (NODE_ENV=test or under jest), and ${file} is not opened by a test: schema changes go through migrations, so a changed entity never alters a person's data unasked.`,
    );
  }
  const migrations = namedMigrations(file, options.migrations);
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  fs.closeSync(fs.openSync(file, 'a', 0o600));

  const typeorm = await import('typeorm');
  let running: string | undefined;
  const ds = new typeorm.DataSource({
    type: 'better-sqlite3',
    database: file,
    entities: options.entities,
    migrations: migrations.map((m) => tracked(m, (name) => (running = name))),
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

  try {
    const recorded = new Set((await new typeorm.MigrationExecutor(ds).getExecutedMigrations()).map((m) => m.name));
    const known = new Set(migrations.map((m) => m.name));
    const unknown = [...recorded].filter((n) => !known.has(n));
    if (unknown.length) {
      throw new MemoError(
        'CONFLICT',
        `The database ${file} records migration(s) this code does not know (${unknown.join(', ')}): it was written by a newer version. It is left as it is; nothing was run or undone. Use the version that wrote it.`,
      );
    }
    // Recorded migrations must be the oldest ones: a pending migration older than a recorded one
    // was slipped into the history and would run out of order.
    const lastRecorded = migrations.findLastIndex((m) => recorded.has(m.name));
    // lastRecorded >= 0 whenever skipped is found: it is searched for among the ones before it.
    const skipped = lastRecorded > 0 ? migrations.slice(0, lastRecorded).find((m) => !recorded.has(m.name)) : undefined;
    if (skipped) {
      throw new MemoError(
        'CONFLICT',
        `The database ${file} has not run migration "${skipped.name}" but has run the later "${migrations[lastRecorded]!.name}": a migration was added before one that already ran. New migrations go last, with a later timestamp. Nothing was run.`,
      );
    }
  } catch (err) {
    await destroyQuietly(ds);
    throw err;
  }

  try {
    await ds.runMigrations({ transaction: 'each' });
  } catch (err) {
    await destroyQuietly(ds);
    const what = running ? `migration "${running}" failed and was rolled back` : 'its migrations could not start';
    throw new Error(`The database ${file}: ${what}: ${describeFailure(err)}`, { cause: err });
  }
  return ds;
}
