import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isMemoError, type ErrorCode } from '../../../kernel/errors.js';
import { PathSandbox, type PathIntent } from '../../../kernel/sandbox/path-sandbox.js';
import { assertSameFile } from '../../../kernel/sandbox/path-resolution.js';
import { SYSTEM_DIRS, isGitSegment } from '../../../kernel/sandbox/protected-paths.js';

/**
 * Layout (all real files and links under a fresh temp dir):
 *   base/proj            the root
 *   base/proj-evil       a sibling whose name starts with the root's
 *   base/outside         secret.txt, deep/
 *   base/root-link -> proj
 */
let base: string; // real path of the temp dir
let root: string;
let outside: string;
let sandbox: PathSandbox;
/** The same root through the portable resolve-then-open route (what macOS and other platforms use). */
let portable: PathSandbox;
/** Both routes: the path tables must give the same verdicts through each. */
const ROUTES = [
  ['O_PATH', () => sandbox],
  ['portable', () => portable],
] as const;

async function write(file: string, content = 'x'): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true });
  await fs.writeFile(file, content);
}

async function buildFixture(): Promise<void> {
  base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'memo-sandbox-')));
  root = path.join(base, 'proj');
  outside = path.join(base, 'outside');
  await write(path.join(outside, 'secret.txt'), 'TOP SECRET');
  await fs.mkdir(path.join(outside, 'deep'));
  await write(path.join(base, 'proj-evil', 'x.txt'));

  await write(path.join(root, 'a.txt'), 'hello');
  await write(path.join(root, 'sub', 'b.txt'), 'bee');
  await write(path.join(root, 'sub', 'deep', 'c.txt'));
  await write(path.join(root, '.git', 'config'), '[core]');
  await write(path.join(root, '.gitignore'));
  await write(path.join(root, '..foo'));
  await write(path.join(root, 'a..b'));
  await write(path.join(root, 'file.txt'));

  const link = (target: string, name: string) => fs.symlink(target, path.join(root, name));
  await link(path.join(outside, 'secret.txt'), 'link-out-file');
  await link(outside, 'link-out-dir');
  await link('chain2', 'chain1');
  await link(path.join(outside, 'secret.txt'), 'chain2');
  await link('in-chain2', 'in-chain1');
  await link('sub/b.txt', 'in-chain2');
  await link('sub', 'dirlink');
  await link(path.join(outside, 'new.txt'), 'dangling-out');
  await link('sub/new-target.txt', 'dangling-in');
  await link('link-out-dir/missing.txt', 'dangling-via-outside-dir');
  await link('loop-b', 'loop-a');
  await link('loop-a', 'loop-b');
  await link('self', 'self');
  await link(path.join(base, 'proj-evil'), 'evil-link');
  // Lexically `escape/../stolen.txt` is `stolen.txt` inside the root; the kernel goes to outside/stolen.txt.
  await link(path.join(outside, 'deep'), 'escape');
  await link('escape/../stolen.txt', 'dot-dot-trick');
  await link('.git', 'git-alias');
  await link('.', 'root-alias');
  await fs.symlink(root, path.join(base, 'root-link'));

  sandbox = new PathSandbox(root);
  portable = new PathSandbox(root, undefined, { fastPath: false });
}

beforeAll(buildFixture);
afterAll(async () => {
  await fs.rm(base, { recursive: true, force: true });
});

async function codeOf(promise: Promise<unknown>): Promise<ErrorCode | 'ok'> {
  try {
    await promise;
    return 'ok';
  } catch (err) {
    if (!isMemoError(err)) throw err;
    return err.code;
  }
}

async function errorOf(promise: Promise<unknown>): Promise<Error & { code: ErrorCode; details?: Record<string, unknown> }> {
  try {
    await promise;
  } catch (err) {
    if (isMemoError(err)) return err;
    throw err;
  }
  throw new Error('expected a MemoError, got success');
}

interface Case {
  name: string;
  path: string | (() => string);
  intent: PathIntent;
  /** An error code, or `ok` with the expected real path relative to `base` and existence. */
  expect: ErrorCode | { real: string; exists: boolean };
}

