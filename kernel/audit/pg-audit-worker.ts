import type { MessagePort } from 'node:worker_threads';
import type { ClientConfig } from 'pg';
import type { AuditMigration } from './pg-audit-schema.js';

/**
 * The audit writer's database side, run in a worker thread (started by pg-audit-link.ts). The main
 * thread posts requests on a port and hears each answer as a message (a call's line is committed before the
 * call returns, without blocking the event loop); every answer also raises a shared flag, on which
 * the main thread blocks for the few requests that must be synchronous (opening the chain while the
 * kernel is built, asking a database marked unusable whether it answers again). The main thread
 * has at most one append in flight. Beside that, this thread follows
 * the other instances' chains (LISTEN on the commit channel, and a re-read every 2 s as the fallback)
 * and posts their new entries to the main thread's ordinary message queue (the live tail).
 *
 * `auditWorkerMain` is handed to the worker as source text (so the same code runs from the compiled
 * kernel and from the TypeScript sources under test): it may use nothing from outside its own body,
 * only `require`.
 */

export interface AuditWorkerData {
  pgPath: string;
  connection: ClientConfig;
  instance: string;
  schema: string;
  lock: string;
  channel: string;
  migrations: readonly AuditMigration[];
  /** Int32Array over it: [0] the reply flag, [1] 1 while the database cannot be reached. */
  signal: SharedArrayBuffer;
  /** The request/reply port (the main thread reads replies with receiveMessageOnPort). */
  port: MessagePort;
  /** How many of the newest entries (all chains) `open` returns. */
  recent: number;
  /** How long a statement (and, at most 5 s, a connection attempt) may take before the server counts as unreachable. */
  queryTimeoutMs: number;
}

export interface StoredRow {
  instance: string;
  seq: number;
  line: string;
}

export interface ChainState {
  keyId: string;
  head: { seq: number; hash: string; tag: string };
  /** The chain's last entry as stored (null when it has none), with the hash column it is stored under. */
  last: (StoredRow & { hash: string }) | null;
}

export type AuditRequest =
  | { id: number; op: 'open'; keyId: string; genesis: string }
  | {
      id: number;
      op: 'append';
      /** The head the lines were sealed after; the commit happens only if the chain is still there. */
      expect: { seq: number; hash: string };
      rows: Array<{ seq: number; ts: string; prev: string; hash: string; line: string }>;
      head: { seq: number; hash: string; tag: string };
    }
  /** `write`: ask whether a line could be written (a row inserted and rolled back), not only whether the server answers. */
  | { id: number; op: 'ping'; write?: boolean }
  | { id: number; op: 'close' };

export type AuditReply = { id: number; ok: true; value: unknown } | { id: number; ok: false; message: string; unreachable: boolean; code?: string | undefined };

/** What `open` answers. */
export interface OpenValue {
  chain: ChainState;
  recent: StoredRow[];
}

/** What `append` answers: committed, or the chain moved on (another writer) and is not where `expect` said. */
export type AppendValue = { committed: true } | { committed: false; chain: ChainState | null };

