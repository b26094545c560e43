import { nth } from '../../helpers/nth.js';
import { error, planningSql, value, vaultKernel, type VaultFixture } from './helpers.js';

describe('vault statuses and projects', () => {
  let fx: VaultFixture;
  beforeEach(async () => {
    fx = await vaultKernel({ files: { 'Home.md': '# Home\n' } });
  });
  afterEach(async () => fx.close());

  const names = async (tool: string, key: string, args: Record<string, unknown> = {}) =>
    (value(await fx.call(tool, args))[key] as Array<{ name: string; sort_order: number }>).map((r) => `${r.sort_order}:${r.name}`);

  it('creates, lists, updates and reorders statuses, returning each one id, with field-change previews of only what changes', async () => {
    const todo = value(await fx.call('vault_create_status', { name: 'To do' }));
    const done = value(await fx.call('vault_create_status', { name: 'Done', is_done: true, color: '#00ff00' }));
    const doing = value(await fx.call('vault_create_status', { name: 'Doing', position: 1 }));
    expect(todo.id).toMatch(/^[0-9a-f]{16}$/);
    expect(await names('vault_list_statuses', 'statuses')).toEqual(['0:To do', '1:Doing', '2:Done']);
    const q = nth(fx.prompter.asked, 1);
    expect(q).toMatchObject({ tool: 'vault_create_status', danger: 'medium', effect: 'write' });
    expect(q.preview).toEqual({ kind: 'fields', text: 'New status\nname: (not set) -> Done\ncolor: (not set) -> #00ff00\nis_done: (not set) -> true' });

    const r = value(await fx.call('vault_update_status', { status: 'doing', name: 'Doing', color: '#0000ff', is_done: false }));
    expect(r).toMatchObject({ id: doing.id, name: 'Doing', color: '#0000ff', changed: ['color'] });
    // The repeated name and is_done are left out.
    expect(fx.prompter.asked.at(-1)!.preview).toEqual({ kind: 'fields', text: `Status Doing (id ${doing.id})\ncolor: (not set) -> #0000ff` });
    value(await fx.call('vault_update_status', { status: doing.id, color: null }));
    expect(fx.prompter.asked.at(-1)!.preview!.text).toBe(`Status Doing (id ${doing.id})\ncolor: #0000ff -> (not set)`);

    expect(value(await fx.call('vault_reorder_statuses', { ids: [done.id, 'to do'] })).statuses.map((s: any) => s.name)).toEqual(['Done', 'To do', 'Doing']);
    expect(fx.prompter.asked.at(-1)!.preview!.text).toBe('Status order\norder: ["To do","Doing","Done"] -> ["Done","To do","Doing"]');
    expect(await names('vault_list_statuses', 'statuses')).toEqual(['0:Done', '1:To do', '2:Doing']);

    const asked = fx.prompter.asked.length;
    expect(error(await fx.call('vault_create_status', { name: 'DONE' })).code).toBe('CONFLICT');
    expect(error(await fx.call('vault_update_status', { status: 'Nope', name: 'x' })).code).toBe('NOT_FOUND');
    expect(error(await fx.call('vault_reorder_statuses', { ids: [done.id, 'Done'] })).code).toBe('VALIDATION');
    // Refused before anyone is asked; reads never ask.
    expect(fx.prompter.asked).toHaveLength(asked);
    expect(fx.prompter.asked.map((a) => a.tool)).not.toContain('vault_list_statuses');
  });

  it('keeps orders gapless and whole when reorders and creates run at the same time', async () => {
    const ids: string[] = [];
    for (const name of ['A', 'B', 'C', 'D']) ids.push(value(await fx.call('vault_create_project', { name })).id);
    const [a, b, c, d] = ids as [string, string, string, string];
    const results = await Promise.all([
      fx.call('vault_reorder_projects', { ids: [d, c, b, a] }),
      fx.call('vault_create_project', { name: 'E' }),
      fx.call('vault_reorder_projects', { ids: [b, d] }),
      fx.call('vault_reorder_projects', { ids: [c] }),
    ]);
    results.forEach((r) => value(r));
    const order = await names('vault_list_projects', 'projects');
    // Every project once, at places 0..4; the reorders applied one after another in some order.
    expect(order.map((o) => o.split(':')[0])).toEqual(['0', '1', '2', '3', '4']);
    expect(order.map((o) => o.split(':')[1]).sort()).toEqual(['A', 'B', 'C', 'D', 'E']);
    // ...and the result is what one serial order of the four calls gives.
    const ops: Array<(o: string[]) => string[]> = [
      (o) => ['D', 'C', 'B', 'A', ...o.filter((n) => !'ABCD'.includes(n))],
      (o) => [...o, 'E'],
      (o) => ['B', 'D', ...o.filter((n) => n !== 'B' && n !== 'D')],
      (o) => ['C', ...o.filter((n) => n !== 'C')],
    ];
    const outcomes = new Set<string>();
    const permute = (left: number[], o: string[]): void => {
      if (!left.length) outcomes.add(o.join(''));
      for (const i of left)
        permute(
          left.filter((j) => j !== i),
          ops[i]!(o),
        );
    };
    permute([0, 1, 2, 3], ['A', 'B', 'C', 'D']);
    expect([...outcomes]).toContain(order.map((o) => o.split(':')[1]).join(''));
    {
      const rows = await planningSql(fx, `SELECT sort_order FROM planning_projects ORDER BY sort_order`);
      expect(rows.map((r) => r.sort_order)).toEqual([0, 1, 2, 3, 4]);
    }
  });

  it('deletes a status saying what happens to its tasks: moved to another status, or left with none', async () => {
    const doing = value(await fx.call('vault_create_status', { name: 'Doing' }));
    const done = value(await fx.call('vault_create_status', { name: 'Done' }));
    const insert = (...params: unknown[]) =>
      planningSql(
        fx,
        `INSERT INTO planning_tasks (id, status_id, title, sort_order, created_at, updated_at) VALUES (?, ?, ?, ?, '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')`,
        params,
      );
    await insert('t1', doing.id, 'Write spec', 0);
    await insert('t2', done.id, 'Ship', 1);

    fx.prompter.answer('allow-forever', 'allow-once');
    expect(value(await fx.call('vault_delete_status', { status: 'Doing', move_tasks_to: 'Done' }))).toMatchObject({
      id: doing.id,
      deleted: true,
      tasks_moved: 1,
      moved_to: { id: done.id, name: 'Done' },
    });
    const q = nth(fx.prompter.asked, 2);
    expect(q).toMatchObject({ danger: 'dangerous', effect: 'delete', standingApprovalAllowed: false });
    expect(q.preview).toEqual({
      kind: 'delete',
      text: `Deletes the status Doing (id ${doing.id}).\nIts 1 task(s) move to the status Done (id ${done.id}):\n  - Write spec (id t1)`,
    });
    expect(value(await fx.call('vault_list_statuses', {})).statuses).toEqual([
      { id: done.id, name: 'Done', color: null, is_done: false, sort_order: 0, task_count: 2 },
    ]);

    value(await fx.call('vault_delete_status', { status: 'Done' }));
    expect(fx.prompter.asked.at(-1)!.preview!.text).toContain('Its 2 task(s) are left with no status (not set):\n  - Write spec (id t1)\n  - Ship (id t2)');
    {
      expect(await planningSql(fx, `SELECT id, status_id FROM planning_tasks ORDER BY id`)).toEqual([
        { id: 't1', status_id: null },
        { id: 't2', status_id: null },
      ]);
    }
  });

  it('creates, gets, updates, archives and lists projects with icon, home note and linked counts', async () => {
    const p = value(await fx.call('vault_create_project', { name: 'Launch', icon: 'rocket', description: '' }));
    expect(p).toMatchObject({ id: expect.stringMatching(/^[0-9a-f]{16}$/), name: 'Launch', icon: 'rocket', description: '', created: true });
    // An empty description reads as empty, not as not set.
    expect(nth(fx.prompter.asked, 0).preview!.text).toBe(
      'New project\nname: (not set) -> Launch\ndescription: (not set) -> "" (empty)\nicon: (not set) -> rocket',
    );
    await planningSql(fx, `UPDATE planning_projects SET home_note_id = 'n1' WHERE id = ?`, [p.id]);
    const link = (...params: unknown[]) =>
      planningSql(fx, `INSERT INTO planning_project_links (project_id, item_type, item_id, pinned, created_at) VALUES (?, ?, ?, false, '2026-01-01')`, params);
    await link(p.id, 'note', 'n1');
    await link(p.id, 'note', 'n2');
    await link(p.id, 'calendar_event', 'e1');

    const listed = value(await fx.call('vault_list_projects', {})).projects;
    expect(listed).toEqual([
      {
        id: p.id,
        name: 'Launch',
        description: '',
        color: null,
        icon: 'rocket',
        home_note_id: 'n1',
        archived: false,
        archived_at: null,
        sort_order: 0,
        task_count: 0,
        open_task_count: 0,
        linked_counts: { notes: 2, files: 0, events: 1 },
      },
    ]);
    expect(value(await fx.call('vault_get_project', { project: 'launch' }))).toMatchObject({ id: p.id, tasks_by_status: [] });

    const u = value(await fx.call('vault_update_project', { project: p.id, name: 'Launch', description: 'Q3 launch', icon: null }));
    expect(u).toMatchObject({ id: p.id, description: 'Q3 launch', icon: null, changed: ['description', 'icon'] });
    expect(fx.prompter.asked.at(-1)!.preview!.text).toBe(`Project Launch (id ${p.id})\ndescription: "" (empty) -> Q3 launch\nicon: rocket -> (not set)`);

    expect(value(await fx.call('vault_archive_project', { project: 'Launch' }))).toMatchObject({ id: p.id, archived: true });
    expect(value(await fx.call('vault_list_projects', {})).projects).toEqual([]);
    expect(value(await fx.call('vault_list_projects', { include_archived: true })).projects).toHaveLength(1);
    expect(value(await fx.call('vault_archive_project', { project: 'Launch', archived: false }))).toMatchObject({ archived: false });
    expect(fx.prompter.asked.at(-1)!.preview!.text).toBe(`Project Launch (id ${p.id})\narchived: true -> false`);

    value(await fx.call('vault_create_project', { name: 'Twin' }));
    value(await fx.call('vault_create_project', { name: 'twin' }));
    const ambiguous = error(await fx.call('vault_get_project', { project: 'Twin' }));
    expect(ambiguous).toMatchObject({ code: 'VALIDATION', message: expect.stringMatching(/2 projects are called "Twin"/) });
  });

  it('deletes a project with its tasks and links, listing what is lost, and always asks', async () => {
    const p = value(await fx.call('vault_create_project', { name: 'Old' }));
    const insert = (...params: unknown[]) =>
      planningSql(
        fx,
        `INSERT INTO planning_tasks (id, project_id, parent_id, title, sort_order, created_at, updated_at) VALUES (?, ?, ?, ?, ?, '2026-01-01', '2026-01-01')`,
        params,
      );
    await insert('t1', p.id, null, 'Plan', 0);
    await insert('t2', p.id, 't1', 'Draft', 0);
    await planningSql(
      fx,
      `INSERT INTO planning_project_links (project_id, item_type, item_id, pinned, created_at) VALUES (?, 'note', 'n1', true, '2026-01-01')`,
      [p.id],
    );

    fx.prompter.answer('allow-forever', 'allow-once');
    expect(value(await fx.call('vault_delete_project', { project: 'Old' }))).toMatchObject({ id: p.id, deleted: true, tasks_deleted: 2, links_removed: 1 });
    const q = fx.prompter.asked.at(-1)!;
    expect(q).toMatchObject({ danger: 'dangerous', effect: 'delete', standingApprovalAllowed: false });
    expect(q.preview!.text).toBe(
      `Deletes the project Old (id ${p.id}).\nTasks lost: 2 (1 of them subtasks):\n  - Plan (id t1)\n  - subtask Draft (id t2)\nLinks removed: 1 (the notes, files and events themselves stay).`,
    );
    {
      expect(await planningSql(fx, `SELECT CAST(COUNT(*) AS integer) AS n FROM planning_tasks`)).toEqual([{ n: 0 }]);
      expect(await planningSql(fx, `SELECT CAST(COUNT(*) AS integer) AS n FROM planning_project_links`)).toEqual([{ n: 0 }]);
    }
    expect(error(await fx.call('vault_delete_project', { project: 'Old' })).code).toBe('NOT_FOUND');
  });

  it('refuses planning calls before asking anyone when no vault is set up', async () => {
    fx.kernel.packs.setConfig('vault', { folder: 'missing' });
    expect(error(await fx.call('vault_create_project', { name: 'X' })).code).toBe('NOT_FOUND');
    expect(fx.prompter.asked).toHaveLength(0);
  });
});
