/**
 * Desktop bridge operations: saved filters, bookmarks and folder views (see bridge.ts for the
 * contract every operation keeps). All three live in the planning database beside tasks and the
 * inbox (so with MEMO_DATABASE_URL every instance shares them) and name vault items by their stable
 * ids, so a rename or a move keeps them.
 *
 * - A saved filter is a search kept under a name: the filters of vault_search_notes (query, folder,
 *   tags, file types). `savedFilters.run` runs it through the same search.
 * - A bookmark points at a note or filed file, a task, a project or a web address. A bookmark whose
 *   item is gone is listed as missing, never dropped behind the person's back.
 * - A folder view is how a folder is shown (list, cards or table; the sort; subfolders' notes or
 *   not). A folder without one is shown the default way; reset goes back to it.
 *
 * Writes show field changes and refuse to run when what the preview showed changed meanwhile.
 */
import type { EntityManager } from 'typeorm';
import { MemoError, type JsonValue, type ToolContext } from 'memo-kernel/pack';
import { booleanArg, noArgs, oneObject, op, stringArg, type BridgeOp } from './bridge-op.js';
import { checkHttpUrl } from './bridge-inbox.js';
import { normalizeTag } from './markdown.js';
import {
  checkFields,
  cleanName,
  fieldsPreview,
  inPlanning,
  newId,
  now,
  pick,
  planningDb,
  rememberFields,
  renumber,
  reordered,
  schema,
} from './planning-store.js';
import { findProject } from './project-tools.js';
import { ref, searchNotes } from './read-tools.js';
import { runtimeOf } from './runtime.js';
import type { BookmarkRow, FolderViewRow, SavedFilterRow } from './schema.js';
import { findTask } from './task-tools.js';
import { cleanRelative, shown } from './vault.js';

const em = async (ctx: ToolContext): Promise<EntityManager> => (await planningDb(ctx)).manager;
const vaultOf = (ctx: ToolContext) => runtimeOf(ctx).vault(ctx);

function idListArg(v: JsonValue | undefined, what: string): string[] {
  if (!Array.isArray(v) || v.length === 0) throw new MemoError('VALIDATION', `${what} must be a list of ids, in the order wanted.`);
  if (v.length > 1000) throw new MemoError('VALIDATION', `${what} lists at most 1000 ids.`);
  return v.map((x, i) => stringArg(x, `${what}[${i}]`, { max: 200 }));
}

// ---------------------------------------------------------------------------------------------
// Saved filters

const FILE_TYPES = ['markdown', 'pdf', 'image', 'audio', 'video'] as const;
const FILTER_KEYS = ['name', 'query', 'folder', 'tags', 'fileTypes'] as const;

interface FilterFields {
  name?: string;
  query?: string;
  folder?: string | null;
  tags?: string[];
  fileTypes?: string[];
}

function filterFields(o: Record<string, JsonValue>): FilterFields {
  const out: FilterFields = {};
  if (o.name !== undefined) out.name = cleanName(stringArg(o.name, 'name', { max: 200 }), 'filter name');
  if (o.query !== undefined) {
    if (typeof o.query !== 'string' || o.query.length > 2000) throw new MemoError('VALIDATION', 'query must be text of at most 2000 characters.');
    out.query = o.query.trim();
  }
  if (o.folder !== undefined)
    out.folder = o.folder === null || o.folder === '' ? null : cleanRelative(stringArg(o.folder, 'folder', { max: 1000 }), 'folder') || null;
  if (o.tags !== undefined) {
    if (!Array.isArray(o.tags) || o.tags.length > 20) throw new MemoError('VALIDATION', 'tags must be a list of at most 20 tags.');
    out.tags = [...new Set(o.tags.map((t, i) => normalizeTag(stringArg(t, `tags[${i}]`, { max: 200 }))).filter(Boolean))];
  }
  if (o.fileTypes !== undefined) {
    if (!Array.isArray(o.fileTypes)) throw new MemoError('VALIDATION', `fileTypes must be a list of ${FILE_TYPES.join(', ')}.`);
    out.fileTypes = [
      ...new Set(
        o.fileTypes.map((t) => {
          if (typeof t !== 'string' || !(FILE_TYPES as readonly string[]).includes(t))
            throw new MemoError('VALIDATION', `fileTypes must be a list of ${FILE_TYPES.join(', ')}.`);
          return t;
        }),
      ),
    ];
  }
  return out;
}

