import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { atTeardown } from '../../helpers/cleanup.js';
import { nth } from '../../helpers/nth.js';
import { deferred } from '../../helpers/wait.js';
import { PLUGINS, planningSql, value, vaultKernel, type VaultFixture, bridgeRefusal } from './helpers.js';

/** The vault kernel with the calendar pack loaded beside it (local calendar in UTC). */
async function withCalendar(files: Record<string, string | Buffer>): Promise<VaultFixture> {
  const fx = await vaultKernel({ files });
  const statuses = await fx.kernel.loadPacks([{ dir: PLUGINS, source: 'builtin', only: ['vault', 'calendar'] }]);
  const cal = statuses.find((s) => s.id === 'calendar');
  if (cal?.status !== 'loaded') throw new Error(`calendar did not load: ${cal?.error ?? 'not found'}`);
  fx.kernel.packs.setConfig('calendar', { timeZone: 'UTC' });
  return fx;
}

const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
const FILES = {
  'Home.md': '# Home\n',
  'Specs/Spec.md': '# Spec\nSee [[Home]].\n',
  'Files/diagram.png': PNG,
  'Files/report.pdf': '%PDF-1.4 report',
};

const read = (fx: VaultFixture, operation: string, args: unknown[]) => fx.call('vault_desktop_read', { operation, args });
const write = (fx: VaultFixture, operation: string, args: unknown[]) => fx.call('vault_desktop_write', { operation, args });

