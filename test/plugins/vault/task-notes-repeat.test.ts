import { nth } from '../../helpers/nth.js';
import { error, value, vaultKernel, type VaultFixture } from './helpers.js';

describe('vault tasks: links to notes and repeating tasks', () => {
  let fx: VaultFixture;
  beforeEach(async () => {
    fx = await vaultKernel({ files: { 'Meetings/Kickoff.md': '# Kickoff\n', 'Spec.md': '# Spec\n', 'scan.pdf': Buffer.from('%PDF-1.4\n') } });
  });
  afterEach(async () => fx.close());

  const noteId = async (ref: string) => value(await fx.call('vault_read_note', { note: ref })).id as string;

  it('links a task to notes by id, path or title, shows them in the preview and keeps them through a rename', async () => {
    const kickoff = await noteId('Meetings/Kickoff.md');
    const spec = await noteId('Spec');
    fx.prompter.asked.length = 0;
    const t = value(await fx.call('vault_create_task', { title: 'Follow up', notes: ['Meetings/Kickoff.md', spec, 'Spec'] }));
    expect(t.note_ids).toEqual([kickoff, spec]);
    expect(nth(fx.prompter.asked, 0).preview!.text).toContain(`notes: (not set) -> ["Kickoff (id ${kickoff})","Spec (id ${spec})"]`);
    value(await fx.call('vault_rename_note', { note: kickoff, new_title: 'Kickoff 2026' }));
    const got = value(await fx.call('vault_get_task', { task: t.id }));
    expect(got.notes).toEqual([
      { id: kickoff, path: 'Meetings/Kickoff 2026.md', title: 'Kickoff 2026' },
      { id: spec, path: 'Spec.md', title: 'Spec' },
    ]);
    expect((value(await fx.call('vault_list_tasks', {})).tasks as Array<{ note_ids: string[] }>)[0]!.note_ids).toEqual([kickoff, spec]);
  });

  it('replaces the links on update with a field row of titles, and clears them with null', async () => {
    const kickoff = await noteId('Meetings/Kickoff.md');
    const spec = await noteId('Spec');
    const t = value(await fx.call('vault_create_task', { title: 'Follow up', notes: [kickoff] }));
    fx.prompter.asked.length = 0;
    const r = value(await fx.call('vault_update_task', { task: t.id, notes: [spec], priority: 2 }));
    expect(r).toMatchObject({ note_ids: [spec], changed: ['priority', 'notes'] });
    const text = nth(fx.prompter.asked, 0).preview!.text;
    expect(text).toContain('priority: 0 -> 2');
    expect(text).toContain(`notes: ["Kickoff (id ${kickoff})"] -> ["Spec (id ${spec})"]`);
    expect(text).not.toContain('title:');
    expect(value(await fx.call('vault_update_task', { task: t.id, notes: null })).note_ids).toEqual([]);
    expect(nth(fx.prompter.asked, 1).preview!.text).toContain(`notes: ["Spec (id ${spec})"] -> (not set)`);
  });

  it('refuses a link to a filed file or to no note before anyone is asked', async () => {
    expect(error(await fx.call('vault_create_task', { title: 'x', notes: ['scan.pdf'] }))).toMatchObject({
      code: 'VALIDATION',
      message: expect.stringMatching(/pdf file, not a note/),
    });
    expect(error(await fx.call('vault_create_task', { title: 'x', notes: ['Nowhere'] })).code).toBe('NOT_FOUND');
    const t = value(await fx.call('vault_create_task', { title: 'y' }));
    fx.prompter.asked.length = 0;
    expect(error(await fx.call('vault_update_task', { task: t.id, notes: ['Nowhere'] })).code).toBe('NOT_FOUND');
    expect(fx.prompter.asked).toHaveLength(0);
  });

  it('says in the delete preview which note links go with the task, and removes them (the notes stay)', async () => {
    const spec = await noteId('Spec');
    const t = value(await fx.call('vault_create_task', { title: 'Parent', notes: [spec] }));
    value(await fx.call('vault_create_task', { title: 'Child', parent: t.id, notes: ['Meetings/Kickoff.md'] }));
    fx.prompter.asked.length = 0;
    value(await fx.call('vault_delete_task', { task: t.id }));
    const text = nth(fx.prompter.asked, 0).preview!.text;
    expect(text).toMatch(/Links to notes lost: 2 \(the notes stay\):/);
    expect(text).toContain(`Spec (id ${spec})`);
    expect(value(await fx.call('vault_read_note', { note: 'Spec' })).id).toBe(spec);
    const other = value(await fx.call('vault_create_task', { title: 'Other' }));
    expect(value(await fx.call('vault_get_task', { task: other.id })).notes).toEqual([]);
  });

  it('completing a weekly task creates the next occurrence a week later, open, with its subtasks and note links', async () => {
    const spec = await noteId('Spec');
    const t = value(
      await fx.call('vault_create_task', {
        title: 'Weekly review',
        due_date: '2026-03-02',
        due_time: '09:00',
        time_zone: 'Europe/Berlin',
        repeat_rule: 'FREQ=WEEKLY;BYDAY=MO',
        notes: [spec],
      }),
    );
    const sub = value(await fx.call('vault_create_task', { title: 'Inbox zero', parent: t.id }));
    value(await fx.call('vault_complete_task', { task: sub.id }));
    fx.prompter.asked.length = 0;
    const done = value(await fx.call('vault_complete_task', { task: t.id }));
    expect(nth(fx.prompter.asked, 0).preview!.text).toContain(
      'Repeats (FREQ=WEEKLY;BYDAY=MO): the next occurrence, due 2026-03-09 09:00, is created open and takes the repeat rule.',
    );
    expect(done).toMatchObject({ completed: true, repeat_rule: null });
    expect(done.next_occurrence).toMatchObject({
      title: 'Weekly review',
      due_date: '2026-03-09',
      due_time: '09:00',
      time_zone: 'Europe/Berlin',
      repeat_rule: 'FREQ=WEEKLY;BYDAY=MO',
      completed: false,
      note_ids: [spec],
    });
    const next = value(await fx.call('vault_get_task', { task: done.next_occurrence.id }));
    expect(next.subtasks).toEqual([expect.objectContaining({ title: 'Inbox zero', completed: false })]);
    // Reopening and completing the finished one again makes no second copy: the rule moved on.
    value(await fx.call('vault_uncomplete_task', { task: t.id }));
    expect(value(await fx.call('vault_complete_task', { task: t.id })).next_occurrence).toBeUndefined();
    expect((value(await fx.call('vault_list_tasks', {})).tasks as Array<{ title: string }>).filter((x) => x.title === 'Weekly review')).toHaveLength(1);
  });

  it('follows the rule, not a fixed step: month ends, a due day off the rule, COUNT carried down, the last one makes none', async () => {
    const complete = async (fields: Record<string, unknown>) => {
      const t = value(await fx.call('vault_create_task', { title: `t ${JSON.stringify(fields)}`, ...fields }));
      return value(await fx.call('vault_complete_task', { task: t.id })).next_occurrence as
        { due_date: string; due_time: string | null; repeat_rule: string } | undefined;
    };
    expect(await complete({ due_date: '2026-01-31', repeat_rule: 'FREQ=MONTHLY;BYMONTHDAY=-1' })).toMatchObject({ due_date: '2026-02-28', due_time: null });
    // Due on a Wednesday, repeating on Mondays: the next is the first Monday after.
    expect(await complete({ due_date: '2026-03-04', repeat_rule: 'FREQ=WEEKLY;BYDAY=MO' })).toMatchObject({ due_date: '2026-03-09' });
    expect(await complete({ due_date: '2026-03-01', repeat_rule: 'FREQ=DAILY;INTERVAL=2;COUNT=3' })).toMatchObject({
      due_date: '2026-03-03',
      repeat_rule: 'FREQ=DAILY;INTERVAL=2;COUNT=2',
    });
    expect(await complete({ due_date: '2026-03-01', repeat_rule: 'FREQ=DAILY;COUNT=1' })).toBeUndefined();
    expect(await complete({ due_date: '2026-03-01', repeat_rule: 'FREQ=DAILY;UNTIL=20260301' })).toBeUndefined();
    expect(await complete({ due_date: '2026-03-01', due_time: '23:30', repeat_rule: 'FREQ=HOURLY;INTERVAL=2' })).toMatchObject({
      due_date: '2026-03-02',
      due_time: '01:30',
    });
    // No due date: nothing to step from, so nothing is created.
    expect(await complete({ repeat_rule: 'FREQ=DAILY' })).toBeUndefined();
  });
});
