import * as fs from 'node:fs';
import * as path from 'node:path';
import { tempDir } from '../../helpers/kernel-fixture.js';
import { error, fsKernel, value, write, type FsFixture } from './helpers.js';

describe('fs-tools list_directory', () => {
  let fx: FsFixture;
  beforeEach(async () => {
    fx = await fsKernel();
  });
  afterEach(async () => fx.close());

  it('lists names, types and file sizes sorted by name, hiding dot entries unless showHidden', async () => {
    write(fx.root, 'b.txt', '12345');
    write(fx.root, 'a/inner.txt', 'x');
    write(fx.root, '.env', 'SECRET=1');
    fs.symlinkSync('b.txt', fx.at('c-link'));
    const r = value(await fx.call('list_directory', {}));
    expect(r.entries).toEqual([
      { name: 'a', type: 'dir', size: null },
      { name: 'b.txt', type: 'file', size: 5 },
      { name: 'c-link', type: 'symlink', size: null },
    ]);
    expect(r).toMatchObject({ total: 3, truncated: false });
    expect(fx.prompter.asked).toHaveLength(0);
    const all = value(await fx.call('list_directory', { path: '.', showHidden: true }));
    expect(all.entries.map((e: { name: string }) => e.name)).toEqual(['.env', 'a', 'b.txt', 'c-link']);
    expect(value(await fx.call('list_directory', { path: 'a' })).entries).toEqual([{ name: 'inner.txt', type: 'file', size: 1 }]);
  });

  it('returns at most 1000 entries and says truncated with the total', async () => {
    fs.mkdirSync(fx.at('many'));
    for (let i = 0; i < 1005; i++) fs.writeFileSync(fx.at(`many/f${String(i).padStart(4, '0')}.txt`), '');
    const r = value(await fx.call('list_directory', { path: 'many' }));
    expect(r.entries).toHaveLength(1000);
    expect(r).toMatchObject({ total: 1005, truncated: true });
    expect(r.entries[999].name).toBe('f0999.txt');
    expect(r.summary).toMatch(/1005 entries, first 1000 returned/);
  });

  it('says NOT_FOUND for a missing folder, VALIDATION for a file, and refuses a link leading outside', async () => {
    write(fx.root, 'f.txt', 'x');
    expect(error(await fx.call('list_directory', { path: 'nope' })).code).toBe('NOT_FOUND');
    expect(error(await fx.call('list_directory', { path: 'f.txt' })).code).toBe('VALIDATION');
    fs.symlinkSync(tempDir('memo-outside-'), fx.at('out'));
    expect(error(await fx.call('list_directory', { path: 'out' })).code).toBe('PATH_OUTSIDE_ROOT');
  });
});

describe('fs-tools get_file_info', () => {
  let fx: FsFixture;
  beforeEach(async () => {
    fx = await fsKernel();
  });
  afterEach(async () => fx.close());

  it('gives type, size, octal mode and ISO mtime of a file', async () => {
    write(fx.root, 'f.sh', '#!/bin/sh\n');
    fs.chmodSync(fx.at('f.sh'), 0o750);
    const when = new Date('2024-05-06T07:08:09.000Z');
    fs.utimesSync(fx.at('f.sh'), when, when);
    const r = value(await fx.call('get_file_info', { path: 'f.sh' }));
    expect(r).toMatchObject({ path: 'f.sh', type: 'file', size: 10, mode: '0750', mtime: '2024-05-06T07:08:09.000Z', isSymlink: false });
    expect(r.target).toBeUndefined();
  });

  it('describes a directory and the root', async () => {
    fs.mkdirSync(fx.at('d'));
    expect(value(await fx.call('get_file_info', { path: 'd' }))).toMatchObject({ type: 'dir', isSymlink: false });
    expect(value(await fx.call('get_file_info', { path: '.' }))).toMatchObject({ type: 'dir', isSymlink: false });
  });

  it('describes a link and its target when the target is inside the root', async () => {
    write(fx.root, 'docs/real.md', 'hello');
    fs.symlinkSync('docs/real.md', fx.at('alias.md'));
    const r = value(await fx.call('get_file_info', { path: 'alias.md' }));
    expect(r).toMatchObject({ type: 'symlink', isSymlink: true, target: { inside: true, exists: true, path: 'docs/real.md', type: 'file', size: 5 } });
  });

  it('says only that a link leads outside the root, nothing about its target', async () => {
    const outside = tempDir('memo-outside-');
    write(outside, 'secret.txt', 'SECRET');
    fs.symlinkSync(path.join(outside, 'secret.txt'), fx.at('out'));
    const r = value(await fx.call('get_file_info', { path: 'out' }));
    expect(r).toMatchObject({ type: 'symlink', isSymlink: true, target: { inside: false } });
    expect(Object.keys(r.target)).toEqual(['inside']);
    expect(JSON.stringify(r)).not.toContain(outside);
  });

  it('says NOT_FOUND for a missing path', async () => {
    const e = error(await fx.call('get_file_info', { path: 'missing/x.txt' }));
    expect(e.code).toBe('NOT_FOUND');
    expect(e.message).toContain('"missing/x.txt"');
  });
});