const jsonList = (text: string): string[] => {
  try {
    const v: unknown = JSON.parse(text);
    return Array.isArray(v) ? v.map(String) : [];
  } catch {
    return [];
  }
};

const filterOut = (r: SavedFilterRow) => ({
  id: r.id,
  name: r.name,
  query: r.query,
  folder: r.folder,
  tags: jsonList(r.tags),
  fileTypes: jsonList(r.file_types),
  sort_order: r.sort_order,
  created_at: r.created_at,
  updated_at: r.updated_at,
});

type FilterView = ReturnType<typeof filterOut>;

/** The fields a preview compares (what a person reads, not the row's text). */
const filterShown = (f: Pick<FilterView, 'name' | 'query' | 'folder' | 'tags' | 'fileTypes'>) => ({
  name: f.name,
  query: f.query,
  folder: f.folder,
  tags: f.tags,
  fileTypes: f.fileTypes,
});

async function allFilters(m: EntityManager): Promise<SavedFilterRow[]> {
  const { SavedFilterRow } = await schema();
  return m.find(SavedFilterRow, { order: { sort_order: 'ASC', created_at: 'ASC' } });
}

const findFilter = async (m: EntityManager, refText: string) => pick(await allFilters(m), refText, 'saved filter', 'name');

function checkFreeFilterName(rows: SavedFilterRow[], name: string, self?: string): void {
  const clash = rows.find((r) => r.id !== self && r.name.trim().toLowerCase() === name.toLowerCase());
  if (clash) throw new MemoError('CONFLICT', `A saved filter is already called ${shown(clash.name)} (id ${clash.id}).`, { details: { filter: clash.id } });
}

/** A filter that names no criterion finds every note: refused, so a saved filter always filters. */
function checkSomething(f: Pick<FilterView, 'query' | 'folder' | 'tags' | 'fileTypes'>): void {
  if (!f.query && !f.folder && !f.tags.length && !f.fileTypes.length)
    throw new MemoError('VALIDATION', 'a saved filter needs a query, a folder, tags or fileTypes: with none it would find everything.');
}

interface FilterCreate extends Required<Pick<FilterFields, 'name'>> {
  fields: FilterFields;
}

const createFilter = op<FilterCreate>({
  name: 'savedFilters.create',
  effect: 'write',
  usage: 'args [{name, query?, folder?, tags?, fileTypes?}] -> {filter}',
  parse: (args) => {
    const fields = filterFields(oneObject(args, FILTER_KEYS));
    if (!fields.name) throw new MemoError('VALIDATION', 'name is missing.');
    checkSomething({ query: fields.query ?? '', folder: fields.folder ?? null, tags: fields.tags ?? [], fileTypes: fields.fileTypes ?? [] });
    return { name: fields.name, fields };
  },
  check: async (p, ctx) => checkFreeFilterName(await allFilters(await em(ctx)), p.name),
  preview: (p) =>
    Promise.resolve(
      fieldsPreview(
        'New saved filter',
        {},
        filterShown({
          name: p.name,
          query: p.fields.query ?? '',
          folder: p.fields.folder ?? null,
          tags: p.fields.tags ?? [],
          fileTypes: p.fields.fileTypes ?? [],
        }),
      ),
    ),
  run: inPlanning(async (m, p: FilterCreate) => {
    const { SavedFilterRow } = await schema();
    const rows = await allFilters(m);
    checkFreeFilterName(rows, p.name);
    const at = now();
    const row = m.create(SavedFilterRow, {
      id: newId(),
      name: p.name,
      query: p.fields.query ?? '',
      folder: p.fields.folder ?? null,
      tags: JSON.stringify(p.fields.tags ?? []),
      file_types: JSON.stringify(p.fields.fileTypes ?? []),
      sort_order: rows.length,
      created_at: at,
      updated_at: at,
    });
    await m.insert(SavedFilterRow, row);
    return { filter: filterOut(row), summary: `saved the filter ${shown(p.name)}` };
  }),
});

