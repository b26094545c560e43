/**
 * Desktop bridge operations: tag categories (see bridge.ts for the contract every operation keeps).
 * Categories live in tag_categories; a tag's category is tags.category_id (a tags row is made for a
 * tag that is only used in notes when it is first put in a category). tags.reorder is the only way to
 * move a tag into a category; deleting a category keeps its tags, uncategorized.
 */
import type { EntityManager } from 'typeorm';
import { MemoError, type JsonValue, type ToolContext } from 'memo-kernel/pack';
import { normalizeTag } from './markdown.js';
import { objectArg, onlyKeys, noArgs, op, stringArg, type BridgeOp } from './bridge-op.js';
import { checkFields, cleanName, fieldRows, fieldsPreview, inIndex, indexDb, listed, rememberFields, schema } from './planning-store.js';
import type { TagCategoryRow } from './schema.js';
import { shown } from './vault.js';

const NAME_MAX = 100;
/** Tags one drag may move. */
const ASSIGN_MAX = 1000;

interface Category {
  id: number;
  name: string;
  sort_order: number;
  tag_count: number;
}

const em = async (ctx: ToolContext): Promise<EntityManager> => (await indexDb(ctx)).manager;

async function allCategories(m: EntityManager): Promise<TagCategoryRow[]> {
  const { TagCategoryRow } = await schema();
  return m.find(TagCategoryRow, { order: { sort_order: 'ASC', id: 'ASC' } });
}

/** Each category's tags (names, sorted), by category id. */
async function tagsByCategory(m: EntityManager): Promise<Map<number, string[]>> {
  const { TagRow } = await schema();
  const out = new Map<number, string[]>();
  for (const t of await m.find(TagRow, { order: { name: 'ASC' } })) {
    if (t.category_id === null) continue;
    out.set(t.category_id, [...(out.get(t.category_id) ?? []), t.name]);
  }
  return out;
}

async function categoriesOut(m: EntityManager): Promise<Category[]> {
  const tags = await tagsByCategory(m);
  return (await allCategories(m)).map((c) => ({ id: c.id, name: c.name, sort_order: c.sort_order, tag_count: tags.get(c.id)?.length ?? 0 }));
}

/** sort_order 0..n-1 in the given order, touching only the rows whose place changed (planning-store's renumber, for integer ids). */
async function renumberCategories(m: EntityManager, ordered: TagCategoryRow[]): Promise<void> {
  const { TagCategoryRow } = await schema();
  for (const [i, row] of ordered.entries()) {
    if (row.sort_order !== i) {
      await m.update(TagCategoryRow, { id: row.id }, { sort_order: i });
      row.sort_order = i;
    }
  }
}

function findCategory(rows: TagCategoryRow[], id: number): TagCategoryRow {
  const row = rows.find((c) => c.id === id);
  if (!row) throw new MemoError('NOT_FOUND', `No tag category with id ${id} (tags.listCategories lists them).`, { details: { category: id } });
  return row;
}

/** A category name not already taken, in any case, by another category. */
function checkFreeName(rows: TagCategoryRow[], name: string, self?: number): void {
  const clash = rows.find((c) => c.id !== self && c.name.trim().toLowerCase() === name.toLowerCase());
  if (clash) throw new MemoError('CONFLICT', `A tag category is already called ${shown(clash.name)} (id ${clash.id}).`, { details: { category: clash.id } });
}

function nameArg(v: JsonValue | undefined): string {
  return cleanName(stringArg(v, 'name', { max: NAME_MAX }), 'category name');
}

function idArg(v: JsonValue | undefined, what = 'id'): number {
  const n = typeof v === 'string' && /^\d+$/.test(v.trim()) ? Number(v.trim()) : v;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 1) throw new MemoError('VALIDATION', `${what} must be a tag category's id (a whole number).`);
  return n;
}

/** Every tag there is: used in a note, or given settings (what vault_get_tags lists). */
async function knownTags(m: EntityManager): Promise<Map<string, number | null>> {
  const { TagRow, NoteTagRow } = await schema();
  const out = new Map<string, number | null>();
  const used = await m.createQueryBuilder(NoteTagRow, 't').select('DISTINCT t.tag', 'tag').getRawMany<{ tag: string }>();
  for (const u of used) out.set(u.tag, null);
  for (const t of await m.find(TagRow)) out.set(t.name, t.category_id);
  return out;
}

// ---------------------------------------------------------------------------------------------
// tags.reorder

interface Reorder {
  assignments: Array<{ tag: string; categoryId: number | null }>;
  categoryOrder: number[] | null;
}

