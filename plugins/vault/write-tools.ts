/**
 * The vault's write tools. Each has a `preview` (a body diff, the field changes, or what a delete
 * loses) computed from the files as they are now, and a `run` that recomputes from the files, refuses
 * if anything the preview showed has changed since, writes atomically and updates the index in the
 * same step (inside the vault's one-at-a-time queue, so the watcher never interleaves).
 */
import { link, lstat, readdir, rename, rm, rmdir, unlink } from 'node:fs/promises';
import path from 'node:path';
import { MemoError, type Preview, type ToolContext } from 'memo-kernel/pack';
import { composeNote, isValidTag, normalizeTag, parseNote, splitFrontMatter } from './markdown.js';
import {
  checkSincePreview,
  diffOf,
  fingerprint,
  humanBytes,
  loadText,
  rememberPreview,
  requireMarkdown,
  reviewDocument,
  writeText,
  type LoadedFile,
} from './note-files.js';
import { ref } from './read-tools.js';
import { applyRelinks, bySource, describeRelinks, planRelinks, type LinkEdit } from './relink.js';
import { runtimeOf } from './runtime.js';
import type { ToolArgs } from './tool-args.js';
import { cleanRelative, ensureFolders, isSkippedName, shown, type Vault } from './vault.js';
import type { NoteInfo } from './vault-index.js';

/** vault_add_html_artifact's cap. */
export const HTML_MAX_BYTES = 512 * 1024;

type Impl<A> = {
  run: (args: A, ctx: ToolContext) => Promise<unknown>;
  preview: (args: A, ctx: ToolContext) => Promise<Preview>;
  assess?: (args: A, ctx: ToolContext) => Promise<null>;
};

const vaultOf = (ctx: ToolContext) => runtimeOf(ctx).vault(ctx);

/**
 * Runs before anyone is asked: a call naming no note, an ambiguous one (a write never guesses), or a
 * filed file where a markdown note is needed, is refused outright, as is a call with no vault set up.
 */
function assessNote(tool: string, markdownOnly: boolean) {
  return async (args: { note: string }, ctx: ToolContext): Promise<null> => {
    const { note } = (await vaultOf(ctx)).find(args.note);
    if (markdownOnly) requireMarkdown(note, tool);
    return null;
  };
}

async function assessVault(_args: unknown, ctx: ToolContext): Promise<null> {
  await vaultOf(ctx);
  return null;
}