interface FilterUpdate {
  id: string;
  fields: FilterFields;
}

function planFilterUpdate(row: SavedFilterRow, fields: FilterFields) {
  const before = filterShown(filterOut(row));
  const after = { ...before, ...fields };
  checkSomething(after);
  return { before, after };
}

const updateFilter = op<FilterUpdate>({
  name: 'savedFilters.update',
  effect: 'write',
  usage: 'args [{id, name?, query?, folder?, tags?, fileTypes?}] (id or name; folder null clears it) -> {filter}',
  parse: (args) => {
    const o = oneObject(args, ['id', ...FILTER_KEYS]);
    const id = stringArg(o.id, 'id', { max: 200 });
    const fields = filterFields(o);
    if (!Object.keys(fields).length) throw new MemoError('VALIDATION', `say what to change: ${FILTER_KEYS.join(', ')}.`);
    return { id, fields };
  },
  check: async (p, ctx) => {
    const m = await em(ctx);
    const row = await findFilter(m, p.id);
    if (p.fields.name) checkFreeFilterName(await allFilters(m), p.fields.name, row.id);
    planFilterUpdate(row, p.fields);
  },
  preview: async (p, ctx) => {
    const { before, after } = planFilterUpdate(await findFilter(await em(ctx), p.id), p.fields);
    rememberFields(ctx, before);
    return fieldsPreview('Saved filter', before, after);
  },
  run: inPlanning(async (m, p: FilterUpdate, ctx) => {
    const { SavedFilterRow } = await schema();
    const row = await findFilter(m, p.id);
    const { before, after } = planFilterUpdate(row, p.fields);
    checkFields(ctx, 'The saved filter', before);
    if (p.fields.name) checkFreeFilterName(await allFilters(m), p.fields.name, row.id);
    await m.update(
      SavedFilterRow,
      { id: row.id },
      {
        name: after.name,
        query: after.query,
        folder: after.folder,
        tags: JSON.stringify(after.tags),
        file_types: JSON.stringify(after.fileTypes),
        updated_at: now(),
      },
    );
    const saved = (await m.findOneBy(SavedFilterRow, { id: row.id }))!;
    const changed = Object.keys(after).filter((k) => JSON.stringify(before[k as keyof typeof before]) !== JSON.stringify(after[k as keyof typeof after]));
    return { filter: filterOut(saved), changed, summary: `updated the saved filter ${shown(saved.name)}` };
  }),
});

const deleteFilter = op<{ id: string }>({
  name: 'savedFilters.delete',
  effect: 'delete',
  usage: 'args [{id}] (id or name) -> {deleted: {id, name}}; the notes it found are not touched',
  parse: (args) => ({ id: stringArg(oneObject(args, ['id']).id, 'id', { max: 200 }) }),
  check: async (p, ctx) => void (await findFilter(await em(ctx), p.id)),
  preview: async (p, ctx) => {
    const row = await findFilter(await em(ctx), p.id);
    const f = filterOut(row);
    return {
      kind: 'delete',
      text: `Deletes the saved filter ${shown(f.name)} (${[f.query && `query ${shown(f.query)}`, f.folder && `folder ${f.folder}`, f.tags.length && `tags ${f.tags.map((t) => `#${t}`).join(' ')}`, f.fileTypes.length && `types ${f.fileTypes.join(', ')}`].filter(Boolean).join(', ')}). The notes it finds are not touched.`,
    };
  },
  run: inPlanning(async (m, p: { id: string }) => {
    const { SavedFilterRow } = await schema();
    const row = await findFilter(m, p.id);
    await m.delete(SavedFilterRow, { id: row.id });
    await renumber(m, SavedFilterRow, await allFilters(m));
    return { deleted: { id: row.id, name: row.name }, summary: `deleted the saved filter ${shown(row.name)}` };
  }),
});

