/** search_files: glob below the root (or a subfolder) with tinyglobby, never leaving the root. */
import { readdir, realpath } from 'node:fs';
import { glob, type FileSystemAdapter } from 'tinyglobby';
import type { Sandbox, ToolContext } from 'memo-kernel/pack';
import { fail, plural, shown } from './common.js';
import type { ToolArgs } from './tool-args.js';

export const SEARCH_DEFAULT_RESULTS = 200;
export const SEARCH_MAX_RESULTS = 5000;
/** Skipped unless `includeIgnored`: repository internals and installed dependencies. */
export const DEFAULT_IGNORE: readonly string[] = Object.freeze(['**/.git/**', '**/node_modules/**']);

/**
 * Refuses patterns that could reach outside the searched folder: absolute ones (`/x`, `C:\x`,
 * `\\server\x`, `~/x`) and any `..` segment (also one a brace or extglob alternative would spell,
 * like `{..,a}/x` or `@(..)/x`: a `..` between separators, braces, commas, bars or parentheses).
 */
export function patternProblem(pattern: string): string | null {
  if (pattern.includes('\0')) return 'contains a NUL byte';
  if (/^([\\/]|[A-Za-z]:|~)/.test(pattern)) return 'is absolute; give it relative to the searched folder (use path to pick a subfolder)';
  if (/(^|[\\/{},|(@!+*?])\.\.($|[\\/{},|)])/.test(pattern)) return 'contains a ".." segment, which could leave the searched folder';
  return null;
}

/** The options passed to tinyglobby (also used by the benchmark's direct call, so both do the same work). */
export function globOptions(cwd: string, args: { dot?: boolean; includeIgnored?: boolean }, signal?: AbortSignal) {
  return {
    cwd,
    dot: args.dot === true,
    followSymbolicLinks: false,
    onlyFiles: true,
    ignore: args.includeIgnored === true ? [] : [...DEFAULT_IGNORE],
    ...(signal ? { signal } : {}),
  };
}

/**
 * The `fs` tinyglobby's crawler (fdir) lists directories with. tinyglobby starts the crawl at the
 * pattern's static prefix (`src/lib/*.ts` starts in `src/lib`), and listing that folder would
 * follow a symbolic link in the prefix. So a folder not below an already-checked one is checked
 * first: its real path must be itself (no link on the way) and inside the root; otherwise it is
 * listed as empty and `escaped` is set. Below a checked folder fdir descends only into real
 * directories (links are excluded), so the check is one realpath per search, not per folder.
 * Folders that are the kernel's own state are listed as empty wherever the crawl meets them.
 * Known limit: a folder swapped for a link while the crawl runs is not detected.
 */
function guardedFs(sandbox: Sandbox, state: { escaped: boolean }): FileSystemAdapter {
  const checked: string[] = [];
  const under = (dir: string) => checked.some((c) => dir === c || dir.startsWith(c.endsWith('/') ? c : `${c}/`));
  const guardedReaddir = (p: string, options: unknown, callback: (err: NodeJS.ErrnoException | null, entries?: unknown[]) => void) => {
    const dir = p.length > 1 && p.endsWith('/') ? p.slice(0, -1) : p;
    // The kernel's own folders (a data folder inside the root, say) are searched as if empty.
    if (sandbox.kernelArea(dir)) return callback(null, []);
    if (under(dir)) return readdir(p, options as { withFileTypes: true }, callback as never);
    realpath.native(dir, (err, real) => {
      if (err || real !== dir || !sandbox.isInside(real)) {
        if (!err || err.code !== 'ENOENT') state.escaped = true;
        return callback(null, []);
      }
      checked.push(dir);
      readdir(p, options as { withFileTypes: true }, callback as never);
    });
  };
  return { readdir: guardedReaddir as unknown as NonNullable<FileSystemAdapter['readdir']> };
}

export async function searchFilesTool(args: ToolArgs['search_files'], ctx: ToolContext): Promise<Record<string, unknown>> {
  const problem = patternProblem(args.pattern);
  if (problem) throw fail('VALIDATION', `The pattern ${shown(args.pattern)} ${problem}.`, { pattern: args.pattern });

  const requested = args.path ?? '.';
  const dir = await ctx.sandbox.resolve(requested, 'list');
  if (!dir.exists) throw fail('NOT_FOUND', `${shown(requested)} does not exist. Check the path.`, { path: requested });
  if (!dir.isDirectory) throw fail('VALIDATION', `${shown(requested)} is a file, not a directory to search in.`, { path: requested });

  const configured = ctx.config.maxSearchResults;
  const cap = typeof configured === 'number' && Number.isInteger(configured) && configured > 0 ? configured : SEARCH_MAX_RESULTS;
  const max = Math.min(args.maxResults ?? SEARCH_DEFAULT_RESULTS, cap);

  // Symbolic links are neither followed nor returned (tinyglobby excludes them when not following),
  // so every match is a real file reached from `dir` without leaving it.
  const state = { escaped: false };
  const found = await glob(args.pattern, { ...globOptions(dir.real, args, ctx.signal), fs: guardedFs(ctx.sandbox, state) });
  if (ctx.signal.aborted) throw fail('CANCELLED', 'The search was stopped before it finished.');
  if (state.escaped) {
    throw fail(
      'VALIDATION',
      `The pattern ${shown(args.pattern)} starts in a folder reached through a symbolic link (or outside the searched folder); search_files does not follow links. Search the folder the link points to instead.`,
      { pattern: args.pattern },
    );
  }

  const prefix = dir.relative === '' ? '' : `${dir.relative.split('\\').join('/')}/`;
  let matches: string[] = [];
  for (const p of found) {
    // Defence in depth: nothing that climbs or is absolute is ever returned.
    if (p.startsWith('../') || p === '..' || p.startsWith('/')) continue;
    matches.push(prefix + p);
  }
  const total = matches.length;
  matches.sort();
  const truncated = total > max;
  if (truncated) matches = matches.slice(0, max);
  return {
    pattern: args.pattern,
    path: requested,
    matches,
    count: matches.length,
    total,
    truncated,
    summary: `${plural(total, 'file')} match ${args.pattern}${requested === '.' ? '' : ` in ${requested}`}${truncated ? `, first ${max} returned` : ''}`,
  };
}
