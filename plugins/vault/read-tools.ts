/** The vault's read tools (safe): search, read, list, tags, and the note open in the host. */
import { readdir } from 'node:fs/promises';
import { MemoError, type JsonValue, type ToolContext } from 'memo-kernel/pack';
import { normalizeTag, parseNote, sectionOf } from './markdown.js';
import { loadText, requireMarkdown } from './note-files.js';
import { runtimeOf } from './runtime.js';
import type { ToolArgs } from './tool-args.js';
import { cleanRelative, isListedEntry, shown, type Vault } from './vault.js';
import type { NoteInfo } from './vault-index.js';
import { fileTypeOf } from './markdown.js';

const LIST_MAX = 1000;

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** The reference a UI links to: id and vault-relative path, with title and type. */
export function ref(note: Pick<NoteInfo, 'id' | 'path' | 'title' | 'file_type'>): { id: string; path: string; title: string; file_type: string } {
  return { id: note.id, path: note.path, title: note.title, file_type: note.file_type };
}

export async function searchNotes(args: ToolArgs['vault_search_notes'], ctx: ToolContext) {
  const vault = await runtimeOf(ctx).vault(ctx);
  const folder = args.folder ? cleanRelative(args.folder, 'folder') : '';
  const tags = (args.tags ?? []).map(normalizeTag).filter(Boolean);
  const { hits, terms } = vault.index.search({
    query: args.query,
    limit: args.limit ?? 20,
    ...(args.file_types?.length ? { fileTypes: args.file_types } : {}),
    ...(folder ? { folder } : {}),
    ...(tags.length ? { tags } : {}),
  });
  const snippets = await Promise.all(hits.map((h) => (terms.length && h.file_type === 'markdown' ? vault.snippet(h.path, terms) : Promise.resolve(null))));
  const results = hits.map((h, i) => ({
    id: h.id,
    path: h.path,
    title: h.title,
    file_type: h.file_type,
    tags: vault.index.tagsOf(h.seq),
    snippet: snippets[i] ?? null,
    modified: iso(h.mtime),
    ...(h.icon ? { icon: h.icon } : {}),
  }));
  const nothing = args.query.trim() !== '' && terms.length === 0;
  return {
    results,
    count: results.length,
    ...(nothing ? { note: 'The query has no letters or digits to search for.' } : {}),
    summary: `${results.length} result${results.length === 1 ? '' : 's'}${args.query.trim() ? ` for ${shown(args.query.trim())}` : ''}`,
  };
}

/** A markdown note as the read tools return it: the file's content now, with the index's links and backlinks. */
async function noteView(vault: Vault, ctx: ToolContext, note: NoteInfo, heading: string | null, tool: string) {
  requireMarkdown(note, tool);
  const file = await loadText(vault, ctx, note.path, 'read');
  const parsed = parseNote(file.text);
  const outgoing = vault.index.linksFrom(note.seq).map((l) => {
    const target = l.target_seq === null ? undefined : vault.index.note({ seq: l.target_seq });
    return {
      target: l.target,
      alias: l.alias,
      heading: l.heading,
      embed: l.embed === 1,
      line: l.line,
      status: l.status,
      ...(target ? { id: target.id, path: target.path } : {}),
    };
  });
  const backlinks = vault.index
    .linksTo(note.seq)
    .flatMap((l) => {
      const source = vault.index.note({ seq: l.source_seq });
      return source && source.seq !== note.seq ? [{ id: source.id, path: source.path, title: source.title, line: l.line, heading: l.heading }] : [];
    })
    .sort((a, b) => a.path.localeCompare(b.path) || a.line - b.line);
  const section = heading ? sectionOf(parsed.body, heading) : null;
  return {
    ...ref(note),
    content: parsed.body,
    front_matter: (parsed.frontMatter ?? null) as JsonValue,
    ...(parsed.frontMatterError ? { front_matter_error: parsed.frontMatterError } : {}),
    tags: parsed.tags,
    headings: parsed.headings,
    ...(heading ? { heading, section } : {}),
    links: outgoing,
    backlinks,
    size: Buffer.byteLength(file.text),
    modified: iso(note.mtime),
  };
}

export async function readNote(args: ToolArgs['vault_read_note'], ctx: ToolContext) {
  const vault = await runtimeOf(ctx).vault(ctx);
  const { note, heading } = vault.find(args.note);
  const view = await noteView(vault, ctx, note, heading, 'vault_read_note');
  return { ...view, summary: `read ${note.path}` };
}

export async function listFolder(args: ToolArgs['vault_list_folder'], ctx: ToolContext) {
  const vault = await runtimeOf(ctx).vault(ctx);
  const { resolved, rel } = await vault.resolve(ctx, args.path ?? '', 'list', 'folder');
  if (!resolved.exists) throw new MemoError('NOT_FOUND', `There is no folder ${shown(args.path ?? '')} in the vault.`);
  if (!resolved.isDirectory) throw new MemoError('VALIDATION', `${shown(args.path ?? '')} is a file, not a folder.`);
  const entries = (await readdir(resolved.real, { withFileTypes: true })).filter(isListedEntry);
  const folders = entries.filter((e) => e.isDirectory()).sort((a, b) => a.name.localeCompare(b.name));
  const files = entries.filter((e) => e.isFile()).sort((a, b) => a.name.localeCompare(b.name));
  const out: JsonValue[] = [];
  const at = (name: string) => (rel ? `${rel}/${name}` : name);
  for (const d of folders) out.push({ type: 'folder', name: d.name, path: at(d.name) });
  for (const f of files) {
    const p = at(f.name);
    const note = fileTypeOf(f.name) ? vault.index.note({ path: p }) : undefined;
    out.push(note ? { type: note.file_type === 'markdown' ? 'note' : 'file', name: f.name, ...ref(note) } : { type: 'attachment', name: f.name, path: p });
  }
  const truncated = out.length > LIST_MAX;
  return {
    folder: rel,
    entries: out.slice(0, LIST_MAX),
    ...(truncated ? { truncated: true, total: out.length } : {}),
    summary: `${Math.min(out.length, LIST_MAX)} entr${out.length === 1 ? 'y' : 'ies'} in ${rel || 'the vault'}${truncated ? ` (of ${out.length})` : ''}`,
  };
}

export async function getTags(_args: ToolArgs['vault_get_tags'], ctx: ToolContext) {
  const vault = await runtimeOf(ctx).vault(ctx);
  const tags = vault.index.tags();
  return { tags, summary: `${tags.length} tag${tags.length === 1 ? '' : 's'}` };
}

/**
 * The host's `currentNote` (a path or id, or `{ path }` / `{ id }`). An external MCP client with no
 * running turn has no window of the host: it gets null rather than a guess.
 */
export async function getCurrentNote(_args: ToolArgs['vault_get_current_note'], ctx: ToolContext) {
  const rt = runtimeOf(ctx);
  if (ctx.caller.kind === 'mcp' && !ctx.caller.capability) return { note: null, summary: 'no current note for an external client' };
  const value = rt.api.host.get('currentNote');
  const refText =
    typeof value === 'string'
      ? value
      : value && typeof value === 'object' && !Array.isArray(value)
        ? [value.id, value.path].find((v): v is string => typeof v === 'string' && v !== '')
        : undefined;
  if (!refText) return { note: null, summary: 'no note is open in the host' };
  const vault = await rt.vault(ctx);
  const { note, heading } = vault.find(refText);
  const view = await noteView(vault, ctx, note, heading, 'vault_get_current_note');
  return { note: view, summary: `current note ${note.path}` };
}
