import { promises as fs, linkSync, renameSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isMemoError } from '../../../kernel/errors.js';
import { KernelState } from '../../../kernel/sandbox/kernel-state.js';
import { PathSandbox } from '../../../kernel/sandbox/path-sandbox.js';
import { makeKernel, tempDir, type Fixture } from '../../helpers/kernel-fixture.js';

/**
 * A hard link inside the root to a file of the data folder is the kernel's file under another name:
 * realpath and /proc/self/fd name the link, so only its inode tells. Every route refuses it.
 *
 *   base/proj            the root
 *   base/data            the data folder (outside the root), and proj/data (inside it) for the default layout
 */
let base: string;
let root: string;
let dataOut: string;
let dataIn: string;
let state: KernelState;
let fast: PathSandbox;
let portable: PathSandbox;

const KEY = 'KERNEL-KEY-0123456789abcdef';

beforeEach(async () => {
  base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'memo-hardlink-')));
  root = path.join(base, 'proj');
  dataOut = path.join(base, 'data');
  dataIn = path.join(root, 'data');
  await fs.mkdir(path.join(dataOut, 'keys'), { recursive: true });
  await fs.mkdir(dataIn, { recursive: true });
  await fs.writeFile(path.join(dataOut, 'keys', 'audit.key'), KEY, { mode: 0o600 });
  await fs.writeFile(path.join(dataOut, 'permissions.json'), '{}');
  await fs.writeFile(path.join(dataIn, 'kernel.key'), KEY);
  await fs.writeFile(path.join(root, 'notes.txt'), 'plain notes');
  state = new KernelState();
  state.add(dataOut, 'the data folder');
  state.add(dataIn, 'the data folder');
  fast = new PathSandbox(root, state);
  portable = new PathSandbox(root, state, { fastPath: false });
});

afterEach(async () => {
  await fs.rm(base, { recursive: true, force: true });
});

const ROUTES = [
  ['O_PATH', () => fast],
  ['portable', () => portable],
] as const;

async function refusal(p: Promise<unknown> | (() => unknown)): Promise<{ code: string; message: string; details: unknown } | 'ok'> {
  try {
    await (typeof p === 'function' ? p() : p);
    return 'ok';
  } catch (err) {
    if (!isMemoError(err)) throw err;
    return { code: err.code, message: err.message, details: err.details };
  }
}

