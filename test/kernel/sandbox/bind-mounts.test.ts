import { execFileSync } from 'node:child_process';
import { promises as fs, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isMemoError } from '../../../kernel/errors.js';
import { CommandJudge } from '../../../kernel/sandbox/command-judge.js';
import { mountAliases, parseMountInfo } from '../../../kernel/sandbox/kernel-aliases.js';
import { KernelState } from '../../../kernel/sandbox/kernel-state.js';
import { PathSandbox } from '../../../kernel/sandbox/path-sandbox.js';

/**
 * A bind mount shows the data folder (or a part of it, or a folder holding it) at a second place;
 * under the root, that place is the kernel's state too. The mount table is parsed, not matched.
 */

/** Recorded from a Linux machine (a container root on ext4 with a few tmpfs), plus the mounts each test adds. */
const RECORDED = [
  '21 26 0:20 / /proc rw,relatime - proc proc rw',
  '26 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard',
  '29 24 0:26 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24683548k',
  '31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime shared:7 master:1 - cgroup cgroup rw,cpu',
].join('\n');

describe('parseMountInfo', () => {
  it('reads each mount’s device, its root inside the file system and its mount point, optional fields or not', () => {
    const mounts = parseMountInfo(RECORDED);
    expect(mounts).toHaveLength(4);
    expect(mounts[1]).toEqual({ id: 26, parent: 1, device: '254:0', root: '/', mountPoint: '/' });
    expect(mounts[3]).toMatchObject({ device: '0:28', root: '/', mountPoint: '/sys/fs/cgroup/cpu' });
  });

  it('decodes the octal escapes of spaces, tabs, newlines and backslashes in paths', () => {
    const [m] = parseMountInfo('44 26 254:0 /srv/my\\040data\\134x /home/a\\011b\\012c rw - ext4 /dev/vda rw');
    expect(m).toMatchObject({ root: '/srv/my data\\x', mountPoint: '/home/a\tb\nc' });
  });

  it('skips lines that are not mounts instead of guessing', () => {
    expect(parseMountInfo('\ngarbage\n12 x 1:2 / /a rw - t s rw\n13 1 1:2 relative /a rw - t s rw\n')).toEqual([]);
  });
});

describe('mountAliases', () => {
  const table = (...extra: string[]) => parseMountInfo([RECORDED, ...extra].join('\n'));

  it('is empty when nothing else shows the folder', () => {
    expect(mountAliases(table(), '/home/me/.memo/data')).toEqual([]);
  });

  it('names the mount point of a bind mount of the folder itself', () => {
    expect(mountAliases(table('44 26 254:0 /home/me/.memo/data /work/proj/mnt rw - ext4 /dev/vda rw'), '/home/me/.memo/data')).toEqual(['/work/proj/mnt']);
  });

  it('names the mount point of a bind mount of a part of it (a folder or a single file)', () => {
    const t = table(
      '44 26 254:0 /home/me/.memo/data/keys /work/proj/k rw - ext4 /dev/vda rw',
      '45 26 254:0 /home/me/.memo/data/audit.key /work/proj/key.txt rw - ext4 /dev/vda rw',
    );
    expect(mountAliases(t, '/home/me/.memo/data').sort()).toEqual(['/work/proj/k', '/work/proj/key.txt']);
  });

  it('names the place inside a bind mount of a folder that holds it', () => {
    expect(mountAliases(table('44 26 254:0 /home/me /work/proj/home rw - ext4 /dev/vda rw'), '/home/me/.memo/data')).toEqual(['/work/proj/home/.memo/data']);
  });

  it('ignores mounts of other file systems and of unrelated folders, and compares whole names', () => {
    const t = table(
      '44 29 0:26 /home/me/.memo/data /work/proj/shm rw - tmpfs tmpfs rw',
      '45 26 254:0 /home/me/.memo/data-old /work/proj/old rw - ext4 /dev/vda rw',
      '46 26 254:0 /home/other /work/proj/other rw - ext4 /dev/vda rw',
    );
    expect(mountAliases(t, '/home/me/.memo/data')).toEqual([]);
  });

  it('works out where the folder lies in its file system when it is itself on a bind mount', () => {
    // /state shows the file system's /srv/state; a second mount shows its /srv at /work/proj/srv; and
    // the whole file system is mounted at / as well, where the same folder is /srv/state/data.
    const t = table('50 26 254:0 /srv/state /state rw - ext4 /dev/vda rw', '51 26 254:0 /srv /work/proj/srv rw - ext4 /dev/vda rw');
    expect(mountAliases(t, '/state/data').sort()).toEqual(['/srv/state/data', '/work/proj/srv/state/data']);
  });
});

// ---------------------------------------------------------------------------------------------
// Real bind mounts (root on Linux only; skipped where `mount --bind` is not allowed).

let base: string;
let root: string;
let dataDir: string;
const mounted: string[] = [];

function bind(source: string, target: string): boolean {
  try {
    execFileSync('mount', ['--bind', source, target], { stdio: 'ignore' });
    mounted.push(target);
    return true;
  } catch {
    return false;
  }
}

function unmountAll(): void {
  while (mounted.length > 0) {
    const target = mounted.pop()!;
    try {
      execFileSync('umount', [target], { stdio: 'ignore' });
    } catch {
      execFileSync('umount', ['-l', target], { stdio: 'ignore' });
    }
  }
}

const canMount = ((): boolean => {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return false;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'memo-bind-probe-'));
  try {
    mkdirSync(path.join(dir, 'a'));
    mkdirSync(path.join(dir, 'b'));
    const ok = bind(path.join(dir, 'a'), path.join(dir, 'b'));
    unmountAll();
    return ok;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
})();