const reorderFilters = op<{ ids: string[] }>({
  name: 'savedFilters.reorder',
  effect: 'write',
  usage: 'args [{ids}] (ids or names, the order wanted; the rest keep theirs after them) -> {filters}',
  parse: (args) => ({ ids: idListArg(oneObject(args, ['ids']).ids, 'ids') }),
  check: async (p, ctx) => {
    const rows = await allFilters(await em(ctx));
    reordered(rows, p.ids, (r) => pick(rows, r, 'saved filter', 'name'));
  },
  preview: async (p, ctx) => {
    const rows = await allFilters(await em(ctx));
    const before = rows.map((r) => r.name);
    rememberFields(ctx, { order: before });
    const after = reordered(rows, p.ids, (r) => pick(rows, r, 'saved filter', 'name')).map((r) => r.name);
    return fieldsPreview('Saved filters', { order: before }, { order: after });
  },
  run: inPlanning(async (m, p: { ids: string[] }, ctx) => {
    const { SavedFilterRow } = await schema();
    const rows = await allFilters(m);
    checkFields(ctx, 'The saved filters', { order: rows.map((r) => r.name) });
    await renumber(
      m,
      SavedFilterRow,
      reordered(rows, p.ids, (r) => pick(rows, r, 'saved filter', 'name')),
    );
    const filters = (await allFilters(m)).map(filterOut);
    return { filters, summary: `reordered ${filters.length} saved filter${filters.length === 1 ? '' : 's'}` };
  }),
});

const FILTER_OPS: BridgeOp[] = [
  op<null>({
    name: 'savedFilters.list',
    effect: 'read',
    usage: 'args [] -> {filters: [{id, name, query, folder, tags, fileTypes}], count}',
    parse: noArgs,
    run: async (_p, ctx) => {
      const filters = (await allFilters(await em(ctx))).map(filterOut);
      return { filters, count: filters.length, summary: `${filters.length} saved filter${filters.length === 1 ? '' : 's'}` };
    },
  }),
  op<{ id: string; limit: number }>({
    name: 'savedFilters.run',
    effect: 'read',
    usage: 'args [{id, limit?}] (id or name; limit 1-100, default 20) -> {filter, results, count}: the notes it finds now, as vault_search_notes gives them',
    parse: (args) => {
      const o = oneObject(args, ['id', 'limit']);
      const limit = o.limit === undefined ? 20 : o.limit;
      if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > 100)
        throw new MemoError('VALIDATION', 'limit must be a whole number from 1 to 100.');
      return { id: stringArg(o.id, 'id', { max: 200 }), limit };
    },
    run: async (p, ctx) => {
      const f = filterOut(await findFilter(await em(ctx), p.id));
      const found = await searchNotes(
        {
          query: f.query,
          limit: p.limit,
          ...(f.folder ? { folder: f.folder } : {}),
          ...(f.tags.length ? { tags: f.tags } : {}),
          ...(f.fileTypes.length ? { file_types: f.fileTypes as Array<(typeof FILE_TYPES)[number]> } : {}),
        },
        ctx,
      );
      return {
        filter: f,
        results: found.results,
        count: found.count,
        summary: `${found.count} result${found.count === 1 ? '' : 's'} for the saved filter ${shown(f.name)}`,
      };
    },
  }),
  createFilter,
  updateFilter,
  deleteFilter,
  reorderFilters,
];

// ---------------------------------------------------------------------------------------------
// Bookmarks

const BOOKMARK_TYPES = ['note', 'file', 'task', 'project', 'url'] as const;
type BookmarkType = (typeof BOOKMARK_TYPES)[number];

interface BookmarkTarget {
  item_type: BookmarkType;
  item_id: string;
  title: string;
  path?: string;
}

/** The item a bookmark names, as it exists now (NOT_FOUND otherwise); a url is checked as an address. */
async function bookmarkTarget(ctx: ToolContext, type: BookmarkType, itemId: string): Promise<BookmarkTarget> {
  if (type === 'url') {
    const url = checkHttpUrl(itemId);
    return { item_type: type, item_id: url, title: url };
  }
  if (type === 'note' || type === 'file') {
    const { note } = (await vaultOf(ctx)).find(itemId);
    if (type === 'note' && note.file_type !== 'markdown')
      throw new MemoError('VALIDATION', `${shown(note.path)} is a ${note.file_type} file, not a note: bookmark it with itemType file.`);
    if (type === 'file' && note.file_type === 'markdown') throw new MemoError('VALIDATION', `${shown(note.path)} is a note: bookmark it with itemType note.`);
    return { item_type: type, item_id: note.id, title: note.title, path: note.path };
  }
  const m = await em(ctx);
  const row = type === 'task' ? await findTask(m, itemId) : await findProject(m, itemId);
  return { item_type: type, item_id: row.id, title: type === 'task' ? (row as { title: string }).title : (row as { name: string }).name };
}

