import * as fs from 'node:fs';
import * as path from 'node:path';
import type { DataSource } from 'typeorm';

/**
 * Opens a typeorm DataSource on a SQLite file (better-sqlite3). typeorm is imported on demand:
 * it costs about half a second, and most CLI commands never touch a database.
 * `synchronize` creates and updates tables from the entities (no migrations yet).
 */
/** An entity class (decorated with typeorm's @Entity). */
type EntityClass = abstract new (...args: never[]) => unknown;

export async function openSqlite(file: string, entities: EntityClass[]): Promise<DataSource> {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const { DataSource } = await import('typeorm');
  const ds = new DataSource({
    type: 'better-sqlite3',
    database: file,
    entities,
    synchronize: true,
    logging: false,
    prepareDatabase: (db: { pragma(s: string): unknown }) => void db.pragma('journal_mode = WAL'),
  });
  await ds.initialize();
  return ds;
}
