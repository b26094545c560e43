/**
 * A large index is checked in a worker thread while calls are served (issue 42: the check reads every
 * page, about 1 to 1.5 s for a 100 MB index, most of the 2 s a reopen may take). Here every index
 * counts as large (MEMO_VAULT_CHECK_ON_LOOP_BYTES=0): a damaged one found by the worker is set aside
 * and rebuilt as at open, and every note keeps its id.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import Database from 'better-sqlite3';
import { waitFor } from '../../helpers/wait.js';
import { reopenVault, value, vaultKernel } from './helpers.js';
import { quickCheck } from '../../../plugins/vault/index-check.js';

// Read when the vault pack's runtime is imported, which loadPacks does below.
process.env.MEMO_VAULT_CHECK_ON_LOOP_BYTES = '0';

describe('the check of a large vault index, in a worker', () => {
  afterAll(() => {
    delete process.env.MEMO_VAULT_CHECK_ON_LOOP_BYTES;
  });

  it('the worker says ok for a sound index; a damaged one is set aside once and rebuilt, notes keeping their ids', async () => {
    const fx = await vaultKernel({ files: { 'a.md': '# A\nalpha\n', 'b.md': '# B\nbeta [[a]]\n' } });
    for (let i = 0; i < 80; i++) fx.put(`bulk/n${i}.md`, `# N${i}\n${'word '.repeat(40)}\n`);
    const ids = async (k: typeof fx) =>
      Object.fromEntries(
        (value(await k.call('vault_search_notes', { query: '', limit: 100 })).results as Array<{ path: string; id: string }>).map((h) => [h.path, h.id]),
      );
    const before = await ids(fx);
    await waitFor(async () => value(await fx.call('vault_index_health', {})).index.check === 'ok', { what: 'the worker to find the index sound' });
    await fx.close();

    const pages = fs.statSync(fx.dbFile).size / 4096;
    const fd = fs.openSync(fx.dbFile, 'r+');
    for (const p of [2, Math.floor(pages / 2), pages - 2]) fs.writeSync(fd, Buffer.alloc(4096, 0xa5), 0, 4096, p * 4096);
    fs.closeSync(fd);

    const next = await reopenVault(fx);
    const call = (tool: string, args: Record<string, unknown>) => next.call(tool, args);
    try {
      // Found at open, by the worker, or by a call that met a damaged page first: whichever is first, once, and set aside.
      await call('vault_search_notes', { query: '' });
      await waitFor(() => next.logger.lines.some((l) => l.message.includes('could not be used (')), { what: 'the damage to be found' });
      const after = await waitFor(
        async () => {
          const r = await call('vault_search_notes', { query: '', limit: 100 });
          return r.ok ? Object.fromEntries((r.value as { results: Array<{ path: string; id: string }> }).results.map((h) => [h.path, h.id])) : undefined;
        },
        { what: 'the rebuilt index to answer' },
      );
      expect(after).toEqual(before);
      expect(next.logger.lines.filter((l) => l.message.includes('could not be used'))).toHaveLength(1);
    } finally {
      await next.close();
    }
  });

  it("the worker's check names what it finds in a damaged file, and what keeps a file from opening", () => {
    const dir = fs.mkdtempSync(`${os.tmpdir()}/memo-qc-`);
    try {
      const file = `${dir}/x.sqlite`;
      const db = new Database(file);
      db.exec('CREATE TABLE t (a TEXT); CREATE INDEX ta ON t (a);');
      const insert = db.prepare('INSERT INTO t VALUES (?)');
      for (let i = 0; i < 2000; i++) insert.run(`row ${i} ${'x'.repeat(100)}`);
      db.close();
      expect(quickCheck(file)).toBe('ok');
      const pages = fs.statSync(file).size / 4096;
      const fd = fs.openSync(file, 'r+');
      fs.writeSync(fd, Buffer.alloc(4096, 0xa5), 0, 4096, Math.floor(pages / 2) * 4096);
      fs.closeSync(fd);
      expect(quickCheck(file)).not.toBe('ok');
      fs.writeFileSync(file, 'not a database at all, just text that is long enough to have a header');
      expect(quickCheck(file)).toMatch(/not a database/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
