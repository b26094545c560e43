/** self_clone: copies the whole project (the workspace root) into another local directory. */
import { constants as fsConstants, createWriteStream, realpathSync } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { chmod, copyFile, lstat, mkdir, open, readdir, realpath, symlink } from 'node:fs/promises';
import path from 'node:path';
import { SYSTEM_DIRS, type Preview, type ToolContext } from 'memo-kernel/pack';
import { checkSignal, errnoOf, fail, fsFailure, humanBytes, plural, shown } from './common.js';
import type { ToolArgs } from './tool-args.js';

const PROGRESS_EVERY = 250;
/** Skipped paths listed per kind in the result (the counts are always complete). */
const SKIPPED_LIST_MAX = 100;
const PREVIEW_SCAN_MAX = 200_000;
const FOLD_CASE = process.platform === 'darwin' || process.platform === 'win32';

function segmentsOf(p: string): string[] {
  return p.split(path.sep).filter((s) => s.length > 0);
}

function within(parent: readonly string[], child: readonly string[]): boolean {
  if (child.length < parent.length) return false;
  return parent.every((seg, i) => (FOLD_CASE ? seg.toLowerCase() === child[i]?.toLowerCase() : seg === child[i]));
}

/** Every system directory, as spelled and as its real path (merged /usr, macOS /private links). */
function systemDirSegments(): string[][] {
  const all = new Set<string>();
  for (const dir of SYSTEM_DIRS) {
    all.add(dir);
    try {
      all.add(realpathSync.native(dir));
    } catch {
      // not on this system
    }
  }
  return [...all].map(segmentsOf);
}

interface CheckedTarget {
  /** The target as the caller gave it (for messages). */
  requested: string;
  /** Real path of the longest existing ancestor plus the missing names. */
  real: string;
  exists: boolean;
}

/** Resolves the longest existing ancestor with realpath and appends the names below it that do not exist yet. */
async function realOfTarget(abs: string): Promise<{ real: string; exists: boolean }> {
  const missing: string[] = [];
  let cur = abs;
  for (;;) {
    try {
      const r = await realpath(cur);
      return { real: missing.length ? path.join(r, ...missing.reverse()) : r, exists: missing.length === 0 };
    } catch (err) {
      const code = errnoOf(err);
      if (code !== 'ENOENT') {
        // A dangling link or a file in the way: refuse rather than guess.
        throw fail('VALIDATION', `The target ${shown(abs)} cannot be resolved (${code ?? 'error'}). Pick a plain directory path.`, { target: abs });
      }
      const parent = path.dirname(cur);
      if (parent === cur) throw fail('VALIDATION', `The target ${shown(abs)} cannot be resolved.`, { target: abs });
      // A name that exists only as a dangling link is not "missing": refuse it.
      try {
        await lstat(cur);
        throw fail('VALIDATION', `The target ${shown(abs)} goes through a symbolic link that leads nowhere. Pick a plain directory path.`, { target: abs });
      } catch (e) {
        if (errnoOf(e) !== 'ENOENT') throw e;
      }
      missing.push(path.basename(cur));
      cur = parent;
    }
  }
}

async function checkTarget(ctx: ToolContext, requested: string): Promise<CheckedTarget> {
  if (requested.includes('\0')) throw fail('VALIDATION', 'The target contains a NUL byte.', { target: requested });
  if (!path.isAbsolute(requested))
    throw fail('VALIDATION', `The target ${shown(requested)} must be an absolute path (for example /home/me/copy-of-project).`, { target: requested });
  if (requested.split(/[\\/]/).includes('..'))
    throw fail('VALIDATION', `The target ${shown(requested)} contains a ".." segment. Give the directory without "..".`, { target: requested });

  const { real, exists } = await realOfTarget(path.resolve(requested));
  const area = ctx.sandbox.kernelArea(real, 'change') ?? ctx.sandbox.kernelArea(path.resolve(requested), 'change');
  if (area) {
    throw fail(
      'PATH_PROTECTED',
      `The target ${shown(requested)} is inside ${area.label}, the kernel's own state, which no tool may change (rule kernel-state). Pick a directory of your own.`,
      {
        target: requested,
        rule: 'kernel-state',
      },
    );
  }
  const source = ctx.sandbox.root;
  const targetSegs = segmentsOf(real);
  const sourceSegs = segmentsOf(source);
  if (within(sourceSegs, targetSegs)) {
    throw fail(
      'VALIDATION',
      `The target ${shown(requested)} is inside the project being copied; the copy would copy itself. Pick a directory outside the project.`,
      { target: requested },
    );
  }
  if (within(targetSegs, sourceSegs)) {
    throw fail('VALIDATION', `The target ${shown(requested)} contains the project being copied. Pick a directory outside the project.`, { target: requested });
  }
  if (systemDirSegments().some((dir) => within(dir, targetSegs))) {
    throw fail('PATH_PROTECTED', `The target ${shown(requested)} is in a protected system directory. Pick a directory in your home or a scratch space.`, {
      target: requested,
    });
  }
  if (exists) {
    const st = await lstat(real);
    if (!st.isDirectory()) throw fail('CONFLICT', `The target ${shown(requested)} already exists and is not a directory.`, { target: requested });
    const entries = await readdir(real);
    if (entries.length > 0) {
      throw fail(
        'CONFLICT',
        `The target ${shown(requested)} already exists and is not empty (${plural(entries.length, 'entry', 'entries')}). Pick a new or empty directory.`,
        {
          target: requested,
        },
      );
    }
  }
  return { requested, real, exists };
}