async function allBookmarks(m: EntityManager): Promise<BookmarkRow[]> {
  const { BookmarkRow } = await schema();
  return m.find(BookmarkRow, { order: { sort_order: 'ASC', created_at: 'ASC' } });
}

async function findBookmark(m: EntityManager, id: string): Promise<BookmarkRow> {
  const row = (await allBookmarks(m)).find((r) => r.id === id);
  if (!row) throw new MemoError('NOT_FOUND', `No bookmark with id ${shown(id)} (bookmarks.list lists them).`, { details: { bookmark: id } });
  return row;
}

/** A bookmark as it stands: the item's reference now, or `missing` when the item is gone. */
async function bookmarkOut(ctx: ToolContext, m: EntityManager, r: BookmarkRow) {
  const base = { id: r.id, item_type: r.item_type, item_id: r.item_id, title: r.title, sort_order: r.sort_order, created_at: r.created_at };
  if (r.item_type === 'url') return { ...base, url: r.item_id };
  if (r.item_type === 'note' || r.item_type === 'file') {
    const n = (await vaultOf(ctx)).index.note({ id: r.item_id });
    return n ? { ...base, item: ref(n) } : { ...base, missing: true };
  }
  const { TaskRow, ProjectRow } = await schema();
  if (r.item_type === 'task') {
    const t = await m.findOneBy(TaskRow, { id: r.item_id });
    return t ? { ...base, item: { id: t.id, title: t.title, done: t.completed_at !== null } } : { ...base, missing: true };
  }
  const pr = await m.findOneBy(ProjectRow, { id: r.item_id });
  return pr ? { ...base, item: { id: pr.id, name: pr.name } } : { ...base, missing: true };
}

interface BookmarkAdd {
  itemType: BookmarkType;
  itemId: string;
  title?: string;
}

function bookmarkTypeArg(v: JsonValue | undefined): BookmarkType {
  if (typeof v !== 'string' || !(BOOKMARK_TYPES as readonly string[]).includes(v))
    throw new MemoError('VALIDATION', `itemType must be one of ${BOOKMARK_TYPES.join(', ')}.`);
  return v as BookmarkType;
}

/** The bookmark already on this item, if any (one bookmark per item). */
function existingBookmark(rows: BookmarkRow[], t: BookmarkTarget): BookmarkRow | undefined {
  return rows.find((r) => r.item_type === t.item_type && r.item_id === t.item_id);
}

function refuseTwice(rows: BookmarkRow[], t: BookmarkTarget): void {
  const twin = existingBookmark(rows, t);
  if (twin) throw new MemoError('CONFLICT', `${shown(t.title)} is already bookmarked (bookmark id ${twin.id}).`, { details: { bookmark: twin.id } });
}

const addBookmark = op<BookmarkAdd>({
  name: 'bookmarks.add',
  effect: 'write',
  usage: 'args [{itemType, itemId, title?}] (itemType note, file, task, project or url; itemId an id, a path or title, or the address) -> {bookmark}',
  parse: (args) => {
    const o = oneObject(args, ['itemType', 'itemId', 'title']);
    const itemType = bookmarkTypeArg(o.itemType);
    const itemId = stringArg(o.itemId, 'itemId', { max: 2000 });
    const title = stringArg(o.title, 'title', { optional: true, max: 500 });
    return { itemType, itemId, ...(title ? { title } : {}) };
  },
  check: async (p, ctx) => refuseTwice(await allBookmarks(await em(ctx)), await bookmarkTarget(ctx, p.itemType, p.itemId)),
  preview: async (p, ctx) => {
    const t = await bookmarkTarget(ctx, p.itemType, p.itemId);
    return fieldsPreview('New bookmark', {}, { item: `${t.item_type} ${t.title}${t.path ? ` (${t.path})` : ''}`, title: p.title ?? t.title });
  },
  run: inPlanning(async (m, p: BookmarkAdd, ctx) => {
    const { BookmarkRow } = await schema();
    const t = await bookmarkTarget(ctx, p.itemType, p.itemId);
    const rows = await allBookmarks(m);
    refuseTwice(rows, t);
    const row = m.create(BookmarkRow, {
      id: newId(),
      item_type: t.item_type,
      item_id: t.item_id,
      title: p.title ?? t.title,
      sort_order: rows.length,
      created_at: now(),
    });
    await m.insert(BookmarkRow, row);
    return { bookmark: await bookmarkOut(ctx, m, row), summary: `bookmarked ${shown(row.title ?? t.title)}` };
  }),
});