function parseReorder(args: JsonValue[]): Reorder {
  const o = objectArg(args);
  onlyKeys(o, ['assignments', 'categoryOrder']);
  if (o.assignments === undefined && o.categoryOrder === undefined)
    throw new MemoError('VALIDATION', 'give assignments ([{tag, categoryId}]), categoryOrder ([categoryId, ...]) or both.');
  const assignments: Reorder['assignments'] = [];
  if (o.assignments !== undefined) {
    if (!Array.isArray(o.assignments)) throw new MemoError('VALIDATION', 'assignments must be a list of {tag, categoryId}.');
    if (o.assignments.length > ASSIGN_MAX) throw new MemoError('VALIDATION', `at most ${ASSIGN_MAX} assignments at once.`);
    const seen = new Set<string>();
    for (const [i, a] of o.assignments.entries()) {
      if (a === null || typeof a !== 'object' || Array.isArray(a)) throw new MemoError('VALIDATION', `assignments[${i}] must be an object {tag, categoryId}.`);
      onlyKeys(a, ['tag', 'categoryId']);
      const tag = normalizeTag(stringArg(a.tag, `assignments[${i}].tag`, { max: 200 }));
      if (seen.has(tag)) throw new MemoError('VALIDATION', `the tag ${shown(tag)} is assigned twice.`);
      seen.add(tag);
      if (a.categoryId === undefined) throw new MemoError('VALIDATION', `assignments[${i}].categoryId is missing (null takes the tag out of its category).`);
      assignments.push({ tag, categoryId: a.categoryId === null ? null : idArg(a.categoryId, `assignments[${i}].categoryId`) });
    }
  }
  let categoryOrder: number[] | null = null;
  if (o.categoryOrder !== undefined) {
    if (!Array.isArray(o.categoryOrder)) throw new MemoError('VALIDATION', 'categoryOrder must be a list of category ids.');
    categoryOrder = o.categoryOrder.map((v, i) => idArg(v, `categoryOrder[${i}]`));
    const dup = categoryOrder.find((id, i) => categoryOrder!.indexOf(id) !== i);
    if (dup !== undefined) throw new MemoError('VALIDATION', `the category ${dup} is listed twice in categoryOrder.`);
  }
  return { assignments, categoryOrder };
}

/** What a reorder changes, from the rows as they are now; unknown tags and categories refused. */
async function planReorder(m: EntityManager, p: Reorder) {
  const cats = await allCategories(m);
  const tags = await knownTags(m);
  const nameOf = (id: number | null) => (id === null ? null : (cats.find((c) => c.id === id)?.name ?? `#${id}`));
  const unknownTags = p.assignments.filter((a) => !tags.has(a.tag)).map((a) => a.tag);
  if (unknownTags.length)
    throw new MemoError('NOT_FOUND', `No tag ${unknownTags.map(shown).join(', ')} in the vault (vault_get_tags lists them).`, {
      details: { tags: unknownTags },
    });
  for (const a of p.assignments) if (a.categoryId !== null) findCategory(cats, a.categoryId);
  for (const id of p.categoryOrder ?? []) findCategory(cats, id);
  const order = p.categoryOrder ? [...p.categoryOrder, ...cats.map((c) => c.id).filter((id) => !p.categoryOrder!.includes(id))] : cats.map((c) => c.id);
  const before: Record<string, unknown> = {};
  const after: Record<string, unknown> = {};
  for (const a of p.assignments) {
    before[a.tag] = nameOf(tags.get(a.tag) ?? null);
    after[a.tag] = nameOf(a.categoryId);
  }
  const orderNow = cats.map((c) => c.name).join(', ');
  const orderNext = order.map(nameOf).join(', ');
  return { cats, tags, order, before, after, orderNow, orderNext };
}

/** What the preview showed and the run must find unchanged: each listed tag's category, and the category order. */
const seenOf = (plan: Awaited<ReturnType<typeof planReorder>>) => ({ ...plan.before, '(category order)': plan.orderNow });