describe.each(ROUTES)('a hard link to a kernel file inside the root (%s route)', (_route, pick) => {
  it('is refused for reading, like the kernel file itself, naming the path given and not the kernel file', async () => {
    linkSync(path.join(dataOut, 'keys', 'audit.key'), path.join(root, 'innocent.txt'));
    const got = await refusal(pick().openForRead('innocent.txt'));
    expect(got).toMatchObject({ code: 'PATH_PROTECTED', details: { path: 'innocent.txt', rule: 'kernel-state', area: 'the data folder' } });
    const { message } = got as { message: string };
    expect(message).toContain('"innocent.txt" is a hard link to a file in the data folder');
    expect(message).not.toContain('audit.key');
    expect(message).not.toContain(KEY);
  });

  it('is refused for every intent, and a write leaves the kernel file as it was', async () => {
    linkSync(path.join(dataOut, 'permissions.json'), path.join(root, 'perm-copy.json'));
    for (const intent of ['read', 'write', 'delete', 'list'] as const) {
      expect(await refusal(pick().resolve('perm-copy.json', intent))).toMatchObject({ code: 'PATH_PROTECTED' });
    }
    expect(await refusal(pick().openForWrite('perm-copy.json', { truncate: true }))).toMatchObject({ code: 'PATH_PROTECTED' });
    expect(await fs.readFile(path.join(dataOut, 'permissions.json'), 'utf8')).toBe('{}');
  });

  it('is refused when it sits in a subfolder and is reached through a symbolic link', async () => {
    await fs.mkdir(path.join(root, 'deep', 'er'), { recursive: true });
    linkSync(path.join(dataOut, 'keys', 'audit.key'), path.join(root, 'deep', 'er', 'k'));
    await fs.symlink('deep/er/k', path.join(root, 'via-symlink'));
    expect(await refusal(pick().openForRead('via-symlink'))).toMatchObject({ code: 'PATH_PROTECTED' });
    expect(await refusal(pick().openForRead(path.join(root, 'deep', 'er', 'k')))).toMatchObject({ code: 'PATH_PROTECTED' });
  });

  it('is refused for a data folder inside the root too (the default layout)', async () => {
    linkSync(path.join(dataIn, 'kernel.key'), path.join(root, 'k.txt'));
    expect(await refusal(pick().openForRead('k.txt'))).toMatchObject({ code: 'PATH_PROTECTED' });
  });

  it('is refused after the kernel file was replaced by a rename (a new inode) since the sandbox last looked', async () => {
    // Folders last changed long ago, so the index trusts their times (it lists a folder changed in
    // the last seconds again anyway, timestamps being coarse): only a changed time can tell it.
    const long = new Date(Date.now() - 3_600_000);
    for (const dir of [dataOut, path.join(dataOut, 'keys'), dataIn]) await fs.utimes(dir, long, long);
    // The index is built on the first file with two names it meets.
    linkSync(path.join(root, 'notes.txt'), path.join(root, 'notes-again.txt'));
    expect(await refusal(pick().openForRead('notes-again.txt'))).toBe('ok');
    // An atomic save: a new inode under the old name. Then a link to it appears in the root.
    const file = path.join(dataOut, 'permissions.json');
    writeFileSync(`${file}.tmp`, '{"run_command":"allow"}');
    renameSync(`${file}.tmp`, file);
    linkSync(file, path.join(root, 'fresh.json'));
    expect(await refusal(pick().openForRead('fresh.json'))).toMatchObject({ code: 'PATH_PROTECTED' });
    // A kernel file created in a new subfolder is known too.
    await fs.mkdir(path.join(dataOut, 'packs-data', 'x'), { recursive: true });
    writeFileSync(path.join(dataOut, 'packs-data', 'x', 'store.sqlite'), 'SQLite format 3');
    linkSync(path.join(dataOut, 'packs-data', 'x', 'store.sqlite'), path.join(root, 'db'));
    expect(await refusal(pick().openForRead('db'))).toMatchObject({ code: 'PATH_PROTECTED' });
  });

  it('leaves a file with two names that are both in the workspace readable and writable', async () => {
    linkSync(path.join(root, 'notes.txt'), path.join(root, 'notes-link.txt'));
    const { handle } = await pick().openForRead('notes-link.txt');
    try {
      expect(await handle.readFile('utf8')).toBe('plain notes');
    } finally {
      await handle.close();
    }
    expect(await refusal(pick().resolve('notes-link.txt', 'write'))).toBe('ok');
  });
});

describe('readSmallFile (the in-process read_file route)', () => {
  it('refuses a hard link to a kernel file instead of reading it', async () => {
    linkSync(path.join(dataOut, 'keys', 'audit.key'), path.join(root, 'small.txt'));
    const got = await refusal(() => fast.readSmallFile('small.txt', 1024));
    expect(got).toMatchObject({ code: 'PATH_PROTECTED', details: { path: 'small.txt', rule: 'kernel-state' } });
  });

  it('still reads a file with two names in the workspace', () => {
    if (!fast.fast) return; // the route exists on Linux only
    linkSync(path.join(root, 'notes.txt'), path.join(root, 'twice.txt'));
    expect(fast.readSmallFile('twice.txt', 1024)?.data.toString('utf8')).toBe('plain notes');
  });
});

describe('KernelState.linkedOwner', () => {
  it('answers null for a file with one link without looking at the index', async () => {
    const stats = await fs.stat(path.join(dataOut, 'keys', 'audit.key'), { bigint: true });
    // A kernel file's own single name is the path rules' business, not this one's.
    expect(state.linkedOwner(stats)).toBeNull();
  });

  it('forgets an area once it is removed, and leaves a view’s exempt folder alone', async () => {
    const skills = path.join(base, 'skills', 'demo');
    await fs.mkdir(skills, { recursive: true });
    writeFileSync(path.join(skills, 'run.sh'), 'echo hi');
    linkSync(path.join(skills, 'run.sh'), path.join(root, 'run.sh'));
    const registration = state.add(skills, 'a skill folder');
    const stats = await fs.stat(path.join(root, 'run.sh'), { bigint: true });
    expect(state.linkedOwner(stats)?.label).toBe('a skill folder');
    expect(state.except(skills).linkedOwner(stats)).toBeNull();
    registration.dispose();
    expect(state.linkedOwner(stats)).toBeNull();
  });
});

