/**
 * The one-time copy of a history an older version (or this one without MEMO_DATABASE_URL) kept in
 * `packs-data/whatsapp/whatsapp.sqlite` into the PostgreSQL store, when that store is first opened
 * and still empty: every chat, contact, LID pair and message (with its seq, so paging cursors stay
 * valid, and its words for search) in one transaction that checks the counts before it commits. A
 * store that already has rows (another instance copied or received its history first) is left as it
 * is, with a warning; a failed copy leaves nothing behind and is tried again at the next start. A
 * copy that committed leaves `whatsapp.sqlite.copied` beside the file (naming the database, never the
 * password), so later starts on that database skip it. The SQLite file is kept as it was (the
 * person's data, should the shared database be lost).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Logger } from 'memo-kernel/pack';
import type { DataSource, QueryRunner } from 'typeorm';
import { wordsOf } from './text-index.js';

const TABLES = [
  { name: 'wa_chats', columns: ['jid', 'name', 'is_group', 'unread', 'last_at', 'archived'], booleans: ['is_group', 'archived'] },
  { name: 'wa_contacts', columns: ['jid', 'name', 'notify', 'verified_name'], booleans: [] },
  { name: 'wa_lid_map', columns: ['lid', 'pn'], booleans: [] },
  {
    name: 'wa_messages',
    columns: ['seq', 'chat_jid', 'msg_id', 'from_me', 'sender_jid', 'push_name', 'ts', 'kind', 'text', 'edited', 'deleted'],
    booleans: ['from_me', 'edited', 'deleted'],
  },
] as const;

/** Rows per INSERT (13 parameters a message: well under PostgreSQL's 65,535). */
const CHUNK = 500;

async function insert(qr: QueryRunner, table: (typeof TABLES)[number], rows: Array<Record<string, unknown>>): Promise<void> {
  const words = table.name === 'wa_messages';
  const columns: string[] = [...table.columns, ...(words ? ['words', 'word_count'] : [])];
  for (let i = 0; i < rows.length; i += CHUNK) {
    const params: unknown[] = [];
    const values = rows.slice(i, i + CHUNK).map((r) => {
      const slots = table.columns.map((c) => {
        params.push((table.booleans as readonly string[]).includes(c) ? r[c] === 1 || r[c] === true : r[c]);
        return `$${params.length}`;
      });
      if (words) {
        const w = wordsOf(r.text as string | null);
        params.push(w.vector);
        slots.push(`CAST($${params.length} AS tsvector)`);
        params.push(w.count);
        slots.push(`$${params.length}`);
      }
      return `(${slots.join(', ')})`;
    });
    await qr.query(`INSERT INTO ${table.name} (${columns.join(', ')}) VALUES ${values.join(', ')}`, params);
  }
}

/** The marker a copy leaves in the data folder: which database it went into (host, port and database name; no password). */
const MARKER = 'whatsapp.sqlite.copied';

function databaseOf(ds: DataSource): string {
  const o = ds.options as { host?: string; port?: number; database?: string };
  return `${o.host ?? ''}:${o.port ?? ''}/${o.database ?? ''}`;
}

/** Copies whatsapp.sqlite in `packDir` into the PostgreSQL store once (see above); the number of messages copied. */
export async function copySqliteOnce(packDir: string, ds: DataSource, logger: Logger): Promise<number> {
  const file = path.join(packDir, 'whatsapp.sqlite');
  if (!fs.existsSync(file)) return 0;
  const marker = path.join(packDir, MARKER);
  const target = databaseOf(ds);
  if (fs.existsSync(marker) && fs.readFileSync(marker, 'utf8').trim() === target) return 0;
  const { default: Sqlite } = await import('better-sqlite3');
  const old = new Sqlite(file, { readonly: true, fileMustExist: true });
  try {
    const has = (t: string) => old.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`).get(t) !== undefined;
    if (!TABLES.every((t) => has(t.name))) return 0;
    const source = new Map(TABLES.map((t) => [t.name, old.prepare(`SELECT ${t.columns.join(', ')} FROM ${t.name}`).all() as Array<Record<string, unknown>>]));
    if ([...source.values()].every((rows) => rows.length === 0)) return 0;
    const qr = ds.createQueryRunner();
    try {
      await qr.startTransaction();
      // Instances starting together take turns; the second finds the rows and leaves them.
      await qr.query(`SELECT pg_advisory_xact_lock(hashtext('memo whatsapp sqlite copy'))`);
      const [{ n }] = (await qr.query(
        `SELECT (SELECT COUNT(*) FROM wa_chats) + (SELECT COUNT(*) FROM wa_contacts) + (SELECT COUNT(*) FROM wa_lid_map) + (SELECT COUNT(*) FROM wa_messages) AS n`,
      )) as [{ n: string }];
      if (Number(n) > 0) {
        await qr.rollbackTransaction();
        logger.warn(
          `whatsapp: ${file} has a history of ${source.get('wa_messages')!.length} messages that was not copied into PostgreSQL: the shared store already has one. The file is kept as it was.`,
        );
        return 0;
      }
      for (const t of TABLES) await insert(qr, t, source.get(t.name)!);
      await qr.query(`SELECT setval(pg_get_serial_sequence('wa_messages', 'seq'), GREATEST((SELECT MAX(seq) FROM wa_messages), 1))`);
      for (const t of TABLES) {
        const [{ c }] = (await qr.query(`SELECT COUNT(*) AS c FROM ${t.name}`)) as [{ c: string }];
        if (Number(c) !== source.get(t.name)!.length) throw new Error(`${t.name}: ${c} rows copied of ${source.get(t.name)!.length}`);
      }
      await qr.commitTransaction();
    } catch (err) {
      if (qr.isTransactionActive) await qr.rollbackTransaction().catch(() => undefined);
      throw new Error(
        `The WhatsApp history in ${file} could not be copied into PostgreSQL (${(err as Error).message}); nothing was copied, the file is unchanged, and the next start tries again.`,
        { cause: err },
      );
    } finally {
      await qr.release();
    }
    fs.writeFileSync(marker, `${target}\n`, { mode: 0o600 });
    const copied = source.get('wa_messages')!.length;
    logger.info(`whatsapp: copied the history in ${file} (${copied} messages) into PostgreSQL; the file is kept as it was`);
    return copied;
  } finally {
    old.close();
  }
}
