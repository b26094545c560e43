import type { ToolResult } from '../../../kernel/tools/contract.js';
import { vaultKernel, type VaultFixture } from './helpers.js';

/** The items a successful call's result named, as the pipeline hands them to every caller. */
function items(r: ToolResult) {
  if (!r.ok) throw new Error(`expected success, got ${r.error.code}: ${r.error.message}`);
  return r.items ?? [];
}

describe('vault results name their items (linked items in chat replies)', () => {
  let fx: VaultFixture;
  beforeEach(async () => {
    fx = await vaultKernel({
      files: {
        'Projects/Launch plan.md': '---\nicon: 🚀\n---\nThe launch #work\n',
        'Home/Garden.md': 'Tomatoes and the launch of spring\n',
      },
    });
    fx.prompter.setFallback('allow-once');
  });
  afterEach(async () => fx.close());

  it('a search links each note it found, by id and title; a read links the note with its own icon', async () => {
    const found = await fx.call('vault_search_notes', { query: 'launch' });
    expect(items(found).map((i) => [i.type, i.title])).toEqual([
      ['note', 'Launch plan'],
      ['note', 'Garden'],
    ]);
    const ids = (found as unknown as { value: { results: Array<{ id: string }> } }).value.results.map((r) => r.id);
    expect(items(found).map((i) => i.id)).toEqual(ids);
    expect(items(await fx.call('vault_read_note', { note: 'Projects/Launch plan.md' }))).toEqual([
      { type: 'note', id: ids[0], title: 'Launch plan', icon: '🚀' },
    ]);
  });

  it("a search links a day's file in the journal folder as that journal entry, by its date, and a note by its own icon", async () => {
    await fx.call('vault_create_journal_entry', { date: '2026-12-01', content: 'The launch slipped' });
    const found = items(await fx.call('vault_search_notes', { query: 'launch' }));
    expect(found).toEqual(
      expect.arrayContaining([
        { type: 'journal', id: '2026-12-01', title: '2026-12-01' },
        expect.objectContaining({ type: 'note', title: 'Launch plan', icon: '🚀' }),
      ]),
    );
  });

  it('a folder listing links its folders by path and its notes by id', async () => {
    const listed = items(await fx.call('vault_list_folder', {}));
    expect(listed).toEqual([
      { type: 'folder', id: 'Home', title: 'Home' },
      { type: 'folder', id: 'Projects', title: 'Projects' },
    ]);
    const inside = items(await fx.call('vault_list_folder', { path: 'Projects' }));
    expect(inside).toEqual([expect.objectContaining({ type: 'note', title: 'Launch plan' })]);
  });

  it('creations link what they made: a task, a project, an inbox item with its capture icon, a journal entry by its date, a folder', async () => {
    expect(items(await fx.call('vault_create_project', { name: 'Rocket' }))).toEqual([expect.objectContaining({ type: 'project', title: 'Rocket' })]);
    const task = await fx.call('vault_create_task', { title: 'Fuel the rocket', project: 'Rocket' });
    expect(items(task)).toEqual([{ type: 'task', id: (task as unknown as { value: { id: string } }).value.id, title: 'Fuel the rocket' }]);
    expect(items(await fx.call('vault_list_tasks', {})).map((i) => [i.type, i.title])).toEqual([['task', 'Fuel the rocket']]);
    expect(items(await fx.call('vault_add_to_inbox', { title: 'Read later', content: 'https://example.com/a' }))).toEqual([
      expect.objectContaining({ type: 'inbox', title: 'Read later', icon: '🔗' }),
    ]);
    expect(items(await fx.call('vault_add_to_inbox', { title: 'Call mum', content: 'about Sunday' }))).toEqual([
      expect.objectContaining({ type: 'inbox', title: 'Call mum', icon: '📝' }),
    ]);
    expect(items(await fx.call('vault_create_journal_entry', { date: '2026-12-01', content: 'Cold day' }))).toEqual([
      { type: 'journal', id: '2026-12-01', title: '2026-12-01' },
    ]);
    expect(items(await fx.call('vault_list_journal_entries', {}))).toEqual([{ type: 'journal', id: '2026-12-01', title: '2026-12-01' }]);
    expect(items(await fx.call('vault_create_folder', { path: 'Ideas/Later' }))).toEqual(
      expect.arrayContaining([{ type: 'folder', id: 'Ideas/Later', title: 'Later' }]),
    );
  });

  it('a delete links nothing (there is nothing left to open), and a failed call has no items', async () => {
    const made = await fx.call('vault_create_note', { title: 'Scratch', content: 'x' });
    expect(items(made)).toEqual([expect.objectContaining({ type: 'note', title: 'Scratch' })]);
    const gone = await fx.call('vault_delete_note', { note: 'Scratch.md' });
    expect(items(gone)).toEqual([]);
    const failed = await fx.call('vault_read_note', { note: 'Nowhere.md' });
    expect(failed.ok).toBe(false);
    expect('items' in failed).toBe(false);
  });
});
