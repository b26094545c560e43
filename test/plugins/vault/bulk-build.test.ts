/**
 * The full build of a vault index in workers (issue 42, item 4): files read and parsed in one worker,
 * their text put into a build file's full-text table in another, the notes, tags and links written
 * by the event loop, the build file's table taken over at the end. Real files, a real kernel, real
 * worker threads (the compiled index-build.js). MEMO_VAULT_BULK_MIN and MEMO_VAULT_BULK_CHUNK make a
 * small vault take that path in several chunks; the one-by-one path (applyBatch) is the reference.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import Database from 'better-sqlite3';
import { reopenVault, snapshot, value, vaultKernel, type VaultFixture } from './helpers.js';

/** A vault with every kind of link and note the index keeps: resolved, ambiguous and broken links, headings, aliases, tags, a filed file. */
function files(): Record<string, string | Buffer> {
  const out: Record<string, string | Buffer> = {
    'Weekly review.md': '---\ntags: [review, team/ops]\naliases: [Retro]\n---\n# Weekly review\nWhat went well. See [[Launch kickoff#Budget]].\n',
    'Projects/Launch kickoff.md': '# Launch kickoff\n## Budget\nPress kit and pricing, see [[Retro]] and [[Meeting]] and [[Nowhere at all]].\n#launch\n',
    'A/Meeting.md': '# Meeting\nAgenda for the café.\n',
    'B/Meeting.md': '# Meeting\nAnother agenda.\n',
    'Paths/Linker.md': 'Path links: [[A/Meeting]], [[/Weekly review]], [[Projects/Launch kickoff.md|the kickoff]] and ![[diagram.png]].\n',
    'diagram.png': Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3, 4]),
  };
  for (let i = 0; i < 60; i++) {
    out[`Daily/Day ${i}.md`] =
      `# Day ${i}\nWorked on [[Day ${(i + 1) % 60}]] and [[Weekly review]]; word${i} here.\n#daily${i % 3 === 0 ? ' #team/ops' : ''}\n`;
  }
  return out;
}

const ENV = ['MEMO_VAULT_BULK_MIN', 'MEMO_VAULT_BULK_CHUNK'] as const;

/** Runs `fn` with full builds in workers for any vault of 1 file or more, `chunk` files a step. */
async function inWorkers<T>(chunk: number, fn: () => Promise<T>): Promise<T> {
  const before = ENV.map((k) => process.env[k]);
  process.env.MEMO_VAULT_BULK_MIN = '1';
  process.env.MEMO_VAULT_BULK_CHUNK = String(chunk);
  try {
    return await fn();
  } finally {
    ENV.forEach((k, i) => (before[i] === undefined ? delete process.env[k] : (process.env[k] = before[i])));
  }
}

function meta(dbFile: string, key: string): string | undefined {
  const db = new Database(dbFile, { readonly: true });
  try {
    return (db.prepare(`SELECT value FROM vault_meta WHERE key = ?`).get(key) as { value: string } | undefined)?.value;
  } finally {
    db.close();
  }
}

function indexNames(dbFile: string): string[] {
  const db = new Database(dbFile, { readonly: true });
  try {
    return (
      db
        .prepare(
          `SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'IDX_%' AND tbl_name IN ('notes', 'links', 'note_tags', 'note_aliases') ORDER BY name`,
        )
        .all() as Array<{ name: string }>
    ).map((r) => r.name);
  } finally {
    db.close();
  }
}

