/**
 * Finding the entry a path names *without* following a final symbolic link: the sandbox resolves
 * (and checks) the parent directory, and the last name is looked at with lstat inside that real
 * parent. The sandbox's own `resolve` follows a final link (its `real` is the link's target), which
 * is right for reading and writing through a link, wrong for deleting or describing the link itself.
 */
import type { Stats } from 'node:fs';
import { lstat } from 'node:fs/promises';
import path from 'node:path';
import type { PathIntent, ResolvedPath, ToolContext } from 'memo-kernel/pack';
import { errnoOf, fail, fsFailure, shown } from './common.js';

export interface LocatedEntry {
  /** The parent directory, resolved and checked by the sandbox. */
  parent: ResolvedPath;
  /** The final name, as given. */
  name: string;
  /** `parent.real` + `name`: the entry itself (a link is not followed). */
  entry: string;
  /** lstat of the entry. */
  stats: Stats;
}

/** Whether the request names the workspace root itself ('.', '', './', the root's absolute path). */
export function isRootRequest(ctx: ToolContext, requested: string): boolean {
  const abs = path.resolve(ctx.sandbox.root, requested);
  return abs === ctx.sandbox.root || abs === path.resolve(ctx.root);
}

/** The request's segments, split the way the sandbox splits them (both slash kinds). */
export function segmentsOfRequest(requested: string): string[] {
  return requested.split(/[\\/]/).filter((s) => s.length > 0);
}

/**
 * Locates the entry `requested` names, not following a final link. The caller has already
 * handled the root itself. Throws the sandbox's errors for the parent (`fallback`, usually the
 * error the full resolution gave, is thrown instead when there is one: it names the caller's
 * whole path), NOT_FOUND when the entry does not exist.
 */
export async function locateEntry(ctx: ToolContext, requested: string, parentIntent: PathIntent, fallback?: unknown): Promise<LocatedEntry> {
  // `..` and NUL bytes: let the sandbox refuse them with its standard message.
  if (requested.includes('\0') || segmentsOfRequest(requested).includes('..')) await ctx.sandbox.resolve(requested, parentIntent);
  const normal = path.normalize(requested).replace(/[\\/]+$/, '');
  const name = path.basename(normal);
  const parentRequest = path.dirname(normal);
  if (name === '' || name === '.' || name === '..') {
    // eslint-disable-next-line @typescript-eslint/only-throw-error -- rethrows what the sandbox threw in an earlier step (unknown, kept aside), as it was
    throw fallback ?? fail('VALIDATION', `${shown(requested)} does not name a file or directory.`, { path: requested });
  }

  let parent: ResolvedPath;
  try {
    parent = await ctx.sandbox.resolve(parentRequest, parentIntent);
  } catch (err) {
    throw fallback ?? err;
  }
  // eslint-disable-next-line @typescript-eslint/only-throw-error -- rethrows what the sandbox threw in an earlier step (unknown, kept aside), as it was
  if (!parent.exists) throw fallback ?? fail('NOT_FOUND', `${shown(requested)} does not exist: its folder is missing.`, { path: requested });
  // eslint-disable-next-line @typescript-eslint/only-throw-error -- rethrows what the sandbox threw in an earlier step (unknown, kept aside), as it was
  if (!parent.isDirectory) throw fallback ?? fail('VALIDATION', `Part of ${shown(requested)} is a file, not a directory. Check the path.`, { path: requested });

  const entry = path.join(parent.real, name);
  let stats: Stats;
  try {
    stats = await lstat(entry);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') {
      const missing = fail('NOT_FOUND', `${shown(requested)} does not exist. Check the path, or list its directory to see what is there.`, { path: requested });
      // eslint-disable-next-line @typescript-eslint/only-throw-error -- rethrows what the sandbox threw in an earlier step (unknown, kept aside), as it was
      throw fallback ?? missing;
    }
    throw fsFailure(err, requested, 'looking at');
  }
  return { parent, name, entry, stats };
}

/** Where a link leads, as far as a caller may know: a workspace-relative path, or only that it leaves. */
export async function linkTargetInfo(ctx: ToolContext, requested: string): Promise<Record<string, string | boolean>> {
  try {
    const r = await ctx.sandbox.resolve(requested, 'read');
    return r.exists
      ? { inside: true, exists: true, path: r.relative === '' ? '.' : r.relative, type: r.isDirectory ? 'dir' : 'file' }
      : { inside: true, exists: false, path: r.relative };
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (code === 'PATH_OUTSIDE_ROOT') return { inside: false };
    if (code === 'PATH_PROTECTED') return { inside: true, protected: true };
    return { resolvable: false };
  }
}
