/** write_file, edit_file, insert_line, delete_lines: every change is previewed as a unified diff and written atomically with a `.bak`. */
import type { Stats } from 'node:fs';
import type { Preview, ResolvedPath, ToolContext } from 'memo-kernel/pack';
import type { ToolArgs } from './tool-args.js';
import {
  EDIT_MAX_BYTES,
  MB,
  asLines,
  decodeText,
  atomicWrite,
  checkParent,
  checkUnchangedSincePreview,
  ensureParent,
  eolOf,
  fail,
  fingerprintOf,
  fsFailure,
  humanBytes,
  isBinary,
  loadTextForEdit,
  plural,
  readAll,
  rememberPreview,
  shown,
  splitLines,
  statOrNull,
  unifiedDiff,
  type LoadedText,
} from './common.js';

type Json = Record<string, unknown>;

/** The workspace-relative label used in diff headers. */
function labelOf(resolved: ResolvedPath): string {
  return resolved.relative === '' ? '.' : resolved.relative;
}

// ---------------------------------------------------------------------------------------------
// write_file

async function resolveWriteTarget(ctx: ToolContext, requested: string): Promise<{ resolved: ResolvedPath; old: Stats | null }> {
  const resolved = await ctx.sandbox.resolve(requested, 'write');
  if (resolved.exists && resolved.isDirectory) {
    throw fail('VALIDATION', `${shown(requested)} is a directory, not a file. Give a file path inside it.`, { path: requested });
  }
  let old: Stats | null;
  try {
    old = resolved.exists ? await statOrNull(resolved.real) : null;
  } catch (err) {
    throw fsFailure(err, requested, 'checking');
  }
  if (old && !old.isFile())
    throw fail('VALIDATION', `${shown(requested)} is not a regular file (it is a device, pipe or socket) and cannot be written.`, { path: requested });
  return { resolved, old };
}

async function writeFilePreview(args: ToolArgs['write_file'], ctx: ToolContext): Promise<Preview> {
  const { resolved, old } = await resolveWriteTarget(ctx, args.path);
  const label = labelOf(resolved);
  let oldText = '';
  let note = '';
  if (old) {
    // Read through the sandbox (it proves the descriptor is the checked file).
    const { handle } = await ctx.sandbox.openResolvedForRead(resolved);
    try {
      if (old.size > 2 * MB) note = `(replaces ${humanBytes(old.size)} of existing content, too large to show as a diff)`;
      else {
        const buf = await readAll(handle, 2 * MB, args.path, old.size);
        if (isBinary(buf)) note = `(replaces a binary file of ${humanBytes(buf.length)})`;
        else oldText = decodeText(buf);
      }
    } finally {
      await handle.close();
    }
  } else if (args.createDirs !== true) {
    await ensureParent(ctx, resolved, false); // throws NOT_FOUND now rather than after approval
  }
  rememberPreview(ctx, fingerprintOf(old));
  const diff = note ? `${note}\n${unifiedDiff(label, '', args.content, true)}` : unifiedDiff(label, oldText, args.content, old === null);
  return { kind: 'diff', text: diff };
}

/**
 * Before anyone is asked: a write to a folder that is not there (without createDirs), or through a
 * file, cannot run, so it is refused now with the error the write would give, however the gate would
 * answer (a stored allow, always-allow, an edit the person made). A path the sandbox refuses is
 * left to the preview and the run, which say why.
 */
async function writeFileAssess(args: ToolArgs['write_file'], ctx: ToolContext): Promise<null> {
  let target: Awaited<ReturnType<typeof resolveWriteTarget>>;
  try {
    target = await resolveWriteTarget(ctx, args.path);
  } catch {
    return null;
  }
  if (!target.old) await checkParent(target.resolved, args.createDirs === true);
  return null;
}

