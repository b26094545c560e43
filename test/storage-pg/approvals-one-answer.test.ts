/**
 * Exactly one answer counts across instances, also around outages: an answered request is never put
 * back to waiting (a second answer is refused), the owner never applies its own answer over one
 * committed by another instance, a winner is never told "not given", a hung database is treated as
 * unreachable without piling up beats, and `memo approvals answer` answers another instance's request.
 * Real PostgreSQL throughout; SharedApprovals instances share one database as three instances would.
 */
import { ManualClock } from '../../kernel/clock.js';
import { reachServer } from '../../kernel/control/control-client.js';
import { ControlServer } from '../../kernel/control/control-server.js';
import { MemoryLogger } from '../../kernel/logger.js';
import type { ApprovalReply } from '../../kernel/permissions/prompter.js';
import { SharedApprovals } from '../../kernel/storage/pg-shared-approvals.js';
import type { SharedView } from '../../kernel/permissions/approval-broker.js';
import { databaseFromSetting } from '../../kernel/storage/database-url.js';
import { atTeardown } from '../helpers/cleanup.js';
import { echoPack, makeKernel, type Fixture } from '../helpers/kernel-fixture.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait.js';

let server: TestPostgres;
beforeAll(async () => {
  server = await startPostgres();
}, 120_000);

interface Inbox {
  sa: SharedApprovals<SharedView, ApprovalReply>;
  answers: Array<{ id: string; reply: ApprovalReply; by: string }>;
  warnings: string[];
  mine: Array<{ id: string; view: SharedView }>;
}

/** The inner parts a test drives by hand: a beat, and the owner's read of an answer (suppressed to model a lost notification). */
type Inner = { tick(): Promise<void>; down: boolean; takeAnswer?: (id: string) => Promise<void>; heartbeat(): Promise<void> };

function inbox(url: string, name: string, mine: Array<{ id: string; view: SharedView }> = []): Inbox {
  const answers: Inbox['answers'] = [];
  const warnings: string[] = [];
  const logger = new MemoryLogger();
  const origWarn = logger.warn.bind(logger);
  logger.warn = (m: string) => {
    warnings.push(m);
    origWarn(m);
  };
  const sa = new SharedApprovals<SharedView, ApprovalReply>(
    databaseFromSetting(url)!,
    () => name,
    { changed: () => {}, answered: (id, reply, by) => answers.push({ id, reply, by }), watchers: () => 1, mine: () => mine },
    logger,
  );
  atTeardown(() => sa.close());
  return { sa, answers, warnings, mine };
}

function view(id: string): SharedView {
  return {
    request: {
      callId: id,
      tool: 'delete_file',
      revision: 1,
      deadline: Date.now() + 600_000,
      caller: { kind: 'routine', id: 'nightly' },
      args: {},
    } as unknown as SharedView['request'],
    since: Date.now(),
  };
}

const inner = (i: Inbox) => i.sa as unknown as Inner;

async function row(url: string, id: string): Promise<{ state: string; answered_by: string | null } | undefined> {
  const db = new URL(url).pathname.slice(1);
  const rows = await server.query<{ state: string; answered_by: string | null }>(
    `SELECT "state", "answered_by" FROM memo_approvals.approvals WHERE "id" = $1`,
    [id],
    db,
  );
  return rows[0];
}