describe('project links through the desktop bridge', () => {
  let fx: VaultFixture;
  let project: { id: string; name: string };
  let ids: Record<string, string>;
  let eventId: string;
  beforeEach(async () => {
    fx = await withCalendar(FILES);
    project = value(await fx.call('vault_create_project', { name: 'Launch' }));
    ids = {};
    for (const folder of ['', 'Specs', 'Files'])
      for (const e of value(await fx.call('vault_list_folder', { path: folder })).entries) if (e.id) ids[e.path] = e.id;
    eventId = value(await fx.call('create_calendar_event', { title: 'Kickoff', start: '2026-06-01T10:00:00Z', end: '2026-06-01T11:00:00Z' })).id;
    fx.prompter.asked.length = 0;
  });
  afterEach(() => fx.close());

  const link = async (itemType: string, itemId: string) => value(await write(fx, 'tasks.linkProjectItem', [{ projectId: project.id, itemType, itemId }]));

  it('links a note, a file and an event, and reads them back as contents, raw rows, per item and as linked_counts', async () => {
    const note = await link('note', 'Specs/Spec.md');
    expect(note).toMatchObject({
      success: true,
      link: { project_id: project.id, item_type: 'note', item_id: ids['Specs/Spec.md'], pinned: false },
      item: { item_type: 'note', id: ids['Specs/Spec.md'], path: 'Specs/Spec.md', title: 'Spec', file_type: 'markdown' },
    });
    await link('file', ids['Files/report.pdf']!);
    await link('calendar_event', eventId);

    const contents = value(await read(fx, 'tasks.listProjectContents', ['Launch']));
    expect(contents.project).toEqual({ id: project.id, name: 'Launch', home_note_id: null });
    expect(contents.notes).toEqual([{ id: ids['Specs/Spec.md'], path: 'Specs/Spec.md', title: 'Spec', file_type: 'markdown', pinned: false }]);
    expect(contents.files).toEqual([{ id: ids['Files/report.pdf'], path: 'Files/report.pdf', title: 'report.pdf', file_type: 'pdf', pinned: false }]);
    expect(contents.events).toEqual([{ id: eventId, title: 'Kickoff', start: '2026-06-01T10:00:00Z', end: '2026-06-01T11:00:00Z', pinned: false }]);

    const rows = value(await read(fx, 'tasks.listProjectLinks', [project.id])).links;
    expect(rows.map((r: any) => [r.item_type, r.item_id, r.pinned])).toEqual([
      ['note', ids['Specs/Spec.md'], false],
      ['file', ids['Files/report.pdf'], false],
      ['calendar_event', eventId, false],
    ]);
    expect(rows[0]).toEqual({ project_id: project.id, item_type: 'note', item_id: ids['Specs/Spec.md'], pinned: false, created_at: expect.any(String) });

    expect(value(await read(fx, 'tasks.listForItem', ['note', ids['Specs/Spec.md']])).projects).toEqual([{ id: project.id, name: 'Launch', pinned: false }]);
    expect(value(await read(fx, 'tasks.listForItem', ['calendar_event', eventId])).projects).toHaveLength(1);
    expect(value(await read(fx, 'tasks.listForItem', ['file', ids['Files/diagram.png']])).projects).toEqual([]);
    expect(value(await read(fx, 'tasks.listForItem', ['task', 'x']))).toMatchObject({ success: false, code: 'VALIDATION' });

    const listed = value(await fx.call('vault_list_projects', {})).projects.find((p: any) => p.id === project.id);
    expect(listed.linked_counts).toEqual({ notes: 1, files: 1, events: 1 });
  });

  it('shows a new link as field rows and refuses a missing item, a wrong type or a second identical link before anyone is asked', async () => {
    await link('note', 'Home');
    expect(nth(fx.prompter.asked, 0).preview).toEqual({
      kind: 'fields',
      text: `tasks.linkProjectItem (write)\nProject Launch (id ${project.id}): a new link\nitem_type: (not set) -> note\nitem: (not set) -> Home (Home.md, id ${ids['Home.md']})\npinned: (not set) -> false`,
    });
    fx.prompter.asked.length = 0;
    const twice = bridgeRefusal(await write(fx, 'tasks.linkProjectItem', [{ projectId: project.id, itemType: 'note', itemId: ids['Home.md'] }]));
    expect(twice.code).toBe('CONFLICT');
    expect(twice.message).toMatch(/already linked/);
    const refused: Array<[Record<string, unknown>, string]> = [
      [{ projectId: project.id, itemType: 'note', itemId: 'Nowhere' }, 'NOT_FOUND'],
      [{ projectId: project.id, itemType: 'note', itemId: 'Files/report.pdf' }, 'VALIDATION'],
      [{ projectId: project.id, itemType: 'file', itemId: 'Home.md' }, 'VALIDATION'],
      [{ projectId: project.id, itemType: 'calendar_event', itemId: 'local:nope' }, 'NOT_FOUND'],
      [{ projectId: project.id, itemType: 'task', itemId: 'x' }, 'VALIDATION'],
      [{ projectId: 'no such project', itemType: 'note', itemId: 'Home' }, 'NOT_FOUND'],
      [{ projectId: project.id, itemType: 'note' }, 'VALIDATION'],
    ];
    for (const [args, code] of refused) expect([args, bridgeRefusal(await write(fx, 'tasks.linkProjectItem', [args])).code]).toEqual([args, code]);
    expect(fx.prompter.asked).toHaveLength(0);
  });

  it('puts pinned links first, showing pinned as a field change', async () => {
    await link('note', 'Home');
    await link('note', 'Specs/Spec.md');
    fx.prompter.asked.length = 0;
    const r = value(await write(fx, 'tasks.setProjectLinkPinned', [{ projectId: project.id, itemId: 'Specs/Spec.md', pinned: true }]));
    expect(r.link).toMatchObject({ item_id: ids['Specs/Spec.md'], pinned: true });
    expect(nth(fx.prompter.asked, 0).preview).toEqual({
      kind: 'fields',
      text: `tasks.setProjectLinkPinned (write)\nProject Launch (id ${project.id}): the link to Spec (Specs/Spec.md, id ${ids['Specs/Spec.md']})\npinned: false -> true`,
    });
    const notes = value(await read(fx, 'tasks.listProjectContents', [project.id])).notes;
    expect(notes.map((n: any) => [n.title, n.pinned])).toEqual([
      ['Spec', true],
      ['Home', false],
    ]);
    fx.prompter.asked.length = 0;
    expect(bridgeRefusal(await write(fx, 'tasks.setProjectLinkPinned', [{ projectId: project.id, itemId: ids['Files/report.pdf'], pinned: true }])).code).toBe(
      'NOT_FOUND',
    );
    expect(bridgeRefusal(await write(fx, 'tasks.setProjectLinkPinned', [{ projectId: project.id, itemId: ids['Home.md'], pinned: 'yes' }])).code).toBe(
      'VALIDATION',
    );
    expect(fx.prompter.asked).toHaveLength(0);
  });

  it('unlinks after asking every time, saying only the link is lost; the note stays', async () => {
    fx.prompter.answer('allow-forever');
    await link('note', 'Home');
    // The standing approval covers the next link, not an unlink.
    await link('note', 'Specs/Spec.md');
    expect(fx.prompter.asked).toHaveLength(1);
    fx.prompter.asked.length = 0;
    const r = value(await write(fx, 'tasks.unlinkProjectItem', [{ projectId: project.id, itemType: 'note', itemId: 'Home' }]));
    expect(r).toMatchObject({ success: true, unlinked: true, link: { item_id: ids['Home.md'] } });
    const q = nth(fx.prompter.asked, 0);
    expect(q.standingApprovalAllowed).toBe(false);
    expect(q.preview!.kind).toBe('delete');
    expect(q.preview!.text).toContain(`Removes the link between the project Launch (id ${project.id}) and the note Home (Home.md, id ${ids['Home.md']}).`);
    expect(q.preview!.text).toContain('Only the link is lost: the note itself stays.');
    expect(fx.read('Home.md')).toBe('# Home\n');
    expect(fx.prompter.asked).toHaveLength(1);
    expect(value(await read(fx, 'tasks.listProjectLinks', [project.id])).links.map((l: any) => l.item_id)).toEqual([ids['Specs/Spec.md']]);
    fx.prompter.asked.length = 0;
    expect(bridgeRefusal(await write(fx, 'tasks.unlinkProjectItem', [{ projectId: project.id, itemType: 'note', itemId: 'Home' }])).code).toBe('NOT_FOUND');
    expect(fx.prompter.asked).toHaveLength(0);
  });

  it('reports a linked note that no longer exists as missing, and still unlinks it', async () => {
    await link('note', 'Specs/Spec.md');
    value(await fx.call('vault_delete_note', { note: 'Specs/Spec.md' }));
    const contents = value(await read(fx, 'tasks.listProjectContents', [project.id]));
    expect(contents.notes).toEqual([{ id: ids['Specs/Spec.md'], path: null, title: null, missing: true, pinned: false }]);
    value(await write(fx, 'tasks.unlinkProjectItem', [{ projectId: project.id, itemType: 'note', itemId: ids['Specs/Spec.md'] }]));
    expect(fx.prompter.asked.at(-1)!.preview!.text).toContain(`(missing note ${ids['Specs/Spec.md']})`);
  });

  it("sets and clears the project's home note, showing the note's title, and refuses a file that is not a note", async () => {
    value(await write(fx, 'tasks.setProjectHomeNote', [{ projectId: 'Launch', noteId: 'Home' }]));
    expect(nth(fx.prompter.asked, 0).preview!.text).toBe(
      `tasks.setProjectHomeNote (write)\nProject Launch (id ${project.id})\nhome_note_id: (not set) -> Home (Home.md, id ${ids['Home.md']})`,
    );
    expect(value(await fx.call('vault_get_project', { project: project.id })).home_note_id).toBe(ids['Home.md']);
    expect(value(await read(fx, 'tasks.listProjectContents', [project.id])).home_note).toMatchObject({ id: ids['Home.md'], title: 'Home' });
    const cleared = value(await write(fx, 'tasks.setProjectHomeNote', [{ projectId: project.id, noteId: null }]));
    expect(cleared).toMatchObject({ project: { home_note_id: null }, home_note: null });
    expect(fx.prompter.asked.at(-1)!.preview!.text).toContain(`home_note_id: Home (Home.md, id ${ids['Home.md']}) -> (not set)`);
    fx.prompter.asked.length = 0;
    expect(bridgeRefusal(await write(fx, 'tasks.setProjectHomeNote', [{ projectId: project.id, noteId: 'Files/report.pdf' }])).code).toBe('VALIDATION');
    expect(bridgeRefusal(await write(fx, 'tasks.setProjectHomeNote', [{ projectId: project.id, noteId: 'Nowhere' }])).code).toBe('NOT_FOUND');
    expect(bridgeRefusal(await write(fx, 'tasks.setProjectHomeNote', [{ projectId: project.id }])).code).toBe('VALIDATION');
    expect(fx.prompter.asked).toHaveLength(0);
  });
});

