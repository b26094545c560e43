import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import Database from 'better-sqlite3';
import { Column, Entity, PrimaryGeneratedColumn, type DataSource, type MigrationInterface, type QueryRunner } from 'typeorm';
import { openPackDatabase, type PackDatabaseOptions } from '../../../kernel/storage/pack-database.js';
import { tempDir } from '../../helpers/kernel-fixture.js';

// A pack's first version: notes with a text.
@Entity('notes')
class NoteV1 {
  @PrimaryGeneratedColumn()
  id!: number;

  @Column('varchar', { length: 200 })
  text!: string;
}

// Its next version adds a tag.
@Entity('notes')
class NoteV2 {
  @PrimaryGeneratedColumn()
  id!: number;

  @Column('varchar', { length: 200 })
  text!: string;

  @Column('varchar', { length: 40, default: '' })
  tag!: string;
}

/** How many times each migration's up() ran in this test file. */
const runs: Record<string, number> = {};
const count = (name: string) => (runs[name] = (runs[name] ?? 0) + 1);

class CreateNotes1700000000000 implements MigrationInterface {
  async up(qr: QueryRunner): Promise<void> {
    count('CreateNotes');
    await qr.query(`CREATE TABLE "notes" ("id" integer PRIMARY KEY AUTOINCREMENT NOT NULL, "text" varchar(200) NOT NULL)`);
  }
  async down(qr: QueryRunner): Promise<void> {
    await qr.query(`DROP TABLE "notes"`);
  }
}

class AddNoteTag1700000000001 implements MigrationInterface {
  async up(qr: QueryRunner): Promise<void> {
    count('AddNoteTag');
    await qr.query(`ALTER TABLE "notes" ADD COLUMN "tag" varchar(40) NOT NULL DEFAULT ('')`);
  }
  async down(): Promise<void> {}
}

/** Does some work, then fails on a statement SQLite rejects. */
class BreakNotes1700000000002 implements MigrationInterface {
  async up(qr: QueryRunner): Promise<void> {
    await qr.query(`CREATE TABLE "half_done" ("id" integer PRIMARY KEY)`);
    await qr.query(`UPDATE "notes" SET "text" = 'overwritten'`);
    await qr.query(`UPDATE "no_such_table" SET "x" = 1`);
  }
  async down(): Promise<void> {}
}

/** An early migration for the slipped-in test (its own table, so it can precede CreateNotes). */
class CreateGuard1600000000000 implements MigrationInterface {
  async up(qr: QueryRunner): Promise<void> {
    await qr.query(`CREATE TABLE "guard" ("id" integer PRIMARY KEY)`);
  }
  async down(): Promise<void> {}
}

class NoTimestamp implements MigrationInterface {
  async up(): Promise<void> {}
  async down(): Promise<void> {}
}

const V1: PackDatabaseOptions = { name: 'notes', entities: [NoteV1], migrations: [CreateNotes1700000000000] };
const V2: PackDatabaseOptions = { name: 'notes', entities: [NoteV2], migrations: [CreateNotes1700000000000, AddNoteTag1700000000001] };

const open: DataSource[] = [];
async function openDb(dir: string, options: PackDatabaseOptions): Promise<DataSource> {
  const ds = await openPackDatabase(dir, options);
  open.push(ds);
  return ds;
}
afterEach(async () => {
  for (const ds of open.splice(0)) if (ds.isInitialized) await ds.destroy();
});

/** What the file holds, read without typeorm: tables with their SQL, and the recorded migrations. */
function inspect(file: string): { schema: string[]; migrations: string[]; notes: unknown[] } {
  const db = new Database(file, { readonly: true });
  try {
    const schema = (
      db.prepare(`SELECT type, name, sql FROM sqlite_master ORDER BY name`).all() as Array<{ type: string; name: string; sql: string | null }>
    ).map((r) => `${r.type} ${r.name}: ${r.sql ?? ''}`);
    const hasMigrations = schema.some((s) => s.startsWith('table migrations:'));
    const migrations = hasMigrations ? (db.prepare(`SELECT name FROM migrations ORDER BY id`).all() as Array<{ name: string }>).map((r) => r.name) : [];
    const notes = schema.some((s) => s.startsWith('table notes:')) ? db.prepare(`SELECT * FROM notes ORDER BY id`).all() : [];
    return { schema, migrations, notes };
  } finally {
    db.close();
  }
}

const sha256 = (file: string) => crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');

