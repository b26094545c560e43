/**
 * Pack databases on a real PostgreSQL server (test/helpers/postgres.ts): each pack in its own
 * schema, migrations with the same meaning as on SQLite files, and the URL's password nowhere in
 * what a person or a log can see.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { inspect } from 'node:util';
import { Column, Entity, PrimaryColumn, type DataSource, type MigrationInterface, type QueryRunner } from 'typeorm';
import { DatabaseUrl, databaseFromSetting } from '../../../kernel/storage/database-url.js';
import { openPackDatabase, packSchema, type PackDatabaseOptions } from '../../../kernel/storage/pack-database.js';
import { tempDir } from '../../helpers/kernel-fixture.js';
import { waitFor } from '../../helpers/wait.js';
import { startPostgres, type TestPostgres } from '../../helpers/postgres.js';

@Entity('notes')
class Note {
  @PrimaryColumn('varchar')
  id!: string;

  @Column('text')
  text!: string;
}

@Entity('notes')
class TaggedNote {
  @PrimaryColumn('varchar')
  id!: string;

  @Column('text')
  text!: string;

  @Column('varchar', { default: '' })
  tag!: string;
}

const runs: Record<string, number> = {};
const count = (name: string) => (runs[name] = (runs[name] ?? 0) + 1);

// Portable SQL: the same migration runs on SQLite and PostgreSQL.
class CreateNotes1700000000000 implements MigrationInterface {
  async up(qr: QueryRunner): Promise<void> {
    count('CreateNotes');
    await qr.query(`CREATE TABLE "notes" ("id" varchar PRIMARY KEY NOT NULL, "text" text NOT NULL)`);
  }
  async down(qr: QueryRunner): Promise<void> {
    await qr.query(`DROP TABLE "notes"`);
  }
}

class AddNoteTag1700000000001 implements MigrationInterface {
  async up(qr: QueryRunner): Promise<void> {
    await qr.query(`ALTER TABLE "notes" ADD COLUMN "tag" varchar NOT NULL DEFAULT ''`);
  }
  async down(): Promise<void> {}
}

/** Does some work (DDL and data), then fails. */
class BreakNotes1700000000002 implements MigrationInterface {
  async up(qr: QueryRunner): Promise<void> {
    await qr.query(`CREATE TABLE "half_done" ("id" integer PRIMARY KEY)`);
    await qr.query(`UPDATE "notes" SET "text" = 'overwritten'`);
    await qr.query(`UPDATE "no_such_table" SET "x" = 1`);
  }
  async down(): Promise<void> {}
}

const V1: PackDatabaseOptions = { name: 'notes', entities: [Note], migrations: [CreateNotes1700000000000], portable: true };
const V2: PackDatabaseOptions = { name: 'notes', entities: [TaggedNote], migrations: [CreateNotes1700000000000, AddNoteTag1700000000001], portable: true };

let server: TestPostgres;
beforeAll(async () => {
  server = await startPostgres();
  process.stderr.write(`postgres-store.test: PostgreSQL initdb + start took ${server.startMs} ms\n`);
}, 120_000);

const opened: DataSource[] = [];
async function open(url: string, packId: string, options: PackDatabaseOptions): Promise<DataSource> {
  const ds = await openPackDatabase(tempDir(), options, { url: DatabaseUrl.parse(url), packId });
  opened.push(ds);
  return ds;
}
afterEach(async () => {
  for (const ds of opened.splice(0)) if (ds.isInitialized) await ds.destroy();
});

/** The tables of a schema and its recorded migrations, read as the superuser, outside typeorm. */
async function look(db: string, schema: string): Promise<{ tables: string[]; migrations: string[]; notes: unknown[] }> {
  const tables = (
    await server.query<{ table_name: string }>(`SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name`, [schema], db)
  ).map((r) => r.table_name);
  const migrations = tables.includes('migrations')
    ? (await server.query<{ name: string }>(`SELECT name FROM "${schema}".migrations ORDER BY id`, [], db)).map((r) => r.name)
    : [];
  const notes = tables.includes('notes') ? await server.query(`SELECT * FROM "${schema}".notes ORDER BY id`, [], db) : [];
  return { tables, migrations, notes };
}

