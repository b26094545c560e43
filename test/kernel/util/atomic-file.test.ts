import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { atomicTempWriter, fileStamp, removeTempLeftover, writeFileAtomic, writeFileAtomicAsync } from '../../../kernel/util/atomic-file.js';
import { tempDir } from '../../helpers/kernel-fixture.js';

const mode = (file: string) => fs.statSync(file).mode & 0o777;

describe('writeFileAtomic', () => {
  it('writes the content with mode 0600 by default, creating the folder, and leaves no temp file', () => {
    const dir = tempDir('memo-atomic-');
    const file = path.join(dir, 'deep', 'state.json');
    writeFileAtomic(file, '{"a":1}\n');
    expect(fs.readFileSync(file, 'utf8')).toBe('{"a":1}\n');
    expect(mode(file)).toBe(0o600);
    expect(fs.readdirSync(path.dirname(file))).toEqual(['state.json']);
  });

  it('gives the file exactly the mode asked for, whatever the umask', () => {
    const dir = tempDir('memo-atomic-');
    const file = path.join(dir, 'shared.txt');
    const before = process.umask(0o077);
    try {
      writeFileAtomic(file, 'x', 0o644);
    } finally {
      process.umask(before);
    }
    expect(mode(file)).toBe(0o644);
  });

  it('replaces an existing file as a new inode (a reader holding the old one keeps the old content)', () => {
    const dir = tempDir('memo-atomic-');
    const file = path.join(dir, 'f.txt');
    writeFileAtomic(file, 'old');
    const fd = fs.openSync(file, 'r');
    try {
      writeFileAtomic(file, 'new');
      expect(fs.readFileSync(fd, 'utf8')).toBe('old');
    } finally {
      fs.closeSync(fd);
    }
    expect(fs.readFileSync(file, 'utf8')).toBe('new');
  });

  it('removes its temp file and leaves the target as it was when the rename fails', () => {
    const dir = tempDir('memo-atomic-');
    const target = path.join(dir, 'busy');
    fs.mkdirSync(target);
    fs.writeFileSync(path.join(target, 'inside'), 'keep');
    expect(() => writeFileAtomic(target, 'new')).toThrow();
    expect(fs.readdirSync(dir)).toEqual(['busy']);
    expect(fs.readFileSync(path.join(target, 'inside'), 'utf8')).toBe('keep');
  });

  it('refuses to write through a link planted at the temp name (O_EXCL)', async () => {
    const dir = tempDir('memo-atomic-');
    const elsewhere = path.join(dir, 'elsewhere.txt');
    fs.writeFileSync(elsewhere, 'untouched');
    const temp = path.join(dir, '.f.tmp');
    fs.symlinkSync(elsewhere, temp);
    await expect(writeFileAtomicAsync(path.join(dir, 'f.txt'), 'new', { mode: 0o600, temp })).rejects.toThrow(/EEXIST/);
    expect(fs.readFileSync(elsewhere, 'utf8')).toBe('untouched');
    expect(fs.existsSync(path.join(dir, 'f.txt'))).toBe(false);
    expect(fs.lstatSync(temp).isSymbolicLink()).toBe(true);
  });
});