describe('vault index: a full build in workers', () => {
  let fx: VaultFixture;
  afterEach(async () => {
    await fx?.close();
  });

  it('indexes exactly what the one-by-one build indexes: notes, ids, tags, every link status and the searchable text', async () => {
    fx = await vaultKernel({ files: files() });
    const built = await inWorkers(7, async () => value(await fx.call('vault_search_notes', { query: 'word17' })));
    expect(built.results.map((r: { path: string }) => r.path)).toEqual(['Daily/Day 17.md']);
    const inWorkersSnapshot = snapshot(fx.dbFile);
    // The full-text table's merge settings as a build leaves them (see FINAL_SETTINGS in index-build.ts).
    const db = new Database(fx.dbFile, { readonly: true });
    expect(Object.fromEntries((db.prepare(`SELECT k, v FROM notes_fts_config`).all() as Array<{ k: string; v: number }>).map((r) => [r.k, r.v]))).toMatchObject(
      {
        automerge: 4,
        crisismerge: 64,
        hashsize: 1024 * 1024,
      },
    );
    db.close();
    const indexesAfterBulk = indexNames(fx.dbFile);
    // The same files again through applyBatch (fewer than the default bulk minimum), ids kept by path.
    value(await fx.call('vault_reindex', {}));
    expect(snapshot(fx.dbFile)).toEqual(inWorkersSnapshot);
    expect(indexNames(fx.dbFile)).toEqual(indexesAfterBulk);
    expect(indexesAfterBulk).toHaveLength(11);
    expect(meta(fx.dbFile, 'bulk_build')).toBeUndefined();
    // Nothing of the build file is left.
    expect(fs.readdirSync(path.dirname(fx.dbFile)).filter((f) => f.includes('text-build'))).toEqual([]);
    const links = (inWorkersSnapshot as { links: Array<{ source: string; raw: string; status: string; target: string | null }> }).links;
    const statusOf = (source: string, raw: string) => links.find((l) => l.source === source && l.raw === raw)?.status;
    expect(statusOf('Projects/Launch kickoff.md', 'Meeting')).toBe('ambiguous');
    expect(statusOf('Projects/Launch kickoff.md', 'Nowhere at all')).toBe('broken');
    expect(statusOf('Projects/Launch kickoff.md', 'Retro')).toBe('resolved');
    expect(statusOf('Paths/Linker.md', 'A/Meeting')).toBe('resolved');
    expect(statusOf('Paths/Linker.md', 'diagram.png')).toBe('resolved');
  });

  it('reports its progress to a reindex call and in one line per few seconds to the log, and ends saying how many files', async () => {
    fx = await vaultKernel({ files: files() });
    const updates: Array<{ progress: number; total?: number }> = [];
    const r = await inWorkers(10, () => fx.kernel.invoke({ tool: 'vault_reindex', args: {}, caller: { kind: 'host' }, onProgress: (u) => updates.push(u) }));
    expect(value(r).notes).toBe(66);
    const total = updates.at(-1)?.total;
    expect(total).toBe(66);
    expect(updates.map((u) => u.progress)).toEqual([10, 20, 30, 40, 50, 60, 66]);
    // The vault's first open (by the reindex call) was a build in workers too, and said when it ended.
    expect(fx.logger.lines.filter((l) => /vault: indexed vault: 66 files in \d+\.\d s/.test(l.message))).toHaveLength(1);
  });

  it('keeps every write a tool makes while the build runs: the note it adds, the one it changes, the one it deletes', async () => {
    const many = files();
    for (let i = 0; i < 240; i++) many[`Bulk/Note ${i}.md`] = `# Note ${i}\nFiller text ${i} linking [[Fresh idea]].\n`;
    fx = await vaultKernel({ files: many });
    value(await fx.call('vault_search_notes', { query: 'filler' })); // opened (one by one: under the bulk minimum)
    let target = { changed: '', deleted: '' };
    await inWorkers(5, async () => {
      // A reindex in workers; once its first chunk is in, three writes wait for their turn between its chunks.
      let started!: () => void;
      const firstChunk = new Promise<void>((resolve) => (started = resolve));
      const reindex = fx.kernel.invoke({ tool: 'vault_reindex', args: {}, caller: { kind: 'host' }, onProgress: () => started() });
      await firstChunk;
      // Two notes the rebuild has added again (a reindex shows the notes it has got to so far; their text once it is done).
      const [changed, deleted] = (value(await fx.call('vault_search_notes', { query: '', limit: 2 })).results as Array<{ path: string }>).map((r) => r.path);
      target = { changed: changed!, deleted: deleted! };
      const writes = await Promise.all([
        fx.call('vault_create_note', { title: 'Fresh idea', folder: 'Ideas', content: 'Zeppelin sketches, see [[Note 239]].' }),
        fx.call('vault_update_note', { note: changed, append: 'Marmalade recipe.' }),
        fx.call('vault_delete_note', { note: deleted }),
      ]);
      for (const w of writes) expect(w.ok ? 'ok' : JSON.stringify(w.error)).toBe('ok');
      value(await reindex);
    });
    const search = async (q: string) => (value(await fx.call('vault_search_notes', { query: q })).results as Array<{ path: string }>).map((r) => r.path);
    expect(await search('zeppelin')).toEqual(['Ideas/Fresh idea.md']);
    expect(await search('marmalade')).toEqual([target.changed]);
    expect((value(await fx.call('vault_search_notes', { query: '', limit: 200 })).results as Array<{ path: string }>).map((r) => r.path)).not.toContain(
      target.deleted,
    );
    expect(fs.existsSync(path.join(fx.vault, target.deleted))).toBe(false);
    // The writes landed between the build's chunks: the note added has a lower seq than notes the build added after it.
    const db = new Database(fx.dbFile, { readonly: true });
    const seqs = db.prepare(`SELECT (SELECT seq FROM notes WHERE path = 'Ideas/Fresh idea.md') AS fresh, max(seq) AS last FROM notes`).get() as {
      fresh: number;
      last: number;
    };
    db.close();
    expect(seqs.fresh).toBeLessThan(seqs.last);
    const during = snapshot(fx.dbFile);
    // A rebuild of the same files one by one: the same index, the same ids.
    value(await fx.call('vault_reindex', {}));
    expect(snapshot(fx.dbFile)).toEqual(during);
    const linkToFresh = (during as { links: Array<{ source: string; raw: string; status: string; target: string | null }> }).links.find(
      (l) => l.source === 'Bulk/Note 0.md' && l.raw === 'Fresh idea',
    );
    expect(linkToFresh).toMatchObject({ status: 'resolved', target: 'Ideas/Fresh idea.md' });
  });

  it('builds again, each note keeping its id, an index that a stopped build left half done (its mark, no links, no secondary indexes)', async () => {
    fx = await vaultKernel({ files: files() });
    await inWorkers(7, async () => value(await fx.call('vault_search_notes', { query: 'agenda' })));
    const before = snapshot(fx.dbFile);
    await fx.kernel.shutdown();
    // What a build killed between its chunks leaves on disk.
    const db = new Database(fx.dbFile);
    db.exec(`INSERT INTO vault_meta (key, value) VALUES ('bulk_build', '2026-12-06T00:00:00.000Z');
             DELETE FROM links; DROP INDEX "IDX_links_target"; DROP INDEX "IDX_notes_title_key";
             DELETE FROM notes WHERE path LIKE 'Daily/%'`);
    db.close();
    fx = await reopenVault(fx);
    value(await fx.call('vault_search_notes', { query: 'agenda' }));
    expect(snapshot(fx.dbFile)).toEqual(before);
    expect(indexNames(fx.dbFile)).toHaveLength(11);
    expect(meta(fx.dbFile, 'bulk_build')).toBeUndefined();
    expect(fx.logger.lines.filter((l) => l.message.includes('left half built'))).toHaveLength(1);
  });

  it('says so when the text cannot be built, keeps the notes findable by name, and builds again at the next open', async () => {
    fx = await vaultKernel({ files: files() });
    // A folder where the build file goes: the text worker cannot make it.
    fs.mkdirSync(path.dirname(fx.dbFile), { recursive: true });
    fs.mkdirSync(`${fx.dbFile}.text-build`);
    await inWorkers(7, async () => {
      const found = value(await fx.call('vault_search_notes', { query: '', folder: 'A' }));
      expect(found.results.map((r: { path: string }) => r.path)).toEqual(['A/Meeting.md']);
    });
    expect(fx.logger.lines.filter((l) => l.message.includes("the notes' text could not be indexed"))).toHaveLength(1);
    expect(meta(fx.dbFile, 'bulk_build')).toBeDefined();
    expect(value(await fx.call('vault_search_notes', { query: 'agenda' })).results).toEqual([]);
    fs.rmdirSync(`${fx.dbFile}.text-build`);
    fx = await reopenVault(fx);
    await inWorkers(7, async () => {
      const found = value(await fx.call('vault_search_notes', { query: 'agenda' }));
      expect(found.results.map((r: { path: string }) => r.path).sort()).toEqual(['A/Meeting.md', 'B/Meeting.md']);
    });
    expect(meta(fx.dbFile, 'bulk_build')).toBeUndefined();
  });

  it('leaves out a hard link to a kernel file that a worker read, as the event loop does', async () => {
    fx = await vaultKernel({ files: files() });
    const secret = path.join(fx.dataDir, 'permissions.json');
    if (!fs.existsSync(secret)) fs.writeFileSync(secret, '{"rules":[]}');
    fs.linkSync(secret, path.join(fx.vault, 'stolen.md'));
    await inWorkers(7, async () => value(await fx.call('vault_search_notes', { query: 'agenda' })));
    const notes = (snapshot(fx.dbFile) as { notes: Array<{ path: string }> }).notes.map((n) => n.path);
    expect(notes).toHaveLength(66);
    expect(notes).not.toContain('stolen.md');
  });
});
