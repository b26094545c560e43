/**
 * Shared pieces of the fs-tools pack: errors, line handling, diffs, loading text through the
 * sandbox, and the atomic write (temporary file + fsync + rename, with a `.bak` of the old file).
 *
 * Every path a caller gives goes through `ctx.sandbox`; the file system is then touched only at
 * the real locations the sandbox returned (or names derived from them, like `<name>.bak`).
 */
import { isAscii } from 'node:buffer';
import { randomBytes } from 'node:crypto';
import { constants as fsConstants, type Stats } from 'node:fs';
import { copyFile, link, lstat, mkdir, readdir, realpath, rename, stat, unlink, type FileHandle } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import {
  isGitSegment,
  isMemoError,
  MemoError,
  removeTempLeftover,
  writeFileAtomicAsync,
  type ErrorCode,
  type ResolvedPath,
  type ToolContext,
} from 'memo-kernel/pack';
import { crashPoint, PAUSE } from './crash-points.js';

type DiffLibrary = typeof import('diff');
let diffLibrary: DiffLibrary | undefined;
/** The diff library, loaded on the first diff rather than when the pack loads (the read tools never need it). */
const diffs = (): DiffLibrary => (diffLibrary ??= createRequire(import.meta.url)('diff') as DiffLibrary);

export const MB = 1024 * 1024;
/** read_file refuses whole files above this, and caps a slice at it. */
export const READ_MAX_BYTES = 1 * MB;
/** The edit tools load the whole file; above this they refuse (use write_file, or split the file). */
export const EDIT_MAX_BYTES = 10 * MB;
/** NUL bytes in this many leading bytes mark a file as binary. */
export const BINARY_SNIFF_BYTES = 8192;
/** Diff shown in previews and results: longer ones are cut at a line boundary. */
export const DIFF_MAX_CHARS = 64 * 1024;
/** Inputs above this are not diffed at all (a summary line is shown instead). */
const DIFF_INPUT_MAX = 2 * MB;
/** The diff algorithm gets this long before we fall back to a summary. */
const DIFF_TIMEOUT_MS = 1500;

// ---------------------------------------------------------------------------------------------
// Errors and messages

/** The caller's path as shown in messages: quoted, control characters visible, not absurdly long. */
export function shown(requested: string): string {
  const quoted = JSON.stringify(requested);
  return quoted.length > 240 ? `${quoted.slice(0, 200)}…" (${requested.length} characters)` : quoted;
}

export function fail(code: ErrorCode, message: string, details: Record<string, unknown> = {}, cause?: unknown): MemoError {
  return new MemoError(code, message, { details, ...(cause === undefined ? {} : { cause }) });
}

export function errnoOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** A file-system failure as a MemoError naming the caller's path (never the real one, never content). */
export function fsFailure(err: unknown, requested: string, doing: string): MemoError {
  if (isMemoError(err)) return err;
  const code = errnoOf(err);
  switch (code) {
    case 'ENOENT':
      return fail('NOT_FOUND', `${shown(requested)} does not exist, or something in it disappeared while the tool was working on it.`, { path: requested });
    case 'EACCES':
    case 'EPERM':
      return fail('TOOL_FAILED', `The file system denied ${doing} ${shown(requested)} (${code}). Check its permissions.`, { path: requested, errno: code });
    case 'ENOSPC':
    case 'EDQUOT':
      return fail('TOOL_FAILED', `The disk is full: ${doing} ${shown(requested)} failed (${code}). Nothing was changed.`, { path: requested, errno: code });
    case 'EISDIR':
      return fail('VALIDATION', `${shown(requested)} is a directory, not a file.`, { path: requested });
    case 'ENOTDIR':
      return fail('VALIDATION', `Part of ${shown(requested)} is a file, not a directory. Check the path.`, { path: requested });
    case 'ENOTEMPTY':
    case 'EEXIST':
      return fail('CONFLICT', `${shown(requested)} changed while ${doing} it (${code}). Look at it again and retry.`, { path: requested, errno: code });
    default:
      // Only the errno code: a raw message would name real paths the caller never gave.
      return fail('TOOL_FAILED', `${doing.charAt(0).toUpperCase()}${doing.slice(1)} ${shown(requested)} failed (${code ?? 'unexpected error'}).`, {
        path: requested,
        ...(code ? { errno: code } : {}),
      });
  }
}

