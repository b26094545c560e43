/**
 * Copying files from the workspace into the vault: the one routine behind the bridge's
 * notes.importFiles and tasks.importFilesToProject (the seed: both copy "from paths you supply into
 * the vault", on caller-supplied input). Every source is opened through the kernel's sandbox, so a
 * path outside the workspace root is refused there; a file in a `.git` folder or in the kernel's own
 * state is refused here (the sandbox lets tools read those); every target goes through the vault
 * (never through a link out of it).
 *
 * Rules: at most 20 files and 50 MiB in one call; only files the vault indexes (markdown, pdf,
 * images, audio, video) and plain text, which becomes a note (`.txt` to `.md`); an existing file is never overwritten: the copy takes the first free name
 * with a " 2", " 3"... suffix before its extension. Each copied file is indexed before the call
 * answers, so its stable id is in the answer.
 */
import { unlink } from 'node:fs/promises';
import path from 'node:path';
import { isGitSegment, MemoError, type ToolContext } from 'memo-kernel/pack';
import { fileTypeOf } from './markdown.js';
import { humanBytes } from './note-files.js';
import { runtimeOf } from './runtime.js';
import { cleanRelative, ensureFolders, shown, type Vault } from './vault.js';

export const IMPORT_MAX_FILES = 20;
export const IMPORT_MAX_BYTES = 50 * 1024 * 1024;

const CHUNK = 1024 * 1024;

/** Plain text files, imported as notes (`notes.txt` becomes `notes.md`, its text unchanged). */
const TEXT_AS_NOTE = /\.(txt|text)$/i;

/** One file of an import as planned: where it comes from, where it goes, how big it is. */
export interface PlannedImport {
  /** The source as given (relative to the workspace root). */
  source: string;
  /** Its path relative to the workspace root, after links were followed. */
  sourceReal: string;
  /** The vault-relative path the copy gets (a free name at planning time). */
  target: string;
  bytes: number;
  fileType: string;
}

/** One copied file: its source and the vault item it became (the reference every write returns). */
export interface ImportedFile {
  source: string;
  id: string;
  path: string;
  title: string;
  file_type: string;
  bytes: number;
}

function splitName(name: string): { stem: string; ext: string } {
  const dot = name.lastIndexOf('.');
  return dot <= 0 ? { stem: name, ext: '' } : { stem: name.slice(0, dot), ext: name.slice(dot) };
}

/** The sources given, checked: a list of 1 to 20 distinct non-empty texts. */
function checkSources(sourcePaths: readonly string[]): string[] {
  if (sourcePaths.length === 0) throw new MemoError('VALIDATION', 'sourcePaths is empty: give the files to copy, relative to the workspace root.');
  if (sourcePaths.length > IMPORT_MAX_FILES)
    throw new MemoError('VALIDATION', `${sourcePaths.length} files is more than ${IMPORT_MAX_FILES} in one call: import them in smaller batches.`, {
      details: { files: sourcePaths.length, limit: IMPORT_MAX_FILES },
    });
  const out = sourcePaths.map((s) => s.trim());
  const dup = out.find((s, i) => out.indexOf(s) !== i);
  if (dup !== undefined) throw new MemoError('VALIDATION', `${shown(dup)} is listed twice.`);
  return out;
}

/**
 * What an import would do, as things stand now (no file is touched): each source checked through the
 * sandbox, its kind and size, and the free vault path its copy would get in `folder` (vault-relative,
 * '' for the vault's top). Refuses the whole call when any source cannot be copied or the total is
 * over the cap. Used for previews and for the checks made before anyone is asked.
 */
export async function planImport(ctx: ToolContext, sourcePaths: readonly string[], folder: string): Promise<PlannedImport[]> {
  const vault = await runtimeOf(ctx).vault(ctx);
  return plan(vault, ctx, checkSources(sourcePaths), cleanRelative(folder, 'folder'));
}

