import * as fs from 'node:fs';
import * as path from 'node:path';
import { nth } from '../../helpers/nth.js';
import { deferred } from '../../helpers/wait.js';
import { error, hits, value, vaultKernel, type VaultFixture } from './helpers.js';

describe('vault journal', () => {
  let fx: VaultFixture;
  beforeEach(async () => {
    fx = await vaultKernel({
      files: {
        'Journal/2026-11-28.md': 'Walked to the harbour.\n',
        'Journal/Ideas.md': 'not a day\n',
        'Week.md': 'See [[2026-11-28]] and ![[Journal/2026-11-28]].\n',
      },
    });
  });
  afterEach(async () => fx.close());

  it('writes a day as Journal/YYYY-MM-DD.md after showing it as a diff, indexes it so search finds it, and returns its id and path', async () => {
    const r = value(await fx.call('vault_create_journal_entry', { date: '2026-11-30', content: 'Shipped the **journal** tools.\n', tags: ['Work'] }));
    expect(r).toMatchObject({ date: '2026-11-30', path: 'Journal/2026-11-30.md', title: '2026-11-30', created: true });
    expect(r.id).toMatch(/^[0-9a-f]{16}$/);
    // Plain markdown with YAML front matter: what any editor shows without the pack.
    expect(fx.read('Journal/2026-11-30.md')).toBe('---\ntags:\n  - work\n---\nShipped the **journal** tools.\n');
    const q = nth(fx.prompter.asked, 0);
    expect(q).toMatchObject({ tool: 'vault_create_journal_entry', danger: 'medium', effect: 'write' });
    expect(q.preview).toEqual({ kind: 'diff', text: expect.stringContaining('+++ b/Journal/2026-11-30.md\n@@ -0,0 +1,5 @@\n+---\n+tags:\n') });
    expect(await hits(fx, 'shipped journal')).toEqual(['Journal/2026-11-30.md']);
    const got = value(await fx.call('vault_get_journal_entry', { date: '2026-11-30' }));
    expect(got).toMatchObject({ id: r.id, path: 'Journal/2026-11-30.md', content: 'Shipped the **journal** tools.\n', tags: ['work'] });
    expect(value(await fx.call('vault_read_note', { note: r.id })).path).toBe('Journal/2026-11-30.md');
  });

  it('makes the journal folder when the vault has none, and uses the journal_folder setting', async () => {
    fx.kernel.packs.setConfig('vault', { watch: false, journal_folder: 'Daily/Log' });
    const r = value(await fx.call('vault_create_journal_entry', { date: '2027-01-01' }));
    expect(r).toMatchObject({ path: 'Daily/Log/2027-01-01.md', created: true });
    expect(fx.read('Daily/Log/2027-01-01.md')).toBe('');
    expect(value(await fx.call('vault_list_journal_entries', {})).entries.map((e: any) => e.date)).toEqual(['2027-01-01']);
  });

  it('refuses a date that names no day in every journal tool, before anyone is asked', async () => {
    for (const date of ['2026-02-30', '2026-13-01', '2025-02-29', '30.11.2026', '2026-11-5x']) {
      for (const tool of ['vault_get_journal_entry', 'vault_create_journal_entry', 'vault_update_journal_entry', 'vault_delete_journal_entry']) {
        const e = error(await fx.call(tool, tool.includes('_get_') || tool.includes('_delete_') ? { date } : { date, content: 'x' }));
        expect([tool, date, e.code]).toEqual([tool, date, 'VALIDATION']);
      }
    }
    expect(error(await fx.call('vault_list_journal_entries', { from: '2026-02-30' })).message).toMatch(/"2026-02-30" is not a day/);
    expect(error(await fx.call('vault_list_journal_entries', { to: '2026-04-31' })).code).toBe('VALIDATION');
    // Shorter than a day is refused by the manifest's schema, before the tool sees it.
    expect(error(await fx.call('vault_get_journal_entry', { date: '2026-1-5' })).code).toBe('INVALID_ARGS');
    expect(value(await fx.call('vault_create_journal_entry', { date: '2028-02-29' })).path).toBe('Journal/2028-02-29.md');
    expect(fx.prompter.asked.map((q) => q.tool)).toEqual(['vault_create_journal_entry']);
  });

  it('refuses a second entry for a day, and an edit or delete of a day without one, before anyone is asked', async () => {
    expect(error(await fx.call('vault_create_journal_entry', { date: '2026-11-28', content: 'again' }))).toMatchObject({
      code: 'CONFLICT',
      message: expect.stringMatching(/already has a journal entry/),
    });
    expect(error(await fx.call('vault_get_journal_entry', { date: '2026-11-29' })).code).toBe('NOT_FOUND');
    expect(error(await fx.call('vault_update_journal_entry', { date: '2026-11-29', append: 'x' })).code).toBe('NOT_FOUND');
    expect(error(await fx.call('vault_delete_journal_entry', { date: '2026-11-29' })).code).toBe('NOT_FOUND');
    expect(error(await fx.call('vault_update_journal_entry', { date: '2026-11-28' })).code).toBe('VALIDATION');
    expect(fx.prompter.asked).toHaveLength(0);
    expect(fx.read('Journal/2026-11-28.md')).toBe('Walked to the harbour.\n');
  });

  it('asks before every journal edit, even after an allow-session answer, shows the body diff and keeps the id and front matter', async () => {
    const before = value(await fx.call('vault_create_journal_entry', { date: '2026-11-30', content: 'Morning.\n', tags: ['home'] }));
    fx.prompter.asked.length = 0;
    fx.prompter.answer('allow-session', 'allow-session');
    const a = value(await fx.call('vault_update_journal_entry', { date: '2026-11-30', append: 'Evening.\n' }));
    const b = value(await fx.call('vault_update_journal_entry', { date: '2026-11-30', content: 'Rewritten.\n' }));
    expect(fx.prompter.asked.map((q) => [q.tool, q.standingApprovalAllowed])).toEqual([
      ['vault_update_journal_entry', false],
      ['vault_update_journal_entry', false],
    ]);
    expect(nth(fx.prompter.asked, 0).preview).toEqual({
      kind: 'diff',
      text: expect.stringContaining(' Morning.\n+Evening.\n'),
      // The whole body before and after, for a review in the note (front matter left out).
      document: { type: 'journal', id: '2026-11-30', title: '2026-11-30', path: 'Journal/2026-11-30.md', before: 'Morning.\n', after: 'Morning.\nEvening.\n' },
    });
    expect(nth(fx.prompter.asked, 1).preview!.text).toContain('-Morning.\n-Evening.\n+Rewritten.\n');
    expect([a.id, b.id, a.path]).toEqual([before.id, before.id, 'Journal/2026-11-30.md']);
    expect(fx.read('Journal/2026-11-30.md')).toBe('---\ntags:\n  - home\n---\nRewritten.\n');
    expect(await hits(fx, 'evening')).toEqual([]);
    expect(await hits(fx, 'rewritten')).toEqual(['Journal/2026-11-30.md']);
  });

  it("refuses an edit when the entry changed after the preview was shown, and keeps the person's text", async () => {
    const asked = deferred();
    const release = deferred<'allow-once'>();
    (fx.prompter as any).ask = async () => {
      asked.resolve();
      return release.promise;
    };
    const call = fx.call('vault_update_journal_entry', { date: '2026-11-28', append: 'agent line\n' });
    await asked.promise;
    fx.put('Journal/2026-11-28.md', 'Walked to the harbour. Typed this meanwhile.\n');
    release.resolve('allow-once');
    expect(error(await call)).toMatchObject({ code: 'CONFLICT', message: expect.stringMatching(/changed after the preview/) });
    expect(fx.read('Journal/2026-11-28.md')).toBe('Walked to the harbour. Typed this meanwhile.\n');
  });

  it('deletes an entry after a preview that says what is lost (size, lines, words, id, links that break) and always asks', async () => {
    fx.prompter.answer('allow-forever', 'allow-once');
    const id = value(await fx.call('vault_get_journal_entry', { date: '2026-11-28' })).id;
    const r = value(await fx.call('vault_delete_journal_entry', { date: '2026-11-28' }));
    expect(r).toMatchObject({ id, date: '2026-11-28', path: 'Journal/2026-11-28.md', deleted: true, size: 23, broken_links: 2 });
    const q = nth(fx.prompter.asked, 0);
    expect(q).toMatchObject({ tool: 'vault_delete_journal_entry', danger: 'dangerous', effect: 'delete', standingApprovalAllowed: false });
    expect(q.preview).toEqual({
      kind: 'delete',
      text:
        `Deletes the journal entry "Journal/2026-11-28.md" (id ${id}, 23 bytes).\n` +
        'Text lost: 1 line, 4 words, starting "Walked to the harbour.".\n' +
        'Links that will break: 2:\n  Week.md:1  ![[Journal/2026-11-28]]\n  Week.md:1  [[2026-11-28]]',
    });
    expect(fs.existsSync(path.join(fx.vault, 'Journal/2026-11-28.md'))).toBe(false);
    expect(await hits(fx, 'harbour')).toEqual([]);
    value(await fx.call('vault_create_journal_entry', { date: '2026-11-27' }));
    value(await fx.call('vault_delete_journal_entry', { date: '2026-11-27' }));
    expect(fx.prompter.asked.map((q) => q.tool)).toEqual(['vault_delete_journal_entry', 'vault_create_journal_entry', 'vault_delete_journal_entry']);
  });

  it('lists entries newest day first, filtered by from, to and limit, leaving out other notes in the folder', async () => {
    for (const date of ['2026-12-01', '2026-11-30', '2025-12-31']) value(await fx.call('vault_create_journal_entry', { date, content: `on ${date}\n` }));
    fx.put('Journal/Sub/2026-11-01.md', 'nested, not an entry\n');
    fx.put('Journal/2026-02-30.md', 'no such day\n');
    value(await fx.call('vault_reindex', {}));
    const dates = async (args: Record<string, unknown>) => value(await fx.call('vault_list_journal_entries', args)).entries.map((e: any) => e.date);
    expect(await dates({})).toEqual(['2026-12-01', '2026-11-30', '2026-11-28', '2025-12-31']);
    expect(await dates({ from: '2026-01-01', to: '2026-11-30' })).toEqual(['2026-11-30', '2026-11-28']);
    const limited = value(await fx.call('vault_list_journal_entries', { limit: 2 }));
    expect(limited).toMatchObject({ count: 2, truncated: true, total: 4 });
    expect(limited.entries[0]).toMatchObject({ date: '2026-12-01', path: 'Journal/2026-12-01.md', id: expect.stringMatching(/^[0-9a-f]{16}$/) });
  });

  it('reads an entry written by hand outside the app (watcher off) and gives it a stable id', async () => {
    value(await fx.call('vault_list_journal_entries', {}));
    fx.put('Journal/2026-10-05.md', '# A Monday\nWritten in another editor.\n');
    const a = value(await fx.call('vault_get_journal_entry', { date: '2026-10-05' }));
    const b = value(await fx.call('vault_get_journal_entry', { date: '2026-10-05' }));
    expect(a).toMatchObject({ path: 'Journal/2026-10-05.md', content: '# A Monday\nWritten in another editor.\n' });
    expect(b.id).toBe(a.id);
  });
});