const cases: Case[] = [
  { name: 'a plain file inside', path: 'a.txt', intent: 'read', expect: { real: 'proj/a.txt', exists: true } },
  { name: 'a nested file', path: 'sub/deep/c.txt', intent: 'read', expect: { real: 'proj/sub/deep/c.txt', exists: true } },
  { name: 'redundant ./ and slashes', path: './sub//./b.txt', intent: 'read', expect: { real: 'proj/sub/b.txt', exists: true } },
  { name: 'the empty string as the root', path: '', intent: 'list', expect: { real: 'proj', exists: true } },
  { name: '"." as the root', path: '.', intent: 'list', expect: { real: 'proj', exists: true } },
  { name: 'an absolute path inside', path: () => path.join(root, 'sub', 'b.txt'), intent: 'read', expect: { real: 'proj/sub/b.txt', exists: true } },
  { name: 'an absolute path outside', path: () => path.join(outside, 'secret.txt'), intent: 'read', expect: 'PATH_OUTSIDE_ROOT' },
  { name: 'an absolute path to a sibling sharing the prefix', path: () => path.join(base, 'proj-evil', 'x.txt'), intent: 'read', expect: 'PATH_OUTSIDE_ROOT' },
  { name: 'the sibling directory itself', path: () => `${root}-evil`, intent: 'list', expect: 'PATH_OUTSIDE_ROOT' },
  { name: 'a link into the sibling', path: 'evil-link/x.txt', intent: 'read', expect: 'PATH_OUTSIDE_ROOT' },
  { name: '../x', path: '../outside/secret.txt', intent: 'read', expect: 'PATH_OUTSIDE_ROOT' },
  { name: 'a/../../x', path: 'a/../../x', intent: 'read', expect: 'PATH_OUTSIDE_ROOT' },
  { name: 'a/.. even though it stays inside', path: 'sub/..', intent: 'list', expect: 'PATH_OUTSIDE_ROOT' },
  { name: '.. alone', path: '..', intent: 'list', expect: 'PATH_OUTSIDE_ROOT' },
  { name: 'an absolute path with ..', path: () => `${root}/sub/../a.txt`, intent: 'read', expect: 'PATH_OUTSIDE_ROOT' },
  { name: 'a backslash .. segment', path: '..\\outside', intent: 'read', expect: 'PATH_OUTSIDE_ROOT' },
  { name: '..foo as a normal name', path: '..foo', intent: 'read', expect: { real: 'proj/..foo', exists: true } },
  { name: 'a..b as a normal name', path: 'a..b', intent: 'write', expect: { real: 'proj/a..b', exists: true } },
  { name: '... as a normal (missing) name', path: '...', intent: 'write', expect: { real: 'proj/...', exists: false } },
  { name: 'a NUL byte', path: 'a.txt\0.png', intent: 'read', expect: 'VALIDATION' },
  { name: '%2e%2e/x taken literally', path: '%2e%2e/x', intent: 'write', expect: { real: 'proj/%2e%2e/x', exists: false } },
  { name: 'a symlink to an outside file (read)', path: 'link-out-file', intent: 'read', expect: 'PATH_OUTSIDE_ROOT' },
  { name: 'a symlink to an outside file (write)', path: 'link-out-file', intent: 'write', expect: 'PATH_OUTSIDE_ROOT' },
  { name: 'a symlink to an outside file (delete)', path: 'link-out-file', intent: 'delete', expect: 'PATH_OUTSIDE_ROOT' },
  { name: 'a path through a link to an outside dir', path: 'link-out-dir/secret.txt', intent: 'read', expect: 'PATH_OUTSIDE_ROOT' },
  { name: 'a new file through a link to an outside dir', path: 'link-out-dir/new/file.txt', intent: 'write', expect: 'PATH_OUTSIDE_ROOT' },
  { name: 'a chain link -> link -> outside', path: 'chain1', intent: 'read', expect: 'PATH_OUTSIDE_ROOT' },
  { name: 'a chain staying inside, real path reported', path: 'in-chain1', intent: 'read', expect: { real: 'proj/sub/b.txt', exists: true } },
  { name: 'a directory link inside', path: 'dirlink/deep/c.txt', intent: 'write', expect: { real: 'proj/sub/deep/c.txt', exists: true } },
  { name: 'a dangling link pointing outside (write)', path: 'dangling-out', intent: 'write', expect: 'PATH_OUTSIDE_ROOT' },
  { name: 'a dangling link pointing outside (read)', path: 'dangling-out', intent: 'read', expect: 'PATH_OUTSIDE_ROOT' },
  { name: 'a dangling link into an outside dir', path: 'dangling-via-outside-dir', intent: 'write', expect: 'PATH_OUTSIDE_ROOT' },
  { name: 'a dangling link whose target escapes via link/..', path: 'dot-dot-trick', intent: 'write', expect: 'PATH_OUTSIDE_ROOT' },
  {
    name: 'a dangling link pointing inside (write goes to its target)',
    path: 'dangling-in',
    intent: 'write',
    expect: { real: 'proj/sub/new-target.txt', exists: false },
  },
  { name: 'circular links a -> b -> a', path: 'loop-a', intent: 'read', expect: 'VALIDATION' },
  { name: 'a path below circular links', path: 'loop-a/x.txt', intent: 'write', expect: 'VALIDATION' },
  { name: 'a link to itself', path: 'self', intent: 'delete', expect: 'VALIDATION' },
  { name: 'a file used as a directory', path: 'file.txt/x', intent: 'write', expect: 'VALIDATION' },
  { name: 'a missing nested path for write', path: 'new/dir/file.txt', intent: 'write', expect: { real: 'proj/new/dir/file.txt', exists: false } },
  { name: 'a missing file for read (not an error here)', path: 'nope.txt', intent: 'read', expect: { real: 'proj/nope.txt', exists: false } },
  { name: '.git/config write', path: '.git/config', intent: 'write', expect: 'PATH_PROTECTED' },
  { name: '.git/config delete', path: '.git/config', intent: 'delete', expect: 'PATH_PROTECTED' },
  { name: '.git itself delete', path: '.git', intent: 'delete', expect: 'PATH_PROTECTED' },
  { name: 'sub/.GIT/x write (any depth, any case)', path: 'sub/.GIT/x', intent: 'write', expect: 'PATH_PROTECTED' },
  { name: '.git. write (NTFS spelling)', path: '.git./hooks/pre-commit', intent: 'write', expect: 'PATH_PROTECTED' },
  { name: 'a link to .git then write', path: 'git-alias/config', intent: 'write', expect: 'PATH_PROTECTED' },
  { name: '.git/config read', path: '.git/config', intent: 'read', expect: { real: 'proj/.git/config', exists: true } },
  { name: '.git list', path: '.git', intent: 'list', expect: { real: 'proj/.git', exists: true } },
  { name: '.gitignore write', path: '.gitignore', intent: 'write', expect: { real: 'proj/.gitignore', exists: true } },
  { name: 'delete of the root ("")', path: '', intent: 'delete', expect: 'PATH_PROTECTED' },
  { name: 'delete of the root (".")', path: '.', intent: 'delete', expect: 'PATH_PROTECTED' },
  { name: 'delete of the root (absolute)', path: () => root, intent: 'delete', expect: 'PATH_PROTECTED' },
  { name: 'delete of the root through a link', path: 'root-alias', intent: 'delete', expect: 'PATH_PROTECTED' },
  { name: 'a file inside deleted normally', path: 'sub/b.txt', intent: 'delete', expect: { real: 'proj/sub/b.txt', exists: true } },
  {
    name: 'an absolute path through the linked root',
    path: () => path.join(base, 'root-link', 'a.txt'),
    intent: 'read',
    expect: { real: 'proj/a.txt', exists: true },
  },
];

