import * as fs from 'node:fs';
import * as path from 'node:path';
import Database from 'better-sqlite3';
import { PathSandbox } from '../../../kernel/sandbox/path-sandbox.js';
import { Vault } from '../../../plugins/vault/vault.js';
import { VaultIndex } from '../../../plugins/vault/vault-index.js';
import { waitFor } from '../../helpers/wait.js';
import { hits, snapshot, value, vaultKernel, waitForHits, type VaultFixture } from './helpers.js';

/** The index as a comparable value, with the watcher's and the rebuild's own bookkeeping left out. */
function comparable(fx: VaultFixture): any {
  return snapshot(fx.dbFile);
}

describe('vault index kept live by the watcher', () => {
  let fx: VaultFixture;
  beforeEach(async () => {
    fx = await vaultKernel({ watch: true, files: { 'Alpha.md': 'alpha text [[Beta]]\n', 'Beta.md': 'beta text\n' } });
    // The first call opens the vault: index brought in line, watcher started.
    expect(await hits(fx, 'alpha')).toEqual(['Alpha.md']);
  });
  afterEach(async () => fx.close());

  it('picks up notes added, edited and deleted outside Memo', async () => {
    fx.put('Gamma.md', 'gamma appears #fresh\n');
    await waitForHits(fx, 'gamma', ['Gamma.md']);
    expect(value(await fx.call('vault_get_tags', {})).tags.map((t: any) => t.name)).toEqual(['fresh']);

    fx.put('Beta.md', 'beta was rewritten with zebra\n');
    await waitForHits(fx, 'zebra', ['Beta.md']);
    expect(await hits(fx, '"beta text"')).toEqual([]);

    fs.unlinkSync(path.join(fx.vault, 'Beta.md'));
    await waitForHits(fx, 'zebra', []);
    await waitFor(async () => value(await fx.call('vault_read_note', { note: 'Alpha' })).links[0].status === 'broken', { what: 'the link to Beta to break' });
  });

  it('keeps a note id when the file is renamed on disk (same content, new path)', async () => {
    const id = value(await fx.call('vault_read_note', { note: 'Beta' })).id;
    fs.mkdirSync(path.join(fx.vault, 'Moved'));
    fs.renameSync(path.join(fx.vault, 'Beta.md'), path.join(fx.vault, 'Moved', 'Beta renamed.md'));
    await waitForHits(fx, '"beta text"', ['Moved/Beta renamed.md']);
    expect(value(await fx.call('vault_read_note', { note: 'Moved/Beta renamed.md' })).id).toBe(id);
  });

  it('follows folders made, filled, renamed and removed outside Memo, at any depth', async () => {
    fs.mkdirSync(path.join(fx.vault, 'Trips', '2026', 'Spring'), { recursive: true });
    // Saved into the deepest folder after it appeared: seen through that folder's own watch.
    await new Promise((r) => setTimeout(r, 100));
    fx.put('Trips/2026/Spring/Lisbon.md', 'lisbon tram notes\n');
    await waitForHits(fx, 'lisbon', ['Trips/2026/Spring/Lisbon.md']);
    const id = value(await fx.call('vault_read_note', { note: 'Trips/2026/Spring/Lisbon.md' })).id;
    fs.renameSync(path.join(fx.vault, 'Trips', '2026'), path.join(fx.vault, 'Trips', 'Done 2026'));
    await waitForHits(fx, 'lisbon', ['Trips/Done 2026/Spring/Lisbon.md']);
    expect(value(await fx.call('vault_read_note', { note: 'Trips/Done 2026/Spring/Lisbon.md' })).id).toBe(id);
    // The renamed folder is watched under its new name.
    fx.put('Trips/Done 2026/Spring/Porto.md', 'porto bridge notes\n');
    await waitForHits(fx, 'porto', ['Trips/Done 2026/Spring/Porto.md']);
    fs.rmSync(path.join(fx.vault, 'Trips'), { recursive: true });
    await waitForHits(fx, 'lisbon OR porto', []);
    // A hidden folder is never part of the vault, made while the vault is open or not.
    fx.put('.trash/Gone.md', 'trashed lisbon\n');
    fx.put('Later.md', 'later note\n');
    await waitForHits(fx, 'later', ['Later.md']);
    expect(await hits(fx, 'trashed')).toEqual([]);
  });

  it('absorbs a bulk change of many files (a checkout) and ends up equal to a rebuild from the files', async () => {
    const N = 300;
    for (let i = 0; i < N; i++) fx.put(`bulk/${i % 10}/note ${i}.md`, `bulk note ${i} about walrus ${i % 7 === 0 ? '#seven' : ''} [[note ${(i + 1) % N}]]\n`);
    await waitFor(async () => value(await fx.call('vault_search_notes', { query: 'walrus', limit: 200, folder: 'bulk/3' })).count === N / 10, {
      what: 'the bulk notes to be searchable',
    });
    await waitFor(
      async () => {
        const r = value(await fx.call('vault_search_notes', { query: '', tags: ['seven'], limit: 200 }));
        return r.count === Math.ceil(N / 7);
      },
      { what: 'every #seven note to be indexed' },
    );
    // Then half of them change and a few go, all at once.
    for (let i = 0; i < N; i += 2) fx.put(`bulk/${i % 10}/note ${i}.md`, `bulk note ${i} now about narwhal\n`);
    for (let i = 1; i < 40; i += 2) fs.unlinkSync(path.join(fx.vault, `bulk/${i % 10}/note ${i}.md`));
    await waitFor(async () => value(await fx.call('vault_search_notes', { query: 'narwhal', limit: 200 })).count === N / 2, { what: 'the narwhal edits' });
    await waitFor(async () => value(await fx.call('vault_search_notes', { query: 'walrus', limit: 200 })).count === N / 2 - 20, {
      what: 'the walrus notes left',
    });

    const live = comparable(fx);
    expect(live.fts.filter((t: any) => t.term === 'narwhal')).toHaveLength(N / 2);
    // Files touched just before the reindex: the watcher's batch for them comes while the rebuild
    // runs (or, as a late event of the checkout would, after its clearing), and changes nothing.
    const now = new Date();
    for (let i = 40; i < 60; i++) fs.utimesSync(path.join(fx.vault, `bulk/${i % 10}/note ${i}.md`), now, now);
    value(await fx.call('vault_reindex', {}));
    expect(comparable(fx)).toEqual(live);
  });

  it('refuses an agent write that races a person saving the same note, and indexes the person’s version', async () => {
    fx.prompter.answer('allow-once');
    let saved = false;
    const original = fx.prompter.ask.bind(fx.prompter);
    fx.prompter.ask = async (request, signal) => {
      // The person saves in the editor while the approval question is open.
      if (!saved) fx.put('Alpha.md', 'the person wrote quokka\n');
      saved = true;
      return original(request, signal);
    };
    const r = await fx.call('vault_update_note', { note: 'Alpha', content: 'the agent wrote wombat\n' });
    expect(r.ok ? 'ok' : r.error.code).toBe('CONFLICT');
    expect(fx.read('Alpha.md')).toBe('the person wrote quokka\n');
    await waitForHits(fx, 'quokka', ['Alpha.md']);
    expect(await hits(fx, 'wombat')).toEqual([]);
  });
});