/** Throws CANCELLED when the call was stopped (timeout, caller, shutdown). */
export function checkSignal(signal: AbortSignal, what: string): void {
  if (signal.aborted) throw fail('CANCELLED', `${what} was stopped before it finished.`);
}

export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

export function humanBytes(n: number): string {
  if (n < 1024) return plural(n, 'byte');
  if (n < MB) return `${(n / 1024).toFixed(1)} KB`;
  if (n < 1024 * MB) return `${(n / MB).toFixed(1)} MB`;
  return `${(n / (1024 * MB)).toFixed(2)} GB`;
}

/**
 * Whether a name means `.git` on some file system: the kernel sandbox's own rule (trailing dots and
 * spaces, ignorable characters, any case). Used for the final name of a symbolic link being
 * deleted, which the sandbox's resolution would follow.
 */
export const isGitName = isGitSegment;

// ---------------------------------------------------------------------------------------------
// Lines

/** Splits text into lines that keep their terminators: "a\nb" -> ["a\n", "b"], "" -> []. */
export function splitLines(text: string): string[] {
  const out: string[] = [];
  let start = 0;
  while (start < text.length) {
    const nl = text.indexOf('\n', start);
    if (nl === -1) {
      out.push(text.slice(start));
      break;
    }
    out.push(text.slice(start, nl + 1));
    start = nl + 1;
  }
  return out;
}

/**
 * UTF-8 text of (part of) a buffer. Pure ASCII, the common case for source files, is decoded as
 * latin1, which gives the same string several times faster than the UTF-8 decoder.
 */
export function decodeText(buf: Buffer, start = 0, end = buf.length): string {
  const part = start === 0 && end === buf.length ? buf : buf.subarray(start, end);
  return isAscii(part) ? part.toString('latin1') : part.toString('utf8');
}

/** Lines in a string: newline count, plus one for a last line without a newline. */
export function countTextLines(text: string): number {
  let n = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) n++;
  return text.length > 0 && text.charCodeAt(text.length - 1) !== 10 ? n + 1 : n;
}

/** Lines in a buffer: newline count, plus one for a last line without a newline. */
export function countLines(buf: Buffer, length = buf.length): number {
  let n = 0;
  let i = buf.indexOf(10);
  while (i !== -1 && i < length) {
    n++;
    i = buf.indexOf(10, i + 1);
  }
  if (length > 0 && buf[length - 1] !== 10) n++;
  return n;
}

/** The file's own line ending: CRLF if its first line ends that way, else LF. */
export function eolOf(text: string): string {
  const nl = text.indexOf('\n');
  return nl > 0 && text[nl - 1] === '\r' ? '\r\n' : '\n';
}

/** Text as a block of whole lines: adds the file's line ending if the text has none (empty stays empty). */
export function asLines(text: string, eol: string): string {
  return text === '' || text.endsWith('\n') ? text : text + eol;
}

export function isBinary(buf: Buffer, length = buf.length): boolean {
  const end = Math.min(length, BINARY_SNIFF_BYTES);
  const nul = buf.indexOf(0);
  return nul !== -1 && nul < end;
}

// ---------------------------------------------------------------------------------------------
// Diffs

/**
 * A unified diff of two versions of a file, capped at DIFF_MAX_CHARS. `label` is the
 * workspace-relative path; `created` shows the old side as /dev/null (all lines added).
 */