export const BRIDGE_TAG_OPS: BridgeOp[] = [
  op<null>({
    name: 'tags.listCategories',
    effect: 'read',
    usage: 'args [] -> {categories: [{id, name, sort_order, tag_count}]}',
    parse: noArgs,
    run: async (_p, ctx) => {
      const categories = await categoriesOut(await em(ctx));
      return { categories, summary: `${categories.length} tag categor${categories.length === 1 ? 'y' : 'ies'}` };
    },
  }),
  op<{ name: string }>({
    name: 'tags.createCategory',
    effect: 'write',
    usage: 'args [{name}] -> {category: {id, name, sort_order, tag_count}}',
    parse: (args) => {
      const o = objectArg(args);
      onlyKeys(o, ['name']);
      return { name: nameArg(o.name) };
    },
    check: async (p, ctx) => checkFreeName(await allCategories(await em(ctx)), p.name),
    preview: async (p, ctx) => fieldsPreview('New tag category', {}, { name: p.name, sort_order: (await allCategories(await em(ctx))).length }),
    run: inIndex(async (m, p) => {
      const { TagCategoryRow } = await schema();
      const cats = await allCategories(m);
      checkFreeName(cats, p.name);
      const saved = await m.save(TagCategoryRow, m.create(TagCategoryRow, { name: p.name, sort_order: cats.length }));
      await renumberCategories(m, [...cats, saved]);
      const category: Category = { id: saved.id, name: saved.name, sort_order: saved.sort_order, tag_count: 0 };
      return { category, summary: `created the tag category ${p.name}` };
    }),
  }),
  op<{ id: number; name: string }>({
    name: 'tags.renameCategory',
    effect: 'write',
    usage: 'args [{id, name}] -> {}',
    parse: (args) => {
      const o = objectArg(args);
      onlyKeys(o, ['id', 'name']);
      return { id: idArg(o.id), name: nameArg(o.name) };
    },
    check: async (p, ctx) => {
      const cats = await allCategories(await em(ctx));
      findCategory(cats, p.id);
      checkFreeName(cats, p.name, p.id);
    },
    preview: async (p, ctx) => {
      const row = findCategory(await allCategories(await em(ctx)), p.id);
      rememberFields(ctx, { name: row.name });
      return fieldsPreview(`Tag category ${row.name} (id ${row.id})`, { name: row.name }, { name: p.name });
    },
    run: inIndex(async (m, p, ctx) => {
      const { TagCategoryRow } = await schema();
      const cats = await allCategories(m);
      const row = findCategory(cats, p.id);
      checkFields(ctx, `The tag category ${row.name}`, { name: row.name });
      checkFreeName(cats, p.name, p.id);
      if (row.name !== p.name) await m.update(TagCategoryRow, { id: row.id }, { name: p.name });
      return { category: { id: row.id, name: p.name }, previous_name: row.name, summary: `renamed the tag category ${row.name} to ${p.name}` };
    }),
  }),
  op<{ id: number }>({
    name: 'tags.deleteCategory',
    effect: 'delete',
    usage: 'args [{id}] -> {} (its tags are kept, uncategorized)',
    parse: (args) => {
      const o = objectArg(args);
      onlyKeys(o, ['id']);
      return { id: idArg(o.id) };
    },
    check: async (p, ctx) => void findCategory(await allCategories(await em(ctx)), p.id),
    preview: async (p, ctx) => {
      const m = await em(ctx);
      const row = findCategory(await allCategories(m), p.id);
      const tags = (await tagsByCategory(m)).get(row.id) ?? [];
      rememberFields(ctx, { name: row.name, tags });
      const kept = tags.length
        ? [tags.length === 1 ? 'Its tag is kept and becomes uncategorized:' : `Its ${tags.length} tags are kept and become uncategorized:`, ...listed(tags)]
        : ['It holds no tags.'];
      return { kind: 'delete', text: [`Deletes the tag category ${row.name} (id ${row.id}).`, ...kept].join('\n') };
    },
    run: inIndex(async (m, p, ctx) => {
      const { TagCategoryRow, TagRow } = await schema();
      const cats = await allCategories(m);
      const row = findCategory(cats, p.id);
      const tags = (await tagsByCategory(m)).get(row.id) ?? [];
      checkFields(ctx, `The tag category ${row.name}`, { name: row.name, tags });
      // Explicitly, not through ON DELETE SET NULL: SQLite enforces foreign keys only when asked to.
      await m.update(TagRow, { category_id: row.id }, { category_id: null });
      await m.delete(TagCategoryRow, { id: row.id });
      await renumberCategories(
        m,
        cats.filter((c) => c.id !== row.id),
      );
      return { deleted: { id: row.id, name: row.name }, uncategorized: tags, summary: `deleted the tag category ${row.name}` };
    }),
  }),
  op<Reorder>({
    name: 'tags.reorder',
    effect: 'write',
    usage: 'args [{assignments?: [{tag, categoryId | null}], categoryOrder?: [categoryId, ...]}] -> {}',
    parse: parseReorder,
    check: async (p, ctx) => void (await planReorder(await em(ctx), p)),
    preview: async (p, ctx) => {
      const plan = await planReorder(await em(ctx), p);
      rememberFields(ctx, seenOf(plan));
      const rows = fieldRows(plan.before, plan.after);
      if (plan.orderNow !== plan.orderNext) rows.push(`category order: ${plan.orderNow} -> ${plan.orderNext}`);
      return { kind: 'fields', text: ['Tag categories', ...(rows.length ? rows : ['(no field changes)'])].join('\n') };
    },
    run: inIndex(async (m, p, ctx) => {
      const { TagRow } = await schema();
      const plan = await planReorder(m, p);
      checkFields(ctx, 'The tags or their categories', seenOf(plan));
      const moved: string[] = [];
      for (const a of p.assignments) {
        if ((plan.tags.get(a.tag) ?? null) === a.categoryId) continue;
        // A tag only used in notes has no row yet: its settings start here.
        if (await m.existsBy(TagRow, { name: a.tag })) await m.update(TagRow, { name: a.tag }, { category_id: a.categoryId });
        else await m.insert(TagRow, { name: a.tag, color: null, icon: null, sort_order: 0, category_id: a.categoryId });
        moved.push(a.tag);
      }
      await renumberCategories(
        m,
        plan.order.map((id) => findCategory(plan.cats, id)),
      );
      return {
        moved,
        categories: await categoriesOut(m),
        summary: `${moved.length} tag${moved.length === 1 ? '' : 's'} moved${plan.orderNow !== plan.orderNext ? ', categories reordered' : ''}`,
      };
    }),
  }),
];