describe('writeFileAtomicAsync', () => {
  it('runs its steps in order: opened, beforeRename (target untouched, temp complete), renamed', async () => {
    const dir = tempDir('memo-atomic-');
    const file = path.join(dir, 'f.txt');
    fs.writeFileSync(file, 'old');
    const seen: string[] = [];
    await writeFileAtomicAsync(file, 'new content', {
      mode: 0o640,
      steps: {
        opened: async (h) => void seen.push(`opened:${(await h.stat()).size}`),
        beforeRename: (temp) => void seen.push(`beforeRename:${fs.readFileSync(file, 'utf8')}:${fs.readFileSync(temp, 'utf8')}`),
        renamed: () => void seen.push(`renamed:${fs.readFileSync(file, 'utf8')}`),
      },
    });
    expect(seen).toEqual(['opened:0', 'beforeRename:old:new content', 'renamed:new content']);
    expect(mode(file)).toBe(0o640);
    expect(fs.readdirSync(dir)).toEqual(['f.txt']);
  });

  it('abandons the write when beforeRename throws: the temp file is removed and the target kept', async () => {
    const dir = tempDir('memo-atomic-');
    const file = path.join(dir, 'f.txt');
    fs.writeFileSync(file, 'old');
    await expect(
      writeFileAtomicAsync(file, 'new', {
        mode: null,
        steps: {
          beforeRename: () => {
            throw new Error('the folder changed');
          },
        },
      }),
    ).rejects.toThrow('the folder changed');
    expect(fs.readFileSync(file, 'utf8')).toBe('old');
    expect(fs.readdirSync(dir)).toEqual(['f.txt']);
  });

  it('with mode null creates the file as any new file (0666 less the umask)', async () => {
    const dir = tempDir('memo-atomic-');
    const file = path.join(dir, 'f.txt');
    const before = process.umask(0o027);
    try {
      await writeFileAtomicAsync(file, 'x', { mode: null });
    } finally {
      process.umask(before);
    }
    expect(mode(file)).toBe(0o640);
  });

  it('puts the temp file where it is told, and nowhere else', async () => {
    const dir = tempDir('memo-atomic-');
    const file = path.join(dir, 'f.txt');
    const temp = path.join(dir, '.f.txt.memo-0123456789ab.tmp');
    let seen = '';
    await writeFileAtomicAsync(file, 'x', { mode: 0o600, temp, steps: { beforeRename: (t) => void (seen = t) } });
    expect(seen).toBe(temp);
    expect(fs.readdirSync(dir)).toEqual(['f.txt']);
  });
});

describe('fileStamp', () => {
  it("changes when a file is replaced and says 'absent' for a missing one", () => {
    const dir = tempDir('memo-atomic-');
    const file = path.join(dir, 'f.txt');
    expect(fileStamp(file)).toBe('absent');
    writeFileAtomic(file, 'a');
    const first = fileStamp(file);
    writeFileAtomic(file, 'a');
    expect(fileStamp(file)).not.toBe(first);
  });
});

describe('temp files of atomic writes', () => {
  it('names the temp file after the writing process, and reads that process back from the name alone', async () => {
    const dir = tempDir('memo-atomic-');
    const file = path.join(dir, 'Note.md');
    let temp = '';
    await writeFileAtomicAsync(file, 'x', { mode: null, steps: { beforeRename: (t) => void (temp = t) } });
    expect(path.basename(temp)).toMatch(new RegExp(`^Note\\.md\\.${process.pid}\\.[0-9a-f]{8}\\.tmp$`));
    expect(atomicTempWriter(path.basename(temp))).toBe(process.pid);
    for (const other of [
      'Note.md.tmp',
      'Note.md.12.ABCDEF01.tmp',
      'Note.md.0.abcdef01.tmp',
      '.12.abcdef01.tmp',
      'Note.md.99999999999.abcdef01.tmp',
      'Note.md.12.abcdef01',
    ])
      expect([other, atomicTempWriter(other)]).toEqual([other, null]);
  });

  it('removes a temp file whose writer is gone, or that carries this pid from before this process; never a live writer’s', async () => {
    const dir = tempDir('memo-atomic-');
    const dead = spawnSync(process.execPath, ['-e', '']).pid;
    const at = (name: string) => path.join(dir, name);
    for (const n of ['dead', 'live', 'mine', 'mine-old', 'unnamed-old', 'unnamed-new']) fs.writeFileSync(at(n), n);
    const beforeStart = new Date(Date.now() - process.uptime() * 1000 - 3600_000);
    for (const n of ['mine-old', 'unnamed-old']) fs.utimesSync(at(n), beforeStart, beforeStart);
    fs.mkdirSync(at('folder'));
    const removed = {
      dead: await removeTempLeftover(at('dead'), dead),
      live: await removeTempLeftover(at('live'), process.ppid),
      mine: await removeTempLeftover(at('mine'), process.pid),
      'mine-old': await removeTempLeftover(at('mine-old'), process.pid),
      'unnamed-old': await removeTempLeftover(at('unnamed-old'), null),
      'unnamed-new': await removeTempLeftover(at('unnamed-new'), null),
      folder: await removeTempLeftover(at('folder'), dead),
      absent: await removeTempLeftover(at('absent'), dead),
    };
    expect(removed).toEqual({
      dead: true,
      live: false,
      mine: false,
      'mine-old': true,
      'unnamed-old': true,
      'unnamed-new': false,
      folder: false,
      absent: false,
    });
    expect(fs.readdirSync(dir).sort()).toEqual(['folder', 'live', 'mine', 'unnamed-new']);
  });
});