export function unifiedDiff(label: string, oldText: string, newText: string, created = false): string {
  const oldName = created ? '/dev/null' : `a/${label}`;
  const newName = `b/${label}`;
  if (oldText === newText) return `--- ${oldName}\n+++ ${newName}\n(no changes)\n`;
  const summaryOnly = (why: string) =>
    `--- ${oldName}\n+++ ${newName}\n(${why}: old ${humanBytes(Buffer.byteLength(oldText))}, ${plural(countTextLines(oldText), 'line')}; ` +
    `new ${humanBytes(Buffer.byteLength(newText))}, ${plural(countTextLines(newText), 'line')})\n`;
  if (oldText.length > DIFF_INPUT_MAX || newText.length > DIFF_INPUT_MAX) return summaryOnly('too large to show as a diff');
  const patch = diffs().createTwoFilesPatch(oldName, newName, oldText, newText, undefined, undefined, { context: 3, timeout: DIFF_TIMEOUT_MS });
  if (patch === undefined) return summaryOnly('too many changes to show as a diff');
  const body = patch.replace(/^=+\n/, '');
  return capDiff(body);
}

function capDiff(diff: string): string {
  if (diff.length <= DIFF_MAX_CHARS) return diff;
  const cut = diff.lastIndexOf('\n', DIFF_MAX_CHARS);
  const kept = diff.slice(0, cut + 1);
  const rest = countTextLines(diff.slice(cut + 1));
  return `${kept}… diff truncated: ${plural(rest, 'more line')} not shown\n`;
}

// ---------------------------------------------------------------------------------------------
// Loading a text file through the sandbox

export interface LoadedText {
  resolved: ResolvedPath;
  text: string;
  size: number;
  stats: Stats;
}

/**
 * Resolves `requested` for writing, opens it through the sandbox (which proves the descriptor is
 * the checked file) and reads it as UTF-8 text. NOT_FOUND if missing; VALIDATION if binary or
 * bigger than `maxBytes`.
 */
export async function loadTextForEdit(ctx: ToolContext, requested: string, maxBytes = EDIT_MAX_BYTES): Promise<LoadedText> {
  const resolved = await ctx.sandbox.resolve(requested, 'write');
  const { handle, size } = await ctx.sandbox.openResolvedForRead(resolved);
  try {
    if (size > maxBytes) {
      throw fail(
        'VALIDATION',
        `${shown(requested)} is ${humanBytes(size)} (${size} bytes); this tool edits files up to ${humanBytes(maxBytes)}. Use write_file to replace it, or split the file.`,
        { path: requested, size, limit: maxBytes },
      );
    }
    // Read to the end (not just the size fstat gave): an edit must see the whole file.
    const buf = await readAll(handle, maxBytes, requested);
    if (isBinary(buf)) throw fail('VALIDATION', `${shown(requested)} looks binary (it has NUL bytes), so it cannot be edited as text.`, { path: requested });
    const stats = await handle.stat();
    if (stats.size !== buf.length) {
      throw fail('CONFLICT', `${shown(requested)} changed while it was being read. Nothing was changed; try again.`, { path: requested });
    }
    return { resolved, text: decodeText(buf), size: buf.length, stats };
  } finally {
    await handle.close();
  }
}

/**
 * Reads a whole open file (from offset 0), refusing more than `maxBytes`. With `knownSize` (the
 * size fstat just gave) it reads that many bytes and stops: one read call for a file the page
 * cache holds, no extra call to find the end. A file that grows meanwhile is read as it was.
 */
