/**
 * The audit trail on PostgreSQL without blocking the event loop: a call's result arrives only once
 * its line is committed, the process keeps serving (timers, HTTP on loopback) while a commit waits,
 * lines handed over while a commit is in flight go together in the next statement, and shutdown
 * waits for the commits in flight. A slow commit is made deterministically: another connection
 * holds the chain's head row (SELECT ... FOR UPDATE), which the audit's statement must lock too.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import pg from 'pg';
import type { AuditRecord } from '../../kernel/audit/audit-record.js';
import { PgAuditLog } from '../../kernel/audit/pg-audit-log.js';
import { verifyAuditDatabase } from '../../kernel/audit/pg-audit-read.js';
import { DatabaseUrl } from '../../kernel/storage/database-url.js';
import { instanceId } from '../../kernel/storage/instance-id.js';
import { makeKernel, tempDir, type Fixture } from '../helpers/kernel-fixture.js';
import { onPostgres } from './on-postgres.js';

const server = onPostgres(['memo_audit']);

const call = (fx: Fixture, text: string) => fx.kernel.invoke({ tool: 'echo_safe', args: { text }, caller: { kind: 'agent' } });
const turn = () => new Promise<void>((r) => setImmediate(r));

/** A connection of its own (not the kernel's), as another process would have. */
async function connection(): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: server.url() });
  await c.connect();
  return c;
}

/** Holds `instance`'s head row locked until release(): the audit's next statement waits for it. */
async function holdHead(instance: string): Promise<{ release: () => Promise<void> }> {
  const c = await connection();
  await c.query('BEGIN');
  const held = await c.query(`SELECT head_seq FROM memo_audit.chain WHERE instance = $1 FOR UPDATE`, [instance]);
  expect(held.rowCount).toBe(1);
  return {
    release: async () => {
      await c.query('ROLLBACK');
      await c.end();
    },
  };
}