interface CloneReport {
  files: number;
  dirs: number;
  symlinks: number;
  bytes: number;
  skippedNodeModules: string[];
  skippedNodeModulesCount: number;
  skippedLinks: Array<{ path: string; reason: string }>;
  skippedLinksCount: number;
  skippedOther: string[];
  skippedOtherCount: number;
  /** The kernel's own folders found inside the project (its data folder, say): never copied. */
  skippedKernelState: string[];
}

function emptyReport(): CloneReport {
  return {
    files: 0,
    dirs: 0,
    symlinks: 0,
    bytes: 0,
    skippedNodeModules: [],
    skippedNodeModulesCount: 0,
    skippedLinks: [],
    skippedLinksCount: 0,
    skippedOther: [],
    skippedOtherCount: 0,
    skippedKernelState: [],
  };
}

function pushCapped<T>(list: T[], item: T): void {
  if (list.length < SKIPPED_LIST_MAX) list.push(item);
}

/**
 * What a link inside the project becomes in the copy: a relative link to the same place in the
 * copy when its real target is inside the project, else null with the reason it is skipped.
 */
async function linkInCopy(ctx: ToolContext, linkReal: string, rel: string): Promise<{ text: string } | { skip: string }> {
  let targetReal: string;
  try {
    targetReal = await realpath(linkReal);
  } catch {
    return { skip: 'dangling or unresolvable' };
  }
  if (!ctx.sandbox.isInside(targetReal)) return { skip: 'points outside the project' };
  const targetRel = path.relative(ctx.sandbox.root, targetReal);
  return { text: path.relative(path.dirname(path.join(ctx.sandbox.root, rel)), path.join(ctx.sandbox.root, targetRel)) || '.' };
}

/**
 * Copies one regular file. One that had other names when it was listed is copied from a descriptor
 * whose own fstat is checked again (the name could have been swapped for a link to a kernel file
 * since); any other file by `copyFile`.
 */
async function copyChecked(ctx: ToolContext, src: string, to: string, linked: boolean): Promise<void> {
  if (!linked) {
    await copyFile(src, to, fsConstants.COPYFILE_EXCL | fsConstants.COPYFILE_FICLONE);
    return;
  }
  const from = await open(src, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW);
  try {
    const st = await from.stat({ bigint: true });
    if (!st.isFile() || ctx.sandbox.kernelFile(st)) {
      throw fail(
        'PATH_PROTECTED',
        `${shown(path.relative(ctx.sandbox.root, src))} became a link to the kernel's own state while the project was copied; the copy stopped.`,
      );
    }
    const mode = Number(st.mode & 0o7777n);
    await pipeline(from.createReadStream({ autoClose: false }), createWriteStream(to, { flags: 'wx', mode }));
    await chmod(to, mode); // as copyFile keeps it, whatever the umask
  } finally {
    await from.close();
  }
}

/**
 * Walks the project without following links. With `dest` it copies; without, it only counts
 * (for the preview), stopping after `max` entries.
 */
