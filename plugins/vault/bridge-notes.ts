/**
 * Desktop bridge operations: notes and templates (see bridge.ts for the contract every operation
 * keeps). Wiki targets are resolved by the vault index exactly as links are (links.ts); templates are
 * plain markdown files in the vault's templates folder; applying one edits the note through the same
 * preview-checked atomic write as vault_update_note; imports copy workspace files into the vault
 * through import-files.ts, never replacing a file that is there.
 */
import path from 'node:path';
import { MemoError, type JsonValue, type ToolContext } from 'memo-kernel/pack';
import { objectArg, onlyKeys, op, stringArg, type BridgeOp } from './bridge-op.js';
import { readSetting } from './features.js';
import { IMPORT_MAX_BYTES, IMPORT_MAX_FILES, importIntoVault, planImport, type PlannedImport } from './import-files.js';
import { composeNote, parseNote } from './markdown.js';
import { checkSincePreview, diffOf, humanBytes, loadText, rememberPreview, requireMarkdown, writeText } from './note-files.js';
import { planningDb } from './planning-store.js';
import { ref } from './read-tools.js';
import { runtimeOf } from './runtime.js';
import { cleanRelative, shown, type Vault } from './vault.js';
import type { NoteInfo } from './vault-index.js';
import type { LinkCandidate } from './links.js';

const vaultOf = (ctx: ToolContext) => runtimeOf(ctx).vault(ctx);

/** A note as these operations answer it: the stable id, the path and the title. */
const brief = (n: Pick<LinkCandidate, 'id' | 'path' | 'title'>) => ({ id: n.id, path: n.path, title: n.title });

/** `[[Target|alias]]` or `![[Target]]` as the target alone; a bare target is kept as it is. */
function bareTarget(text: string): string {
  const inner = text
    .trim()
    .replace(/^!?\[\[/, '')
    .replace(/\]\]$/, '');
  return (inner.split(/\\?\|/)[0] ?? inner).trim();
}

function oneString(args: JsonValue[], what: string): string {
  if (args.length !== 1) throw new MemoError('VALIDATION', `it takes one argument, the ${what}.`);
  return stringArg(args[0], what, { max: 1000 });
}

// ---------------------------------------------------------------------------------------------
// Templates

const TEMPLATES_DEFAULT = 'Templates';

/** The templates folder: the vault setting `templates_folder` when set, else `Templates`. */
async function templatesFolder(ctx: ToolContext): Promise<string> {
  const v = await readSetting((await planningDb(ctx)).manager, 'templates_folder');
  return cleanRelative(typeof v === 'string' && v.trim() ? v : TEMPLATES_DEFAULT, 'templates folder');
}

interface Template {
  /** Its path under the templates folder, without `.md`. */
  name: string;
  path: string;
  id: string;
}

function templatesIn(vault: Vault, folder: string): Template[] {
  return vault.index
    .notesUnder(folder)
    .filter((n) => n.file_type === 'markdown')
    .map((n) => ({ name: (folder ? n.path.slice(folder.length + 1) : n.path).replace(/\.(md|markdown)$/i, ''), path: n.path, id: n.id }));
}

/** A template by its name (any case), its vault path or its id. */
function findTemplate(all: Template[], folder: string, refText: string): Template {
  const r = refText.trim().replace(/\\/g, '/');
  const exact = all.find((t) => t.id === r || t.path === r || t.name === r || t.name === r.replace(/\.(md|markdown)$/i, ''));
  if (exact) return exact;
  const key = r.replace(/\.(md|markdown)$/i, '').toLowerCase();
  const named = all.filter((t) => t.name.toLowerCase() === key);
  if (named.length === 1) return named[0]!;
  if (named.length > 1)
    throw new MemoError('VALIDATION', `${named.length} templates are called ${shown(refText)}: ${named.map((t) => t.path).join(', ')}. Name one by its path.`);
  throw new MemoError('NOT_FOUND', `No template ${shown(refText)} in ${shown(folder || 'the vault')} (templates.get [] lists them).`, {
    details: { template: refText, folder },
  });
}

function pad(n: number): string {
  return String(n).padStart(2, '0');
}

/** The placeholders a template may carry: {{title}} (the note's), {{date}} (today, YYYY-MM-DD) and {{time}} (HH:MM), in local time. */
function substitute(text: string, title: string, at: Date): string {
  const values: Record<string, string> = {
    title,
    date: `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())}`,
    time: `${pad(at.getHours())}:${pad(at.getMinutes())}`,
  };
  return text.replace(/\{\{\s*(title|date|time)\s*\}\}/gi, (_m, k: string) => values[k.toLowerCase()]!);
}

/** The template's body after the note's (a blank line between), or as the body of an empty note. */
function joinBodies(note: string, template: string): string {
  if (note.trim() === '') return template;
  if (note.endsWith('\n\n')) return `${note}${template}`;
  return note.endsWith('\n') ? `${note}\n${template}` : `${note}\n\n${template}`;
}

/**
 * The note's text with a template applied: the template's front matter under the note's (the
 * note's keys win), its body appended. A note whose front matter gains nothing keeps its block as
 * written.
 */