export function auditWorkerMain(): void {
  // Source text run in a worker: require is the only way in (see the file comment).
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const threads = require('node:worker_threads') as typeof import('node:worker_threads');
  const parentPort = threads.parentPort;
  const data = threads.workerData as AuditWorkerData;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const pg = require(data.pgPath) as typeof import('pg');
  const signal = new Int32Array(data.signal);
  const S = data.schema;
  const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EPIPE', '57P01', '57P02', '57P03']);
  let writer: import('pg').Client | null = null;
  let reader: import('pg').Client | null = null;
  let following = false;
  let closed = false;
  const cursor = new Map<string, number>();

  const setDown = (down: boolean) => Atomics.store(signal, 1, down ? 1 : 0);
  const isUnreachable = (err: unknown): boolean => {
    const e = err as { code?: string; message?: string };
    return (
      (e.code !== undefined && UNREACHABLE.has(e.code)) ||
      // pg's own timeouts: a server that accepts the connection but never answers (hung, stopped) is unreachable too.
      /Connection terminated|connection timeout|Query read timeout|not queryable|Client has encountered a connection error/i.test(e.message ?? '')
    );
  };
  const client = async (): Promise<import('pg').Client> => {
    const c = new pg.Client({
      ...data.connection,
      connectionTimeoutMillis: Math.min(5000, data.queryTimeoutMs),
      query_timeout: data.queryTimeoutMs,
      application_name: 'memo-audit',
    });
    c.on('error', () => {
      if (writer === c) writer = null;
      if (reader === c) reader = null;
    });
    try {
      await c.connect();
    } catch (err) {
      c.end().catch(() => {});
      throw err;
    }
    return c;
  };
  /** Ends a client that may be stuck (a server that stopped answering): its socket is destroyed, not politely closed. */
  const drop = (c: import('pg').Client | null): void => {
    if (!c) return;
    if (writer === c) writer = null;
    if (reader === c) reader = null;
    c.end().catch(() => {});
    (c as unknown as { connection?: { stream?: { destroy?: () => void } } }).connection?.stream?.destroy?.();
  };
  let connecting: Promise<import('pg').Client> | null = null;
  // Requests overlap (a probe beside an append): they share one connection attempt.
  const writerClient = (): Promise<import('pg').Client> => {
    if (writer) return Promise.resolve(writer);
    connecting ??= connectWriter().finally(() => (connecting = null));
    return connecting;
  };
  const connectWriter = async (): Promise<import('pg').Client> => {
    try {
      writer = await client();
    } catch (err) {
      setDown(true);
      // Whatever kept the connection from opening (refused, a wrong password, no such database):
      // the database cannot be used until it can, and the main thread treats it as down.
      if (err && typeof err === 'object') Object.assign(err, { connectFailed: true });
      throw err;
    }
    setDown(false);
    return writer;
  };
  const chainState = async (c: import('pg').Client, instance: string): Promise<ChainState> => {
    const head = await c.query<{ key_id: string; head_seq: string; head_hash: string; head_tag: string }>(
      `SELECT key_id, head_seq, head_hash, head_tag FROM ${S}.chain WHERE instance = $1`,
      [instance],
    );
    const last = await c.query<{ seq: string; line: string; hash: string }>(
      `SELECT seq, line, hash FROM ${S}.entry WHERE instance = $1 ORDER BY seq DESC LIMIT 1`,
      [instance],
    );
    const h = head.rows[0]!;
    const l = last.rows[0];
    return {
      keyId: h.key_id,
      head: { seq: Number(h.head_seq), hash: h.head_hash, tag: h.head_tag },
      last: l ? { instance, seq: Number(l.seq), line: l.line, hash: l.hash } : null,
    };
  };

  const migrate = async (c: import('pg').Client): Promise<void> => {
    await c.query(`SELECT pg_advisory_lock(hashtext($1))`, [data.lock]);
    try {
      await c.query(`CREATE SCHEMA IF NOT EXISTS ${S}`);
      await c.query(`CREATE TABLE IF NOT EXISTS ${S}.migrations (id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
      const done = await c.query<{ id: number; name: string }>(`SELECT id, name FROM ${S}.migrations ORDER BY id`);
      const known = new Map(data.migrations.map((m) => [m.id, m.name]));
      for (const row of done.rows) {
        if (known.get(row.id) !== row.name)
          throw new Error(
            `the schema ${S} records the migration "${row.name}", which this version of Memo does not know: it was made by a newer version; nothing was changed`,
          );
      }
      const applied = new Set(done.rows.map((r) => r.id));
      for (const m of data.migrations) {
        if (applied.has(m.id)) continue;
        await c.query('BEGIN');
        try {
          await c.query(m.sql);
          await c.query(`INSERT INTO ${S}.migrations (id, name) VALUES ($1, $2)`, [m.id, m.name]);
          await c.query('COMMIT');
        } catch (err) {
          await c.query('ROLLBACK').catch(() => {});
          throw new Error(`migration "${m.name}" of ${S} failed and was rolled back: ${(err as Error).message}`, { cause: err });
        }
      }
    } finally {
      await c.query(`SELECT pg_advisory_unlock(hashtext($1))`, [data.lock]).catch(() => {});
    }
  };

  /** Other writers' entries past what was already passed on, per chain, oldest first. */
  const fetchNew = async (c: import('pg').Client): Promise<void> => {
    const known = Object.fromEntries(cursor);
    const res = await c.query<{ instance: string; seq: string; line: string }>(
      `SELECT e.instance, e.seq, e.line FROM ${S}.chain c CROSS JOIN LATERAL (
         SELECT instance, seq, line FROM ${S}.entry x
         WHERE x.instance = c.instance AND x.seq > COALESCE(($1::jsonb ->> c.instance)::bigint, 0)
         ORDER BY seq LIMIT 1000) e`,
      [JSON.stringify(known)],
    );
    if (res.rows.length === 0) return;
    const rows: StoredRow[] = res.rows.map((r) => ({ instance: r.instance, seq: Number(r.seq), line: r.line }));
    for (const r of rows) cursor.set(r.instance, Math.max(cursor.get(r.instance) ?? 0, r.seq));
    parentPort?.postMessage({ type: 'entries', rows });
  };

  let fetching = false;
  let again = false;
  const follow = async (): Promise<void> => {
    if (closed) return;
    if (fetching) {
      again = true;
      return;
    }
    fetching = true;
    try {
      do {
        again = false;
        if (!reader) {
          const c = await client();
          await c.query(`LISTEN ${data.channel}`);
          c.on('notification', () => void follow());
          reader = c;
        }
        await fetchNew(reader);
      } while (again && !closed);
    } catch {
      // The server is away: the next tick reconnects and catches up from the cursors.
      drop(reader);
    } finally {
      fetching = false;
    }
  };

  /** While the database is down, probe it so calls are let through again as soon as it answers. */
  let probing = false;
  const probe = async (): Promise<void> => {
    if (Atomics.load(signal, 1) === 0 || closed || probing) return;
    probing = true;
    let c: import('pg').Client | null = null;
    try {
      c = await writerClient();
      await c.query('SELECT 1');
      setDown(false);
    } catch {
      drop(c ?? writer);
    } finally {
      probing = false;
    }
  };

  const handle = async (req: AuditRequest): Promise<unknown> => {
    if (req.op === 'close') {
      closed = true;
      await Promise.allSettled([writer?.end(), reader?.end()]);
      writer = reader = null;
      return null;
    }
    const c = await writerClient();
    if (req.op === 'ping') {
      if (req.write) {
        await c.query('BEGIN');
        try {
          await c.query(`INSERT INTO ${S}.entry (instance, seq, ts, prev, hash, line) VALUES ($1, 0, now(), '', '', '')`, [data.instance]);
        } finally {
          await c.query('ROLLBACK');
        }
      } else await c.query('SELECT 1');
      setDown(false);
      return null;
    }
    if (req.op === 'open') {
      await migrate(c);
      await c.query(`INSERT INTO ${S}.chain (instance, key_id, head_seq, head_hash, head_tag) VALUES ($1, $2, 0, $3, $3) ON CONFLICT (instance) DO NOTHING`, [
        data.instance,
        req.keyId,
        req.genesis,
      ]);
      const chain = await chainState(c, data.instance);
      const recent = await c.query<{ instance: string; seq: string; line: string }>(
        `SELECT instance, seq, line FROM (SELECT instance, seq, line, ts FROM ${S}.entry ORDER BY ts DESC, seq DESC LIMIT $1) r ORDER BY ts, seq`,
        [data.recent],
      );
      const heads = await c.query<{ instance: string; head_seq: string }>(`SELECT instance, head_seq FROM ${S}.chain`);
      for (const h of heads.rows) cursor.set(h.instance, Number(h.head_seq));
      if (!following) {
        following = true;
        setInterval(() => {
          void probe();
          void follow();
        }, 2000);
        void follow();
      }
      return { chain, recent: recent.rows.map((r) => ({ instance: r.instance, seq: Number(r.seq), line: r.line })) } satisfies OpenValue;
    }
    // append: the whole batch in one statement (one round trip, one commit), and only if the chain's
    // head row, locked FOR UPDATE, is still the one the lines were sealed after. A writer that held
    // the lock first has moved the head by the time this statement reads it, so nothing is written.
    let committed: boolean;
    try {
      const res = await c.query<{ committed: string; notified: string }>(
        `WITH h AS (SELECT head_seq, head_hash FROM ${S}.chain WHERE instance = $1 FOR UPDATE),
         ok AS (SELECT 1 FROM h WHERE head_seq = $2 AND head_hash = $3),
         ins AS (
           INSERT INTO ${S}.entry (instance, seq, ts, prev, hash, line)
           SELECT $1, r.seq, r.ts, r.prev, r.hash, r.line
           FROM unnest($4::bigint[], $5::timestamptz[], $6::text[], $7::text[], $8::text[]) AS r (seq, ts, prev, hash, line)
           WHERE EXISTS (SELECT 1 FROM ok)
           RETURNING 1),
         upd AS (
           UPDATE ${S}.chain SET head_seq = $9, head_hash = $10, head_tag = $11
           WHERE instance = $1 AND EXISTS (SELECT 1 FROM ok)
           RETURNING 1),
         n AS (SELECT pg_notify($12, $1) FROM upd)
         SELECT (SELECT count(*) FROM upd) AS committed, (SELECT count(*) FROM n) AS notified, (SELECT count(*) FROM ins) AS inserted`,
        [
          data.instance,
          req.expect.seq,
          req.expect.hash,
          req.rows.map((r) => r.seq),
          req.rows.map((r) => r.ts),
          req.rows.map((r) => r.prev),
          req.rows.map((r) => r.hash),
          req.rows.map((r) => r.line),
          req.head.seq,
          req.head.hash,
          req.head.tag,
          data.channel,
        ],
      );
      committed = Number(res.rows[0]?.committed) === 1;
    } catch (err) {
      // A row already holds one of these numbers or links (written behind the head's back): never a
      // second successor; the main thread continues after what is there.
      if ((err as { code?: string }).code === '23505') return { committed: false, chain: await chainState(c, data.instance) } satisfies AppendValue;
      throw err;
    }
    if (!committed) {
      const found = await c.query(`SELECT 1 FROM ${S}.chain WHERE instance = $1`, [data.instance]);
      // The chain's row is gone (deleted from the database): the main thread opens it again.
      if (found.rows.length === 0) return { committed: false, chain: null } satisfies AppendValue;
      return { committed: false, chain: await chainState(c, data.instance) } satisfies AppendValue;
    }
    const first = req.rows[0]?.seq ?? 0;
    if ((cursor.get(data.instance) ?? 0) >= first - 1) cursor.set(data.instance, req.head.seq);
    return { committed: true } satisfies AppendValue;
  };

  const reply = (r: AuditReply) => {
    data.port.postMessage(r);
    Atomics.store(signal, 0, 1);
    Atomics.notify(signal, 0);
  };
  data.port.on('message', (req: AuditRequest) => {
    void handle(req).then(
      (value) => reply({ id: req.id, ok: true, value }),
      (err: unknown) => {
        const unreachable = isUnreachable(err) || (err as { connectFailed?: boolean })?.connectFailed === true;
        if (unreachable) {
          setDown(true);
          drop(writer);
        }
        const code = (err as { code?: unknown }).code;
        reply({ id: req.id, ok: false, message: (err as Error)?.message ?? String(err), unreachable, code: typeof code === 'string' ? code : undefined });
      },
    );
  });
}