async function writeFileRun(args: ToolArgs['write_file'], ctx: ToolContext): Promise<Json> {
  const requested = args.path;
  let { resolved, old } = await resolveWriteTarget(ctx, requested);
  let createdDirs = false;
  if (!old) {
    createdDirs = await ensureParent(ctx, resolved, args.createDirs === true);
    if (createdDirs) {
      // The folders are new: resolve again, and insist it is still the same place.
      const again = await resolveWriteTarget(ctx, requested);
      if (again.resolved.real !== resolved.real)
        throw fail('CONFLICT', `${shown(requested)} changed while its folders were being created. Nothing was written.`, { path: requested });
      ({ resolved, old } = again);
    }
  }
  checkUnchangedSincePreview(ctx, fingerprintOf(old), requested);
  const { backup, bytes } = await atomicWrite(ctx, resolved, args.content, old);
  const lines = splitLines(args.content).length;
  return {
    path: requested,
    bytes,
    lines,
    created: old === null,
    createdDirs,
    backup,
    summary: `${old ? 'overwrote' : 'created'} ${requested} (${humanBytes(bytes)}, ${plural(lines, 'line')})${backup ? `, old content in ${backup}` : ''}`,
  };
}

// ---------------------------------------------------------------------------------------------
// Text edits shared by edit_file, insert_line, delete_lines

interface PlannedEdit {
  loaded: LoadedText;
  newText: string;
  diff: string;
  /** Tool-specific result fields. */
  facts: Json;
  /** What the summary says was done. */
  done: string;
}

type Planner<A> = (args: A, ctx: ToolContext) => Promise<PlannedEdit>;

function editTool<A>(plan: Planner<A>) {
  return {
    preview: async (args: A, ctx: ToolContext): Promise<Preview> => {
      const p = await plan(args, ctx);
      rememberPreview(ctx, fingerprintOf(p.loaded.stats));
      return { kind: 'diff', text: p.diff };
    },
    run: async (args: A, ctx: ToolContext): Promise<Json> => {
      const p = await plan(args, ctx);
      const requested = p.loaded.resolved.requested;
      checkUnchangedSincePreview(ctx, fingerprintOf(p.loaded.stats), requested);
      if (p.newText === p.loaded.text) {
        return { path: requested, changed: false, diff: p.diff, backup: null, ...p.facts, summary: `${p.done} in ${requested}: no change, nothing written` };
      }
      const { backup, bytes } = await atomicWrite(ctx, p.loaded.resolved, p.newText, p.loaded.stats);
      return { path: requested, changed: true, diff: p.diff, bytes, backup, ...p.facts, summary: `${p.done} in ${requested}` };
    },
  };
}

function lineRangeError(requested: string, what: string, total: number, extra: Json): never {
  throw fail('VALIDATION', `${what} is out of range: ${shown(requested)} has ${plural(total, 'line')}. Nothing was changed.`, {
    path: requested,
    totalLines: total,
    ...extra,
  });
}

// ---------------------------------------------------------------------------------------------
// edit_file

function countOccurrences(text: string, needle: string): number {
  let n = 0;
  for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + needle.length)) n++;
  return n;
}

