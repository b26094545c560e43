/**
 * The inbox: things captured to sort later (a thought, a link), each with a stable id. Rows live in
 * the planning database beside the planning tables (vault-planning) and follow their
 * conventions: one write at a time with the vault's other writes, field-change previews that the run
 * checks again, and references refused before anyone is asked.
 */
import type { EntityManager } from 'typeorm';
import { MemoError, type ToolContext } from 'memo-kernel/pack';
import { diffOf } from './note-files.js';
import { assessWith, changesOf, checkFields, fieldsPreview, inPlanning, newId, now, planningDb, rememberFields, schema, type Impl } from './planning-store.js';
import type { InboxItemRow } from './schema.js';
import type { ToolArgs } from './tool-args.js';
import { shown } from './vault.js';
import { checkTag } from './write-tools.js';

/** An inbox item by its id or its exact title (without case), as tasks and projects are found; several of that title are refused with their ids. */
export async function findItem(em: EntityManager, ref: string): Promise<InboxItemRow> {
  const { InboxItemRow } = await schema();
  const byId = await em.findOneBy(InboxItemRow, { id: ref.trim() });
  if (byId) return byId;
  const named = await em.createQueryBuilder(InboxItemRow, 'i').where('LOWER(i.title) = :k', { k: ref.trim().toLowerCase() }).limit(11).getMany();
  if (named.length === 1) return named[0]!;
  if (named.length > 1)
    throw new MemoError('VALIDATION', `Several inbox items are called ${shown(ref)}; name one by id: ${named.map((i) => i.id).join(', ')}.`, {
      details: { candidates: named.map((i) => i.id) },
    });
  throw new MemoError('NOT_FOUND', `No inbox item ${shown(ref)} (give its id or its exact title, as vault_list_inbox_items shows them).`, {
    details: { item: ref },
  });
}

const tagsOf = (r: InboxItemRow): string[] => JSON.parse(r.tags) as string[];

function itemOut(r: InboxItemRow) {
  return {
    id: r.id,
    title: r.title,
    content: r.content,
    url: r.url,
    tags: tagsOf(r),
    snoozed_until: r.snoozed_until,
    remind_at: r.remind_at ?? null,
    archived: r.archived_at !== null,
    converted_to: r.converted_to ?? null,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

const head = (r: InboxItemRow) => `Inbox item ${r.title} (id ${r.id})`;

function checkTitle(title: string): string {
  const t = title.trim();
  if (!t) throw new MemoError('VALIDATION', 'The title is empty.');
  return t;
}

function checkUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url.trim());
  } catch {
    throw new MemoError('VALIDATION', `${shown(url)} is not a link: give a full http or https address.`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new MemoError('VALIDATION', `${shown(url)} is not an http or https link.`);
  return u.href;
}

/** A moment with its zone (Z or an offset), stored as UTC; a day that does not exist is refused, not rolled over. */
/** A remind-at time must be to come (by this machine's clock). */
export function requireFuture(at: string, what = 'remindAt'): void {
  if (at <= now()) throw new MemoError('VALIDATION', `${what} ${at} is not in the future (it is now ${now()}).`);
}

export function checkMoment(text: string): string {
  const m = /^(\d{4})-(\d{2})-(\d{2})T([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d{1,3})?)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/.exec(text.trim());
  const day = m ? new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]))) : null;
  if (!m || !day || day.getUTCMonth() !== Number(m[2]) - 1 || day.getUTCDate() !== Number(m[3])) {
    // A time in words ("tomorrow 9am") is asked back, not guessed: whose tomorrow, which zone.
    const inWords = /[a-z]{2,}/i.test(text.replace(/\d{4}-\d{2}-\d{2}T/, ''));
    throw new MemoError(
      'VALIDATION',
      inWords
        ? `${shown(text)} is a time in words, which is not guessed: which moment is it? Give it as ISO 8601 with Z or the person's offset, such as 2026-12-01T09:00:00+01:00 (it is now ${now()}).`
        : `${shown(text)} is not a time: write ISO 8601 with Z or an offset (2026-12-01T09:00:00+01:00).`,
      { details: { time: text, now: now() } },
    );
  }
  return new Date(text.trim()).toISOString();
}

