import type { DataSource } from 'typeorm';
import { MemoError } from '../errors.js';
import type { DatabaseUrl } from './database-url.js';
import { checkSynchronize, describeFailure, destroyQuietly, migrate, namedMigrations, SILENT, trackedMigrations, type StoreOptions } from './migrations.js';

/** PostgreSQL's identifier limit (NAMEDATALEN - 1). */
const MAX_IDENTIFIER = 63;
const SCHEMA = /^[a-z_][a-z0-9_]*$/;

/** Connections per store: one holds the migration lock while another runs the migrations; the rest serve calls. */
const POOL_SIZE = 5;

/**
 * Opens a typeorm DataSource on one schema (namespace) of a PostgreSQL database: the schema is this
 * store's alone, as a SQLite file is, and every connection's search_path is that schema only, so a
 * migration's unqualified `CREATE TABLE "notes"` lands there and cannot see another store's tables.
 * Migrations keep their SQLite meaning (oldest first, each in its own transaction, a database newer
 * than the code refused untouched); PostgreSQL checks foreign keys on every statement, so no check is
 * added before the commit. Instances that share the database open a store one at a time (an
 * advisory lock per schema), so two of them starting together never run a migration twice.
 *
 * The password never appears in what this throws: messages name `url.display`, and a driver's
 * message is scrubbed of the password first.
 */
export async function openPostgres(url: DatabaseUrl, schema: string, options: StoreOptions): Promise<DataSource> {
  if (!SCHEMA.test(schema) || schema.length > MAX_IDENTIFIER || schema.startsWith('pg_')) {
    throw new MemoError(
      'VALIDATION',
      `"${schema}" cannot name a PostgreSQL schema: use lower-case letters, digits and underscores, at most ${MAX_IDENTIFIER} characters, not starting with a digit or pg_.`,
    );
  }
  const label = `${url.display} (schema "${schema}")`;
  checkSynchronize(label, options.synchronize);
  const named = namedMigrations(label, options.migrations);
  const typeorm = await import('typeorm');
  // Nothing to check before a commit: PostgreSQL enforces foreign keys statement by statement.
  const tracked = trackedMigrations(named, () => Promise.resolve());
  const ds = new typeorm.DataSource({
    type: 'postgres',
    ...url.connection(),
    schema,
    entities: options.entities,
    migrations: tracked.classes,
    migrationsRun: false,
    migrationsTransactionMode: 'each',
    synchronize: false,
    // No extensions: the entities need none, and creating one needs more rights than a store should have.
    installExtensions: false,
    applicationName: 'memo',
    connectTimeoutMS: 10_000,
    poolSize: POOL_SIZE,
    extra: {
      // Every connection of the pool starts in this schema alone.
      options: `-c search_path=${schema}`,
      // A connection that dies while checked out but between queries (a QueryRunner kept for a
      // transaction or a run of reads, when the server restarts or the network drops) emits 'error'
      // on its client, which the pool listens for only while the client is idle: unheard, it would
      // end the process. Heard here, the holder's next query fails instead, and the pool drops the
      // dead client when it is given back.
      onConnect: (client: { on(event: 'error', listener: () => void): unknown }) => void client.on('error', () => {}),
    },
    logger: SILENT,
    // A connection that dies while idle (the server restarted) is dropped from the pool and replaced
    // on next use; the call that needed it gets the error, never the process.
    poolErrorHandler: () => {},
  });
  try {
    await ds.initialize();
  } catch (err) {
    await destroyQuietly(ds);
    throw new Error(`The database ${label} cannot be opened: ${url.scrub(describeFailure(err))}`, { cause: err });
  }

  explainConnectionFailures(ds, label, url);

  const lock = ds.createQueryRunner();
  try {
    await lock.connect();
    await lock.query(`SELECT pg_advisory_lock(hashtext($1))`, [`memo-store:${schema}`]);
  } catch (err) {
    await lock.release().catch(() => {});
    await destroyQuietly(ds);
    throw new Error(`The database ${label} cannot be prepared: ${url.scrub(describeFailure(err))}`, { cause: err });
  }
  try {
    try {
      await ds.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
      if (options.synchronize) await ds.synchronize();
    } catch (err) {
      await destroyQuietly(ds);
      throw new Error(`The database ${label} cannot be prepared: ${url.scrub(describeFailure(err))}`, { cause: err });
    }
    if (!options.synchronize) await migrate(ds, label, named, tracked.running, (t) => url.scrub(t));
  } finally {
    // Closing the DataSource (after a failure) ends the session, which releases the lock as well.
    if (ds.isInitialized) await lock.query(`SELECT pg_advisory_unlock(hashtext($1))`, [`memo-store:${schema}`]).catch(() => {});
    await lock.release().catch(() => {});
  }
  return ds;
}

type Connect = (callback?: (err: Error | undefined, client: unknown, release: unknown) => void) => unknown;

/**
 * While the server is down or restarting, a call that needs the database fails with a sentence that
 * names the database (password masked) and says it recovers by itself, instead of the socket's bare
 * `connect ECONNREFUSED`. typeorm takes every connection from the pool's `connect` (its master pool:
 * no replication here), so the wording is added there; the pool itself reconnects on the next call.
 */
function explainConnectionFailures(ds: DataSource, label: string, url: DatabaseUrl): void {
  const pool = (ds.driver as unknown as { master?: { connect: Connect } }).master;
  if (!pool) return;
  const connect = pool.connect.bind(pool);
  const unreachable = (err: Error) =>
    Object.assign(
      new Error(
        `The database ${label} cannot be reached (${url.scrub(err.message)}); calls that need it fail until it answers again, and Memo reconnects by itself.`,
        { cause: err },
      ),
      { code: (err as { code?: unknown }).code },
    );
  pool.connect = (callback) =>
    callback
      ? connect((err, client, release) => callback(err ? unreachable(err) : err, client, release))
      : (connect() as Promise<unknown>).catch((err: Error) => Promise.reject(unreachable(err)));
}
