import * as fs from 'node:fs';
import * as path from 'node:path';
import { deferred } from '../../helpers/wait.js';
import { planningSql, value, vaultKernel, type VaultFixture, bridgeRefusal } from './helpers.js';

describe('vault desktop bridge: notes and templates', () => {
  let fx: VaultFixture;
  beforeEach(async () => {
    fx = await vaultKernel({
      files: {
        'Meeting.md': '# Decisions\nShip on Friday.\n',
        'Sprint #4.md': 'goals\n',
        'Work/Plan.md': 'plan\n',
        'Home/Plan.md': 'other plan\n',
        'Titled.md': '---\ntitle: Quarterly Review\naliases: [QR]\n---\nbody\n',
        'Empty.md': '',
        'Tagged.md': '---\nstatus: draft\n---\nExisting text.\n',
        'scan.pdf': Buffer.from('%PDF-1.4 fake'),
        'Templates/Meeting Notes.md': '---\nstatus: open\ntype: meeting\n---\n# {{title}}\nDate: {{date}} at {{ time }}\n## Agenda\n',
        'Templates/Daily/Standup.md': 'Yesterday / today / blockers\n',
      },
    });
  });
  afterEach(async () => fx.close());

  const read = async (operation: string, args: unknown[] = []) => value(await fx.call('vault_desktop_read', { operation, args }));
  const write = async (operation: string, args: unknown[] = []) => value(await fx.call('vault_desktop_write', { operation, args }));
  const refused = async (operation: string, args: unknown[] = []) => bridgeRefusal(await fx.call('vault_desktop_write', { operation, args }));
  const idOf = async (note: string) => value(await fx.call('vault_read_note', { note })).id as string;
  const lastPreview = () => fx.prompter.asked.at(-1)!.preview!;

  describe('notes.resolveWikiTarget and notes.resolveByTitle', () => {
    it('follows a link as the editor does: a heading after #, a title that has a # in it, brackets and an alias', async () => {
      const meeting = { id: await idOf('Meeting'), path: 'Meeting.md', title: 'Meeting' };
      expect(await read('notes.resolveWikiTarget', ['Meeting#Decisions'])).toMatchObject({ success: true, note: meeting, heading: 'Decisions' });
      expect(await read('notes.resolveWikiTarget', ['[[Meeting#Decisions|the decisions]]'])).toMatchObject({ note: meeting, heading: 'Decisions' });
      expect(await read('notes.resolveWikiTarget', ['![[Meeting]]'])).toMatchObject({ note: meeting, heading: null });
      expect(await read('notes.resolveWikiTarget', ['Sprint #4'])).toMatchObject({ note: { path: 'Sprint #4.md', title: 'Sprint #4' }, heading: null });
      expect(await read('notes.resolveWikiTarget', ['QR'])).toMatchObject({ note: { path: 'Titled.md', title: 'Quarterly Review' } });
      expect(await read('notes.resolveWikiTarget', ['Work/Plan'])).toMatchObject({ note: { path: 'Work/Plan.md' } });
    });

    it('answers the candidates for an ambiguous target and null for one that leads nowhere', async () => {
      const r = await read('notes.resolveWikiTarget', ['Plan#Steps']);
      expect(r).toMatchObject({ success: true, note: null, heading: 'Steps' });
      expect(r.candidates).toEqual([
        { id: await idOf('Home/Plan'), path: 'Home/Plan.md', title: 'Plan' },
        { id: await idOf('Work/Plan'), path: 'Work/Plan.md', title: 'Plan' },
      ]);
      const none = await read('notes.resolveWikiTarget', ['Nowhere#Part']);
      expect(none).toMatchObject({ success: true, note: null, heading: 'Part' });
      expect(none.candidates).toBeUndefined();
    });

    it('looks a plain title up without splitting off a heading or reading aliases', async () => {
      expect(await read('notes.resolveByTitle', ['meeting'])).toMatchObject({ success: true, note: { path: 'Meeting.md', title: 'Meeting' } });
      expect(await read('notes.resolveByTitle', ['Meeting#Decisions'])).toMatchObject({ success: true, note: null });
      expect(await read('notes.resolveByTitle', ['Sprint #4'])).toMatchObject({ note: { path: 'Sprint #4.md' } });
      expect(await read('notes.resolveByTitle', ['Quarterly Review'])).toMatchObject({ note: { path: 'Titled.md' } });
      expect(await read('notes.resolveByTitle', ['Titled'])).toMatchObject({ note: { path: 'Titled.md' } });
      expect(await read('notes.resolveByTitle', ['QR'])).toMatchObject({ note: null });
      expect((await read('notes.resolveByTitle', ['Plan'])).candidates.map((c: { path: string }) => c.path)).toEqual(['Home/Plan.md', 'Work/Plan.md']);
    });

    it('answers a missing or empty target with success false and the usage line, in the seed’s shape (no MCP error)', async () => {
      for (const args of [[], [''], [42], ['a', 'b']]) {
        const r = value(await fx.call('vault_desktop_read', { operation: 'notes.resolveWikiTarget', args }));
        expect(r).toMatchObject({ success: false, code: 'VALIDATION', operation: 'notes.resolveWikiTarget', error: expect.stringContaining('args [target]') });
      }
    });
  });

  describe('templates', () => {
    it('lists the templates folder, nested templates by their path in it, and reads one by name in any case', async () => {
      const list = await read('templates.get');
      expect(list).toMatchObject({ success: true, folder: 'Templates' });
      expect(list.templates).toEqual([
        { name: 'Daily/Standup', path: 'Templates/Daily/Standup.md', id: await idOf('Templates/Daily/Standup.md') },
        { name: 'Meeting Notes', path: 'Templates/Meeting Notes.md', id: await idOf('Templates/Meeting Notes.md') },
      ]);
      const one = await read('templates.get', ['meeting notes']);
      expect(one.template).toEqual({
        name: 'Meeting Notes',
        path: 'Templates/Meeting Notes.md',
        id: await idOf('Templates/Meeting Notes.md'),
        content: fx.read('Templates/Meeting Notes.md'),
      });
      expect((await read('templates.get', ['Templates/Daily/Standup.md'])).template.name).toBe('Daily/Standup');
    });

    it('answers a missing template as the operation failing and a missing folder as an empty list', async () => {
      expect(await read('templates.get', ['Nope'])).toMatchObject({ success: false, code: 'NOT_FOUND', error: expect.stringContaining('"Nope"') });
      fs.rmSync(path.join(fx.vault, 'Templates'), { recursive: true });
      value(await fx.call('vault_reindex', {}));
      expect(await read('templates.get')).toMatchObject({ success: true, templates: [] });
    });

    it('reads the templates folder from the vault setting templates_folder', async () => {
      fx.put('Snippets/Idea.md', 'idea\n');
      value(await fx.call('vault_reindex', {}));
      // The settings live in the planning database, made on first use.
      value(await fx.call('vault_list_tasks', {}));
      await planningSql(fx, `INSERT INTO vault_settings (key, value) VALUES ('templates_folder', '"Snippets"')`);
      expect((await read('templates.get')).templates.map((t: { name: string }) => t.name)).toEqual(['Idea']);
    });
  });

  describe('notes.applyTemplate', () => {
    it('fills the placeholders, merges the front matter under the note and appends the body, after a body diff', async () => {
      const id = await idOf('Tagged');
      const r = await write('notes.applyTemplate', [{ noteId: id, template: 'Meeting Notes' }]);
      expect(r).toMatchObject({ success: true, note: { id, path: 'Tagged.md', title: 'Tagged', file_type: 'markdown' } });
      const text = fx.read('Tagged.md');
      expect(text).toMatch(/^---\nstatus: draft\ntype: meeting\n---\nExisting text\.\n\n# Tagged\nDate: \d{4}-\d{2}-\d{2} at \d{2}:\d{2}\n## Agenda\n$/);
      const q = fx.prompter.asked.at(-1)!;
      expect(q.preview!.kind).toBe('diff');
      expect(q.preview!.text).toMatch(
        /^notes\.applyTemplate \(note edit: asked every time\)\nTemplate Meeting Notes \(Templates\/Meeting Notes\.md\) applied to Tagged\.md:\n/,
      );
      expect(q.preview!.text).toContain(' status: draft\n+type: meeting\n');
      expect(q.preview!.text).toContain('+# Tagged\n');
      // The note gets the date and time the preview showed.
      expect(text).toContain(/\n\+(Date: [^\n]+)\n/.exec(q.preview!.text)![1]);
      // The index has the new text: the note is found by a word of the template.
      expect(value(await fx.call('vault_search_notes', { query: 'agenda' })).results.map((h: { path: string }) => h.path)).toContain('Tagged.md');
    });

    it("gives an empty note the template as its body and keeps a note's front matter block as written when it gains no key", async () => {
      await write('notes.applyTemplate', [{ noteId: 'Empty', template: 'Meeting Notes' }]);
      expect(fx.read('Empty.md')).toMatch(/^---\nstatus: open\ntype: meeting\n---\n# Empty\nDate: /);
      fx.put('Kept.md', '---\ntitle:   Kept   \n---\nbody');
      value(await fx.call('vault_reindex', {}));
      await write('notes.applyTemplate', [{ noteId: 'Kept.md', template: 'daily/standup' }]);
      expect(fx.read('Kept.md')).toBe('---\ntitle:   Kept   \n---\nbody\n\nYesterday / today / blockers\n');
    });

    it('refuses a filed file, an unknown note or template and the template itself before anyone is asked', async () => {
      expect(await refused('notes.applyTemplate', [{ noteId: 'scan.pdf', template: 'Meeting Notes' }])).toMatchObject({
        code: 'VALIDATION',
        message: expect.stringContaining('file_type: pdf'),
      });
      expect((await refused('notes.applyTemplate', [{ noteId: 'Nowhere', template: 'Meeting Notes' }])).code).toBe('NOT_FOUND');
      expect((await refused('notes.applyTemplate', [{ noteId: 'Meeting', template: 'Nope' }])).code).toBe('NOT_FOUND');
      expect((await refused('notes.applyTemplate', [{ noteId: 'Plan', template: 'Meeting Notes' }])).code).toBe('VALIDATION');
      expect((await refused('notes.applyTemplate', [{ noteId: 'Meeting' }])).message).toMatch(/template must be a non-empty text/);
      expect(fx.prompter.asked).toHaveLength(0);
      const self = value(
        await fx.call('vault_desktop_write', { operation: 'notes.applyTemplate', args: [{ noteId: 'Templates/Meeting Notes.md', template: 'Meeting Notes' }] }),
      );
      expect(self).toMatchObject({ success: false, error: expect.stringContaining('is the template itself') });
    });

    it('refuses to write when the note changed after the preview was shown, and keeps that change', async () => {
      const asked = deferred();
      const release = deferred<'allow-once'>();
      (fx.prompter as any).ask = async () => {
        asked.resolve();
        return release.promise;
      };
      const call = fx.call('vault_desktop_write', { operation: 'notes.applyTemplate', args: [{ noteId: 'Meeting', template: 'Meeting Notes' }] });
      await asked.promise;
      fx.put('Meeting.md', '# Decisions\nShip on Monday.\n');
      release.resolve('allow-once');
      expect(value(await call)).toMatchObject({ success: false, code: 'CONFLICT', error: expect.stringContaining('changed after the preview was shown') });
      expect(fx.read('Meeting.md')).toBe('# Decisions\nShip on Monday.\n');
    });
  });

  describe('notes.importFiles', () => {
    const outside = (rel: string, content: string | Buffer) => {
      const p = path.join(fx.root, rel);
      fs.mkdirSync(path.dirname(p), { recursive: true });
      fs.writeFileSync(p, content);
      return rel;
    };

    it('copies workspace files into a vault folder it creates, never over a name that is taken, and indexes them', async () => {
      outside('inbox/report.pdf', Buffer.from('%PDF-1.4 report'));
      outside('inbox/photo.png', Buffer.from('png bytes'));
      outside('other/report.pdf', Buffer.from('%PDF-1.4 second'));
      outside('inbox/Notes.md', '# Imported\n#imported\n');
      fx.put('Imports/photo.png', Buffer.from('already here'));
      value(await fx.call('vault_reindex', {}));
      const progress: unknown[] = [];
      const r = value(
        await fx.kernel.invoke({
          tool: 'vault_desktop_write',
          args: {
            operation: 'notes.importFiles',
            args: [{ sourcePaths: ['inbox/report.pdf', 'inbox/photo.png', 'other/report.pdf', 'inbox/Notes.md'], folder: 'Imports' }],
          },
          caller: { kind: 'agent' },
          onProgress: (u) => progress.push(u),
        }),
      );
      expect(r.success).toBe(true);
      expect(r.files.map((f: { path: string; file_type: string }) => [f.path, f.file_type])).toEqual([
        ['Imports/report.pdf', 'pdf'],
        ['Imports/photo 2.png', 'image'],
        ['Imports/report 2.pdf', 'pdf'],
        ['Imports/Notes.md', 'markdown'],
      ]);
      for (const f of r.files) expect(f.id).toMatch(/^[0-9a-f]{16}$/);
      expect(r.files[3].title).toBe('Notes');
      expect(fx.read('Imports/photo.png')).toBe('already here');
      expect(fx.read('Imports/photo 2.png')).toBe('png bytes');
      expect(fx.read('Imports/report 2.pdf')).toBe('%PDF-1.4 second');
      expect(value(await fx.call('vault_search_notes', { query: 'imported' })).results.map((h: { path: string }) => h.path)).toEqual(['Imports/Notes.md']);
      expect(lastPreview()).toEqual({
        kind: 'text',
        text: [
          'notes.importFiles (write)',
          'Copies 4 files (60 bytes) into the vault folder Imports; nothing there is replaced.',
          'copy inbox/report.pdf -> Imports/report.pdf (15 bytes)',
          'copy inbox/photo.png -> Imports/photo 2.png (9 bytes)',
          'copy other/report.pdf -> Imports/report 2.pdf (15 bytes)',
          'copy inbox/Notes.md -> Imports/Notes.md (21 bytes)',
        ].join('\n'),
      });
      expect(progress).toEqual([
        { progress: 1, total: 4, message: 'copied inbox/report.pdf to Imports/report.pdf' },
        { progress: 2, total: 4, message: 'copied inbox/photo.png to Imports/photo 2.png' },
        { progress: 3, total: 4, message: 'copied other/report.pdf to Imports/report 2.pdf' },
        { progress: 4, total: 4, message: 'copied inbox/Notes.md to Imports/Notes.md' },
      ]);
    });

    it('copies into the vault root by default, names a source already in the vault, and says which folder it creates', async () => {
      outside('loose.png', Buffer.from('x'));
      const r = await write('notes.importFiles', [{ sourcePaths: ['loose.png', 'vault/scan.pdf'] }]);
      expect(r.files.map((f: { path: string }) => f.path)).toEqual(['loose.png', 'scan 2.pdf']);
      expect(lastPreview().text).toContain('copy vault/scan.pdf -> scan 2.pdf (13 bytes) (already in the vault as scan.pdf: this makes a second copy)');
      outside('more.png', Buffer.from('y'));
      await write('notes.importFiles', [{ sourcePaths: ['more.png'], folder: 'New/Deep' }]);
      expect(lastPreview().text).toContain('\nCreates the folder New/Deep.\n');
      expect(fx.read('New/Deep/more.png')).toBe('y');
    });

    it('refuses paths outside the root, in .git or kernel state, folders, missing files and kinds the vault does not hold, before anyone is asked', async () => {
      outside('.git/config', '[core]\n');
      outside('.git/logo.png', 'png');
      outside('page.html', '<p>plain</p>');
      outside('dir/a.png', 'a');
      const refusedWith = async (sourcePaths: string[]) => refused('notes.importFiles', [{ sourcePaths }]);
      expect((await refusedWith(['../outside.png'])).code).toBe('PATH_OUTSIDE_ROOT');
      expect((await refusedWith(['.git/config'])).code).toBe('PATH_PROTECTED');
      expect((await refusedWith(['.git/logo.png'])).code).toBe('PATH_PROTECTED');
      expect((await refusedWith([path.join(fx.dataDir, 'kernel.sqlite')])).code).toMatch(/PATH_OUTSIDE_ROOT|PATH_PROTECTED/);
      expect(await refusedWith(['dir'])).toMatchObject({ code: 'VALIDATION', message: expect.stringContaining('is a directory, not a file') });
      expect((await refusedWith(['missing.png'])).code).toBe('NOT_FOUND');
      expect((await refusedWith(['page.html'])).message).toMatch(/not a kind of file the vault holds/);
      expect((await refusedWith(['dir/a.png', 'dir/a.png'])).message).toMatch(/listed twice/);
      expect((await refused('notes.importFiles', [{ sourcePaths: ['dir/a.png'], folder: '../x' }])).code).toBe('PATH_OUTSIDE_ROOT');
      expect(fx.prompter.asked).toHaveLength(0);
    });

    it('refuses more than 20 files or more than 50 MiB in one call, saying the cap', async () => {
      const many = Array.from({ length: 21 }, (_, i) => outside(`many/${i}.png`, 'x'));
      expect(await refused('notes.importFiles', [{ sourcePaths: many }])).toMatchObject({
        code: 'VALIDATION',
        message: expect.stringContaining('21 files is more than 20 in one call'),
      });
      const big = path.join(fx.root, 'big');
      fs.mkdirSync(big);
      for (const n of ['a', 'b']) {
        // Sparse files: 26 MiB each without writing them.
        const fd = fs.openSync(path.join(big, `${n}.mp4`), 'w');
        fs.ftruncateSync(fd, 26 * 1024 * 1024);
        fs.closeSync(fd);
      }
      expect(await refused('notes.importFiles', [{ sourcePaths: ['big/a.mp4', 'big/b.mp4'] }])).toMatchObject({
        code: 'VALIDATION',
        message: expect.stringContaining('more than 50.0 MB; import them in smaller batches'),
      });
      expect(fx.prompter.asked).toHaveLength(0);
    });

    it('copies nothing when a target name is taken after the preview was shown', async () => {
      outside('pic.png', Buffer.from('agent'));
      const asked = deferred();
      const release = deferred<'allow-once'>();
      (fx.prompter as any).ask = async () => {
        asked.resolve();
        return release.promise;
      };
      const call = fx.call('vault_desktop_write', { operation: 'notes.importFiles', args: [{ sourcePaths: ['pic.png'] }] });
      await asked.promise;
      fx.put('pic.png', Buffer.from('person'));
      release.resolve('allow-once');
      expect(value(await call)).toMatchObject({
        success: false,
        code: 'CONFLICT',
        error: expect.stringContaining('"pic.png" appeared after the preview was shown'),
      });
      expect(fx.read('pic.png')).toBe('person');
      expect(fs.existsSync(path.join(fx.vault, 'pic 2.png'))).toBe(false);
    });
  });
});