const real = canMount ? describe : describe.skip;

async function refusal(p: Promise<unknown> | (() => unknown)): Promise<{ code: string; message: string; details: unknown } | 'ok'> {
  try {
    await (typeof p === 'function' ? p() : p);
    return 'ok';
  } catch (err) {
    if (!isMemoError(err)) throw err;
    return { code: err.code, message: err.message, details: err.details };
  }
}

real('a real bind mount under the root', () => {
  let state: KernelState;

  beforeEach(async () => {
    base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'memo-bind-')));
    root = path.join(base, 'proj');
    dataDir = path.join(base, 'home', '.memo', 'data');
    await fs.mkdir(path.join(dataDir, 'keys'), { recursive: true });
    await fs.mkdir(path.join(base, 'home', 'notes'), { recursive: true });
    await fs.writeFile(path.join(dataDir, 'keys', 'audit.key'), 'KERNEL-KEY');
    await fs.writeFile(path.join(dataDir, 'permissions.json'), '{}');
    await fs.writeFile(path.join(base, 'home', 'notes', 'todo.txt'), 'todo');
    for (const d of ['mnt', 'home', 'keys', 'late']) await fs.mkdir(path.join(root, d), { recursive: true });
    await fs.writeFile(path.join(root, 'key.txt'), '');
    state = new KernelState();
    state.add(dataDir, 'the data folder');
  });

  afterEach(async () => {
    unmountAll();
    await fs.rm(base, { recursive: true, force: true });
  });

  const routes = () => [new PathSandbox(root, state), new PathSandbox(root, state, { fastPath: false })];

  it('refuses the data folder mounted under the root, its files and its listing, on both routes', async () => {
    expect(bind(dataDir, path.join(root, 'mnt'))).toBe(true);
    for (const sandbox of routes()) {
      const got = await refusal(sandbox.openForRead('mnt/keys/audit.key'));
      expect(got).toMatchObject({ code: 'PATH_PROTECTED', details: { path: 'mnt/keys/audit.key', rule: 'kernel-state' } });
      expect((got as { message: string }).message).not.toContain('KERNEL-KEY');
      expect(await refusal(sandbox.resolve('mnt', 'list'))).toMatchObject({ code: 'PATH_PROTECTED' });
      expect(await refusal(sandbox.openForWrite('mnt/permissions.json', { truncate: true }))).toMatchObject({ code: 'PATH_PROTECTED' });
      if (sandbox.fast) expect(await refusal(() => sandbox.readSmallFile('mnt/keys/audit.key', 1024))).toMatchObject({ code: 'PATH_PROTECTED' });
    }
    expect(await fs.readFile(path.join(dataDir, 'permissions.json'), 'utf8')).toBe('{}');
  });

  it('refuses a part of the data folder mounted under the root: a folder, or a single file', async () => {
    expect(bind(path.join(dataDir, 'keys'), path.join(root, 'keys'))).toBe(true);
    expect(bind(path.join(dataDir, 'keys', 'audit.key'), path.join(root, 'key.txt'))).toBe(true);
    for (const sandbox of routes()) {
      expect(await refusal(sandbox.openForRead('keys/audit.key'))).toMatchObject({ code: 'PATH_PROTECTED' });
      expect(await refusal(sandbox.openForRead('key.txt'))).toMatchObject({ code: 'PATH_PROTECTED' });
    }
  });

  it('refuses the data folder inside a mounted folder that holds it, and leaves the rest of that mount readable', async () => {
    expect(bind(path.join(base, 'home'), path.join(root, 'home'))).toBe(true);
    for (const sandbox of routes()) {
      expect(await refusal(sandbox.openForRead('home/.memo/data/keys/audit.key'))).toMatchObject({ code: 'PATH_PROTECTED' });
      expect(await refusal(sandbox.resolve('home', 'delete'))).toMatchObject({ code: 'PATH_PROTECTED' });
      const { handle } = await sandbox.openForRead('home/notes/todo.txt');
      await handle.close();
    }
    // A crawl (search_files, self_clone) asks kernelArea of every folder it enters.
    expect(routes()[0]!.kernelArea(path.join(root, 'home', '.memo', 'data'))?.label).toBe('the data folder');
    expect(routes()[0]!.kernelArea(path.join(root, 'home', 'notes'))).toBeNull();
  });

  it('refuses a mount made after the sandbox was created (the table is read again within a short while)', async () => {
    const sandbox = new PathSandbox(root, state);
    expect(await refusal(sandbox.openForRead('late/permissions.json'))).toMatchObject({ code: 'NOT_FOUND' });
    expect(bind(dataDir, path.join(root, 'late'))).toBe(true);
    let got: Awaited<ReturnType<typeof refusal>> = 'ok';
    for (let i = 0; i < 100; i++) {
      got = await refusal(sandbox.resolve('late/permissions.json', 'read'));
      if (got !== 'ok') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(got).toMatchObject({ code: 'PATH_PROTECTED' });
  });

  it('is seen by the command judge, which asks the same kernel state', async () => {
    expect(bind(dataDir, path.join(root, 'mnt'))).toBe(true);
    state.refreshMounts(true);
    const judge = new CommandJudge(state);
    expect(await judge.judge('cat mnt/keys/audit.key', { cwd: root })).toMatchObject({ verdict: 'blocked', rule: 'kernel-state' });
    expect(await judge.judge('cat key.txt', { cwd: root })).toMatchObject({ verdict: 'allowed' });
  });
});
