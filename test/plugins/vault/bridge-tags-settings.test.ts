import Database from 'better-sqlite3';
import { deferred } from '../../helpers/wait.js';
import { value, vaultKernel, type VaultFixture, bridgeRefusal } from './helpers.js';

describe('vault desktop bridge: tag categories and settings', () => {
  let fx: VaultFixture;
  beforeEach(async () => {
    fx = await vaultKernel({ files: { 'A.md': 'Notes #work #home\n', 'B.md': '---\ntags: [reading]\n---\nbody #work\n' } });
  });
  afterEach(async () => fx.close());

  const read = async (operation: string, args: unknown[] = []) => value(await fx.call('vault_desktop_read', { operation, args }));
  const write = async (operation: string, args: unknown[] = []) => value(await fx.call('vault_desktop_write', { operation, args }));
  const refused = async (operation: string, args: unknown[] = []) => bridgeRefusal(await fx.call('vault_desktop_write', { operation, args }));
  const categories = async () => (await read('tags.listCategories')).categories as Array<{ id: number; name: string; sort_order: number; tag_count: number }>;
  const lastPreview = () => fx.prompter.asked.at(-1)!.preview!;
  const tagsOf = async () =>
    Object.fromEntries(
      (value(await fx.call('vault_get_tags', {})).tags as Array<{ name: string; category_id: number | null; category_name: string | null }>).map((t) => [
        t.name,
        [t.category_id, t.category_name],
      ]),
    );

  describe('tag categories', () => {
    it('lists none at first, creates categories at the end of the order after a field preview, and returns each one', async () => {
      expect(await read('tags.listCategories')).toMatchObject({ success: true, categories: [] });
      const work = await write('tags.createCategory', [{ name: ' Work ' }]);
      expect(work).toMatchObject({ success: true, category: { name: 'Work', sort_order: 0, tag_count: 0 } });
      expect(typeof work.category.id).toBe('number');
      expect(lastPreview()).toEqual({
        kind: 'fields',
        text: 'tags.createCategory (write)\nNew tag category\nname: (not set) -> Work\nsort_order: (not set) -> 0',
      });
      const life = await write('tags.createCategory', [{ name: 'Life' }]);
      expect(life.category).toMatchObject({ name: 'Life', sort_order: 1, tag_count: 0 });
      expect(await categories()).toEqual([
        { id: work.category.id, name: 'Work', sort_order: 0, tag_count: 0 },
        { id: life.category.id, name: 'Life', sort_order: 1, tag_count: 0 },
      ]);
    });

    it('refuses a duplicate name in any case, an empty name and unknown keys before anyone is asked', async () => {
      await write('tags.createCategory', [{ name: 'Work' }]);
      fx.prompter.asked.length = 0;
      expect(await refused('tags.createCategory', [{ name: 'WORK' }])).toMatchObject({ code: 'CONFLICT', message: expect.stringContaining('"Work"') });
      expect((await refused('tags.createCategory', [{ name: '  ' }])).code).toBe('VALIDATION');
      expect((await refused('tags.createCategory', [{ name: 'X', color: 'red' }])).message).toMatch(/unknown key color/);
      expect((await refused('tags.createCategory', ['Work'])).message).toMatch(/args\[0\] must be an object/);
      expect(fx.prompter.asked).toHaveLength(0);
      expect(await categories()).toHaveLength(1);
    });

    it('moves tags into categories and reorders categories in one drag, showing only what moves', async () => {
      const work = (await write('tags.createCategory', [{ name: 'Work' }])).category.id as number;
      const life = (await write('tags.createCategory', [{ name: 'Life' }])).category.id as number;
      const r = await write('tags.reorder', [
        {
          assignments: [
            { tag: '#Work', categoryId: work },
            { tag: 'home', categoryId: life },
            { tag: 'reading', categoryId: null },
          ],
          categoryOrder: [life],
        },
      ]);
      expect(r).toMatchObject({ success: true, moved: ['work', 'home'] });
      expect(lastPreview()).toEqual({
        kind: 'fields',
        text: 'tags.reorder (write)\nTag categories\nwork: (not set) -> Work\nhome: (not set) -> Life\ncategory order: Work, Life -> Life, Work',
      });
      expect(await categories()).toEqual([
        { id: life, name: 'Life', sort_order: 0, tag_count: 1 },
        { id: work, name: 'Work', sort_order: 1, tag_count: 1 },
      ]);
      expect(await tagsOf()).toEqual({ home: [life, 'Life'], reading: [null, null], work: [work, 'Work'] });
      // Only the order: the tags stay where they are.
      await write('tags.reorder', [{ categoryOrder: [work, life] }]);
      expect(lastPreview().text).toBe('tags.reorder (write)\nTag categories\ncategory order: Life, Work -> Work, Life');
      await write('tags.reorder', [{ assignments: [{ tag: 'work', categoryId: life }] }]);
      expect(lastPreview().text).toBe('tags.reorder (write)\nTag categories\nwork: Work -> Life');
      expect((await categories()).map((c) => [c.name, c.tag_count])).toEqual([
        ['Work', 0],
        ['Life', 2],
      ]);
    });

    it('refuses unknown tags, unknown categories, repeats and an empty drag before anyone is asked', async () => {
      const work = (await write('tags.createCategory', [{ name: 'Work' }])).category.id as number;
      fx.prompter.asked.length = 0;
      expect(await refused('tags.reorder', [{ assignments: [{ tag: 'nosuch', categoryId: work }] }])).toMatchObject({
        code: 'NOT_FOUND',
        message: expect.stringContaining('"nosuch"'),
      });
      expect((await refused('tags.reorder', [{ assignments: [{ tag: 'work', categoryId: 999 }] }])).code).toBe('NOT_FOUND');
      expect((await refused('tags.reorder', [{ categoryOrder: [999] }])).code).toBe('NOT_FOUND');
      expect((await refused('tags.reorder', [{ categoryOrder: [work, work] }])).code).toBe('VALIDATION');
      expect(
        (
          await refused('tags.reorder', [
            {
              assignments: [
                { tag: 'work', categoryId: work },
                { tag: 'WORK', categoryId: null },
              ],
            },
          ])
        ).message,
      ).toMatch(/assigned twice/);
      expect((await refused('tags.reorder', [{ assignments: [{ tag: 'work' }] }])).message).toMatch(/categoryId is missing/);
      expect((await refused('tags.reorder', [{}])).code).toBe('VALIDATION');
      expect(fx.prompter.asked).toHaveLength(0);
      expect(await tagsOf()).toMatchObject({ work: [null, null] });
    });

    it('renames a category with a field preview, refusing a name another category has', async () => {
      const work = (await write('tags.createCategory', [{ name: 'Work' }])).category.id as number;
      await write('tags.createCategory', [{ name: 'Life' }]);
      const r = await write('tags.renameCategory', [{ id: work, name: 'Job' }]);
      expect(r).toMatchObject({ success: true, category: { id: work, name: 'Job' } });
      expect(lastPreview()).toEqual({ kind: 'fields', text: `tags.renameCategory (write)\nTag category Work (id ${work})\nname: Work -> Job` });
      // A change of case of its own name is a rename, not a clash.
      await write('tags.renameCategory', [{ id: work, name: 'JOB' }]);
      fx.prompter.asked.length = 0;
      expect((await refused('tags.renameCategory', [{ id: work, name: 'life' }])).code).toBe('CONFLICT');
      expect((await refused('tags.renameCategory', [{ id: 999, name: 'x' }])).code).toBe('NOT_FOUND');
      expect((await refused('tags.renameCategory', [{ id: 'abc', name: 'x' }])).code).toBe('VALIDATION');
      expect(fx.prompter.asked).toHaveLength(0);
      expect((await categories()).map((c) => c.name)).toEqual(['JOB', 'Life']);
    });

    it('deletes a category after saying which tags become uncategorized, keeps the tags, and renumbers the rest', async () => {
      const work = (await write('tags.createCategory', [{ name: 'Work' }])).category.id as number;
      const life = (await write('tags.createCategory', [{ name: 'Life' }])).category.id as number;
      await write('tags.reorder', [
        {
          assignments: [
            { tag: 'work', categoryId: work },
            { tag: 'reading', categoryId: work },
            { tag: 'home', categoryId: life },
          ],
        },
      ]);
      const r = await write('tags.deleteCategory', [{ id: work }]);
      expect(r).toMatchObject({ success: true, uncategorized: ['reading', 'work'] });
      const q = fx.prompter.asked.at(-1)!;
      expect(q).toMatchObject({ standingApprovalAllowed: false, concern: { rule: 'bridge-delete' } });
      expect(q.preview).toEqual({
        kind: 'delete',
        text: `tags.deleteCategory (delete: asked every time)\nDeletes the tag category Work (id ${work}).\nIts 2 tags are kept and become uncategorized:\n  - reading\n  - work`,
      });
      expect(await categories()).toEqual([{ id: life, name: 'Life', sort_order: 0, tag_count: 1 }]);
      expect(await tagsOf()).toEqual({ home: [life, 'Life'], reading: [null, null], work: [null, null] });
      await write('tags.deleteCategory', [{ id: life }]);
      expect(lastPreview().text).toContain('Its tag is kept and becomes uncategorized:\n  - home');
      const empty = (await write('tags.createCategory', [{ name: 'Empty' }])).category.id as number;
      await write('tags.deleteCategory', [{ id: empty }]);
      expect(lastPreview().text).toMatch(/\nIt holds no tags\.$/);
      fx.prompter.asked.length = 0;
      expect((await refused('tags.deleteCategory', [{ id: empty }])).code).toBe('NOT_FOUND');
      expect(fx.prompter.asked).toHaveLength(0);
    });

    it('refuses a rename when the category changed after its preview was shown, and keeps that change', async () => {
      const work = (await write('tags.createCategory', [{ name: 'Work' }])).category.id as number;
      const asked = deferred();
      const release = deferred<'allow-once'>();
      (fx.prompter as any).ask = async () => {
        asked.resolve();
        return release.promise;
      };
      const call = fx.call('vault_desktop_write', { operation: 'tags.renameCategory', args: [{ id: work, name: 'Agent' }] });
      await asked.promise;
      const db = new Database(fx.dbFile);
      db.prepare(`UPDATE tag_categories SET name = 'Person' WHERE id = ?`).run(work);
      db.close();
      release.resolve('allow-once');
      // The op's own failure: success false, not a pipeline error.
      expect(value(await call)).toMatchObject({
        success: false,
        code: 'CONFLICT',
        error: expect.stringMatching(/changed after the preview was shown \(name\)/),
      });
      expect((await categories()).map((c) => c.name)).toEqual(['Person']);
    });
  });

  describe('settings', () => {
    it('reports every feature switched on by default and switches only what changes, showing those switches', async () => {
      expect(await read('settings.getFeaturesSettings')).toEqual({
        success: true,
        operation: 'settings.getFeaturesSettings',
        features: { home: true, inbox: true, journal: true, tasks: true, calendar: true, graph: true, canvas: true },
      });
      const r = await write('settings.setFeaturesSettings', [{ canvas: false, graph: true, journal: false }]);
      expect(r).toMatchObject({ success: true, changed: ['journal', 'canvas'], features: { canvas: false, graph: true, journal: false, home: true } });
      expect(lastPreview()).toEqual({
        kind: 'fields',
        text: 'settings.setFeaturesSettings (write)\nFeature switches\njournal: true -> false\ncanvas: true -> false',
      });
      expect((await read('settings.getFeaturesSettings')).features).toEqual({
        home: true,
        inbox: true,
        journal: false,
        tasks: true,
        calendar: true,
        graph: true,
        canvas: false,
      });
      await write('settings.setFeaturesSettings', [{ canvas: false }]);
      expect(lastPreview().text).toBe('settings.setFeaturesSettings (write)\nFeature switches\n(no field changes)');
    });

    it('refuses unknown switches, values that are not true or false, and an empty change before anyone is asked', async () => {
      expect((await refused('settings.setFeaturesSettings', [{ canvas: false, spatial: false }])).message).toMatch(/unknown key spatial/);
      expect((await refused('settings.setFeaturesSettings', [{ tasks: 'off' }])).message).toMatch(/tasks must be true or false/);
      expect((await refused('settings.setFeaturesSettings', [{}])).code).toBe('VALIDATION');
      expect((await refused('settings.setFeaturesSettings', [])).code).toBe('VALIDATION');
      expect(value(await fx.call('vault_desktop_read', { operation: 'settings.getFeaturesSettings', args: [{}] }))).toMatchObject({
        success: false,
        code: 'VALIDATION',
      });
      expect(fx.prompter.asked).toHaveLength(0);
    });

    it('reads and sets the daily inbox review reminder with a field preview', async () => {
      expect((await read('settings.getInboxSettings')).inbox).toEqual({ reviewReminder: false, reviewTime: '09:00' });
      const r = await write('settings.setInboxSettings', [{ reviewReminder: true, reviewTime: '18:30' }]);
      expect(r).toMatchObject({ success: true, inbox: { reviewReminder: true, reviewTime: '18:30' } });
      expect(lastPreview()).toEqual({
        kind: 'fields',
        text: 'settings.setInboxSettings (write)\nInbox review reminder\nreviewReminder: false -> true\nreviewTime: 09:00 -> 18:30',
      });
      await write('settings.setInboxSettings', [{ reviewReminder: false }]);
      expect((await read('settings.getInboxSettings')).inbox).toEqual({ reviewReminder: false, reviewTime: '18:30' });
      fx.prompter.asked.length = 0;
      for (const bad of ['24:00', '9:00', '09:60', 900])
        expect((await refused('settings.setInboxSettings', [{ reviewTime: bad }])).message).toMatch(/reviewTime must be a time of day as HH:MM/);
      expect((await refused('settings.setInboxSettings', [{ remindAt: '09:00' }])).code).toBe('VALIDATION');
      expect(fx.prompter.asked).toHaveLength(0);
    });
  });
});