describe('one answer counts across instances', () => {
  it('keeps an answer given while the owner missed it: a beat after an outage does not put the request back, a second answer is refused, the owner applies the first', async () => {
    const url = await server.database();
    const v = view('call-1');
    const a = inbox(url, 'A', [{ id: 'call-1', view: v }]);
    const b = inbox(url, 'B');
    const c = inbox(url, 'C');
    await Promise.all([a.sa.ready(), b.sa.ready(), c.sa.ready()]);
    await a.sa.publish('call-1', v);
    // A's read of the answer fails (its connection broke): the next beat looks again.
    inner(a).takeAnswer = async () => {};
    await expect(b.sa.claim('call-1', 'deny-once', 'alice@B', false)).resolves.toEqual({ ok: true });
    // One of A's beats failed meanwhile: the next good one publishes A's waiting requests again.
    inner(a).down = true;
    await inner(a).tick();
    await waitFor(async () => (await row(url, 'call-1'))?.state === 'answered' && a.answers.length > 0, { what: 'A to take the answer on republishing' });
    expect(await row(url, 'call-1')).toEqual({ state: 'answered', answered_by: 'alice@B' });
    await expect(c.sa.claim('call-1', 'allow-once', 'bob@C', false)).resolves.toMatchObject({ ok: false, code: 'ALREADY_ANSWERED' });
    expect(a.answers).toEqual([{ id: 'call-1', reply: 'deny-once', by: 'alice@B' }]);
  });

  it('keeps an answer given just before its instance went quiet: not wiped when the others mark its requests gone', async () => {
    const url = await server.database();
    const v = view('call-2');
    const a = inbox(url, 'A', [{ id: 'call-2', view: v }]);
    const b = inbox(url, 'B');
    await Promise.all([a.sa.ready(), b.sa.ready()]);
    await a.sa.publish('call-2', v);
    inner(a).takeAnswer = async () => {};
    await expect(b.sa.claim('call-2', 'deny-once', 'alice@B', false)).resolves.toEqual({ ok: true });
    // A stops beating (late), and B's beat marks A's requests gone.
    const db = new URL(url).pathname.slice(1);
    await server.query(`UPDATE memo_approvals.instances SET "seen_at" = now() - interval '1 minute' WHERE "instance" = 'A'`, [], db);
    await inner(b).tick();
    expect(await row(url, 'call-2')).toEqual({ state: 'answered', answered_by: 'alice@B' });
    delete inner(a).takeAnswer;
    await inner(a).tick();
    await waitFor(() => a.answers.length > 0, { what: 'A to take the answer' });
    expect(a.answers).toEqual([{ id: 'call-2', reply: 'deny-once', by: 'alice@B' }]);
  });

  it('records an answer and its notification together: when the notification cannot be sent, the answer is not recorded either', async () => {
    const url = await server.database();
    const db = new URL(url).pathname.slice(1);
    const b = inbox(url, 'B');
    await b.sa.ready();
    // An id so long that its notification exceeds NOTIFY's 8000 bytes: the notification fails.
    const id = `call-${'x'.repeat(8100)}`;
    await server.query(
      `INSERT INTO memo_approvals.approvals ("id", "instance", "incarnation", "revision", "view", "state", "expires_at")
       VALUES ($1, 'A', 'a-run', 1, $2, 'pending', now() + interval '10 minutes')`,
      [id, JSON.stringify(view(id))],
      db,
    );
    const result = await b.sa.claim(id, 'allow-once', 'alice@B', false);
    // Told "not given": then it was not given.
    expect(result).toMatchObject({ ok: false, code: 'UNAVAILABLE' });
    expect(await row(url, id)).toEqual({ state: 'pending', answered_by: null });
  });
});

