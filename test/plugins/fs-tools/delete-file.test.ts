import * as fs from 'node:fs';
import * as path from 'node:path';
import { tempDir } from '../../helpers/kernel-fixture.js';
import { error, fsKernel, value, write, type FsFixture } from './helpers.js';
import { nth } from '../../helpers/nth.js';

describe('fs-tools delete_file', () => {
  let fx: FsFixture;
  beforeEach(async () => {
    fx = await fsKernel();
  });
  afterEach(async () => fx.close());

  it('deletes a file after the person saw its size and line count', async () => {
    write(fx.root, 'notes.txt', 'a\nb\nc\n');
    const r = value(await fx.call('delete_file', { path: 'notes.txt' }));
    expect(fs.existsSync(fx.at('notes.txt'))).toBe(false);
    expect(r).toMatchObject({ path: 'notes.txt', type: 'file', files: 1, bytes: 6 });
    const asked = nth(fx.prompter.asked, 0);
    expect({ danger: asked.danger, effect: asked.effect }).toEqual({ danger: 'dangerous', effect: 'delete' });
    expect(asked.preview).toEqual({ kind: 'delete', text: 'Deletes the file "notes.txt": 6 bytes, 3 lines.' });
  });

  it('asks every time, even after an allow-session answer', async () => {
    write(fx.root, 'a.txt', 'a');
    write(fx.root, 'b.txt', 'b');
    fx.prompter.answer('allow-session');
    value(await fx.call('delete_file', { path: 'a.txt' }));
    fx.prompter.answer('deny-once');
    expect(error(await fx.call('delete_file', { path: 'b.txt' })).code).toBe('PERMISSION_DENIED');
    expect(fs.existsSync(fx.at('b.txt'))).toBe(true);
    expect(fx.prompter.asked).toHaveLength(2);
  });

  it('refuses .git/config, .git itself and the root with PATH_PROTECTED', async () => {
    write(fx.root, '.git/config', '[core]\n');
    for (const p of ['.git/config', '.git', '.GIT/config', '.', './', fx.root]) {
      const e = error(await fx.call('delete_file', { path: p, recursive: true }));
      expect([p, e.code]).toEqual([p, 'PATH_PROTECTED']);
    }
    expect(fs.readFileSync(fx.at('.git/config'), 'utf8')).toBe('[core]\n');
    expect(fs.existsSync(fx.root)).toBe(true);
  });

  it('refuses deleting through a link to .git, and deletes links to .git or to the root themselves', async () => {
    write(fx.root, '.git/HEAD', 'ref: refs/heads/main\n');
    fs.symlinkSync('.git', fx.at('g'));
    fs.symlinkSync('.', fx.at('self'));
    expect(error(await fx.call('delete_file', { path: 'g/HEAD' })).code).toBe('PATH_PROTECTED');
    value(await fx.call('delete_file', { path: 'g' }));
    value(await fx.call('delete_file', { path: 'self' }));
    expect(fs.existsSync(fx.at('g'))).toBe(false);
    expect(fs.existsSync(fx.at('self'))).toBe(false);
    expect(fs.readFileSync(fx.at('.git/HEAD'), 'utf8')).toBe('ref: refs/heads/main\n');
  });

  it('deletes a symbolic link, not its target, inside or outside the root', async () => {
    write(fx.root, 'real.txt', 'keep me');
    fs.symlinkSync('real.txt', fx.at('link.txt'));
    const r = value(await fx.call('delete_file', { path: 'link.txt' }));
    expect(r).toMatchObject({ type: 'symlink', symlinks: 1 });
    expect(fs.existsSync(fx.at('link.txt'))).toBe(false);
    expect(fs.readFileSync(fx.at('real.txt'), 'utf8')).toBe('keep me');
    expect(fx.prompter.asked[0]?.preview!.text).toMatch(/symbolic link "link.txt" \(it points to "real.txt" inside the workspace\)/);

    const outside = tempDir('memo-outside-');
    write(outside, 'precious/data.txt', 'precious');
    fs.symlinkSync(path.join(outside, 'precious'), fx.at('outdir'));
    value(await fx.call('delete_file', { path: 'outdir', recursive: true }));
    expect(fs.existsSync(fx.at('outdir'))).toBe(false);
    expect(fs.readFileSync(path.join(outside, 'precious/data.txt'), 'utf8')).toBe('precious');
    const preview = nth(fx.prompter.asked, 1).preview!.text;
    expect(preview).toMatch(/outside the workspace/);
    expect(preview).not.toContain(outside);
  });

  it('deletes a dangling link', async () => {
    fs.symlinkSync('nowhere.txt', fx.at('dangling'));
    value(await fx.call('delete_file', { path: 'dangling' }));
    expect(() => fs.lstatSync(fx.at('dangling'))).toThrow();
  });

  it('refuses a non-empty directory without recursive, and deletes it with recursive after showing what is lost', async () => {
    write(fx.root, 'build/a.js', 'aaaa');
    write(fx.root, 'build/sub/b.js', 'bb');
    fs.symlinkSync(tempDir('memo-outside-'), fx.at('build/out-link'));
    const e = error(await fx.call('delete_file', { path: 'build' }));
    expect(e.code).toBe('VALIDATION');
    expect(e.message).toMatch(/not empty.*recursive: true/);
    expect(fs.existsSync(fx.at('build/a.js'))).toBe(true);

    fx.prompter.asked.length = 0;
    const r = value(await fx.call('delete_file', { path: 'build', recursive: true }));
    expect(fs.existsSync(fx.at('build'))).toBe(false);
    expect(r).toMatchObject({ type: 'dir', files: 2, dirs: 2, symlinks: 1, bytes: 6 });
    const preview = nth(fx.prompter.asked, 0).preview!;
    expect(preview.kind).toBe('delete');
    expect(preview.text).toMatch(/^Deletes the directory "build" and everything in it: 2 files, 1 folder, 1 symbolic link, 6 bytes in total\. It contains: /);
    expect(preview.text).toContain('a.js');
    expect(preview.text).toContain('sub/');
  });

  it('deletes an empty directory without recursive', async () => {
    fs.mkdirSync(fx.at('empty'));
    value(await fx.call('delete_file', { path: 'empty' }));
    expect(fs.existsSync(fx.at('empty'))).toBe(false);
  });

  it('refuses a directory that contains a nested git repository', async () => {
    write(fx.root, 'vendor/lib/.git/HEAD', 'x');
    const e = error(await fx.call('delete_file', { path: 'vendor', recursive: true }));
    expect(e.code).toBe('PATH_PROTECTED');
    expect(e.message).toContain('vendor/lib/.git');
    expect(fs.existsSync(fx.at('vendor/lib/.git/HEAD'))).toBe(true);
  });

  it('says NOT_FOUND for a missing path and refuses paths outside the root', async () => {
    expect(error(await fx.call('delete_file', { path: 'ghost.txt' })).code).toBe('NOT_FOUND');
    expect(error(await fx.call('delete_file', { path: '../x' })).code).toBe('PATH_OUTSIDE_ROOT');
    const outside = tempDir('memo-outside-');
    write(outside, 'f.txt', 'x');
    fs.symlinkSync(outside, fx.at('out'));
    expect(error(await fx.call('delete_file', { path: 'out/f.txt' })).code).toBe('PATH_OUTSIDE_ROOT');
    expect(fs.existsSync(path.join(outside, 'f.txt'))).toBe(true);
  });
});
