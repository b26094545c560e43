import { nth } from '../../helpers/nth.js';
import { deferred } from '../../helpers/wait.js';
import { error, planningSql, value, vaultKernel, type VaultFixture } from './helpers.js';

describe('vault tasks', () => {
  let fx: VaultFixture;
  let launch: string;
  let todo: string;
  let doing: string;
  beforeEach(async () => {
    fx = await vaultKernel({ files: { 'Home.md': '# Home\n' } });
    launch = value(await fx.call('vault_create_project', { name: 'Launch' })).id;
    todo = value(await fx.call('vault_create_status', { name: 'To do' })).id;
    doing = value(await fx.call('vault_create_status', { name: 'Doing' })).id;
    fx.prompter.asked.length = 0;
  });
  afterEach(async () => fx.close());

  const titles = async (args: Record<string, unknown> = {}) =>
    (value(await fx.call('vault_list_tasks', args)).tasks as Array<{ title: string }>).map((t) => t.title);

  it('creates a task with every field, previewed as field changes, and reads it back by id', async () => {
    const t = value(
      await fx.call('vault_create_task', {
        title: 'Write spec',
        project: 'launch',
        status: 'To do',
        description: '',
        priority: 3,
        due_date: '2026-12-01',
        due_time: '09:30',
        time_zone: 'Europe/Paris',
        repeat_rule: 'rrule:freq=weekly;byday=mo',
        tags: ['#Work', 'work'],
      }),
    );
    expect(t).toMatchObject({
      id: expect.stringMatching(/^[0-9a-f]{16}$/),
      created: true,
      project_id: launch,
      project_name: 'Launch',
      status_id: todo,
      status_name: 'To do',
      parent_id: null,
      description: '',
      priority: 3,
      due_date: '2026-12-01',
      due_time: '09:30',
      time_zone: 'Europe/Paris',
      repeat_rule: 'FREQ=WEEKLY;BYDAY=MO',
      tags: ['work'],
      completed: false,
      archived: false,
    });
    const q = nth(fx.prompter.asked, 0);
    expect(q).toMatchObject({ tool: 'vault_create_task', danger: 'medium', effect: 'write' });
    expect(q.preview).toEqual({
      kind: 'fields',
      text: [
        'New task',
        'title: (not set) -> Write spec',
        'project: (not set) -> Launch',
        'description: (not set) -> "" (empty)',
        'priority: (not set) -> 3',
        'due_date: (not set) -> 2026-12-01',
        'due_time: (not set) -> 09:30',
        'time_zone: (not set) -> Europe/Paris',
        'repeat_rule: (not set) -> FREQ=WEEKLY;BYDAY=MO',
        'tags: (not set) -> ["work"]',
        'status: (not set) -> To do',
      ].join('\n'),
    });
    expect(value(await fx.call('vault_get_task', { task: t.id }))).toMatchObject({ id: t.id, title: 'Write spec', subtasks: [] });
    expect(value(await fx.call('vault_get_task', { task: 'write SPEC' })).id).toBe(t.id);

    expect(error(await fx.call('vault_create_task', { title: 'x', due_date: '2026-02-30' })).code).toBe('VALIDATION');
    expect(error(await fx.call('vault_create_task', { title: 'x', due_time: '09:00' })).message).toMatch(/needs a due date/);
    expect(error(await fx.call('vault_create_task', { title: 'x', due_date: '2026-01-01', time_zone: 'Mars/Olympus' })).code).toBe('VALIDATION');
    expect(error(await fx.call('vault_create_task', { title: 'x', repeat_rule: 'every monday' })).code).toBe('VALIDATION');
    expect(error(await fx.call('vault_create_task', { title: 'x', project: 'Nope' })).code).toBe('NOT_FOUND');
    expect(fx.prompter.asked).toHaveLength(1);
  });

  it('updates only the fields that change, showing "not set" apart from empty, and clears the time with the date', async () => {
    const t = value(await fx.call('vault_create_task', { title: 'Call Ana', due_date: '2026-12-01', due_time: '10:00', description: 'agenda' }));
    const r = value(
      await fx.call('vault_update_task', { task: t.id, title: 'Call Ana', description: '', due_date: null, status: 'Doing', priority: 0, tags: [] }),
    );
    expect(r).toMatchObject({
      id: t.id,
      description: '',
      due_date: null,
      due_time: null,
      status_name: 'Doing',
      changed: ['description', 'due_date', 'due_time', 'status_id'],
    });
    expect(fx.prompter.asked.at(-1)!.preview).toEqual({
      kind: 'fields',
      text: `Task Call Ana (id ${t.id})\ndescription: agenda -> "" (empty)\ndue_date: 2026-12-01 -> (not set)\ndue_time: 10:00 -> (not set)\nstatus: (not set) -> Doing`,
    });
    value(await fx.call('vault_update_task', { task: t.id, description: null, status: null }));
    expect(fx.prompter.asked.at(-1)!.preview!.text).toBe(`Task Call Ana (id ${t.id})\ndescription: "" (empty) -> (not set)\nstatus: Doing -> (not set)`);
    expect(error(await fx.call('vault_update_task', { task: t.id, due_time: '08:00' })).code).toBe('VALIDATION');
  });

  it('makes subtasks in their parent project, lists each task followed by its subtasks, and deletes a task with its subtasks as the preview says', async () => {
    const parent = value(await fx.call('vault_create_task', { title: 'Release', project: 'Launch' })).id;
    const a = value(await fx.call('vault_create_task', { title: 'Changelog', parent })).id;
    value(await fx.call('vault_create_task', { title: 'Tag', parent, position: 0 }));
    value(await fx.call('vault_create_task', { title: 'Loose end' }));
    value(await fx.call('vault_create_task', { title: 'Demo', project: 'Launch', position: 0 }));
    expect(value(await fx.call('vault_get_task', { task: a })).project_id).toBe(launch);
    expect(await titles()).toEqual(['Loose end', 'Demo', 'Release', 'Tag', 'Changelog']);
    expect(value(await fx.call('vault_get_task', { task: parent })).subtasks.map((s: any) => s.title)).toEqual(['Tag', 'Changelog']);
    expect(error(await fx.call('vault_create_task', { title: 'Deep', parent: a })).message).toMatch(/one level deep/);

    fx.prompter.answer('allow-forever', 'allow-once');
    expect(value(await fx.call('vault_delete_task', { task: 'Release' }))).toMatchObject({ id: parent, deleted: true, subtasks_deleted: 2 });
    const q = fx.prompter.asked.at(-1)!;
    expect(q).toMatchObject({ danger: 'dangerous', effect: 'delete', standingApprovalAllowed: false });
    expect(q.preview!.text).toMatch(
      /^Deletes the task Release \(id [0-9a-f]{16}\)\.\nSubtasks lost: 2:\n {2}- Tag \(id [0-9a-f]{16}\)\n {2}- Changelog \(id [0-9a-f]{16}\)$/,
    );
    expect(await titles()).toEqual(['Loose end', 'Demo']);
    expect(value(await fx.call('vault_list_tasks', { project: 'Launch' })).tasks.map((t: any) => [t.title, t.sort_order])).toEqual([['Demo', 0]]);
  });

  it('completes, reopens, archives and unarchives, and filters the list by them, status, due range and tag', async () => {
    const a = value(await fx.call('vault_create_task', { title: 'A', due_date: '2026-12-01', tags: ['home/garden'], status: 'To do' })).id;
    value(await fx.call('vault_create_task', { title: 'Sub', parent: a }));
    const b = value(await fx.call('vault_create_task', { title: 'B', due_date: '2026-12-20', project: 'Launch' })).id;
    value(await fx.call('vault_create_task', { title: 'C' }));

    expect(value(await fx.call('vault_complete_task', { task: a }))).toMatchObject({ id: a, completed: true, changed: ['completed'] });
    expect(fx.prompter.asked.at(-1)!.preview!.text).toBe(`Task A (id ${a})\ncompleted: false -> true\n(1 open subtask(s) stay open)`);
    expect(await titles()).toEqual(['Sub', 'C', 'B']);
    expect(await titles({ include_completed: true })).toEqual(['A', 'Sub', 'C', 'B']);
    value(await fx.call('vault_archive_task', { task: 'C' }));
    expect(await titles()).toEqual(['Sub', 'B']);
    expect(await titles({ include_archived: true })).toEqual(['Sub', 'C', 'B']);
    expect(value(await fx.call('vault_unarchive_task', { task: 'C' }))).toMatchObject({ archived: false, archived_at: null });
    expect(value(await fx.call('vault_uncomplete_task', { task: a }))).toMatchObject({ completed: false, completed_at: null });
    expect(value(await fx.call('vault_uncomplete_task', { task: a })).changed).toEqual([]);

    expect(await titles({ status: 'to do' })).toEqual(['A']);
    expect(await titles({ due_from: '2026-12-02' })).toEqual(['B']);
    expect(await titles({ due_to: '2026-12-01' })).toEqual(['A']);
    expect(await titles({ tag: 'home' })).toEqual(['A']);
    expect(await titles({ project: launch })).toEqual(['B']);
    expect(value(await fx.call('vault_list_tasks', { limit: 2 }))).toMatchObject({ count: 4, truncated: true });
    expect(value(await fx.call('vault_get_project', { project: 'Launch' }))).toMatchObject({ task_count: 1, open_task_count: 1 });
    expect(value(await fx.call('vault_get_task', { task: b })).status_name).toBeNull();
  });

  it('puts a completed task in the status marked done and a reopened one back in the first open status, the preview saying so', async () => {
    const a = value(await fx.call('vault_create_task', { title: 'Ship it', status: 'Doing' })).id;
    // With no status marked done, completing leaves the status alone.
    expect(value(await fx.call('vault_complete_task', { task: a }))).toMatchObject({ completed: true, status_name: 'Doing', changed: ['completed'] });
    value(await fx.call('vault_uncomplete_task', { task: a }));
    value(await fx.call('vault_create_status', { name: 'Done', is_done: true }));
    const done = value(await fx.call('vault_complete_task', { task: a }));
    expect(done).toMatchObject({ completed: true, status_name: 'Done', changed: ['completed', 'status'] });
    expect(done.summary).toBe('completed task Ship it (now in Done)');
    expect(fx.prompter.asked.at(-1)!.preview!.text).toBe(`Task Ship it (id ${a})\ncompleted: false -> true\nstatus: Doing -> Done`);
    // Reopened: out of the done status, into the first open one (the board's order), not back to Doing.
    const reopened = value(await fx.call('vault_uncomplete_task', { task: a }));
    expect(reopened).toMatchObject({ completed: false, status_name: 'To do', changed: ['completed', 'status'] });
    // A repeating task: the finished one goes to Done, the next occurrence is open where the task was.
    const r = value(await fx.call('vault_create_task', { title: 'Water plants', status: 'Doing', due_date: '2026-12-01', repeat_rule: 'FREQ=WEEKLY' })).id;
    const out = value(await fx.call('vault_complete_task', { task: r }));
    expect(out).toMatchObject({ status_name: 'Done', next_occurrence: { completed: false, status_name: 'Doing', due_date: '2026-12-08' } });
  });

  it('moves a task to another project and status with its subtasks, keeping both lists gapless', async () => {
    const other = value(await fx.call('vault_create_project', { name: 'Other' })).id;
    const a = value(await fx.call('vault_create_task', { title: 'A', project: 'Launch' })).id;
    const sub = value(await fx.call('vault_create_task', { title: 'A1', parent: a })).id;
    value(await fx.call('vault_create_task', { title: 'B', project: 'Launch' }));
    value(await fx.call('vault_create_task', { title: 'X', project: 'Other' }));

    const r = value(await fx.call('vault_move_task', { task: a, project: 'Other', status: 'Doing', position: 0 }));
    expect(r).toMatchObject({ id: a, project_id: other, status_id: doing, sort_order: 0 });
    expect(fx.prompter.asked.at(-1)!.preview!.text).toBe(
      `Task A (id ${a})\nproject: Launch -> Other\nstatus: (not set) -> Doing\n(its 1 subtask(s) move with it)`,
    );
    expect(value(await fx.call('vault_get_task', { task: sub })).project_id).toBe(other);
    const order = async (p: string) => value(await fx.call('vault_list_tasks', { project: p })).tasks.map((t: any) => `${t.sort_order}:${t.title}`);
    expect(await order('Other')).toEqual(['0:A', '0:A1', '1:X']);
    expect(await order('Launch')).toEqual(['0:B']);
    expect(error(await fx.call('vault_move_task', { task: sub, project: null })).message).toMatch(/is a subtask/);
    value(await fx.call('vault_move_task', { task: 'X', position: 0 }));
    expect(await order('Other')).toEqual(['0:X', '1:A', '0:A1']);
    value(await fx.call('vault_move_task', { task: 'B', project: null }));
    expect(value(await fx.call('vault_get_task', { task: 'B' }))).toMatchObject({ project_id: null, sort_order: 0 });
  });

  it('reorders the tasks of one list, stays whole under concurrent reorders, and refuses ids from two lists', async () => {
    const ids: string[] = [];
    for (const title of ['A', 'B', 'C', 'D']) ids.push(value(await fx.call('vault_create_task', { title, project: 'Launch' })).id);
    const [a, b, c, d] = ids as [string, string, string, string];
    expect(value(await fx.call('vault_reorder_tasks', { ids: [c, a] })).tasks.map((t: any) => t.title)).toEqual(['C', 'A', 'B', 'D']);
    expect(fx.prompter.asked.at(-1)!.preview!.text).toBe('Task order\norder: ["A","B","C","D"] -> ["C","A","B","D"]');

    const results = await Promise.all([
      fx.call('vault_reorder_tasks', { ids: [d, c, b, a] }),
      fx.call('vault_create_task', { title: 'E', project: 'Launch' }),
      fx.call('vault_reorder_tasks', { ids: [b] }),
      fx.call('vault_move_task', { task: d, position: 0 }),
    ]);
    results.forEach((r) => value(r));
    const listed = value(await fx.call('vault_list_tasks', { project: 'Launch' })).tasks as Array<{ title: string; sort_order: number }>;
    expect(listed.map((t) => t.sort_order)).toEqual([0, 1, 2, 3, 4]);
    expect(listed.map((t) => t.title).sort()).toEqual(['A', 'B', 'C', 'D', 'E']);

    const loose = value(await fx.call('vault_create_task', { title: 'Loose' })).id;
    expect(error(await fx.call('vault_reorder_tasks', { ids: [a, loose] })).message).toMatch(/same list/);
  });

  it('refuses a write when the task changed after its preview was shown, and keeps that change', async () => {
    const t = value(await fx.call('vault_create_task', { title: 'Draft', priority: 1 })).id;
    const asked = deferred();
    const release = deferred<'allow-once'>();
    (fx.prompter as any).ask = async () => {
      asked.resolve();
      return release.promise;
    };
    const call = fx.call('vault_update_task', { task: t, priority: 4 });
    await asked.promise;
    await planningSql(fx, `UPDATE planning_tasks SET priority = 2 WHERE id = ?`, [t]);
    release.resolve('allow-once');
    expect(error(await call)).toMatchObject({ code: 'CONFLICT', message: expect.stringMatching(/changed after the preview was shown \(priority\)/) });
    expect(value(await fx.call('vault_get_task', { task: t })).priority).toBe(2);
  });
  it('duplicates a task with its subtasks right after it, open, with new ids', async () => {
    const a = value(await fx.call('vault_create_task', { title: 'Report', project: 'Launch', priority: 2, tags: ['work'] })).id;
    value(await fx.call('vault_create_task', { title: 'Figures', parent: a }));
    value(await fx.call('vault_create_task', { title: 'After', project: 'Launch' }));
    value(await fx.call('vault_complete_task', { task: a }));
    const copy = value(await fx.call('vault_duplicate_task', { task: a, title: 'Report (Q4)' }));
    expect(copy).toMatchObject({
      id: expect.not.stringMatching(a),
      duplicated_from: a,
      title: 'Report (Q4)',
      priority: 2,
      tags: ['work'],
      completed: false,
      sort_order: 1,
    });
    expect(copy.subtask_ids).toHaveLength(1);
    expect(fx.prompter.asked.at(-1)!.preview!.text).toBe(
      `New task, a copy of Task Report (id ${a})\ntitle: (not set) -> Report (Q4)\nproject: (not set) -> Launch\npriority: (not set) -> 2\ntags: (not set) -> ["work"]\n(with copies of its 1 subtask(s), open)`,
    );
    const listed = value(await fx.call('vault_list_tasks', { project: 'Launch', include_completed: true })).tasks;
    expect(listed.map((t: any) => `${t.sort_order}:${t.title}`)).toEqual(['0:Report', '0:Figures', '1:Report (Q4)', '0:Figures', '2:After']);
    expect(value(await fx.call('vault_get_task', { task: copy.id })).subtasks.map((s: any) => s.id)).toEqual(copy.subtask_ids);
  });

  it('converts a task to a subtask of another (taking its project) and back, keeping the lists gapless', async () => {
    const parent = value(await fx.call('vault_create_task', { title: 'Parent', project: 'Launch' })).id;
    value(await fx.call('vault_create_task', { title: 'Next', project: 'Launch' }));
    const loose = value(await fx.call('vault_create_task', { title: 'Loose' })).id;
    value(await fx.call('vault_create_task', { title: 'Other loose' }));

    const r = value(await fx.call('vault_convert_task_to_subtask', { task: loose, parent: 'Parent' }));
    expect(r).toMatchObject({ id: loose, parent_id: parent, project_id: launch, sort_order: 0 });
    expect(fx.prompter.asked.at(-1)!.preview!.text).toBe(`Task Loose (id ${loose})\nparent: (not set) -> Parent (id ${parent})\nproject: (not set) -> Launch`);
    expect(value(await fx.call('vault_get_task', { task: 'Other loose' })).sort_order).toBe(0);
    expect(error(await fx.call('vault_convert_task_to_subtask', { task: 'Parent', parent: 'Next' })).message).toMatch(/has 1 subtask/);
    expect(error(await fx.call('vault_convert_task_to_subtask', { task: 'Next', parent: 'Loose' })).message).toMatch(/itself a subtask/);

    const back = value(await fx.call('vault_convert_subtask_to_task', { task: loose }));
    expect(back).toMatchObject({ id: loose, parent_id: null, project_id: launch, sort_order: 1 });
    expect(fx.prompter.asked.at(-1)!.preview!.text).toBe(`Task Loose (id ${loose})\nparent: Parent (id ${parent}) -> (not set)`);
    expect(await titles({ project: 'Launch' })).toEqual(['Parent', 'Loose', 'Next']);
    expect(error(await fx.call('vault_convert_subtask_to_task', { task: loose })).message).toMatch(/is not a subtask/);
  });
});