// ---------------------------------------------------------------------------------------------
// Reads

export async function listInboxItems(args: ToolArgs['vault_list_inbox_items'], ctx: ToolContext) {
  const { InboxItemRow } = await schema();
  const em = (await planningDb(ctx)).manager;
  const tag = args.tag === undefined ? null : checkTag(args.tag);
  const at = now();
  const rows = (await em.find(InboxItemRow, { order: { created_at: 'DESC', id: 'ASC' } })).filter(
    (r) =>
      (args.include_archived || r.archived_at === null) &&
      (args.include_snoozed || r.snoozed_until === null || r.snoozed_until <= at) &&
      (tag === null || tagsOf(r).some((t) => t === tag || t.startsWith(`${tag}/`))),
  );
  const limit = args.limit ?? 200;
  const items = rows.slice(0, limit).map(itemOut);
  return {
    items,
    count: items.length,
    ...(rows.length > limit ? { truncated: true, total: rows.length } : {}),
    summary: `${items.length} inbox item${items.length === 1 ? '' : 's'}`,
  };
}

export async function getInboxItem(args: ToolArgs['vault_get_inbox_item'], ctx: ToolContext) {
  return itemOut(await findItem((await planningDb(ctx)).manager, args.item));
}

// ---------------------------------------------------------------------------------------------
// Add

function newItem(args: ToolArgs['vault_add_to_inbox']) {
  return {
    title: checkTitle(args.title),
    content: args.content ?? null,
    url: args.url === undefined ? null : checkUrl(args.url),
    tags: [...new Set((args.tags ?? []).map(checkTag))],
  };
}

export const addToInbox: Impl<ToolArgs['vault_add_to_inbox']> = {
  assess: async (args, ctx) => {
    newItem(args);
    await planningDb(ctx);
    return null;
  },
  preview: (args) => {
    const f = newItem(args);
    const fields = fieldsPreview('New inbox item', {}, { title: f.title, url: f.url, tags: f.tags }).text;
    // The seed's body diff for the text of a new item: every line is new.
    return Promise.resolve({ kind: 'diff', text: `${fields}\n${diffOf('inbox item', null, f.content ?? '')}` });
  },
  run: inPlanning(async (em, args) => {
    const { InboxItemRow } = await schema();
    const f = newItem(args);
    const at = now();
    const row = em.create(InboxItemRow, {
      id: newId(),
      title: f.title,
      content: f.content,
      url: f.url,
      tags: JSON.stringify(f.tags),
      snoozed_until: null,
      archived_at: null,
      created_at: at,
      updated_at: at,
    });
    await em.insert(InboxItemRow, row);
    return { ...itemOut(row), created: true, summary: `added ${row.title} to the inbox` };
  }),
};

// ---------------------------------------------------------------------------------------------
// Field changes: update, snooze, archive, tags

type Fields = Pick<InboxItemRow, 'title' | 'content' | 'url' | 'snoozed_until'> & { archived: boolean; tags: string[] };

function fieldsOf(r: InboxItemRow): Fields {
  return { title: r.title, content: r.content, url: r.url, snoozed_until: r.snoozed_until, archived: r.archived_at !== null, tags: tagsOf(r) };
}

/** What a call would set, from the row as it is now; only fields that move are kept. */
type Change<A> = (r: InboxItemRow, args: A) => Partial<Fields>;

