/**
 * Desktop bridge operations: note properties (front matter) and search reasons (see bridge.ts for
 * the contract every operation keeps). The property list is one query over the front matter the index
 * keeps as JSON; a note's properties are read from its file as it is now, and edited through the same
 * preview-checked atomic write as vault_add_tag (write-tools.ts): only the front matter block is
 * written again, the body after it is kept byte for byte. Tags are not properties here: vault_add_tag
 * and vault_remove_tag keep the tag list and the #tags in the text together. Search reasons run the
 * search vault_search_notes runs and ask FTS5 itself, with the index's tokenizer, which terms each of a
 * note's fields holds, so a reason never disagrees with the search about a stem, an accent or a prefix.
 */
import { isMemoError, MemoError, type JsonValue, type Preview, type ToolContext } from 'memo-kernel/pack';
import { objectArg, onlyKeys, op, stringArg, type BridgeOp } from './bridge-op.js';
import { toFtsQuery } from './fts-query.js';
import { composeNote, normalizeTag, parseNote } from './markdown.js';
import { checkSincePreview, loadText, rememberPreview, requireMarkdown, writeText, type LoadedFile } from './note-files.js';
import { runtimeOf } from './runtime.js';
import { cleanRelative, shown, type Vault } from './vault.js';
import type { NoteInfo } from './vault-index.js';
import { loadNoteFor } from './write-tools.js';

const NAME_MAX = 100;
/** A property value's JSON text at most (a front matter block is read whole by every editor that opens the note). */
const VALUE_MAX = 64 * 1024;
/** Characters of a value a preview shows. */
const VALUE_SHOWN = 300;
const REASONS_DEFAULT = 20;
/** Each result reads its note's file: fewer than vault_search_notes's 200. */
const REASONS_MAX = 50;

const vaultOf = (ctx: ToolContext) => runtimeOf(ctx).vault(ctx);

/** A note as these operations answer it: the stable id, the path and the title. */
const brief = (n: Pick<NoteInfo, 'id' | 'path' | 'title'>) => ({ id: n.id, path: n.path, title: n.title });

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** A note's front matter (an empty one when it has none) and its body, or VALIDATION when the block cannot be read. */
function frontMatterOf(text: string, rel: string): { fm: Record<string, unknown>; body: string } {
  const parsed = parseNote(text);
  if (parsed.frontMatterError)
    throw new MemoError('VALIDATION', `The front matter of ${shown(rel)} cannot be read: ${parsed.frontMatterError}. Fix it in the editor first.`, {
      details: { path: rel },
    });
  return { fm: { ...(parsed.frontMatter ?? {}) }, body: parsed.body };
}

// ---------------------------------------------------------------------------------------------
// Arguments

function noteArg(v: JsonValue | undefined): string {
  return stringArg(v, 'noteId', { max: 1000 });
}

/** A property name: a non-empty key, not a tag key (tags have tools of their own). */
function nameArg(v: JsonValue | undefined): string {
  const name = stringArg(v, 'name', { max: NAME_MAX });
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
  if (/[\u0000-\u001f\u007f]/.test(name)) throw new MemoError('VALIDATION', 'name may not contain line breaks or other control characters.');
  if (['tags', 'tag'].includes(name.toLowerCase()))
    throw new MemoError(
      'VALIDATION',
      `${shown(name)} holds the note's tags: change them with vault_add_tag and vault_remove_tag, which keep #tags in the text in step.`,
    );
  return name;
}

function folderArg(v: JsonValue | undefined): string {
  const folder = stringArg(v, 'folder', { optional: true, max: 1000 });
  return folder === undefined ? '' : cleanRelative(folder, 'folder');
}

// ---------------------------------------------------------------------------------------------
// Property edits

interface EditArgs {
  noteId: string;
  name: string;
  /** The value to set; undefined: the property is removed. */
  value?: JsonValue;
}

interface PlannedEdit {
  note: NoteInfo;
  file: LoadedFile;
  had: boolean;
  before: unknown;
  properties: Record<string, unknown>;
  /** The note's text after the edit (the file's own text when nothing changes). */
  text: string;
}

/** The edit worked out from the note's file as it is now: the front matter block written again, the body kept as it is. */
async function planEdit(vault: Vault, ctx: ToolContext, p: EditArgs, operation: string): Promise<PlannedEdit> {
  const { note, file } = await loadNoteFor(vault, ctx, p.noteId, operation);
  const { fm, body } = frontMatterOf(file.text, note.path);
  const had = Object.hasOwn(fm, p.name);
  const before = fm[p.name];
  if (p.value === undefined) {
    if (!had) {
      const keys = Object.keys(fm);
      throw new MemoError(
        'NOT_FOUND',
        `${shown(note.path)} has no property ${shown(p.name)} (${keys.length ? `it has ${keys.map(shown).join(', ')}` : 'it has none'}).`,
        { details: { path: note.path, name: p.name } },
      );
    }
    delete fm[p.name];
  } else {
    if (had && JSON.stringify(before) === JSON.stringify(p.value)) return { note, file, had, before, properties: fm, text: file.text };
    fm[p.name] = p.value;
  }
  return { note, file, had, before, properties: fm, text: composeNote(fm, body) };
}