describe.each(ROUTES)('PathSandbox.resolve (%s route)', (route, pick) => {
  it('has a table of at least 30 cases', () => {
    expect(cases.length).toBeGreaterThanOrEqual(30);
  });

  it.each(cases)('$intent $name', async ({ path: requested, intent, expect: expected }) => {
    const given = typeof requested === 'function' ? requested() : requested;
    if (typeof expected === 'string') {
      const err = await errorOf(pick().resolve(given, intent));
      expect(err.code).toBe(expected);
      return;
    }
    const resolved = await pick().resolve(given, intent);
    expect(resolved.real).toBe(path.join(base, expected.real));
    expect(resolved.exists).toBe(expected.exists);
    expect(resolved.requested).toBe(given);
    expect(resolved.relative).toBe(path.relative(root, resolved.real));
  });

  it('reports the root with an empty relative path and as a directory', async () => {
    const resolved = await pick().resolve('', 'list');
    expect(resolved).toMatchObject({ real: root, relative: '', exists: true, isDirectory: true, absolute: root });
  });

  it('reports the lexical absolute path separately from the real one', async () => {
    const resolved = await pick().resolve('in-chain1', 'read');
    expect(resolved.absolute).toBe(path.join(root, 'in-chain1'));
    expect(resolved.real).toBe(path.join(root, 'sub', 'b.txt'));
    expect(resolved.fileId).toMatch(/^\d+:\d+$/);
  });

  it('names the path as given, never the outside target, in messages and details', async () => {
    for (const requested of ['link-out-dir/secret.txt', 'chain1', 'dangling-out', 'dot-dot-trick', 'link-out-dir/a/b']) {
      const err = await errorOf(pick().resolve(requested, 'write'));
      expect(err.code).toBe('PATH_OUTSIDE_ROOT');
      expect(err.message).toContain(JSON.stringify(requested));
      expect(err.message).not.toContain(outside);
      expect(err.message).not.toContain('TOP SECRET');
      expect(JSON.stringify(err.details)).not.toContain(outside);
      expect(err.message).toMatch(/Use a path inside the root/);
    }
  });

  it('says a circular link is circular', async () => {
    const err = await errorOf(pick().resolve('loop-a', 'read'));
    expect(err.message).toMatch(/circular link/);
    expect(err.message).toContain('"loop-a"');
  });

  it('says what to do in protection messages', async () => {
    expect((await errorOf(pick().resolve('.git/config', 'write'))).message).toMatch(/"\.git\/config" is inside a \.git directory.*Use git/);
    expect((await errorOf(pick().resolve('', 'delete'))).message).toMatch(/workspace root itself.*Delete the files inside it/);
  });

  it('refuses an unknown intent', async () => {
    expect(await codeOf(pick().resolve('a.txt', 'execute' as PathIntent))).toBe('VALIDATION');
  });

  it('refuses a path that is not a string', async () => {
    expect(await codeOf(pick().resolve(42 as unknown as string, 'read'))).toBe('VALIDATION');
  });

  it('resolves a path that appeared after an earlier check', async () => {
    expect((await pick().resolve(`later-${route}.txt`, 'write')).exists).toBe(false);
    await write(path.join(root, `later-${route}.txt`));
    expect((await pick().resolve(`later-${route}.txt`, 'read')).exists).toBe(true);
  });
});