async function plan(vault: Vault, ctx: ToolContext, sources: string[], folder: string): Promise<PlannedImport[]> {
  const out: PlannedImport[] = [];
  const taken = new Set<string>();
  let total = 0;
  for (const source of sources) {
    // The sandbox refuses paths outside the root, into .git or kernel state, and directories.
    const { handle, resolved, size } = await ctx.sandbox.openForRead(source);
    await handle.close();
    // The sandbox lets tools read a repository's .git and (read-only) some kernel areas; nothing of either is imported.
    if (resolved.relative.split(path.sep).some(isGitSegment))
      throw new MemoError('PATH_PROTECTED', `${shown(source)} is inside a .git folder; files are not imported from there.`, { details: { path: source } });
    if (ctx.sandbox.kernelArea(resolved.real, 'change'))
      throw new MemoError('PATH_PROTECTED', `${shown(source)} is part of Memo's own state; it is not imported.`, { details: { path: source } });
    const original = path.basename(resolved.real);
    // Plain text becomes a note: the same text under the name with .md (a .txt is not a file the vault indexes).
    const asNote = TEXT_AS_NOTE.test(original);
    const name = asNote ? original.replace(TEXT_AS_NOTE, '.md') : original;
    const fileType = fileTypeOf(name);
    if (!fileType)
      throw new MemoError('VALIDATION', `${shown(source)} is not a kind of file the vault holds (markdown, plain text as a note, pdf, images, audio, video).`, {
        details: { source },
      });
    total += size;
    if (total > IMPORT_MAX_BYTES)
      throw new MemoError('VALIDATION', `These files come to more than ${humanBytes(IMPORT_MAX_BYTES)}; import them in smaller batches.`, {
        details: { limit: IMPORT_MAX_BYTES },
      });
    const { stem, ext } = splitName(name);
    let target = folder ? `${folder}/${name}` : name;
    for (let i = 2; taken.has(target.toLowerCase()) || (await vault.resolve(ctx, target, 'write')).resolved.exists; i++) {
      const candidate = `${stem} ${i}${ext}`;
      target = folder ? `${folder}/${candidate}` : candidate;
    }
    taken.add(target.toLowerCase());
    out.push({ source, sourceReal: resolved.relative, target, bytes: size, fileType });
  }
  return out;
}

/**
 * Copies `sourcePaths` (relative to the workspace root) into the vault folder `folder` (vault-relative,
 * created if missing), indexes the copies and returns each one's reference. Runs in the vault's
 * one-at-a-time queue; names are chosen again there, so a file that appeared since a preview is still
 * never overwritten. Reports `ctx.progress` after each file and stops between files when the call is
 * cancelled (the files already copied stay, indexed). A failure part-way removes that one partial copy.
 */
export async function importIntoVault(
  ctx: ToolContext,
  sourcePaths: readonly string[],
  folder: string,
): Promise<{ files: ImportedFile[]; created_folders: string[] }> {
  const vault = await runtimeOf(ctx).vault(ctx);
  const sources = checkSources(sourcePaths);
  const cleanFolder = cleanRelative(folder, 'folder');
  return vault.exclusive(async () => {
    const planned = await plan(vault, ctx, sources, cleanFolder);
    const made = await ensureFolders(vault, ctx, cleanFolder);
    const done: string[] = [];
    try {
      for (const [i, p] of planned.entries()) {
        if (ctx.signal.aborted) throw new MemoError('CANCELLED', `The import was cancelled after ${i} of ${planned.length} files.`);
        await copyOne(vault, ctx, p);
        done.push(p.target);
        ctx.progress({ progress: i + 1, total: planned.length, message: `copied ${p.source} to ${p.target}` });
      }
    } finally {
      // Whatever was copied is indexed, also when a later file failed.
      if (done.length) await vault.refreshPaths(done);
    }
    const files = planned.map((p) => {
      const n = vault.index.note({ path: p.target });
      if (!n) throw new MemoError('TOOL_FAILED', `${shown(p.target)} was copied but could not be indexed.`);
      return { source: p.source, id: n.id, path: n.path, title: n.title, file_type: n.file_type, bytes: p.bytes };
    });
    return { files, created_folders: made };
  });
}

async function copyOne(vault: Vault, ctx: ToolContext, p: PlannedImport): Promise<void> {
  const { resolved } = await vault.resolve(ctx, p.target, 'write');
  const src = await ctx.sandbox.openForRead(p.source);
  try {
    // exclusive: a file that appeared under that name since is a CONFLICT, never overwritten.
    const dst = await ctx.sandbox.openForWrite(path.join(vault.folder, p.target), { exclusive: true });
    try {
      if (dst.resolved.real !== resolved.real) throw new MemoError('CONFLICT', `The folder of ${shown(p.target)} changed while it was being written.`);
      const buf = Buffer.alloc(CHUNK);
      for (let copied = 0; ;) {
        const { bytesRead } = await src.handle.read(buf, 0, CHUNK, copied);
        if (bytesRead === 0) break;
        copied += bytesRead;
        if (copied > IMPORT_MAX_BYTES)
          throw new MemoError('CONFLICT', `${shown(p.source)} grew past ${humanBytes(IMPORT_MAX_BYTES)} while it was being copied.`);
        await dst.handle.write(buf, 0, bytesRead);
      }
      await dst.handle.close();
    } catch (err) {
      await dst.handle.close().catch(() => undefined);
      await unlink(dst.resolved.real).catch(() => undefined);
      throw err;
    }
  } finally {
    await src.handle.close();
  }
}