const removeBookmark = op<{ id: string }>({
  name: 'bookmarks.remove',
  effect: 'delete',
  usage: 'args [{id}] (the bookmark id from bookmarks.list) -> {removed: {id, title}}; the item itself is not touched',
  parse: (args) => ({ id: stringArg(oneObject(args, ['id']).id, 'id', { max: 200 }) }),
  check: async (p, ctx) => void (await findBookmark(await em(ctx), p.id)),
  preview: async (p, ctx) => {
    const row = await findBookmark(await em(ctx), p.id);
    return {
      kind: 'delete',
      text: `Removes the bookmark ${shown(row.title ?? row.item_id)} (${row.item_type}). The ${row.item_type === 'url' ? 'address' : row.item_type} itself is not touched.`,
    };
  },
  run: inPlanning(async (m, p: { id: string }) => {
    const { BookmarkRow } = await schema();
    const row = await findBookmark(m, p.id);
    await m.delete(BookmarkRow, { id: row.id });
    await renumber(m, BookmarkRow, await allBookmarks(m));
    return { removed: { id: row.id, title: row.title }, summary: `removed the bookmark ${shown(row.title ?? row.item_id)}` };
  }),
});

const BOOKMARK_OPS: BridgeOp[] = [
  op<null>({
    name: 'bookmarks.list',
    effect: 'read',
    usage: 'args [] -> {bookmarks: [{id, item_type, item_id, title, item | url | missing}], count}',
    parse: noArgs,
    run: async (_p, ctx) => {
      const m = await em(ctx);
      const bookmarks = [];
      for (const r of await allBookmarks(m)) bookmarks.push(await bookmarkOut(ctx, m, r));
      const missing = bookmarks.filter((b) => 'missing' in b).length;
      return {
        bookmarks,
        count: bookmarks.length,
        summary: `${bookmarks.length} bookmark${bookmarks.length === 1 ? '' : 's'}${missing ? ` (${missing} of them point at an item that is gone)` : ''}`,
      };
    },
  }),
  addBookmark,
  removeBookmark,
  op<{ ids: string[] }>({
    name: 'bookmarks.reorder',
    effect: 'write',
    usage: 'args [{ids}] (bookmark ids in the order wanted; the rest keep theirs after them) -> {bookmarks}',
    parse: (args) => ({ ids: idListArg(oneObject(args, ['ids']).ids, 'ids') }),
    check: async (p, ctx) => {
      const m = await em(ctx);
      for (const id of p.ids) await findBookmark(m, id);
    },
    preview: async (p, ctx) => {
      const rows = await allBookmarks(await em(ctx));
      const before = rows.map((r) => r.title ?? r.item_id);
      rememberFields(ctx, { order: rows.map((r) => r.id) });
      const after = reordered(rows, p.ids, (id) => rows.find((r) => r.id === id)!).map((r) => r.title ?? r.item_id);
      return fieldsPreview('Bookmarks', { order: before }, { order: after });
    },
    run: inPlanning(async (m, p: { ids: string[] }, ctx) => {
      const { BookmarkRow } = await schema();
      const rows = await allBookmarks(m);
      checkFields(ctx, 'The bookmarks', { order: rows.map((r) => r.id) });
      const resolve = (id: string) => {
        const r = rows.find((x) => x.id === id);
        if (!r) throw new MemoError('NOT_FOUND', `No bookmark with id ${shown(id)}.`);
        return r;
      };
      await renumber(m, BookmarkRow, reordered(rows, p.ids, resolve));
      const bookmarks = [];
      for (const r of await allBookmarks(m)) bookmarks.push(await bookmarkOut(ctx, m, r));
      return { bookmarks, summary: `reordered ${bookmarks.length} bookmark${bookmarks.length === 1 ? '' : 's'}` };
    }),
  }),
];

