import * as path from 'node:path';
import type { DataSource } from 'typeorm';
import { MemoError } from '../errors.js';
import type { DatabaseUrl } from './database-url.js';
import type { EntityClass, MigrationClass } from './migrations.js';
import { openSqlite } from './sqlite.js';

export interface PackDatabaseOptions {
  /** The file name without `.sqlite`, kebab-case. Default `pack`. */
  name?: string;
  /** The pack's own entities: no other pack's tables live in its file. */
  entities: EntityClass[];
  /** typeorm migrations, oldest first; each class name ends with a later 13-digit timestamp. */
  migrations: MigrationClass[];
  /** Tests only (NODE_ENV=test or under jest): tables from the entities, no migrations. Refused elsewhere. */
  synchronize?: boolean;
  /**
   * The entities and migrations run on PostgreSQL as well as SQLite (no SQLite-only SQL such as FTS5,
   * no use of the better-sqlite3 handle). Only such a database moves into the shared PostgreSQL
   * database when the kernel has one (MEMO_DATABASE_URL); any other stays a SQLite file in the pack's
   * data folder, so setting the URL never breaks a pack that was written for SQLite.
   */
  portable?: boolean;
}

const KEBAB = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

/** Where the kernel keeps pack databases when they are shared (MEMO_DATABASE_URL): one PostgreSQL database. */
export interface SharedPackDatabase {
  url: DatabaseUrl;
  packId: string;
}

/**
 * The PostgreSQL schema of a pack's database: `pack_<pack id>__<name>`, dashes made underscores.
 * Pack ids and names are kebab-case (no double dash), so the double underscore keeps `a-b`+`c` and
 * `a`+`b-c` apart; the prefix keeps packs clear of the kernel's own schemas and of PostgreSQL's `pg_`.
 */
export function packSchema(packId: string, name: string): string {
  return `pack_${packId.replace(/-/g, '_')}__${name.replace(/-/g, '_')}`;
}

/**
 * A pack's own database, so hot-loading one pack never touches another's schema: `<dir>/<name>.sqlite`
 * in the pack's data folder, or, when the kernel shares a PostgreSQL database and the pack says its
 * database is portable, the pack's own schema in it (packSchema). Pending migrations run before it is returned (see migrations.ts for what happens
 * when one fails, or when the database is newer than the code). The caller closes it.
 */
export async function openPackDatabase(dir: string, options: PackDatabaseOptions, shared?: SharedPackDatabase): Promise<DataSource> {
  const name = options.name ?? 'pack';
  if (!KEBAB.test(name)) {
    throw new MemoError(
      'VALIDATION',
      `The database name "${name}" is not kebab-case (lower-case letters and digits joined by single dashes, e.g. "notes" or "task-index").`,
    );
  }
  const store = {
    entities: options.entities,
    migrations: options.migrations,
    ...(options.synchronize !== undefined ? { synchronize: options.synchronize } : {}),
  };
  if (shared && options.portable) {
    const { openPostgres } = await import('./postgres.js');
    return openPostgres(shared.url, packSchema(shared.packId, name), store);
  }
  return openSqlite(path.join(dir, `${name}.sqlite`), store);
}