describe('the file tools, through a real kernel (data folder ./data inside the root)', () => {
  let fx: Fixture;
  let kernelFile: string;
  const call = (tool: string, args: Record<string, unknown>) => fx.kernel.invoke({ tool, args, caller: { kind: 'agent' } });

  beforeEach(async () => {
    const workspace = tempDir('memo-hardlink-kernel-');
    fx = makeKernel({ packs: [], root: workspace, dataDir: path.join(workspace, 'data') });
    await fx.kernel.loadPacks([{ dir: path.resolve('plugins'), source: 'builtin' }]);
    fx.prompter.setFallback('allow-once');
    kernelFile = path.join(fx.dataDir, 'agent.key');
    writeFileSync(kernelFile, KEY, { mode: 0o600 });
    linkSync(kernelFile, path.join(fx.root, 'readme.txt'));
  });
  afterEach(async () => {
    const workspace = fx.root;
    await fx.close();
    await fs.rm(workspace, { recursive: true, force: true });
  });

  it.each<[string, Record<string, unknown>]>([
    ['read_file', { path: 'readme.txt' }],
    ['get_file_info', { path: 'readme.txt' }],
    ['write_file', { path: 'readme.txt', content: 'replaced' }],
    ['edit_file', { path: 'readme.txt', oldText: 'KERNEL', newText: 'gone' }],
    ['insert_line', { path: 'readme.txt', line: 1, content: 'x' }],
    ['delete_lines', { path: 'readme.txt', startLine: 1, endLine: 1 }],
  ])('%s of a hard link to a kernel file is refused and the file is left as it was', async (tool, args) => {
    const r = await call(tool, args);
    expect(r.ok ? `ran: ${JSON.stringify(r.value).slice(0, 200)}` : r.error.code).toBe('PATH_PROTECTED');
    expect(JSON.stringify(r)).not.toContain(KEY);
    expect(await fs.readFile(kernelFile, 'utf8')).toBe(KEY);
  });

  it('self_clone leaves a hard link to a kernel file out of the copy, and copies a file linked twice inside the project', async () => {
    writeFileSync(path.join(fx.root, 'notes.txt'), 'plain notes', { mode: 0o640 });
    linkSync(path.join(fx.root, 'notes.txt'), path.join(fx.root, 'notes-again.txt'));
    const target = path.join(tempDir('memo-hardlink-clone-'), 'copy');
    const r = await call('self_clone', { target });
    expect(r.ok).toBe(true);
    const value = (r as { value: { kernelState?: string[]; skipped?: { kernelState?: string[] } } }).value;
    expect(JSON.stringify(value)).toContain('readme.txt');
    expect(JSON.stringify(r)).not.toContain(KEY);
    await expect(fs.stat(path.join(target, 'readme.txt'))).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await fs.readFile(path.join(target, 'notes-again.txt'), 'utf8')).toBe('plain notes');
    expect((await fs.stat(path.join(target, 'notes-again.txt'))).mode & 0o777).toBe(0o640);
    expect(await fs.readFile(kernelFile, 'utf8')).toBe(KEY);
    await fs.rm(path.dirname(target), { recursive: true, force: true });
  });

  it('the vault never indexes or shows a hard link to a kernel file placed among its notes', async () => {
    await fs.mkdir(path.join(fx.root, 'vault'), { recursive: true });
    writeFileSync(path.join(fx.root, 'vault', 'plain.md'), '# Plain\nKERNEL words here are fine.\n');
    linkSync(kernelFile, path.join(fx.root, 'vault', 'keys.md'));
    const search = await call('vault_search_notes', { query: 'KERNEL' });
    expect(JSON.stringify(search)).not.toContain(KEY);
    expect(JSON.stringify(search)).toContain('plain.md');
    expect(JSON.stringify(search)).not.toContain('keys.md');
    const read = await call('vault_read_note', { path: 'keys.md' });
    expect(read.ok).toBe(false);
    expect(JSON.stringify(read)).not.toContain(KEY);
  });
});
