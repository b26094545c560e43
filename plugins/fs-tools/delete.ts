/** delete_file: a file, a symbolic link (the link, never its target) or a directory. */
import type { Stats } from 'node:fs';
import { lstat, readdir, rmdir, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Preview, ResolvedPath, ToolContext } from 'memo-kernel/pack';
import {
  checkSignal,
  checkUnchangedSincePreview,
  countLines,
  fail,
  fingerprintOf,
  fsFailure,
  humanBytes,
  isBinary,
  isGitName,
  plural,
  readAll,
  rememberPreview,
  shown,
  MB,
} from './common.js';
import { isRootRequest, linkTargetInfo, locateEntry, segmentsOfRequest, type LocatedEntry } from './locate.js';
import type { ToolArgs } from './tool-args.js';

/** Entries scanned for a preview before it says "at least". */
const PREVIEW_SCAN_MAX = 100_000;
/** Files up to this size get their lines counted in the preview. */
const PREVIEW_COUNT_LINES_MAX = 10 * MB;

type Target =
  | { kind: 'link'; loc: LocatedEntry }
  | { kind: 'file'; loc: LocatedEntry; resolved: ResolvedPath }
  | { kind: 'dir'; loc: LocatedEntry; resolved: ResolvedPath };

/**
 * Decides what `requested` names, with every check done:
 * - the root, `.git` (as spelled or as resolved) and system directories: the sandbox's `delete`
 *   intent refuses them (PATH_PROTECTED);
 * - a final symbolic link: only its parent must pass the sandbox (as a place we may change) and
 *   its name must not be `.git`; where it points does not matter, since only the link goes.
 */
async function findTarget(ctx: ToolContext, requested: string): Promise<Target> {
  let resolved: ResolvedPath | undefined;
  let refusal: unknown;
  try {
    resolved = await ctx.sandbox.resolve(requested, 'delete');
  } catch (err) {
    refusal = err;
  }
  if (isRootRequest(ctx, requested) || segmentsOfRequest(requested).some(isGitName)) {
    // eslint-disable-next-line @typescript-eslint/only-throw-error -- rethrows what the sandbox threw in an earlier step (unknown, kept aside), as it was
    throw refusal ?? fail('PATH_PROTECTED', `${shown(requested)} may not be deleted.`, { path: requested });
  }
  const loc = await locateEntry(ctx, requested, 'write', refusal);
  if (loc.stats.isSymbolicLink()) return { kind: 'link', loc };
  // eslint-disable-next-line @typescript-eslint/only-throw-error -- rethrows what the sandbox threw in an earlier step (unknown, kept aside), as it was
  if (refusal !== undefined) throw refusal;
  if (!resolved || !resolved.exists) throw fail('NOT_FOUND', `${shown(requested)} does not exist.`, { path: requested });
  if (resolved.real !== loc.entry) {
    throw fail('CONFLICT', `${shown(requested)} changed while it was being checked (it may have been replaced). Nothing was deleted.`, { path: requested });
  }
  return loc.stats.isDirectory() ? { kind: 'dir', loc, resolved } : { kind: 'file', loc, resolved };
}

interface TreeStats {
  files: number;
  dirs: number;
  links: number;
  others: number;
  bytes: number;
  /** Workspace-relative path of a nested .git found inside, if any. */
  gitAt: string | null;
  capped: boolean;
  sample: string[];
}

/** Counts what is below `dir` (breadth-first, never following links), up to `max` entries. */
async function scanTree(ctx: ToolContext, dir: string, max: number, withSizes: boolean): Promise<TreeStats> {
  const out: TreeStats = { files: 0, dirs: 0, links: 0, others: 0, bytes: 0, gitAt: null, capped: false, sample: [] };
  const queue = [dir];
  let seen = 0;
  while (queue.length > 0) {
    checkSignal(ctx.signal, 'Looking through the directory');
    const current = queue.shift()!;
    const entries = await readdir(current, { withFileTypes: true });
    for (const e of entries) {
      const full = path.join(current, e.name);
      if (current === dir && out.sample.length < 8) out.sample.push(e.isDirectory() ? `${e.name}/` : e.name);
      if (isGitName(e.name)) {
        out.gitAt = path.relative(ctx.sandbox.root, full);
        return out;
      }
      if (++seen > max) {
        out.capped = true;
        return out;
      }
      if (e.isDirectory()) {
        out.dirs++;
        queue.push(full);
      } else if (e.isSymbolicLink()) out.links++;
      else if (e.isFile()) {
        out.files++;
        if (withSizes) out.bytes += (await lstat(full)).size;
      } else out.others++;
    }
  }
  return out;
}

function nestedGitError(requested: string, gitAt: string) {
  return fail('PATH_PROTECTED', `${shown(requested)} contains a git repository (${gitAt}), which tools may not delete. Remove it with git or by hand.`, {
    path: requested,
    nestedGit: gitAt,
  });
}

