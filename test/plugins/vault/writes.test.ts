import * as fs from 'node:fs';
import * as path from 'node:path';
import { nth } from '../../helpers/nth.js';
import { deferred } from '../../helpers/wait.js';
import { error, value, vaultKernel, type VaultFixture } from './helpers.js';

describe('vault write tools', () => {
  let fx: VaultFixture;
  beforeEach(async () => {
    fx = await vaultKernel({
      files: {
        'Meeting.md': '---\ntags: [work]\n---\n# Decisions\nShip on Friday.\n',
        'Plan.md': 'See [[Meeting]] and [[Meeting#Decisions|the decisions]] and ![[Meeting]].\n',
        'Other/Notes.md': 'Path link [[Meeting.md]] and [[Projects/Road]]\n',
        'Projects/Road.md': 'road #work\n',
        'Projects/Spec.md': 'spec\n',
        'scan.pdf': Buffer.from('%PDF-1.4 fake'),
      },
    });
  });
  afterEach(async () => fx.close());

  it('previews a body edit with the whole body before and after (front matter left out), for a review in the note; an append as the finished text', async () => {
    value(await fx.call('vault_update_note', { note: 'Meeting', content: '# Decisions\nShip on Saturday.\n' }));
    const id = (value(await fx.call('vault_read_note', { note: 'Meeting' })) as { id: string }).id;
    expect(nth(fx.prompter.asked, 0).preview).toMatchObject({
      kind: 'diff',
      document: { type: 'note', id, title: 'Meeting', path: 'Meeting.md', before: '# Decisions\nShip on Friday.\n', after: '# Decisions\nShip on Saturday.\n' },
    });
    value(await fx.call('vault_update_note', { note: 'Meeting', append: 'Retro on Monday.\n' }));
    expect(nth(fx.prompter.asked, 1).preview?.document?.after).toBe('# Decisions\nShip on Saturday.\nRetro on Monday.\n');
    value(await fx.call('vault_create_journal_entry', { date: '2026-12-01', content: 'Cold.\n' }));
    value(await fx.call('vault_update_journal_entry', { date: '2026-12-01', append: 'Snow later.\n' }));
    expect(fx.prompter.asked.at(-1)!.preview?.document).toMatchObject({ type: 'journal', id: '2026-12-01', before: 'Cold.\n', after: 'Cold.\nSnow later.\n' });
  });

  it('creates a note after showing it as a diff, with folders, front matter and tags, and indexes it in the same step', async () => {
    const r = value(await fx.call('vault_create_note', { title: 'Sprint #4', folder: 'Sprints/2026', content: 'Goals: #ship it\n', tags: ['team'] }));
    expect(r).toMatchObject({ path: 'Sprints/2026/Sprint #4.md', title: 'Sprint #4', created: true, created_folders: ['Sprints', 'Sprints/2026'] });
    expect(fx.read('Sprints/2026/Sprint #4.md')).toBe('---\ntags:\n  - team\n---\nGoals: #ship it\n');
    const q = nth(fx.prompter.asked, 0);
    expect(q).toMatchObject({ danger: 'medium', effect: 'write', editable: true });
    expect(q.preview).toEqual({
      kind: 'diff',
      text: expect.stringContaining('+++ b/Sprints/2026/Sprint #4.md\n@@ -0,0 +1,5 @@\n+---\n+tags:\n+  - team\n+---\n+Goals: #ship it\n'),
    });
    const found = value(await fx.call('vault_search_notes', { query: 'goals' })).results;
    expect(found).toEqual([expect.objectContaining({ id: r.id, path: 'Sprints/2026/Sprint #4.md', tags: ['ship', 'team'] })]);
    expect(error(await fx.call('vault_create_note', { title: 'Meeting' })).code).toBe('CONFLICT');
    expect(error(await fx.call('vault_create_note', { title: 'a/b' })).code).toBe('VALIDATION');
    expect(error(await fx.call('vault_create_note', { title: '.hidden' })).code).toBe('VALIDATION');
    expect(error(await fx.call('vault_create_note', { title: 'x', folder: '../escape' })).code).toBe('PATH_OUTSIDE_ROOT');
  });

  it('asks before every note edit, even after an allow-session answer, and shows the body diff', async () => {
    fx.prompter.answer('allow-session', 'allow-session');
    value(await fx.call('vault_update_note', { note: 'Meeting', append: 'Retro on Monday.\n' }));
    value(await fx.call('vault_update_note', { note: 'Meeting', front_matter: { status: 'done', tags: null } }));
    expect(fx.prompter.asked.map((q) => [q.tool, q.standingApprovalAllowed])).toEqual([
      ['vault_update_note', false],
      ['vault_update_note', false],
    ]);
    expect(nth(fx.prompter.asked, 0).preview!.text).toContain(' Ship on Friday.\n+Retro on Monday.\n');
    expect(fx.read('Meeting.md')).toBe('---\nstatus: done\n---\n# Decisions\nShip on Friday.\nRetro on Monday.\n');
    expect(value(await fx.call('vault_read_note', { note: 'Meeting' })).tags).toEqual([]);
    // content replaces the body and keeps the front matter as it was written.
    value(await fx.call('vault_update_note', { note: 'Meeting', content: 'new body\n' }));
    expect(fx.read('Meeting.md')).toBe('---\nstatus: done\n---\nnew body\n');
    expect(error(await fx.call('vault_update_note', { note: 'Meeting' })).code).toBe('VALIDATION');
  });

  it('writes nothing when the person denies, and the edited text when the person edits before approving', async () => {
    fx.prompter.answer('deny-once');
    expect(error(await fx.call('vault_update_note', { note: 'Plan', content: 'gone' })).code).toBe('PERMISSION_DENIED');
    expect(fx.read('Plan.md')).toContain('[[Meeting]]');
    fx.prompter.answer({ edit: { note: 'Plan', content: 'as I want it\n' } }, 'allow-once');
    value(await fx.call('vault_update_note', { note: 'Plan', content: 'as the agent wrote it\n' }));
    expect(fx.read('Plan.md')).toBe('as I want it\n');
  });

  it('refuses a write when the person edited the note after the preview was shown, and keeps their edit', async () => {
    const asked = deferred();
    const release = deferred<'allow-once'>();
    (fx.prompter as any).ask = async () => {
      asked.resolve();
      return release.promise;
    };
    const call = fx.call('vault_update_note', { note: 'Meeting', append: 'agent line\n' });
    await asked.promise;
    fx.put('Meeting.md', '---\ntags: [work]\n---\n# Decisions\nThe person typed this meanwhile.\n');
    release.resolve('allow-once');
    const e = error(await call);
    expect(e).toMatchObject({ code: 'CONFLICT', message: expect.stringMatching(/changed after the preview/) });
    expect(fx.read('Meeting.md')).toContain('The person typed this meanwhile.');
    expect(fx.read('Meeting.md')).not.toContain('agent line');
  });

  it('refuses to read or update a filed file, naming its type', async () => {
    const read = error(await fx.call('vault_read_note', { note: 'scan.pdf' }));
    expect(read).toMatchObject({ code: 'VALIDATION', message: expect.stringMatching(/is a pdf file .*file_type: pdf/) });
    const update = error(await fx.call('vault_update_note', { note: 'scan.pdf', content: '# not a pdf' }));
    expect(update.code).toBe('VALIDATION');
    expect(update.message).toMatch(/pdf/);
    expect(fx.prompter.asked).toHaveLength(0);
    expect(fs.readFileSync(path.join(fx.vault, 'scan.pdf'), 'utf8')).toBe('%PDF-1.4 fake');
    // Filed files can still be renamed, moved and deleted.
    expect(value(await fx.call('vault_rename_note', { note: 'scan.pdf', new_title: 'Scanned receipt' })).path).toBe('Scanned receipt.pdf');
  });

  it('renames a note, keeps its id and rewrites every link that named it, as listed in the preview', async () => {
    const before = value(await fx.call('vault_read_note', { note: 'Meeting' }));
    const r = value(await fx.call('vault_rename_note', { note: 'Meeting', new_title: 'Weekly sync' }));
    expect(r).toMatchObject({ id: before.id, path: 'Weekly sync.md', previous_path: 'Meeting.md', links_rewritten: 4 });
    expect(fx.read('Plan.md')).toBe('See [[Weekly sync]] and [[Weekly sync#Decisions|the decisions]] and ![[Weekly sync]].\n');
    expect(fx.read('Other/Notes.md')).toBe('Path link [[Weekly sync.md]] and [[Projects/Road]]\n');
    expect(fs.existsSync(path.join(fx.vault, 'Meeting.md'))).toBe(false);
    const preview = nth(fx.prompter.asked, 0).preview!;
    expect(preview.kind).toBe('fields');
    expect(preview.text).toContain('path: Meeting.md -> Weekly sync.md');
    expect(preview.text).toContain('Links rewritten: 4 in 2 notes');
    expect(preview.text).toContain('Plan.md:1  [[Meeting#Decisions|the decisions]] -> [[Weekly sync#Decisions|the decisions]]');
    const after = value(await fx.call('vault_read_note', { note: 'Weekly sync' }));
    expect(after.backlinks.map((b: any) => b.path)).toEqual(['Other/Notes.md', 'Plan.md', 'Plan.md', 'Plan.md']);
    expect(error(await fx.call('vault_rename_note', { note: 'Plan', new_title: 'Weekly sync' })).code).toBe('CONFLICT');
  });

  it('moves a note to another folder and rewrites links that named its path', async () => {
    const r = value(await fx.call('vault_move_to_folder', { note: 'Projects/Road.md', folder: 'Archive/2025' }));
    expect(r).toMatchObject({ path: 'Archive/2025/Road.md', links_rewritten: 1 });
    expect(fx.read('Other/Notes.md')).toBe('Path link [[Meeting.md]] and [[Archive/2025/Road]]\n');
    expect(value(await fx.call('vault_read_note', { note: 'Road' })).path).toBe('Archive/2025/Road.md');
  });

  it('shows what a delete loses (size and the links that break) and always asks', async () => {
    fx.prompter.answer('allow-forever', 'allow-once');
    const r = value(await fx.call('vault_delete_note', { note: 'Meeting' }));
    expect(r).toMatchObject({ path: 'Meeting.md', deleted: true, broken_links: 4 });
    const q = nth(fx.prompter.asked, 0);
    expect(q).toMatchObject({ danger: 'dangerous', effect: 'delete', standingApprovalAllowed: false });
    expect(q.preview!.kind).toBe('delete');
    expect(q.preview!.text).toMatch(/^Deletes "Meeting\.md" \(markdown note, 49 bytes, id [0-9a-f]{16}\)\.\nLinks that will break: 4 in 2 notes:/);
    expect(q.preview!.text).toContain('Other/Notes.md:1  [[Meeting.md]]');
    expect(q.preview!.text).toContain('Plan.md:1  ![[Meeting]]');
    expect(fs.existsSync(path.join(fx.vault, 'Meeting.md'))).toBe(false);
    value(await fx.call('vault_delete_note', { note: 'Plan' }));
    expect(fx.prompter.asked).toHaveLength(2);
    const links = value(await fx.call('vault_read_note', { note: 'Other/Notes.md' })).links;
    expect(links.map((l: any) => l.status)).toEqual(['broken', 'resolved']);
  });

  it('creates, renames and deletes folders; a folder that is not empty needs recursive', async () => {
    expect(value(await fx.call('vault_create_folder', { path: 'Inbox/Later' })).created).toEqual(['Inbox', 'Inbox/Later']);
    expect(error(await fx.call('vault_create_folder', { path: 'Inbox' })).code).toBe('CONFLICT');
    const road = value(await fx.call('vault_read_note', { note: 'Projects/Road' }));
    const renamed = value(await fx.call('vault_rename_folder', { path: 'Projects', new_name: 'Work' }));
    expect(renamed).toMatchObject({ path: 'Work', notes_moved: 2, links_rewritten: 1 });
    expect(fx.read('Other/Notes.md')).toContain('[[Work/Road]]');
    expect(value(await fx.call('vault_read_note', { note: 'Work/Road' })).id).toBe(road.id);
    const refused = error(await fx.call('vault_delete_folder', { path: 'Work' }));
    expect(refused).toMatchObject({ code: 'VALIDATION', message: expect.stringMatching(/recursive: true/) });
    const r = value(await fx.call('vault_delete_folder', { path: 'Work', recursive: true }));
    expect(r).toMatchObject({ notes_deleted: 2, broken_links: 1 });
    const preview = fx.prompter.asked.at(-1)!.preview!;
    expect(preview.text).toContain('Notes and files lost: 2');
    expect(preview.text).toContain('Work/Road.md (markdown');
    expect(fs.existsSync(path.join(fx.vault, 'Work'))).toBe(false);
    value(await fx.call('vault_delete_folder', { path: 'Inbox/Later' }));
    expect(error(await fx.call('vault_delete_folder', { path: '.' })).code).toBe('VALIDATION');
  });

  it('removes an inline tag with the space that went with it: at a line’s end, mid-line, at its start, and a line of tags alone', async () => {
    fx.put('Tagged.md', '# Tagged\nPress kit #launch\nPlan #launch for Monday\n#launch first thing\n#launch\n(#launch) and #launchpad stay\n');
    value(await fx.call('vault_remove_tag', { note: 'Tagged', tag: 'launch' }));
    expect(fx.read('Tagged.md')).toBe('# Tagged\nPress kit\nPlan for Monday\nfirst thing\n() and #launchpad stay\n');
  });

  it('adds and removes tags (front matter and inline), and lists tags with their settings from the database', async () => {
    value(await fx.call('vault_add_tag', { note: 'Plan', tag: '#Planning/Q3' }));
    expect(fx.read('Plan.md')).toMatch(/^---\ntags:\n {2}- planning\/q3\n---\nSee/);
    expect(error(await fx.call('vault_add_tag', { note: 'Plan', tag: '123' })).code).toBe('VALIDATION');
    value(await fx.call('vault_remove_tag', { note: 'Projects/Road', tag: 'work' }));
    expect(fx.read('Projects/Road.md')).toBe('road\n');
    expect(error(await fx.call('vault_remove_tag', { note: 'Projects/Road', tag: 'work' })).code).toBe('NOT_FOUND');
    // Tag settings live in the vault's database (set by the desktop bridge in a later issue).
    const Database = (await import('better-sqlite3')).default;
    const db = new Database(fx.dbFile);
    db.prepare(`INSERT INTO tag_categories (name, sort_order) VALUES ('Areas', 1)`).run();
    db.prepare(`INSERT INTO tags (name, color, icon, sort_order, category_id) VALUES ('work', '#ff0000', 'briefcase', 2, 1)`).run();
    db.close();
    const tags = value(await fx.call('vault_get_tags', {})).tags;
    expect(tags).toEqual([
      { name: 'planning/q3', count: 1, color: null, icon: null, sort_order: 0, category_id: null, category_name: null },
      { name: 'work', count: 1, color: '#ff0000', icon: 'briefcase', sort_order: 2, category_id: 1, category_name: 'Areas' },
    ]);
  });

  it('saves an HTML artifact beside the note and embeds it, refusing more than 512 KB', async () => {
    const r = value(await fx.call('vault_add_html_artifact', { note: 'Projects/Spec', html: '<h1>Chart</h1>', title: 'Burn-down chart' }));
    expect(r).toMatchObject({ path: 'Projects/Spec.md', attachment: 'Projects/Spec - burn-down-chart.html' });
    expect(fx.read('Projects/Spec - burn-down-chart.html')).toBe('<h1>Chart</h1>');
    expect(fx.read('Projects/Spec.md')).toBe('spec\n\n![[Spec - burn-down-chart.html]]\n');
    expect(nth(fx.prompter.asked, 0).standingApprovalAllowed).toBe(false);
    const big = error(await fx.call('vault_add_html_artifact', { note: 'Projects/Spec', html: 'é'.repeat(270 * 1024) }));
    expect(big).toMatchObject({ code: 'VALIDATION', message: expect.stringMatching(/512 KB/) });
  });

  it('keeps every path inside the vault: no escapes, no hidden folders, no kernel state', async () => {
    fs.mkdirSync(path.join(fx.root, 'outside'));
    fs.writeFileSync(path.join(fx.root, 'outside', 'secret.md'), 'topsecret\n');
    fs.symlinkSync(path.join(fx.root, 'outside'), path.join(fx.vault, 'link'));
    fs.symlinkSync(path.join(fx.root, 'outside', 'secret.md'), path.join(fx.vault, 'secret-link.md'));
    value(await fx.call('vault_reindex', {}));
    expect(value(await fx.call('vault_search_notes', { query: 'topsecret' })).results).toEqual([]);
    expect(error(await fx.call('vault_read_note', { note: 'link/secret.md' })).code).toBe('NOT_FOUND');
    expect(error(await fx.call('vault_create_note', { title: 'x', folder: 'link' })).code).toBe('PATH_OUTSIDE_ROOT');
    expect(error(await fx.call('vault_list_folder', { path: '.obsidian' })).code).toBe('VALIDATION');
    expect(error(await fx.call('vault_list_folder', { path: '/etc' })).code).toBe('VALIDATION');
    expect(fs.readdirSync(path.join(fx.root, 'outside'))).toEqual(['secret.md']);
  });
});