describe('the owner never applies its own answer over one committed elsewhere', () => {
  afterEach(() => server.thaw());

  it('refuses the local answer while the database hangs if the request is in the shared inbox, then applies the answer given there', async () => {
    const databaseUrl = await server.database();
    const sink = () => ({ append: () => {}, tail: () => [], close: () => {} });
    // The request's expiry is set on the kernel's clock and compared with the database's: the fake
    // clock starts now, else the answered row would be long expired, and the other instance's beat
    // would delete it once A missed its beats for 10 s while the server hung.
    const [a, b] = [0, 1].map(() =>
      makeKernel({ databaseUrl, prompter: null, packs: [echoPack()], services: { auditSink: sink() }, clock: new ManualClock(Date.now()) }),
    ) as [Fixture, Fixture];
    await Promise.all(
      [a, b].map(async (fx) => {
        await (fx.kernel.permissions as { ready?: () => Promise<void> }).ready?.();
      }),
    );
    const shared = (a.kernel.approvals as unknown as { shared: Inner }).shared;
    const call = a.kernel.invoke({ tool: 'echo_medium', args: { text: 'one answer' }, caller: { kind: 'routine', id: 'nightly' } });
    await b.kernel.approvals.sync();
    const id = await waitFor(() => b.kernel.approvals.pending().find((p) => p.instance)?.id, { what: 'the request listed on B' });
    // A misses the notification (and its beats' reads) of B's answer.
    shared.takeAnswer = async () => {};
    await expect(b.kernel.approvals.answerAnywhere(id, 'deny-once', 'console')).resolves.toEqual({ ok: true });
    server.freeze();
    const local = await a.kernel.approvals.answerAnywhere(id, 'allow-once', 'host');
    expect(local).toMatchObject({
      ok: false,
      code: 'UNAVAILABLE',
      message: expect.stringContaining('your answer was not applied and the request still waits'),
    });
    expect(!local.ok && local.message).not.toContain(server.password);
    expect(a.kernel.approvals.pending().some((p) => p.id === id)).toBe(true);
    server.thaw();
    delete shared.takeAnswer;
    expect(await call).toMatchObject({ ok: false });
    await Promise.all([a.close(), b.close()]);
  }, 120_000);
});

describe('a request whose publish got no answer', () => {
  afterEach(() => server.thaw());

  it('counts as shared: the owner refuses its local answer while the database hangs, then applies the answer another instance gave', async () => {
    const databaseUrl = await server.database();
    const sink = () => ({ append: () => {}, tail: () => [], close: () => {} });
    const [a, b] = [0, 1].map(() =>
      makeKernel({ databaseUrl, prompter: null, packs: [echoPack()], services: { auditSink: sink() }, clock: new ManualClock(Date.now()) }),
    ) as [Fixture, Fixture];
    await Promise.all(
      [a, b].map(async (fx) => {
        await (fx.kernel.permissions as { ready?: () => Promise<void> }).ready?.();
      }),
    );
    type Q = (sql: string, params?: unknown[], opened?: unknown) => Promise<unknown>;
    const shared = (a.kernel.approvals as unknown as { shared: Inner & { q: Q; tick: () => Promise<void> } }).shared;
    // Until the end A's beats only say it is alive: they neither put its request there again nor look
    // for answers, so nothing but this test's steps tells A what the database holds.
    shared.tick = () => shared.heartbeat().catch(() => {});
    // And A misses the notification of B's answer (the database hangs right after it).
    shared.takeAnswer = async () => {};
    // The publish commits, and its answer is lost: the server hangs right after it, so the statement
    // A then waits on gets no answer (the real timeout of A's own query path).
    const realQ: Q = shared.q.bind(shared);
    let published = false;
    let answerLost = false;
    shared.q = async (sql, params, opened) => {
      if (published || !sql.includes('INSERT INTO "approvals"')) return realQ(sql, params, opened);
      published = true;
      await realQ(sql, params, opened);
      server.freeze();
      try {
        return await realQ('SELECT 1');
      } finally {
        server.thaw();
        answerLost = true;
      }
    };
    const call = a.kernel.invoke({ tool: 'echo_medium', args: { text: 'maybe shared' }, caller: { kind: 'routine', id: 'nightly' } });
    await b.kernel.approvals.sync();
    const id = await waitFor(() => b.kernel.approvals.pending().find((p) => p.instance)?.id, { what: 'the request listed on B' });
    await waitFor(() => answerLost, { what: "the publish's answer to be lost" });
    await expect(b.kernel.approvals.answerAnywhere(id, 'deny-once', 'console')).resolves.toEqual({ ok: true });
    server.freeze();
    const local = await a.kernel.approvals.answerAnywhere(id, 'allow-once', 'host');
    expect(local).toMatchObject({
      ok: false,
      code: 'UNAVAILABLE',
      message: expect.stringContaining('your answer was not applied and the request still waits'),
    });
    server.thaw();
    delete (shared as Partial<typeof shared>).tick;
    delete shared.takeAnswer;
    // The next beat finds the answer given on B: that one counts, and the call did not run.
    expect(await call).toMatchObject({ ok: false });
    await Promise.all([a.close(), b.close()]);
  }, 120_000);
});

