/**
 * Desktop bridge operations: the inbox (see bridge-op.ts for the contract every operation keeps).
 * inbox.captureLink fetches a page's title into a new item; the four conversions the app offers turn
 * an item into a note, a task, a calendar event (through the calendar pack) or a reminder. A
 * conversion goes through the same code as the named tools (vault_create_note, vault_create_task,
 * create_calendar_event), keeps the item's text, link and tags, and archives the item with
 * `converted_to` naming what it became; a reminder keeps the item in the inbox with a remind-at time
 * the routines scheduler surfaces.
 */
import { MemoError, type JsonValue, type Preview, type ToolContext } from 'memo-kernel/pack';
import { objectArg, onlyKeys, op, stringArg, type BridgeOp } from './bridge-op.js';
import { requireCalendar } from './bridge-calendar.js';
import { requireFeature } from './features.js';
import { addToInbox, checkMoment, findItem, getInboxItem, requireFuture } from './inbox-tools.js';
import { checkFields, fieldRows, inPlanning, now, planningDb, rememberFields, schema, thenRemind } from './planning-store.js';
import { findProject } from './project-tools.js';
import { runtimeOf } from './runtime.js';
import type { InboxItemRow } from './schema.js';
import { createTask } from './task-tools.js';
import { cleanRelative, shown } from './vault.js';
import { createNote } from './write-tools.js';
import { fetchPageTitle, TITLE_MAX } from './page-title.js';

// ---------------------------------------------------------------------------------------------
// Fetching a page's title (inbox.captureLink, tasks.captureUrlToProject)