function fieldTool<A extends { item: string }>(change: Change<A>, verb: string): Impl<A> {
  return {
    assess: assessWith(async (em, args: A) => change(await findItem(em, args.item), args)),
    preview: async (args, ctx) => {
      const r = await findItem((await planningDb(ctx)).manager, args.item);
      const before = fieldsOf(r);
      const changes = changesOf(before, change(r, args));
      rememberFields(ctx, Object.fromEntries(Object.keys(changes).map((k) => [k, before[k as keyof Fields]])));
      return fieldsPreview(head(r), before, changes);
    },
    run: inPlanning(async (em, args, ctx) => {
      const { InboxItemRow } = await schema();
      const r = await findItem(em, args.item);
      const before = fieldsOf(r);
      checkFields(ctx, `The inbox item ${shown(r.title)}`, { ...before });
      const changes = changesOf(before, change(r, args));
      if (Object.keys(changes).length) {
        const { tags, archived, ...rest } = changes;
        const at = now();
        await em.update(
          InboxItemRow,
          { id: r.id },
          {
            ...rest,
            ...(tags !== undefined ? { tags: JSON.stringify(tags) } : {}),
            ...(archived !== undefined ? { archived_at: archived ? at : null } : {}),
            updated_at: at,
          },
        );
      }
      const after = (await em.findOneBy(InboxItemRow, { id: r.id }))!;
      return { ...itemOut(after), changed: Object.keys(changes), summary: `${verb} inbox item ${after.title}` };
    }),
  };
}

export const updateInboxItem = fieldTool<ToolArgs['vault_update_inbox_item']>((_r, args) => {
  if (args.title === undefined && args.content === undefined && args.url === undefined)
    throw new MemoError('VALIDATION', 'Say what to change: title, content or url.');
  return {
    ...(args.title !== undefined ? { title: checkTitle(args.title) } : {}),
    ...(args.content !== undefined ? { content: args.content } : {}),
    ...(args.url !== undefined ? { url: args.url === null ? null : checkUrl(args.url) } : {}),
  };
}, 'updated');

export const snoozeInboxItem = fieldTool<ToolArgs['vault_snooze_inbox_item']>(
  (_r, args) => ({ snoozed_until: args.until === null ? null : checkMoment(args.until) }),
  'snoozed',
);

export const archiveInboxItem = fieldTool<ToolArgs['vault_archive_inbox_item']>(() => ({ archived: true }), 'archived');
export const unarchiveInboxItem = fieldTool<ToolArgs['vault_unarchive_inbox_item']>(() => ({ archived: false }), 'unarchived');

export const addInboxTag = fieldTool<ToolArgs['vault_add_inbox_tag']>((r, args) => {
  const tag = checkTag(args.tag);
  const tags = tagsOf(r);
  return { tags: tags.includes(tag) ? tags : [...tags, tag] };
}, 'tagged');

export const removeInboxTag = fieldTool<ToolArgs['vault_remove_inbox_tag']>((r, args) => {
  const tag = checkTag(args.tag);
  const tags = tagsOf(r);
  if (!tags.includes(tag)) throw new MemoError('NOT_FOUND', `The inbox item ${shown(r.title)} has no tag #${tag}.`);
  return { tags: tags.filter((t) => t !== tag) };
}, 'untagged');

// ---------------------------------------------------------------------------------------------
// Delete

export const deleteInboxItem: Impl<ToolArgs['vault_delete_inbox_item']> = {
  assess: assessWith((em, args) => findItem(em, args.item)),
  preview: async (args, ctx) => {
    const r = await findItem((await planningDb(ctx)).manager, args.item);
    rememberFields(ctx, { ...fieldsOf(r) });
    const lines = [`Deletes the inbox item ${r.title} (id ${r.id}${r.archived_at ? ', archived' : ''}).`];
    lines.push(r.content ? `Its text (${r.content.length} characters) is lost.` : 'It has no text.');
    if (r.url) lines.push(`Its link is lost: ${r.url}`);
    if (tagsOf(r).length) lines.push(`Its tags: ${tagsOf(r).join(', ')}`);
    return { kind: 'delete', text: lines.join('\n') };
  },
  run: inPlanning(async (em, args, ctx) => {
    const { InboxItemRow } = await schema();
    const r = await findItem(em, args.item);
    checkFields(ctx, `The inbox item ${shown(r.title)}`, { ...fieldsOf(r) });
    await em.delete(InboxItemRow, { id: r.id });
    return { id: r.id, title: r.title, deleted: true, summary: `deleted inbox item ${r.title}` };
  }),
};