describe('a hung database', () => {
  afterEach(() => server.thaw());

  it('is treated as unreachable: an answer is refused instead of hanging, and the beats never overlap', async () => {
    const url = await server.database();
    const v = view('call-4');
    const a = inbox(url, 'A', [{ id: 'call-4', view: v }]);
    const b = inbox(url, 'B');
    await Promise.all([a.sa.ready(), b.sa.ready()]);
    await a.sa.publish('call-4', v);
    let running = 0;
    let most = 0;
    let beats = 0;
    const beat = inner(a).heartbeat.bind(a.sa);
    inner(a).heartbeat = async () => {
      running++;
      beats++;
      most = Math.max(most, running);
      try {
        await beat();
      } finally {
        running--;
      }
    };
    server.freeze();
    await expect(b.sa.claim('call-4', 'allow-once', 'alice@B', false)).resolves.toMatchObject({
      ok: false,
      code: 'UNAVAILABLE',
      message: expect.stringContaining('did not answer within'),
    });
    await waitFor(() => a.warnings.some((w) => w.includes('cannot be reached')) && beats >= 3, {
      what: () => `three beats of A while frozen (beats ${beats}, running ${running}, warnings ${JSON.stringify(a.warnings)})`,
    });
    expect(most).toBe(1);
    server.thaw();
    let last: unknown;
    await waitFor(async () => (last = await row(url, 'call-4')) && (last as { state: string }).state === 'pending', {
      what: () => `the request waiting again (row ${JSON.stringify(last)}, warnings ${JSON.stringify(a.warnings)})`,
    });
    await expect(b.sa.claim('call-4', 'allow-once', 'alice@B', false)).resolves.toEqual({ ok: true });
  }, 120_000);
});

describe('memo approvals answer across instances', () => {
  it("answers a request waiting on another instance through this instance's control socket; a second answer is refused ALREADY_ANSWERED", async () => {
    const databaseUrl = await server.database();
    const sink = () => ({ append: () => {}, tail: () => [], close: () => {} });
    const [a, b] = [0, 1].map(() => makeKernel({ databaseUrl, prompter: null, packs: [echoPack()], services: { auditSink: sink() } })) as [Fixture, Fixture];
    await Promise.all(
      [a, b].map(async (fx) => {
        await (fx.kernel.permissions as { ready?: () => Promise<void> }).ready?.();
      }),
    );
    const logger = new MemoryLogger();
    const control = await ControlServer.start({ kernel: b.kernel, packFolders: [], skillFolders: [], logger });
    if (!control) throw new Error(`no control server: ${JSON.stringify(logger.lines)}`);
    atTeardown(() => control.close());
    const call = a.kernel.invoke({ tool: 'echo_medium', args: { text: 'from the cli' }, caller: { kind: 'routine', id: 'nightly' } });
    await b.kernel.approvals.sync();
    const id = await waitFor(() => b.kernel.approvals.pending().find((p) => p.instance)?.id, { what: 'the request listed on B' });
    const reach = await reachServer({ dataDir: b.dataDir });
    if (!reach || !('server' in reach)) throw new Error(`not reached: ${JSON.stringify(reach)}`);
    await expect(reach.server.request('approvals.answer', { id, answer: 'allow-once' })).resolves.toMatchObject({ id, reply: 'allow-once' });
    expect(await call).toMatchObject({ ok: true, value: { echoed: { text: 'from the cli' } } });
    // Still listed on B until its inbox re-reads: answering again is refused, not applied twice.
    const again = await reachServer({ dataDir: b.dataDir });
    if (!again || !('server' in again)) throw new Error('not reached');
    await expect(again.server.request('approvals.answer', { id, answer: 'deny-once' })).rejects.toMatchObject({
      code: expect.stringMatching(/^(ALREADY_ANSWERED|NOT_PENDING)$/),
    });
    await Promise.all([a.close(), b.close()]);
  });
});
