import * as path from 'node:path';
import type { DataSource } from 'typeorm';
import { MemoError } from '../errors.js';
import { openSqlite, type EntityClass, type MigrationClass } from './sqlite.js';

export interface PackDatabaseOptions {
  /** The file name without `.sqlite`, kebab-case. Default `pack`. */
  name?: string;
  /** The pack's own entities: no other pack's tables live in its file. */
  entities: EntityClass[];
  /** typeorm migrations, oldest first; each class name ends with a later 13-digit timestamp. */
  migrations: MigrationClass[];
  /** Tests only (NODE_ENV=test or under jest): tables from the entities, no migrations. Refused elsewhere. */
  synchronize?: boolean;
}

const KEBAB = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

/**
 * A pack's own database: `<dir>/<name>.sqlite` in the pack's data folder, so hot-loading one pack
 * never touches another's schema. Pending migrations run before it is returned (see openSqlite for
 * what happens when one fails, or when the file is newer than the code). The caller closes it.
 */
export async function openPackDatabase(dir: string, options: PackDatabaseOptions): Promise<DataSource> {
  const name = options.name ?? 'pack';
  if (!KEBAB.test(name)) {
    throw new MemoError(
      'VALIDATION',
      `The database name "${name}" is not kebab-case (lower-case letters and digits joined by single dashes, e.g. "notes" or "task-index").`,
    );
  }
  return openSqlite(path.join(dir, `${name}.sqlite`), {
    entities: options.entities,
    migrations: options.migrations,
    ...(options.synchronize !== undefined ? { synchronize: options.synchronize } : {}),
  });
}
