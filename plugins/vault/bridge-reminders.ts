/**
 * Desktop bridge operations: reminders (see bridge.ts for the contract every operation keeps). A
 * reminder has a title, a time (ISO 8601 with Z or an offset: a time in words is asked back, never
 * guessed) and optionally what it is about (a task, a note, a project, an inbox item). An inbox item
 * given a remind-at time (inbox.convertToReminder) and an open task with a remind_at remind the same way. reminder-delivery.ts
 * delivers them; reminders.history reads what it delivered, and settings.setReminderSettings is the
 * person's opt-in to a WhatsApp message to their own number beside the console's notification.
 */
import type { EntityManager } from 'typeorm';
import { MemoError, type JsonValue, type ToolContext } from 'memo-kernel/pack';
import { booleanArg, noArgs, oneObject, op, stringArg, type BridgeOp } from './bridge-op.js';
import { writeSetting } from './features.js';
import { checkMoment, findItem, requireFuture } from './inbox-tools.js';
import { checkFields, fieldsPreview, inPlanning, newId, now, planningDb, rememberFields, schema, thenRemind } from './planning-store.js';
import { findProject } from './project-tools.js';
import { deliveries, reminderSettingsOf, type ReminderSettings } from './reminder-delivery.js';
import { runtimeOf } from './runtime.js';
import type { ReminderRow } from './schema.js';
import { findTask } from './task-tools.js';
import { shown } from './vault.js';

const em = async (ctx: ToolContext): Promise<EntityManager> => (await planningDb(ctx)).manager;

const ITEM_TYPES = ['task', 'note', 'project', 'inbox'] as const;
type ItemType = (typeof ITEM_TYPES)[number];

/** A time to come, as ISO 8601 with Z or an offset (a time in words is asked back). */
function momentArg(v: JsonValue | undefined): string {
  const at = checkMoment(stringArg(v, 'remindAt', { max: 60 }));
  requireFuture(at);
  return at;
}

function noteArg(v: JsonValue | undefined): string | null {
  if (v === null || v === '') return null;
  if (typeof v !== 'string' || v.length > 5000) throw new MemoError('VALIDATION', 'note must be text of at most 5000 characters (null clears it).');
  return v;
}

/** The item a reminder is about, as it exists now: its stable id and its title (NOT_FOUND otherwise). */
async function aboutItem(ctx: ToolContext, m: EntityManager, type: ItemType, ref: string): Promise<{ id: string; title: string }> {
  if (type === 'task') {
    const t = await findTask(m, ref);
    return { id: t.id, title: t.title };
  }
  if (type === 'project') {
    const p = await findProject(m, ref);
    return { id: p.id, title: p.name };
  }
  if (type === 'inbox') {
    const i = await findItem(m, ref);
    return { id: i.id, title: i.title };
  }
  const { note } = (await runtimeOf(ctx).vault(ctx)).find(ref);
  return { id: note.id, title: note.title };
}

async function findReminder(m: EntityManager, id: string): Promise<ReminderRow> {
  const { ReminderRow } = await schema();
  const row = await m.findOneBy(ReminderRow, { id });
  if (!row) throw new MemoError('NOT_FOUND', `No reminder with id ${shown(id)} (reminders.list lists them).`, { details: { reminder: id } });
  return row;
}

/** Whether (and when) a reminder at its current time was delivered. */
async function deliveredAt(
  m: EntityManager,
  source: 'reminder' | 'inbox' | 'task',
  id: string,
  remindAt: string,
): Promise<{ delivered_at: string; status: string } | null> {
  const { ReminderDeliveryRow } = await schema();
  const d = await m.findOneBy(ReminderDeliveryRow, { source, source_id: id, remind_at: remindAt });
  return d ? { delivered_at: d.delivered_at, status: d.status } : null;
}

