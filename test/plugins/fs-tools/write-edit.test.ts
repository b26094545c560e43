import * as fs from 'node:fs';
import * as path from 'node:path';
import { ScriptedPrompter, tempDir } from '../../helpers/kernel-fixture.js';
import type { ApprovalReply, PermissionRequest } from '../../../kernel/permissions/prompter.js';
import { error, fsKernel, tempFiles, value, write, type FsFixture } from './helpers.js';
import { nth } from '../../helpers/nth.js';

const read = (p: string) => fs.readFileSync(p, 'utf8');

describe('fs-tools write_file', () => {
  let fx: FsFixture;
  beforeEach(async () => {
    fx = await fsKernel();
  });
  afterEach(async () => fx.close());

  it('creates a new file after approval; the preview shows every line added', async () => {
    const r = value(await fx.call('write_file', { path: 'new.txt', content: 'alpha\nbeta\n' }));
    expect(read(fx.at('new.txt'))).toBe('alpha\nbeta\n');
    expect(r).toMatchObject({ path: 'new.txt', bytes: 11, lines: 2, created: true, backup: null });
    expect(fx.prompter.asked).toHaveLength(1);
    const { preview, danger, effect } = nth(fx.prompter.asked, 0);
    expect({ danger, effect }).toEqual({ danger: 'medium', effect: 'write' });
    expect(preview!.kind).toBe('diff');
    expect(preview!.text).toBe('--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+alpha\n+beta\n');
    expect(fs.existsSync(fx.at('new.txt.bak'))).toBe(false);
  });

  it('writes what the person edited before approving: the edited content is previewed as a new diff first', async () => {
    write(fx.root, 'plan.md', 'step one\n');
    fx.prompter.answer({ edit: { path: 'plan.md', content: 'step one\nstep two, as I want it\n' } }, 'allow-once');
    value(await fx.call('write_file', { path: 'plan.md', content: 'step one\nstep 2\n' }));
    expect(read(fx.at('plan.md'))).toBe('step one\nstep two, as I want it\n');
    expect(fx.prompter.asked.map((q) => [q.revision, q.editable, q.preview?.text.split('\n').at(-2)])).toEqual([
      [1, true, '+step 2'],
      [2, true, '+step two, as I want it'],
    ]);
    // An edit that points the write elsewhere is checked like the agent's own call: even approved, .git stays closed.
    fs.mkdirSync(fx.at('.git'));
    fx.prompter.answer({ edit: { path: '.git/config', content: 'x' } }, 'allow-once');
    const asked = fx.prompter.asked.length;
    expect(error(await fx.call('write_file', { path: 'plan.md', content: 'again\n' })).code).toBe('PATH_PROTECTED');
    expect(fs.existsSync(fx.at('.git/config'))).toBe(false);
    // The edited call's preview refused it (.git is protected): the person was not asked to approve it.
    expect(fx.prompter.asked.slice(asked).map((q) => q.revision)).toEqual([1]);
  });

  it('overwrites a file, keeps the previous content in <name>.bak and leaves no temporary file', async () => {
    write(fx.root, 'doc.md', 'old line\nsame\n');
    fs.chmodSync(fx.at('doc.md'), 0o640);
    const r = value(await fx.call('write_file', { path: 'doc.md', content: 'new line\nsame\n' }));
    expect(read(fx.at('doc.md'))).toBe('new line\nsame\n');
    expect(read(fx.at('doc.md.bak'))).toBe('old line\nsame\n');
    expect(r).toMatchObject({ created: false, backup: 'doc.md.bak' });
    expect(fs.statSync(fx.at('doc.md')).mode & 0o777).toBe(0o640);
    expect(fx.prompter.asked[0]?.preview!.text).toBe('--- a/doc.md\n+++ b/doc.md\n@@ -1,2 +1,2 @@\n-old line\n+new line\n same\n');
    expect(tempFiles(fx.root)).toEqual([]);

    // A second overwrite replaces the backup with the content just before it.
    value(await fx.call('write_file', { path: 'doc.md', content: 'third\n' }));
    expect(read(fx.at('doc.md.bak'))).toBe('new line\nsame\n');
    expect(read(fx.at('doc.md'))).toBe('third\n');
  });

  it('writes nothing when the person denies it', async () => {
    write(fx.root, 'keep.txt', 'original');
    fx.prompter.answer('deny-once');
    expect(error(await fx.call('write_file', { path: 'keep.txt', content: 'changed' })).code).toBe('PERMISSION_DENIED');
    expect(read(fx.at('keep.txt'))).toBe('original');
    expect(fs.existsSync(fx.at('keep.txt.bak'))).toBe(false);
  });

  it('refuses a missing folder unless createDirs is true, and then creates it inside the root', async () => {
    const e = error(await fx.call('write_file', { path: 'a/b/c.txt', content: 'x' }));
    expect(e.code).toBe('NOT_FOUND');
    expect(e.message).toMatch(/"a\/b\/c.txt".*createDirs/);
    expect(fs.existsSync(fx.at('a'))).toBe(false);
    const r = value(await fx.call('write_file', { path: 'a/b/c.txt', content: 'x', createDirs: true }));
    expect(r.createdDirs).toBe(true);
    expect(read(fx.at('a/b/c.txt'))).toBe('x');
  });

  it('refuses .git, paths outside the root and a directory', async () => {
    fs.mkdirSync(fx.at('.git'));
    write(fx.root, '.git/config', '[core]\n');
    expect(error(await fx.call('write_file', { path: '.git/config', content: 'x' })).code).toBe('PATH_PROTECTED');
    expect(read(fx.at('.git/config'))).toBe('[core]\n');
    expect(error(await fx.call('write_file', { path: '../escape.txt', content: 'x' })).code).toBe('PATH_OUTSIDE_ROOT');
    const outside = tempDir('memo-outside-');
    fs.symlinkSync(outside, fx.at('out'));
    expect(error(await fx.call('write_file', { path: 'out/x.txt', content: 'x', createDirs: true })).code).toBe('PATH_OUTSIDE_ROOT');
    expect(fs.readdirSync(outside)).toEqual([]);
    fs.mkdirSync(fx.at('dir'));
    expect(error(await fx.call('write_file', { path: 'dir', content: 'x' })).code).toBe('VALIDATION');
  });

  it('writes through a link inside the root to its target and keeps the link', async () => {
    write(fx.root, 'target.txt', 'v1\n');
    fs.symlinkSync('target.txt', fx.at('alias.txt'));
    value(await fx.call('write_file', { path: 'alias.txt', content: 'v2\n' }));
    expect(fs.lstatSync(fx.at('alias.txt')).isSymbolicLink()).toBe(true);
    expect(read(fx.at('target.txt'))).toBe('v2\n');
    expect(read(fx.at('target.txt.bak'))).toBe('v1\n');
  });

  it('refuses with CONFLICT when the file changes between the preview and the write', async () => {
    class MeddlingPrompter extends ScriptedPrompter {
      override ask(request: PermissionRequest, signal: AbortSignal): Promise<ApprovalReply> {
        fs.writeFileSync(path.join(fx.root, 'race.txt'), 'someone else wrote this\n');
        return super.ask(request, signal);
      }
    }
    await fx.close();
    fx = await fsKernel({ prompter: new MeddlingPrompter('allow-once') });
    write(fx.root, 'race.txt', 'before\n');
    const e = error(await fx.call('write_file', { path: 'race.txt', content: 'mine\n' }));
    expect(e.code).toBe('CONFLICT');
    expect(e.message).toMatch(/changed after the preview/);
    expect(read(fx.at('race.txt'))).toBe('someone else wrote this\n');
  });
});

