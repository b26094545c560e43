/** list_directory and get_file_info: metadata only, never content. */
import { lstatSync, type Dirent, type Stats } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { ToolContext } from 'memo-kernel/pack';
import type { ToolArgs } from './tool-args.js';
import { checkSignal, fail, fsFailure, humanBytes, plural, shown } from './common.js';
import { isRootRequest, linkTargetInfo, locateEntry } from './locate.js';

export const LIST_MAX = 1000;
const STAT_BATCH = 64;

type EntryType = 'file' | 'dir' | 'symlink' | 'other';

function typeOf(x: Dirent | Stats): EntryType {
  if (x.isSymbolicLink()) return 'symlink';
  if (x.isDirectory()) return 'dir';
  if (x.isFile()) return 'file';
  return 'other';
}

export async function listDirectoryTool(args: ToolArgs['list_directory'], ctx: ToolContext): Promise<Record<string, unknown>> {
  const requested = args.path ?? '.';
  const resolved = await ctx.sandbox.resolve(requested, 'list');
  if (!resolved.exists) throw fail('NOT_FOUND', `${shown(requested)} does not exist. Check the path, or list its parent directory.`, { path: requested });
  if (!resolved.isDirectory)
    throw fail('VALIDATION', `${shown(requested)} is a file, not a directory. Use get_file_info or read_file for it.`, { path: requested });

  let dirents: Dirent[];
  try {
    dirents = await readdir(resolved.real, { withFileTypes: true });
  } catch (err) {
    throw fsFailure(err, requested, 'listing');
  }
  const visible = args.showHidden === true ? dirents : dirents.filter((d) => !d.name.startsWith('.'));
  visible.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const total = visible.length;
  const shownEntries = visible.slice(0, LIST_MAX);

  // Sizes by lstat on this thread, a batch at a time: a metadata call is a few microseconds, where a
  // trip through the thread pool per entry costs ten times that (a listing is at most 1,000 entries,
  // and the signal is checked between batches).
  const entries = new Array<{ name: string; type: EntryType; size: number | null }>(shownEntries.length);
  for (let i = 0; i < shownEntries.length; i += STAT_BATCH) {
    checkSignal(ctx.signal, `Listing ${shown(requested)}`);
    if (i > 0) await new Promise<void>((r) => setImmediate(r));
    const end = Math.min(shownEntries.length, i + STAT_BATCH);
    for (let j = i; j < end; j++) {
      const d = shownEntries[j]!; // j < end <= length
      const type = typeOf(d);
      let size: number | null = null;
      if (type === 'file') {
        try {
          size = lstatSync(path.join(resolved.real, d.name)).size;
        } catch {
          size = null; // removed since the listing
        }
      }
      entries[j] = { name: d.name, type, size };
    }
  }
  const truncated = total > LIST_MAX;
  const where = resolved.relative === '' ? '.' : requested;
  return {
    path: requested,
    entries,
    total,
    truncated,
    summary: `listed ${where}: ${plural(total, 'entry', 'entries')}${truncated ? `, first ${LIST_MAX} returned` : ''}`,
  };
}

function describe(stats: Stats): { type: EntryType; size: number; mode: string; mtime: string } {
  return {
    type: typeOf(stats),
    size: stats.size,
    mode: (stats.mode & 0o7777).toString(8).padStart(4, '0'),
    mtime: stats.mtime.toISOString(),
  };
}

export async function getFileInfoTool(args: ToolArgs['get_file_info'], ctx: ToolContext): Promise<Record<string, unknown>> {
  const requested = args.path;
  let resolvedErr: unknown;
  let real: string | undefined;
  try {
    const r = await ctx.sandbox.resolve(requested, 'read');
    real = r.exists ? r.real : undefined;
  } catch (err) {
    resolvedErr = err;
  }

  if (isRootRequest(ctx, requested)) {
    // eslint-disable-next-line @typescript-eslint/only-throw-error -- rethrows what the sandbox threw in an earlier step (unknown, kept aside), as it was
    if (resolvedErr) throw resolvedErr;
    const st = await stat(ctx.sandbox.root);
    const d = describe(st);
    return { path: requested, ...d, isSymlink: false, summary: `info on the workspace root (${d.type})` };
  }

  const loc = await locateEntry(ctx, requested, 'read', resolvedErr);
  if (loc.stats.isSymbolicLink()) {
    const target = await linkTargetInfo(ctx, requested);
    if (target.inside === true && target.exists === true && real !== undefined) {
      try {
        const st = await stat(real);
        Object.assign(target, { size: st.size, mode: (st.mode & 0o7777).toString(8).padStart(4, '0'), mtime: st.mtime.toISOString() });
      } catch {
        // gone since it was resolved: the link's own facts stand
      }
    }
    const d = describe(loc.stats);
    const where = target.inside === false ? 'outside the workspace' : target.exists === true ? `to ${String(target.path)}` : 'to nothing that exists';
    return { path: requested, ...d, isSymlink: true, target, summary: `info on ${requested}: symbolic link ${where}` };
  }
  // eslint-disable-next-line @typescript-eslint/only-throw-error -- rethrows what the sandbox threw in an earlier step (unknown, kept aside), as it was
  if (resolvedErr) throw resolvedErr;
  if (real !== undefined && real !== loc.entry) {
    throw fail('CONFLICT', `${shown(requested)} changed while it was being looked at. Try again.`, { path: requested });
  }
  const d = describe(loc.stats);
  return { path: requested, ...d, isSymlink: false, summary: `info on ${requested}: ${d.type}, ${humanBytes(d.size)}` };
}
