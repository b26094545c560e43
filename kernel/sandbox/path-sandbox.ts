/**
 * The path sandbox: every tool that takes a path (file tools, shell cwd, skill tools) turns it
 * into a real, checked location here before touching the file system. It fails closed.
 *
 * Bypasses that other agent tools shipped, and how each is closed here:
 * - string-prefix checks (`/proj` "contains" `/proj-evil`): containment is compared segment by segment;
 * - `..` tricks (`a/../../x`, `..\x`): any `..` segment in the request is refused outright;
 * - symlinks (to files, to directories, chains, dangling links, loops): the longest existing ancestor
 *   is resolved by the kernel (realpath) and dangling links are followed by hand, never lexically;
 * - check-then-open races: `openForRead`/`openForWrite` open with O_NOFOLLOW and then prove that the
 *   opened descriptor is the file that was checked (device + inode, and on Linux the kernel's own
 *   path of the descriptor). On Linux an existing path is first located with one O_PATH open (the
 *   kernel follows the links; nothing is really opened, so no device or FIFO is touched) and checked
 *   where the descriptor really is; a read then reopens that very descriptor through /proc/self/fd,
 *   so what is read is what was checked, with no realpath walk and no comparison afterwards.
 *
 * - other names of the kernel's state that paths cannot tell apart: a bind mount showing (part of)
 *   the data folder under the root is refused like the data folder itself (KernelState reads the
 *   mount table); a hard link to one of its files is refused once the file checked (the fstat both
 *   routes already make) has more than one link and its inode is one of the kernel's files.
 *
 * Known limits (the kernel gives Node no openat2(RESOLVE_BENEATH)): a process racing us can still
 * swap a *parent* directory between the check and a caller's own `fs` call; only the `open*`
 * helpers here detect that afterwards. The mount table is read again at most every 250 ms, so a
 * bind mount made less than that before a call may go unseen by it.
 *
 * The symlink walk, the O_PATH route and the post-open identity check are in path-resolution.ts;
 * the system directories and the `.git` rule, in protected-paths.ts.
 */