export async function readAll(handle: FileHandle, maxBytes: number, requested: string, knownSize?: number): Promise<Buffer> {
  if (knownSize !== undefined && knownSize <= maxBytes) {
    const buf = Buffer.allocUnsafe(knownSize);
    let length = 0;
    while (length < knownSize) {
      const { bytesRead } = await handle.read(buf, length, knownSize - length, length);
      if (bytesRead === 0) break; // shrank meanwhile
      length += bytesRead;
    }
    return length === knownSize ? buf : buf.subarray(0, length);
  }
  let buf = Buffer.allocUnsafe(Math.min(maxBytes + 1, 64 * 1024));
  let length = 0;
  for (;;) {
    if (length === buf.length) {
      if (buf.length > maxBytes) break;
      const bigger = Buffer.allocUnsafe(Math.min(maxBytes + 1, buf.length * 2));
      buf.copy(bigger, 0, 0, length);
      buf = bigger;
    }
    const { bytesRead } = await handle.read(buf, length, buf.length - length, length);
    if (bytesRead === 0) break;
    length += bytesRead;
  }
  if (length > maxBytes) {
    throw fail('VALIDATION', `${shown(requested)} is larger than ${humanBytes(maxBytes)}.`, { path: requested, limit: maxBytes });
  }
  return buf.subarray(0, length);
}

// ---------------------------------------------------------------------------------------------
// Preview/run consistency

/**
 * What a preview showed, per call: the run refuses (CONFLICT) if the file changed between the
 * preview a person approved and the write. Keyed by the call's context object, which the pipeline
 * hands to both `preview` and `run`; a WeakMap so denied calls leave nothing behind.
 */
const previewed = new WeakMap<object, string>();

export function fingerprintOf(stats: Stats | null): string {
  // Not ctime or nlink: keeping the backup as a hard link changes both.
  return stats === null ? 'absent' : `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeMs}`;
}

export function rememberPreview(ctx: ToolContext, fingerprint: string): void {
  previewed.set(ctx, fingerprint);
}

export function checkUnchangedSincePreview(ctx: ToolContext, fingerprint: string, requested: string): void {
  const seen = previewed.get(ctx);
  previewed.delete(ctx);
  if (seen !== undefined && seen !== fingerprint) {
    throw fail('CONFLICT', `${shown(requested)} changed after the preview was shown, so nothing was written. Look at it again and retry.`, { path: requested });
  }
}

// ---------------------------------------------------------------------------------------------
// Atomic write

export interface AtomicWriteResult {
  /** Workspace-relative path of the backup of the previous content, or null for a new file. */
  backup: string | null;
  bytes: number;
}

/**
 * A temporary name in the same directory, so the final rename never crosses file systems: hidden,
 * and naming this process, so a sweep tells a killed write's leftover from a write still under way.
 */
function tempNameFor(finalName: string): string {
  const base = finalName.length > 180 ? finalName.slice(0, 180) : finalName;
  return `.${base}.memo-${process.pid}-${randomBytes(6).toString('hex')}.tmp`;
}

/** This pack's temp names, `.<name>.memo-<pid>-<12 hex>.tmp`, and the older ones without the pid. */
const TEMP_NAME = /^\..+\.memo-(?:([1-9]\d{0,9})-)?[0-9a-f]{12}\.tmp$/;

/** Temporary names this process is writing right now: a sweep of leftovers must not take them. */
const inFlight = new Set<string>();

/**
 * Removes the temporary files killed writes of this pack left in `dir` (a kill between the temp
 * write and the rename), whichever file they were for: those whose process is gone, and those named
 * without a pid (an older version) that are older than this process; never one a write in this
 * process holds (a backup's temp is a hard link to the old file, so it carries the old mtime).
 *
 * Run before every write, in the folder written to, not over the whole root when the pack activates:
 * the root can be a checkout of any size (node_modules and all), a walk of it would slow every start,
 * and a leftover is only in the way where files are written. So a folder is swept by the first write
 * into it after a crash (one readdir, which the write's own checks already pay for in kind); a folder
 * nothing writes to again keeps its hidden leftovers.
 */
async function sweepLeftovers(dir: string): Promise<void> {
  let entries: string[];
  try {
    entries = await readdir(dir);
  } catch {
    return;
  }
  for (const entry of entries) {
    const m = entry.endsWith('.tmp') ? TEMP_NAME.exec(entry) : null;
    const full = path.join(dir, entry);
    if (m && !inFlight.has(full)) await removeTempLeftover(full, m[1] === undefined ? null : Number(m[1]));
  }
}