async function walk(ctx: ToolContext, dest: string | null, max = Number.POSITIVE_INFINITY): Promise<CloneReport & { capped: boolean }> {
  const root = ctx.sandbox.root;
  const report = emptyReport();
  const dirModes: Array<[string, number]> = [];
  const stack: string[] = [''];
  let seen = 0;
  let lastProgress = 0;
  while (stack.length > 0) {
    const rel = stack.pop()!;
    const srcDir = rel === '' ? root : path.join(root, rel);
    const entries = await readdir(srcDir, { withFileTypes: true });
    for (const e of entries) {
      checkSignal(ctx.signal, dest ? 'Copying the project' : 'Looking through the project');
      if (++seen > max) return { ...report, capped: true };
      const childRel = rel === '' ? e.name : path.join(rel, e.name);
      const src = path.join(root, childRel);
      const st = await lstat(src);
      if (st.isDirectory()) {
        // The kernel's own state (a data folder inside the project: keys, audit, permissions) is never copied out.
        if (ctx.sandbox.kernelArea(src)) {
          report.skippedKernelState.push(childRel);
          continue;
        }
        if (e.name === 'node_modules') {
          report.skippedNodeModulesCount++;
          pushCapped(report.skippedNodeModules, childRel);
          continue;
        }
        report.dirs++;
        if (dest) {
          const to = path.join(dest, childRel);
          await mkdir(to);
          dirModes.push([to, st.mode & 0o7777]);
        }
        stack.push(childRel);
      } else if (st.isFile()) {
        // A file with another name may be a hard link to a kernel file: never copied out (a copy
        // would be a file of one link, which nothing would recognise any more).
        if (st.nlink > 1 && ctx.sandbox.kernelFile(await lstat(src, { bigint: true }))) {
          report.skippedKernelState.push(childRel);
          continue;
        }
        report.files++;
        report.bytes += st.size;
        if (dest) await copyChecked(ctx, src, path.join(dest, childRel), st.nlink > 1);
        if (dest && report.files - lastProgress >= PROGRESS_EVERY) {
          lastProgress = report.files;
          ctx.progress({ progress: report.files, message: `${plural(report.files, 'file')} copied (${humanBytes(report.bytes)})` });
        }
      } else if (st.isSymbolicLink()) {
        const plan = await linkInCopy(ctx, src, childRel);
        if ('skip' in plan) {
          report.skippedLinksCount++;
          pushCapped(report.skippedLinks, { path: childRel, reason: plan.skip });
        } else {
          report.symlinks++;
          if (dest) await symlink(plan.text, path.join(dest, childRel));
        }
      } else {
        report.skippedOtherCount++;
        pushCapped(report.skippedOther, childRel);
      }
    }
  }
  // Folder permissions last, so a read-only folder could still be filled.
  for (const [dir, mode] of dirModes.reverse()) await chmod(dir, mode).catch(() => {});
  return { ...report, capped: false };
}

function describeSkips(r: CloneReport): string {
  const parts: string[] = [];
  if (r.skippedNodeModulesCount) parts.push(`${plural(r.skippedNodeModulesCount, 'node_modules folder')} skipped`);
  if (r.skippedLinksCount) parts.push(`${plural(r.skippedLinksCount, 'symbolic link')} skipped (pointing outside the project or nowhere)`);
  if (r.skippedOtherCount) parts.push(`${plural(r.skippedOtherCount, 'special file')} skipped`);
  if (r.skippedKernelState.length)
    parts.push(`the kernel's own ${plural(r.skippedKernelState.length, 'folder or file', 'folders or files')} left out (${r.skippedKernelState.join(', ')})`);
  return parts.length ? `; ${parts.join(', ')}` : '';
}

async function clonePreview(args: ToolArgs['self_clone'], ctx: ToolContext): Promise<Preview> {
  const target = await checkTarget(ctx, args.target);
  const r = await walk(ctx, null, PREVIEW_SCAN_MAX);
  const atLeast = r.capped ? 'at least ' : '';
  return {
    kind: 'text',
    text:
      `Copies the project ${ctx.sandbox.root} into ${target.exists ? 'the empty directory' : 'a new directory'} ${shown(target.requested)}: ` +
      `${atLeast}${plural(r.files, 'file')} in ${plural(r.dirs + 1, 'folder')}, ${atLeast}${humanBytes(r.bytes)}${describeSkips(r)}.`,
  };
}

async function cloneRun(args: ToolArgs['self_clone'], ctx: ToolContext): Promise<Record<string, unknown>> {
  const requested = args.target;
  const target = await checkTarget(ctx, requested);
  try {
    await mkdir(target.real, { recursive: true });
  } catch (err) {
    throw fsFailure(err, requested, 'creating');
  }
  let r;
  try {
    r = await walk(ctx, target.real);
  } catch (err) {
    const e = fsFailure(err, requested, 'copying into');
    e.message += ` The partial copy in ${shown(requested)} was left in place.`;
    throw e;
  }
  await chmod(target.real, (await lstat(ctx.sandbox.root)).mode & 0o7777).catch(() => {});
  ctx.progress({ progress: r.files, total: r.files, message: `done: ${plural(r.files, 'file')} copied` });
  return {
    target: requested,
    files: r.files,
    dirs: r.dirs,
    symlinks: r.symlinks,
    bytes: r.bytes,
    skipped: {
      nodeModules: r.skippedNodeModules,
      nodeModulesCount: r.skippedNodeModulesCount,
      symlinks: r.skippedLinks,
      symlinksCount: r.skippedLinksCount,
      other: r.skippedOther,
      otherCount: r.skippedOtherCount,
      kernelState: r.skippedKernelState,
    },
    summary: `copied the project to ${requested}: ${plural(r.files, 'file')}, ${humanBytes(r.bytes)}${describeSkips(r)}`,
  };
}

export const selfCloneTool = { run: cloneRun, preview: clonePreview };
