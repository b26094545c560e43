/**
 * The vault's planning data (statuses, projects, tasks, task links, inbox, settings) with its
 * database in PostgreSQL (schema pack_vault__vault_planning) while the note index stays the
 * per-instance vault.sqlite: the planning suites as they are (they also run on SQLite in
 * test/plugins/vault; their direct SQL goes through planningSql, which reaches this schema), the
 * one-time copy from an old vault.sqlite into PostgreSQL, and two instances sharing one planning
 * database. The bridge and inbox suites are rerun in vault-bridge.test.ts.
 */
import * as fs from 'node:fs';
import Database from 'better-sqlite3';
import { onPostgres } from './on-postgres.js';
import { openSqlite } from '../../kernel/storage/sqlite.js';
import { MIGRATIONS } from '../../plugins/vault/schema.js';
import { error, value, vaultKernel, type VaultFixture } from '../plugins/vault/helpers.js';
import '../plugins/vault/tasks.test.js';
import '../plugins/vault/statuses-projects.test.js';
import '../plugins/vault/task-notes-repeat.test.js';
import '../plugins/vault/planning-copy.test.js';

const pg = onPostgres(['pack_vault__vault_planning']);
const AT = '2026-01-05T10:00:00.000Z';

describe('vault planning data on PostgreSQL', () => {
  const schemaRows = (sql: string) => pg.server().query(sql, [], new URL(pg.url()).pathname.slice(1));
  const kernels: VaultFixture[] = [];
  afterEach(async () => {
    for (const k of kernels.splice(0)) await k.close();
  });

  it('keeps tasks in the shared schema and the note index in the instance’s vault.sqlite', async () => {
    const fx = await vaultKernel({ files: { 'Spec.md': '# Spec\nocelot\n' } });
    kernels.push(fx);
    const t = value(await fx.call('vault_create_task', { title: 'Write spec' }));
    expect(await schemaRows(`SELECT id, title FROM pack_vault__vault_planning.planning_tasks`)).toEqual([{ id: t.id, title: 'Write spec' }]);
    expect(fs.existsSync(fx.planningFile)).toBe(false);
    const index = new Database(fx.dbFile, { readonly: true });
    try {
      expect(index.prepare(`SELECT path FROM notes`).all()).toEqual([{ path: 'Spec.md' }]);
      expect(index.prepare(`SELECT COUNT(*) AS n FROM planning_tasks`).get()).toEqual({ n: 0 });
    } finally {
      index.close();
    }
  });

  it('shows each instance the other’s statuses, projects, tasks, inbox items and feature switches', async () => {
    const a = await vaultKernel();
    const b = await vaultKernel();
    kernels.push(a, b);
    expect(a.dataDir).not.toBe(b.dataDir);
    const doing = value(await a.call('vault_create_status', { name: 'Doing' }));
    const project = value(await a.call('vault_create_project', { name: 'Launch' }));
    const task = value(await a.call('vault_create_task', { title: 'Ship it', project: 'Launch', status: 'Doing' }));
    value(await b.call('vault_add_to_inbox', { title: 'Read later' }));
    expect(value(await b.call('vault_get_task', { task: 'Ship it' }))).toMatchObject({ id: task.id, project_id: project.id, status_id: doing.id });
    value(await b.call('vault_complete_task', { task: task.id }));
    expect(value(await a.call('vault_get_task', { task: task.id })).completed).toBe(true);
    expect(value(await a.call('vault_list_inbox_items', {})).items.map((i: any) => i.title)).toEqual(['Read later']);
    // A switch turned off through one instance holds in the other.
    value(await a.call('vault_desktop_write', { operation: 'settings.setFeaturesSettings', args: [{ tasks: false }] }));
    expect(error(await b.call('vault_list_tasks', {}))).toMatchObject({ code: 'TOOL_DISABLED', details: { feature: 'tasks' } });
  });

  it('keeps a list gapless when two instances add and reorder tasks in it at the same time', async () => {
    const a = await vaultKernel();
    const b = await vaultKernel();
    kernels.push(a, b);
    value(await a.call('vault_create_project', { name: 'Launch' }));
    const made = await Promise.all(
      Array.from({ length: 12 }, (_, i) => (i % 2 ? a : b).call('vault_create_task', { title: `Task ${i}`, project: 'Launch', position: 0 })),
    );
    const ids = made.map((r) => value(r).id as string);
    await Promise.all(
      [a.call('vault_reorder_tasks', { ids: ids.slice(0, 6) }), b.call('vault_reorder_tasks', { ids: ids.slice(6).reverse() })].map(async (p) =>
        value(await p),
      ),
    );
    const orders = await schemaRows(`SELECT sort_order FROM pack_vault__vault_planning.planning_tasks ORDER BY sort_order`);
    expect(orders.map((r) => r.sort_order)).toEqual(Array.from({ length: 12 }, (_, i) => i));
  });

  it('copies only one of two old vault.sqlite files opened at once, and keeps the other’s rows where they were', async () => {
    const a = await vaultKernel();
    const b = await vaultKernel();
    kernels.push(a, b);
    for (const [fx, title] of [
      [a, 'From a'],
      [b, 'From b'],
    ] as const) {
      const ds = await openSqlite(fx.dbFile, { entities: [], migrations: MIGRATIONS });
      await ds.destroy();
      const db = new Database(fx.dbFile);
      db.prepare(`INSERT INTO planning_tasks (id, title, priority, tags, sort_order, created_at, updated_at) VALUES (?, ?, 0, '[]', 0, ?, ?)`).run(
        title === 'From a' ? 'aaaaaaaaaaaaaaa1' : 'bbbbbbbbbbbbbbb1',
        title,
        AT,
        AT,
      );
      db.close();
    }
    const [ra, rb] = await Promise.all([a.call('vault_list_tasks', {}), b.call('vault_list_tasks', {})]);
    const titles = (value(ra).tasks as Array<{ title: string }>).map((t) => t.title);
    expect(titles.length).toBe(1);
    expect(value(rb).tasks.map((t: any) => t.title)).toEqual(titles);
    const loser = titles[0] === 'From a' ? b : a;
    expect(loser.logger.lines).toContainEqual({ level: 'warn', message: expect.stringContaining('that was not copied into the planning database') });
    expect(await schemaRows(`SELECT CAST(COUNT(*) AS integer) AS n FROM pack_vault__vault_planning.planning_meta`)).toEqual([{ n: 1 }]);
  });
});
