/**
 * Upgrading a vault whose planning data is still in vault.sqlite (where versions before the planning
 * database kept it): the vault.sqlite is made by the current index migrations (which still make the
 * old planning tables), filled as that version filled it, then opened by this code. The rows reach the
 * planning database once, in one transaction; vault.sqlite's old tables are left as they were. Also
 * rerun with the planning database in PostgreSQL (test/storage-pg/vault-planning.test.ts).
 */
import * as fs from 'node:fs';
import Database from 'better-sqlite3';
import { openSqlite } from '../../../kernel/storage/sqlite.js';
import { MIGRATIONS } from '../../../plugins/vault/schema.js';
import { error, reopenVault, value, vaultKernel, type VaultFixture } from './helpers.js';

const AT = '2026-01-05T10:00:00.000Z';

/** vault.sqlite as the version before the planning database left it: index migrations run, planning rows in it. */
async function oldVaultSqlite(file: string, fill: (db: Database.Database) => void): Promise<void> {
  const ds = await openSqlite(file, { entities: [], migrations: MIGRATIONS });
  await ds.destroy();
  const db = new Database(file);
  try {
    fill(db);
  } finally {
    db.close();
  }
}

function fillPlanning(db: Database.Database): void {
  db.prepare(`INSERT INTO planning_statuses (id, name, color, is_done, sort_order, created_at) VALUES (?, ?, NULL, ?, ?, ?)`).run(
    'aaaaaaaaaaaaaaa1',
    'Todo',
    0,
    0,
    AT,
  );
  db.prepare(`INSERT INTO planning_statuses (id, name, color, is_done, sort_order, created_at) VALUES (?, ?, '#00ff00', ?, ?, ?)`).run(
    'aaaaaaaaaaaaaaa2',
    'Done',
    1,
    1,
    AT,
  );
  db.prepare(`INSERT INTO planning_projects (id, name, description, sort_order, created_at) VALUES ('bbbbbbbbbbbbbbb1', 'Launch', 'The launch', 0, ?)`).run(AT);
  const task = db.prepare(
    `INSERT INTO planning_tasks (id, project_id, status_id, parent_id, title, priority, due_date, tags, completed_at, sort_order, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  // The subtask is inserted first: the copy must still put its parent in before it.
  db.pragma('foreign_keys = OFF');
  task.run('ccccccccccccccc2', 'bbbbbbbbbbbbbbb1', null, 'ccccccccccccccc1', 'Write changelog', 0, null, '[]', null, 0, AT, AT);
  db.pragma('foreign_keys = ON');
  task.run('ccccccccccccccc1', 'bbbbbbbbbbbbbbb1', 'aaaaaaaaaaaaaaa2', null, 'Ship it', 3, '2026-02-01', '["work"]', AT, 0, AT, AT);
  task.run('ccccccccccccccc3', null, 'aaaaaaaaaaaaaaa1', null, 'Loose end', 1, null, '[]', null, 0, AT, AT);
  db.prepare(
    `INSERT INTO planning_project_links (project_id, item_type, item_id, pinned, created_at) VALUES ('bbbbbbbbbbbbbbb1', 'calendar_event', 'local:x', 1, ?)`,
  ).run(AT);
  db.prepare(`INSERT INTO planning_task_notes (task_id, note_id, sort_order, created_at) VALUES ('ccccccccccccccc1', 'dddddddddddddddd', 0, ?)`).run(AT);
  db.prepare(
    `INSERT INTO inbox_items (id, title, tags, created_at, updated_at, remind_at) VALUES ('eeeeeeeeeeeeeee1', 'Read later', '["reading"]', ?, ?, ?)`,
  ).run(AT, AT, '2026-03-01T08:00:00.000Z');
  db.prepare(`INSERT INTO vault_settings (key, value) VALUES ('features', '{"journal": false}')`).run();
}

const OLD_COUNTS = {
  planning_statuses: 2,
  planning_projects: 1,
  planning_tasks: 3,
  planning_project_links: 1,
  planning_task_notes: 1,
  inbox_items: 1,
  vault_settings: 1,
};

function countsIn(file: string): Record<string, number> {
  const db = new Database(file, { readonly: true });
  try {
    return Object.fromEntries(Object.keys(OLD_COUNTS).map((t) => [t, (db.prepare(`SELECT COUNT(*) AS n FROM "${t}"`).get() as { n: number }).n]));
  } finally {
    db.close();
  }
}

function copyOutcome(file: string): { outcome: string } | undefined {
  const db = new Database(file, { readonly: true });
  try {
    const row = db.prepare(`SELECT value FROM vault_meta WHERE key = 'planning_copy'`).get() as { value: string } | undefined;
    return row ? (JSON.parse(row.value) as { outcome: string }) : undefined;
  } finally {
    db.close();
  }
}

const reopen = reopenVault;

describe('vault planning data moved out of vault.sqlite', () => {
  let fx: VaultFixture;
  beforeEach(async () => {
    fx = await vaultKernel({ files: { 'Home.md': '# Home\n' } });
  });
  afterEach(async () => fx.close());

  it('copies every planning row of an old vault.sqlite once, keeps the old tables untouched, and never copies again', async () => {
    await oldVaultSqlite(fx.dbFile, fillPlanning);
    const tasks = value(await fx.call('vault_list_tasks', { include_completed: true }));
    expect(tasks.tasks.map((t: any) => [t.title, t.project_name, t.status_name, t.parent_id])).toEqual(
      expect.arrayContaining([
        ['Ship it', 'Launch', 'Done', null],
        ['Write changelog', 'Launch', null, 'ccccccccccccccc1'],
        ['Loose end', null, 'Todo', null],
      ]),
    );
    expect(value(await fx.call('vault_get_task', { task: 'ccccccccccccccc1' }))).toMatchObject({
      priority: 3,
      due_date: '2026-02-01',
      tags: ['work'],
      note_ids: ['dddddddddddddddd'],
      completed: true,
      subtasks: [expect.objectContaining({ title: 'Write changelog' })],
    });
    expect(value(await fx.call('vault_list_statuses', {})).statuses.map((s: any) => [s.name, s.is_done, s.color])).toEqual([
      ['Todo', false, null],
      ['Done', true, '#00ff00'],
    ]);
    expect(value(await fx.call('vault_get_project', { project: 'Launch' }))).toMatchObject({ description: 'The launch', task_count: 2 });
    expect(value(await fx.call('vault_get_inbox_item', { item: 'eeeeeeeeeeeeeee1' }))).toMatchObject({ title: 'Read later', tags: ['reading'] });
    // The feature switches came along: the journal is off.
    expect(error(await fx.call('vault_list_journal_entries', {}))).toMatchObject({ code: 'TOOL_DISABLED' });
    expect(copyOutcome(fx.dbFile)).toMatchObject({ outcome: 'copied' });
    expect(fx.logger.lines).toContainEqual({
      level: 'info',
      message: expect.stringContaining('copied the planning data (2 planning_statuses, 1 planning_projects, 3 planning_tasks'),
    });
    expect(countsIn(fx.dbFile)).toEqual(OLD_COUNTS);

    // What is done after the copy stays done: a restart does not bring a deleted task back.
    value(await fx.call('vault_delete_task', { task: 'ccccccccccccccc3' }));
    fx = await reopen(fx);
    expect(
      value(await fx.call('vault_list_tasks', { include_completed: true }))
        .tasks.map((t: any) => t.title)
        .sort(),
    ).toEqual(['Ship it', 'Write changelog']);
    expect(countsIn(fx.dbFile)).toEqual(OLD_COUNTS);
  });

  it('rolls a failed copy back whole, says the rows are still in vault.sqlite, and copies them once the cause is gone', async () => {
    await oldVaultSqlite(fx.dbFile, (db) => {
      fillPlanning(db);
      // A link to a task that does not exist: the planning database's foreign key refuses it.
      db.pragma('foreign_keys = OFF');
      db.prepare(`INSERT INTO planning_task_notes (task_id, note_id, sort_order, created_at) VALUES ('fffffffffffffff9', 'dddddddddddddddd', 0, ?)`).run(AT);
    });
    const failed = error(await fx.call('vault_list_tasks', {}));
    expect(failed.code).toBe('TOOL_FAILED');
    expect(failed.message).toMatch(/could not be copied from vault\.sqlite into the planning database, so the copy was rolled back/);
    expect(failed.message).toMatch(/the rows are still in vault\.sqlite, untouched, and the copy is tried again/);
    expect(copyOutcome(fx.dbFile)).toBeUndefined();
    expect(countsIn(fx.dbFile)).toEqual({ ...OLD_COUNTS, planning_task_notes: 2 });

    const db = new Database(fx.dbFile);
    db.prepare(`DELETE FROM planning_task_notes WHERE task_id = 'fffffffffffffff9'`).run();
    db.close();
    // Nothing of the failed attempt was left behind: the same rows go in now, each once.
    expect(
      value(await fx.call('vault_list_tasks', { include_completed: true }))
        .tasks.map((t: any) => t.title)
        .sort(),
    ).toEqual(['Loose end', 'Ship it', 'Write changelog']);
    expect(copyOutcome(fx.dbFile)).toMatchObject({ outcome: 'copied' });
  });

  it('does not copy into a planning database that already holds planning data, and says so', async () => {
    value(await fx.call('vault_create_task', { title: 'Made here' }));
    await fx.close();
    // Old rows appear in vault.sqlite (as in another instance's file) that no copy has looked at yet.
    const db = new Database(fx.dbFile);
    db.prepare(`DELETE FROM vault_meta WHERE key = 'planning_copy'`).run();
    db.prepare(
      `INSERT INTO planning_tasks (id, title, priority, tags, sort_order, created_at, updated_at) VALUES ('ccccccccccccccc7', 'Old task', 0, '[]', 0, ?, ?)`,
    ).run(AT, AT);
    db.close();
    fx = await reopen(fx);
    expect(value(await fx.call('vault_list_tasks', {})).tasks.map((t: any) => t.title)).toEqual(['Made here']);
    expect(copyOutcome(fx.dbFile)).toMatchObject({ outcome: 'not copied: the planning database already held planning data' });
    expect(fx.logger.lines).toContainEqual({
      level: 'warn',
      message: expect.stringMatching(/holds planning data \(1 planning_tasks\) that was not copied.*stay in vault\.sqlite/),
    });
  });

  it('marks a vault.sqlite without planning rows as done without copying anything', async () => {
    value(await fx.call('vault_list_tasks', {}));
    expect(copyOutcome(fx.dbFile)).toMatchObject({ outcome: 'nothing to copy' });
    if (!process.env.MEMO_DATABASE_URL) expect(fs.existsSync(fx.planningFile)).toBe(true);
  });
});
