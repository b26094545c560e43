import type { DataSource, QueryRunner, ReplicationMode } from 'typeorm';
import { MemoError } from '../errors.js';
import { connectionLossReason, isConnectionLoss, markConnectionLoss } from './connection-loss.js';
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
  const lost = lostConnection(label, url);
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
      onConnect: (client: PgClient) => {
        client.on('error', () => {});
        explainLostQueries(client, lost);
      },
    },
    logger: SILENT,
    // A connection that dies while idle (the server restarted) is dropped from the pool and replaced
    // on next use; the call that needed it gets the error, never the process.
    poolErrorHandler: () => {},
  });
  explainReleasedRunners(ds, lost);
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
    markConnectionLoss(
      Object.assign(
        new Error(
          `The database ${label} cannot be reached (${url.scrub(connectionLossReason(err))}); calls that need it fail until it answers again, and Memo reconnects by itself.`,
          { cause: err },
        ),
        { code: (err as { code?: unknown }).code },
      ),
    );
  // A client whose query lost its connection goes back to the pool as broken, so the pool drops it.
  // Given back plainly it could be handed out again before its socket's close is heard (the server's
  // FATAL answer comes first), and the next call would fail on a connection already known to be dead.
  const giveBack = (client: unknown, release: unknown) => (err?: unknown) => {
    const lost = LOST.get(client as object);
    (release as (err?: unknown) => void)(err ?? lost);
  };
  pool.connect = (callback) =>
    callback
      ? connect((err, client, release) => callback(err ? unreachable(err) : err, client, err ? release : giveBack(client, release)))
      : (connect() as Promise<unknown>).catch((err: Error) => Promise.reject(unreachable(err)));
}

/** The connection-loss error each client's query last failed with; such a client is not given back for reuse. */
const LOST = new WeakMap<object, Error>();

type PgClient = { on(event: 'error', listener: () => void): unknown; query: (...args: unknown[]) => unknown };

/**
 * The error for a connection lost while in use (the server crashed, restarted or was shut down, an
 * administrator ended the session, the network dropped), instead of the driver's bare words
 * ("Connection terminated unexpectedly", "read ECONNRESET", "terminating connection due to
 * administrator command"): a sentence naming the database, saying a write under way may or may not
 * have been saved (a COMMIT whose answer was lost) and that Memo reconnects by itself; the driver's
 * error stays as the cause, its code on the error. One sentence whatever the moment: under a query,
 * or between two statements of a transaction (explainReleasedRunners). Given an error it made
 * already, it says the same again.
 */
function lostConnection(label: string, url: DatabaseUrl): (err: unknown) => Error {
  return (err) => {
    const e = err as Error & { code?: unknown; connectionLost?: unknown };
    const message =
      e?.connectionLost === true
        ? e.message
        : `The database ${label} cannot be reached: the connection was lost during a query (${url.scrub(connectionLossReason(err))}); a write under way may or may not have been saved. Calls that need it fail until it answers again, and Memo reconnects by itself.`;
    return markConnectionLoss(Object.assign(new Error(message, { cause: err }), { code: e?.code }));
  };
}

/**
 * A query that fails because the connection was lost fails with lostConnection's sentence; a
 * statement's own failure (a constraint, a syntax error) is passed on untouched. The client is
 * remembered as lost, so it is not given back to the pool for reuse.
 */
function explainLostQueries(client: PgClient, explain: (err: unknown) => Error): void {
  const query = client.query.bind(client);
  const lost = (err: unknown): unknown => {
    if (!isConnectionLoss(err)) return err;
    LOST.set(client, err as Error);
    return explain(err);
  };
  client.query = (...args: unknown[]) => {
    const last = args.length - 1;
    const callback = args[last];
    if (typeof callback === 'function') {
      args[last] = (err: unknown, ...rest: unknown[]) => (callback as (...a: unknown[]) => unknown)(err ? lost(err) : err, ...rest);
      return query(...args);
    }
    const pending = query(...args);
    // A submittable (a cursor, a stream) reports through itself; only the promise form is explained here.
    const submittable = typeof (args[0] as { submit?: unknown } | null)?.submit === 'function';
    return !submittable && pending instanceof Promise ? pending.catch((err: unknown) => Promise.reject(lost(err) as Error)) : pending;
  };
}

type Runner = QueryRunner & { releasePostgresConnection(err?: unknown): Promise<void> };

/**
 * typeorm's QueryRunner gives its connection up the moment the connection reports an error (its
 * client's 'error' event: the socket closed, or the server's FATAL arrived while no query ran, e.g.
 * between two statements of a transaction, or in the same read as the answer to the last one), and
 * from then on refuses every statement with its own words: "Query runner already released. Cannot
 * run queries anymore." from the runner, "Database connection provided by a query runner was already
 * released..." from its manager (em.query, em.transaction). A runner given up so fails each later
 * statement with lostConnection's sentence instead, the one the statements cut off under a query get.
 * A runner released by its holder (release() without an error) keeps typeorm's words: using it
 * afterwards is a bug in the code that holds it, not an outage.
 */
function explainReleasedRunners(ds: DataSource, explain: (err: unknown) => Error): void {
  const lostWith = new WeakMap<QueryRunner, unknown>();
  const refusal = (runner: QueryRunner | undefined): Error | undefined => {
    if (!runner?.isReleased || !lostWith.has(runner)) return undefined;
    return explain(lostWith.get(runner));
  };
  const create = ds.createQueryRunner.bind(ds);
  ds.createQueryRunner = (mode?: ReplicationMode) => {
    const runner = create(mode) as Runner;
    const release = runner.releasePostgresConnection.bind(runner);
    runner.releasePostgresConnection = (err?: unknown) => {
      if (err !== undefined && !runner.isReleased) lostWith.set(runner, err);
      return release(err);
    };
    const query = runner.query.bind(runner);
    runner.query = ((...args: Parameters<typeof query>) => {
      const refused = refusal(runner);
      return refused ? Promise.reject(refused) : query(...args);
    }) as typeof query;
    const stream = runner.stream.bind(runner);
    runner.stream = ((...args: Parameters<typeof stream>) => {
      const refused = refusal(runner);
      return refused ? Promise.reject(refused) : stream(...args);
    }) as typeof stream;
    const manager = runner.manager;
    const transaction = manager.transaction.bind(manager) as (...args: unknown[]) => Promise<unknown>;
    manager.transaction = (...args: unknown[]) => {
      const refused = refusal(runner);
      return refused ? Promise.reject(refused) : transaction(...args);
    };
    return runner;
  };
  const query = ds.query.bind(ds) as (sql: string, parameters?: unknown[], runner?: QueryRunner) => Promise<unknown>;
  ds.query = ((sql: string, parameters?: unknown[], runner?: QueryRunner) => {
    const refused = refusal(runner);
    return refused ? Promise.reject(refused) : query(sql, parameters, runner);
  }) as typeof ds.query;
}
