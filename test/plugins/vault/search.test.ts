import { error, hits, value, vaultKernel, type VaultFixture } from './helpers.js';

describe('vault_search_notes', () => {
  let fx: VaultFixture;
  beforeAll(async () => {
    fx = await vaultKernel({
      files: {
        'cpp.md': 'Notes on C++ templates and the foo-bar pattern.\n',
        'cafe.md': '---\ntags: [travel, project/alpha]\n---\nWe met at the Café in Zürich. Running late again.\n',
        'quotes.md': 'She said "hello world" twice; NOT OR AND NEAR are words here (see: a:b).\n',
        'Projects/plan.md': 'The project plan for alpha.\n#project/beta is nested\n',
        'Projects/deep/more.md': 'More plan notes.\n',
        'report.pdf': Buffer.from('%PDF-1.4 fake'),
        'Zeppelin.md': 'airship notes\n',
        'trip.md': 'We took a zeppelin over the lake, the zeppelin was slow, zeppelin rides are long.\n',
        'photo of plan.jpg': Buffer.from([0xff, 0xd8, 0xff]),
        ...Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`many/plan ${i}.md`, `plan number ${i}\n`])),
      },
    });
  });
  afterAll(async () => fx.close());

  it('never breaks on query syntax in what a person types', async () => {
    for (const q of [
      'C++',
      'foo-bar',
      '"hello world"',
      '"unbalanced',
      'NOT',
      'OR AND',
      'NEAR(a b)',
      'a:b',
      '(',
      ')',
      '*',
      '^',
      '"',
      '""',
      "it's",
      'col:umn',
      '-',
      '+++',
    ]) {
      const r = await fx.call('vault_search_notes', { query: q });
      expect({ q, ok: r.ok }).toEqual({ q, ok: true });
    }
    expect(await hits(fx, 'C++')).toEqual(['cpp.md']);
    expect(await hits(fx, 'foo-bar')).toEqual(['cpp.md']);
    expect(await hits(fx, '"hello world"')).toEqual(['quotes.md']);
    expect(await hits(fx, '"world hello"')).toEqual([]);
    expect(await hits(fx, 'NOT')).toEqual(['quotes.md']);
    expect(await hits(fx, '"unbalanced')).toEqual([]);
  });

  it('ranks a match in the title above matches in the text', async () => {
    const r = value(await fx.call('vault_search_notes', { query: 'zeppelin' }));
    expect(r.results.map((h: any) => h.path)).toEqual(['Zeppelin.md', 'trip.md']);
  });

  it('says when a query has nothing to search for instead of failing', async () => {
    const r = value(await fx.call('vault_search_notes', { query: '+++ --' }));
    expect(r).toMatchObject({ results: [], count: 0, note: expect.stringMatching(/no letters or digits/) });
  });

  it('folds accents and matches word stems', async () => {
    expect(await hits(fx, 'cafe zurich')).toEqual(['cafe.md']);
    expect(await hits(fx, 'run')).toEqual(['cafe.md']);
    expect(await hits(fx, 'CAFÉ')).toEqual(['cafe.md']);
    expect(await hits(fx, 'templ*')).toEqual(['cpp.md']);
  });

  it('returns id, path, type, tags and a highlighted snippet for each hit', async () => {
    const [hit] = value(await fx.call('vault_search_notes', { query: 'zurich' })).results;
    expect(hit).toMatchObject({ path: 'cafe.md', title: 'cafe', file_type: 'markdown', tags: ['project/alpha', 'travel'] });
    expect(hit.id).toMatch(/^[0-9a-f]{16}$/);
    expect(hit.snippet).toContain('**Zürich**');
  });

  it('filters by file type inside the query, so the limit counts only matching files', async () => {
    expect(await hits(fx, 'plan', { file_types: ['image'] })).toEqual(['photo of plan.jpg']);
    expect(await hits(fx, 'report', { file_types: ['pdf'] })).toEqual(['report.pdf']);
    const limited = value(await fx.call('vault_search_notes', { query: 'plan', file_types: ['image'], limit: 1 }));
    expect(limited.results.map((r: any) => r.file_type)).toEqual(['image']);
    expect(value(await fx.call('vault_search_notes', { query: 'plan', limit: 5 })).count).toBe(5);
  });

  it('lists a folder: subfolders first, then notes and filed files with their ids, and other attachments', async () => {
    fx.put('Projects/chart.html', '<p>chart</p>');
    const r = value(await fx.call('vault_list_folder', { path: 'Projects' }));
    expect(r.entries.map((e: any) => [e.type, e.name, e.path, e.file_type ?? null])).toEqual([
      ['folder', 'deep', 'Projects/deep', null],
      ['attachment', 'chart.html', 'Projects/chart.html', null],
      ['note', 'plan.md', 'Projects/plan.md', 'markdown'],
    ]);
    expect(r.entries[2].id).toMatch(/^[0-9a-f]{16}$/);
    const top = value(await fx.call('vault_list_folder', {}));
    expect(top.entries.filter((e: any) => e.type === 'file').map((e: any) => [e.name, e.file_type])).toEqual([
      ['photo of plan.jpg', 'image'],
      ['report.pdf', 'pdf'],
    ]);
    expect(error(await fx.call('vault_list_folder', { path: 'nowhere' })).code).toBe('NOT_FOUND');
  });

  it('filters by tag (nested tags included) and by folder', async () => {
    expect(await hits(fx, '', { tags: ['#travel'] })).toEqual(['cafe.md']);
    expect(await hits(fx, '', { tags: ['project'] })).toEqual(['Projects/plan.md', 'cafe.md']);
    expect(await hits(fx, '', { tags: ['project', 'travel'] })).toEqual(['cafe.md']);
    expect(await hits(fx, 'plan', { folder: 'Projects' })).toEqual(['Projects/deep/more.md', 'Projects/plan.md']);
    expect(await hits(fx, 'plan', { folder: 'Projects/deep' })).toEqual(['Projects/deep/more.md']);
    expect(error(await fx.call('vault_search_notes', { query: 'plan', folder: '../outside' })).code).toBe('PATH_OUTSIDE_ROOT');
  });
});
