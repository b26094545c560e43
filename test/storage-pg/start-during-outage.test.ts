/**
 * A kernel started while its PostgreSQL server is down (or still starting) waits for it, with a line
 * saying so, and loads its packs once it answers; it does not fail (nor, as a process, exit with a
 * stack trace). When the server stays down past the wait, loading fails with a sentence saying how
 * long it waited. The reliability run found the first case: a writer started while PostgreSQL came
 * back threw "cannot be opened: connect ECONNREFUSED" out of KernelStateDb.open and ended.
 */
import * as path from 'node:path';
import { BUILTIN_PACKS_DIR } from '../../kernel/index.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { makeKernel, tempDir } from '../helpers/kernel-fixture.js';

let pg: TestPostgres;
let url: string;

beforeAll(async () => {
  pg = await startPostgres();
  url = await pg.database('memo');
}, 120_000);

const warnings = (lines: { level: string; message: string }[]) => lines.filter((l) => l.level === 'warn').map((l) => l.message);

describe('a kernel started during a database outage', () => {
  it('waits for the database with a line saying so, then loads its packs and runs calls', async () => {
    await pg.stop();
    const fx = makeKernel({ databaseUrl: url, dataDir: path.join(tempDir('memo-pg-outage-start-'), 'data') });
    try {
      let loaded = false;
      const loading = fx.kernel.loadPacks([{ dir: BUILTIN_PACKS_DIR, source: 'builtin', only: ['fs-tools'] }]).then(() => (loaded = true));
      // Told, before the server is back, that it waits (and for how long at most).
      await waitForLine(fx.logger.lines, /cannot be reached yet \(.*ECONNREFUSED.*\): waiting up to 60 s for it/);
      expect(loaded).toBe(false);
      await pg.start();
      await loading;
      expect(fx.kernel.packs.get('fs-tools')).toMatchObject({ status: 'loaded' });
      expect(fx.logger.lines.map((l) => l.message)).toContainEqual(expect.stringMatching(/the database answers: the kernel state in .* is read/));
      const r = await fx.kernel.invoke({ tool: 'list_directory', args: { path: '.' }, caller: { kind: 'cli' } });
      expect(r).toMatchObject({ ok: true });
      expect(warnings(fx.logger.lines).join('\n')).not.toContain(pg.password);
    } finally {
      await pg.start().catch(() => {});
      await fx.close();
    }
  });

  it('fails loading with a sentence saying how long it waited when the server stays down', async () => {
    await pg.stop();
    const fx = makeKernel({ databaseUrl: url, databaseStartWaitMs: 1500, dataDir: path.join(tempDir('memo-pg-outage-down-'), 'data') });
    try {
      await expect(fx.kernel.loadPacks([{ dir: BUILTIN_PACKS_DIR, source: 'builtin', only: ['fs-tools'] }])).rejects.toThrow(
        /cannot be opened: connect ECONNREFUSED .*\(Memo waited \d+ s for it to answer\)/,
      );
    } finally {
      await pg.start();
      await fx.close();
    }
  });
});

/** Resolves once a logged line matches (checked as lines arrive; the test's own timeout bounds it). */
async function waitForLine(lines: { message: string }[], re: RegExp): Promise<void> {
  while (!lines.some((l) => re.test(l.message))) await new Promise((r) => setTimeout(r, 20));
}
