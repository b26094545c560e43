/**
 * A pack database that is SQLite-only (FTS5, the better-sqlite3 handle) and not marked portable —
 * the vault's note index — keeps working when the kernel has a shared PostgreSQL database: the
 * vault's search suite runs here as it is with MEMO_DATABASE_URL set, and nothing of it lands there.
 * (WhatsApp's store is portable now: its suites rerun on PostgreSQL in whatsapp-suites.test.ts.)
 */
import { onPostgres } from './on-postgres.js';
import '../plugins/vault/search.test.js';

const pg = onPostgres([]);

afterAll(async () => {
  const databases = await pg.server().query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname ~ '^t[0-9]+$'`);
  expect(databases.length).toBeGreaterThan(0);
  for (const { datname } of databases) {
    expect(await pg.server().query(`SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE 'pack_%'`, [], datname)).toEqual([]);
  }
});