describe('fs-tools edit_file', () => {
  let fx: FsFixture;
  beforeEach(async () => {
    fx = await fsKernel();
  });
  afterEach(async () => fx.close());

  it('replaces the one occurrence of oldText, returns a unified diff, and the person saw the same diff', async () => {
    write(fx.root, 'src/app.ts', 'const a = 1;\nconst b = 2;\nconsole.log(a + b);\n');
    const r = value(await fx.call('edit_file', { path: 'src/app.ts', oldText: 'const b = 2;', newText: 'const b = 40;' }));
    expect(read(fx.at('src/app.ts'))).toBe('const a = 1;\nconst b = 40;\nconsole.log(a + b);\n');
    expect(read(fx.at('src/app.ts.bak'))).toBe('const a = 1;\nconst b = 2;\nconsole.log(a + b);\n');
    expect(r).toMatchObject({ mode: 'replace', replacements: 1, changed: true, backup: 'src/app.ts.bak' });
    expect(r.diff).toBe('--- a/src/app.ts\n+++ b/src/app.ts\n@@ -1,3 +1,3 @@\n const a = 1;\n-const b = 2;\n+const b = 40;\n console.log(a + b);\n');
    expect(fx.prompter.asked[0]?.preview).toEqual({ kind: 'diff', text: r.diff });
    expect(tempFiles(fx.at('src'))).toEqual([]);
  });

  it('fails with VALIDATION naming the count when oldText does not occur, and changes nothing', async () => {
    write(fx.root, 'f.txt', 'hello world\n');
    const e = error(await fx.call('edit_file', { path: 'f.txt', oldText: 'goodbye', newText: 'x' }));
    expect(e.code).toBe('VALIDATION');
    expect(e.message).toMatch(/oldText occurs 0 times in "f.txt", but 1 occurrence was expected/);
    expect(read(fx.at('f.txt'))).toBe('hello world\n');
    expect(fs.existsSync(fx.at('f.txt.bak'))).toBe(false);
  });

  it('fails with VALIDATION naming the count when oldText occurs twice, and replaces both when told to expect 2', async () => {
    write(fx.root, 'f.txt', 'x = 1\ny = 1\n');
    const e = error(await fx.call('edit_file', { path: 'f.txt', oldText: '= 1', newText: '= 2' }));
    expect(e.code).toBe('VALIDATION');
    expect(e.message).toMatch(/oldText occurs 2 times/);
    expect(e.message).toMatch(/expectedOccurrences to 2/);
    expect(read(fx.at('f.txt'))).toBe('x = 1\ny = 1\n');
    const r = value(await fx.call('edit_file', { path: 'f.txt', oldText: '= 1', newText: '= $& 2', expectedOccurrences: 2 }));
    expect(r.replacements).toBe(2);
    expect(read(fx.at('f.txt'))).toBe('x = $& 2\ny = $& 2\n');
  });

  it('replaces a range of lines (1-based, inclusive)', async () => {
    write(fx.root, 'f.txt', 'l1\nl2\nl3\nl4\n');
    const r = value(await fx.call('edit_file', { path: 'f.txt', startLine: 2, endLine: 3, newText: 'two and three' }));
    expect(read(fx.at('f.txt'))).toBe('l1\ntwo and three\nl4\n');
    expect(r).toMatchObject({ mode: 'lines', startLine: 2, endLine: 3, linesReplaced: 2 });
    expect(r.diff).toContain('-l2\n-l3\n+two and three\n');
  });

  it('keeps CRLF line endings when replacing lines', async () => {
    write(fx.root, 'win.txt', 'a\r\nb\r\nc\r\n');
    value(await fx.call('edit_file', { path: 'win.txt', startLine: 2, endLine: 2, newText: 'B' }));
    expect(read(fx.at('win.txt'))).toBe('a\r\nB\r\nc\r\n');
  });

  it('refuses a line range past the end, and both modes at once', async () => {
    write(fx.root, 'f.txt', 'l1\nl2\n');
    const e = error(await fx.call('edit_file', { path: 'f.txt', startLine: 2, endLine: 3, newText: 'x' }));
    expect(e.code).toBe('VALIDATION');
    expect(e.message).toMatch(/Lines 2-3 is out of range: "f.txt" has 2 lines/);
    expect(error(await fx.call('edit_file', { path: 'f.txt', oldText: 'l1', startLine: 1, endLine: 1, newText: 'x' })).code).toBe('VALIDATION');
    expect(error(await fx.call('edit_file', { path: 'f.txt', newText: 'x' })).code).toBe('VALIDATION');
    expect(read(fx.at('f.txt'))).toBe('l1\nl2\n');
  });

  it('says NOT_FOUND for a missing file and refuses to edit a binary one', async () => {
    expect(error(await fx.call('edit_file', { path: 'missing.txt', oldText: 'a', newText: 'b' })).code).toBe('NOT_FOUND');
    write(fx.root, 'b.bin', Buffer.from([1, 0, 2]));
    expect(error(await fx.call('edit_file', { path: 'b.bin', oldText: 'a', newText: 'b' })).message).toMatch(/binary/);
  });
});