describe('a pack database', () => {
  it('opens <dir>/<name>.sqlite, runs its migrations once, and a second open runs none', async () => {
    const dir = tempDir();
    const before = runs.CreateNotes ?? 0;
    let ds = await openDb(dir, V1);
    await ds.getRepository(NoteV1).save({ text: 'first' });
    expect(await ds.query('PRAGMA journal_mode')).toEqual([{ journal_mode: 'wal' }]);
    expect(await ds.query('PRAGMA foreign_keys')).toEqual([{ foreign_keys: 1 }]);
    await ds.destroy();

    ds = await openDb(dir, V1);
    expect(runs.CreateNotes).toBe(before + 1);
    expect((await ds.getRepository(NoteV1).find()).map((n) => n.text)).toEqual(['first']);
    await ds.destroy();
    expect(inspect(path.join(dir, 'notes.sqlite')).migrations).toEqual(['CreateNotes1700000000000']);
  });

  it('names the file pack.sqlite when no name is given', async () => {
    const dir = tempDir();
    await openDb(dir, { entities: [NoteV1], migrations: [CreateNotes1700000000000] });
    expect(fs.existsSync(path.join(dir, 'pack.sqlite'))).toBe(true);
  });

  it('runs a migration added in a later version on the old file, keeping its rows', async () => {
    const dir = tempDir();
    let ds = await openDb(dir, V1);
    await ds.getRepository(NoteV1).save([{ text: 'kept one' }, { text: 'kept two' }]);
    await ds.destroy();

    ds = await openDb(dir, V2);
    const notes = ds.getRepository(NoteV2);
    expect((await notes.find({ order: { id: 'ASC' } })).map((n) => [n.text, n.tag])).toEqual([
      ['kept one', ''],
      ['kept two', ''],
    ]);
    await notes.save({ text: 'tagged', tag: 'work' });
    expect(await notes.countBy({ tag: 'work' })).toBe(1);
    await ds.destroy();
    expect(inspect(path.join(dir, 'notes.sqlite')).migrations).toEqual(['CreateNotes1700000000000', 'AddNoteTag1700000000001']);
  });

  it('makes the schema its entities describe: migrations leave nothing for synchronize to change', async () => {
    const ds = await openDb(tempDir(), V2);
    const pending = await ds.driver.createSchemaBuilder().log();
    expect(pending.upQueries.map((q) => q.query)).toEqual([]);
  });

  it('rolls back a failing migration, closes the database and names the migration and the SQL error', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'notes.sqlite');
    const ds = await openDb(dir, V1);
    await ds.getRepository(NoteV1).save({ text: 'untouched' });
    await ds.destroy();
    const before = inspect(file);

    const failing = openPackDatabase(dir, { ...V1, migrations: [CreateNotes1700000000000, BreakNotes1700000000002] });
    await expect(failing).rejects.toThrow(/notes\.sqlite: migration "BreakNotes1700000000002" failed and was rolled back: .*no such table: no_such_table/);
    // Closed: the last connection to a WAL database removes its -wal file.
    expect(fs.existsSync(`${file}-wal`)).toBe(false);
    expect(inspect(file)).toEqual(before);
  });

  it('keeps the migrations before a failing one when they run in the same open', async () => {
    const dir = tempDir();
    await expect(openPackDatabase(dir, { ...V2, migrations: [CreateNotes1700000000000, AddNoteTag1700000000001, BreakNotes1700000000002] })).rejects.toThrow(
      /migration "BreakNotes1700000000002" failed/,
    );
    const after = inspect(path.join(dir, 'notes.sqlite'));
    expect(after.migrations).toEqual(['CreateNotes1700000000000', 'AddNoteTag1700000000001']);
    expect(after.schema.some((s) => s.includes('half_done'))).toBe(false);
  });

  it('refuses a file that records a migration this code does not know, and leaves it as it was', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'notes.sqlite');
    const ds = await openDb(dir, V2);
    await ds.getRepository(NoteV2).save({ text: 'from the newer version', tag: 'new' });
    await ds.destroy();
    const hash = sha256(file);
    const before = inspect(file);

    await expect(openPackDatabase(dir, V1)).rejects.toMatchObject({
      code: 'CONFLICT',
      message: expect.stringMatching(
        /records migration\(s\) this code does not know \(AddNoteTag1700000000001\): it was written by a newer version.*nothing was run or undone/,
      ),
    });
    // Closed (checked before inspect() opens the file again, read-only, which leaves a -wal behind).
    expect(fs.existsSync(`${file}-wal`)).toBe(false);
    expect(sha256(file)).toBe(hash);
    expect(inspect(file)).toEqual(before);
  });

  it('refuses a file that is not a SQLite database, naming it, and leaves it alone', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'notes.sqlite');
    fs.writeFileSync(file, 'not a database, just text long enough to have a header of sorts'.repeat(20));
    const hash = sha256(file);
    await expect(openPackDatabase(dir, V1)).rejects.toThrow(/notes\.sqlite cannot be opened: .*file is not a database/);
    expect(sha256(file)).toBe(hash);
  });

  it('refuses a pending migration older than one already run (slipped into the history)', async () => {
    const dir = tempDir();
    await (await openDb(dir, { ...V1, migrations: [CreateGuard1600000000000, CreateNotes1700000000000] })).destroy();
    // A later version lists a migration between the two that already ran.
    class Between1650000000000 implements MigrationInterface {
      async up(): Promise<void> {}
      async down(): Promise<void> {}
    }
    await expect(
      openPackDatabase(dir, { ...V1, migrations: [CreateGuard1600000000000, Between1650000000000, CreateNotes1700000000000] }),
    ).rejects.toMatchObject({
      code: 'CONFLICT',
      message: expect.stringMatching(/has not run migration "Between1650000000000" but has run the later "CreateNotes1700000000000"/),
    });
  });

  it.each([
    ['a name without a timestamp', [NoTimestamp], /"NoTimestamp" .* has no timestamp: typeorm orders migrations by the 13-digit JavaScript timestamp/],
    ['the same migration twice', [CreateNotes1700000000000, CreateNotes1700000000000], /"CreateNotes1700000000000" is listed twice/],
    [
      'migrations out of timestamp order',
      [AddNoteTag1700000000001, CreateNotes1700000000000],
      /"CreateNotes1700000000000" is listed after "AddNoteTag1700000000001" but its timestamp is not later: typeorm runs migrations in timestamp order, not list order/,
    ],
  ])('refuses %s before touching the folder', async (_what, migrations, message) => {
    const dir = path.join(tempDir(), 'never-made');
    await expect(openPackDatabase(dir, { entities: [NoteV1], migrations })).rejects.toMatchObject({
      code: 'VALIDATION',
      message: expect.stringMatching(message),
    });
    expect(fs.existsSync(dir)).toBe(false);
  });

  it('refuses a migration that asks to run outside a transaction', async () => {
    class NoTransaction1700000000000 implements MigrationInterface {
      transaction = false;
      async up(): Promise<void> {}
      async down(): Promise<void> {}
    }
    await expect(openPackDatabase(tempDir(), { entities: [], migrations: [NoTransaction1700000000000] })).rejects.toMatchObject({
      code: 'VALIDATION',
      message: expect.stringMatching(/"NoTransaction1700000000000" .* asks to run outside a transaction/),
    });
  });

  it.each(['Notes', 'notes_db', 'notes.db', '../notes', '-notes', 'notes--db', ''])('refuses the file name %j (kebab-case only)', async (name) => {
    await expect(openPackDatabase(tempDir(), { ...V1, name })).rejects.toMatchObject({
      code: 'VALIDATION',
      message: expect.stringMatching(/is not kebab-case/),
    });
  });

  describe('synchronize', () => {
    const saved = { NODE_ENV: process.env.NODE_ENV, JEST_WORKER_ID: process.env.JEST_WORKER_ID };
    afterEach(() => {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    });

    it('is refused outside tests, before anything is created', async () => {
      delete process.env.NODE_ENV;
      delete process.env.JEST_WORKER_ID;
      const dir = path.join(tempDir(), 'never-made');
      await expect(openPackDatabase(dir, { ...V1, synchronize: true })).rejects.toMatchObject({
        code: 'VALIDATION',
        message: expect.stringMatching(/synchronize is for tests only .*schema changes go through migrations/),
      });
      expect(fs.existsSync(dir)).toBe(false);
      // Without synchronize the same process opens it through the migrations.
      await openDb(dir, V1);
    });

    it.each([
      ['NODE_ENV=test', { NODE_ENV: 'test' }],
      ['under jest', { JEST_WORKER_ID: '1' }],
    ])('makes the tables from the entities %s, without running or recording migrations', async (_what, env) => {
      delete process.env.NODE_ENV;
      delete process.env.JEST_WORKER_ID;
      Object.assign(process.env, env);
      const dir = tempDir();
      const before = runs.AddNoteTag ?? 0;
      const ds = await openDb(dir, { ...V2, synchronize: true });
      await ds.getRepository(NoteV2).save({ text: 'synced', tag: 't' });
      expect(runs.AddNoteTag ?? 0).toBe(before);
      await ds.destroy();
      expect(inspect(path.join(dir, 'notes.sqlite')).migrations).toEqual([]);
    });
  });

  it('makes its folder owner-only (0700) and its files owner-only (0600), WAL files included', async () => {
    const dir = path.join(tempDir(), 'packs-data', 'notes-pack');
    const ds = await openDb(dir, V1);
    await ds.getRepository(NoteV1).save({ text: 'x' });
    const mode = (p: string) => (fs.statSync(p).mode & 0o777).toString(8);
    expect(mode(dir)).toBe('700');
    expect(mode(path.dirname(dir))).toBe('700');
    const file = path.join(dir, 'notes.sqlite');
    expect([mode(file), mode(`${file}-wal`), mode(`${file}-shm`)]).toEqual(['600', '600', '600']);
  });

  it('leaves the mode of a folder that already exists alone', async () => {
    const dir = tempDir();
    fs.chmodSync(dir, 0o755);
    await openDb(dir, V1);
    expect((fs.statSync(dir).mode & 0o777).toString(8)).toBe('755');
  });
});