/**
 * Replaces (or creates) the file at `real` with `data`, atomically, on the kernel's
 * writeFileAtomicAsync (temp file beside it, O_EXCL and never following a link, fsync, rename, folder
 * fsync; the file keeps its mode and, for root, its owner), with this pack's checks before the rename:
 * 1. the folder must still be the one the sandbox checked;
 * 2. if the file existed, its previous content is kept as `<name>.bak` (a hard link to the old
 *    file when it has no other links, which costs nothing; a copy otherwise), also via rename, and
 *    the file must still be the one the caller read; if it did not, none may have appeared.
 * Any failure removes the temporary files and leaves the target as it was.
 */
export async function atomicWrite(ctx: ToolContext, resolved: ResolvedPath, data: string | Buffer, old: Stats | null): Promise<AtomicWriteResult> {
  const requested = resolved.requested;
  const dir = path.dirname(resolved.real);
  const name = path.basename(resolved.real);
  const tmp = path.join(dir, tempNameFor(name));
  const bytes = typeof data === 'string' ? Buffer.byteLength(data) : data.length;
  const cleanup: string[] = [];
  const held = [tmp];
  inFlight.add(tmp);
  let backup: string | null = null;

  const beforeRename = async () => {
    if (PAUSE) crashPoint('temp-written');
    // The directory must still be the one the sandbox checked (no link swapped in on the way).
    if ((await realpath(dir)) !== dir || !ctx.sandbox.isInside(dir)) {
      throw fail('CONFLICT', `The folder of ${shown(requested)} changed while it was being written. Nothing was changed.`, { path: requested });
    }
    checkSignal(ctx.signal, `Writing ${shown(requested)}`);
    if (!old) {
      if (await exists(resolved.real)) {
        throw fail('CONFLICT', `${shown(requested)} appeared while it was being written, so nothing was written. Look at it and retry.`, { path: requested });
      }
      return;
    }
    const bakReal = path.join(dir, `${name}.bak`);
    const bakTmp = path.join(dir, tempNameFor(`${name}.bak`));
    cleanup.push(bakTmp);
    held.push(bakTmp);
    inFlight.add(bakTmp);
    let linked = false;
    if (old.nlink === 1) {
      try {
        await link(resolved.real, bakTmp);
        linked = true;
      } catch {
        // Hard links not supported here: copy instead.
      }
    }
    if (!linked) await copyFile(resolved.real, bakTmp, fsConstants.COPYFILE_EXCL);
    if (PAUSE) crashPoint('backup-made');
    // The file must still be the one we looked at: otherwise the backup would hold something else.
    const now = await lstat(resolved.real);
    if (fingerprintOf(now) !== fingerprintOf(old)) {
      throw fail('CONFLICT', `${shown(requested)} changed while it was being written, so nothing was written. Look at it again and retry.`, {
        path: requested,
      });
    }
    await rename(bakTmp, bakReal);
    cleanup.pop();
    backup = path.relative(ctx.sandbox.root, bakReal);
    if (PAUSE) crashPoint('before-rename');
  };

  try {
    checkSignal(ctx.signal, `Writing ${shown(requested)}`);
    await sweepLeftovers(dir);
    await writeFileAtomicAsync(resolved.real, data, {
      // A new file is created as any other (0666 less the umask); an existing one keeps its mode.
      mode: old ? old.mode & 0o7777 : null,
      ...(old ? { owner: { uid: old.uid, gid: old.gid } } : {}),
      temp: tmp,
      steps: {
        beforeRename,
        // Test-only crash points (see crash-points.ts); skipped in production.
        ...(PAUSE
          ? {
              opened: async (h: FileHandle) => {
                crashPoint('temp-created');
                if (PAUSE?.step === 'temp-partial') await h.write(Buffer.from(data).subarray(0, bytes >> 1));
                crashPoint('temp-partial');
              },
              renamed: () => crashPoint('after-rename'),
            }
          : {}),
      },
    });
    return { backup, bytes };
  } catch (err) {
    for (const f of cleanup) await unlink(f).catch(() => {});
    throw fsFailure(err, requested, 'writing');
  } finally {
    for (const f of held) inFlight.delete(f);
  }
}

