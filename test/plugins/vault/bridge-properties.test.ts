import { deferred } from '../../helpers/wait.js';
import { value, vaultKernel, type VaultFixture, bridgeRefusal } from './helpers.js';

const LAUNCH = '---\nstatus: active\ndue: 2024-05-01\npriority: 2\naliases: [Rocket]\ntags: [work]\n---\nWe ship the rocket on Friday.\n';
/** A body an editor could leave behind: trailing spaces, CRLF, blank lines, a fence, no final newline. */
const PLAIN = 'First line  \r\n\r\n- item\n\n\n```\n---\ncode\n```';

describe('vault desktop bridge: note properties and search reasons', () => {
  let fx: VaultFixture;
  beforeEach(async () => {
    fx = await vaultKernel({
      files: {
        'Projects/Launch.md': LAUNCH,
        'Projects/Budget.md': '---\nstatus: draft\nreviewed: true\n---\nNumbers for the launch party. #finance\n',
        'Journal/Day.md': '---\nstatus: done\npriority: high\nattendees:\n  - Ana\n  - Bo\nmeta: {a: 1}\nempty:\n---\nA quiet day at the café.\n',
        'Plain.md': PLAIN,
        'Broken.md': '---\nstatus: [unclosed\n---\nbody\n',
      },
    });
  });
  afterEach(async () => fx.close());

  const read = async (operation: string, args: unknown[] = []) => value(await fx.call('vault_desktop_read', { operation, args }));
  const write = async (operation: string, args: unknown[] = []) => value(await fx.call('vault_desktop_write', { operation, args }));
  const refused = async (operation: string, args: unknown[] = []) => bridgeRefusal(await fx.call('vault_desktop_write', { operation, args }));
  const idOf = async (note: string) => value(await fx.call('vault_read_note', { note })).id as string;
  const lastPreview = () => fx.prompter.asked.at(-1)!.preview!;
  /** The text after a note's front matter block. */
  const bodyOf = (text: string) => text.slice(text.indexOf('\n---\n') + 5);

  describe('properties.list', () => {
    it('counts every front matter key across the notes with the kinds of value it holds, most used first', async () => {
      const r = await read('properties.list');
      expect(r).toMatchObject({ success: true, count: 9 });
      expect(r.properties).toEqual([
        { name: 'status', types: ['text'], count: 3 },
        { name: 'priority', types: ['text', 'number'], count: 2 },
        { name: 'aliases', types: ['list'], count: 1 },
        { name: 'attendees', types: ['list'], count: 1 },
        { name: 'due', types: ['date'], count: 1 },
        { name: 'empty', types: [], count: 1 },
        { name: 'meta', types: ['object'], count: 1 },
        { name: 'reviewed', types: ['boolean'], count: 1 },
        { name: 'tags', types: ['list'], count: 1 },
      ]);
    });

    it('counts only the notes under a folder when given one', async () => {
      const r = await read('properties.list', [{ folder: 'Projects' }]);
      expect(r.properties).toEqual([
        { name: 'status', types: ['text'], count: 2 },
        { name: 'aliases', types: ['list'], count: 1 },
        { name: 'due', types: ['date'], count: 1 },
        { name: 'priority', types: ['number'], count: 1 },
        { name: 'reviewed', types: ['boolean'], count: 1 },
        { name: 'tags', types: ['list'], count: 1 },
      ]);
      expect((await read('properties.list', [{ folder: 'Nowhere' }])).properties).toEqual([]);
    });
  });

  describe('properties.get', () => {
    it('returns the front matter as the file holds it now, with the note', async () => {
      const r = await read('properties.get', [{ noteId: 'Launch' }]);
      expect(r).toEqual({
        success: true,
        operation: 'properties.get',
        summary: '5 properties of Projects/Launch.md',
        note: { id: await idOf('Projects/Launch.md'), path: 'Projects/Launch.md', title: 'Launch' },
        properties: { status: 'active', due: '2024-05-01', priority: 2, aliases: ['Rocket'], tags: ['work'] },
      });
      // Edited behind the index's back (no watcher here): the file is the truth.
      fx.put('Projects/Launch.md', LAUNCH.replace('status: active', 'status: paused'));
      expect((await read('properties.get', [{ noteId: 'Projects/Launch.md' }])).properties.status).toBe('paused');
      expect((await read('properties.get', [{ noteId: 'Plain' }])).properties).toEqual({});
    });

    it('answers success false saying the front matter is not valid YAML, and NOT_FOUND for an unknown note', async () => {
      expect(await read('properties.get', [{ noteId: 'Broken' }])).toMatchObject({
        success: false,
        code: 'VALIDATION',
        error: expect.stringMatching(/front matter of "Broken\.md" cannot be read: the front matter is not valid YAML/),
      });
      expect(await read('properties.get', [{ noteId: 'Nowhere' }])).toMatchObject({ success: false, code: 'NOT_FOUND' });
    });
  });

  describe('properties.set and properties.remove', () => {
    it('changes a key after a field preview and leaves the body byte-identical', async () => {
      const r = await write('properties.set', [{ noteId: 'Launch', name: 'status', value: 'done' }]);
      expect(r).toMatchObject({
        success: true,
        note: { path: 'Projects/Launch.md', title: 'Launch' },
        name: 'status',
        value: 'done',
        changed: true,
        properties: { status: 'done', due: '2024-05-01', priority: 2, aliases: ['Rocket'], tags: ['work'] },
      });
      expect(lastPreview()).toEqual({ kind: 'fields', text: 'properties.set (write)\nProperties of Projects/Launch.md\nstatus: active -> done' });
      const text = fx.read('Projects/Launch.md');
      expect(bodyOf(text)).toBe(bodyOf(LAUNCH));
      expect((await read('properties.get', [{ noteId: 'Launch' }])).properties.status).toBe('done');
      // The index took the change in the same step: the list counts from it.
      expect((await read('properties.list', [{ folder: 'Projects' }])).properties[0]).toEqual({ name: 'status', types: ['text'], count: 2 });
    });

    it('adds a front matter block to a note without one, keeping every byte of its body, and takes any JSON value', async () => {
      await write('properties.set', [{ noteId: 'Plain', name: 'owner', value: 'Ana' }]);
      expect(lastPreview().text).toBe('properties.set (write)\nProperties of Plain.md\nowner: (not set) -> Ana');
      expect(fx.read('Plain.md')).toBe(`---\nowner: Ana\n---\n${PLAIN}`);
      await write('properties.set', [{ noteId: 'Plain', name: 'review', value: { by: 'Bo', steps: [1, 2], done: false } }]);
      await write('properties.set', [{ noteId: 'Plain', name: 'blocked', value: null }]);
      expect(lastPreview().text).toMatch(/blocked: \(not set\) -> null$/);
      expect(bodyOf(fx.read('Plain.md'))).toBe(PLAIN);
      expect((await read('properties.get', [{ noteId: 'Plain' }])).properties).toEqual({
        owner: 'Ana',
        review: { by: 'Bo', steps: [1, 2], done: false },
        blocked: null,
      });
      const list = (await read('properties.list')).properties as Array<{ name: string; types: string[] }>;
      expect(list.find((p) => p.name === 'review')).toEqual({ name: 'review', types: ['object'], count: 1 });
    });

    it('does not rewrite the file when the key already holds the value', async () => {
      const r = await write('properties.set', [{ noteId: 'Launch', name: 'priority', value: 2 }]);
      expect(r).toMatchObject({ success: true, changed: false });
      expect(lastPreview().text).toMatch(/\(no field changes\)$/);
      expect(fx.read('Projects/Launch.md')).toBe(LAUNCH);
    });

    it('removes a key, and the whole block with the last one, keeping the body', async () => {
      const r = await write('properties.remove', [{ noteId: 'Budget', name: 'reviewed' }]);
      expect(r).toMatchObject({ success: true, name: 'reviewed', properties: { status: 'draft' } });
      expect(lastPreview().text).toBe('properties.remove (write)\nProperties of Projects/Budget.md\nreviewed: true -> (removed)');
      await write('properties.remove', [{ noteId: 'Budget', name: 'status' }]);
      expect(fx.read('Projects/Budget.md')).toBe('Numbers for the launch party. #finance\n');
      expect((await read('properties.list', [{ folder: 'Projects' }])).properties.find((p: { name: string }) => p.name === 'reviewed')).toBeUndefined();
    });

    it('answers a property the note does not have with success false, NOT_FOUND, without anyone being asked', async () => {
      fx.prompter.asked.length = 0;
      const r = await refused('properties.remove', [{ noteId: 'Launch', name: 'owner' }]);
      expect(r).toMatchObject({ code: 'NOT_FOUND', message: expect.stringContaining('has no property "owner"') });
      expect(r.message).toContain('"status"');
      expect(fx.prompter.asked).toHaveLength(0);
      expect(fx.read('Projects/Launch.md')).toBe(LAUNCH);
    });

    it('refuses tags and tag as property names, pointing to vault_add_tag and vault_remove_tag', async () => {
      fx.prompter.asked.length = 0;
      for (const [operation, args] of [
        ['properties.set', { noteId: 'Launch', name: 'tags', value: ['x'] }],
        ['properties.set', { noteId: 'Launch', name: 'Tag', value: 'x' }],
        ['properties.remove', { noteId: 'Launch', name: 'tags' }],
      ] as const) {
        const r = await refused(operation, [args]);
        expect(r.code).toBe('VALIDATION');
        expect(r.message).toMatch(/vault_add_tag and vault_remove_tag/);
      }
      expect(fx.prompter.asked).toHaveLength(0);
      expect(fx.read('Projects/Launch.md')).toBe(LAUNCH);
    });

    it('refuses to write when the note was edited after the preview was shown, and keeps that edit', async () => {
      const asked = deferred();
      const release = deferred<'allow-once'>();
      (fx.prompter as any).ask = async () => {
        asked.resolve();
        return release.promise;
      };
      const call = fx.call('vault_desktop_write', { operation: 'properties.set', args: [{ noteId: 'Launch', name: 'status', value: 'done' }] });
      await asked.promise;
      const edited = LAUNCH.replace('Friday', 'Monday');
      fx.put('Projects/Launch.md', edited);
      release.resolve('allow-once');
      expect(value(await call)).toMatchObject({ success: false, code: 'CONFLICT', error: expect.stringContaining('changed after the preview was shown') });
      expect(fx.read('Projects/Launch.md')).toBe(edited);
    });

    it('refuses a note whose front matter is not valid YAML before anyone is asked, leaving it as it is', async () => {
      fx.prompter.asked.length = 0;
      expect(await refused('properties.set', [{ noteId: 'Broken', name: 'status', value: 'x' }])).toMatchObject({
        code: 'VALIDATION',
        message: expect.stringContaining('not valid YAML'),
      });
      expect(fx.prompter.asked).toHaveLength(0);
      expect(fx.read('Broken.md')).toBe('---\nstatus: [unclosed\n---\nbody\n');
    });
  });

  describe('search.reasons', () => {
    type Reason = { field: string; terms: string[]; snippet?: string; value?: string };
    const reasonsOf = (r: { results: Array<{ path: string; reasons: Reason[] }> }, p: string) => r.results.find((x) => x.path === p)?.reasons;

    it('says whether each note found matched by its title, its body, an alias, a tag or its path', async () => {
      const launch = await read('search.reasons', [{ query: 'launch' }]);
      expect(launch).toMatchObject({ success: true, terms: ['launch'], count: 2 });
      expect(launch.results.map((r: { path: string }) => r.path).sort()).toEqual(['Projects/Budget.md', 'Projects/Launch.md']);
      expect(reasonsOf(launch, 'Projects/Launch.md')).toEqual([
        { field: 'title', terms: ['launch'], value: 'Launch' },
        { field: 'path', terms: ['launch'], value: 'Projects/Launch.md' },
      ]);
      expect(reasonsOf(launch, 'Projects/Budget.md')).toEqual([{ field: 'body', terms: ['launch'], snippet: expect.stringContaining('**launch**') }]);
      const result = launch.results.find((r: { path: string }) => r.path === 'Projects/Launch.md');
      expect(result).toMatchObject({ id: await idOf('Projects/Launch.md'), title: 'Launch' });

      const finance = await read('search.reasons', [{ query: 'finance' }]);
      expect(reasonsOf(finance, 'Projects/Budget.md')).toEqual([
        { field: 'tag', terms: ['finance'], value: 'finance' },
        { field: 'body', terms: ['finance'], snippet: expect.stringContaining('#**finance**') },
      ]);
    });

    it('matches terms as the search does: stems, folded accents, prefixes, phrases', async () => {
      const r = await read('search.reasons', [{ query: 'shipping rock* "on Friday"' }]);
      expect(r.results.map((x: { path: string }) => x.path)).toEqual(['Projects/Launch.md']);
      expect(reasonsOf(r, 'Projects/Launch.md')).toEqual([
        { field: 'alias', terms: ['rock*'], value: 'Rocket' },
        { field: 'body', terms: ['shipping', 'rock*', 'on Friday'], snippet: 'We **ship** the **rocket** **on Friday**.' },
      ]);
      expect(reasonsOf(await read('search.reasons', [{ query: 'CAFE' }]), 'Journal/Day.md')).toEqual([
        { field: 'body', terms: ['CAFE'], snippet: expect.stringContaining('**café**') },
      ]);
    });

    it('keeps to the search’s folder, tags and limit', async () => {
      expect((await read('search.reasons', [{ query: 'launch', folder: 'Journal' }])).results).toEqual([]);
      expect((await read('search.reasons', [{ query: 'launch', tags: ['#finance'] }])).results.map((x: { path: string }) => x.path)).toEqual([
        'Projects/Budget.md',
      ]);
      expect(await read('search.reasons', [{ query: 'launch', limit: 1 }])).toMatchObject({ count: 1 });
    });

    it('for one note that does not match, lists the terms its title and body lack', async () => {
      const r = await read('search.reasons', [{ query: 'launch budget', noteId: 'Launch' }]);
      expect(r).toMatchObject({
        success: true,
        terms: ['launch', 'budget'],
        note: { id: await idOf('Projects/Launch.md'), path: 'Projects/Launch.md', title: 'Launch' },
        matches: false,
        missing: ['budget'],
        summary: 'Projects/Launch.md lacks "budget"',
      });
      expect(r.reasons.map((x: Reason) => x.field)).toEqual(['title', 'path']);
      expect(r.excluded).toBeUndefined();

      // A term in a front matter tag or the folder's name only does not make a match: the search reads titles and bodies.
      const work = await read('search.reasons', [{ query: 'projects', noteId: 'Launch' }]);
      expect(work).toMatchObject({ matches: false, missing: ['projects'], reasons: [{ field: 'path', terms: ['projects'] }] });

      // Other notes match; this one is still answered for itself.
      expect(await read('search.reasons', [{ query: 'launch', noteId: 'Day' }])).toMatchObject({ matches: false, missing: ['launch'], reasons: [] });

      const ok = await read('search.reasons', [{ query: 'rocket friday', noteId: 'Projects/Launch.md' }]);
      expect(ok).toMatchObject({ matches: true, missing: [] });

      const outside = await read('search.reasons', [{ query: 'cafe', folder: 'Projects', noteId: 'Day' }]);
      expect(outside).toMatchObject({ matches: false, missing: [], excluded: ['folder'] });
      expect(outside.reasons).toEqual([{ field: 'body', terms: ['cafe'], snippet: expect.any(String) }]);
    });
  });

  describe('arguments', () => {
    it('answers wrong arguments of the reads with success false, VALIDATION and the usage line', async () => {
      const cases: Array<[string, unknown[], RegExp]> = [
        ['properties.list', [{ folder: 3 }], /folder must be a non-empty text/],
        ['properties.list', [{ dir: 'x' }], /unknown key dir/],
        ['properties.list', [{}, {}], /at most one argument/],
        ['properties.get', [], /args\[0\] must be an object/],
        ['properties.get', ['Launch'], /args\[0\] must be an object/],
        ['search.reasons', [{ query: '+++' }], /no letters or digits/],
        ['search.reasons', [{ query: 'x', limit: 0 }], /limit must be a whole number from 1 to 50/],
        ['search.reasons', [{ query: 'x', noteId: 'Launch', limit: 5 }], /limit does not apply with noteId/],
        ['search.reasons', [{ query: 'x', tags: 'work' }], /tags must be a list/],
        ['search.reasons', [{ q: 'x' }], /unknown key q/],
      ];
      for (const [operation, args, message] of cases) {
        const r = await read(operation, args);
        expect(r).toMatchObject({ success: false, code: 'VALIDATION', operation });
        expect(r.error).toMatch(message);
        expect(r.error).toContain('(args [');
      }
    });

    it('refuses wrong arguments of the writes with VALIDATION before anyone is asked', async () => {
      fx.prompter.asked.length = 0;
      const cases: Array<[string, unknown[], RegExp]> = [
        ['properties.set', [{ noteId: 'Launch', name: 'status' }], /value is missing/],
        ['properties.set', [{ noteId: 'Launch', name: ' ', value: 1 }], /name must be a non-empty text/],
        ['properties.set', [{ noteId: 'Launch', name: 'x'.repeat(101), value: 1 }], /name is longer than 100 characters/],
        ['properties.set', [{ noteId: 'Launch', name: 'a\nb', value: 1 }], /control characters/],
        ['properties.set', [{ noteId: 'Launch', name: 'big', value: 'x'.repeat(70_000) }], /value is longer than 64 KB/],
        ['properties.set', [{ noteId: 'Launch', name: 'a', value: 1, force: true }], /unknown key force/],
        ['properties.remove', [{ noteId: 'Launch', name: 'status', value: 1 }], /unknown key value/],
        ['properties.remove', [{ name: 'status' }], /noteId must be a non-empty text/],
        ['properties.set', [{ noteId: 'scan', name: 'a', value: 1 }], /No note in the vault/],
      ];
      for (const [operation, args, message] of cases) {
        const r = await refused(operation, args);
        expect(r.message).toMatch(message);
        expect(r.code).toBe(/No note/.test(r.message) ? 'NOT_FOUND' : 'VALIDATION');
      }
      expect(fx.prompter.asked).toHaveLength(0);
      expect(fx.read('Projects/Launch.md')).toBe(LAUNCH);
    });
  });
});