describe('a pack database on PostgreSQL', () => {
  it('lives in the schema pack_<pack>__<name>, runs its migrations once, and a second open runs none', async () => {
    const url = await server.database();
    const db = new URL(url).pathname.slice(1);
    const before = runs.CreateNotes ?? 0;
    let ds = await open(url, 'note-taker', V1);
    await ds.getRepository(Note).insert({ id: 'a', text: 'first' });
    await ds.destroy();
    ds = await open(url, 'note-taker', V1);
    expect(runs.CreateNotes).toBe(before + 1);
    expect(await ds.getRepository(Note).find()).toEqual([{ id: 'a', text: 'first' }]);
    expect(packSchema('note-taker', 'notes')).toBe('pack_note_taker__notes');
    expect(await look(db, 'pack_note_taker__notes')).toEqual({
      tables: ['migrations', 'notes'],
      migrations: ['CreateNotes1700000000000'],
      notes: [{ id: 'a', text: 'first' }],
    });
    // Nothing outside the pack's schema.
    expect(await server.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'`, [], db)).toEqual([]);
  });

  it('keeps a database its pack did not mark portable in its SQLite file, shared database or not', async () => {
    const url = await server.database();
    const dir = tempDir();
    const ds = await openPackDatabase(dir, { ...V1, portable: false }, { url: DatabaseUrl.parse(url), packId: 'sqlite-only' });
    opened.push(ds);
    expect(ds.options.type).toBe('better-sqlite3');
    expect(fs.existsSync(path.join(dir, 'notes.sqlite'))).toBe(true);
    expect(
      await server.query(`SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE 'pack_%'`, [], new URL(url).pathname.slice(1)),
    ).toEqual([]);
  });

  it('keeps packs apart: two packs with a table of the same name see only their own rows', async () => {
    const url = await server.database();
    const a = await open(url, 'pack-a', V1);
    const b = await open(url, 'pack-b', V1);
    await a.getRepository(Note).insert({ id: '1', text: 'from a' });
    await b.getRepository(Note).insert({ id: '1', text: 'from b' });
    expect(await a.getRepository(Note).find()).toEqual([{ id: '1', text: 'from a' }]);
    expect(await b.getRepository(Note).find()).toEqual([{ id: '1', text: 'from b' }]);
    // A raw query names no schema and still stays inside the pack's own.
    expect(await a.query(`SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = current_schema()`)).toEqual([{ n: 2 }]);
    expect(await a.query(`SELECT array_to_string(current_schemas(false), ',') AS s`)).toEqual([{ s: 'pack_pack_a__notes' }]);
  });

  it('runs a later version’s migration on the old schema, keeping its rows', async () => {
    const url = await server.database();
    let ds = await open(url, 'notes', V1);
    await ds.getRepository(Note).insert([
      { id: '1', text: 'kept one' },
      { id: '2', text: 'kept two' },
    ]);
    await ds.destroy();
    ds = await open(url, 'notes', V2);
    expect((await ds.getRepository(TaggedNote).find({ order: { id: 'ASC' } })).map((n) => [n.text, n.tag])).toEqual([
      ['kept one', ''],
      ['kept two', ''],
    ]);
    expect((await ds.driver.createSchemaBuilder().log()).upQueries.map((q) => q.query)).toEqual([]);
  });

  it('rolls a failing migration back entirely (its tables too), closes the store and names the migration', async () => {
    const url = await server.database();
    const db = new URL(url).pathname.slice(1);
    const ds = await open(url, 'notes', V1);
    await ds.getRepository(Note).insert({ id: '1', text: 'untouched' });
    await ds.destroy();
    const before = await look(db, 'pack_notes__notes');
    const failing = open(url, 'notes', { ...V1, migrations: [CreateNotes1700000000000, BreakNotes1700000000002] });
    await expect(failing).rejects.toThrow(
      /schema "pack_notes__notes"\): migration "BreakNotes1700000000002" failed and was rolled back: relation "no_such_table" does not exist/,
    );
    expect(await look(db, 'pack_notes__notes')).toEqual(before);
  });

  it('refuses a schema that records a migration this code does not know, and leaves it as it was', async () => {
    const url = await server.database();
    const db = new URL(url).pathname.slice(1);
    const ds = await open(url, 'notes', V2);
    await ds.getRepository(TaggedNote).insert({ id: '1', text: 'from the newer version', tag: 'new' });
    await ds.destroy();
    const before = await look(db, 'pack_notes__notes');
    await expect(open(url, 'notes', V1)).rejects.toMatchObject({
      code: 'CONFLICT',
      message: expect.stringMatching(/records migration\(s\) this code does not know \(AddNoteTag1700000000001\): it was written by a newer version/),
    });
    expect(await look(db, 'pack_notes__notes')).toEqual(before);
  });

  it('runs each migration once when two instances open the same store at the same time', async () => {
    const url = await server.database();
    const db = new URL(url).pathname.slice(1);
    const before = runs.CreateNotes ?? 0;
    const [a, b] = await Promise.all([open(url, 'shared', V2), open(url, 'shared', V2)]);
    expect(runs.CreateNotes).toBe(before + 1);
    await a.getRepository(TaggedNote).insert({ id: 'x', text: 'seen by both', tag: '' });
    expect(await b.getRepository(TaggedNote).findOneBy({ id: 'x' })).toMatchObject({ text: 'seen by both' });
    expect((await look(db, 'pack_shared__notes')).migrations).toEqual(['CreateNotes1700000000000', 'AddNoteTag1700000000001']);
  });

  it('makes the tables from the entities in the pack’s schema under tests (synchronize), recording no migrations', async () => {
    const url = await server.database();
    const db = new URL(url).pathname.slice(1);
    const ds = await open(url, 'synced', { ...V2, synchronize: true });
    await ds.getRepository(TaggedNote).insert({ id: '1', text: 'made by synchronize', tag: 't' });
    expect(await look(db, 'pack_synced__notes')).toEqual({ tables: ['notes'], migrations: [], notes: [{ id: '1', text: 'made by synchronize', tag: 't' }] });
  });

  it('answers again after the server restarts, without reopening the store', async () => {
    const url = await server.database();
    const ds = await open(url, 'notes', V1);
    await ds.getRepository(Note).insert({ id: '1', text: 'before the restart' });
    await server.restart();
    // The pool drops the connections the restart killed and makes new ones.
    expect(await ds.getRepository(Note).find()).toEqual([{ id: '1', text: 'before the restart' }]);
    await ds.getRepository(Note).insert({ id: '2', text: 'after the restart' });
    expect(await ds.getRepository(Note).count()).toBe(2);
  });

  it('survives a connection of its pool that dies while checked out between queries: the holder’s next query fails, the process goes on', async () => {
    const url = await server.database();
    const ds = await open(url, 'notes', V1);
    // A client taken straight from the store's pool (as a pack's kept connection or a lease does), not a typeorm QueryRunner, which listens itself.
    type Raw = { query(sql: string): Promise<{ rows: Array<{ pid: number }> }>; release(err?: Error): void; _queryable: boolean };
    const pool = (ds.driver as unknown as { master: { connect(): Promise<Raw> } }).master;
    const held = await pool.connect();
    const [{ pid }] = (await held.query('SELECT pg_backend_pid() AS pid')).rows as [{ pid: number }];
    // Killed from outside while checked out and idle: its client emits 'error'; unheard, that would end the process.
    await server.query('SELECT pg_terminate_backend($1)', [pid]);
    await waitFor(() => !held._queryable);
    await expect(held.query('SELECT 1')).rejects.toThrow();
    held.release();
    expect(await ds.getRepository(Note).count()).toBe(0);
  });
});

