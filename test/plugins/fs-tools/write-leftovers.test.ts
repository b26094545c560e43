/**
 * The temp files of write_file's atomic write (`.<name>.memo-<pid>-<hex>.tmp`; before the pid was in
 * the name, `.<name>.memo-<hex>.tmp`): a write killed before its rename leaves them. The next write in
 * the same folder removes those whose writer is gone, whichever file they were for, and nothing else.
 * (compiled.test.ts kills real writers at each step of the write.)
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import { fsKernel, tempFiles, value, write, type FsFixture } from './helpers.js';

/** A pid no process has: a child that has exited (and been reaped). */
function deadPid(): number {
  const pid = spawnSync(process.execPath, ['-e', '']).pid;
  if (!pid) throw new Error('could not start a process');
  return pid;
}

const HEX = 'a1b2c3d4e5f6';

describe('fs-tools write_file and the leftovers of killed writes', () => {
  let fx: FsFixture;
  beforeEach(async () => {
    fx = await fsKernel();
  });
  afterEach(async () => fx.close());

  it('removes the leftovers of dead writers in the folder it writes to, whichever file they were for', async () => {
    const dead = deadPid();
    write(fx.root, `docs/.other.txt.memo-${dead}-${HEX}.tmp`, 'x'.repeat(750 * 1024));
    write(fx.root, `docs/.other.txt.bak.memo-${dead}-${HEX}.tmp`, 'old');
    // The naming without a pid, from before this process started.
    const older = write(fx.root, `docs/.old.txt.memo-${HEX}.tmp`, 'older');
    const hourAgo = new Date(Date.now() - process.uptime() * 1000 - 3600_000);
    fs.utimesSync(older, hourAgo, hourAgo);
    // Another folder: not this write's.
    write(fx.root, `elsewhere/.x.txt.memo-${dead}-${HEX}.tmp`, 'x');

    value(await fx.call('write_file', { path: 'docs/a.txt', content: 'new\n' }));
    expect(fs.readdirSync(fx.at('docs')).sort()).toEqual(['a.txt']);
    expect(tempFiles(fx.at('elsewhere'))).toEqual([`.x.txt.memo-${dead}-${HEX}.tmp`]);
  });

  it('keeps the temp files of live writers and the files that only look like its own', async () => {
    const dead = deadPid();
    const kept = [
      // Another live process's write (even of the same file), and this process's own, under way.
      `.other.txt.memo-${process.ppid}-${HEX}.tmp`,
      `.a.txt.memo-${process.ppid}-${HEX}.tmp`,
      `.mine.txt.memo-${process.pid}-${HEX}.tmp`,
      // The naming without a pid, newer than this process: maybe a write under way.
      `.new.txt.memo-${HEX}.tmp`,
      `.a.txt.memo-${HEX}.tmp`,
      // Not its naming.
      `other.txt.memo-${dead}-${HEX}.tmp`,
      `.x.txt.memo-${dead}-${HEX.slice(1)}.tmp`,
      `.x.txt.memo-${dead}-${HEX.toUpperCase()}.tmp`,
      `.x.txt.memo-0-${HEX}.tmp`,
      `.x.txt.${dead}.abcdef01.tmp`,
      `x.txt.tmp`,
    ];
    for (const n of kept) write(fx.root, n, 'kept');
    // A folder with its naming is a folder.
    fs.mkdirSync(fx.at(`.dir.memo-${dead}-${HEX}.tmp`));

    value(await fx.call('write_file', { path: 'a.txt', content: 'new\n' }));
    expect(fs.readdirSync(fx.root).sort()).toEqual([...kept, `.dir.memo-${dead}-${HEX}.tmp`, 'a.txt'].sort());
  });
});