describe('note ids when changes reach the index in pieces (a rebuild under way, a rename seen in two batches)', () => {
  /** The vault of a kernel that indexed it and stopped, opened directly on its index file (no watcher). */
  async function openDirect(files: Record<string, string>) {
    const fx = await vaultKernel({ files });
    value(await fx.call('vault_search_notes', { query: 'anything' }));
    await fx.close();
    const db = new Database(fx.dbFile);
    const vault = new Vault(fs.realpathSync(fx.vault), 'vault', new PathSandbox(fx.root), new VaultIndex(db), fx.logger);
    const idOf = (rel: string) => vault.index.note({ path: rel })?.id;
    return { fx, vault, idOf, close: async () => (await vault.close().catch(() => undefined), db.close()) };
  }

  it('keeps a note its id when a write is applied between the rebuild clearing the index and reading the note back', async () => {
    const { fx, vault, idOf, close } = await openDirect({ 'Alpha.md': 'alpha [[Beta]]\n', 'Beta.md': 'beta\n' });
    const before = { alpha: idOf('Alpha.md'), beta: idOf('Beta.md') };
    expect(before.alpha).toMatch(/^[0-9a-f]{16}$/);
    // The rebuild clears the index first; a write tool's refresh (or a watcher batch) queued right
    // behind that clearing lands before the rebuild reads the files back.
    fx.put('Beta.md', 'beta edited\n');
    const rebuilt = vault.rebuild();
    await vault.exclusive(() => vault.refreshPaths(['Beta.md']));
    expect(idOf('Beta.md')).toBe(before.beta);
    await rebuilt;
    expect({ alpha: idOf('Alpha.md'), beta: idOf('Beta.md') }).toEqual(before);
    expect(vault.index.linksFrom(vault.index.note({ path: 'Alpha.md' })!.seq).map((l) => l.status)).toEqual(['resolved']);
    await close();
  });

  it('keeps a note its id when a rename on disk reaches the index in two batches (the file gone first, found in its new folder later)', async () => {
    const { fx, vault, idOf, close } = await openDirect({ 'Alpha.md': 'alpha [[Beta]]\n', 'Beta.md': 'beta\n', 'Other.md': 'other\n' });
    const beta = idOf('Beta.md');
    fs.mkdirSync(path.join(fx.vault, 'Moved'));
    fs.renameSync(path.join(fx.vault, 'Beta.md'), path.join(fx.vault, 'Moved', 'Beta.md'));
    // The watcher saw Beta.md go; the new folder (and the file in it) only in a later batch.
    expect(await vault.sync({ paths: ['Beta.md'] })).toMatchObject({ removed: 1, renamed: 0 });
    expect(idOf('Beta.md')).toBeUndefined();
    expect(await vault.sync({ paths: ['Moved/Beta.md'] })).toMatchObject({ added: 1 });
    expect(idOf('Moved/Beta.md')).toBe(beta);
    expect(vault.index.linksFrom(vault.index.note({ path: 'Alpha.md' })!.seq).map((l) => [l.status, l.target_seq])).toEqual([
      ['resolved', vault.index.note({ path: 'Moved/Beta.md' })!.seq],
    ]);
    // Other content gets a new id; the id is given back once only.
    fs.writeFileSync(path.join(fx.vault, 'Copy.md'), 'beta\n');
    fs.writeFileSync(path.join(fx.vault, 'Fresh.md'), 'fresh\n');
    await vault.sync({ paths: ['Copy.md', 'Fresh.md'] });
    expect([beta, idOf('Alpha.md'), idOf('Other.md')]).not.toContain(idOf('Copy.md'));
    expect([beta, idOf('Alpha.md'), idOf('Other.md')]).not.toContain(idOf('Fresh.md'));
    await close();
  });

  it('gives a note that is new during a rebuild a new id, and one removed meanwhile no row', async () => {
    const { fx, vault, idOf, close } = await openDirect({ 'Alpha.md': 'alpha\n', 'Gone.md': 'gone\n' });
    const alpha = idOf('Alpha.md');
    const gone = idOf('Gone.md');
    fx.put('New.md', 'new\n');
    fs.unlinkSync(path.join(fx.vault, 'Gone.md'));
    const rebuilt = vault.rebuild();
    await vault.exclusive(() => vault.refreshPaths(['New.md', 'Gone.md']));
    await rebuilt;
    expect(idOf('Alpha.md')).toBe(alpha);
    expect(idOf('New.md')).toMatch(/^[0-9a-f]{16}$/);
    expect([alpha, gone]).not.toContain(idOf('New.md'));
    expect(idOf('Gone.md')).toBeUndefined();
    await close();
  });
});