function withTemplate(noteText: string, templateText: string, title: string, at: Date): string {
  const n = parseNote(noteText);
  if (n.frontMatterError) throw new MemoError('VALIDATION', `The note's front matter cannot be merged: ${n.frontMatterError}. Fix it in the editor first.`);
  const t = parseNote(substitute(templateText, title, at));
  if (t.frontMatterError) throw new MemoError('VALIDATION', `The template's front matter cannot be read: ${t.frontMatterError}.`);
  const noteFm = n.frontMatter ?? {};
  const added = Object.entries(t.frontMatter ?? {}).filter(([k]) => !(k in noteFm));
  const body = joinBodies(n.body, t.body);
  if (!added.length) return noteText.slice(0, noteText.length - n.body.length) + body;
  return composeNote({ ...noteFm, ...Object.fromEntries(added) }, body);
}

interface ApplyArgs {
  noteId: string;
  template: string;
}

/** The moment a preview filled {{date}} and {{time}} with: the run writes what was shown, even a minute later. */
const previewedAt = new WeakMap<object, Date>();

/** The note and template as they are on disk now, and the note's text with the template applied. */
async function planApply(vault: Vault, ctx: ToolContext, p: ApplyArgs) {
  const { note } = vault.find(p.noteId);
  requireMarkdown(note, 'notes.applyTemplate');
  const folder = await templatesFolder(ctx);
  const template = findTemplate(templatesIn(vault, folder), folder, p.template);
  if (template.path === note.path) throw new MemoError('VALIDATION', `${shown(note.path)} is the template itself.`);
  const file = await loadText(vault, ctx, note.path);
  const source = await loadText(vault, ctx, template.path, 'read');
  const at = previewedAt.get(ctx) ?? new Date();
  previewedAt.set(ctx, at);
  return { note, template, file, source, text: withTemplate(file.text, source.text, note.title, at) };
}

// ---------------------------------------------------------------------------------------------
// Importing files (the copying is import-files.ts, shared with tasks.importFilesToProject)

interface ImportArgs {
  sourcePaths: string[];
  folder: string;
}

function parseImport(args: JsonValue[]): ImportArgs {
  const o = objectArg(args);
  onlyKeys(o, ['sourcePaths', 'folder']);
  if (!Array.isArray(o.sourcePaths)) throw new MemoError('VALIDATION', 'sourcePaths must be a list of file paths, relative to the workspace root.');
  const sourcePaths = o.sourcePaths.map((s, i) => stringArg(s, `sourcePaths[${i}]`, { max: 4096 }));
  const folder = o.folder === undefined ? '' : cleanRelative(stringArg(o.folder, 'folder', { max: 1000 }), 'folder');
  return { sourcePaths, folder };
}

/** The import as planned now, refused as a whole when any source cannot be copied (import-files.ts: no .git, no kernel state). */
function planFor(ctx: ToolContext, p: ImportArgs): Promise<PlannedImport[]> {
  return planImport(ctx, p.sourcePaths, p.folder);
}

/** What the preview showed and the run must find the same: each source as it was measured, each target name still free. */
function importFingerprints(planned: PlannedImport[]) {
  return [
    ...planned.map((i) => ({ rel: `source:${i.source}`, fingerprint: `${i.sourceReal}:${i.bytes}` })),
    ...planned.map((i) => ({ rel: i.target, fingerprint: 'absent' })),
  ];
}

// ---------------------------------------------------------------------------------------------

