/**
 * How a PathSandbox finds where a path really leads and proves what it opened: the O_PATH fast route
 * (locate), the realpath-and-lstat walk that follows dangling and looping symlinks by hand
 * (resolveReal), the post-open identity check (assertSameFile), and the open flags and message
 * helpers the sandbox shares with them.
 */
import { closeSync, constants as fsConstants, fstatSync, openSync, readSync, readlinkSync, type BigIntStats } from 'node:fs';
import { lstat, readlink, realpath, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { MemoError, type ErrorCode } from '../errors.js';

/** Linux's own limit (MAXSYMLINKS); a longer chain is treated like a loop. */
export const MAX_LINK_HOPS = 40;

export const O_NOFOLLOW = fsConstants.O_NOFOLLOW ?? 0;
/** A FIFO swapped in for a file would block `open` forever; O_NONBLOCK makes it return at once. */
export const O_NONBLOCK = fsConstants.O_NONBLOCK ?? 0;
export const O_CLOEXEC = (fsConstants as { O_CLOEXEC?: number }).O_CLOEXEC ?? 0;

/**
 * Linux's O_PATH (010000000 on x86-64 and arm64; Node does not export it): a descriptor that names a
 * file without opening it (no device is opened, a FIFO does not block, nothing needs read permission),
 * good for fstat and for asking the kernel where the file really is (/proc/self/fd). Checked once
 * by `probePathDescriptors` before the fast path trusts it.
 */
const O_PATH = process.platform === 'linux' && (process.arch === 'x64' || process.arch === 'arm64') ? 0o10000000 : 0;

let pathDescriptors: boolean | undefined;

/**
 * Whether O_PATH descriptors and /proc/self/fd work here: an O_PATH descriptor of `dir` must name
 * it (readlink of its /proc entry) and must refuse a read with EBADF (a plain descriptor of a
 * directory says EISDIR: the flag was not understood as O_PATH). Otherwise every path takes the
 * resolve-then-open route.
 */
export function probePathDescriptors(dir: string): boolean {
  if (pathDescriptors !== undefined) return pathDescriptors;
  pathDescriptors = false;
  if (O_PATH === 0) return false;
  let fd: number | undefined;
  try {
    fd = openSync(dir, O_PATH | O_CLOEXEC);
    if (readlinkSync(`/proc/self/fd/${fd}`) !== dir || !fstatSync(fd).isDirectory()) return false;
    try {
      readSync(fd, Buffer.alloc(1));
    } catch (err) {
      pathDescriptors = errnoOf(err) === 'EBADF';
    }
  } catch {
    // no /proc, or no O_PATH: the slow route
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  return pathDescriptors;
}

/** Where an existing path really is, as the kernel opened it (symlinks followed), and what it is. */
export interface Located {
  fd: number;
  real: string;
  stats: BigIntStats;
}

/**
 * One O_PATH open of `absolute` (every symlink followed by the kernel itself) and the descriptor's
 * own path and identity: three cheap syscalls instead of a realpath walk and an lstat. Returns the
 * open descriptor (the caller closes it), or undefined for anything unusual (a missing name, a
 * dangling or looping link, EACCES, a path the kernel cannot name): the caller then takes the slow
 * route, which explains each of those properly. Whatever this finds is checked exactly as the slow
 * route's realpath would be.
 */
export function locate(absolute: string): Located | undefined {
  let fd: number;
  try {
    fd = openSync(absolute, O_PATH | O_CLOEXEC);
  } catch {
    return undefined;
  }
  try {
    const real = readlinkSync(`/proc/self/fd/${fd}`);
    // A file unlinked since (" (deleted)"), another mount namespace or a pseudo file: the slow route.
    if (!path.isAbsolute(real) || real.endsWith(' (deleted)')) {
      closeSync(fd);
      return undefined;
    }
    return { fd, real, stats: fstatSync(fd, { bigint: true }) };
  } catch {
    closeSync(fd);
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// Messages

/** The request as shown in messages: quoted (control characters visible) and not absurdly long. */
export function shown(requested: string): string {
  const quoted = JSON.stringify(requested);
  return quoted.length > 240 ? `${quoted.slice(0, 200)}…" (${requested.length} characters)` : quoted;
}

export function errnoOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

export function fail(code: ErrorCode, requested: string, message: string, extra: Record<string, unknown> = {}, cause?: unknown): MemoError {
  return new MemoError(code, message, { details: { path: requested, ...extra }, ...(cause === undefined ? {} : { cause }) });
}

export function changedWhileOpening(requested: string): MemoError {
  return fail(
    'PATH_OUTSIDE_ROOT',
    requested,
    `${shown(requested)} changed while it was being opened (it may have been replaced by a symbolic link or another file). ` +
      'Try again; if this keeps happening, something is swapping the file.',
  );
}

// ---------------------------------------------------------------------------------------------
// Resolution

/** Where a path really leads. `problem` is an errno-like reason it could not be followed to the end. */
export interface RealLocation {
  real: string;
  exists: boolean;
  /** ELOOP, ENOTDIR, UNRESOLVABLE, or another errno code. */
  problem?: string;
}

/**
 * Resolves `target` the way the kernel would, also when its end does not exist yet.
 *
 * The kernel's realpath does the work whenever it can. When it fails, the parent is resolved
 * (recursively) and the last name looked at with lstat: a missing name is appended as is, while a
 * symlink there (dangling, looping, or leading through a non-directory) is followed by hand. Link
 * targets are handed back to realpath unnormalised, because collapsing `x/..` lexically is wrong
 * when `x` is itself a link.
 */
export async function resolveReal(target: string, hops: number): Promise<RealLocation> {
  try {
    return { real: await realpath(target), exists: true };
  } catch (err) {
    if (errnoOf(err) === 'ENAMETOOLONG') return { real: target, exists: false, problem: 'ENAMETOOLONG' };
  }

  const parentPath = path.dirname(target);
  const name = path.basename(target);
  if (parentPath === target) return { real: target, exists: false, problem: 'UNRESOLVABLE' };

  const parent = await resolveReal(parentPath, hops);
  if (parent.problem !== undefined) return parent;
  // `.`/`..` below something that does not resolve cannot be followed the kernel's way: refuse.
  if (name === '..' || name === '.') return { real: parent.real, exists: false, problem: 'UNRESOLVABLE' };
  const candidate = path.join(parent.real, name);
  if (!parent.exists) return { real: candidate, exists: false };

  let stats;
  try {
    stats = await lstat(candidate);
  } catch (err) {
    const code = errnoOf(err);
    return code === 'ENOENT' ? { real: candidate, exists: false } : { real: candidate, exists: false, problem: code ?? 'UNRESOLVABLE' };
  }
  // The parent is real and this name is not a link, so the joined path is already canonical.
  if (!stats.isSymbolicLink()) return { real: candidate, exists: true };
  if (hops >= MAX_LINK_HOPS) return { real: candidate, exists: false, problem: 'ELOOP' };

  let linkTarget: string;
  try {
    linkTarget = await readlink(candidate);
  } catch {
    return { real: candidate, exists: false, problem: 'UNRESOLVABLE' }; // the link vanished while we looked
  }
  const next = path.isAbsolute(linkTarget) ? linkTarget : `${parent.real}${path.sep}${linkTarget}`;
  return resolveReal(next, hops + 1);
}

// ---------------------------------------------------------------------------------------------
// Post-open identity checks

export function idOf(stats: { dev: bigint; ino: bigint }): string {
  return `${stats.dev}:${stats.ino}`;
}

/** The kernel's path of an open descriptor (Linux), or undefined where that is not available. */
async function descriptorPath(handle: FileHandle): Promise<string | undefined> {
  if (process.platform !== 'linux') return undefined;
  try {
    return await readlink(`/proc/self/fd/${handle.fd}`);
  } catch {
    return undefined;
  }
}

/**
 * Proves that an open `handle` is the file now at `realPath` (device + inode, `realPath` not a
 * symlink, and on Linux the descriptor's own path equal to `realPath`), so a caller that checked
 * a path and then opened it detects a swap in between. Throws PATH_OUTSIDE_ROOT otherwise.
 * `shownAs` is the caller's spelling of the path, for the message (defaults to `realPath`).
 */
export async function assertSameFile(handle: FileHandle, realPath: string, shownAs: string = realPath): Promise<void> {
  const opened = await handle.stat({ bigint: true });
  let atPath;
  try {
    atPath = await lstat(realPath, { bigint: true });
  } catch {
    throw changedWhileOpening(shownAs);
  }
  if (atPath.isSymbolicLink() || idOf(atPath) !== idOf(opened)) throw changedWhileOpening(shownAs);
  // dev+ino alone would be fooled if a parent directory was swapped between our lstat and the open
  // for one leading to the same file elsewhere; the descriptor's path cannot be.
  const fdPath = await descriptorPath(handle);
  if (fdPath !== undefined && fdPath !== realPath) throw changedWhileOpening(shownAs);
}
