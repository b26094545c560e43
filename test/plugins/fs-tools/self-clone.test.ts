import * as fs from 'node:fs';
import * as path from 'node:path';
import { tempDir } from '../../helpers/kernel-fixture.js';
import { error, fsKernel, value, write, type FsFixture } from './helpers.js';
import { nth } from '../../helpers/nth.js';

describe('fs-tools self_clone', () => {
  let fx: FsFixture;
  beforeEach(async () => {
    fx = await fsKernel();
  });
  afterEach(async () => fx.close());

  it('refuses a target inside the project, and creates nothing', async () => {
    const target = fx.at('sub/copy');
    const e = error(await fx.call('self_clone', { target }));
    expect(e.code).toBe('VALIDATION');
    expect(e.message).toMatch(/inside the project/);
    expect(fs.existsSync(fx.at('sub'))).toBe(false);
  });

  it('refuses a target that contains the project', async () => {
    const e = error(await fx.call('self_clone', { target: path.dirname(fx.root) }));
    expect(e.code).toBe('VALIDATION');
    expect(e.message).toMatch(/contains the project/);
  });

  it('refuses a system directory, also through a link to one', async () => {
    for (const target of ['/usr/local/memo-clone-test', '/etc/memo-clone-test']) {
      const e = error(await fx.call('self_clone', { target }));
      expect([target, e.code]).toEqual([target, 'PATH_PROTECTED']);
      expect(fs.existsSync(target)).toBe(false);
    }
    const base = tempDir('memo-links-');
    fs.symlinkSync('/usr/local', path.join(base, 'sneaky'));
    expect(error(await fx.call('self_clone', { target: path.join(base, 'sneaky', 'memo-clone-test') })).code).toBe('PATH_PROTECTED');
  });

  it('refuses a non-empty target with CONFLICT and a relative target with VALIDATION', async () => {
    const busy = tempDir('memo-clone-');
    fs.writeFileSync(path.join(busy, 'occupied.txt'), 'x');
    expect(error(await fx.call('self_clone', { target: busy })).code).toBe('CONFLICT');
    expect(fs.readdirSync(busy)).toEqual(['occupied.txt']);
    expect(error(await fx.call('self_clone', { target: 'relative/dir' })).code).toBe('VALIDATION');
  });

  it('copies the tree, skips node_modules and links leading out, keeps links pointing inside, and reports it all', async () => {
    const outside = tempDir('memo-outside-');
    write(outside, 'secret.txt', 'SECRET');
    write(fx.root, 'README.md', 'hello\n');
    write(fx.root, 'src/index.ts', 'export {};\n');
    write(fx.root, '.git/HEAD', 'ref: refs/heads/main\n');
    write(fx.root, 'node_modules/dep/index.js', 'module.exports = 1;\n');
    write(fx.root, 'pkg/node_modules/x.js', 'x');
    fs.chmodSync(write(fx.root, 'bin/run.sh', '#!/bin/sh\n'), 0o755);
    fs.symlinkSync('../README.md', fx.at('src/readme-link'));
    fs.symlinkSync(fx.at('src'), fx.at('abs-src-link'));
    fs.symlinkSync(path.join(outside, 'secret.txt'), fx.at('leak'));
    fs.symlinkSync('missing', fx.at('dangling'));
    const target = path.join(tempDir('memo-clone-'), 'copy');

    const r = value(await fx.call('self_clone', { target }));
    const preview = nth(fx.prompter.asked, 0);
    expect({ danger: preview.danger, effect: preview.effect }).toEqual({ danger: 'dangerous', effect: 'write' });
    expect(preview.preview!.kind).toBe('text');
    expect(preview.preview!.text).toMatch(
      /Copies the project .* into a new directory ".*copy": 4 files in 5 folders, 48 bytes; 2 node_modules folders skipped, 2 symbolic links skipped/,
    );

    expect(r).toMatchObject({ target, files: 4, bytes: 48, symlinks: 2 });
    expect(r.skipped.nodeModules.sort()).toEqual(['node_modules', 'pkg/node_modules']);
    expect(r.skipped.symlinks.sort((a: any, b: any) => a.path.localeCompare(b.path))).toEqual([
      { path: 'dangling', reason: 'dangling or unresolvable' },
      { path: 'leak', reason: 'points outside the project' },
    ]);
    expect(fs.readFileSync(path.join(target, 'README.md'), 'utf8')).toBe('hello\n');
    expect(fs.readFileSync(path.join(target, '.git/HEAD'), 'utf8')).toBe('ref: refs/heads/main\n');
    expect(fs.statSync(path.join(target, 'bin/run.sh')).mode & 0o777).toBe(0o755);
    expect(fs.existsSync(path.join(target, 'node_modules'))).toBe(false);
    expect(fs.existsSync(path.join(target, 'pkg'))).toBe(true);
    expect(fs.existsSync(path.join(target, 'pkg/node_modules'))).toBe(false);
    expect(fs.existsSync(path.join(target, 'leak'))).toBe(false);
    // Links inside the project become relative links inside the copy, never back into the original.
    expect(fs.readlinkSync(path.join(target, 'src/readme-link'))).toBe('../README.md');
    expect(fs.readlinkSync(path.join(target, 'abs-src-link'))).toBe('src');
    expect(fs.realpathSync(path.join(target, 'abs-src-link'))).toBe(fs.realpathSync(path.join(target, 'src')));
  });

  it('reports progress every few hundred files', async () => {
    for (let i = 0; i < 600; i++) write(fx.root, `many/f${i}.txt`, 'x');
    const updates: any[] = [];
    const target = path.join(tempDir('memo-clone-'), 'copy');
    const r = value(await fx.call('self_clone', { target }, (u) => updates.push(u)));
    expect(r.files).toBe(600);
    expect(updates.map((u) => u.progress)).toEqual([250, 500, 600]);
    expect(updates.at(-1)).toMatchObject({ total: 600 });
    expect(fs.readdirSync(path.join(target, 'many'))).toHaveLength(600);
  });

  it('stops copying when the call is cancelled', async () => {
    for (let i = 0; i < 2000; i++) write(fx.root, `many/f${i}.txt`, 'x');
    const target = path.join(tempDir('memo-clone-'), 'copy');
    const controller = new AbortController();
    const r = await fx.kernel.invoke({
      tool: 'self_clone',
      args: { target },
      caller: { kind: 'agent' },
      signal: controller.signal,
      onProgress: () => controller.abort(),
    });
    expect(error(r).code).toBe('CANCELLED');
    await new Promise((resolve) => setTimeout(resolve, 200));
    const copied = fs.readdirSync(path.join(target, 'many')).length;
    expect(copied).toBeGreaterThanOrEqual(250);
    expect(copied).toBeLessThan(2000);
  });

  it('copies into an existing empty directory', async () => {
    write(fx.root, 'a.txt', 'a');
    const target = tempDir('memo-clone-');
    expect(value(await fx.call('self_clone', { target })).files).toBe(1);
    expect(fs.readFileSync(path.join(target, 'a.txt'), 'utf8')).toBe('a');
  });
});