const planEdit: Planner<ToolArgs['edit_file']> = async (args, ctx) => {
  const requested = args.path;
  const byText = args.oldText !== undefined;
  const byLines = args.startLine !== undefined || args.endLine !== undefined;
  if (byText === byLines) {
    throw fail(
      'VALIDATION',
      byText
        ? 'Give either oldText (find and replace) or startLine/endLine (replace lines), not both.'
        : 'Say what to replace: oldText (find and replace) or startLine and endLine (replace lines).',
      { path: requested },
    );
  }
  if (byLines && args.expectedOccurrences !== undefined)
    throw fail('VALIDATION', 'expectedOccurrences only applies to oldText (find and replace).', { path: requested });
  if (byLines && (args.startLine === undefined || args.endLine === undefined))
    throw fail('VALIDATION', 'Replacing lines needs both startLine and endLine.', { path: requested });

  const loaded = await loadTextForEdit(ctx, requested, EDIT_MAX_BYTES);
  const { text } = loaded;
  const label = labelOf(loaded.resolved);

  if (byText) {
    const oldText = args.oldText!;
    const expected = args.expectedOccurrences ?? 1;
    const count = countOccurrences(text, oldText);
    if (count !== expected) {
      const hint =
        count === 0
          ? 'Check the exact text, including whitespace, indentation and line endings (read_file shows it).'
          : count > expected
            ? `Include more surrounding text so it matches exactly ${plural(expected, 'place')}, or set expectedOccurrences to ${count} to replace every one.`
            : `Set expectedOccurrences to ${count}, or check the text.`;
      throw fail(
        'VALIDATION',
        `oldText occurs ${count === 1 ? 'once' : `${count} times`} in ${shown(requested)}, but ${expected === 1 ? '1 occurrence was' : `${expected} occurrences were`} expected. Nothing was changed. ${hint}`,
        { path: requested, occurrences: count, expectedOccurrences: expected },
      );
    }
    const newText = text.split(oldText).join(args.newText);
    return {
      loaded,
      newText,
      diff: unifiedDiff(label, text, newText),
      facts: { mode: 'replace', replacements: count },
      done: `replaced ${plural(count, 'occurrence')}`,
    };
  }

  const start = args.startLine!;
  const end = args.endLine!;
  const lines = splitLines(text);
  if (end < start)
    throw fail('VALIDATION', `endLine ${end} is before startLine ${start}. Nothing was changed.`, { path: requested, startLine: start, endLine: end });
  if (end > lines.length) lineRangeError(requested, `Lines ${start}-${end}`, lines.length, { startLine: start, endLine: end });
  const eol = eolOf(text);
  const lastHadEol = lines[end - 1]!.endsWith('\n'); // 1 <= start <= end <= lines.length here
  const insertion = args.newText === '' ? '' : lastHadEol ? asLines(args.newText, eol) : args.newText;
  const newText = lines.slice(0, start - 1).join('') + insertion + lines.slice(end).join('');
  return {
    loaded,
    newText,
    diff: unifiedDiff(label, text, newText),
    facts: { mode: 'lines', startLine: start, endLine: end, linesReplaced: end - start + 1 },
    done: `replaced lines ${start}-${end}`,
  };
};

// ---------------------------------------------------------------------------------------------
// insert_line

const planInsert: Planner<ToolArgs['insert_line']> = async (args, ctx) => {
  const loaded = await loadTextForEdit(ctx, args.path, EDIT_MAX_BYTES);
  const { text } = loaded;
  const lines = splitLines(text);
  if (args.line > lines.length + 1) {
    lineRangeError(args.path, `Line ${args.line}`, lines.length, { line: args.line, hint: `use 1 to ${lines.length + 1} (${lines.length + 1} appends)` });
  }
  const eol = eolOf(text);
  const block = args.content === '' ? eol : asLines(args.content, eol);
  const last = lines.length - 1;
  if (args.line === lines.length + 1 && last >= 0 && !lines[last]!.endsWith('\n')) lines[last] += eol;
  const newText = lines.slice(0, args.line - 1).join('') + block + lines.slice(args.line - 1).join('');
  const inserted = splitLines(block).length;
  return {
    loaded,
    newText,
    diff: unifiedDiff(labelOf(loaded.resolved), text, newText),
    facts: { line: args.line, linesInserted: inserted },
    done: `inserted ${plural(inserted, 'line')} at line ${args.line}`,
  };
};

// ---------------------------------------------------------------------------------------------
// delete_lines

const planDeleteLines: Planner<ToolArgs['delete_lines']> = async (args, ctx) => {
  const { startLine: start, endLine: end } = args;
  if (end < start)
    throw fail('VALIDATION', `endLine ${end} is before startLine ${start}. Nothing was changed.`, { path: args.path, startLine: start, endLine: end });
  const loaded = await loadTextForEdit(ctx, args.path, EDIT_MAX_BYTES);
  const { text } = loaded;
  const lines = splitLines(text);
  if (end > lines.length) lineRangeError(args.path, `Lines ${start}-${end}`, lines.length, { startLine: start, endLine: end });
  const newText = lines.slice(0, start - 1).join('') + lines.slice(end).join('');
  const n = end - start + 1;
  return {
    loaded,
    newText,
    diff: unifiedDiff(labelOf(loaded.resolved), text, newText),
    facts: { startLine: start, endLine: end, linesDeleted: n },
    done: `deleted ${plural(n, 'line')} (${start}-${end})`,
  };
};

export const writeFileTool = { run: writeFileRun, preview: writeFilePreview, assess: writeFileAssess };
export const editFileTool = editTool(planEdit);
export const insertLineTool = editTool(planInsert);
export const deleteLinesTool = editTool(planDeleteLines);