import { closeSync, constants as fsConstants, openSync, readSync, realpathSync, statSync, type BigIntStats } from 'node:fs';
import { lstat, open, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { MemoError } from '../errors.js';
import type { KernelArea, KernelState } from './kernel-state.js';
import {
  assertSameFile,
  changedWhileOpening,
  errnoOf,
  fail,
  idOf,
  locate,
  MAX_LINK_HOPS,
  O_CLOEXEC,
  O_NOFOLLOW,
  O_NONBLOCK,
  probePathDescriptors,
  resolveReal,
  shown,
  type Located,
  type RealLocation,
} from './path-resolution.js';
import { FOLD_CASE, isGitSegment, isWithinSegments, protectedDirsBelow, segmentsOf } from './protected-paths.js';

/**
 * Resolves and opens paths inside the sandbox root (the kernel's PathSandbox): every pack that takes
 * a path uses it, so `..`, symlinks, system folders, `.git` and the kernel's own state are refused in
 * one place. Errors are MemoErrors (`PATH_OUTSIDE_ROOT`, `PATH_PROTECTED`, `NOT_FOUND`).
 */
export interface Sandbox {
  readonly root: string;
  /** True when an already-resolved real path lies inside the root (segment-wise). */
  isInside(realPath: string): boolean;
  /** The kernel area (data folder, pack code...) a real path lies in, if any: such paths are not workspace files. */
  kernelArea(realPath: string, access?: 'read' | 'change'): KernelArea | null;
  /**
   * The kernel area a file is another name of (a hard link to a kernel file), from the file's own
   * bigint stats (fstat of what was opened, or lstat), or null. Walkers and bulk readers that open
   * files without `resolve` ask it for every regular file with more than one link; one link costs nothing.
   */
  kernelFile(stats: { dev: bigint; ino: bigint; nlink: bigint; isDirectory(): boolean }): KernelArea | null;
  resolve(requested: string, intent: PathIntent): Promise<ResolvedPath>;
  openForRead(requested: string): Promise<{ handle: FileHandle; resolved: ResolvedPath; size: number }>;
  /**
   * A small regular file read whole, checked as `openForRead` checks it, or null when this route does
   * not apply (bigger than `maxBytes`, not a regular file, missing...): then use `openForRead`.
   */
  readSmallFile?(requested: string, maxBytes: number): { data: Buffer; resolved: ResolvedPath } | null;
  openResolvedForRead(resolved: ResolvedPath): Promise<{ handle: FileHandle; resolved: ResolvedPath; size: number }>;
  openForWrite(requested: string, options?: OpenForWriteOptions): Promise<{ handle: FileHandle; resolved: ResolvedPath; created: boolean }>;
}

export type PathIntent = 'read' | 'write' | 'delete' | 'list';

const INTENTS: ReadonlySet<string> = new Set<PathIntent>(['read', 'write', 'delete', 'list']);

export interface ResolvedPath {
  /** The path exactly as the caller gave it (used in every message). */
  requested: string;
  /** The lexical absolute path (request joined to the root, not resolved). For display only: open `real`. */
  absolute: string;
  /** The fully resolved location, all symlinks followed. This is the path to operate on. */
  real: string;
  exists: boolean;
  /** `real` relative to the real root, '' for the root itself. */
  relative: string;
  /** True when `real` exists and is a directory. */
  isDirectory: boolean;
  /** Device and inode of `real` when it was checked (`"dev:ino"`), so a later open can prove it got the same file. */
  fileId?: string;
}

/** The largest file `readSmallFile` reads on the event-loop thread. */
const SMALL_FILE_MAX = 64 * 1024;

function problemError(problem: string, requested: string, intent: PathIntent): MemoError {
  const extra = { intent, reason: problem };
  switch (problem) {
    case 'ELOOP':
      return fail(
        'VALIDATION',
        requested,
        `${shown(requested)} goes through a circular link: a chain of symbolic links that loops (or is more than ${MAX_LINK_HOPS} links long). Fix or remove the link.`,
        extra,
      );
    case 'ENOTDIR':
      return fail('VALIDATION', requested, `Part of ${shown(requested)} is a file, not a directory. Check the path.`, extra);
    case 'ENAMETOOLONG':
      return fail('VALIDATION', requested, `${shown(requested)} is too long for the file system. Use a shorter path.`, extra);
    case 'EACCES':
    case 'EPERM':
      return fail(
        'TOOL_FAILED',
        requested,
        `The file system denied access while resolving ${shown(requested)}. Check the permissions of its directories.`,
        extra,
      );
    default:
      return fail(
        'VALIDATION',
        requested,
        `${shown(requested)} goes through a symbolic link whose target cannot be resolved. Fix or remove the link, or use another path.`,
        extra,
      );
  }
}

// ---------------------------------------------------------------------------------------------

export interface OpenForWriteOptions {
  /** Create the file if it does not exist (default true). */
  create?: boolean;
  /** Refuse with CONFLICT if the file exists. */
  exclusive?: boolean;
  /** Empty an existing file, after it has been verified (default false). */
  truncate?: boolean;
  /** Permission bits for a new file (default 0o666, minus the umask). */
  mode?: number;
}

export class PathSandbox implements Sandbox {
  /** The real path of the root. */
  readonly root: string;
  private readonly rootSegments: readonly string[];
  /** System directories strictly below the root, as real-path segments. */
  private readonly protectedDirs: readonly (readonly string[])[];
  /** O_PATH descriptors work here (and were not turned off): an existing path is located with one open instead of a realpath walk. */
  readonly fast: boolean;

  /**
   * `state` is the kernel's own folders (data, pack and skill folders, its code): PATH_PROTECTED
   * for every intent, in every layout, like `.git` but for reads too. A sandbox without it (a
   * skill's own folder for `read_skill`) guards only the root.
   */
  /**
   * `options.fastPath: false` keeps to the portable resolve-then-open route even where O_PATH
   * descriptors work (the tests run the path tables through both routes).
   */
  constructor(
    root: string,
    private readonly state?: KernelState,
    options: { fastPath?: boolean } = {},
  ) {
    if (typeof root !== 'string' || root.length === 0 || root.includes('\0')) {
      throw new MemoError('VALIDATION', 'The workspace root must be a non-empty path without NUL bytes.', { details: { path: String(root) } });
    }
    let real: string;
    try {
      real = realpathSync.native(root);
      if (!statSync(real).isDirectory()) throw new Error('not a directory');
    } catch (err) {
      throw new MemoError('NOT_FOUND', `The workspace root ${shown(root)} does not exist or is not a directory. Create it or configure another root.`, {
        details: { path: root },
        cause: err,
      });
    }
    this.root = real;
    this.rootSegments = segmentsOf(real);
    this.protectedDirs = protectedDirsBelow(this.rootSegments);
    this.fast = options.fastPath !== false && probePathDescriptors(real);
    // Bind mounts made since the last look: read the mount table now, not up to 250 ms later.
    state?.refreshMounts(true);
  }

  /**
   * The checks `resolve` makes on a realpath, made on where an O_PATH descriptor really is: the same
   * verdicts (containment first, then kernel state, system directories, `.git`, the root).
   */
  private checkLocated(requested: string, absolute: string, found: Located, intent: PathIntent): ResolvedPath {
    const { real, stats } = found;
    if (!this.isInside(real)) throw this.outsideRoot(requested, intent);
    const relative = path.relative(this.root, real);
    this.checkProtected(requested, absolute, real, relative, intent);
    this.checkLinks(requested, stats, intent);
    return { requested, absolute, real, relative, exists: true, isDirectory: stats.isDirectory(), fileId: idOf(stats) };
  }

  /**
   * A file with more than one name may be a hard link to a kernel file, which no path comparison
   * can see: its inode is compared with theirs. One link (nearly every file) costs nothing more.
   */
  private checkLinks(requested: string, stats: BigIntStats, intent: PathIntent): void {
    const area = this.kernelFile(stats);
    if (area) throw this.kernelProtected(requested, intent, area, 'is a hard link to a file in');
  }

  /** Whether a real (already resolved) absolute path is the root or inside it, segment by segment. */
  isInside(realPath: string): boolean {
    if (typeof realPath !== 'string' || !path.isAbsolute(realPath) || realPath.includes('\0')) return false;
    return isWithinSegments(this.rootSegments, segmentsOf(path.resolve(realPath)));
  }

  /**
   * The kernel-owned area a real path lies in, for reading (`read`: data, pack and skill folders)
   * or changing (`change`: those and the kernel's code), or null. Walkers (search, clone, recursive
   * listings) ask this for every folder they enter, so a crawl never descends into kernel state.
   */
  kernelArea(realPath: string, access: 'read' | 'change' = 'read'): KernelArea | null {
    return this.state?.owner(realPath, access) ?? null;
  }

  /** The kernel area a file with more than one link is another name of (see `checkLinks`), or null. */
  kernelFile(stats: { dev: bigint; ino: bigint; nlink: bigint; isDirectory(): boolean }): KernelArea | null {
    if (!this.state || stats.nlink <= 1n) return null;
    return this.state.linkedOwner(stats);
  }

  /**
   * Checks a requested path for an intent and says where it really leads. Throws MemoError:
   * VALIDATION (NUL byte, circular link, file used as a directory), PATH_OUTSIDE_ROOT (`..`, or
   * resolving outside the root), PATH_PROTECTED (system directory; `.git` or the root for
   * write/delete). A missing path is not an error here: `exists` is false.
   */
  async resolve(requested: string, intent: PathIntent): Promise<ResolvedPath> {
    this.checkRequest(requested, intent);
    const absolute = path.resolve(this.root, requested);

    if (this.fast) {
      const found = locate(absolute);
      if (found) {
        closeSync(found.fd);
        return this.checkLocated(requested, absolute, found, intent);
      }
    }
    const location = await resolveReal(absolute, 0);
    // Containment first: a problem met outside the root must not tell the caller anything about it.
    if (!this.isInside(location.real)) throw this.outsideRoot(requested, intent);
    if (location.problem !== undefined) throw problemError(location.problem, requested, intent);

    const relative = path.relative(this.root, location.real);
    this.checkProtected(requested, absolute, location.real, relative, intent);

    return this.describe(requested, absolute, location, relative, intent);
  }

  /**
   * Resolves for 'read' and opens the file read-only without following a final symlink, then proves
   * the descriptor is the file that was checked. NOT_FOUND if it does not exist; VALIDATION for a
   * directory or anything that is not a regular file.
   */
  async openForRead(requested: string): Promise<{ handle: FileHandle; resolved: ResolvedPath; size: number }> {
    if (this.fast) {
      this.checkRequest(requested, 'read');
      const absolute = path.resolve(this.root, requested);
      const found = locate(absolute);
      if (found) {
        try {
          const resolved = this.checkLocated(requested, absolute, found, 'read');
          // A directory, FIFO or device: the slow route says which (and never opens it).
          if (found.stats.isFile()) {
            // Reopening through the O_PATH descriptor's /proc entry opens that very inode: nothing
            // can be swapped in between, so there is nothing left to compare afterwards.
            const handle = await open(`/proc/self/fd/${found.fd}`, fsConstants.O_RDONLY | O_NONBLOCK | O_CLOEXEC).catch(() => undefined);
            if (handle) return { handle, resolved, size: Number(found.stats.size) };
          }
        } finally {
          closeSync(found.fd);
        }
      }
    }
    return this.openResolvedForRead(await this.resolve(requested, 'read'));
  }

  /**
   * Reads a small regular file whole, checked like `openForRead`, on this thread: one O_PATH open,
   * its /proc path and fstat, then a reopen of that very descriptor, one read and a close, a few
   * microseconds from the page cache where each trip through the thread pool costs ten times that.
   * Only files of at most `maxBytes` (64 KB at most) are read this way; anything else (a bigger file,
   * a directory, a FIFO, a missing path, another platform) returns null, and the caller uses
   * `openForRead`, which explains each case. A refusal (outside the root, protected) throws here too.
   */
  readSmallFile(requested: string, maxBytes: number): { data: Buffer; resolved: ResolvedPath } | null {
    if (!this.fast) return null;
    maxBytes = Math.min(maxBytes, SMALL_FILE_MAX);
    this.checkRequest(requested, 'read');
    const absolute = path.resolve(this.root, requested);
    const found = locate(absolute);
    if (!found) return null;
    let fd: number | undefined;
    try {
      const resolved = this.checkLocated(requested, absolute, found, 'read');
      const size = Number(found.stats.size);
      if (!found.stats.isFile() || size > maxBytes) return null;
      try {
        fd = openSync(`/proc/self/fd/${found.fd}`, fsConstants.O_RDONLY | O_NONBLOCK | O_CLOEXEC);
      } catch {
        return null; // no read permission, say: openForRead says so
      }
      // The size it had when checked: a file growing meanwhile is read as it was.
      const data = Buffer.allocUnsafe(size);
      let length = 0;
      while (length < size) {
        const n = readSync(fd, data, length, size - length, length);
        if (n === 0) break; // shrank meanwhile
        length += n;
      }
      return { data: length === size ? data : data.subarray(0, length), resolved };
    } finally {
      if (fd !== undefined) closeSync(fd);
      closeSync(found.fd);
    }
  }

  /**
   * Opens a path resolved earlier (with any intent). Split from `openForRead` for callers that
   * resolve first and open later: whatever happened in between is detected here.
   */
  async openResolvedForRead(resolved: ResolvedPath): Promise<{ handle: FileHandle; resolved: ResolvedPath; size: number }> {
    const { requested } = resolved;
    if (!resolved.exists) throw this.notFound(requested);
    if (resolved.isDirectory) throw this.isADirectory(requested);

    const handle = await this.openChecked(resolved, fsConstants.O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    try {
      const stats = await this.verifyOpened(handle, resolved);
      return { handle, resolved, size: Number(stats.size) };
    } catch (err) {
      await handle.close();
      throw err;
    }
  }

  /**
   * Resolves for 'write' and opens the file write-only: an existing file without following a final
   * symlink and verified before it is truncated; a new one with O_CREAT|O_EXCL (which never follows
   * a link) and verified after. The parent directory must exist (NOT_FOUND otherwise).
   */
  async openForWrite(requested: string, options: OpenForWriteOptions = {}): Promise<{ handle: FileHandle; resolved: ResolvedPath; created: boolean }> {
    const resolved = await this.resolve(requested, 'write');
    if (resolved.exists) {
      if (options.exclusive === true) {
        throw fail('CONFLICT', requested, `${shown(requested)} already exists. Choose another name, or allow overwriting.`);
      }
      if (resolved.isDirectory) throw this.isADirectory(requested);
      const handle = await this.openChecked(resolved, fsConstants.O_WRONLY | O_NOFOLLOW | O_NONBLOCK);
      try {
        await this.verifyOpened(handle, resolved);
        if (options.truncate === true) await handle.truncate(0);
        return { handle, resolved, created: false };
      } catch (err) {
        await handle.close();
        throw err;
      }
    }

    if (options.create === false) throw this.notFound(requested);
    const flags = fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | O_NOFOLLOW | O_NONBLOCK;
    const handle = await this.openChecked(resolved, flags, options.mode ?? 0o666);
    try {
      // Nothing was there to compare with; the new file must at least be where we meant to create it.
      await assertSameFile(handle, resolved.real, requested);
      const stats = await handle.stat({ bigint: true });
      return { handle, resolved: { ...resolved, exists: true, fileId: idOf(stats) }, created: true };
    } catch (err) {
      await handle.close();
      throw err;
    }
  }

  // -------------------------------------------------------------------------------------------

  /** The checks that need no file system: type, NUL bytes, `..`, and `.git` as spelled. */
  private checkRequest(requested: string, intent: PathIntent): void {
    if (!INTENTS.has(intent)) {
      throw fail('VALIDATION', String(requested), `Unknown path intent ${JSON.stringify(intent)}; use read, write, delete or list.`);
    }
    if (typeof requested !== 'string') {
      throw fail('VALIDATION', String(requested), 'The path must be a string.', { intent });
    }
    if (requested.includes('\0')) {
      throw fail('VALIDATION', requested, `The path ${shown(requested)} contains a NUL byte. Remove it.`, { intent });
    }
    // Backslashes count as separators here too: `..\x` is harmless on POSIX, but refusing it costs
    // nothing and keeps a path that another layer may reinterpret from ever climbing.
    const raw = requested.split(/[\\/]/);
    const normalised = path.normalize(requested).split(/[\\/]/);
    if (raw.includes('..') || normalised.includes('..')) {
      throw fail(
        'PATH_OUTSIDE_ROOT',
        requested,
        `${shown(requested)} contains a ".." segment, which is not allowed. Give the path relative to the workspace root without "..", or as an absolute path inside the root.`,
        { intent },
      );
    }
    if (isChange(intent) && raw.some(isGitSegment)) throw this.gitProtected(requested, intent);
  }

  /** The checks on the real location: kernel state, system directories, `.git` (as resolved), the root itself. */
  private checkProtected(requested: string, absolute: string, real: string, relative: string, intent: PathIntent): void {
    if (this.state) {
      const access = isChange(intent) ? 'change' : 'read';
      // The real path catches links pointing in; the lexical one, a link that would lead back out.
      const area = this.state.owner(real, access) ?? this.state.owner(absolute, access);
      if (area) throw this.kernelProtected(requested, intent, area, 'is inside');
      // Deleting a folder would take the kernel's state inside it along.
      if (intent === 'delete') {
        const inner = this.state.inside(real, 'change')[0];
        if (inner) throw this.kernelProtected(requested, intent, inner, 'contains');
      }
    }
    const realSegments = segmentsOf(real);
    if (this.protectedDirs.some((dir) => isWithinSegments(dir, realSegments, FOLD_CASE))) {
      throw fail(
        'PATH_PROTECTED',
        requested,
        `${shown(requested)} is in a protected system directory, which tools may not read or change. Use a path in the workspace.`,
        { intent },
      );
    }
    if (!isChange(intent)) return;
    // Checked on the resolved path as well as the spelled one: a link `g -> .git` must not help.
    if (segmentsOf(relative).some(isGitSegment)) throw this.gitProtected(requested, intent);
    if (intent === 'delete' && relative === '') {
      throw fail(
        'PATH_PROTECTED',
        requested,
        `${shown(requested)} is the workspace root itself, which cannot be deleted. Delete the files inside it instead.`,
        {
          intent,
        },
      );
    }
  }

  private async describe(requested: string, absolute: string, location: RealLocation, relative: string, intent: PathIntent): Promise<ResolvedPath> {
    const base = { requested, absolute, real: location.real, relative };
    if (!location.exists) return { ...base, exists: false, isDirectory: false };
    let stats;
    try {
      stats = await lstat(location.real, { bigint: true });
    } catch {
      return { ...base, exists: false, isDirectory: false }; // removed since realpath: simply missing now
    }
    // realpath said this was a real, link-free path; a link now means it was swapped under us.
    if (stats.isSymbolicLink()) throw changedWhileOpening(requested);
    this.checkLinks(requested, stats, intent);
    return { ...base, exists: true, isDirectory: stats.isDirectory(), fileId: idOf(stats) };
  }

  private async openChecked(resolved: ResolvedPath, flags: number, mode?: number): Promise<FileHandle> {
    try {
      return await open(resolved.real, flags, mode);
    } catch (err) {
      const { requested } = resolved;
      switch (errnoOf(err)) {
        case 'ELOOP': // O_NOFOLLOW met a symlink where the checked file was
        case 'EMLINK': // ... as FreeBSD reports it
        case 'EEXIST': // O_EXCL: something appeared where nothing was
          throw changedWhileOpening(requested);
        case 'ENOENT':
          throw resolved.exists
            ? this.notFound(requested)
            : fail('NOT_FOUND', requested, `The directory for ${shown(requested)} does not exist. Create it first.`);
        case 'EISDIR':
          throw this.isADirectory(requested);
        case 'ENXIO': // O_NONBLOCK write open of a FIFO without a reader
          throw this.notRegular(requested);
        default:
          throw fail('TOOL_FAILED', requested, `${shown(requested)} could not be opened (${errnoOf(err) ?? 'error'}). Check its permissions.`, {}, err);
      }
    }
  }

  /** The descriptor must be the very file `resolve` checked, and a regular file. */
  private async verifyOpened(handle: FileHandle, resolved: ResolvedPath) {
    const stats = await handle.stat({ bigint: true });
    if (resolved.fileId !== undefined && idOf(stats) !== resolved.fileId) throw changedWhileOpening(resolved.requested);
    await assertSameFile(handle, resolved.real, resolved.requested);
    if (stats.isDirectory()) throw this.isADirectory(resolved.requested);
    if (!stats.isFile()) throw this.notRegular(resolved.requested);
    return stats;
  }

  private outsideRoot(requested: string, intent: PathIntent): MemoError {
    return fail(
      'PATH_OUTSIDE_ROOT',
      requested,
      `${shown(requested)} leads outside the workspace root (directly or through a symbolic link). Use a path inside the root.`,
      { intent },
    );
  }

  private kernelProtected(
    requested: string,
    intent: PathIntent,
    area: KernelArea,
    relation: 'is inside' | 'contains' | 'is a hard link to a file in',
  ): MemoError {
    const what = area.reach === 'all' ? 'which no tool may read, list or change' : 'which no tool may change';
    return fail(
      'PATH_PROTECTED',
      requested,
      `${shown(requested)} ${relation} ${area.label} (${area.dir}), the kernel's own state, ${what} (rule kernel-state). Use a path in the workspace.`,
      {
        intent,
        rule: 'kernel-state',
        area: area.label,
      },
    );
  }

  private gitProtected(requested: string, intent: PathIntent): MemoError {
    return fail(
      'PATH_PROTECTED',
      requested,
      `${shown(requested)} is inside a .git directory, which tools may read but not change or delete. Use git itself to change the repository.`,
      { intent },
    );
  }

  private notFound(requested: string): MemoError {
    return fail('NOT_FOUND', requested, `${shown(requested)} does not exist. Check the path, or list its directory to see what is there.`);
  }

  private isADirectory(requested: string): MemoError {
    return fail('VALIDATION', requested, `${shown(requested)} is a directory, not a file. List it instead.`);
  }

  private notRegular(requested: string): MemoError {
    return fail('VALIDATION', requested, `${shown(requested)} is not a regular file (it is a device, pipe or socket) and cannot be opened.`);
  }
}

function isChange(intent: PathIntent): boolean {
  return intent === 'write' || intent === 'delete';
}