async function deletePreview(args: ToolArgs['delete_file'], ctx: ToolContext): Promise<Preview> {
  const requested = args.path;
  const target = await findTarget(ctx, requested);
  rememberPreview(ctx, fingerprintOf(target.loc.stats));

  if (target.kind === 'link') {
    const info = await linkTargetInfo(ctx, requested);
    const where =
      info.inside === false
        ? 'a location outside the workspace'
        : info.resolvable === false
          ? 'a target that cannot be resolved'
          : info.exists === false
            ? `${JSON.stringify(info.path)}, which does not exist`
            : info.protected
              ? 'a protected location'
              : `${JSON.stringify(info.path)} inside the workspace`;
    return {
      kind: 'delete',
      text: `Deletes the symbolic link ${shown(requested)} (it points to ${where}). Only the link is removed; its target is not touched.`,
    };
  }

  if (target.kind === 'file') {
    const size = target.loc.stats.size;
    let lines = '';
    if (target.loc.stats.isFile() && size <= PREVIEW_COUNT_LINES_MAX) {
      const { handle } = await ctx.sandbox.openResolvedForRead(target.resolved);
      try {
        const buf = await readAll(handle, PREVIEW_COUNT_LINES_MAX, requested, size);
        lines = isBinary(buf) ? ', binary' : `, ${plural(countLines(buf), 'line')}`;
      } finally {
        await handle.close();
      }
    }
    const what = target.loc.stats.isFile() ? 'the file' : 'the special file';
    return { kind: 'delete', text: `Deletes ${what} ${shown(requested)}: ${humanBytes(size)}${size >= 1024 ? ` (${size} bytes)` : ''}${lines}.` };
  }

  const t = await scanTree(ctx, target.resolved.real, PREVIEW_SCAN_MAX, true);
  if (t.gitAt) throw nestedGitError(requested, t.gitAt);
  const count = t.files + t.dirs + t.links + t.others;
  if (count === 0) return { kind: 'delete', text: `Deletes the empty directory ${shown(requested)}.` };
  if (args.recursive !== true) throw notEmptyError(requested, count);
  const parts = [plural(t.files, 'file'), plural(t.dirs, 'folder')];
  if (t.links) parts.push(plural(t.links, 'symbolic link'));
  if (t.others) parts.push(plural(t.others, 'other entry', 'other entries'));
  const atLeast = t.capped ? 'at least ' : '';
  const sample = t.sample.join(', ') + (t.sample.length < count ? ', …' : '');
  return {
    kind: 'delete',
    text: `Deletes the directory ${shown(requested)} and everything in it: ${atLeast}${parts.join(', ')}, ${atLeast}${humanBytes(t.bytes)} in total. It contains: ${sample}`,
  };
}

function notEmptyError(requested: string, count: number) {
  return fail(
    'VALIDATION',
    `${shown(requested)} is a directory that is not empty (${plural(count, 'entry', 'entries')} directly inside or below). Pass recursive: true to delete it with everything in it.`,
    {
      path: requested,
      entries: count,
    },
  );
}

interface Removed {
  files: number;
  dirs: number;
  links: number;
  bytes: number;
}

/**
 * Removes everything below `dir`, depth first, never following links (each entry is lstat'ed; a
 * link is unlinked). Known limit: a directory swapped for a link between its lstat and its
 * readdir would be listed through the link; Node has no fd-relative readdir to close that.
 */
async function removeTree(ctx: ToolContext, dir: string, removed: Removed): Promise<void> {
  const entries = await readdir(dir);
  for (const name of entries) {
    checkSignal(ctx.signal, 'Deleting the directory');
    const full = path.join(dir, name);
    let st: Stats;
    try {
      st = await lstat(full);
    } catch (err) {
      if ((err as { code?: string }).code === 'ENOENT') continue;
      throw err;
    }
    if (st.isDirectory()) {
      if (!ctx.sandbox.isInside(full)) throw fail('CONFLICT', 'The directory changed while it was being deleted.');
      await removeTree(ctx, full, removed);
      await rmdir(full);
      removed.dirs++;
    } else {
      await unlink(full);
      if (st.isSymbolicLink()) removed.links++;
      else {
        removed.files++;
        removed.bytes += st.size;
      }
    }
  }
}

async function deleteRun(args: ToolArgs['delete_file'], ctx: ToolContext): Promise<Record<string, unknown>> {
  const requested = args.path;
  const target = await findTarget(ctx, requested);
  checkUnchangedSincePreview(ctx, fingerprintOf(target.loc.stats), requested);

  if (target.kind === 'link') {
    try {
      await unlink(target.loc.entry);
    } catch (err) {
      throw fsFailure(err, requested, 'deleting');
    }
    return {
      path: requested,
      type: 'symlink',
      files: 0,
      dirs: 0,
      symlinks: 1,
      bytes: 0,
      summary: `deleted the symbolic link ${requested} (its target was not touched)`,
    };
  }

  if (target.kind === 'file') {
    try {
      await unlink(target.resolved.real);
    } catch (err) {
      throw fsFailure(err, requested, 'deleting');
    }
    const size = target.loc.stats.size;
    return { path: requested, type: 'file', files: 1, dirs: 0, symlinks: 0, bytes: size, summary: `deleted ${requested} (${humanBytes(size)})` };
  }

  const dir = target.resolved.real;
  // Checked in full before anything is removed: no nested repository, and recursive when not empty.
  const t = await scanTree(ctx, dir, Number.POSITIVE_INFINITY, false);
  if (t.gitAt) throw nestedGitError(requested, t.gitAt);
  const count = t.files + t.dirs + t.links + t.others;
  if (count > 0 && args.recursive !== true) throw notEmptyError(requested, count);
  const removed: Removed = { files: 0, dirs: 0, links: 0, bytes: 0 };
  try {
    await removeTree(ctx, dir, removed);
    await rmdir(dir);
  } catch (err) {
    const e = fsFailure(err, requested, 'deleting');
    if (removed.files + removed.dirs + removed.links > 0) {
      e.message += ` ${plural(removed.files, 'file')} and ${plural(removed.dirs, 'folder')} had already been deleted.`;
    }
    throw e;
  }
  return {
    path: requested,
    type: 'dir',
    files: removed.files,
    dirs: removed.dirs + 1,
    symlinks: removed.links,
    bytes: removed.bytes,
    summary: `deleted the directory ${requested} (${plural(removed.files, 'file')}, ${plural(removed.dirs, 'subfolder')}, ${humanBytes(removed.bytes)})`,
  };
}

export const deleteFileTool = { run: deleteRun, preview: deletePreview };