describe('PathSandbox construction', () => {
  it('locates paths with O_PATH descriptors on Linux unless told not to, so both routes above are really exercised', () => {
    expect(sandbox.fast).toBe(process.platform === 'linux' && (process.arch === 'x64' || process.arch === 'arm64'));
    expect(portable.fast).toBe(false);
  });

  it('stores the real path of a root given through a symlink', async () => {
    const linked = new PathSandbox(path.join(base, 'root-link'));
    expect(linked.root).toBe(root);
    const resolved = await linked.resolve('sub/b.txt', 'read');
    expect(resolved.real).toBe(path.join(root, 'sub', 'b.txt'));
    expect(resolved.relative).toBe(path.join('sub', 'b.txt'));
    expect(await codeOf(linked.resolve(path.join(base, 'root-link', 'a.txt'), 'write'))).toBe('ok');
    expect(await codeOf(linked.resolve('link-out-file', 'read'))).toBe('PATH_OUTSIDE_ROOT');
  });

  it('fails with NOT_FOUND for a missing root', () => {
    expect(() => new PathSandbox(path.join(base, 'does-not-exist'))).toThrow(expect.objectContaining({ code: 'NOT_FOUND' }));
  });

  it('fails with NOT_FOUND for a root that is a file', () => {
    expect(() => new PathSandbox(path.join(root, 'a.txt'))).toThrow(expect.objectContaining({ code: 'NOT_FOUND' }));
  });
});

describe('PathSandbox.isInside', () => {
  it('compares whole segments, not string prefixes', () => {
    expect(sandbox.isInside(root)).toBe(true);
    expect(sandbox.isInside(path.join(root, 'a', 'b'))).toBe(true);
    expect(sandbox.isInside(`${root}-evil`)).toBe(false);
    expect(sandbox.isInside(`${root}-evil/x`)).toBe(false);
    expect(sandbox.isInside(path.dirname(root))).toBe(false);
    expect(sandbox.isInside(`${root}/../outside`)).toBe(false);
    expect(sandbox.isInside('proj/a.txt')).toBe(false);
  });

  it('treats everything as inside a root of /', () => {
    const top = new PathSandbox('/');
    expect(top.root).toBe('/');
    expect(top.isInside('/anything/at/all')).toBe(true);
  });
});

