import * as path from 'node:path';
import Database from 'better-sqlite3';
import { nth } from '../../helpers/nth.js';
import { deferred } from '../../helpers/wait.js';
import { error, planningSql, value, vaultKernel, type VaultFixture } from './helpers.js';

describe('vault inbox', () => {
  let fx: VaultFixture;
  beforeEach(async () => {
    fx = await vaultKernel({ files: { 'Home.md': '# Home\n' } });
  });
  afterEach(async () => fx.close());

  const add = async (args: Record<string, unknown>) => value(await fx.call('vault_add_to_inbox', args));
  const titles = async (args: Record<string, unknown> = {}) =>
    (value(await fx.call('vault_list_inbox_items', args)).items as Array<{ title: string }>).map((i) => i.title);

  it('adds an item after showing its text as a diff, returns its id, and reads it back', async () => {
    const r = await add({ title: 'Read later', content: 'Why fractional indexing\nworks\n', url: 'https://example.com/a', tags: ['Reading'] });
    expect(r).toMatchObject({ title: 'Read later', url: 'https://example.com/a', tags: ['reading'], archived: false, snoozed_until: null, created: true });
    expect(r.id).toMatch(/^[0-9a-f]{16}$/);
    const q = nth(fx.prompter.asked, 0);
    expect(q).toMatchObject({ tool: 'vault_add_to_inbox', danger: 'medium', effect: 'write', editable: true });
    expect(q.preview!.kind).toBe('diff');
    expect(q.preview!.text).toMatch(
      /^New inbox item\ntitle: \(not set\) -> Read later\nurl: \(not set\) -> https:\/\/example\.com\/a\ntags: \(not set\) -> \["reading"\]\n/,
    );
    expect(q.preview!.text).toContain('+Why fractional indexing\n+works\n');
    expect(value(await fx.call('vault_get_inbox_item', { item: r.id }))).toMatchObject({ id: r.id, content: 'Why fractional indexing\nworks\n' });
    expect(error(await fx.call('vault_get_inbox_item', { item: 'ffffffffffffffff' })).code).toBe('NOT_FOUND');
  });

  it('refuses an empty title, a link that is not http, a bad tag or an unknown item before anyone is asked', async () => {
    expect(error(await fx.call('vault_add_to_inbox', { title: '   ' })).code).toBe('VALIDATION');
    expect(error(await fx.call('vault_add_to_inbox', { title: 'x', url: 'javascript:alert(1)' })).code).toBe('VALIDATION');
    expect(error(await fx.call('vault_add_to_inbox', { title: 'x', tags: ['has space'] })).code).toBe('VALIDATION');
    expect(error(await fx.call('vault_update_inbox_item', { item: 'nope', title: 'y' })).code).toBe('NOT_FOUND');
    expect(error(await fx.call('vault_delete_inbox_item', { item: 'nope' })).code).toBe('NOT_FOUND');
    const id = (await add({ title: 'Keep' })).id;
    fx.prompter.asked.length = 0;
    expect(error(await fx.call('vault_update_inbox_item', { item: id })).code).toBe('VALIDATION');
    expect(error(await fx.call('vault_snooze_inbox_item', { item: id, until: '2026-02-30T09:00:00Z' })).code).toBe('VALIDATION');
    expect(error(await fx.call('vault_snooze_inbox_item', { item: id, until: '2026-12-01T09:00:00' })).code).toBe('VALIDATION');
    expect(error(await fx.call('vault_remove_inbox_tag', { item: id, tag: 'absent' })).code).toBe('NOT_FOUND');
    expect(fx.prompter.asked).toHaveLength(0);
  });

  it('finds an item by its exact title as tasks and projects are found, and refuses a title several items share', async () => {
    const one = (await add({ title: 'Call the plumber' })).id;
    expect(value(await fx.call('vault_get_inbox_item', { item: 'call the PLUMBER' }))).toMatchObject({ id: one });
    expect(value(await fx.call('vault_archive_inbox_item', { item: 'Call the plumber' }))).toMatchObject({ id: one, archived: true });
    await add({ title: 'Idea' });
    await add({ title: 'idea' });
    fx.prompter.asked.length = 0;
    const twice = error(await fx.call('vault_update_inbox_item', { item: 'Idea', title: 'x' }));
    expect(twice.code).toBe('VALIDATION');
    expect(twice.message).toMatch(/^Several inbox items are called "Idea"; name one by id: [0-9a-f]{16}, [0-9a-f]{16}\.$/);
    expect(error(await fx.call('vault_delete_inbox_item', { item: 'No such thing' })).message).toBe(
      'No inbox item "No such thing" (give its id or its exact title, as vault_list_inbox_items shows them).',
    );
    expect(fx.prompter.asked).toHaveLength(0);
  });

  it('asks back a snooze time given in words instead of guessing it or failing on its length', async () => {
    const id = (await add({ title: 'Article' })).id;
    fx.prompter.asked.length = 0;
    const r = error(await fx.call('vault_snooze_inbox_item', { item: id, until: 'tomorrow 9am' }));
    expect(r.code).toBe('VALIDATION');
    expect(r.message).toMatch(
      /^"tomorrow 9am" is a time in words, which is not guessed: which moment is it\? Give it as ISO 8601 with Z or the person's offset, such as 2026-12-01T09:00:00\+01:00 \(it is now \d{4}-\d{2}-\d{2}T[\d:.]+Z\)\.$/,
    );
    expect(fx.prompter.asked).toHaveLength(0);
    expect(value(await fx.call('vault_snooze_inbox_item', { item: 'Article', until: '2099-01-01T09:00:00+01:00' }))).toMatchObject({
      snoozed_until: '2099-01-01T08:00:00.000Z',
    });
  });

  it('updates only the fields that change, showing "not set" apart from empty', async () => {
    const id = (await add({ title: 'Idea', content: 'draft', url: 'https://example.com/' })).id;
    const r = value(await fx.call('vault_update_inbox_item', { item: id, title: 'Idea', content: '', url: null }));
    expect(r).toMatchObject({ id, title: 'Idea', content: '', url: null, changed: ['content', 'url'] });
    expect(fx.prompter.asked.at(-1)!.preview).toEqual({
      kind: 'fields',
      text: `Inbox item Idea (id ${id})\ncontent: draft -> "" (empty)\nurl: https://example.com/ -> (not set)`,
    });
    value(await fx.call('vault_update_inbox_item', { item: id, content: null }));
    expect(fx.prompter.asked.at(-1)!.preview!.text).toBe(`Inbox item Idea (id ${id})\ncontent: "" (empty) -> (not set)`);
  });

  it('lists newest first, hiding archived and snoozed items unless asked, and filters by tag', async () => {
    const a = (await add({ title: 'A', tags: ['work/alpha'] })).id;
    const b = (await add({ title: 'B' })).id;
    const c = (await add({ title: 'C', tags: ['home'] })).id;
    // Three adds can share a millisecond: their creation times are set apart by hand to check the order.
    for (const [id, at] of [
      [a, '2026-11-01T00:00:00.000Z'],
      [b, '2026-11-03T00:00:00.000Z'],
      [c, '2026-11-02T00:00:00.000Z'],
    ])
      await planningSql(fx, `UPDATE inbox_items SET created_at = ? WHERE id = ?`, [at, id]);
    expect(await titles()).toEqual(['B', 'C', 'A']);
    value(await fx.call('vault_archive_inbox_item', { item: b }));
    expect(fx.prompter.asked.at(-1)!.preview!.text).toBe(`Inbox item B (id ${b})\narchived: false -> true`);
    value(await fx.call('vault_snooze_inbox_item', { item: c, until: '2999-01-01T08:00:00+01:00' }));
    expect(fx.prompter.asked.at(-1)!.preview!.text).toBe(`Inbox item C (id ${c})\nsnoozed_until: (not set) -> 2999-01-01T07:00:00.000Z`);
    expect(await titles()).toEqual(['A']);
    expect(await titles({ include_archived: true, include_snoozed: true })).toEqual(['B', 'C', 'A']);
    expect(await titles({ tag: 'work', include_archived: true, include_snoozed: true })).toEqual(['A']);
    // A snooze that has already ended shows the item again; null ends it outright.
    value(await fx.call('vault_snooze_inbox_item', { item: c, until: '2000-01-01T00:00:00Z' }));
    expect(await titles()).toEqual(['C', 'A']);
    value(await fx.call('vault_snooze_inbox_item', { item: c, until: null }));
    expect(value(await fx.call('vault_get_inbox_item', { item: c })).snoozed_until).toBeNull();
    value(await fx.call('vault_unarchive_inbox_item', { item: b }));
    expect(await titles()).toEqual(['B', 'C', 'A']);
    const limited = value(await fx.call('vault_list_inbox_items', { limit: 2 }));
    expect(limited).toMatchObject({ count: 2, truncated: true, total: 3 });
  });

  it('adds and removes tags as field changes', async () => {
    const id = (await add({ title: 'T', tags: ['one'] })).id;
    expect(value(await fx.call('vault_add_inbox_tag', { item: id, tag: '#Two' })).tags).toEqual(['one', 'two']);
    expect(fx.prompter.asked.at(-1)!.preview!.text).toBe(`Inbox item T (id ${id})\ntags: ["one"] -> ["one","two"]`);
    expect(value(await fx.call('vault_remove_inbox_tag', { item: id, tag: 'one' })).tags).toEqual(['two']);
    expect(value(await fx.call('vault_add_inbox_tag', { item: id, tag: 'two' })).changed).toEqual([]);
  });

  it('deletes an item after a preview that says what is lost, and always asks', async () => {
    const id = (await add({ title: 'Gone', content: 'twelve chars', url: 'https://example.com/x', tags: ['a'] })).id;
    fx.prompter.answer('allow-forever', 'allow-once');
    expect(value(await fx.call('vault_delete_inbox_item', { item: id }))).toMatchObject({ id, deleted: true });
    const q = fx.prompter.asked.at(-1)!;
    expect(q).toMatchObject({ danger: 'dangerous', effect: 'delete', standingApprovalAllowed: false });
    expect(q.preview).toEqual({
      kind: 'delete',
      text: `Deletes the inbox item Gone (id ${id}).\nIts text (12 characters) is lost.\nIts link is lost: https://example.com/x\nIts tags: a`,
    });
    expect(error(await fx.call('vault_get_inbox_item', { item: id })).code).toBe('NOT_FOUND');
    const other = (await add({ title: 'Other' })).id;
    value(await fx.call('vault_delete_inbox_item', { item: other }));
    expect(fx.prompter.asked.filter((x) => x.tool === 'vault_delete_inbox_item')).toHaveLength(2);
  });

  it('refuses a write when the item changed after its preview was shown, and keeps that change', async () => {
    const id = (await add({ title: 'Draft' })).id;
    const asked = deferred();
    const release = deferred<'allow-once'>();
    (fx.prompter as any).ask = async () => {
      asked.resolve();
      return release.promise;
    };
    const call = fx.call('vault_update_inbox_item', { item: id, title: 'Agent title' });
    await asked.promise;
    await planningSql(fx, `UPDATE inbox_items SET title = 'Person title' WHERE id = ?`, [id]);
    release.resolve('allow-once');
    expect(error(await call)).toMatchObject({ code: 'CONFLICT', message: expect.stringMatching(/changed after the preview was shown \(title\)/) });
    expect(value(await fx.call('vault_get_inbox_item', { item: id })).title).toBe('Person title');
  });

  it('gives a vault made before the inbox existed its table on the next start, planning data kept', async () => {
    const task = value(await fx.call('vault_create_task', { title: 'Before the inbox' })).id;
    await fx.close();
    const db = new Database(fx.dbFile);
    // The bridge's tables and columns came after the inbox: that version had none of them either.
    db.exec(`DROP TABLE inbox_items; DROP TABLE planning_task_notes; DROP TABLE vault_settings;`);
    db.prepare(
      `DELETE FROM migrations WHERE name IN ('CreateInbox1796500000000', 'CreateBridgeState1796600000000', 'PartialLinkNoteIndex1796700000000')`,
    ).run();
    db.close();
    const again = await fx.restart();
    await again.kernel.loadPacks([{ dir: path.resolve('plugins'), source: 'builtin', only: ['vault'] }]);
    again.kernel.packs.setConfig('vault', { watch: false });
    again.prompter.setFallback('allow-once');
    const call = (tool: string, args: Record<string, unknown>) => again.kernel.invoke({ tool, args, caller: { kind: 'agent' } });
    expect(value(await call('vault_add_to_inbox', { title: 'After' }))).toMatchObject({ title: 'After', created: true });
    expect(value(await call('vault_get_task', { task })).title).toBe('Before the inbox');
    await again.close();
  });
});
