import { value, vaultKernel, type VaultFixture, bridgeRefusal } from './helpers.js';

describe('vault desktop bridge: saved filters, bookmarks and folder views', () => {
  let fx: VaultFixture;
  beforeEach(async () => {
    fx = await vaultKernel({
      files: {
        'Projects/Launch plan.md': 'The launch of the rocket #work\n',
        'Projects/Budget.md': 'Money for the launch #work #finance\n',
        'Home/Garden.md': 'Tomatoes and the launch of spring #home\n',
        'Home/Scan.pdf': '%PDF-1.4\n',
      },
    });
  });
  afterEach(async () => fx.close());

  const read = async (operation: string, args: unknown[] = []) => value(await fx.call('vault_desktop_read', { operation, args }));
  const write = async (operation: string, args: unknown[] = []) => value(await fx.call('vault_desktop_write', { operation, args }));
  const refusedWrite = async (operation: string, args: unknown[] = []) => bridgeRefusal(await fx.call('vault_desktop_write', { operation, args }));
  const refusedRead = async (operation: string, args: unknown[] = []) => bridgeRefusal(await fx.call('vault_desktop_read', { operation, args }));
  const lastPreview = () => fx.prompter.asked.at(-1)!.preview!;

  describe('saved filters', () => {
    it('saves a search under a name and runs it as vault_search_notes would, by id or by name', async () => {
      const made = await write('savedFilters.create', [{ name: 'Work launches', query: 'launch', tags: ['#Work'] }]);
      expect(made).toMatchObject({
        success: true,
        filter: { name: 'Work launches', query: 'launch', folder: null, tags: ['work'], fileTypes: [], sort_order: 0 },
      });
      expect(lastPreview().text).toContain('name: (not set) -> Work launches');
      const byName = await read('savedFilters.run', [{ id: 'work launches' }]);
      expect(byName.results.map((r: { path: string }) => r.path).sort()).toEqual(['Projects/Budget.md', 'Projects/Launch plan.md']);
      const search = value(await fx.call('vault_search_notes', { query: 'launch', tags: ['work'] }));
      expect(byName.results).toEqual(search.results);
      expect((await read('savedFilters.run', [{ id: made.filter.id, limit: 1 }])).count).toBe(1);
    });

    it('updates only what it is given, showing the fields that move, and a folder of null clears it', async () => {
      const { filter } = await write('savedFilters.create', [{ name: 'Home', folder: 'Home', query: 'launch' }]);
      const r = await write('savedFilters.update', [{ id: filter.id, name: 'Everywhere', folder: null }]);
      expect(r).toMatchObject({ success: true, filter: { name: 'Everywhere', folder: null, query: 'launch' }, changed: ['name', 'folder'] });
      expect(lastPreview().text).toContain('folder: Home -> (not set)');
      expect(lastPreview().text).not.toContain('query:');
      expect((await read('savedFilters.run', [{ id: 'Everywhere' }])).count).toBe(3);
    });

    it('refuses a filter that filters nothing, a taken name, an unknown file type and a missing filter before anyone is asked', async () => {
      await write('savedFilters.create', [{ name: 'Work', tags: ['work'] }]);
      fx.prompter.asked.length = 0;
      expect((await refusedWrite('savedFilters.create', [{ name: 'All' }])).message).toMatch(/would find everything/);
      expect(await refusedWrite('savedFilters.create', [{ name: 'WORK', query: 'x' }])).toMatchObject({ code: 'CONFLICT' });
      expect((await refusedWrite('savedFilters.create', [{ name: 'Docs', fileTypes: ['doc'] }])).code).toBe('VALIDATION');
      expect(await refusedWrite('savedFilters.update', [{ id: 'nope', query: 'x' }])).toMatchObject({ code: 'NOT_FOUND' });
      expect(await refusedWrite('savedFilters.update', [{ id: 'Work', tags: [] }])).toMatchObject({ code: 'VALIDATION' });
      expect(await refusedRead('savedFilters.run', [{ id: 'nope' }])).toMatchObject({ code: 'NOT_FOUND' });
      expect(fx.prompter.asked).toHaveLength(0);
    });

    it('asks every time to delete one, says the notes stay, and keeps the order gapless', async () => {
      await write('savedFilters.create', [{ name: 'A', query: 'a' }]);
      await write('savedFilters.create', [{ name: 'B', query: 'b' }]);
      await write('savedFilters.create', [{ name: 'C', query: 'c' }]);
      await write('savedFilters.reorder', [{ ids: ['C'] }]);
      expect((await read('savedFilters.list')).filters.map((f: { name: string }) => f.name)).toEqual(['C', 'A', 'B']);
      fx.prompter.asked.length = 0;
      const r = await write('savedFilters.delete', [{ id: 'A' }]);
      expect(r).toMatchObject({ success: true, deleted: { name: 'A' } });
      expect(fx.prompter.asked).toHaveLength(1);
      expect(lastPreview()).toMatchObject({ kind: 'delete', text: expect.stringContaining('The notes it finds are not touched') });
      expect((await read('savedFilters.list')).filters.map((f: { name: string; sort_order: number }) => [f.name, f.sort_order])).toEqual([
        ['C', 0],
        ['B', 1],
      ]);
    });
  });

  describe('bookmarks', () => {
    it('bookmarks a note by path, a task by title and an address, and lists them with the items as they are now', async () => {
      const task = value(await fx.call('vault_create_task', { title: 'Call the bank' }));
      await write('bookmarks.add', [{ itemType: 'note', itemId: 'Projects/Budget.md' }]);
      await write('bookmarks.add', [{ itemType: 'task', itemId: 'call the bank' }]);
      await write('bookmarks.add', [{ itemType: 'url', itemId: 'https://example.org/docs', title: 'Docs' }]);
      await write('bookmarks.add', [{ itemType: 'file', itemId: 'Home/Scan.pdf' }]);
      const { bookmarks, count } = await read('bookmarks.list');
      expect(count).toBe(4);
      expect(bookmarks[0]).toMatchObject({ item_type: 'note', title: 'Budget', item: { path: 'Projects/Budget.md' } });
      expect(bookmarks[1]).toMatchObject({ item_type: 'task', item_id: task.task?.id ?? task.id, item: { title: 'Call the bank', done: false } });
      expect(bookmarks[2]).toMatchObject({ item_type: 'url', title: 'Docs', url: 'https://example.org/docs' });
      expect(bookmarks[3]).toMatchObject({ item_type: 'file', item: { path: 'Home/Scan.pdf' } });
    });

    it('follows a note that is renamed and lists one whose note was deleted as missing', async () => {
      await write('bookmarks.add', [{ itemType: 'note', itemId: 'Home/Garden.md' }]);
      await write('bookmarks.add', [{ itemType: 'note', itemId: 'Projects/Budget.md' }]);
      value(await fx.call('vault_rename_note', { note: 'Home/Garden.md', new_title: 'Vegetables' }));
      value(await fx.call('vault_delete_note', { note: 'Projects/Budget.md' }));
      const { bookmarks, summary } = await read('bookmarks.list');
      expect(bookmarks[0]).toMatchObject({ item: { path: 'Home/Vegetables.md' } });
      expect(bookmarks[1]).toMatchObject({ missing: true, title: 'Budget' });
      expect(summary).toMatch(/1 of them point at an item that is gone/);
    });

    it('refuses a second bookmark on the same item, an unknown item, a note given as a file and a non-web address before anyone is asked', async () => {
      await write('bookmarks.add', [{ itemType: 'note', itemId: 'Budget' }]);
      fx.prompter.asked.length = 0;
      expect(await refusedWrite('bookmarks.add', [{ itemType: 'note', itemId: 'Projects/Budget.md' }])).toMatchObject({ code: 'CONFLICT' });
      expect(await refusedWrite('bookmarks.add', [{ itemType: 'task', itemId: 'no such task' }])).toMatchObject({ code: 'NOT_FOUND' });
      expect((await refusedWrite('bookmarks.add', [{ itemType: 'file', itemId: 'Budget' }])).message).toMatch(/is a note/);
      expect((await refusedWrite('bookmarks.add', [{ itemType: 'url', itemId: 'file:///etc/passwd' }])).code).toBe('VALIDATION');
      expect((await refusedWrite('bookmarks.add', [{ itemType: 'folder', itemId: 'Home' }])).message).toMatch(/itemType must be one of/);
      expect(await refusedWrite('bookmarks.remove', [{ id: 'nope' }])).toMatchObject({ code: 'NOT_FOUND' });
      expect(fx.prompter.asked).toHaveLength(0);
    });

    it('removes a bookmark after asking, leaving the item, and reorders the rest', async () => {
      const a = (await write('bookmarks.add', [{ itemType: 'note', itemId: 'Budget' }])).bookmark.id;
      const b = (await write('bookmarks.add', [{ itemType: 'note', itemId: 'Garden' }])).bookmark.id;
      const c = (await write('bookmarks.add', [{ itemType: 'url', itemId: 'https://example.org/' }])).bookmark.id;
      await write('bookmarks.reorder', [{ ids: [c, b] }]);
      expect((await read('bookmarks.list')).bookmarks.map((x: { id: string }) => x.id)).toEqual([c, b, a]);
      const r = await write('bookmarks.remove', [{ id: b }]);
      expect(r).toMatchObject({ success: true, removed: { id: b, title: 'Garden' } });
      expect(lastPreview()).toMatchObject({ kind: 'delete', text: expect.stringContaining('The note itself is not touched') });
      expect((await read('bookmarks.list')).bookmarks.map((x: { id: string; sort_order: number }) => [x.id, x.sort_order])).toEqual([
        [c, 0],
        [a, 1],
      ]);
      expect(fx.read('Home/Garden.md')).toContain('Tomatoes');
    });
  });

  describe('folder views', () => {
    it('gives the default view of a folder without one, sets one with a field preview, lists it and resets it', async () => {
      expect(await read('folderViews.get', [{ folder: 'Projects' }])).toMatchObject({
        success: true,
        stored: false,
        view: { folder: 'Projects', view: 'list', sortBy: 'title', sortDirection: 'asc', showSubfolders: false },
      });
      const r = await write('folderViews.set', [{ folder: 'Projects/', view: 'cards', sortBy: 'modified', sortDirection: 'desc' }]);
      expect(r).toMatchObject({ success: true, view: { folder: 'Projects', view: 'cards', sortBy: 'modified', sortDirection: 'desc', showSubfolders: false } });
      expect(lastPreview().text).toContain('view: list -> cards');
      expect(lastPreview().text).not.toContain('showSubfolders');
      expect(await read('folderViews.get', [{ folder: 'Projects' }])).toMatchObject({ stored: true, view: { view: 'cards' } });
      await write('folderViews.set', [{ folder: '', view: 'table' }]);
      expect((await read('folderViews.list')).views.map((v: { folder: string; view: string }) => [v.folder, v.view])).toEqual([
        ['', 'table'],
        ['Projects', 'cards'],
      ]);
      expect(await write('folderViews.reset', [{ folder: 'Projects' }])).toMatchObject({ view: { view: 'list', sortBy: 'title' } });
      expect((await read('folderViews.get', [{ folder: 'Projects' }])).stored).toBe(false);
    });

    it('refuses a folder that does not exist, a file, an unknown view and a reset of a folder without a view', async () => {
      expect(await refusedWrite('folderViews.set', [{ folder: 'Nowhere', view: 'cards' }])).toMatchObject({ code: 'NOT_FOUND' });
      expect((await refusedWrite('folderViews.set', [{ folder: 'Home/Garden.md', view: 'cards' }])).message).toMatch(/is a file, not a folder/);
      expect((await refusedWrite('folderViews.set', [{ folder: 'Home', view: 'kanban' }])).message).toMatch(/view must be one of list, cards, table/);
      expect((await refusedWrite('folderViews.set', [{ folder: 'Home' }])).message).toMatch(/say what to set/);
      expect(await refusedWrite('folderViews.reset', [{ folder: 'Home' }])).toMatchObject({ code: 'NOT_FOUND' });
      expect(fx.prompter.asked).toHaveLength(0);
      // A folder outside the vault is the sandbox's refusal, an error rather than an answer.
      const outside = await fx.call('vault_desktop_write', { operation: 'folderViews.set', args: [{ folder: '../x', view: 'cards' }] });
      expect(outside.ok).toBe(false);
    });
  });
});