describe('system directories', () => {
  const top = () => new PathSandbox('/');

  it('are refused as PATH_PROTECTED even when the root is /', async () => {
    expect(await codeOf(top().resolve('/etc/passwd', 'read'))).toBe('PATH_PROTECTED');
    expect(await codeOf(top().resolve('/usr/bin', 'list'))).toBe('PATH_PROTECTED');
    expect(await codeOf(top().resolve('etc/shadow', 'read'))).toBe('PATH_PROTECTED');
    expect(await codeOf(top().resolve('/proc/self/environ', 'read'))).toBe('PATH_PROTECTED');
    expect(await codeOf(top().resolve('/etc/new-file', 'write'))).toBe('PATH_PROTECTED');
  });

  it('are refused through symlinks and merged-/usr links', async () => {
    await fs.symlink('/etc', path.join(base, 'etc-link'));
    expect(await codeOf(top().resolve(path.join(base, 'etc-link', 'passwd'), 'read'))).toBe('PATH_PROTECTED');
    expect(await codeOf(top().resolve('/bin/sh', 'read'))).toBe('PATH_PROTECTED');
  });

  it('leave ordinary places readable under a root of /', async () => {
    // On macOS the temp dir lives in /private/var, which is itself protected.
    if (SYSTEM_DIRS.some((dir) => base.startsWith(`${dir}/`))) return;
    expect(await codeOf(top().resolve(path.join(root, 'a.txt'), 'read'))).toBe('ok');
  });

  it('are honoured as a root placed inside one of them', async () => {
    const inEtc = new PathSandbox('/etc');
    // A root *at* /etc: the operator chose it, and nothing outside it is reachable.
    expect(await codeOf(inEtc.resolve('passwd', 'read'))).toBe('ok');
    expect(await codeOf(inEtc.resolve('/usr/bin', 'list'))).toBe('PATH_OUTSIDE_ROOT');
  });

  it('include the documented Linux and macOS directories, but not /srv or /tmp', () => {
    for (const dir of ['/etc', '/usr', '/proc', '/sys', '/dev', '/var', '/root', '/run', '/opt', '/System', '/private/etc']) {
      expect(SYSTEM_DIRS).toContain(dir);
    }
    expect(SYSTEM_DIRS).not.toContain('/srv');
    expect(SYSTEM_DIRS).not.toContain('/tmp');
  });
});

describe('isGitSegment', () => {
  it('matches .git however a file system might spell it', () => {
    for (const name of ['.git', '.GIT', '.Git', '.git.', '.git ', '.g\u200cit']) expect(isGitSegment(name)).toBe(true);
    for (const name of ['.gitignore', 'git', '.git-x', '..git', '.gitmodules']) expect(isGitSegment(name)).toBe(false);
  });
});

