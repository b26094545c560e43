/**
 * write_file to a folder that is not there, without createDirs: true, is a call that cannot run,
 * known before anyone is asked. It is refused before the permission gate (the tool's assess), with
 * the error the write itself would give, however the gate would answer: nobody is asked, a stored
 * allow or always-allow does not let it through to fail later, and an edit that points it there is
 * refused as the edit's problem rather than after the person answered.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { error, fsKernel, value, type FsFixture } from './helpers.js';

const FOLDER_MISSING = /The folder for "drafts\/page\.html" does not exist\. Pass createDirs: true to create it, or check the path\./;

/** The audit lines of write_file calls, oldest first. */
function auditLines(fx: FsFixture): Array<{ decision: string; outcome: string; error?: { code: string } }> {
  return fs
    .readFileSync(path.join(fx.dataDir, 'agent-audit.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .filter((l) => l.tool === 'write_file');
}

describe('write_file: a missing folder is refused before anyone is asked', () => {
  let fx: FsFixture;
  beforeEach(async () => {
    fx = await fsKernel();
  });
  afterEach(async () => fx.close());

  it('asks nobody and writes nothing', async () => {
    const e = error(await fx.call('write_file', { path: 'drafts/page.html', content: '<p>x</p>' }));
    expect(e).toMatchObject({ code: 'NOT_FOUND', message: expect.stringMatching(FOLDER_MISSING) });
    expect(fx.prompter.asked).toEqual([]);
    expect(fs.existsSync(fx.at('drafts'))).toBe(false);
  });

  it('is refused before the gate even when a stored allow or always-allow would let it through', async () => {
    await fx.kernel.admin.allow('write_file', undefined);
    expect(error(await fx.call('write_file', { path: 'drafts/page.html', content: 'x' })).message).toMatch(FOLDER_MISSING);
    await fx.kernel.admin.revoke('write_file');
    fx.kernel.permissions.setAlwaysAllow(true);
    expect(error(await fx.call('write_file', { path: 'drafts/page.html', content: 'x' })).message).toMatch(FOLDER_MISSING);
    // Neither call was allowed by the gate and then failed: both were refused before it.
    expect(auditLines(fx).map((l) => [l.decision, l.outcome, l.error?.code])).toEqual([
      ['none', 'error', 'NOT_FOUND'],
      ['none', 'error', 'NOT_FOUND'],
    ]);
    expect(fx.prompter.asked).toEqual([]);
  });

  it('refuses an edit that points the write at a missing folder as the edit’s problem, and asks again about the call as it was', async () => {
    fx.prompter.answer({ edit: { path: 'drafts/page.html', content: 'edited' } }, 'allow-once');
    value(await fx.call('write_file', { path: 'page.html', content: 'first' }));
    expect(fx.prompter.asked.map((q) => [q.revision, q.editProblem])).toEqual([
      [1, undefined],
      [1, expect.stringMatching(FOLDER_MISSING)],
    ]);
    expect(fs.readFileSync(fx.at('page.html'), 'utf8')).toBe('first');
    expect(fs.existsSync(fx.at('drafts'))).toBe(false);
  });

  it('with createDirs: true, or a folder that is there, is asked about and written as before', async () => {
    value(await fx.call('write_file', { path: 'drafts/page.html', content: 'a', createDirs: true }));
    value(await fx.call('write_file', { path: 'drafts/other.html', content: 'b' }));
    expect(fx.prompter.asked).toHaveLength(2);
    expect(fs.readFileSync(fx.at('drafts/other.html'), 'utf8')).toBe('b');
  });
});
