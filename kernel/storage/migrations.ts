/**
 * What every store opening shares, SQLite file or PostgreSQL schema: migrations named and ordered
 * by their 13-digit timestamp, each in its own transaction with a check before its commit, a
 * database that records a migration this code does not know refused untouched, and `synchronize`
 * for tests only. The dialect files (sqlite.ts, postgres.ts) make the DataSource; this one runs it.
 */
import type { DataSource, MigrationInterface, QueryRunner } from 'typeorm';
import { isMemoError, MemoError } from '../errors.js';

/** An entity class (decorated with typeorm's @Entity). */
export type EntityClass = abstract new (...args: never[]) => unknown;

/**
 * A typeorm migration class. typeorm runs migrations in the order of the 13-digit timestamp at
 * the end of their names (`CreateNotes1796064597881`), whatever order they are listed in.
 */
export type MigrationClass = new () => MigrationInterface;

export interface StoreOptions {
  entities: EntityClass[];
  /** Listed oldest first; each name ends with a later 13-digit timestamp than the one before. */
  migrations: MigrationClass[];
  /**
   * Tests only: tables are made from the entities and migrations are neither run nor recorded.
   * Refused outside tests, where a changed entity would silently alter (or drop) a person's data.
   */
  synchronize?: boolean;
}

export interface NamedMigration {
  name: string;
  timestamp: number;
  cls: MigrationClass;
}

const TIMESTAMP = /(?<!\d)(\d{13})$/;

export const SILENT = { logQuery() {}, logQueryError() {}, logQuerySlow() {}, logSchemaBuild() {}, logMigration() {}, log() {} };

/** True under jest (or when a test runner says so): the only place `synchronize` is allowed. */
function underTest(): boolean {
  return process.env.NODE_ENV === 'test' || process.env.JEST_WORKER_ID !== undefined;
}

/** Refuses `synchronize` outside tests. `label` names the database in the message. */
export function checkSynchronize(label: string, synchronize: boolean | undefined): void {
  if (synchronize && !underTest()) {
    throw new MemoError(
      'VALIDATION',
      `synchronize is for tests only (NODE_ENV=test or under jest), and ${label} is not opened by a test: schema changes go through migrations, so a changed entity never alters a person's data unasked.`,
    );
  }
}

/**
 * Names each migration as typeorm will (the instance's `name`, else its class name) and checks that
 * typeorm's order is the listed order: unique names, each ending with a later timestamp.
 */
export function namedMigrations(label: string, classes: MigrationClass[]): NamedMigration[] {
  const out: NamedMigration[] = [];
  for (const cls of classes) {
    const instance = new cls();
    const name = instance.name ?? cls.name;
    const m = TIMESTAMP.exec(name);
    if (!m) {
      throw new MemoError(
        'VALIDATION',
        `Migration "${name}" for ${label} has no timestamp: typeorm orders migrations by the 13-digit JavaScript timestamp (Date.now()) that ends the class name, e.g. CreateNotes1796064597881.`,
      );
    }
    if (instance.transaction === false) {
      throw new MemoError(
        'VALIDATION',
        `Migration "${name}" for ${label} asks to run outside a transaction; each migration runs in its own, so a failure leaves nothing half done.`,
      );
    }
    const timestamp = Number(m[1]);
    const previous = out.at(-1);
    if (out.some((o) => o.name === name))
      throw new MemoError('VALIDATION', `Migration "${name}" is listed twice for ${label}; migration names must be unique.`);
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
 * The migrations as typeorm gets them: each wrapped so a failure can name it (`running()`), and so
 * `beforeCommit` (the dialect's integrity check) runs inside its transaction, after its own work.
 */
export function trackedMigrations(
  named: NamedMigration[],
  beforeCommit: (qr: QueryRunner) => Promise<void>,
): { classes: MigrationClass[]; running: () => string | undefined } {
  let current: string | undefined;
  const classes = named.map(
    ({ name, cls }) =>
      class {
        readonly name = name;
        private readonly inner = new cls();
        async up(qr: QueryRunner): Promise<void> {
          current = name;
          await this.inner.up(qr);
          await beforeCommit(qr);
        }
        down(qr: QueryRunner): Promise<unknown> {
          return this.inner.down(qr);
        }
      },
  );
  return { classes, running: () => current };
}

/** A driver error as one line: its message and the statement, never its parameters (they can hold a person's data). */
export function describeFailure(err: unknown): string {
  const e = err as { message?: unknown; query?: unknown };
  const message = typeof e?.message === 'string' ? e.message : String(err);
  const query = typeof e?.query === 'string' ? ` (in: ${e.query.replace(/\s+/g, ' ').trim().slice(0, 300)})` : '';
  return message + query;
}

export async function destroyQuietly(ds: DataSource): Promise<void> {
  try {
    if (ds.isInitialized) await ds.destroy();
  } catch {
    // Closing after a failure: the first error is the one to report.
  }
}

/**
 * Runs the pending migrations of an initialised DataSource, oldest first, each in its own
 * transaction. Before anything runs, the recorded history must be a prefix of the known one: a
 * database that records an unknown migration (written by a newer version), or that skipped one
 * older than its last, is refused untouched. On any failure the DataSource is closed and the error
 * names the database (`label`) and the migration; `scrub` cleans a driver's message first.
 */
export async function migrate(
  ds: DataSource,
  label: string,
  named: NamedMigration[],
  running: () => string | undefined,
  scrub: (text: string) => string = (t) => t,
): Promise<void> {
  const typeorm = await import('typeorm');
  try {
    const recorded = new Set((await new typeorm.MigrationExecutor(ds).getExecutedMigrations()).map((m) => m.name));
    const known = new Set(named.map((m) => m.name));
    const unknown = [...recorded].filter((n) => !known.has(n));
    if (unknown.length) {
      throw new MemoError(
        'CONFLICT',
        `The database ${label} records migration(s) this code does not know (${unknown.join(', ')}): it was written by a newer version. It is left as it is; nothing was run or undone. Use the version that wrote it.`,
      );
    }
    // Recorded migrations must be the oldest ones: a pending migration older than a recorded one
    // was slipped into the history and would run out of order.
    const lastRecorded = named.findLastIndex((m) => recorded.has(m.name));
    // lastRecorded >= 0 whenever skipped is found: it is searched for among the ones before it.
    const skipped = lastRecorded > 0 ? named.slice(0, lastRecorded).find((m) => !recorded.has(m.name)) : undefined;
    if (skipped) {
      throw new MemoError(
        'CONFLICT',
        `The database ${label} has not run migration "${skipped.name}" but has run the later "${named[lastRecorded]!.name}": a migration was added before one that already ran. New migrations go last, with a later timestamp. Nothing was run.`,
      );
    }
  } catch (err) {
    await destroyQuietly(ds);
    if (isMemoError(err)) throw err;
    throw new Error(`The database ${label}: its migration history cannot be read: ${scrub(describeFailure(err))}`, { cause: err });
  }

  try {
    await ds.runMigrations({ transaction: 'each' });
  } catch (err) {
    await destroyQuietly(ds);
    const name = running();
    const what = name ? `migration "${name}" failed and was rolled back` : 'its migrations could not start';
    throw new Error(`The database ${label}: ${what}: ${scrub(describeFailure(err))}`, { cause: err });
  }
}