describe('fs-tools insert_line and delete_lines', () => {
  let fx: FsFixture;
  beforeEach(async () => {
    fx = await fsKernel();
  });
  afterEach(async () => fx.close());

  it('inserts before a line, and line = total + 1 appends', async () => {
    write(fx.root, 'f.txt', 'l1\nl2');
    const r = value(await fx.call('insert_line', { path: 'f.txt', line: 2, content: 'between' }));
    expect(read(fx.at('f.txt'))).toBe('l1\nbetween\nl2');
    expect(r).toMatchObject({ line: 2, linesInserted: 1, backup: 'f.txt.bak' });
    expect(fx.prompter.asked[0]?.preview).toEqual({ kind: 'diff', text: r.diff });
    expect(r.diff).toContain('+between\n');
    value(await fx.call('insert_line', { path: 'f.txt', line: 4, content: 'end\n' }));
    expect(read(fx.at('f.txt'))).toBe('l1\nbetween\nl2\nend\n');
  });

  it('inserts into an empty file at line 1', async () => {
    write(fx.root, 'empty.txt', '');
    value(await fx.call('insert_line', { path: 'empty.txt', line: 1, content: 'first' }));
    expect(read(fx.at('empty.txt'))).toBe('first\n');
  });

  it('refuses an insert past total + 1 with VALIDATION and changes nothing', async () => {
    write(fx.root, 'f.txt', 'l1\nl2\n');
    const e = error(await fx.call('insert_line', { path: 'f.txt', line: 4, content: 'x' }));
    expect(e.code).toBe('VALIDATION');
    expect(e.message).toMatch(/Line 4 is out of range: "f.txt" has 2 lines/);
    expect(read(fx.at('f.txt'))).toBe('l1\nl2\n');
  });

  it('deletes an inclusive range of lines and shows it as a diff first', async () => {
    write(fx.root, 'f.txt', 'l1\nl2\nl3\nl4\n');
    const r = value(await fx.call('delete_lines', { path: 'f.txt', startLine: 2, endLine: 3 }));
    expect(read(fx.at('f.txt'))).toBe('l1\nl4\n');
    expect(r).toMatchObject({ startLine: 2, endLine: 3, linesDeleted: 2 });
    expect(fx.prompter.asked[0]?.preview!.text).toBe('--- a/f.txt\n+++ b/f.txt\n@@ -1,4 +1,2 @@\n l1\n-l2\n-l3\n l4\n');
    expect(read(fx.at('f.txt.bak'))).toBe('l1\nl2\nl3\nl4\n');
  });

  it('refuses a delete range past the end or reversed with VALIDATION', async () => {
    write(fx.root, 'f.txt', 'l1\nl2\n');
    const e = error(await fx.call('delete_lines', { path: 'f.txt', startLine: 2, endLine: 5 }));
    expect(e.code).toBe('VALIDATION');
    expect(e.message).toMatch(/has 2 lines/);
    expect(error(await fx.call('delete_lines', { path: 'f.txt', startLine: 2, endLine: 1 })).code).toBe('VALIDATION');
    expect(read(fx.at('f.txt'))).toBe('l1\nl2\n');
  });
});