async function reminderOut(m: EntityManager, r: ReminderRow) {
  const d = await deliveredAt(m, 'reminder', r.id, r.remind_at);
  return {
    id: r.id,
    source: 'reminder' as const,
    title: r.title,
    note: r.note,
    remind_at: r.remind_at,
    item: r.item_type && r.item_id ? { type: r.item_type, id: r.item_id } : null,
    delivered: d,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

/** The shown fields of a reminder (what a preview compares). */
const shownFields = (r: { title: string; remind_at: string; note: string | null }) => ({ title: r.title, remind_at: r.remind_at, note: r.note });

// ---------------------------------------------------------------------------------------------
// reminders.create / update / delete

interface Create {
  title: string;
  remindAt: string;
  note: string | null;
  about: { type: ItemType; ref: string } | null;
}

const create = op<Create>({
  name: 'reminders.create',
  effect: 'write',
  usage: `args [{title, remindAt, note?, itemType?, itemId?}] (remindAt ISO 8601 with Z or an offset; itemType ${ITEM_TYPES.join('|')}) -> {reminder}`,
  parse: (args) => {
    const o = oneObject(args, ['title', 'remindAt', 'note', 'itemType', 'itemId']);
    const title = stringArg(o.title, 'title', { max: 500 });
    const remindAt = momentArg(o.remindAt);
    const note = o.note === undefined ? null : noteArg(o.note);
    if ((o.itemType === undefined) !== (o.itemId === undefined))
      throw new MemoError('VALIDATION', 'give itemType and itemId together (what the reminder is about), or neither.');
    let about: Create['about'] = null;
    if (o.itemType !== undefined) {
      if (typeof o.itemType !== 'string' || !(ITEM_TYPES as readonly string[]).includes(o.itemType))
        throw new MemoError('VALIDATION', `itemType must be one of ${ITEM_TYPES.join(', ')}.`);
      about = { type: o.itemType as ItemType, ref: stringArg(o.itemId, 'itemId', { max: 500 }) };
    }
    return { title, remindAt, note, about };
  },
  check: async (p, ctx) => {
    if (p.about) await aboutItem(ctx, await em(ctx), p.about.type, p.about.ref);
  },
  preview: async (p, ctx) => {
    const about = p.about ? await aboutItem(ctx, await em(ctx), p.about.type, p.about.ref) : null;
    // The item the preview named is the one the run attaches (a title may mean another item by then).
    rememberFields(ctx, { item: about?.id ?? null });
    return fieldsPreview(
      'New reminder',
      {},
      { ...shownFields({ title: p.title, remind_at: p.remindAt, note: p.note }), ...(about ? { about: `${p.about!.type} ${about.title}` } : {}) },
    );
  },
  run: thenRemind(
    inPlanning(async (m, p: Create, ctx) => {
      const { ReminderRow } = await schema();
      const about = p.about ? await aboutItem(ctx, m, p.about.type, p.about.ref) : null;
      checkFields(ctx, 'The item the reminder is about', { item: about?.id ?? null });
      const at = now();
      const row = m.create(ReminderRow, {
        id: newId(),
        title: p.title,
        note: p.note,
        remind_at: p.remindAt,
        item_type: about ? p.about!.type : null,
        item_id: about?.id ?? null,
        created_at: at,
        updated_at: at,
      });
      await m.insert(ReminderRow, row);
      return { reminder: await reminderOut(m, row), summary: `reminder ${shown(p.title)} at ${p.remindAt}` };
    }),
  ),
});

interface Update {
  id: string;
  fields: { title?: string; remind_at?: string; note?: string | null };
}

const update = op<Update>({
  name: 'reminders.update',
  effect: 'write',
  usage: 'args [{id, title?, remindAt?, note?}] -> {reminder, changed}; a new remindAt makes it remind again at that time',
  parse: (args) => {
    const o = oneObject(args, ['id', 'title', 'remindAt', 'note']);
    const fields: Update['fields'] = {};
    if (o.title !== undefined) fields.title = stringArg(o.title, 'title', { max: 500 });
    if (o.remindAt !== undefined) fields.remind_at = momentArg(o.remindAt);
    if (o.note !== undefined) fields.note = noteArg(o.note);
    if (!Object.keys(fields).length) throw new MemoError('VALIDATION', 'say what to change: title, remindAt or note.');
    return { id: stringArg(o.id, 'id', { max: 200 }), fields };
  },
  check: async (p, ctx) => void (await findReminder(await em(ctx), p.id)),
  preview: async (p, ctx) => {
    const before = shownFields(await findReminder(await em(ctx), p.id));
    rememberFields(ctx, before);
    return fieldsPreview('Reminder', before, { ...before, ...p.fields });
  },
  run: thenRemind(
    inPlanning(async (m, p: Update, ctx) => {
      const { ReminderRow } = await schema();
      const row = await findReminder(m, p.id);
      const before = shownFields(row);
      checkFields(ctx, 'The reminder', before);
      await m.update(ReminderRow, { id: row.id }, { ...p.fields, updated_at: now() });
      const saved = (await m.findOneBy(ReminderRow, { id: row.id }))!;
      const after = shownFields(saved);
      const changed = Object.keys(after).filter((k) => before[k as keyof typeof before] !== after[k as keyof typeof after]);
      return { reminder: await reminderOut(m, saved), changed, summary: `updated the reminder ${shown(saved.title)}` };
    }),
  ),
});

const remove = op<{ id: string }>({
  name: 'reminders.delete',
  effect: 'delete',
  usage: 'args [{id}] -> {deleted: {id, title}}; what it was about is not touched, its delivery history stays',
  parse: (args) => ({ id: stringArg(oneObject(args, ['id']).id, 'id', { max: 200 }) }),
  check: async (p, ctx) => void (await findReminder(await em(ctx), p.id)),
  preview: async (p, ctx) => {
    const r = await findReminder(await em(ctx), p.id);
    return {
      kind: 'delete',
      text: `Deletes the reminder ${shown(r.title)} (at ${r.remind_at}${r.note ? `; note: ${r.note.length > 200 ? `${r.note.slice(0, 199)}…` : r.note}` : ''}). It will not remind.`,
    };
  },
  run: inPlanning(async (m, p: { id: string }) => {
    const { ReminderRow } = await schema();
    const r = await findReminder(m, p.id);
    await m.delete(ReminderRow, { id: r.id });
    return { deleted: { id: r.id, title: r.title }, summary: `deleted the reminder ${shown(r.title)}` };
  }),
});

// ---------------------------------------------------------------------------------------------
// Reads

interface ListArgs {
  includeDelivered: boolean;
  limit: number;
}

function limitArg(v: JsonValue | undefined, fallback: number, max: number): number {
  if (v === undefined) return fallback;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > max) throw new MemoError('VALIDATION', `limit must be a whole number from 1 to ${max}.`);
  return v;
}

const list = op<ListArgs>({
  name: 'reminders.list',
  effect: 'read',
  usage:
    'args [] or [{includeDelivered?, limit?}] -> {reminders: [{id, source (reminder|inbox|task), title, note, remind_at, item, delivered}], count}: soonest first; by default only those still to come',
  parse: (args) => {
    if (!args.length) return { includeDelivered: false, limit: 100 };
    const o = oneObject(args, ['includeDelivered', 'limit']);
    return {
      includeDelivered: o.includeDelivered === undefined ? false : booleanArg(o.includeDelivered, 'includeDelivered'),
      limit: limitArg(o.limit, 100, 500),
    };
  },
  run: async (p, ctx) => {
    const m = await em(ctx);
    const { ReminderRow, InboxItemRow, TaskRow } = await schema();
    // Each source's first `limit`, soonest first, with only those not delivered yet unless asked (in SQL: a
    // year of daily reminders is not read to list the next few).
    const pending = (source: string, alias: string) =>
      p.includeDelivered
        ? '1 = 1'
        : `NOT EXISTS (SELECT 1 FROM "reminder_deliveries" d WHERE d.source = '${source}' AND d.source_id = ${alias}.id AND d.remind_at = ${alias}.remind_at)`;
    const stamp = async (source: 'reminder' | 'inbox' | 'task', id: string, at: string) => (p.includeDelivered ? deliveredAt(m, source, id, at) : null);
    const ownRows = await m.createQueryBuilder(ReminderRow, 'r').where(pending('reminder', 'r')).orderBy('r.remind_at', 'ASC').take(p.limit).getMany();
    const own = await Promise.all(ownRows.map((r) => reminderOut(m, r)));
    const inboxRows = await m
      .createQueryBuilder(InboxItemRow, 'i')
      .where('i.remind_at IS NOT NULL AND i.archived_at IS NULL')
      .andWhere(pending('inbox', 'i'))
      .orderBy('i.remind_at', 'ASC')
      .take(p.limit)
      .getMany();
    const inbox = await Promise.all(
      inboxRows.map(async (i) => ({
        id: i.id,
        source: 'inbox' as const,
        title: i.title,
        note: i.content,
        remind_at: i.remind_at!,
        item: { type: 'inbox', id: i.id },
        delivered: await stamp('inbox', i.id, i.remind_at!),
      })),
    );
    const taskRows = await m
      .createQueryBuilder(TaskRow, 't')
      .where('t.remind_at IS NOT NULL AND t.completed_at IS NULL AND t.archived_at IS NULL')
      .andWhere(pending('task', 't'))
      .orderBy('t.remind_at', 'ASC')
      .take(p.limit)
      .getMany();
    const tasks = await Promise.all(
      taskRows.map(async (t) => ({
        id: t.id,
        source: 'task' as const,
        title: t.title,
        note: t.description,
        remind_at: t.remind_at!,
        item: { type: 'task', id: t.id },
        delivered: await stamp('task', t.id, t.remind_at!),
      })),
    );
    const all = [...own, ...inbox, ...tasks].sort((a, b) => a.remind_at.localeCompare(b.remind_at));
    const shownList = all.slice(0, p.limit);
    return {
      reminders: shownList,
      count: shownList.length,
      summary: `${shownList.length} reminder${shownList.length === 1 ? '' : 's'}${p.includeDelivered ? '' : ' to come'}`,
    };
  },
});

const history = op<{ limit: number }>({
  name: 'reminders.history',
  effect: 'read',
  usage: 'args [] or [{limit?}] -> {deliveries: [{id, title, remind_at, delivered_at, late_minutes, status, channels, seen_at}], count}: newest first',
  parse: (args) => (args.length ? { limit: limitArg(oneObject(args, ['limit']).limit, 50, 500) } : { limit: 50 }),
  run: async (p, ctx) => {
    const list = await deliveries(await em(ctx), { limit: p.limit });
    return { deliveries: list, count: list.length, summary: `${list.length} reminder${list.length === 1 ? '' : 's'} delivered` };
  },
});

// ---------------------------------------------------------------------------------------------
// The person's delivery choices

const getSettings = op<null>({
  name: 'settings.getReminderSettings',
  effect: 'read',
  usage: 'args [] -> {reminders: {whatsapp}}: whether reminders also go to the person’s own WhatsApp number',
  parse: noArgs,
  run: async (_p, ctx) => ({ reminders: await reminderSettingsOf(await em(ctx)) }),
});

const setSettings = op<Partial<ReminderSettings>>({
  name: 'settings.setReminderSettings',
  effect: 'write',
  usage: 'args [{whatsapp}] (true: each reminder is also sent to the person’s own WhatsApp number, when a phone is linked) -> {reminders}',
  parse: (args) => ({ whatsapp: booleanArg(oneObject(args, ['whatsapp']).whatsapp, 'whatsapp') }),
  preview: async (p, ctx) => {
    const before = await reminderSettingsOf(await em(ctx));
    rememberFields(ctx, { whatsapp: before.whatsapp });
    return fieldsPreview('Reminder delivery', { whatsapp: before.whatsapp }, p);
  },
  run: inPlanning(async (m, p: Partial<ReminderSettings>, ctx) => {
    const all = await reminderSettingsOf(m);
    checkFields(ctx, 'The reminder settings', { whatsapp: all.whatsapp });
    const reminders = { ...all, ...p };
    await writeSetting(m, 'reminders', reminders);
    return { reminders, summary: reminders.whatsapp ? 'reminders also go to your own WhatsApp number' : 'reminders are shown in the console only' };
  }),
});

export const BRIDGE_REMINDER_OPS: BridgeOp[] = [list, history, create, update, remove, getSettings, setSettings];
