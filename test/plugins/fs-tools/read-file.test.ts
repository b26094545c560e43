import * as fs from 'node:fs';
import * as path from 'node:path';
import { tempDir } from '../../helpers/kernel-fixture.js';
import { error, fsKernel, value, write, type FsFixture } from './helpers.js';

describe('fs-tools read_file', () => {
  let fx: FsFixture;
  beforeEach(async () => {
    fx = await fsKernel();
  });
  afterEach(async () => fx.close());

  it('returns the content, total lines and size of a text file without asking anyone', async () => {
    write(fx.root, 'a.txt', 'one\ntwo\nthree\n');
    const r = value(await fx.call('read_file', { path: 'a.txt' }));
    expect(r).toMatchObject({ path: 'a.txt', content: 'one\ntwo\nthree\n', totalLines: 3, size: 14, startLine: 1, endLine: 3, truncated: false });
    expect(r.summary).toBe('read a.txt (3 lines, 14 bytes)');
    expect(fx.prompter.asked).toHaveLength(0);
  });

  it('returns a slice of lines with offset and limit, and where to continue', async () => {
    write(fx.root, 'a.txt', 'l1\nl2\nl3\nl4\nl5');
    const r = value(await fx.call('read_file', { path: 'a.txt', offset: 2, limit: 2 }));
    expect(r).toMatchObject({ content: 'l2\nl3\n', totalLines: 5, startLine: 2, endLine: 3, nextOffset: 4 });
    const tail = value(await fx.call('read_file', { path: 'a.txt', offset: 4 }));
    expect(tail).toMatchObject({ content: 'l4\nl5', startLine: 4, endLine: 5 });
    expect(tail.nextOffset).toBeUndefined();
  });

  it('refuses an offset past the end', async () => {
    write(fx.root, 'a.txt', 'l1\nl2\n');
    const e = error(await fx.call('read_file', { path: 'a.txt', offset: 5 }));
    expect(e.code).toBe('VALIDATION');
    expect(e.message).toMatch(/offset 5 is past the end of "a.txt", which has 2 lines/);
  });

  it('refuses a file over 1 MB, naming its size and the limit and suggesting offset/limit', async () => {
    const size = 1024 * 1024 + 10;
    write(fx.root, 'big.txt', 'x'.repeat(size));
    const e = error(await fx.call('read_file', { path: 'big.txt' }));
    expect(e.code).toBe('VALIDATION');
    expect(e.message).toContain(`(${size} bytes)`);
    expect(e.message).toContain('1048576 bytes');
    expect(e.message).toMatch(/offset and limit/);
  });

  it('reads exactly 1 MB whole', async () => {
    write(fx.root, 'edge.txt', 'y'.repeat(1024 * 1024));
    expect(value(await fx.call('read_file', { path: 'edge.txt' })).size).toBe(1024 * 1024);
  });

  it('reads a slice of a file over 1 MB and still counts all its lines', async () => {
    const lines = Array.from({ length: 120_000 }, (_, i) => `line ${i + 1} ${'-'.repeat(i % 17)}`);
    write(fx.root, 'huge.log', lines.join('\n') + '\n');
    expect(fs.statSync(fx.at('huge.log')).size).toBeGreaterThan(2 * 1024 * 1024);
    const r = value(await fx.call('read_file', { path: 'huge.log', offset: 99_999, limit: 3 }));
    expect(r.content).toBe(`${lines[99_998]}\n${lines[99_999]}\n${lines[100_000]}\n`);
    expect(r).toMatchObject({ totalLines: 120_000, startLine: 99_999, endLine: 100_001, nextOffset: 100_002, truncated: false });
  });

  it('cuts a slice of a big file at 1 MB, on a line boundary, and says so', async () => {
    const line = 'z'.repeat(99) + '\n';
    write(fx.root, 'huge.txt', line.repeat(30_000)); // 3 MB
    const r = value(await fx.call('read_file', { path: 'huge.txt', offset: 1, limit: 20_000 }));
    expect(r.truncated).toBe(true);
    expect(r.content.length).toBeLessThanOrEqual(1024 * 1024);
    expect(r.content.endsWith('\n')).toBe(true);
    expect(r.endLine).toBe(r.content.length / 100);
    expect(r.nextOffset).toBe(r.endLine + 1);
  });

  it('refuses a binary file', async () => {
    write(fx.root, 'img.bin', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01, 0x02]));
    const e = error(await fx.call('read_file', { path: 'img.bin' }));
    expect(e.code).toBe('VALIDATION');
    expect(e.message).toMatch(/binary/);
  });

  it('says NOT_FOUND for a missing file and refuses paths that leave the root', async () => {
    expect(error(await fx.call('read_file', { path: 'nope.txt' })).code).toBe('NOT_FOUND');
    expect(error(await fx.call('read_file', { path: '../x' })).code).toBe('PATH_OUTSIDE_ROOT');
    const outside = tempDir('memo-outside-');
    fs.writeFileSync(path.join(outside, 'secret.txt'), 'TOP SECRET');
    fs.symlinkSync(path.join(outside, 'secret.txt'), fx.at('link.txt'));
    const e = error(await fx.call('read_file', { path: 'link.txt' }));
    expect(e.code).toBe('PATH_OUTSIDE_ROOT');
    expect(e.message).toContain('"link.txt"');
    expect(e.message).not.toContain('TOP SECRET');
    expect(e.message).not.toContain(outside);
  });

  it('reads through a symbolic link that stays inside the root', async () => {
    write(fx.root, 'real.txt', 'inside\n');
    fs.symlinkSync('real.txt', fx.at('alias.txt'));
    expect(value(await fx.call('read_file', { path: 'alias.txt' })).content).toBe('inside\n');
  });

  it('refuses unknown arguments through the manifest schema', async () => {
    const e = error(await fx.call('read_file', { path: 'a.txt', encoding: 'latin1' }));
    expect(e.code).toBe('INVALID_ARGS');
    expect(e.message).toMatch(/encoding is not an accepted field/);
  });
});
