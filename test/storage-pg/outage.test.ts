/**
 * PostgreSQL going away under a running kernel: calls that need the database fail as tool results
 * that say the database cannot be reached (no crash, no password), calls that do not need it go on,
 * and once the server is back the same kernel answers again, with nothing acknowledged lost and no
 * restart of Memo. A store first opened while the server is down opens once it is back.
 */
import { DatabaseUrl } from '../../kernel/storage/database-url.js';
import { ConversationStore } from '../../kernel/agent/conversation-store.js';
import { openPostgres } from '../../kernel/storage/postgres.js';
import * as path from 'node:path';
import { tempDir } from '../helpers/kernel-fixture.js';
import { waitFor } from '../helpers/wait.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { routinesKernel, value } from '../plugins/routines/helpers.js';

let server: TestPostgres;
beforeAll(async () => {
  server = await startPostgres();
}, 120_000);

const saved = process.env.MEMO_DATABASE_URL;
afterEach(async () => {
  server.thaw();
  await server.start();
  if (saved === undefined) delete process.env.MEMO_DATABASE_URL;
  else process.env.MEMO_DATABASE_URL = saved;
});

const daily = { kind: 'cron', cron: '0 9 * * *', time_zone: 'UTC' };

describe('a kernel on PostgreSQL when the server goes away', () => {
  it('fails database calls clearly while it is down and answers again once it is back, without a restart', async () => {
    process.env.MEMO_DATABASE_URL = await server.database();
    const fx = await routinesKernel();
    const before = value(await fx.call('create_routine', { name: 'Before', prompt: 'p', schedule: daily })).id as string;
    const conv = await fx.kernel.conversations.create({ title: 'kept' });

    await server.stop();
    const down = await fx.call('list_routines', {});
    expect(down.ok).toBe(false);
    const message = down.ok ? '' : down.error.message;
    expect(message).toMatch(
      new RegExp(
        `^list_routines failed: The database postgres://memo:\\[masked\\]@127\\.0\\.0\\.1:${server.port}/t\\d+ \\(schema "pack_routines__routines"\\) cannot be reached \\(connect ECONNREFUSED [^)]*\\); calls that need it fail until it answers again, and Memo reconnects by itself\\.$`,
      ),
    );
    expect(message).not.toContain(server.password);
    await expect(fx.kernel.conversations.info(conv.id)).rejects.toThrow(/schema "memo_agent"\) cannot be reached/);
    // The audit trail is in the same database: while its lines cannot be written every call is refused (fail closed), saying why.
    const refused = await fx.call('echo_safe', { text: 'not audited' });
    expect(refused).toMatchObject({ ok: false, error: { code: 'PERMISSION_DENIED', message: expect.stringMatching(/audit/) } });
    expect(JSON.stringify(refused)).not.toContain(server.password);

    await server.start();
    const listed = value(await fx.call('list_routines', {})).routines.map((r: { id: string }) => r.id);
    expect(listed).toEqual([before]);
    const after = value(await fx.call('create_routine', { name: 'After', prompt: 'p', schedule: daily })).id as string;
    expect(
      value(await fx.call('list_routines', {}))
        .routines.map((r: { id: string }) => r.id)
        .sort(),
    ).toEqual([before, after].sort());
    expect((await fx.kernel.conversations.info(conv.id)).title).toBe('kept');
    expect(value(await fx.call('echo_safe', { text: 'still here' }))).toEqual({ echoed: { text: 'still here' } });
    await fx.close();
  });

  it('opens a store that was first needed while the server was down, once it is back', async () => {
    const url = await server.database();
    await server.stop();
    const store = new ConversationStore(path.join(tempDir(), 'agent.sqlite'), undefined, DatabaseUrl.parse(url));
    await expect(store.list()).rejects.toThrow(/cannot be opened: .*(ECONNREFUSED|connect)/);
    await server.start();
    const conv = await store.create({ title: 'after the outage' });
    expect((await store.list()).map((c) => c.id)).toEqual([conv.id]);
    await store.close();
  });

  it("says the database cannot be reached when the connection is lost under a running query, and passes a statement's own error on untouched", async () => {
    const url = DatabaseUrl.parse(await server.database());
    const ds = await openPostgres(url, 'lost_query', { entities: [], migrations: [] });
    try {
      const running = ds.query(`SELECT pg_sleep(30) /* lost-under-me */`);
      // The next query starts the moment the lost one fails: before the dead socket's close is heard.
      let next: Promise<unknown> | undefined;
      const settled = running.then(
        () => null,
        (err: Error & { code?: string }) => {
          next = ds.query('SELECT 1 AS one');
          return err;
        },
      );
      // The server ends that one backend, as a restart or an administrator would.
      await waitFor(
        async () =>
          (await server.query(`SELECT pg_terminate_backend(pid) AS t FROM pg_stat_activity WHERE query LIKE '%lost-under-me%' AND pid <> pg_backend_pid()`))
            .length === 1,
      );
      const err = await settled;
      expect(err).not.toBeNull();
      expect(err!.message).toMatch(
        /^The database postgres:\/\/memo:\[masked\]@127\.0\.0\.1:\d+\/t\d+ \(schema "lost_query"\) cannot be reached: the connection was lost during a query \(terminating connection due to administrator command\); a write under way may or may not have been saved\. Calls that need it fail until it answers again, and Memo reconnects by itself\.$/,
      );
      expect(err!.code).toBe('57P01');
      expect(err!.message).not.toContain(server.password);
      // The pool drops the dead connection at once: the next query, started before the socket's close
      // was heard, runs on a live one; and a statement's own failure keeps the server's words.
      expect(await next).toEqual([{ one: 1 }]);
      expect(await ds.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
      await expect(ds.query('SELECT * FROM no_such_table')).rejects.toThrow(/^relation "no_such_table" does not exist$/);
    } finally {
      await ds.destroy();
    }
  });

  it("says the same when the connection is lost between two statements of a transaction, not typeorm's 'already released'", async () => {
    const url = DatabaseUrl.parse(await server.database());
    const ds = await openPostgres(url, 'lost_between', { entities: [], migrations: [] });
    const sentence =
      /^The database postgres:\/\/memo:\[masked\]@127\.0\.0\.1:\d+\/t\d+ \(schema "lost_between"\) cannot be reached: the connection was lost during a query \(terminating connection due to administrator command\); a write under way may or may not have been saved\. Calls that need it fail until it answers again, and Memo reconnects by itself\.$/;
    try {
      const caught: Array<Error & { code?: string }> = [];
      const committed = ds.transaction(async (em) => {
        const [{ pid }] = await em.query<[{ pid: number }]>('SELECT pg_backend_pid() AS pid');
        // Ended while the transaction runs no statement: the server's FATAL reaches an idle client,
        // and typeorm's runner gives the connection up (its client's 'error') before the next one.
        await server.query('SELECT pg_terminate_backend($1)', [pid]);
        await waitFor(() => em.queryRunner!.isReleased, { what: "the runner to hear that its connection's backend ended" });
        // The statements typeorm would refuse with "Query runner already released" (the runner) or
        // "Database connection provided by a query runner was already released" (its manager).
        for (const next of [() => em.query('SELECT 1'), () => em.queryRunner!.query('SELECT 1'), () => em.transaction(() => Promise.resolve())]) {
          caught.push(
            await next().then(
              () => ({}) as Error,
              (err: Error) => err,
            ),
          );
        }
      });
      // Its COMMIT as well.
      await expect(committed).rejects.toThrow(sentence);
      expect(caught).toHaveLength(3);
      for (const err of caught) {
        expect(err.message).toMatch(sentence);
        expect(err.code).toBe('57P01');
      }
      // The pool serves the next call on a live connection.
      expect(await ds.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
      // A runner its holder released keeps typeorm's words: using it is the holder's bug, not an outage.
      const released = ds.createQueryRunner();
      await released.connect();
      await released.release();
      await expect(released.query('SELECT 1')).rejects.toThrow(/^Query runner already released/);
    } finally {
      await ds.destroy();
    }
  });

  it('shuts down even when the database hangs (no answer at all), warning which stores it left open', async () => {
    const url = await server.database();
    process.env.MEMO_DATABASE_URL = url;
    const fx = await routinesKernel();
    value(await fx.call('create_routine', { name: 'Open', prompt: 'p', schedule: daily }));
    await fx.kernel.conversations.create({ title: 'opened' });
    server.freeze();
    // Resolves (jest's timeout would fail the test otherwise) although no close can be answered.
    await fx.kernel.shutdown();
    const warned = fx.logger.lines.map((l) => JSON.stringify(l)).join('\n');
    expect(warned).toMatch(/did not close within 5 s/);
    // The stores it abandoned finish closing once the server answers again: none of its connections stays open.
    server.thaw();
    const database = new URL(url).pathname.slice(1);
    await waitFor(
      async () =>
        (await server.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, [database]))[0]!
          .n === 0,
      { what: "the abandoned stores' connections to close", timeoutMs: 30_000 },
    );
  }, 90_000);
});
