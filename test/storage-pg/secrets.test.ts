/**
 * The database URL's password, end to end through the real kernel: whether the server takes it or
 * refuses it, it appears in no tool result, no audit line (in memory or in the JSONL file), no log
 * line and no error a person sees; what they see names the database with the password masked.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createKernel } from '../../kernel/kernel.js';
import { PLUGINS, routinesKernel, value } from '../plugins/routines/helpers.js';
import { echoPack, makeKernel, tempDir } from '../helpers/kernel-fixture.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';

let server: TestPostgres;
beforeAll(async () => {
  server = await startPostgres();
}, 120_000);

const saved = process.env.MEMO_DATABASE_URL;
afterEach(() => {
  if (saved === undefined) delete process.env.MEMO_DATABASE_URL;
  else process.env.MEMO_DATABASE_URL = saved;
});

/** Everything a kernel left where a person, a log reader or an auditor could look. */
function everythingShown(
  fx: { dataDir: string; logger: { lines: readonly unknown[] }; kernel: { audit: { tail(): readonly unknown[] } } },
  results: unknown[],
): string {
  const auditFile = path.join(fx.dataDir, 'agent-audit.jsonl');
  return [
    JSON.stringify(results),
    JSON.stringify(fx.logger.lines),
    JSON.stringify(fx.kernel.audit.tail()),
    fs.existsSync(auditFile) ? fs.readFileSync(auditFile, 'utf8') : '',
  ].join('\n');
}

const forms = () => [server.password, encodeURIComponent(server.password)];

describe('the database password', () => {
  it('stays out of results, audit lines and logs when the server refuses it, while the errors name the database', async () => {
    const url = (await server.database()).replace(encodeURIComponent(server.password), encodeURIComponent('wrong-5e7c/@:'));
    process.env.MEMO_DATABASE_URL = url;
    const fx = makeKernel({ packs: [echoPack()] });
    // The kernel's own settings (which packs are on) live in the database: packs do not load on a guess.
    let loadError = '';
    await fx.kernel.loadPacks([{ dir: PLUGINS, source: 'builtin', only: ['routines'] }]).catch((err: Error) => (loadError = err.message));
    expect(loadError).toMatch(new RegExp(`postgres://memo:\\[masked\\]@127\\.0\\.0\\.1:${server.port}/t\\d+.*password authentication failed`));
    // A call is refused, fail closed: its audit line could not be written to the database.
    const r = await fx.kernel.invoke({ tool: 'echo_safe', args: { text: 'x' }, caller: { kind: 'agent', conversationId: 'c-1' } });
    expect(r.ok).toBe(false);
    const message = r.ok ? '' : r.error.message;
    expect(message).toMatch(/audit/);
    expect(message).toMatch(new RegExp(`postgres://memo:\\[masked\\]@127\\.0\\.0\\.1:${server.port}/t\\d+`));
    expect(message).toContain('password authentication failed');
    const shown = everythingShown(fx, [r, loadError]);
    for (const secret of ['wrong-5e7c', encodeURIComponent('wrong-5e7c/@:'), ...forms()]) expect(shown).not.toContain(secret);
    await fx.close();
  });

  it('stays out of results, audit lines and logs when everything works', async () => {
    process.env.MEMO_DATABASE_URL = await server.database();
    const fx = await routinesKernel();
    const created = value(await fx.call('create_routine', { name: 'Daily', prompt: 'p', schedule: { kind: 'cron', cron: '0 9 * * *', time_zone: 'UTC' } }));
    const listed = await fx.call('list_routines', {});
    const shown = everythingShown(fx, [created, listed]);
    expect(shown).toContain('Daily');
    for (const secret of forms()) expect(shown).not.toContain(secret);
    await fx.close();
  });

  it('is not repeated when the setting cannot be used: the kernel refuses to start and says why', () => {
    process.env.MEMO_DATABASE_URL = 'postgres://memo:hunter2-secret@db.example:notaport/memo';
    expect(() => createKernel({ root: tempDir(), dataDir: tempDir() })).toThrow(/MEMO_DATABASE_URL is not a usable PostgreSQL URL: .*The value is not shown/);
    let message = '';
    try {
      createKernel({ root: tempDir(), dataDir: tempDir() });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).not.toContain('hunter2');
    expect(() => createKernel({ root: tempDir(), dataDir: tempDir(), databaseUrl: 'mysql://memo:hunter2@db/memo' })).toThrow(
      /^The databaseUrl option is not a usable PostgreSQL URL: its scheme is "mysql"/,
    );
  });
});