describe('vault setup', () => {
  it('says how to set up a vault instead of indexing the whole checkout', async () => {
    const fx = await vaultKernel();
    fs.rmSync(fx.vault, { recursive: true });
    fs.writeFileSync(path.join(fx.root, 'README.md'), 'not a vault note');
    const r = await fx.call('vault_search_notes', { query: 'vault' });
    expect(r.ok ? 'ok' : r.error).toMatchObject({ code: 'NOT_FOUND', message: expect.stringContaining('no vault configured: run memo vault init') });
    fx.kernel.packs.setConfig('vault', { folder: '.' });
    const root = await fx.call('vault_search_notes', { query: 'vault' });
    expect(root.ok ? 'ok' : root.error.code).toBe('VALIDATION');
    await fx.close();
  });

  it('memo vault init DIR creates the folder, saves it as the setting and indexes it', async () => {
    const fx = await vaultKernel();
    fs.mkdirSync(path.join(fx.root, 'notes'));
    fs.writeFileSync(path.join(fx.root, 'notes', 'First.md'), 'first note\n');
    const printed: unknown[] = [];
    const run = (sub: string, args: Record<string, string | undefined>) =>
      fx.kernel.commands
        .get('vault')!
        .command.subcommands.find((s) => s.name === sub)!
        .run({
          args,
          options: { json: true },
          signal: new AbortController().signal,
          invoke: (tool, toolArgs) => fx.kernel.invoke({ tool, args: toolArgs, caller: { kind: 'cli' } }),
          print: (v) => printed.push(v),
          record: (change) => fx.kernel.admin.record({ ...change, by: 'cli' }),
        });
    expect(await run('init', { dir: './notes/' })).toBe(0);
    expect(printed.at(-1)).toMatchObject({ ok: true, result: { folder: 'notes', notes: 1 } });
    expect(fx.kernel.packs.config('vault')).toMatchObject({ folder: 'notes' });
    expect(JSON.parse(fs.readFileSync(path.join(fx.dataDir, 'packs.json'), 'utf8')).packs.vault.config.folder).toBe('notes');
    expect(await hits(fx, 'first')).toEqual(['First.md']);

    expect(await run('init', { dir: 'Journal/2026' })).toBe(0);
    expect(fs.statSync(path.join(fx.root, 'Journal', '2026')).isDirectory()).toBe(true);
    expect(await hits(fx, 'first')).toEqual([]);

    // A folder outside the root is refused and the setting stays as it was.
    expect(await run('init', { dir: '../elsewhere' })).toBe(1);
    expect(printed.at(-1)).toMatchObject({ ok: false, error: { code: 'PATH_OUTSIDE_ROOT' } });
    expect(fx.kernel.packs.config('vault')).toMatchObject({ folder: 'Journal/2026' });
    expect(await run('reindex', {})).toBe(0);
    await fx.close();
  });

  it('upgrades an index made by the first version (text copied into FTS) in place: ids kept, text searchable again', async () => {
    const fx = await vaultKernel({ files: { 'Kept.md': 'kept ocelot note\n' } });
    const id = value(await fx.call('vault_read_note', { note: 'Kept' })).id;
    await fx.close();
    // Put the file back in the shape the first migration left: a content-storing FTS table, the second migration not run.
    const Database = (await import('better-sqlite3')).default;
    const db = new Database(fx.dbFile);
    db.exec(`DROP TABLE notes_fts; CREATE VIRTUAL TABLE notes_fts USING fts5(title, body, tokenize='porter unicode61 remove_diacritics 2');`);
    db.prepare(`INSERT INTO notes_fts (rowid, title, body) SELECT seq, title, 'kept ocelot note' FROM notes`).run();
    // The planning and inbox tables came later still: that version had none.
    db.exec(`DROP TABLE planning_task_notes; DROP TABLE vault_settings; DROP TABLE inbox_items;`);
    db.exec(`DROP TABLE planning_project_links; DROP TABLE planning_tasks; DROP TABLE planning_projects; DROP TABLE planning_statuses;`);
    db.prepare(
      `DELETE FROM migrations WHERE name IN ('ContentlessVaultText1796300000000', 'CreatePlanning1796400000000', 'CreateInbox1796500000000', 'CreateBridgeState1796600000000', 'PartialLinkNoteIndex1796700000000')`,
    ).run();
    db.close();
    const again = await fx.restart();
    await again.kernel.loadPacks([{ dir: path.resolve('plugins'), source: 'builtin', only: ['vault'] }]);
    again.kernel.packs.setConfig('vault', { watch: false });
    const r = await again.kernel.invoke({ tool: 'vault_search_notes', args: { query: 'ocelot' }, caller: { kind: 'agent' } });
    expect(r.ok && (r.value as any).results.map((h: any) => [h.path, h.id, h.snippet])).toEqual([['Kept.md', id, 'kept **ocelot** note']]);
    const check = new Database(fx.dbFile, { readonly: true });
    expect((check.prepare(`SELECT sql FROM sqlite_master WHERE name = 'notes_fts'`).get() as any).sql).toContain("content=''");
    check.close();
    await again.close();
  });

  it('never indexes kernel state inside the vault folder', async () => {
    const fx = await vaultKernel();
    await fx.close();
    // The same data folder, now inside the vault folder.
    const dataInVault = path.join(fx.vault, 'kernel-data');
    const { makeKernel } = await import('../../helpers/kernel-fixture.js');
    const inner = makeKernel({ packs: [], root: fx.root, dataDir: dataInVault });
    await inner.kernel.loadPacks([{ dir: path.resolve('plugins'), source: 'builtin', only: ['vault'] }]);
    inner.kernel.packs.setConfig('vault', { watch: false });
    fs.writeFileSync(path.join(fx.vault, 'Visible.md'), 'visible secretword\n');
    fs.mkdirSync(path.join(dataInVault, 'stuff'), { recursive: true });
    fs.writeFileSync(path.join(dataInVault, 'stuff', 'Hidden.md'), 'hidden secretword\n');
    const r = await inner.kernel.invoke({ tool: 'vault_search_notes', args: { query: 'secretword' }, caller: { kind: 'agent' } });
    expect(r.ok && (r.value as any).results.map((h: any) => h.path)).toEqual(['Visible.md']);
    const listed = await inner.kernel.invoke({ tool: 'vault_list_folder', args: { path: 'kernel-data' }, caller: { kind: 'agent' } });
    expect(listed.ok ? 'ok' : listed.error.code).toBe('PATH_PROTECTED');
    await inner.close();
  });
});