export const BRIDGE_NOTE_OPS: BridgeOp[] = [
  op<string>({
    name: 'notes.resolveWikiTarget',
    effect: 'read',
    usage: "args [target] (a [[link]]'s target, brackets and |alias allowed) -> {note: {id, path, title} | null, heading, candidates?}",
    parse: (args) => bareTarget(oneString(args, 'link target')),
    run: async (target, ctx) => {
      const r = (await vaultOf(ctx)).index.resolve(target);
      if (r.status === 'resolved') return { note: brief(r.note), heading: r.heading, summary: `${target} is ${r.note.path}` };
      if (r.status === 'ambiguous')
        return { note: null, heading: r.heading, candidates: r.candidates.map(brief), summary: `${target} matches ${r.candidates.length} notes` };
      return { note: null, heading: r.heading, summary: `${target} leads to no note` };
    },
  }),
  op<string>({
    name: 'notes.resolveByTitle',
    effect: 'read',
    usage: 'args [title] (a plain title or file name; a #heading is not split off) -> {note: {id, path, title} | null, candidates?}',
    parse: (args) => oneString(args, 'title'),
    run: async (title, ctx) => {
      const { lookup } = (await vaultOf(ctx)).index;
      const key = title.toLowerCase();
      // No heading split and no aliases: only a note whose title or file name is exactly this.
      const found = [...new Map([...lookup.byTitle(key), ...lookup.byName(key)].map((c) => [c.seq, c])).values()].sort((a, b) => a.path.localeCompare(b.path));
      if (found.length === 1) return { note: brief(found[0]!), summary: `${title} is ${found[0]!.path}` };
      if (found.length > 1) return { note: null, candidates: found.map(brief), summary: `${found.length} notes are called ${title}` };
      return { note: null, summary: `no note is called ${title}` };
    },
  }),
  op<string | null>({
    name: 'templates.get',
    effect: 'read',
    usage: 'args [] -> {templates: [{name, path, id}]}; args [name] -> {template: {name, path, id, content}}',
    parse: (args) => {
      if (args.length > 1) throw new MemoError('VALIDATION', 'it takes at most one argument, the template name.');
      return args.length ? stringArg(args[0], 'template name', { max: 1000 }) : null;
    },
    run: async (name, ctx) => {
      const vault = await vaultOf(ctx);
      const folder = await templatesFolder(ctx);
      const all = templatesIn(vault, folder);
      if (name === null) return { templates: all, folder, summary: `${all.length} template${all.length === 1 ? '' : 's'} in ${folder || 'the vault'}` };
      const t = findTemplate(all, folder, name);
      const file = await loadText(vault, ctx, t.path, 'read');
      return { template: { ...t, content: file.text }, summary: `template ${t.name}` };
    },
  }),
  op<ApplyArgs>({
    name: 'notes.applyTemplate',
    effect: 'write',
    askEveryTime: true,
    usage: 'args [{noteId, template}] (template: its name, path or id) -> {note: {id, path, title}}',
    parse: (args) => {
      const o = objectArg(args);
      onlyKeys(o, ['noteId', 'template']);
      return { noteId: stringArg(o.noteId, 'noteId', { max: 1000 }), template: stringArg(o.template, 'template', { max: 1000 }) };
    },
    check: async (p, ctx) => {
      const vault = await vaultOf(ctx);
      const { note } = vault.find(p.noteId);
      requireMarkdown(note, 'notes.applyTemplate');
      const folder = await templatesFolder(ctx);
      const template = findTemplate(templatesIn(vault, folder), folder, p.template);
      if (template.path === note.path) throw new MemoError('VALIDATION', `${shown(note.path)} is the template itself.`);
    },
    preview: async (p, ctx) => {
      const plan = await planApply(await vaultOf(ctx), ctx, p);
      rememberPreview(ctx, [plan.file, plan.source]);
      return {
        kind: 'diff',
        text: `Template ${plan.template.name} (${plan.template.path}) applied to ${plan.note.path}:\n${diffOf(plan.note.path, plan.file.text, plan.text)}`,
      };
    },
    run: async (p, ctx) => {
      const vault = await vaultOf(ctx);
      return vault.exclusive(async () => {
        const plan = await planApply(vault, ctx, p);
        checkSincePreview(ctx, [plan.file, plan.source]);
        await writeText(plan.file, plan.text, plan.file.fingerprint);
        await vault.refreshPaths([plan.note.path]);
        const note: NoteInfo = vault.index.note({ path: plan.note.path }) ?? plan.note;
        return { note: ref(note), template: plan.template, summary: `applied ${plan.template.name} to ${note.path}` };
      });
    },
  }),
  op<ImportArgs>({
    name: 'notes.importFiles',
    effect: 'write',
    usage: `args [{sourcePaths: [path, ...], folder?}] (workspace paths; at most ${IMPORT_MAX_FILES} files and ${humanBytes(IMPORT_MAX_BYTES)}) -> {files: [{id, path, title, file_type}]}`,
    parse: parseImport,
    check: async (p, ctx) => void (await planFor(ctx, p)),
    preview: async (p, ctx) => {
      const vault = await vaultOf(ctx);
      const planned = await planFor(ctx, p);
      rememberPreview(ctx, importFingerprints(planned));
      const total = planned.reduce((s, i) => s + i.bytes, 0);
      const folderExists = p.folder === '' || (await vault.resolve(ctx, p.folder, 'write', 'folder')).resolved.exists;
      const inVault = (i: PlannedImport) => {
        const rel = path.relative(vault.real, path.join(ctx.sandbox.root, i.sourceReal));
        return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel.split(path.sep).join('/') : null;
      };
      const lines = [
        `Copies ${planned.length} file${planned.length === 1 ? '' : 's'} (${humanBytes(total)}) into the vault${p.folder ? ` folder ${p.folder}` : ''}; nothing there is replaced.`,
        ...(folderExists ? [] : [`Creates the folder ${p.folder}.`]),
        ...planned.map((i) => {
          const already = inVault(i);
          return `copy ${i.source} -> ${i.target} (${humanBytes(i.bytes)})${already ? ` (already in the vault as ${already}: this makes a second copy)` : ''}`;
        }),
      ];
      return { kind: 'text', text: lines.join('\n') };
    },
    run: async (p, ctx) => {
      checkSincePreview(ctx, importFingerprints(await planFor(ctx, p)));
      const { files, created_folders } = await importIntoVault(ctx, p.sourcePaths, p.folder);
      return {
        files,
        ...(created_folders.length ? { created_folders } : {}),
        summary: `imported ${files.length} file${files.length === 1 ? '' : 's'} into ${p.folder || 'the vault'}`,
      };
    },
  }),
];
