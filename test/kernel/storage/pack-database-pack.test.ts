import * as fs from 'node:fs';
import * as path from 'node:path';
import Database from 'better-sqlite3';
import { makeKernel, tempDir, type Fixture } from '../../helpers/kernel-fixture.js';
import { nth } from '../../helpers/nth.js';

// Kept apart from test/fixtures/packs: the CLI tests load that whole folder with the compiled
// kernel, which cannot import a TypeScript pack.
const PACKS = path.resolve('test/fixtures/database-packs');

async function boot(fx: Fixture): Promise<Fixture> {
  const status = nth(await fx.kernel.loadPacks([{ dir: PACKS, source: 'extra' }]), 0);
  expect(status).toMatchObject({ id: 'notes-db', status: 'loaded' });
  return fx;
}

const call = async (fx: Fixture, tool: string, args: Record<string, unknown>) => {
  const r = await fx.kernel.invoke({ tool, args, caller: { kind: 'cli' } });
  if (!r.ok) throw new Error(`${tool} failed: ${r.error.code} ${r.error.message}`);
  return r.value as any;
};

describe('a pack with its own database', () => {
  it('keeps its notes in <data>/packs-data/<pack>/notes.sqlite across a kernel restart', async () => {
    let fx = await boot(makeKernel());
    await call(fx, 'notes_db_add', { text: 'buy milk', tag: 'home' });
    await call(fx, 'notes_db_add', { text: 'ship the release', tag: 'work' });
    await call(fx, 'notes_db_add', { text: 'no tag at all' });
    expect((await call(fx, 'notes_db_list', { tag: 'work' })).notes).toEqual([{ id: 2, text: 'ship the release', tag: 'work' }]);

    const file = path.join(fx.dataDir, 'packs-data', 'notes-db', 'notes.sqlite');
    expect((fs.statSync(file).mode & 0o777).toString(8)).toBe('600');
    fx = await fx.restart();
    // The kernel closed the pack's DataSource: the last connection to a WAL file removes its -wal.
    expect(fs.existsSync(`${file}-wal`)).toBe(false);

    await boot(fx);
    expect((await call(fx, 'notes_db_list', {})).notes).toEqual([
      { id: 1, text: 'buy milk', tag: 'home' },
      { id: 2, text: 'ship the release', tag: 'work' },
      { id: 3, text: 'no tag at all', tag: '' },
    ]);
    await fx.close();
  });

  it('skips a pack whose migration fails, naming the migration and the SQL error, and keeps the migrations before it', async () => {
    // A plain JavaScript pack: migrations are classes, and need no decorators.
    const base = tempDir('memo-packs-');
    const dir = path.join(base, 'broken-db');
    fs.mkdirSync(dir);
    fs.writeFileSync(
      path.join(dir, 'plugin.json'),
      JSON.stringify({ id: 'broken-db', name: 'broken-db', version: '1.0.0', description: 'A pack whose second migration fails', main: 'index.js', tools: [] }),
    );
    fs.writeFileSync(
      path.join(dir, 'index.js'),
      `class CreateThings1796064800000 {
        async up(qr) { await qr.query('CREATE TABLE "things" ("id" integer PRIMARY KEY)'); }
        async down() {}
      }
      class RenameThings1796064900000 {
        async up(qr) {
          await qr.query('INSERT INTO "things" ("id") VALUES (1)');
          await qr.query('ALTER TABLE "no_such_things" RENAME TO "stuff"');
        }
        async down() {}
      }
      export async function activate(api) {
        await api.database({ name: 'things', entities: [], migrations: [CreateThings1796064800000, RenameThings1796064900000] });
      }
      export const tools = {};`,
    );
    const fx = makeKernel();
    const status = nth(await fx.kernel.loadPacks([{ dir: base, source: 'extra' }]), 0);
    expect(status.status).toBe('failed');
    expect(status.error).toMatch(
      /activate\(\) failed: .*things\.sqlite: migration "RenameThings1796064900000" failed and was rolled back: .*no such table: no_such_things/,
    );

    const file = path.join(fx.dataDir, 'packs-data', 'broken-db', 'things.sqlite');
    expect(fs.existsSync(`${file}-wal`)).toBe(false);
    const db = new Database(file, { readonly: true });
    try {
      expect(db.prepare('SELECT name FROM migrations').all()).toEqual([{ name: 'CreateThings1796064800000' }]);
      expect(db.prepare('SELECT count(*) AS n FROM things').get()).toEqual({ n: 0 });
    } finally {
      db.close();
    }
    await fx.close();
  });
});