/** An http(s) address as text, or VALIDATION: the bridge fetches nothing else (no file:, no data:). */
export function checkHttpUrl(v: JsonValue | undefined, what = 'url'): string {
  const text = stringArg(v, what, { max: 2000 });
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    throw new MemoError('VALIDATION', `${what} ${shown(text)} is not a link: give a full http or https address.`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new MemoError('VALIDATION', `${what} ${shown(text)} is not an http or https link.`);
  return u.href;
}

/** A URL's host and path, as the title of a page whose own title could not be read. */
export function hostAndPath(url: string): string {
  const u = new URL(url);
  const p = u.pathname === '/' ? '' : u.pathname.replace(/\/$/, '');
  return `${u.host}${p}`.slice(0, TITLE_MAX);
}

// ---------------------------------------------------------------------------------------------
// Items

const tagsOf = (r: InboxItemRow): string[] => JSON.parse(r.tags) as string[];

/** The item's fields a conversion reads: the run refuses if any moved since the preview. */
const shownItem = (r: InboxItemRow) => ({
  title: r.title,
  content: r.content,
  url: r.url,
  tags: tagsOf(r),
  archived: r.archived_at !== null,
  converted_to: r.converted_to,
  remind_at: r.remind_at,
});

/** An item that already became something is not converted a second time. */
function requireUnconverted(r: InboxItemRow): void {
  if (r.converted_to)
    throw new MemoError('CONFLICT', `The inbox item ${shown(r.title)} was already converted (${r.converted_to}); it is not converted twice.`, {
      details: { item: r.id, converted_to: r.converted_to },
    });
}

async function loadItem(ctx: ToolContext, id: string): Promise<InboxItemRow> {
  return findItem((await planningDb(ctx)).manager, id);
}

/** The item's text with its link kept: the content, then the URL on its own line when the text lacks it. */
function textWithUrl(r: InboxItemRow): string {
  const content = r.content ?? '';
  if (!r.url || content.includes(r.url)) return content;
  return content.trim() ? `${content.replace(/\s+$/, '')}\n\n${r.url}\n` : `${r.url}\n`;
}

const archiveRows = (r: InboxItemRow, convertedTo: string) =>
  [`Archives the inbox item ${r.title} (id ${r.id}):`, ...fieldRows(shownItem(r), { archived: true, converted_to: convertedTo }).map((x) => `  ${x}`)].join(
    '\n',
  );

/**
 * Archives the converted item with what it became, after the new note/task/event exists. The item is
 * read again inside the write: converted meanwhile by another call, it is left as that call made it.
 */
function archiveAs(ctx: ToolContext, itemId: string, convertedTo: string, made: string) {
  return inPlanning(async (em) => {
    const { InboxItemRow } = await schema();
    const r = await findItem(em, itemId);
    if (r.converted_to)
      throw new MemoError(
        'CONFLICT',
        `${made} was created, but the inbox item ${shown(r.title)} was converted meanwhile (${r.converted_to}), so it was left as it is.`,
      );
    const at = now();
    await em.update(InboxItemRow, { id: r.id }, { archived_at: at, converted_to: convertedTo, updated_at: at });
  })(null, ctx);
}

async function itemAfter(ctx: ToolContext, id: string): Promise<Record<string, unknown>> {
  return getInboxItem({ item: id }, ctx);
}

function parseItemArgs<K extends string>(args: JsonValue[], keys: readonly K[]): Record<string, JsonValue> & { itemId: string } {
  if (args.length !== 1) throw new MemoError('VALIDATION', 'it takes one object.');
  const o = objectArg(args);
  onlyKeys(o, ['itemId', ...keys]);
  return { ...o, itemId: stringArg(o.itemId, 'itemId', { max: 100 }) };
}

// ---------------------------------------------------------------------------------------------
// inbox.captureLink

const captureLink = op<{ url: string }>({
  name: 'inbox.captureLink',
  effect: 'write',
  feature: 'inbox',
  network: true,
  usage: 'args [{url}] (http or https; fetches the page title); answers {item}',
  parse: (args) => {
    if (args.length !== 1) throw new MemoError('VALIDATION', 'it takes one object.');
    const o = objectArg(args);
    onlyKeys(o, ['url']);
    return { url: checkHttpUrl(o.url) };
  },
  check: async (_p, ctx) => void (await planningDb(ctx)),
  preview: (p) =>
    Promise.resolve({
      kind: 'fields',
      text: [
        `Fetches ${p.url} (at most 5 s and 2 MiB) for its title, then adds a new inbox item:`,
        `url: (not set) -> ${p.url}`,
        `title: (not set) -> the page's title (${hostAndPath(p.url)} if it cannot be fetched)`,
      ].join('\n'),
    }),
  run: async (p, ctx) => {
    // Fetched before the write starts: the vault's queue never waits on the network.
    const page = await fetchPageTitle(p.url, ctx.signal, { allowPrivate: ctx.config.fetch_private_addresses === true });
    const title = page.title ?? hostAndPath(p.url);
    const item = (await addToInbox.run({ title, url: p.url }, ctx)) as Record<string, unknown>;
    delete item.summary;
    delete item.created;
    return {
      item,
      title_fetched: page.title !== null,
      ...(page.title === null ? { warning: `The title could not be fetched (${page.problem}); the item is titled ${title}.` } : {}),
      summary: `captured ${p.url} to the inbox as ${title}`,
    };
  },
});

// ---------------------------------------------------------------------------------------------
// inbox.convertToNote

interface ToNote {
  itemId: string;
  folder?: string;
}

/** A note's file name from an item title: characters a file name cannot carry become a dash. */
function noteName(title: string): string {
  const n = title
    .normalize('NFC')
    // eslint-disable-next-line no-control-regex -- control characters are exactly what is replaced
    .replace(/[/\\:*?"<>|[\]#^\u0000-\u001f]+/g, '-')
    .replace(/\s+/g, ' ')
    .replace(/^[.\s-]+|[.\s]+$/g, '')
    .slice(0, 120)
    .trim();
  return n || 'Inbox item';
}

/**
 * The vault_create_note call for a new note titled `title`: a free file name in the folder (" 2", " 3"
 * when taken: nothing is overwritten), the title kept in front matter when the name had to change,
 * the link as `source:` and the tags in front matter.
 */
export async function newNoteArgs(
  ctx: ToolContext,
  n: { title: string; folder?: string | undefined; content: string; url?: string | null; tags?: readonly string[] },
) {
  const vault = await runtimeOf(ctx).vault(ctx);
  const base = noteName(n.title);
  const dir = n.folder ? cleanRelative(n.folder, 'folder') : '';
  let name = base;
  for (let i = 2; (await vault.resolve(ctx, dir ? `${dir}/${name}.md` : `${name}.md`, 'write')).resolved.exists; i++) name = `${base} ${i}`;
  const fm: Record<string, string> = {};
  if (name !== n.title) fm.title = n.title;
  if (n.url) fm.source = n.url;
  return {
    title: name,
    ...(dir ? { folder: dir } : {}),
    content: n.content,
    ...(n.tags?.length ? { tags: [...n.tags] } : {}),
    ...(Object.keys(fm).length ? { front_matter: fm } : {}),
  };
}

const noteArgs = (ctx: ToolContext, r: InboxItemRow, folder: string | undefined) =>
  newNoteArgs(ctx, { title: r.title, folder, content: r.content ?? '', url: r.url, tags: tagsOf(r) });

const convertToNote = op<ToNote>({
  name: 'inbox.convertToNote',
  effect: 'write',
  feature: 'inbox',
  usage: 'args [{itemId, folder?}]; answers {note: {id, path, title}, item}',
  parse: (args) => {
    const o = parseItemArgs(args, ['folder']);
    const folder = stringArg(o.folder, 'folder', { optional: true, max: 500 });
    return { itemId: o.itemId, ...(folder !== undefined ? { folder: cleanRelative(folder, 'folder') } : {}) };
  },
  check: async (p, ctx) => {
    const r = await loadItem(ctx, p.itemId);
    requireUnconverted(r);
    await noteArgs(ctx, r, p.folder);
  },
  preview: async (p, ctx) => {
    const r = await loadItem(ctx, p.itemId);
    requireUnconverted(r);
    rememberFields(ctx, shownItem(r));
    const diff = await createNote.preview(await noteArgs(ctx, r, p.folder), ctx);
    return { kind: 'diff', text: `${diff.text.replace(/\n?$/, '\n')}${archiveRows(r, 'note:<the new note id>')}` };
  },
  run: async (p, ctx) => {
    const r = await loadItem(ctx, p.itemId);
    checkFields(ctx, `The inbox item ${shown(r.title)}`, shownItem(r));
    requireUnconverted(r);
    const made = (await createNote.run(await noteArgs(ctx, r, p.folder), ctx)) as { id: string; path: string; title: string };
    await archiveAs(ctx, r.id, `note:${made.id}`, `The note ${made.path}`);
    return {
      note: { id: made.id, path: made.path, title: made.title },
      item: await itemAfter(ctx, r.id),
      summary: `converted inbox item ${r.title} to the note ${made.path}`,
    };
  },
});

// ---------------------------------------------------------------------------------------------
// inbox.convertToTask

interface ToTask {
  itemId: string;
  projectId?: string;
}

async function taskArgs(ctx: ToolContext, r: InboxItemRow, projectId: string | undefined) {
  if (projectId !== undefined) await findProject((await planningDb(ctx)).manager, projectId);
  const description = textWithUrl(r);
  const tags = tagsOf(r);
  return {
    title: r.title,
    ...(description ? { description } : {}),
    ...(tags.length ? { tags } : {}),
    ...(projectId !== undefined ? { project: projectId } : {}),
  };
}

const convertToTask = op<ToTask>({
  name: 'inbox.convertToTask',
  effect: 'write',
  // The item is the inbox's; the task needs the Tasks surface too (checked below).
  feature: 'inbox',
  usage: 'args [{itemId, projectId?}] (project by id or name); answers {task, item}',
  parse: (args) => {
    const o = parseItemArgs(args, ['projectId']);
    const projectId = stringArg(o.projectId, 'projectId', { optional: true, max: 200 });
    return { itemId: o.itemId, ...(projectId !== undefined ? { projectId } : {}) };
  },
  check: async (p, ctx) => {
    await requireFeature(ctx, 'tasks');
    const r = await loadItem(ctx, p.itemId);
    requireUnconverted(r);
    await taskArgs(ctx, r, p.projectId);
  },
  preview: async (p, ctx) => {
    const r = await loadItem(ctx, p.itemId);
    requireUnconverted(r);
    rememberFields(ctx, shownItem(r));
    const fields = await createTask.preview!(await taskArgs(ctx, r, p.projectId), ctx);
    return { kind: 'fields', text: `${fields.text}\n${archiveRows(r, 'task:<the new task id>')}` };
  },
  run: async (p, ctx) => {
    await requireFeature(ctx, 'tasks');
    const r = await loadItem(ctx, p.itemId);
    checkFields(ctx, `The inbox item ${shown(r.title)}`, shownItem(r));
    requireUnconverted(r);
    const task = (await createTask.run(await taskArgs(ctx, r, p.projectId), ctx)) as Record<string, unknown> & { id: string; title: string };
    delete task.summary;
    delete task.created;
    await archiveAs(ctx, r.id, `task:${task.id}`, `The task ${task.title}`);
    return { task, item: await itemAfter(ctx, r.id), summary: `converted inbox item ${r.title} to a task` };
  },
});

// ---------------------------------------------------------------------------------------------
// inbox.convertToEvent

interface ToEvent {
  itemId: string;
  startAt: string;
  endAt?: string;
  calendar?: string;
}

const WHEN = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

function when(v: JsonValue | undefined, what: string): string {
  const t = stringArg(v, what, { max: 40 });
  if (!WHEN.test(t)) throw new MemoError('VALIDATION', `${what} ${shown(t)} is not a date (2026-05-14, all day) or an ISO 8601 date-time.`);
  return t;
}

const eventOf = (r: InboxItemRow, p: ToEvent) => {
  const description = textWithUrl(r);
  return {
    title: r.title,
    start: p.startAt,
    ...(p.endAt !== undefined ? { end: p.endAt } : {}),
    ...(description ? { description } : {}),
    ...(p.calendar !== undefined ? { calendar: p.calendar } : {}),
  };
};

const convertToEvent = op<ToEvent>({
  name: 'inbox.convertToEvent',
  effect: 'write',
  feature: 'inbox',
  usage: 'args [{itemId, startAt, endAt?, calendar?}] (a date is all day; needs the calendar pack); answers {event, item}',
  parse: (args) => {
    const o = parseItemArgs(args, ['startAt', 'endAt', 'calendar']);
    const calendar = stringArg(o.calendar, 'calendar', { optional: true, max: 200 });
    return {
      itemId: o.itemId,
      startAt: when(o.startAt, 'startAt'),
      ...(o.endAt !== undefined ? { endAt: when(o.endAt, 'endAt') } : {}),
      ...(calendar !== undefined ? { calendar } : {}),
    };
  },
  check: async (p, ctx) => {
    requireCalendar(ctx);
    await requireFeature(ctx, 'calendar');
    requireUnconverted(await loadItem(ctx, p.itemId));
  },
  preview: async (p, ctx) => {
    const r = await loadItem(ctx, p.itemId);
    requireUnconverted(r);
    rememberFields(ctx, shownItem(r));
    const e = eventOf(r, p);
    const rows = fieldRows({}, { calendar: e.calendar ?? 'local', title: e.title, start: e.start, end: e.end ?? null, description: e.description ?? null });
    return { kind: 'fields', text: ['New calendar event', ...rows, archiveRows(r, 'event:<the new event id>')].join('\n') };
  },
  run: async (p, ctx) => {
    const calendar = requireCalendar(ctx);
    const r = await loadItem(ctx, p.itemId);
    checkFields(ctx, `The inbox item ${shown(r.title)}`, shownItem(r));
    requireUnconverted(r);
    const e = eventOf(r, p);
    const event = await calendar.createEvent(ctx, { ...e, all_day: !p.startAt.includes('T') });
    await archiveAs(ctx, r.id, `event:${event.id}`, `The event ${event.title}`);
    return { event, item: await itemAfter(ctx, r.id), summary: `converted inbox item ${r.title} to an event in ${event.calendar}` };
  },
});

// ---------------------------------------------------------------------------------------------
// inbox.convertToReminder

interface ToReminder {
  itemId: string;
  remindAt: string;
}

/** A moment with its zone (Z or an offset), as UTC (the inbox's own check, as vault_snooze_inbox_item uses). */
function zonedMoment(v: JsonValue | undefined, what: string): string {
  return checkMoment(stringArg(v, what, { max: 40 }));
}

const convertToReminder = op<ToReminder>({
  name: 'inbox.convertToReminder',
  effect: 'write',
  feature: 'inbox',
  usage: 'args [{itemId, remindAt}] (ISO 8601 with Z or an offset, in the future; the item stays in the inbox); answers {item}',
  parse: (args) => {
    const o = parseItemArgs(args, ['remindAt']);
    return { itemId: o.itemId, remindAt: zonedMoment(o.remindAt, 'remindAt') };
  },
  check: async (p, ctx) => {
    requireFuture(p.remindAt);
    requireUnconverted(await loadItem(ctx, p.itemId));
  },
  preview: async (p, ctx): Promise<Preview> => {
    const r = await loadItem(ctx, p.itemId);
    requireUnconverted(r);
    rememberFields(ctx, shownItem(r));
    const rows = fieldRows({ remind_at: r.remind_at }, { remind_at: p.remindAt });
    return { kind: 'fields', text: [`Inbox item ${r.title} (id ${r.id}) (stays in the inbox)`, ...(rows.length ? rows : ['(no field changes)'])].join('\n') };
  },
  run: thenRemind(
    inPlanning(async (em, p: ToReminder, ctx) => {
      const { InboxItemRow } = await schema();
      requireFuture(p.remindAt);
      const r = await findItem(em, p.itemId);
      checkFields(ctx, `The inbox item ${shown(r.title)}`, shownItem(r));
      requireUnconverted(r);
      if (r.remind_at !== p.remindAt) await em.update(InboxItemRow, { id: r.id }, { remind_at: p.remindAt, updated_at: now() });
      const after = (await em.findOneBy(InboxItemRow, { id: r.id }))!;
      return {
        item: {
          id: after.id,
          title: after.title,
          content: after.content,
          url: after.url,
          tags: tagsOf(after),
          remind_at: after.remind_at,
          archived: after.archived_at !== null,
          converted_to: after.converted_to,
          updated_at: after.updated_at,
        },
        summary: `set a reminder for ${after.title} at ${p.remindAt}`,
      };
    }),
  ),
});

export const BRIDGE_INBOX_OPS: BridgeOp[] = [captureLink, convertToNote, convertToTask, convertToEvent, convertToReminder];