/** Returns once the audit writer's statement is waiting for a row lock (checked in the server's own view, not by time). */
async function untilWaitingForLock(observer: pg.Client): Promise<void> {
  for (;;) {
    const r = await observer.query<{ n: string }>(
      `SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = 'memo-audit' AND wait_event_type = 'Lock' AND datname = current_database()`,
    );
    if (Number(r.rows[0]!.n) > 0) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

const entryCount = async (c: pg.Client, instance: string) =>
  Number((await c.query<{ n: string }>(`SELECT count(*) AS n FROM memo_audit.entry WHERE instance = $1`, [instance])).rows[0]!.n);

describe('the audit trail on PostgreSQL does not block the event loop', () => {
  const open: Fixture[] = [];
  const clients: pg.Client[] = [];
  const kernel = () => {
    const fx = makeKernel({ dataDir: path.join(tempDir('memo-pg-audit-async-'), 'data') });
    open.push(fx);
    return fx;
  };
  const observer = async () => {
    const c = await connection();
    clients.push(c);
    return c;
  };
  afterEach(async () => {
    for (const fx of open.splice(0)) await fx.close();
    for (const c of clients.splice(0)) await c.end();
  });

  it("a call's result arrives only after its row is committed: not while the head row is held elsewhere, and the row is there when it arrives", async () => {
    const a = kernel();
    const instance = instanceId(a.dataDir);
    expect((await call(a, 'first')).ok).toBe(true);
    const watch = await observer();
    const lock = await holdHead(instance);

    let rowsWhenArrived = -1;
    let arrived = false;
    const second = call(a, 'second').then(async (result) => {
      arrived = true;
      rowsWhenArrived = await entryCount(watch, instance);
      return result;
    });
    await untilWaitingForLock(watch);
    // The commit cannot have happened (its statement waits for the lock): the call has not returned.
    expect(arrived).toBe(false);
    expect(await entryCount(watch, instance)).toBe(1);

    await lock.release();
    expect((await second).ok).toBe(true);
    expect(rowsWhenArrived).toBe(2);
  });

  it('timers fire and a loopback HTTP request is answered while a commit waits for the head row', async () => {
    const a = kernel();
    const instance = instanceId(a.dataDir);
    expect((await call(a, 'first')).ok).toBe(true);
    const web = http.createServer((_req, res) => res.end('pong'));
    await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
    try {
      const watch = await observer();
      const lock = await holdHead(instance);
      let done = false;
      const pending = call(a, 'slow').then((r) => {
        done = true;
        return r;
      });
      await untilWaitingForLock(watch);

      let ticks = 0;
      const timer = setInterval(() => ticks++, 1);
      while (ticks < 3) await new Promise((r) => setTimeout(r, 1));
      clearInterval(timer);
      const answer = await fetch(`http://127.0.0.1:${(web.address() as AddressInfo).port}/`);
      expect(await answer.text()).toBe('pong');
      // All of that happened while the commit was still in flight.
      expect(done).toBe(false);
      expect(await entryCount(watch, instance)).toBe(1);

      await lock.release();
      expect((await pending).ok).toBe(true);
      expect(await entryCount(watch, instance)).toBe(2);
    } finally {
      await new Promise((r) => web.close(r));
    }
  });

  it('calls finishing while a commit is in flight are written together by the next statement: 1 + 30 calls in 2 transactions', async () => {
    const a = kernel();
    const instance = instanceId(a.dataDir);
    const log = a.kernel.audit as PgAuditLog;
    expect((await call(a, 'warm')).ok).toBe(true);
    const before = log.committedBatches;
    const watch = await observer();
    const lock = await holdHead(instance);

    const first = call(a, 'first');
    await untilWaitingForLock(watch);
    // Each call starts and finishes in its own event-loop turn: the pipeline hands each line over alone.
    const later: Array<ReturnType<typeof call>> = [];
    for (let i = 0; i < 30; i++) {
      later.push(call(a, `later-${i}`));
      await turn();
    }
    await lock.release();
    const results = await Promise.all([first, ...later]);
    expect(results.every((r) => r.ok)).toBe(true);

    // One statement is one transaction: the rows of one commit share its transaction id (xmin).
    const tx = await watch.query<{ seq: string; xmin: string }>(
      `SELECT seq, xmin::text AS xmin FROM memo_audit.entry WHERE instance = $1 AND seq > 1 ORDER BY seq`,
      [instance],
    );
    expect(tx.rows.map((r) => Number(r.seq))).toEqual(Array.from({ length: 31 }, (_, i) => i + 2));
    expect(new Set(tx.rows.map((r) => r.xmin)).size).toBe(2);
    expect(tx.rows[0]!.xmin).not.toBe(tx.rows[1]!.xmin);
    expect(log.committedBatches - before).toBe(2);
    expect(await verifyAuditDatabase(DatabaseUrl.parse(server.url()), a.dataDir, instance)).toMatchObject({ ok: true, chains: [{ entries: 32 }] });
  });

  it('lines appended straight to the sink while a commit is in flight share one statement, each resolved with its own sealed entry in chain order', async () => {
    const a = kernel();
    const instance = instanceId(a.dataDir);
    const log = a.kernel.audit as PgAuditLog;
    expect((await call(a, 'warm')).ok).toBe(true);
    const watch = await observer();
    const lock = await holdHead(instance);
    const record = (i: number): AuditRecord => ({
      ts: new Date().toISOString(),
      id: `r${i}`,
      caller: { kind: 'agent' },
      tool: 'echo_safe',
      pack: null,
      args: { i },
      decision: 'auto',
      outcome: 'ok',
      summary: '',
      durationMs: 0,
    });

    const first = log.append(record(0));
    await untilWaitingForLock(watch);
    const single = log.append(record(1));
    const batch = log.appendBatch([record(2), record(3), record(4)]);
    await lock.release();
    const [e0, e1, es] = await Promise.all([first, single, batch]);
    expect([e0.seq, e1.seq, ...es.map((e) => e.seq)]).toEqual([2, 3, 4, 5, 6]);
    expect(es.map((e) => e.args)).toEqual([{ i: 2 }, { i: 3 }, { i: 4 }]);
    const tx = await watch.query<{ xmin: string }>(`SELECT xmin::text AS xmin FROM memo_audit.entry WHERE instance = $1 AND seq >= 3`, [instance]);
    expect(new Set(tx.rows.map((r) => r.xmin)).size).toBe(1);
  });

  it("the sink's close waits for the commit in flight and the lines queued behind it, then ends its connections", async () => {
    const a = kernel();
    const instance = instanceId(a.dataDir);
    const log = a.kernel.audit as PgAuditLog;
    expect((await call(a, 'first')).ok).toBe(true);
    const watch = await observer();
    const lock = await holdHead(instance);
    const record = (i: number): AuditRecord => ({
      ts: new Date().toISOString(),
      id: `c${i}`,
      caller: { kind: 'agent' },
      tool: 'echo_safe',
      pack: null,
      args: { i },
      decision: 'auto',
      outcome: 'ok',
      summary: '',
      durationMs: 0,
    });
    const inFlight = log.append(record(1));
    await untilWaitingForLock(watch);
    const queued = log.append(record(2));
    const closing = log.close();
    await turn();
    await lock.release();
    await closing;
    expect((await inFlight).seq).toBe(2);
    expect((await queued).seq).toBe(3);
    expect(await entryCount(watch, instance)).toBe(3);
    const left = await watch.query(`SELECT 1 FROM pg_stat_activity WHERE application_name = 'memo-audit' AND datname = current_database()`);
    expect(left.rowCount).toBe(0);
  });

  it("shutdown waits for the commit in flight and the lines queued behind it: every call's row is in the table once close returns, none reported lost", async () => {
    const a = kernel();
    const instance = instanceId(a.dataDir);
    expect((await call(a, 'first')).ok).toBe(true);
    const watch = await observer();
    const lock = await holdHead(instance);
    const pending = call(a, 'in flight');
    await untilWaitingForLock(watch);
    // Handed over while the first commit waits: queued for the next statement.
    const queued = call(a, 'queued');
    await turn();
    const closing = a.close();
    await lock.release();
    await closing;
    expect((await pending).ok).toBe(true);
    expect((await queued).ok).toBe(true);
    expect(a.logger.lines.filter((l) => l.level === 'error').map((l) => l.message)).toEqual([]);
    expect(await entryCount(watch, instance)).toBe(3);
  });
});
