/**
 * The two engines the WhatsApp store runs on (store.ts writes its logic once, as Steps):
 *
 * - SQLite (no MEMO_DATABASE_URL): `packs-data/whatsapp/whatsapp.sqlite`, better-sqlite3 under the
 *   pack's typeorm DataSource, every batch synchronous inside one transaction; search by FTS5 (bm25).
 * - PostgreSQL (MEMO_DATABASE_URL set): the schema `pack_whatsapp__whatsapp`, every batch in one
 *   transaction, one batch after the other; search by the `words` tsvector column and its GIN index,
 *   the words made by text-index.ts exactly as FTS5 makes them, ranked by FTS5's bm25.
 */
import type { Database, Statement } from 'better-sqlite3';
import type { DataSource, QueryRunner } from 'typeorm';
import {
  messageRow,
  MESSAGE_COLUMNS,
  RANKED_MAX,
  type MessageInfo,
  type Op,
  type SearchFilters,
  type SearchRow,
  type Steps,
  type StoreEngine,
} from './store.js';
import { frequencies, snippetOf, tsqueryOf } from './text-index.js';

type Result = { order: 'relevance' | 'newest'; rows: SearchRow[] };

export class SqliteEngine implements StoreEngine {
  readonly dialect = 'sqlite' as const;
  private readonly statements = new Map<string, Statement>();

  constructor(readonly db: Database) {
    // The history is the phone's copy: commits need not wait for the disk (WAL keeps the file
    // consistent; a lost last batch is sent again by the phone on the next connection).
    db.pragma('synchronous = NORMAL');
  }

  private statement(sql: string): Statement {
    let s = this.statements.get(sql);
    if (!s) this.statements.set(sql, (s = this.db.prepare(sql)));
    return s;
  }

  private exec(op: Op): unknown {
    const s = this.statement(op.sql);
    return op.kind === 'get' ? s.get(...op.params) : op.kind === 'all' ? s.all(...op.params) : s.run(...op.params);
  }

  private drive<T>(steps: Steps<T>): T {
    let r = steps.next();
    while (!r.done) r = steps.next(this.exec(r.value));
    return r.value;
  }

  // Synchronous underneath: a batch is one better-sqlite3 transaction, never interleaved with a read.
  // (A throw inside the executor rejects the promise.)
  read<T>(steps: Steps<T>): Promise<T> {
    return new Promise((resolve) => resolve(this.drive(steps)));
  }

  write<T>(steps: Steps<T>): Promise<T> {
    return new Promise((resolve) => resolve(this.db.transaction(() => this.drive(steps))()));
  }

  /**
   * Up to RANKED_MAX matches are ranked by bm25 (best first, then newest). Beyond that, ranking costs
   * more than the goal of 10 ms (bm25 over 15,000 matches of a common word is 14 ms) and says little
   * (a word that common fits everything about equally), so the newest matches come first, found by
   * walking the time index backwards.
   */
  search(where: string[], params: unknown[], f: SearchFilters): Promise<Result> {
    return new Promise((resolve) => resolve(this.searchNow(where, params, f)));
  }