// ---------------------------------------------------------------------------------------------
// Folder views

const VIEWS = ['list', 'cards', 'table'] as const;
const SORT_BY = ['title', 'modified', 'created'] as const;
const SORT_DIRECTIONS = ['asc', 'desc'] as const;

interface FolderView {
  folder: string;
  view: (typeof VIEWS)[number];
  sortBy: (typeof SORT_BY)[number];
  sortDirection: (typeof SORT_DIRECTIONS)[number];
  showSubfolders: boolean;
}

const DEFAULT_VIEW: Omit<FolderView, 'folder'> = { view: 'list', sortBy: 'title', sortDirection: 'asc', showSubfolders: false };

const viewOut = (r: FolderViewRow): FolderView & { updated_at: string } => ({
  folder: r.folder,
  view: r.view as FolderView['view'],
  sortBy: r.sort_by as FolderView['sortBy'],
  sortDirection: r.sort_direction as FolderView['sortDirection'],
  showSubfolders: Boolean(r.show_subfolders),
  updated_at: r.updated_at,
});

function oneOf<T extends string>(v: JsonValue | undefined, what: string, allowed: readonly T[]): T {
  if (typeof v !== 'string' || !(allowed as readonly string[]).includes(v)) throw new MemoError('VALIDATION', `${what} must be one of ${allowed.join(', ')}.`);
  return v as T;
}

function folderArg(v: JsonValue | undefined): string {
  if (v === '') return '';
  return cleanRelative(stringArg(v, 'folder', { max: 1000 }), 'folder');
}

/** The folder as the vault has it: NOT_FOUND when there is no such folder. */
async function existingFolder(ctx: ToolContext, folder: string): Promise<string> {
  const vault = await vaultOf(ctx);
  const { resolved, rel } = await vault.resolve(ctx, folder, 'list', 'folder');
  if (!resolved.exists) throw new MemoError('NOT_FOUND', `There is no folder ${shown(folder)} in the vault.`);
  if (!resolved.isDirectory) throw new MemoError('VALIDATION', `${shown(folder)} is a file, not a folder.`);
  return rel;
}

async function viewOf(m: EntityManager, folder: string): Promise<{ stored: boolean; view: FolderView }> {
  const { FolderViewRow } = await schema();
  const row = await m.findOneBy(FolderViewRow, { folder });
  if (!row) return { stored: false, view: { folder, ...DEFAULT_VIEW } };
  const { updated_at: _at, ...view } = viewOut(row);
  return { stored: true, view };
}

type ViewSet = { folder: string } & Partial<Omit<FolderView, 'folder'>>;

const viewFields = ({ folder: _f, ...rest }: FolderView) => rest;

