import * as fs from 'node:fs';
import * as path from 'node:path';
import { tempDir } from '../../helpers/kernel-fixture.js';
import { error, fsKernel, value, write, type FsFixture } from './helpers.js';

describe('fs-tools search_files', () => {
  let fx: FsFixture;
  beforeEach(async () => {
    fx = await fsKernel();
    for (const f of ['src/a.ts', 'src/b.js', 'src/deep/c.ts', 'test/d.test.ts', 'README.md', '.hidden/e.ts', 'node_modules/pkg/index.ts', '.git/hooks/f.ts']) {
      write(fx.root, f, '');
    }
  });
  afterEach(async () => fx.close());

  it('finds files by glob, as sorted root-relative paths, skipping node_modules and .git', async () => {
    const r = value(await fx.call('search_files', { pattern: '**/*.ts' }));
    expect(r.matches).toEqual(['src/a.ts', 'src/deep/c.ts', 'test/d.test.ts']);
    expect(r).toMatchObject({ count: 3, total: 3, truncated: false });
    expect(fx.prompter.asked).toHaveLength(0);
  });

  it('searches a subfolder and still returns root-relative paths', async () => {
    expect(value(await fx.call('search_files', { pattern: '**/*.ts', path: 'src' })).matches).toEqual(['src/a.ts', 'src/deep/c.ts']);
  });

  it('includes dot entries with dot, and node_modules and .git with includeIgnored', async () => {
    expect(value(await fx.call('search_files', { pattern: '**/*.ts', dot: true })).matches).toEqual([
      '.hidden/e.ts',
      'src/a.ts',
      'src/deep/c.ts',
      'test/d.test.ts',
    ]);
    const all = value(await fx.call('search_files', { pattern: '**/*.ts', dot: true, includeIgnored: true })).matches;
    expect(all).toEqual(expect.arrayContaining(['node_modules/pkg/index.ts', '.git/hooks/f.ts']));
  });

  it('cuts the result at maxResults and says truncated with the total', async () => {
    const r = value(await fx.call('search_files', { pattern: '**/*', maxResults: 2 }));
    expect(r.matches).toEqual(['README.md', 'src/a.ts']);
    expect(r).toMatchObject({ count: 2, total: 5, truncated: true });
    expect(error(await fx.call('search_files', { pattern: '**/*', maxResults: 5001 })).code).toBe('INVALID_ARGS');
  });

  it('never returns a path outside the root, even through a symlinked folder that points outside', async () => {
    const outside = tempDir('memo-outside-');
    write(outside, 'secret.ts', 'x');
    write(outside, 'nested/other.ts', 'x');
    fs.symlinkSync(outside, fx.at('src/escape'));
    fs.symlinkSync(path.join(outside, 'secret.ts'), fx.at('linked.ts'));
    for (const pattern of ['**/*', '**/*.ts', 'src/escape/**', 'src/escape/*.ts', '*', '.{.,}/*', '{.,src}/**/*.ts']) {
      const r = await fx.call('search_files', { pattern, dot: true, includeIgnored: true, maxResults: 5000 });
      const matches: string[] = r.ok ? (r.value as any).matches : [];
      for (const m of matches) {
        expect(path.isAbsolute(m)).toBe(false);
        const real = fs.realpathSync(path.join(fx.root, m));
        expect([pattern, real.startsWith(fs.realpathSync(fx.root) + path.sep)]).toEqual([pattern, true]);
      }
      expect(matches.some((m) => m.includes('escape') || m === 'linked.ts')).toBe(false);
      // A pattern whose fixed folder part is the link is refused rather than crawled through it.
      if (pattern === 'src/escape/*.ts') {
        expect(r.ok ? 'ok' : r.error.code).toBe('VALIDATION');
        expect(r.ok ? '' : r.error.message).toMatch(/symbolic link/);
      }
    }
  });

  it('refuses ../ patterns and absolute patterns with VALIDATION', async () => {
    for (const pattern of ['../*', '../**/*.ts', 'src/../../*', '/etc/*', '{..,src}/*', '@(..)/*']) {
      const e = error(await fx.call('search_files', { pattern }));
      expect([pattern, e.code]).toEqual([pattern, 'VALIDATION']);
    }
    expect(error(await fx.call('search_files', { pattern: '*', path: '..' })).code).toBe('PATH_OUTSIDE_ROOT');
  });
});