function shownValue(v: unknown): string {
  const s = v === null ? 'null' : v === '' ? '"" (empty)' : typeof v === 'string' ? v : JSON.stringify(v);
  return s.length > VALUE_SHOWN ? `${s.slice(0, VALUE_SHOWN)}… (${s.length} characters)` : s;
}

/** The field change a person is shown: `name: before -> after`, `(not set)` where there is no such key. */
function editPreview(plan: PlannedEdit, p: EditArgs): Preview {
  const after = p.value === undefined ? '(removed)' : shownValue(p.value);
  const row = plan.text === plan.file.text ? '(no field changes)' : `${p.name}: ${plan.had ? shownValue(plan.before) : '(not set)'} -> ${after}`;
  return { kind: 'fields', text: `Properties of ${plan.note.path}\n${row}` };
}

/** Runs an edit under the vault's queue: worked out again from the file, refused if it changed since the preview, written atomically, indexed. */
async function runEdit(ctx: ToolContext, p: EditArgs, operation: string) {
  const vault = await vaultOf(ctx);
  return vault.exclusive(async () => {
    const plan = await planEdit(vault, ctx, p, operation);
    checkSincePreview(ctx, [plan.file]);
    const changed = plan.text !== plan.file.text;
    if (changed) {
      await writeText(plan.file, plan.text, plan.file.fingerprint);
      await vault.refreshPaths([plan.note.path]);
    }
    const note = vault.index.note({ path: plan.note.path }) ?? plan.note;
    return { note: brief(note), changed, properties: plan.properties };
  });
}

function editArgs(args: JsonValue[], withValue: boolean): EditArgs {
  const o = objectArg(args);
  onlyKeys(o, withValue ? ['noteId', 'name', 'value'] : ['noteId', 'name']);
  const p: EditArgs = { noteId: noteArg(o.noteId), name: nameArg(o.name) };
  if (!withValue) return p;
  if (o.value === undefined) throw new MemoError('VALIDATION', 'value is missing (null sets the property to null; properties.remove takes it away).');
  if (JSON.stringify(o.value).length > VALUE_MAX) throw new MemoError('VALIDATION', `value is longer than ${VALUE_MAX / 1024} KB as JSON.`);
  return { ...p, value: o.value };
}

// ---------------------------------------------------------------------------------------------
// Search reasons

type ReasonField = 'title' | 'alias' | 'tag' | 'body' | 'path';

/** The fields the full-text search matches on (the index keeps no aliases, tags or paths in it). */
const SEARCHED: readonly ReasonField[] = ['title', 'body'];

interface FieldText {
  field: ReasonField;
  text: string;
  /** Shown in the reason: the title, alias, tag or path (a markdown body gets a snippet instead). */
  value?: string;
  snippet?: boolean;
}

interface Reason {
  field: ReasonField;
  terms: string[];
  snippet?: string;
  value?: string;
}

interface ReasonsArgs {
  query: string;
  folder: string;
  tags: string[];
  limit: number | null;
  noteId: string | null;
}

function parseReasons(args: JsonValue[]): ReasonsArgs {
  const o = objectArg(args);
  onlyKeys(o, ['query', 'folder', 'tags', 'limit', 'noteId']);
  const query = stringArg(o.query, 'query', { max: 1000 });
  if (toFtsQuery(query).terms.length === 0) throw new MemoError('VALIDATION', 'query has no letters or digits to search for.');
  let tags: string[] = [];
  if (o.tags !== undefined) {
    if (!Array.isArray(o.tags) || o.tags.length > 20) throw new MemoError('VALIDATION', 'tags must be a list of at most 20 tags.');
    tags = [...new Set(o.tags.map((t, i) => normalizeTag(stringArg(t, `tags[${i}]`, { max: 200 }))).filter(Boolean))];
  }
  const noteId = o.noteId === undefined ? null : noteArg(o.noteId);
  let limit: number | null = null;
  if (o.limit !== undefined) {
    if (noteId !== null) throw new MemoError('VALIDATION', 'limit does not apply with noteId (the answer is about that one note).');
    if (typeof o.limit !== 'number' || !Number.isInteger(o.limit) || o.limit < 1 || o.limit > REASONS_MAX)
      throw new MemoError('VALIDATION', `limit must be a whole number from 1 to ${REASONS_MAX}.`);
    limit = o.limit;
  }
  return { query, folder: folderArg(o.folder), tags, limit, noteId };
}