export async function exists(p: string): Promise<boolean> {
  try {
    await lstat(p);
    return true;
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return false;
    throw err;
  }
}

/** Stats of the real path, or null when it does not exist. */
export async function statOrNull(real: string): Promise<Stats | null> {
  try {
    return await lstat(real);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return null;
    throw err;
  }
}

function folderMissing(requested: string): MemoError {
  return fail('NOT_FOUND', `The folder for ${shown(requested)} does not exist. Pass createDirs: true to create it, or check the path.`, { path: requested });
}

function partIsFile(requested: string): MemoError {
  return fail('VALIDATION', `Part of ${shown(requested)} is a file, not a directory. Check the path.`, { path: requested });
}

/**
 * What ensureParent would refuse, found without changing anything, for a tool's assess (before
 * anyone is asked): the folder of the target missing without `createDirs` (NOT_FOUND), or a part of
 * the path that is a file (VALIDATION). Anything else the file system says is left to the write.
 */
export async function checkParent(resolved: ResolvedPath, createDirs: boolean): Promise<void> {
  for (let dir = path.dirname(resolved.real); ;) {
    let st: Stats;
    try {
      st = await stat(dir);
    } catch (err) {
      const code = errnoOf(err);
      if (code === 'ENOTDIR') throw partIsFile(resolved.requested);
      if (code !== 'ENOENT') return;
      if (!createDirs) throw folderMissing(resolved.requested);
      // With createDirs: the nearest folder that is there must be a folder.
      const up = path.dirname(dir);
      if (up === dir) return;
      dir = up;
      continue;
    }
    if (!st.isDirectory()) throw partIsFile(resolved.requested);
    return;
  }
}

/**
 * Makes sure the directory of a resolved write target exists: NOT_FOUND without `createDirs`,
 * created (inside the root only: the sandbox put `real` there) with it. Returns whether it created any.
 */
export async function ensureParent(ctx: ToolContext, resolved: ResolvedPath, createDirs: boolean): Promise<boolean> {
  const dir = path.dirname(resolved.real);
  let st: Stats | null = null;
  try {
    st = await stat(dir);
  } catch (err) {
    if (errnoOf(err) !== 'ENOENT') throw fsFailure(err, resolved.requested, 'checking the folder of');
  }
  if (st) {
    if (!st.isDirectory()) throw partIsFile(resolved.requested);
    return false;
  }
  if (!createDirs) throw folderMissing(resolved.requested);
  if (!ctx.sandbox.isInside(dir))
    throw fail('PATH_OUTSIDE_ROOT', `${shown(resolved.requested)} leads outside the workspace root.`, { path: resolved.requested });
  // One level at a time, never through a link: `mkdir -p` would walk into a link that appeared
  // since the sandbox checked the path, and create folders wherever it points.
  try {
    const missing: string[] = [];
    for (let cur = dir; !(await exists(cur)); cur = path.dirname(cur)) {
      if (!ctx.sandbox.isInside(cur))
        throw fail('PATH_OUTSIDE_ROOT', `${shown(resolved.requested)} leads outside the workspace root.`, { path: resolved.requested });
      missing.unshift(cur);
    }
    for (const d of missing) {
      try {
        await mkdir(d);
      } catch (err) {
        if (errnoOf(err) !== 'EEXIST') throw err;
      }
      if (!(await lstat(d)).isDirectory()) {
        throw fail('CONFLICT', `A folder of ${shown(resolved.requested)} changed while it was being created. Nothing was written.`, {
          path: resolved.requested,
        });
      }
    }
  } catch (err) {
    throw fsFailure(err, resolved.requested, 'creating the folder of');
  }
  return true;
}
