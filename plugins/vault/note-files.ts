/**
 * Reading and writing vault files for the tools: through the sandbox, atomically (the kernel's
 * writeFileAtomicAsync: temp file, fsync, rename), and never over a change the person did not see:
 * what a preview was computed from is remembered per call, and the run refuses (CONFLICT) when the
 * file changed after the preview, or while the write was under way.
 */
import { lstat, readFile, realpath } from 'node:fs/promises';
import path from 'node:path';
import { createTwoFilesPatch } from 'diff';
import { MemoError, writeFileAtomicAsync, type Preview, type ResolvedPath, type ToolContext } from 'memo-kernel/pack';
import { splitFrontMatter } from './markdown.js';
import { sha256, shown, type Vault } from './vault.js';
import type { NoteInfo } from './vault-index.js';

/** Longest diff shown in a preview; the rest is summarised. */
const DIFF_MAX_CHARS = 64 * 1024;
/** Markdown notes the tools edit: larger ones are refused (edit them in the editor). */
export const EDIT_MAX_BYTES = 8 * 1024 * 1024;

export interface LoadedFile {
  rel: string;
  resolved: ResolvedPath;
  text: string;
  /** Content hash and inode/size/mtime: what "unchanged" is judged by. */
  fingerprint: string;
  mode: number;
}

export function fingerprint(stats: { ino: number; size: number; mtimeMs: number } | null, text: string | null): string {
  return stats === null ? 'absent' : `${stats.ino}:${stats.size}:${stats.mtimeMs}:${text === null ? '' : sha256(text)}`;
}

/** Loads a markdown note's text from disk (the truth, whatever the index says). */
export async function loadText(vault: Vault, ctx: ToolContext, rel: string, intent: 'read' | 'write' = 'write'): Promise<LoadedFile> {
  const { resolved } = await vault.resolve(ctx, rel, intent);
  const { handle, size } = await ctx.sandbox.openResolvedForRead(resolved);
  try {
    if (size > EDIT_MAX_BYTES) {
      throw new MemoError('VALIDATION', `${shown(rel)} is larger than ${EDIT_MAX_BYTES / 1024 / 1024} MB; edit it in the editor.`, { details: { path: rel } });
    }
    const buf = await handle.readFile();
    const stats = await handle.stat();
    const text = buf.toString('utf8');
    return { rel, resolved, text, fingerprint: fingerprint(stats, text), mode: stats.mode & 0o7777 };
  } finally {
    await handle.close();
  }
}

/** The markdown note a tool edits or reads; a filed file is refused naming its type. */
export function requireMarkdown(note: NoteInfo, tool: string): void {
  if (note.file_type !== 'markdown') {
    throw new MemoError(
      'VALIDATION',
      `${shown(note.path)} is a ${note.file_type} file filed in the vault, not a markdown note: ${tool} works on markdown notes only (file_type: ${note.file_type}).`,
      { details: { path: note.path, id: note.id, file_type: note.file_type } },
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Preview/run consistency

const previewed = new WeakMap<object, Map<string, string>>();

/** Remembers what the preview of this call was computed from (path -> fingerprint). */
export function rememberPreview(ctx: ToolContext, files: ReadonlyArray<{ rel: string; fingerprint: string }>): void {
  previewed.set(ctx, new Map(files.map((f) => [f.rel, f.fingerprint])));
}

/** Refuses the run when a file the person saw in the preview changed since. No preview shown: nothing to compare. */
export function checkSincePreview(ctx: ToolContext, files: ReadonlyArray<{ rel: string; fingerprint: string }>): void {
  const seen = previewed.get(ctx);
  if (!seen) return;
  for (const f of files) {
    const before = seen.get(f.rel);
    if (before !== undefined && before !== f.fingerprint) {
      throw new MemoError('CONFLICT', `${shown(f.rel)} changed after the preview was shown, so nothing was written. Look at it again and retry.`, {
        details: { path: f.rel },
      });
    }
  }
  // A file the preview did not know about (it appeared since) also means the person saw something else.
  for (const [rel, fp] of seen)
    if (fp === 'absent' && !files.some((f) => f.rel === rel)) throw new MemoError('CONFLICT', `${shown(rel)} appeared after the preview was shown.`);
}

/**
 * Writes `text` to a file atomically. `expected` is the fingerprint the caller's text was computed
 * from ('absent' for a new file): checked again just before the rename, so an edit that lands while
 * the write is under way is kept and the write refused.
 */
export async function writeText(file: { rel: string; resolved: ResolvedPath; mode: number | null }, text: string, expected: string): Promise<void> {
  const real = file.resolved.real;
  try {
    await writeFileAtomicAsync(real, text, {
      mode: file.mode,
      steps: {
        beforeRename: async () => {
          // The folder must still be the one the sandbox checked (no link swapped in on the way).
          if ((await realpath(path.dirname(real))) !== path.dirname(real))
            throw new MemoError('CONFLICT', `The folder of ${shown(file.rel)} changed while it was being written. Nothing was written.`);
          let now: string;
          try {
            const st = await lstat(real);
            now = expected === 'absent' ? 'present' : fingerprint(st, await readFile(real, 'utf8'));
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
            now = 'absent';
          }
          if (now !== expected) {
            throw new MemoError(
              'CONFLICT',
              expected === 'absent'
                ? `${shown(file.rel)} appeared while it was being written, so nothing was written.`
                : `${shown(file.rel)} changed while it was being written, so nothing was written (the other change is kept). Look at it again and retry.`,
              { details: { path: file.rel } },
            );
          }
        },
      },
    });
  } catch (err) {
    if ((err as { code?: unknown }).code === 'CONFLICT') throw err;
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOSPC' || code === 'EDQUOT') throw new MemoError('TOOL_FAILED', `The disk is full: ${shown(file.rel)} was not written.`);
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------
// Previews

/** A unified diff of two versions of a vault file, capped. */
export function diffOf(rel: string, before: string | null, after: string): string {
  if (before === after) return `--- a/${rel}\n+++ b/${rel}\n(no changes)\n`;
  const patch = createTwoFilesPatch(before === null ? '/dev/null' : `a/${rel}`, `b/${rel}`, before ?? '', after, undefined, undefined, { context: 3 });
  const body = patch.replace(/^=+\n/, '');
  if (body.length <= DIFF_MAX_CHARS) return body;
  const cut = body.lastIndexOf('\n', DIFF_MAX_CHARS);
  return `${body.slice(0, cut + 1)}… diff truncated (${body.length - cut - 1} more characters)\n`;
}

export function humanBytes(n: number): string {
  if (n < 1024) return `${n} bytes`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** The most of a body (either side) a preview carries whole for a review in the note; past it, the diff alone. */
const REVIEW_MAX_CHARS = 1_000_000;

/**
 * The bodies before and after an edit (front matter left out), for a face that reviews the change
 * in the note itself (seed 003); undefined when either is too long to carry.
 */
export function reviewDocument(type: 'note' | 'journal', id: string, note: NoteInfo, before: string, after: string): Preview['document'] {
  const a = splitFrontMatter(before).body;
  const b = splitFrontMatter(after).body;
  if (a.length > REVIEW_MAX_CHARS || b.length > REVIEW_MAX_CHARS) return undefined;
  return { type, id, title: note.title, path: note.path, before: a, after: b };
}