/** A name for a note or folder: one path segment that links and every file system can carry. */
function checkName(name: string, what: string): string {
  const n = name.trim().normalize('NFC');
  if (!n) throw new MemoError('VALIDATION', `The ${what} is empty.`);
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
  if (/[/\\:*?"<>|[\]\u0000-\u001f]/.test(n))
    throw new MemoError(
      'VALIDATION',
      `The ${what} ${shown(name)} has a character notes cannot carry in their names (/ \\ : * ? " < > | [ ] or a control character).`,
    );
  if (isSkippedName(n) || n === '..') throw new MemoError('VALIDATION', `The ${what} ${shown(name)} may not start with a dot.`);
  if (/[. ]$/.test(n)) throw new MemoError('VALIDATION', `The ${what} ${shown(name)} may not end with a dot or a space.`);
  if (Buffer.byteLength(n) > 240) throw new MemoError('VALIDATION', `The ${what} ${shown(name)} is too long for a file name.`);
  return n;
}

/** A tag as stored (without `#`), or VALIDATION saying what a tag may contain. */
export function checkTag(tag: string): string {
  const t = normalizeTag(tag);
  if (!isValidTag(t)) throw new MemoError('VALIDATION', `${shown(tag)} is not a tag: letters, digits, _ - and / (for nesting), not only digits, no spaces.`);
  return t;
}

function folderOf(rel: string): string {
  const i = rel.lastIndexOf('/');
  return i === -1 ? '' : rel.slice(0, i);
}

function join(folder: string, name: string): string {
  return folder ? `${folder}/${name}` : name;
}

function fieldsText(rows: Array<[string, unknown, unknown]>, extra = ''): string {
  const show = (v: unknown) => (v === undefined || v === null ? '(not set)' : typeof v === 'string' ? v : JSON.stringify(v));
  const lines = rows.filter(([, a, b]) => JSON.stringify(a) !== JSON.stringify(b)).map(([k, a, b]) => `${k}: ${show(a)} -> ${show(b)}`);
  return [...lines, ...(extra ? [extra] : [])].join('\n');
}

/** Does the work of `run` under the vault's queue, so the index changes in the same step as the files. */
function inVault<A, T>(fn: (vault: Vault, args: A, ctx: ToolContext) => Promise<T>) {
  return async (args: A, ctx: ToolContext): Promise<T> => {
    const vault = await vaultOf(ctx);
    return vault.exclusive(() => fn(vault, args, ctx));
  };
}

// ---------------------------------------------------------------------------------------------
// vault_create_note

function planCreate(args: ToolArgs['vault_create_note']): { rel: string; folder: string; text: string; title: string } {
  const title = checkName(args.title, 'title');
  const folder = args.folder ? cleanRelative(args.folder, 'folder') : '';
  const fm: Record<string, unknown> = { ...(args.front_matter ?? {}) };
  if (args.tags?.length) {
    const existing = Array.isArray(fm.tags) ? (fm.tags as unknown[]).map(String) : typeof fm.tags === 'string' ? [fm.tags] : [];
    fm.tags = [...new Set([...existing, ...args.tags.map(checkTag)])];
  }
  const body = args.content ?? '';
  return { rel: join(folder, `${title}.md`), folder, title, text: composeNote(fm, body) };
}

export const createNote: Impl<ToolArgs['vault_create_note']> = {
  assess: assessVault,
  preview: async (args, ctx) => {
    const vault = await vaultOf(ctx);
    const plan = planCreate(args);
    const { resolved } = await vault.resolve(ctx, plan.rel, 'write');
    if (resolved.exists) throw new MemoError('CONFLICT', `${shown(plan.rel)} already exists.`);
    rememberPreview(ctx, [{ rel: plan.rel, fingerprint: 'absent' }]);
    return { kind: 'diff', text: diffOf(plan.rel, null, plan.text) };
  },
  run: inVault(async (vault, args, ctx) => {
    const plan = planCreate(args);
    const { resolved } = await vault.resolve(ctx, plan.rel, 'write');
    if (resolved.exists) throw new MemoError('CONFLICT', `${shown(plan.rel)} already exists; nothing was written. Choose another title or update that note.`);
    checkSincePreview(ctx, [{ rel: plan.rel, fingerprint: 'absent' }]);
    const made = await ensureFolders(vault, ctx, plan.folder);
    const target = made.length ? (await vault.resolve(ctx, plan.rel, 'write')).resolved : resolved;
    await writeText({ rel: plan.rel, resolved: target, mode: null }, plan.text, 'absent');
    await vault.refreshPaths([plan.rel]);
    const note = vault.index.note({ path: plan.rel })!;
    return { ...ref(note), created: true, ...(made.length ? { created_folders: made } : {}), summary: `created ${plan.rel}` };
  }),
};

// ---------------------------------------------------------------------------------------------
// vault_update_note

function nextText(current: string, args: ToolArgs['vault_update_note']): string {
  if (args.content === undefined && args.append === undefined && args.front_matter === undefined)
    throw new MemoError('VALIDATION', 'Say what to change: content (the whole body), append (text to add) or front_matter (keys to set).');
  if (args.content !== undefined && args.append !== undefined)
    throw new MemoError('VALIDATION', 'Give content (replaces the body) or append (adds to it), not both.');
  const { body } = splitFrontMatter(current);
  let newBody = body;
  if (args.content !== undefined) newBody = args.content;
  if (args.append !== undefined) newBody = body === '' || body.endsWith('\n') ? `${body}${args.append}` : `${body}\n${args.append}`;
  if (args.front_matter === undefined) return current.slice(0, current.length - body.length) + newBody;
  const parsed = parseNote(current);
  if (parsed.frontMatterError)
    throw new MemoError('VALIDATION', `The note's front matter cannot be changed: ${parsed.frontMatterError}. Fix it in the editor first.`);
  const fm: Record<string, unknown> = { ...(parsed.frontMatter ?? {}) };
  for (const [k, v] of Object.entries(args.front_matter)) {
    if (v === null) delete fm[k];
    else fm[k] = v;
  }
  return composeNote(fm, newBody);
}

/** The markdown note `refText` names and its file as it is on disk now (the desktop bridge's property edits share it). */
export async function loadNoteFor(vault: Vault, ctx: ToolContext, refText: string, tool: string): Promise<{ note: NoteInfo; file: LoadedFile }> {
  const { note } = vault.find(refText);
  requireMarkdown(note, tool);
  return { note, file: await loadText(vault, ctx, note.path) };
}

export const updateNote: Impl<ToolArgs['vault_update_note']> = {
  assess: assessNote('vault_update_note', true),
  preview: async (args, ctx) => {
    const vault = await vaultOf(ctx);
    const { note, file } = await loadNoteFor(vault, ctx, args.note, 'vault_update_note');
    rememberPreview(ctx, [file]);
    const next = nextText(file.text, args);
    const document = reviewDocument('note', note.id, note, file.text, next);
    return { kind: 'diff', text: diffOf(note.path, file.text, next), ...(document ? { document } : {}) };
  },
  run: inVault(async (vault, args, ctx) => {
    const { note, file } = await loadNoteFor(vault, ctx, args.note, 'vault_update_note');
    checkSincePreview(ctx, [file]);
    const text = nextText(file.text, args);
    await writeText(file, text, file.fingerprint);
    await vault.refreshPaths([note.path]);
    return { ...ref(vault.index.note({ path: note.path }) ?? note), bytes: Buffer.byteLength(text), summary: `updated ${note.path}` };
  }),
};

// ---------------------------------------------------------------------------------------------
// Moving notes: rename, move to folder

interface MovePlan {
  note: NoteInfo;
  from: string;
  to: string;
  edits: LinkEdit[];
}

function renameTarget(note: NoteInfo, newTitle: string): string {
  const name = checkName(newTitle, 'new title');
  const ext = path.posix.extname(note.path);
  // A filed file keeps its extension unless the new name gives one; a note is always .md.
  const file = note.file_type === 'markdown' ? `${name.replace(/\.md$/i, '')}.md` : path.posix.extname(name) ? name : `${name}${ext}`;
  return join(folderOf(note.path), file);
}

async function planMove(vault: Vault, ctx: ToolContext, note: NoteInfo, to: string): Promise<MovePlan> {
  if (to === note.path) throw new MemoError('VALIDATION', `${shown(note.path)} is already there.`);
  const { resolved } = await vault.resolve(ctx, to, 'write');
  // Only a change of case on a case-insensitive disk may find "itself" there.
  if (resolved.exists && to.toLowerCase() !== note.path.toLowerCase()) throw new MemoError('CONFLICT', `${shown(to)} already exists in the vault.`);
  return { note, from: note.path, to, edits: planRelinks(vault.index, new Map([[note.path, to]])) };
}

/** What a move's run must find unchanged: the file itself and every note whose links it rewrites. */
async function moveFiles(vault: Vault, ctx: ToolContext, plan: MovePlan): Promise<Array<{ rel: string; fingerprint: string }>> {
  const out: Array<{ rel: string; fingerprint: string }> = [];
  const { resolved } = await vault.resolve(ctx, plan.from, 'write');
  const st = await lstat(resolved.real);
  out.push({ rel: plan.from, fingerprint: plan.note.file_type === 'markdown' ? (await loadText(vault, ctx, plan.from)).fingerprint : fingerprint(st, null) });
  for (const source of bySource(plan.edits).keys())
    if (source !== plan.from) out.push({ rel: source, fingerprint: (await loadText(vault, ctx, source)).fingerprint });
  out.push({ rel: plan.to, fingerprint: 'absent' });
  return out;
}

/** Moves one file without ever replacing another (a hard link then unlink: the link fails if the name is taken). */
async function moveFile(vault: Vault, ctx: ToolContext, from: string, to: string): Promise<void> {
  const src = (await vault.resolve(ctx, from, 'delete')).resolved;
  const dst = (await vault.resolve(ctx, to, 'write')).resolved;
  try {
    await link(src.real, dst.real);
    await unlink(src.real);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') throw new MemoError('CONFLICT', `${shown(to)} appeared in the vault meanwhile; nothing was moved.`);
    if (code !== 'EPERM' && code !== 'EXDEV' && code !== 'ENOTSUP') throw err;
    // No hard links here: check, then rename (a name taken in between is the only window).
    if (
      await lstat(dst.real).then(
        () => true,
        () => false,
      )
    )
      throw new MemoError('CONFLICT', `${shown(to)} already exists; nothing was moved.`);
    await rename(src.real, dst.real);
  }
}

async function runMove(vault: Vault, ctx: ToolContext, plan: MovePlan): Promise<{ note: NoteInfo; edits: LinkEdit[] }> {
  const files = await moveFiles(vault, ctx, plan);
  checkSincePreview(ctx, files);
  await ensureFolders(vault, ctx, folderOf(plan.to));
  await moveFile(vault, ctx, plan.from, plan.to);
  // Links are rewritten where the notes now are (the moved note may link to itself).
  const changed: string[] = [plan.to];
  for (const [source, edits] of bySource(plan.edits)) {
    const where = source === plan.from ? plan.to : source;
    const file = await loadText(vault, ctx, where);
    const expected = files.find((f) => f.rel === source)?.fingerprint;
    if (source !== plan.from && expected !== undefined && expected !== file.fingerprint)
      throw new MemoError('CONFLICT', `${shown(source)} changed while its links were being rewritten; the move is done, that note was left as it was.`);
    await writeText(file, applyRelinks(file.text, edits), file.fingerprint);
    changed.push(where);
  }
  await vault.refreshPaths(changed, new Map([[plan.to, plan.from]]));
  return { note: vault.index.note({ path: plan.to })!, edits: plan.edits };
}

function movePreview(plan: MovePlan): Preview {
  return {
    kind: 'fields',
    text: fieldsText(
      [
        ['path', plan.from, plan.to],
        ['title', plan.note.title, path.posix.basename(plan.to).replace(/\.md$/i, '')],
      ],
      describeRelinks(plan.edits),
    ),
  };
}

export const renameNote: Impl<ToolArgs['vault_rename_note']> = {
  assess: assessNote('vault_rename_note', false),
  preview: async (args, ctx) => {
    const vault = await vaultOf(ctx);
    const { note } = vault.find(args.note);
    const plan = await planMove(vault, ctx, note, renameTarget(note, args.new_title));
    rememberPreview(ctx, await moveFiles(vault, ctx, plan));
    return movePreview(plan);
  },
  run: inVault(async (vault, args, ctx) => {
    const { note } = vault.find(args.note);
    const plan = await planMove(vault, ctx, note, renameTarget(note, args.new_title));
    const done = await runMove(vault, ctx, plan);
    return { ...ref(done.note), previous_path: plan.from, links_rewritten: done.edits.length, summary: `renamed ${plan.from} to ${plan.to}` };
  }),
};

export const moveToFolder: Impl<ToolArgs['vault_move_to_folder']> = {
  assess: assessNote('vault_move_to_folder', false),
  preview: async (args, ctx) => {
    const vault = await vaultOf(ctx);
    const { note } = vault.find(args.note);
    const plan = await planMove(vault, ctx, note, join(cleanRelative(args.folder, 'folder'), path.posix.basename(note.path)));
    rememberPreview(ctx, await moveFiles(vault, ctx, plan));
    return movePreview(plan);
  },
  run: inVault(async (vault, args, ctx) => {
    const { note } = vault.find(args.note);
    const plan = await planMove(vault, ctx, note, join(cleanRelative(args.folder, 'folder'), path.posix.basename(note.path)));
    const done = await runMove(vault, ctx, plan);
    return { ...ref(done.note), previous_path: plan.from, links_rewritten: done.edits.length, summary: `moved ${plan.from} to ${plan.to}` };
  }),
};

// ---------------------------------------------------------------------------------------------
// vault_delete_note

function brokenBy(vault: Vault, seqs: ReadonlySet<number>): Array<{ source: string; line: number; link: string }> {
  const out: Array<{ source: string; line: number; link: string }> = [];
  for (const seq of seqs)
    for (const l of vault.index.linksTo(seq)) {
      if (seqs.has(l.source_seq)) continue; // links inside what is deleted go with it
      const s = vault.index.note({ seq: l.source_seq });
      if (s) out.push({ source: s.path, line: l.line, link: `${l.embed ? '!' : ''}[[${l.raw}]]` });
    }
  return out.sort((a, b) => a.source.localeCompare(b.source) || a.line - b.line);
}

function describeBroken(broken: ReadonlyArray<{ source: string; line: number; link: string }>, limit = 50): string {
  if (broken.length === 0) return 'No other note links to it; no links break.';
  const notes = new Set(broken.map((b) => b.source)).size;
  const lines = broken.slice(0, limit).map((b) => `  ${b.source}:${b.line}  ${b.link}`);
  if (broken.length > limit) lines.push(`  … and ${broken.length - limit} more`);
  return `Links that will break: ${broken.length} in ${notes} note${notes === 1 ? '' : 's'}:\n${lines.join('\n')}`;
}

async function noteFingerprint(vault: Vault, ctx: ToolContext, note: NoteInfo): Promise<{ rel: string; fingerprint: string; size: number }> {
  if (note.file_type === 'markdown') {
    const f = await loadText(vault, ctx, note.path, 'write');
    return { rel: note.path, fingerprint: f.fingerprint, size: Buffer.byteLength(f.text) };
  }
  const { resolved } = await vault.resolve(ctx, note.path, 'delete');
  const st = await lstat(resolved.real);
  return { rel: note.path, fingerprint: fingerprint(st, null), size: st.size };
}

export const deleteNote: Impl<ToolArgs['vault_delete_note']> = {
  assess: assessNote('vault_delete_note', false),
  preview: async (args, ctx) => {
    const vault = await vaultOf(ctx);
    const { note } = vault.find(args.note);
    const fp = await noteFingerprint(vault, ctx, note);
    rememberPreview(ctx, [fp]);
    const kind = note.file_type === 'markdown' ? 'markdown note' : `${note.file_type} file`;
    return {
      kind: 'delete',
      text: `Deletes ${shown(note.path)} (${kind}, ${humanBytes(fp.size)}, id ${note.id}).\n${describeBroken(brokenBy(vault, new Set([note.seq])))}`,
    };
  },
  run: inVault(async (vault, args, ctx) => {
    const { note } = vault.find(args.note);
    const fp = await noteFingerprint(vault, ctx, note);
    checkSincePreview(ctx, [fp]);
    const broken = brokenBy(vault, new Set([note.seq]));
    const { resolved } = await vault.resolve(ctx, note.path, 'delete');
    await unlink(resolved.real);
    await vault.refreshPaths([note.path]);
    return { ...ref(note), deleted: true, size: fp.size, broken_links: broken.length, summary: `deleted ${note.path}` };
  }),
};

// ---------------------------------------------------------------------------------------------
// Folders

export const createFolder: Impl<ToolArgs['vault_create_folder']> = {
  assess: assessVault,
  preview: async (args, ctx) => {
    const vault = await vaultOf(ctx);
    const rel = cleanRelative(args.path, 'folder');
    const { resolved } = await vault.resolve(ctx, rel, 'write', 'folder');
    if (resolved.exists) throw new MemoError('CONFLICT', `${shown(rel)} already exists in the vault.`);
    return { kind: 'fields', text: fieldsText([['folder', null, rel]]) };
  },
  run: inVault(async (vault, args, ctx) => {
    const rel = cleanRelative(args.path, 'folder');
    if (rel === '') throw new MemoError('VALIDATION', 'Name the folder to create.');
    const { resolved } = await vault.resolve(ctx, rel, 'write', 'folder');
    if (resolved.exists) throw new MemoError('CONFLICT', `${shown(rel)} already exists in the vault.`);
    for (const seg of rel.split('/')) checkName(seg, 'folder name');
    const made = await ensureFolders(vault, ctx, rel);
    return { path: rel, created: made, summary: `created folder ${rel}` };
  }),
};

async function folderPlan(vault: Vault, ctx: ToolContext, requested: string, intent: 'write' | 'delete') {
  const rel = cleanRelative(requested, 'folder');
  if (rel === '') throw new MemoError('VALIDATION', 'The vault folder itself cannot be renamed or deleted through a tool.');
  const { resolved } = await vault.resolve(ctx, rel, intent, 'folder');
  if (!resolved.exists) throw new MemoError('NOT_FOUND', `There is no folder ${shown(rel)} in the vault.`);
  if (!resolved.isDirectory) throw new MemoError('VALIDATION', `${shown(rel)} is a file; use the note tools for files.`);
  return { rel, resolved, notes: vault.index.notesUnder(rel) };
}

function renamedFolderPath(rel: string, newName: string): string {
  return join(folderOf(rel), checkName(newName, 'folder name'));
}

export const renameFolder: Impl<ToolArgs['vault_rename_folder']> = {
  assess: assessVault,
  preview: async (args, ctx) => {
    const vault = await vaultOf(ctx);
    const { rel, notes } = await folderPlan(vault, ctx, args.path, 'write');
    const to = renamedFolderPath(rel, args.new_name);
    const moves = new Map(notes.map((n) => [n.path, `${to}${n.path.slice(rel.length)}`]));
    const edits = planRelinks(vault.index, moves);
    const files = [];
    for (const source of bySource(edits).keys()) files.push(await loadText(vault, ctx, source));
    rememberPreview(ctx, files);
    return { kind: 'fields', text: fieldsText([['folder', rel, to]], `Notes and files moved with it: ${notes.length}.\n${describeRelinks(edits)}`) };
  },
  run: inVault(async (vault, args, ctx) => {
    const { rel, resolved, notes } = await folderPlan(vault, ctx, args.path, 'write');
    const to = renamedFolderPath(rel, args.new_name);
    const target = (await vault.resolve(ctx, to, 'write', 'folder')).resolved;
    if (target.exists && to.toLowerCase() !== rel.toLowerCase()) throw new MemoError('CONFLICT', `${shown(to)} already exists in the vault.`);
    const moves = new Map(notes.map((n) => [n.path, `${to}${n.path.slice(rel.length)}`]));
    const edits = planRelinks(vault.index, moves);
    const sources = [...bySource(edits).keys()];
    const before = [];
    for (const s of sources) before.push(await loadText(vault, ctx, s));
    checkSincePreview(ctx, before);
    await rename(resolved.real, target.real);
    const changed = [...moves.values()];
    for (const [source, list] of bySource(edits)) {
      const where = moves.get(source) ?? source;
      const file = await loadText(vault, ctx, where);
      await writeText(file, applyRelinks(file.text, list), file.fingerprint);
      changed.push(where);
    }
    await vault.refreshPaths(changed, new Map([...moves].map(([a, b]) => [b, a])));
    return { path: to, previous_path: rel, notes_moved: notes.length, links_rewritten: edits.length, summary: `renamed folder ${rel} to ${to}` };
  }),
};

/** Refuses to delete a tree that holds kernel state or a `.git` folder (walked without following links). */
async function checkTreeDeletable(vault: Vault, ctx: ToolContext, dir: string, rel: string): Promise<void> {
  if (ctx.sandbox.kernelArea(dir, 'change') !== null) throw new MemoError('PATH_PROTECTED', `${shown(rel)} holds the kernel's own files; it is not deleted.`);
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (e.name === '.git') throw new MemoError('PATH_PROTECTED', `${shown(rel)} holds a .git folder; it is not deleted.`);
    if (e.isDirectory()) await checkTreeDeletable(vault, ctx, path.join(dir, e.name), rel);
  }
}

export const deleteFolder: Impl<ToolArgs['vault_delete_folder']> = {
  assess: assessVault,
  preview: async (args, ctx) => {
    const vault = await vaultOf(ctx);
    const { rel, resolved, notes } = await folderPlan(vault, ctx, args.path, 'delete');
    const entries = await readdir(resolved.real);
    const size = notes.reduce((s, n) => s + n.size, 0);
    const listed = notes.slice(0, 50).map((n) => `  ${n.path} (${n.file_type}, ${humanBytes(n.size)})`);
    if (notes.length > 50) listed.push(`  … and ${notes.length - 50} more`);
    const what = notes.length ? `Notes and files lost: ${notes.length} (${humanBytes(size)}):\n${listed.join('\n')}` : 'No notes or filed files in it.';
    const other = entries.length && !notes.length ? `\nIt holds ${entries.length} other entr${entries.length === 1 ? 'y' : 'ies'}.` : '';
    return {
      kind: 'delete',
      text: `Deletes the folder ${shown(rel)}${args.recursive ? ' and everything in it' : ''}.\n${what}${other}\n${describeBroken(brokenBy(vault, new Set(notes.map((n) => n.seq))))}`,
    };
  },
  run: inVault(async (vault, args, ctx) => {
    const { rel, resolved, notes } = await folderPlan(vault, ctx, args.path, 'delete');
    const entries = await readdir(resolved.real);
    if (entries.length && !args.recursive)
      throw new MemoError('VALIDATION', `${shown(rel)} is not empty (${entries.length} entries); pass recursive: true to delete it with everything in it.`);
    await checkTreeDeletable(vault, ctx, resolved.real, rel);
    const broken = brokenBy(vault, new Set(notes.map((n) => n.seq)));
    if (entries.length) await rm(resolved.real, { recursive: true });
    else await rmdir(resolved.real);
    await vault.refreshPaths(notes.map((n) => n.path));
    return { path: rel, deleted: true, notes_deleted: notes.length, broken_links: broken.length, summary: `deleted folder ${rel}` };
  }),
};

// ---------------------------------------------------------------------------------------------
// Tags

function tagsIn(fm: Record<string, unknown>): string[] {
  const v = fm.tags ?? fm.tag;
  if (typeof v === 'string') return v.split(/[,\s]+/).filter(Boolean);
  if (Array.isArray(v)) return v.map(String);
  return [];
}

function withTag(text: string, tag: string): { text: string; before: string[]; after: string[] } {
  const parsed = parseNote(text);
  if (parsed.frontMatterError) throw new MemoError('VALIDATION', `The note's front matter cannot be changed: ${parsed.frontMatterError}.`);
  const fm: Record<string, unknown> = { ...(parsed.frontMatter ?? {}) };
  const before = tagsIn(fm);
  if (before.some((t) => normalizeTag(t) === tag)) return { text, before, after: before };
  const after = [...before, tag];
  delete fm.tag;
  fm.tags = after;
  return { text: composeNote(fm, parsed.body), before, after };
}

/**
 * The text without the inline tags `inline` matches, spaces tidied: a tag goes with the space before
 * it (`kit #launch` becomes `kit`, `a #x b` becomes `a b`), one at the start of a line with the space
 * after it, and a line that held only tags goes.
 */
function withoutInline(body: string, inline: RegExp): string {
  const out: string[] = [];
  for (const line of body.split('\n')) {
    let atStart = false;
    const next = line.replace(inline, (_m, pre: string, offset: number) => {
      if (pre === '' && offset === 0) atStart = true;
      return /^[\s]?$/.test(pre) ? '' : pre;
    });
    if (next === line) out.push(line);
    else if (next.trim() === '') continue;
    else out.push(atStart ? next.replace(/^[ \t]+/, '') : next);
  }
  return out.join('\n');
}

function withoutTag(text: string, tag: string): string {
  const parsed = parseNote(text);
  if (parsed.frontMatterError) throw new MemoError('VALIDATION', `The note's front matter cannot be changed: ${parsed.frontMatterError}.`);
  const fm: Record<string, unknown> = { ...(parsed.frontMatter ?? {}) };
  const before = tagsIn(fm);
  const after = before.filter((t) => normalizeTag(t) !== tag);
  const escaped = tag.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
  // `#tag` as a whole tag (not `#tagged`, not `#tag/child`), case-insensitively, in prose.
  const inline = new RegExp(`(^|[\\s(,;])#${escaped}(?![\\p{L}\\p{N}_\\-/])`, 'giu');
  const body = withoutInline(parsed.body, inline);
  if (after.length === before.length && body === parsed.body) throw new MemoError('NOT_FOUND', `The note has no tag #${tag}.`);
  if (after.length !== before.length) {
    delete fm.tag;
    if (after.length) fm.tags = after;
    else delete fm.tags;
    return composeNote(fm, body);
  }
  return text.slice(0, text.length - parsed.body.length) + body;
}

export const addTag: Impl<ToolArgs['vault_add_tag']> = {
  assess: assessNote('vault_add_tag', true),
  preview: async (args, ctx) => {
    const vault = await vaultOf(ctx);
    const tag = checkTag(args.tag);
    const { file } = await loadNoteFor(vault, ctx, args.note, 'vault_add_tag');
    rememberPreview(ctx, [file]);
    const r = withTag(file.text, tag);
    return { kind: 'fields', text: r.before === r.after ? `tags: unchanged (already has #${tag})` : fieldsText([['tags', r.before, r.after]]) };
  },
  run: inVault(async (vault, args, ctx) => {
    const tag = checkTag(args.tag);
    const { note, file } = await loadNoteFor(vault, ctx, args.note, 'vault_add_tag');
    checkSincePreview(ctx, [file]);
    const r = withTag(file.text, tag);
    if (r.text !== file.text) {
      await writeText(file, r.text, file.fingerprint);
      await vault.refreshPaths([note.path]);
    }
    return { ...ref(note), tag, added: r.text !== file.text, tags: vault.index.tagsOf(note.seq), summary: `tagged ${note.path} #${tag}` };
  }),
};

export const removeTag: Impl<ToolArgs['vault_remove_tag']> = {
  assess: assessNote('vault_remove_tag', true),
  preview: async (args, ctx) => {
    const vault = await vaultOf(ctx);
    const tag = checkTag(args.tag);
    const { note, file } = await loadNoteFor(vault, ctx, args.note, 'vault_remove_tag');
    rememberPreview(ctx, [file]);
    return { kind: 'diff', text: diffOf(note.path, file.text, withoutTag(file.text, tag)) };
  },
  run: inVault(async (vault, args, ctx) => {
    const tag = checkTag(args.tag);
    const { note, file } = await loadNoteFor(vault, ctx, args.note, 'vault_remove_tag');
    checkSincePreview(ctx, [file]);
    await writeText(file, withoutTag(file.text, tag), file.fingerprint);
    await vault.refreshPaths([note.path]);
    return { ...ref(note), tag, removed: true, tags: vault.index.tagsOf(note.seq), summary: `removed #${tag} from ${note.path}` };
  }),
};

// ---------------------------------------------------------------------------------------------
// vault_add_html_artifact

function slug(text: string): string {
  return (
    text
      .normalize('NFKD')
      .replace(/[\u0300-\u036f]/g, '')
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 60) || 'artifact'
  );
}