const setView = op<ViewSet>({
  name: 'folderViews.set',
  effect: 'write',
  usage: `args [{folder, view?, sortBy?, sortDirection?, showSubfolders?}] (folder '' is the vault's top; view ${VIEWS.join('|')}, sortBy ${SORT_BY.join('|')}, sortDirection asc|desc) -> {view}`,
  parse: (args) => {
    const o = oneObject(args, ['folder', 'view', 'sortBy', 'sortDirection', 'showSubfolders']);
    const out: ViewSet = { folder: folderArg(o.folder) };
    if (o.view !== undefined) out.view = oneOf(o.view, 'view', VIEWS);
    if (o.sortBy !== undefined) out.sortBy = oneOf(o.sortBy, 'sortBy', SORT_BY);
    if (o.sortDirection !== undefined) out.sortDirection = oneOf(o.sortDirection, 'sortDirection', SORT_DIRECTIONS);
    if (o.showSubfolders !== undefined) out.showSubfolders = booleanArg(o.showSubfolders, 'showSubfolders');
    if (Object.keys(out).length === 1) throw new MemoError('VALIDATION', 'say what to set: view, sortBy, sortDirection or showSubfolders.');
    return out;
  },
  check: async (p, ctx) => void (await existingFolder(ctx, p.folder)),
  preview: async (p, ctx) => {
    const folder = await existingFolder(ctx, p.folder);
    const { view } = await viewOf(await em(ctx), folder);
    const before = viewFields(view);
    rememberFields(ctx, before);
    return fieldsPreview(`View of ${folder || 'the vault'}`, before, { ...before, ...viewFields({ ...view, ...p, folder }) });
  },
  run: inPlanning(async (m, p: ViewSet, ctx) => {
    const { FolderViewRow } = await schema();
    const folder = await existingFolder(ctx, p.folder);
    const { stored, view } = await viewOf(m, folder);
    checkFields(ctx, 'The folder view', viewFields(view));
    const next: FolderView = { ...view, ...p, folder };
    const row = { folder, view: next.view, sort_by: next.sortBy, sort_direction: next.sortDirection, show_subfolders: next.showSubfolders, updated_at: now() };
    if (stored) await m.update(FolderViewRow, { folder }, row);
    else await m.insert(FolderViewRow, row);
    return { view: next, summary: `${folder || 'the vault'} is shown as ${next.view}, by ${next.sortBy} ${next.sortDirection}` };
  }),
});

const resetView = op<{ folder: string }>({
  name: 'folderViews.reset',
  effect: 'write',
  usage: 'args [{folder}] -> {view}: the folder is shown the default way again (list, by title, ascending)',
  parse: (args) => ({ folder: folderArg(oneObject(args, ['folder']).folder) }),
  check: async (p, ctx) => {
    const { stored } = await viewOf(await em(ctx), p.folder);
    if (!stored) throw new MemoError('NOT_FOUND', `${shown(p.folder || 'The vault')} has no view of its own: it is already shown the default way.`);
  },
  preview: async (p, ctx) => {
    const { view } = await viewOf(await em(ctx), p.folder);
    rememberFields(ctx, viewFields(view));
    return fieldsPreview(`View of ${p.folder || 'the vault'}`, viewFields(view), DEFAULT_VIEW);
  },
  run: inPlanning(async (m, p: { folder: string }, ctx) => {
    const { FolderViewRow } = await schema();
    const { stored, view } = await viewOf(m, p.folder);
    if (!stored) throw new MemoError('NOT_FOUND', `${shown(p.folder || 'The vault')} has no view of its own.`);
    checkFields(ctx, 'The folder view', viewFields(view));
    await m.delete(FolderViewRow, { folder: p.folder });
    return { view: { folder: p.folder, ...DEFAULT_VIEW }, summary: `${p.folder || 'the vault'} is shown the default way again` };
  }),
});

const VIEW_OPS: BridgeOp[] = [
  op<{ folder: string }>({
    name: 'folderViews.get',
    effect: 'read',
    usage: "args [{folder}] ('' is the vault's top) -> {view: {folder, view, sortBy, sortDirection, showSubfolders}, stored}",
    parse: (args) => ({ folder: folderArg(oneObject(args, ['folder']).folder) }),
    run: async (p, ctx) => {
      const folder = await existingFolder(ctx, p.folder);
      return { ...(await viewOf(await em(ctx), folder)) };
    },
  }),
  op<null>({
    name: 'folderViews.list',
    effect: 'read',
    usage: 'args [] -> {views, count, defaults}: the folders with a view of their own (a folder not listed is shown by the defaults)',
    parse: noArgs,
    run: async (_p, ctx) => {
      const { FolderViewRow } = await schema();
      const views = (await (await em(ctx)).find(FolderViewRow, { order: { folder: 'ASC' } })).map(viewOut);
      return { views, count: views.length, defaults: DEFAULT_VIEW, summary: `${views.length} folder${views.length === 1 ? '' : 's'} with a view of their own` };
    },
  }),
  setView,
  resetView,
];

export const BRIDGE_ORGANIZE_OPS: BridgeOp[] = [...FILTER_OPS, ...BOOKMARK_OPS, ...VIEW_OPS];