describe('project links without the calendar pack', () => {
  it('refuses linking an event saying the calendar pack is not loaded, and reports linked events as unavailable', async () => {
    const fx = await vaultKernel({ files: { 'Home.md': '# Home\n' } });
    try {
      const project = value(await fx.call('vault_create_project', { name: 'Solo' }));
      fx.prompter.asked.length = 0;
      const e = bridgeRefusal(await write(fx, 'tasks.linkProjectItem', [{ projectId: project.id, itemType: 'calendar_event', itemId: 'local:x' }]));
      expect(e.message).toMatch(/the calendar pack is not loaded/);
      expect(fx.prompter.asked).toHaveLength(0);
      await planningSql(
        fx,
        `INSERT INTO planning_project_links (project_id, item_type, item_id, pinned, created_at) VALUES (?, 'calendar_event', 'local:x', false, ?)`,
        [project.id, new Date().toISOString()],
      );
      expect(value(await read(fx, 'tasks.listProjectContents', [project.id])).events).toEqual([
        { id: 'local:x', title: null, unavailable: 'calendar pack not loaded', pinned: false },
      ]);
    } finally {
      await fx.close();
    }
  });
});

describe('capturing a page and importing files into a project', () => {
  let fx: VaultFixture;
  let project: { id: string };
  let site: string;
  beforeAll(async () => {
    const server = http.createServer((req, res) => {
      if (req.url === '/post') res.writeHead(200, { 'content-type': 'text/html' }).end('<title>Release notes: v2</title>');
      else res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    atTeardown(() => {
      server.closeAllConnections();
      return new Promise((r) => server.close(r));
    });
    site = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // The test page is served on loopback, which the bridge fetches only when the setting allows it.
    fx = await vaultKernel({ files: { 'Projects/Launch/a.pdf': '%PDF old' }, config: { fetch_private_addresses: true } });
    project = value(await fx.call('vault_create_project', { name: 'Launch' }));
  });
  afterAll(() => fx.close());
  beforeEach(() => void (fx.prompter.asked.length = 0));

  it('captures a page as a note in the project folder titled by the page, linked to the project', async () => {
    const r = value(await write(fx, 'tasks.captureUrlToProject', [{ projectId: 'Launch', url: `${site}/post` }]));
    expect(r.note).toEqual({ id: expect.any(String), path: 'Projects/Launch/Release notes- v2.md', title: 'Release notes: v2' });
    expect(r.link).toMatchObject({ project_id: project.id, item_type: 'note', item_id: r.note.id });
    expect(r.title_fetched).toBe(true);
    const text = fx.read('Projects/Launch/Release notes- v2.md');
    expect(text).toContain(`source: ${site}/post`);
    expect(text).toMatch(new RegExp(`\\n${site.replace(/[.:/]/g, '\\$&')}/post\\n\\nFetched \\d{4}-\\d{2}-\\d{2}T`));
    const q = nth(fx.prompter.asked, 0);
    expect(q.preview!.text).toContain('This fetches from the network (the address given).');
    expect(q.preview!.text).toContain(`Fetches ${site}/post`);
    expect(q.preview!.text).toContain('folder: (not set) -> Projects/Launch');
  });

  it('titles the note by host and path when the page cannot be fetched, and says so', async () => {
    const r = value(await write(fx, 'tasks.captureUrlToProject', [{ projectId: project.id, url: `${site}/gone` }]));
    expect(r.note.title).toBe(`${new URL(site).host}/gone`);
    expect(r.warning).toMatch(/could not be fetched \(the server answered HTTP 404\)/);
  });

  it('copies files into Projects/<name>/, never overwriting, indexes and links each (file or note)', async () => {
    fs.mkdirSync(path.join(fx.root, 'incoming'));
    fs.writeFileSync(path.join(fx.root, 'incoming', 'a.pdf'), '%PDF new');
    fs.writeFileSync(path.join(fx.root, 'incoming', 'Minutes.md'), '# Minutes\n[[Home]]\n');
    const progress: unknown[] = [];
    const r = value(
      await fx.kernel.invoke({
        tool: 'vault_desktop_write',
        args: { operation: 'tasks.importFilesToProject', args: [{ projectId: project.id, sourcePaths: ['incoming/a.pdf', 'incoming/Minutes.md'] }] },
        caller: { kind: 'agent' },
        onProgress: (p: unknown) => progress.push(p),
      } as any),
    );
    expect(r.files.map((f: any) => [f.source, f.path, f.file_type])).toEqual([
      ['incoming/a.pdf', 'Projects/Launch/a 2.pdf', 'pdf'],
      ['incoming/Minutes.md', 'Projects/Launch/Minutes.md', 'markdown'],
    ]);
    expect(r.links.map((l: any) => [l.item_type, l.item_id])).toEqual([
      ['file', r.files[0].id],
      ['note', r.files[1].id],
    ]);
    expect(progress).toEqual([
      { progress: 1, total: 2, message: 'copied incoming/a.pdf to Projects/Launch/a 2.pdf' },
      { progress: 2, total: 2, message: 'copied incoming/Minutes.md to Projects/Launch/Minutes.md' },
    ]);
    expect(fx.read('Projects/Launch/a.pdf')).toBe('%PDF old');
    expect(fx.read('Projects/Launch/a 2.pdf')).toBe('%PDF new');
    expect(fs.existsSync(path.join(fx.root, 'incoming', 'a.pdf'))).toBe(true);
    const q = nth(fx.prompter.asked, 0);
    expect(q.preview!.text).toContain('incoming/a.pdf -> Projects/Launch/a 2.pdf (pdf, 8 bytes)');
    expect(q.preview!.text).toContain('no file in the vault is replaced');
    const listed = value(await fx.call('vault_list_projects', {})).projects.find((p: any) => p.id === project.id);
    expect(listed.linked_counts).toMatchObject({ files: 1 });
  });

  it('imports a plain text file as a note: its text unchanged under the name with .md, linked as a note and searchable', async () => {
    fs.mkdirSync(path.join(fx.root, 'incoming'), { recursive: true });
    fs.writeFileSync(path.join(fx.root, 'incoming', 'call notes.txt'), 'Budget agreed with the printer.\n');
    const r = value(await write(fx, 'tasks.importFilesToProject', [{ projectId: project.id, sourcePaths: ['incoming/call notes.txt'] }]));
    expect(r.files.map((f: any) => [f.source, f.path, f.file_type, f.title])).toEqual([
      ['incoming/call notes.txt', 'Projects/Launch/call notes.md', 'markdown', 'call notes'],
    ]);
    expect(r.links.map((l: any) => l.item_type)).toEqual(['note']);
    expect(fx.read('Projects/Launch/call notes.md')).toBe('Budget agreed with the printer.\n');
    expect(nth(fx.prompter.asked, 0).preview!.text).toContain('incoming/call notes.txt -> Projects/Launch/call notes.md (markdown, 32 bytes)');
    expect(value(await fx.call('vault_search_notes', { query: 'printer' })).results.map((h: any) => h.path)).toEqual(['Projects/Launch/call notes.md']);
  });

  it('copies nothing when a name the preview showed was taken before the person answered', async () => {
    fs.mkdirSync(path.join(fx.root, 'later'), { recursive: true });
    fs.writeFileSync(path.join(fx.root, 'later', 'plan.pdf'), '%PDF plan');
    const asked = deferred();
    const release = deferred<'allow-once'>();
    const ask = fx.prompter.ask.bind(fx.prompter);
    (fx.prompter as any).ask = async () => {
      asked.resolve();
      return release.promise;
    };
    try {
      const call = write(fx, 'tasks.importFilesToProject', [{ projectId: project.id, sourcePaths: ['later/plan.pdf'] }]);
      await asked.promise;
      fx.put('Projects/Launch/plan.pdf', '%PDF someone else');
      release.resolve('allow-once');
      expect(value(await call)).toMatchObject({ success: false, code: 'CONFLICT', error: expect.stringMatching(/changed after the preview/) });
    } finally {
      (fx.prompter as any).ask = ask;
    }
    expect(fx.read('Projects/Launch/plan.pdf')).toBe('%PDF someone else');
    expect(fs.existsSync(path.join(fx.vault, 'Projects/Launch/plan 2.pdf'))).toBe(false);
  });

  it('refuses kernel state, .git, paths outside the root, unknown kinds and too many files before anyone is asked', async () => {
    fs.mkdirSync(path.join(fx.root, '.git'), { recursive: true });
    fs.writeFileSync(path.join(fx.root, '.git', 'logo.png'), PNG);
    fs.writeFileSync(path.join(fx.root, 'page.html'), '<p>text</p>');
    const refused = async (sourcePaths: string[]) =>
      bridgeRefusal(await write(fx, 'tasks.importFilesToProject', [{ projectId: project.id, sourcePaths }])).code;
    expect(await refused(['.git/logo.png'])).toBe('PATH_PROTECTED');
    expect(await refused(['../outside.png'])).toBe('PATH_OUTSIDE_ROOT');
    expect(await refused([path.join(fx.dataDir, 'kernel.sqlite')])).toMatch(/PATH_OUTSIDE_ROOT|PATH_PROTECTED/);
    expect(await refused(['page.html'])).toBe('VALIDATION');
    expect(await refused(Array.from({ length: 21 }, (_, i) => `f${i}.png`))).toBe('VALIDATION');
    expect(await refused([])).toBe('VALIDATION');
    expect(await refused(['missing.png'])).toBe('NOT_FOUND');
    expect(fx.prompter.asked).toHaveLength(0);
  });
});