  private searchNow(where: string[], params: unknown[], f: SearchFilters): Result {
    const matches = (this.statement(`SELECT count(*) AS n FROM wa_messages_fts WHERE wa_messages_fts MATCH ?`).get(f.match) as { n: number }).n;
    if (matches <= RANKED_MAX) {
      const sql = `SELECT ${MESSAGE_COLUMNS}, snippet(wa_messages_fts, 0, '[', ']', '…', 16) AS snippet, wa_messages_fts.rank AS score
                   FROM wa_messages_fts JOIN wa_messages m ON m.seq = wa_messages_fts.rowid
                   WHERE wa_messages_fts MATCH ? AND ${where.join(' AND ')} ORDER BY wa_messages_fts.rank, m.ts DESC LIMIT ?`;
      const rows = this.db.prepare(sql).all(f.match, ...params, f.limit) as Array<Record<string, unknown>>;
      return { order: 'relevance', rows: rows.map((r) => ({ ...messageRow(r), snippet: r.snippet as string, score: r.score as number })) };
    }
    // One chat: walk that chat's messages by time; one sender: let SQLite pick; else the whole time index.
    const index = f.chats?.length === 1 ? 'INDEXED BY IDX_wa_messages_chat_ts' : f.senders || f.fromMe ? '' : 'INDEXED BY IDX_wa_messages_ts';
    const sql = `SELECT ${MESSAGE_COLUMNS} FROM wa_messages m ${index}
                 WHERE m.seq IN (SELECT rowid FROM wa_messages_fts WHERE wa_messages_fts MATCH ?) AND ${where.join(' AND ')}
                 ORDER BY m.ts DESC, m.seq DESC LIMIT ?`;
    const rows = (this.db.prepare(sql).all(f.match, ...params, f.limit) as Array<Record<string, unknown>>).map(messageRow);
    // FTS5 ignores `rowid = ?` bound as a REAL, which is how better-sqlite3 binds a JS number: cast it.
    const snippet = this.statement(
      `SELECT snippet(wa_messages_fts, 0, '[', ']', '…', 16) AS s FROM wa_messages_fts WHERE wa_messages_fts MATCH ? AND rowid = CAST(? AS INTEGER)`,
    );
    return {
      order: 'newest',
      rows: rows.map((m) => ({ ...m, snippet: (snippet.get(f.match, m.seq) as { s: string } | undefined)?.s ?? m.text ?? '', score: 0 })),
    };
  }
}

/** How long bm25's totals are kept when this store has not written (another instance may have). */
const TOTALS_MS = 5000;

/** How long the engine keeps its read connection after the last read. */
const READER_IDLE_MS = 50;

/** `?` placeholders as PostgreSQL's `$1, $2, …` (the store's statements have no `?` inside a string). */
function numbered(sql: string): string {
  let i = 0;
  return sql.replace(/\?/g, () => `$${++i}`);
}

export class PostgresEngine implements StoreEngine {
  readonly dialect = 'postgres' as const;
  private readonly sql = new Map<string, string>();
  /** Batches run one after the other, as Baileys hands them over. */
  private writing: Promise<unknown> = Promise.resolve();
  /** Reads too, on a connection of their own: a tool's many small reads never take more than one from the pool. */
  private reading: Promise<unknown> = Promise.resolve();
  private reader: QueryRunner | null = null;
  private totals: { docs: number; words: number; at: number } | null = null;
  private idle: NodeJS.Timeout | null = null;

  constructor(readonly ds: DataSource) {}

  private async exec(qr: QueryRunner, op: Op): Promise<unknown> {
    let text = this.sql.get(op.sql);
    if (text === undefined) this.sql.set(op.sql, (text = numbered(op.sql)));
    const { records } = (await qr.query(text, op.params, true)) as { records: unknown[] };
    return op.kind === 'get' ? records[0] : op.kind === 'all' ? records : undefined;
  }

  private async drive<T>(qr: QueryRunner, steps: Steps<T>): Promise<T> {
    let r = steps.next();
    while (!r.done) r = steps.next(await this.exec(qr, r.value));
    return r.value;
  }

  private async withRunner<T>(fn: (qr: QueryRunner) => Promise<T>): Promise<T> {
    const qr = this.ds.createQueryRunner();
    try {
      return await fn(qr);
    } finally {
      await qr.release();
    }
  }

  read<T>(steps: Steps<T>): Promise<T> {
    return this.queuedRead((qr) => this.drive(qr, steps));
  }

  /**
   * Reads take turns on one connection, kept while they come (a tool's dozens of small reads would
   * otherwise each take one from the pool and give it back) and given back after READER_IDLE_MS
   * without one, so the pool can close when the pack unloads; a read that fails drops it, so a lost
   * connection is replaced by the next read.
   */
  private queuedRead<T>(fn: (qr: QueryRunner) => Promise<T>): Promise<T> {
    const work = this.reading.then(async () => {
      if (this.idle) clearTimeout(this.idle);
      this.idle = null;
      const reader = (this.reader ??= this.ds.createQueryRunner());
      try {
        return await fn(reader);
      } catch (err) {
        this.reader = null;
        await reader.release().catch(() => undefined);
        throw err;
      } finally {
        this.idle ??= setTimeout(() => {
          this.idle = null;
          const r = this.reader;
          this.reader = null;
          void r?.release().catch(() => undefined);
        }, READER_IDLE_MS);
      }
    });
    this.reading = work.catch(() => undefined);
    return work;
  }