describe('the database URL’s password', () => {
  it('never shows when the URL object is printed, logged or serialised', () => {
    const url = DatabaseUrl.parse('postgres://memo:s3cr%2Fet-pw@db.example:6543/memo_prod?sslmode=require');
    const shown = [String(url), url.toString(), JSON.stringify({ url }), inspect(url), inspect({ nested: { url } }), url.display];
    for (const s of shown) expect(s).not.toMatch(/s3cr/);
    expect(url.display).toBe('postgres://memo:[masked]@db.example:6543/memo_prod');
    expect(url.connection()).toMatchObject({
      host: 'db.example',
      port: 6543,
      username: 'memo',
      password: 's3cr/et-pw',
      database: 'memo_prod',
      ssl: { rejectUnauthorized: false },
    });
    expect(url.scrub('FATAL: s3cr/et-pw and s3cr%2Fet-pw')).toBe('FATAL: [masked] and [masked]');
  });

  it.each([
    ['not a URL', 's3cret at nowhere', /does not parse as a URL/],
    ['another scheme', 'mysql://memo:s3cret@db/memo', /scheme is "mysql"/],
    ['no user', 'postgres://:s3cret@db/memo', /names no user/],
    ['an unknown parameter', 'postgres://memo:s3cret@db/memo?options=-c%20x', /parameter "options" is not supported/],
    ['a bad sslmode', 'postgres://memo:s3cret@db/memo?sslmode=maybe', /sslmode "maybe" is not one of/],
  ])('is not repeated when the URL is refused (%s)', (_what, text, message) => {
    let caught: unknown;
    try {
      DatabaseUrl.parse(text);
    } catch (err) {
      caught = err;
    }
    expect(caught).toMatchObject({ code: 'VALIDATION', message: expect.stringMatching(message) });
    expect(inspect(caught)).not.toMatch(/s3cret/);
  });

  it('reads a blank setting as "no shared database" (SQLite files)', () => {
    expect(databaseFromSetting(undefined)).toBeNull();
    expect(databaseFromSetting('  ')).toBeNull();
    expect(databaseFromSetting('postgres://memo@localhost/memo')?.display).toBe('postgres://memo@localhost:5432/memo');
  });

  it('is absent from the error when the server refuses it, and from everything the error carries', async () => {
    const url = await server.database();
    const wrong = url.replace(encodeURIComponent(server.password), 'wrong-pw-5e7c');
    let caught: unknown;
    try {
      await open(wrong, 'notes', V1);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(Error);
    const everything = inspect(caught, { depth: 10, showHidden: true });
    expect((caught as Error).message).toMatch(/cannot be opened: password authentication failed for user "memo"/);
    expect((caught as Error).message).toContain(`postgres://memo:[masked]@127.0.0.1:${server.port}/`);
    expect(everything).not.toContain('wrong-pw-5e7c');
    expect(everything).not.toContain(server.password);
  });

  it('is absent from a migration failure and its cause', async () => {
    const url = await server.database();
    let caught: unknown;
    try {
      await open(url, 'notes', { ...V1, migrations: [CreateNotes1700000000000, BreakNotes1700000000002] });
    } catch (err) {
      caught = err;
    }
    expect((caught as Error).message).toMatch(/migration "BreakNotes1700000000002" failed/);
    expect(inspect(caught, { depth: 10, showHidden: true })).not.toContain(server.password);
    expect(inspect(caught, { depth: 10, showHidden: true })).not.toContain(encodeURIComponent(server.password));
  });
});