describe.each(ROUTES)('PathSandbox.openForRead (%s route)', (route, pick) => {
  it('opens a file inside and reports its size', async () => {
    const { handle, resolved, size } = await pick().openForRead('sub/b.txt');
    try {
      expect(size).toBe(3);
      expect(resolved.real).toBe(path.join(root, 'sub', 'b.txt'));
      expect(await handle.readFile('utf8')).toBe('bee');
    } finally {
      await handle.close();
    }
  });

  it('opens through an inside link chain', async () => {
    const { handle } = await pick().openForRead('in-chain1');
    try {
      expect(await handle.readFile('utf8')).toBe('bee');
    } finally {
      await handle.close();
    }
  });

  it('fails with NOT_FOUND for a missing file', async () => {
    const err = await errorOf(pick().openForRead('nope.txt'));
    expect(err.code).toBe('NOT_FOUND');
    expect(err.message).toContain('"nope.txt"');
  });

  it('refuses a directory as VALIDATION', async () => {
    const err = await errorOf(pick().openForRead('sub'));
    expect(err.code).toBe('VALIDATION');
    expect(err.message).toMatch(/is a directory/);
  });

  it('refuses an outside link before opening anything', async () => {
    expect(await codeOf(pick().openForRead('link-out-file'))).toBe('PATH_OUTSIDE_ROOT');
  });

  it('refuses a FIFO without blocking', async () => {
    const fifo = path.join(root, `pipe-${route}`);
    try {
      execFileSync('mkfifo', [fifo]);
    } catch {
      return; // no mkfifo on this system
    }
    expect(await codeOf(pick().openForRead(`pipe-${route}`))).toBe('VALIDATION');
    expect(await codeOf(pick().openForWrite(`pipe-${route}`))).toBe('VALIDATION');
  });

  it('detects a file swapped for a symlink to outside between resolve and open', async () => {
    const file = path.join(root, `swap-${route}.txt`);
    await write(file, 'innocent');
    const resolved = await pick().resolve(`swap-${route}.txt`, 'read');
    expect(resolved.exists).toBe(true);

    await fs.rm(file);
    await fs.symlink(path.join(outside, 'secret.txt'), file);

    const err = await errorOf(pick().openResolvedForRead(resolved));
    expect(err.code).toBe('PATH_OUTSIDE_ROOT');
    expect(err.message).toMatch(/changed while it was being opened/);
    expect(err.message).not.toContain(outside);
    // And a fresh openForRead refuses it at resolve time.
    expect(await codeOf(pick().openForRead(`swap-${route}.txt`))).toBe('PATH_OUTSIDE_ROOT');
  });

  it('detects a parent directory swapped for a link to outside between resolve and open', async () => {
    await write(path.join(root, `swapdir-${route}`, 'f.txt'), 'inside');
    await write(path.join(outside, 'deep', 'f.txt'), 'outside content');
    const resolved = await pick().resolve(`swapdir-${route}/f.txt`, 'read');

    await fs.rename(path.join(root, `swapdir-${route}`), path.join(root, `swapdir-${route}-old`));
    await fs.symlink(path.join(outside, 'deep'), path.join(root, `swapdir-${route}`));

    expect(await codeOf(pick().openResolvedForRead(resolved))).toBe('PATH_OUTSIDE_ROOT');
  });

  it('detects a file replaced by another regular file', async () => {
    const file = path.join(root, `replaced-${route}.txt`);
    await write(file, 'one');
    const resolved = await pick().resolve(`replaced-${route}.txt`, 'read');
    // Keep the old file alive (renamed) so the new one cannot reuse its inode number.
    await fs.rename(file, path.join(root, `replaced-${route}-old.txt`));
    await write(path.join(root, `other-${route}.txt`), 'two');
    await fs.rename(path.join(root, `other-${route}.txt`), file);
    expect(await codeOf(pick().openResolvedForRead(resolved))).toBe('PATH_OUTSIDE_ROOT');
  });
});

/** What readSmallFile makes of a path: the content, null (use openForRead), or the refusal's error code. */
function smallRead(sb: PathSandbox, requested: string, max = 64 * 1024): string | null {
  try {
    const r = sb.readSmallFile(requested, max);
    return r === null ? null : r.data.toString('utf8');
  } catch (err) {
    if (!isMemoError(err)) throw err;
    return err.code;
  }
}

describe('PathSandbox.readSmallFile', () => {
  const readCases = cases.filter((c) => c.intent === 'read');

  it.each(readCases)('agrees with resolve + openForRead: $name', async ({ path: requested, expect: expected }) => {
    const given = typeof requested === 'function' ? requested() : requested;
    const got = smallRead(sandbox, given);
    if (typeof expected === 'string') {
      // Refused the same way, or left to openForRead (which refuses it): never read.
      if (got !== null) expect(got).toBe(expected);
      expect(await codeOf(sandbox.openForRead(given))).toBe(expected);
      return;
    }
    if (!expected.exists) {
      expect(got).toBeNull();
      return;
    }
    expect(got).toBe(await fs.readFile(path.join(base, expected.real), 'utf8'));
  });

  it('refuses a link out of the root and a system directory by throwing, as openForRead does', () => {
    if (process.platform !== 'linux') return; // the route exists on Linux only (null elsewhere)
    expect(smallRead(sandbox, 'link-out-file')).toBe('PATH_OUTSIDE_ROOT');
    expect(smallRead(sandbox, 'link-out-dir/secret.txt')).toBe('PATH_OUTSIDE_ROOT');
    expect(smallRead(new PathSandbox('/'), '/etc/hostname')).toBe('PATH_PROTECTED');
  });

  it('leaves directories, FIFOs, missing paths and files over the limit to openForRead', async () => {
    expect(smallRead(sandbox, 'sub')).toBeNull();
    expect(smallRead(sandbox, 'nope.txt')).toBeNull();
    expect(smallRead(sandbox, 'a.txt', 3)).toBeNull();
    const fifo = path.join(root, 'small-read-pipe');
    try {
      execFileSync('mkfifo', [fifo]);
    } catch {
      return; // no mkfifo on this system
    }
    try {
      expect(smallRead(sandbox, 'small-read-pipe')).toBeNull();
    } finally {
      await fs.rm(fifo);
    }
  });

  it('reads a small file whole on Linux', () => {
    if (process.platform !== 'linux') return;
    expect(sandbox.readSmallFile('sub/b.txt', 1024)).toMatchObject({ resolved: { real: path.join(root, 'sub', 'b.txt'), exists: true } });
    expect(smallRead(sandbox, 'in-chain1')).toBe('bee');
  });
});

