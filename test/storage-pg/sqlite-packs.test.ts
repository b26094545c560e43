/**
 * Packs whose databases are SQLite-only (FTS5, the better-sqlite3 handle) and not marked portable —
 * the vault and WhatsApp — keep working when the kernel has a shared PostgreSQL database: their
 * search suites run here as they are with MEMO_DATABASE_URL set, and nothing of theirs lands in it.
 */
import { onPostgres } from './on-postgres.js';
import '../plugins/vault/search.test.js';
import '../plugins/whatsapp/search.test.js';

const pg = onPostgres([]);

afterAll(async () => {
  const databases = await pg.server().query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname ~ '^t[0-9]+$'`);
  expect(databases.length).toBeGreaterThan(0);
  for (const { datname } of databases) {
    expect(await pg.server().query(`SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE 'pack_%'`, [], datname)).toEqual([]);
  }
});