  write<T>(steps: Steps<T>): Promise<T> {
    const work = this.writing.then(() =>
      this.withRunner(async (qr) => {
        await qr.startTransaction();
        try {
          const out = await this.drive(qr, steps);
          await qr.commitTransaction();
          this.totals = null;
          return out;
        } catch (err) {
          await qr.rollbackTransaction().catch(() => undefined);
          throw err;
        }
      }),
    );
    this.writing = work.catch(() => undefined);
    return work;
  }

  /**
   * The same order as SQLite's: up to RANKED_MAX matches ranked by bm25 as FTS5 computes it (k1 1.2,
   * b 0.75; each part's share of the rows with text, its count in the message, the message's length
   * against the average), best first, then newest; more are returned newest first. The scores are
   * computed here from the matched rows' text (at most RANKED_MAX of them), with the row count and
   * total length from the table and each part's row count from the GIN index; snippets are made from
   * the same text (text-index.ts), in FTS5's shape.
   */
  async search(where: string[], params: unknown[], f: SearchFilters): Promise<Result> {
    const query = tsqueryOf(f.parts);
    if (!query) return { order: 'relevance', rows: [] };
    return this.queuedRead(async (qr) => {
      const q = async (sql: string, ...p: unknown[]) => ((await qr.query(numbered(sql), p, true)) as { records: Array<Record<string, unknown>> }).records;
      const count = async (tsquery: string) =>
        Number((await q(`SELECT CAST(COUNT(*) AS INTEGER) AS n FROM wa_messages WHERE words @@ CAST(? AS tsquery)`, tsquery))[0]!.n);
      const snippet = (m: MessageInfo) => snippetOf(m.text, f.parts);
      if ((await count(query)) > RANKED_MAX) {
        const rows = await q(
          `SELECT ${MESSAGE_COLUMNS} FROM wa_messages m WHERE m.words @@ CAST(? AS tsquery) AND ${where.join(' AND ')} ORDER BY m.ts DESC, m.seq DESC LIMIT ?`,
          query,
          ...params,
          f.limit,
        );
        return { order: 'newest', rows: rows.map((r) => ({ ...messageRow(r), snippet: snippet(messageRow(r)), score: 0 })) };
      }
      const rows = (
        await q(`SELECT ${MESSAGE_COLUMNS} FROM wa_messages m WHERE m.words @@ CAST(? AS tsquery) AND ${where.join(' AND ')}`, query, ...params)
      ).map(messageRow);
      if (!rows.length) return { order: 'relevance', rows: [] };
      // bm25's row count and total length: a scan of the table, so kept until this store writes or TOTALS_MS pass (another instance's writes).
      if (!this.totals || this.totals.at < Date.now() - TOTALS_MS) {
        const [t] = await q(
          `SELECT CAST(COUNT(*) AS INTEGER) AS n, CAST(COALESCE(SUM(word_count), 0) AS BIGINT) AS words FROM wa_messages WHERE text IS NOT NULL AND text <> ''`,
        );
        this.totals = { docs: Number(t!.n), words: Number(t!.words), at: Date.now() };
      }
      const docs = this.totals.docs;
      const avg = this.totals.words / Math.max(1, docs);
      const idf: number[] = [];
      for (const part of f.parts) {
        const hits = await count(tsqueryOf([part]) ?? query);
        const v = Math.log((docs - hits + 0.5) / (hits + 0.5));
        idf.push(v > 0 ? v : 1e-6);
      }
      const scored = rows.map((m) => {
        const { size, counts } = frequencies(m.text, f.parts);
        const score = counts.reduce((sum, tf, i) => sum + (idf[i]! * (tf * (K1 + 1))) / (tf + K1 * (1 - B + (B * size) / avg)), 0);
        return { ...m, snippet: '', score: -score };
      });
      scored.sort((a, b) => a.score - b.score || b.ts - a.ts);
      return { order: 'relevance', rows: scored.slice(0, f.limit).map((m) => ({ ...m, snippet: snippet(m) })) };
    });
  }
}

/** FTS5's bm25 parameters. */
const K1 = 1.2;
const B = 0.75;