/**
 * The body the index searched a note by, from the file as it is now: a markdown note's text after its
 * front matter; a filed file's name and type (what the index holds for it). Null when it cannot be
 * read now (gone since it was indexed, too large to edit): its reasons are then the other fields'.
 */
async function bodyOf(vault: Vault, ctx: ToolContext, note: NoteInfo): Promise<string | null> {
  if (note.file_type !== 'markdown') return `${note.title} ${note.file_type}`;
  try {
    return parseNote((await loadText(vault, ctx, note.path, 'read')).text).body;
  } catch (err) {
    // Gone, or too large: the index holds no body for it either. The sandbox's refusals stay errors.
    if ((isMemoError(err) && (err.code === 'NOT_FOUND' || err.code === 'VALIDATION')) || (err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** A note's fields as the reasons name them: title, aliases and tags as the index has them, the body from the file, the path. */
async function fieldsOf(vault: Vault, ctx: ToolContext, note: NoteInfo): Promise<FieldText[]> {
  const body = await bodyOf(vault, ctx, note);
  return [
    { field: 'title', text: note.title, value: note.title },
    ...(JSON.parse(note.aliases) as string[]).map((a): FieldText => ({ field: 'alias', text: a, value: a })),
    ...vault.index.tagsOf(note.seq).map((t): FieldText => ({ field: 'tag', text: t, value: t })),
    ...(body === null
      ? []
      : [note.file_type === 'markdown' ? { field: 'body' as const, text: body, snippet: true } : { field: 'body' as const, text: body, value: body }]),
    { field: 'path', text: note.path, value: note.path },
  ];
}

/** Each note's reasons and the terms neither its title nor its body holds, judged in one pass by the index (VaultIndex.termsIn). */
async function explain(vault: Vault, ctx: ToolContext, notes: NoteInfo[], query: string) {
  const fields = await Promise.all(notes.map((n) => fieldsOf(vault, ctx, n)));
  const { terms, found } = vault.index.termsIn(query, fields.flat());
  let at = 0;
  const explained = fields.map((fs) => {
    const reasons: Reason[] = [];
    const searched = new Set<string>();
    for (const f of fs) {
      const hit = found[at++]!;
      if (!hit.terms.length) continue;
      if (SEARCHED.includes(f.field)) for (const t of hit.terms) searched.add(t);
      reasons.push({
        field: f.field,
        terms: hit.terms,
        ...(hit.snippet ? { snippet: hit.snippet } : {}),
        ...(f.value !== undefined ? { value: f.value } : {}),
      });
    }
    return { reasons, missing: [...new Set(terms.filter((t) => !searched.has(t)))] };
  });
  return { terms, explained };
}

/** The filters a note does not pass: not under the folder, or lacking one of the tags (a tag also covers its nested tags). */
function excludedBy(vault: Vault, note: NoteInfo, p: ReasonsArgs): Array<'folder' | 'tags'> {
  const out: Array<'folder' | 'tags'> = [];
  if (p.folder && !note.path.startsWith(`${p.folder}/`)) out.push('folder');
  const has = vault.index.tagsOf(note.seq);
  if (p.tags.some((t) => !has.some((h) => h === t || h.startsWith(`${t}/`)))) out.push('tags');
  return out;
}

async function searchReasons(p: ReasonsArgs, ctx: ToolContext): Promise<Record<string, unknown>> {
  const vault = await vaultOf(ctx);
  const filters = { ...(p.folder ? { folder: p.folder } : {}), ...(p.tags.length ? { tags: p.tags } : {}) };
  if (p.noteId !== null) {
    const { note } = vault.find(p.noteId);
    // The search itself, narrowed to this note: whether it is found is the index's answer, filters included.
    const matches = vault.index.search({ query: p.query, limit: 1, seq: note.seq, ...filters }).hits.length > 0;
    const { terms, explained } = await explain(vault, ctx, [note], p.query);
    const { reasons, missing } = explained[0]!;
    const excluded = matches ? [] : excludedBy(vault, note, p);
    const why = matches
      ? 'matches'
      : [missing.length ? `lacks ${missing.map(shown).join(', ')}` : '', excluded.length ? `is outside the ${excluded.join(' and ')} filter` : '']
          .filter(Boolean)
          .join(' and ') || 'does not match';
    return {
      terms,
      note: brief(note),
      matches,
      reasons,
      missing,
      ...(excluded.length ? { excluded } : {}),
      summary: `${note.path} ${why}`,
    };
  }
  const { hits } = vault.index.search({ query: p.query, limit: p.limit ?? REASONS_DEFAULT, ...filters });
  const notes = hits.map((h) => vault.index.note({ seq: h.seq })).filter((n): n is NoteInfo => n !== undefined);
  const { terms, explained } = await explain(vault, ctx, notes, p.query);
  const results = notes.map((n, i) => ({ ...brief(n), reasons: explained[i]!.reasons }));
  return { terms, results, count: results.length, summary: `${plural(results.length, 'result')} for ${shown(p.query)}, with why each matched` };
}

// ---------------------------------------------------------------------------------------------

export const BRIDGE_PROPERTY_OPS: BridgeOp[] = [
  op<string>({
    name: 'properties.list',
    effect: 'read',
    usage:
      "args [] or [{folder?}] -> {properties: [{name, types: ['text'|'number'|'boolean'|'list'|'date'|'object'], count}], count} (every front matter key, with how many notes use it, most used first)",
    parse: (args) => {
      if (args.length > 1) throw new MemoError('VALIDATION', 'it takes at most one argument, {folder?}.');
      if (!args.length) return '';
      const o = objectArg(args);
      onlyKeys(o, ['folder']);
      return folderArg(o.folder);
    },
    run: async (folder, ctx) => {
      const properties = (await vaultOf(ctx)).index.properties(folder);
      return { properties, count: properties.length, summary: `${plural(properties.length, 'property', 'properties')} in ${folder || 'the vault'}` };
    },
  }),
  op<string>({
    name: 'properties.get',
    effect: 'read',
    usage: 'args [{noteId}] (its id, path or title) -> {note: {id, path, title}, properties: {...}} (the front matter as the file holds it now)',
    parse: (args) => {
      const o = objectArg(args);
      onlyKeys(o, ['noteId']);
      return noteArg(o.noteId);
    },
    run: async (noteId, ctx) => {
      const vault = await vaultOf(ctx);
      const { note } = vault.find(noteId);
      requireMarkdown(note, 'properties.get');
      const { fm } = frontMatterOf((await loadText(vault, ctx, note.path, 'read')).text, note.path);
      return { note: brief(note), properties: fm, summary: `${plural(Object.keys(fm).length, 'property', 'properties')} of ${note.path}` };
    },
  }),
  op<EditArgs>({
    name: 'properties.set',
    effect: 'write',
    usage: `args [{noteId, name, value}] (name up to ${NAME_MAX} characters, not tags; value any JSON, null included) -> {note: {id, path, title}, name, value, changed, properties: {...}}`,
    parse: (args) => editArgs(args, true),
    check: async (p, ctx) => void (await planEdit(await vaultOf(ctx), ctx, p, 'properties.set')),
    preview: async (p, ctx) => {
      const plan = await planEdit(await vaultOf(ctx), ctx, p, 'properties.set');
      rememberPreview(ctx, [plan.file]);
      return editPreview(plan, p);
    },
    run: async (p, ctx) => {
      const r = await runEdit(ctx, p, 'properties.set');
      return { ...r, name: p.name, value: p.value as JsonValue, summary: `${r.changed ? 'set' : 'kept'} ${p.name} on ${r.note.path}` };
    },
  }),
  op<EditArgs>({
    name: 'properties.remove',
    effect: 'write',
    usage: 'args [{noteId, name}] -> {note: {id, path, title}, name, properties: {...}} (success false, NOT_FOUND, when the note has no such property)',
    parse: (args) => editArgs(args, false),
    check: async (p, ctx) => void (await planEdit(await vaultOf(ctx), ctx, p, 'properties.remove')),
    preview: async (p, ctx) => {
      const plan = await planEdit(await vaultOf(ctx), ctx, p, 'properties.remove');
      rememberPreview(ctx, [plan.file]);
      return editPreview(plan, p);
    },
    run: async (p, ctx) => {
      const { note, properties } = await runEdit(ctx, p, 'properties.remove');
      return { note, name: p.name, properties, summary: `removed ${p.name} from ${note.path}` };
    },
  }),
  op<ReasonsArgs>({
    name: 'search.reasons',
    effect: 'read',
    usage:
      "args [{query, folder?, tags?, limit?, noteId?}] -> {terms, results: [{id, path, title, reasons: [{field: 'title'|'alias'|'tag'|'body'|'path', terms, snippet?, value?}]}], count}; with noteId -> {terms, note, matches, reasons, missing, excluded?} (missing: terms neither its title nor its body holds, the only fields the search reads)",
    parse: parseReasons,
    run: searchReasons,
  }),
];