async function planArtifact(vault: Vault, ctx: ToolContext, args: ToolArgs['vault_add_html_artifact']) {
  const bytes = Buffer.byteLength(args.html);
  if (bytes > HTML_MAX_BYTES)
    throw new MemoError('VALIDATION', `The HTML is ${humanBytes(bytes)}; an artifact is at most 512 KB. Make it smaller (inline less data).`, {
      details: { bytes, limit: HTML_MAX_BYTES },
    });
  const { note, file } = await loadNoteFor(vault, ctx, args.note, 'vault_add_html_artifact');
  const stem = path.posix.basename(note.path).replace(/\.md$/i, '');
  const base = `${stem} - ${slug(args.title ?? 'artifact')}`;
  let name = `${base}.html`;
  for (let i = 2; ; i++) {
    const { resolved } = await vault.resolve(ctx, join(folderOf(note.path), name), 'write');
    if (!resolved.exists) break;
    name = `${base} ${i}.html`;
  }
  const rel = join(folderOf(note.path), name);
  const embed = `![[${name}]]`;
  const text = file.text === '' || file.text.endsWith('\n') ? `${file.text}\n${embed}\n` : `${file.text}\n\n${embed}\n`;
  return { note, file, rel, text, bytes };
}

export const addHtmlArtifact: Impl<ToolArgs['vault_add_html_artifact']> = {
  assess: assessNote('vault_add_html_artifact', true),
  preview: async (args, ctx) => {
    const vault = await vaultOf(ctx);
    const p = await planArtifact(vault, ctx, args);
    rememberPreview(ctx, [p.file, { rel: p.rel, fingerprint: 'absent' }]);
    return {
      kind: 'diff',
      text: `Saves ${shown(p.rel)} (HTML, ${humanBytes(p.bytes)}) and embeds it in the note:\n${diffOf(p.note.path, p.file.text, p.text)}`,
    };
  },
  run: inVault(async (vault, args, ctx) => {
    const p = await planArtifact(vault, ctx, args);
    checkSincePreview(ctx, [p.file, { rel: p.rel, fingerprint: 'absent' }]);
    const { resolved } = await vault.resolve(ctx, p.rel, 'write');
    await writeText({ rel: p.rel, resolved, mode: null }, args.html, 'absent');
    try {
      await writeText(p.file, p.text, p.file.fingerprint);
    } catch (err) {
      await unlink(resolved.real).catch(() => undefined); // the note was kept as it was: so is the folder
      throw err;
    }
    await vault.refreshPaths([p.note.path]);
    return { ...ref(p.note), attachment: p.rel, bytes: p.bytes, summary: `added ${p.rel} to ${p.note.path}` };
  }),
};

// ---------------------------------------------------------------------------------------------
// vault_reindex

export async function reindex(args: ToolArgs['vault_reindex'], ctx: ToolContext) {
  const rt = runtimeOf(ctx);
  const vault = await rt.vault(ctx, { create: args.create === true });
  const started = performance.now();
  const r = await vault.rebuild(ctx.signal, (done, total) => ctx.progress({ progress: done, total, message: `indexed ${done} of ${total} files` }));
  const notes = vault.index.count();
  return {
    folder: path.relative(ctx.sandbox.root, vault.real).split(path.sep).join('/'),
    notes,
    renamed: r.renamed,
    ms: Math.round(performance.now() - started),
    summary: `indexed ${notes} file${notes === 1 ? '' : 's'} (notes and filed files) in ${path.relative(ctx.sandbox.root, vault.real) || '.'}`,
  };
}