describe('assertSameFile', () => {
  it('accepts the file it was opened from and refuses another', async () => {
    const handle = await fs.open(path.join(root, 'a.txt'), 'r');
    try {
      await expect(assertSameFile(handle, path.join(root, 'a.txt'))).resolves.toBeUndefined();
      await expect(assertSameFile(handle, path.join(root, 'file.txt'), 'file.txt')).rejects.toMatchObject({ code: 'PATH_OUTSIDE_ROOT' });
      await expect(assertSameFile(handle, path.join(root, 'missing'))).rejects.toMatchObject({ code: 'PATH_OUTSIDE_ROOT' });
    } finally {
      await handle.close();
    }
  });

  it('refuses a path that is a symlink to the opened file', async () => {
    const handle = await fs.open(path.join(root, 'sub', 'b.txt'), 'r');
    try {
      await expect(assertSameFile(handle, path.join(root, 'in-chain2'))).rejects.toMatchObject({ code: 'PATH_OUTSIDE_ROOT' });
    } finally {
      await handle.close();
    }
  });
});

describe('PathSandbox.openForWrite', () => {
  it('creates a new file and reports it created', async () => {
    const { handle, resolved, created } = await sandbox.openForWrite('sub/new-file.txt');
    try {
      expect(created).toBe(true);
      expect(resolved.exists).toBe(true);
      await handle.writeFile('new');
    } finally {
      await handle.close();
    }
    expect(await fs.readFile(path.join(root, 'sub', 'new-file.txt'), 'utf8')).toBe('new');
  });

  it('creates the target of an inside dangling link, not the link', async () => {
    const { handle, resolved, created } = await sandbox.openForWrite('dangling-in');
    await handle.close();
    expect(created).toBe(true);
    expect(resolved.real).toBe(path.join(root, 'sub', 'new-target.txt'));
    expect((await fs.lstat(path.join(root, 'dangling-in'))).isSymbolicLink()).toBe(true);
    await fs.rm(path.join(root, 'sub', 'new-target.txt'));
  });

  it('truncates an existing file only when asked', async () => {
    await write(path.join(root, 'trunc.txt'), 'long content');
    const kept = await sandbox.openForWrite('trunc.txt');
    await kept.handle.close();
    expect(kept.created).toBe(false);
    expect(await fs.readFile(path.join(root, 'trunc.txt'), 'utf8')).toBe('long content');
    const emptied = await sandbox.openForWrite('trunc.txt', { truncate: true });
    await emptied.handle.close();
    expect(await fs.readFile(path.join(root, 'trunc.txt'), 'utf8')).toBe('');
  });

  it('refuses an existing file when exclusive, and a missing one when create is false', async () => {
    expect(await codeOf(sandbox.openForWrite('a.txt', { exclusive: true }))).toBe('CONFLICT');
    expect(await codeOf(sandbox.openForWrite('never.txt', { create: false }))).toBe('NOT_FOUND');
  });

  it('fails with NOT_FOUND when the directory is missing', async () => {
    const err = await errorOf(sandbox.openForWrite('no/such/dir/file.txt'));
    expect(err.code).toBe('NOT_FOUND');
    expect(err.message).toMatch(/Create it first/);
  });

  it('refuses outside links, dangling outside links and .git', async () => {
    expect(await codeOf(sandbox.openForWrite('link-out-file'))).toBe('PATH_OUTSIDE_ROOT');
    expect(await codeOf(sandbox.openForWrite('dangling-out'))).toBe('PATH_OUTSIDE_ROOT');
    expect(await codeOf(sandbox.openForWrite('.git/config'))).toBe('PATH_PROTECTED');
    await expect(fs.access(path.join(outside, 'new.txt'))).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await fs.readFile(path.join(outside, 'secret.txt'), 'utf8')).toBe('TOP SECRET');
  });
});
