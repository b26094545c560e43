/**
 * The calendar's write tools: create_calendar_event, update_calendar_event (medium/write) and
 * delete_calendar_event (dangerous/delete). They write to the local calendar, or to a CalDAV
 * calendar the person marked writable. Each `preview` reads the event as it is now (from the server
 * for CalDAV) and shows the field changes (one fact each; a description, free text, quoted after
 * them), or what a delete loses; `run` reads it again and refuses
 * (CONFLICT) if its ETag moved since the preview, and the write itself carries that ETag (If-Match
 * on the server, the revision locally), so a change made in between is never overwritten.
 */
import { randomUUID } from 'node:crypto';
import { MemoError, type Preview, type PreviewFact, type PreviewQuote, type ToolContext } from 'memo-kernel/pack';
import type { DataSource } from 'typeorm';
import { fetchObject, uidOf, writableCalendar, writeObject } from './caldav.js';
import { buildEvent, changeEvent, changeOccurrence, deleteOccurrence, fieldChanges, viewOf, type EventFields, type EventView } from './ics-build.js';
import { zoneFor } from './read-tools.js';
import { runtimeOf, type CalendarRuntime } from './runtime.js';
import { CaldavCalendarRow, CaldavObjectRow, LocalEventRow } from './schema.js';
import { LOCAL_ID, type CaldavSource } from './sources.js';
import type { ToolArgs } from './tool-args.js';

type Impl<A> = {
  run: (args: A, ctx: ToolContext) => Promise<unknown>;
  preview: (args: A, ctx: ToolContext) => Promise<Preview>;
};

/** The ETag each call's preview was made from (the same ctx reaches preview and run). */
const previewed = new WeakMap<ToolContext, string>();

/** A CalDAV write waits this long at most (the pack's read deadline is for reads that have a cache to fall back on). */
const WRITE_TIMEOUT_MS = 30_000;

type Target = { kind: 'local' } | { kind: 'caldav'; source: CaldavSource; calendar: CaldavCalendarRow };

async function targetOf(rt: CalendarRuntime, db: DataSource, name: string | undefined): Promise<Target> {
  const [id, ...rest] = (name ?? LOCAL_ID).split('/');
  if (id === LOCAL_ID && rest.length === 0) return { kind: 'local' };
  const source = rt.settings.source(id ?? '');
  if (!source) throw new MemoError('NOT_FOUND', `No calendar is called "${name}" (list_calendars lists them).`);
  if (source.kind !== 'caldav')
    throw new MemoError(
      'PERMISSION_DENIED',
      `"${source.id}" is a ${source.kind} calendar, which Memo only reads: write to local or a writable CalDAV calendar.`,
    );
  return { kind: 'caldav', source, calendar: await writableCalendar(db, source, rest.length ? rest.join('/') : undefined) };
}

/** An event as it is now: its text, the ETag that text has, and where it lives. */
interface Current {
  sourceId: string;
  uid: string;
  ics: string;
  etag: string;
  caldav?: { source: CaldavSource; url: string; calendar: CaldavCalendarRow };
}

function splitId(id: string): { sourceId: string; uid: string } {
  const i = id.indexOf(':');
  if (i <= 0 || i === id.length - 1) throw new MemoError('VALIDATION', `"${id}" is not an event id: get_calendar_events gives them as calendar:uid.`);
  return { sourceId: id.slice(0, i), uid: id.slice(i + 1) };
}

async function currentOf(rt: CalendarRuntime, db: DataSource, id: string, ctx: ToolContext): Promise<Current> {
  const { sourceId, uid } = splitId(id);
  if (sourceId === LOCAL_ID) {
    const row = await db.getRepository(LocalEventRow).findOneBy({ uid });
    if (!row) throw new MemoError('NOT_FOUND', `The local calendar has no event ${uid}.`);
    return { sourceId, uid, ics: row.ics, etag: `r${row.revision}` };
  }
  const source = rt.settings.source(sourceId);
  if (!source) throw new MemoError('NOT_FOUND', `No calendar is called "${sourceId}".`);
  if (source.kind !== 'caldav') throw new MemoError('PERMISSION_DENIED', `"${sourceId}" is a ${source.kind} calendar, which Memo only reads.`);
  const row = await db.getRepository(CaldavObjectRow).findOneBy({ source_id: sourceId, uid });
  if (!row) throw new MemoError('NOT_FOUND', `CalDAV account "${sourceId}" has no event ${uid} in its last sync (get_calendar_events refreshes it).`);
  const calendar = await db.getRepository(CaldavCalendarRow).findOneBy({ url: row.calendar_url });
  if (!calendar) throw new MemoError('NOT_FOUND', `The calendar of event ${uid} is gone from "${sourceId}".`);
  await writableCalendar(db, source, calendar.url);
  const live = await fetchObject(source, rt.settings, row.url, WRITE_TIMEOUT_MS, ctx.signal);
  if (!live) {
    await db.getRepository(CaldavObjectRow).delete({ url: row.url });
    throw new MemoError('NOT_FOUND', `The event ${uid} was deleted on the server of "${sourceId}".`);
  }
  return { sourceId, uid, ics: live.ics, etag: live.etag ?? '', caldav: { source, url: row.url, calendar } };
}

function checkSincePreview(ctx: ToolContext, current: Current): void {
  const seen = previewed.get(ctx);
  if (seen !== undefined && seen !== current.etag)
    throw new MemoError(
      'CONFLICT',
      `The event changed after the preview was shown (ETag ${seen} is now ${current.etag || 'unknown'}), so nothing was written. Look at it again and retry.`,
      { details: { id: `${current.sourceId}:${current.uid}` } },
    );
}

function conflict(current: Current, status: number): MemoError {
  return new MemoError(
    status === 412 ? 'CONFLICT' : 'TOOL_FAILED',
    status === 412
      ? `The event changed on the server of "${current.sourceId}" just now (412 Precondition Failed), so nothing was written. Look at it again and retry.`
      : `The server of "${current.sourceId}" refused the write (HTTP ${status}).`,
  );
}

/** Keeps the CalDAV cache in step with a write, so the next read shows it without a sync. */
async function cacheObject(db: DataSource, rt: CalendarRuntime, source: CaldavSource, calendarUrl: string, url: string, ctx: ToolContext): Promise<void> {
  const live = await fetchObject(source, rt.settings, url, WRITE_TIMEOUT_MS, ctx.signal).catch(() => null);
  if (live)
    await db
      .getRepository(CaldavObjectRow)
      .save({ url, source_id: source.id, calendar_url: calendarUrl, uid: uidOf(live.ics), etag: live.etag, ics: live.ics });
}

function fieldsOf(args: ToolArgs['update_calendar_event'] | ToolArgs['create_calendar_event']): EventFields {
  const f: EventFields = {};
  if (args.title !== undefined) f.title = args.title;
  if (args.start !== undefined) f.start = args.start;
  if (args.end !== undefined) f.end = args.end;
  if (args.timeZone !== undefined) f.timeZone = args.timeZone;
  // An empty text clears the field.
  if (args.location !== undefined) f.location = args.location || null;
  if (args.description !== undefined) f.description = args.description || null;
  if (args.recurrence !== undefined) f.recurrence = args.recurrence || null;
  return f;
}

/** The fields a preview shows as facts, one line each; the description is free text, quoted after them. */
const SHORT_FIELDS = ['title', 'start', 'end', 'timeZone', 'location', 'repeats'] as const;

function shown(v: string | null | undefined): string {
  return v === null || v === undefined ? '(not set)' : v;
}

/**
 * An event's fields as a preview, created (`before` null) or changed: each short field a fact
 * (`title: Dentist -> Dentist (moved)` for a change), and the description as it was and as it will
 * be, quoted: it is the caller's free text (or the calendar's), and a line of it must not pass for a field.
 */
function eventPreview(before: EventView | null, after: EventView, lead: PreviewFact[]): Preview {
  const facts = [...lead];
  for (const k of SHORT_FIELDS)
    if (!before) facts.push({ label: k, value: shown(after[k]) });
    else if (shown(before[k]) !== shown(after[k])) facts.push({ label: k, value: `${shown(before[k])} -> ${shown(after[k])}` });
  const quoted: PreviewQuote[] = [];
  const was = before?.description ?? null;
  const will = after.description;
  if (!before) {
    if (will === null) facts.push({ label: 'description', value: '(not set)' });
    else quoted.push({ label: 'description', text: will });
  } else if (was !== will) {
    facts.push({
      label: 'description',
      value: was === null ? 'set (quoted below)' : will === null ? 'removed (what it was is quoted below)' : 'replaced (both quoted below)',
    });
    if (was !== null) quoted.push({ label: 'description now', text: was, from: 'the calendar' });
    if (will !== null) quoted.push({ label: 'description after', text: will });
  }
  const changed = facts.length > lead.length || quoted.length > 0;
  return { kind: 'fields', text: before && !changed ? '(no field changes)' : '', facts, quoted };
}

function calendarLabel(t: Target): string {
  return t.kind === 'local' ? LOCAL_ID : `${t.source.id}/${t.calendar.name}`;
}

function eventRef(sourceId: string, uid: string, view: EventView) {
  return { id: `${sourceId}:${uid}`, uid, title: view.title, start: view.start, end: view.end, timeZone: view.timeZone };
}

// ---------------------------------------------------------------------------------------------
// create_calendar_event

function planCreate(args: ToolArgs['create_calendar_event'], ctx: ToolContext) {
  const zone = zoneFor(ctx, args.timeZone);
  const built = buildEvent({ ...fieldsOf(args), title: args.title, start: args.start }, zone);
  return { ...built, view: viewOf(built.ics, built.uid) };
}

export const createEvent: Impl<ToolArgs['create_calendar_event']> = {
  preview: async (args, ctx) => {
    const rt = runtimeOf(ctx);
    const target = await targetOf(rt, await rt.database(), args.calendar);
    const plan = planCreate(args, ctx);
    return eventPreview(null, plan.view, [{ label: 'calendar', value: calendarLabel(target) }]);
  },
  run: async (args, ctx) => {
    const rt = runtimeOf(ctx);
    const db = await rt.database();
    const target = await targetOf(rt, db, args.calendar);
    const plan = planCreate(args, ctx);
    const now = new Date().toISOString();
    if (target.kind === 'local') {
      await db.getRepository(LocalEventRow).insert({ uid: plan.uid, ics: plan.ics, title: plan.view.title, revision: 1, created_at: now, updated_at: now });
      return { ...eventRef(LOCAL_ID, plan.uid, plan.view), calendar: LOCAL_ID, created: true, summary: `created "${plan.view.title}" in local` };
    }
    const filename = `${randomUUID()}.ics`;
    const r = await writeObject(
      target.source,
      rt.settings,
      { kind: 'create', calendarUrl: target.calendar.url, filename, ics: plan.ics },
      WRITE_TIMEOUT_MS,
      ctx.signal,
    );
    if (!r.ok) throw new MemoError('TOOL_FAILED', `The server of "${target.source.id}" refused the new event (HTTP ${r.status}).`);
    const url = new URL(filename, target.calendar.url.endsWith('/') ? target.calendar.url : `${target.calendar.url}/`).href;
    await cacheObject(db, rt, target.source, target.calendar.url, url, ctx);
    return {
      ...eventRef(target.source.id, plan.uid, plan.view),
      calendar: calendarLabel(target),
      created: true,
      summary: `created "${plan.view.title}" in ${calendarLabel(target)}`,
    };
  },
};

/** Writes an event's new text where it lives, with its ETag (the local revision, or If-Match on the server). */
async function replace(db: DataSource, rt: CalendarRuntime, ctx: ToolContext, current: Current, ics: string): Promise<void> {
  if (!current.caldav) {
    const revision = Number(current.etag.slice(1));
    const title = viewOf(ics, current.uid).title;
    const r = await db
      .getRepository(LocalEventRow)
      .update({ uid: current.uid, revision }, { ics, title, revision: revision + 1, updated_at: new Date().toISOString() });
    if (!r.affected) throw new MemoError('CONFLICT', 'The event changed while it was being written, so nothing was written. Look at it again and retry.');
    return;
  }
  const w = await writeObject(
    current.caldav.source,
    rt.settings,
    { kind: 'update', url: current.caldav.url, etag: current.etag, ics },
    WRITE_TIMEOUT_MS,
    ctx.signal,
  );
  if (!w.ok) throw conflict(current, w.status);
  await cacheObject(db, rt, current.caldav.source, current.caldav.calendar.url, current.caldav.url, ctx);
}

// ---------------------------------------------------------------------------------------------
// update_calendar_event

function planUpdate(args: ToolArgs['update_calendar_event'], ctx: ToolContext, current: Current) {
  const fields = fieldsOf(args);
  if (!Object.keys(fields).length) throw new MemoError('VALIDATION', 'Say what to change: title, start, end, timeZone, location, description or recurrence.');
  const zone = zoneFor(ctx, undefined);
  if (args.occurrence === undefined) return { ...changeEvent(current.ics, current.uid, fields, zone), when: null };
  return changeOccurrence(current.ics, current.uid, args.occurrence, fields, zone);
}

export const updateEvent: Impl<ToolArgs['update_calendar_event']> = {
  preview: async (args, ctx) => {
    const rt = runtimeOf(ctx);
    const current = await currentOf(rt, await rt.database(), args.id, ctx);
    const { before, after, when } = planUpdate(args, ctx, current);
    previewed.set(ctx, current.etag);
    return eventPreview(before, after, when ? [{ label: 'occurrence', value: `only the one of ${when}` }] : []);
  },
  run: async (args, ctx) => {
    const rt = runtimeOf(ctx);
    const db = await rt.database();
    const current = await currentOf(rt, db, args.id, ctx);
    checkSincePreview(ctx, current);
    const { ics, before, after, when } = planUpdate(args, ctx, current);
    await replace(db, rt, ctx, current, ics);
    return {
      ...eventRef(current.sourceId, current.uid, after),
      ...(args.occurrence !== undefined ? { occurrence: args.occurrence } : {}),
      updated: true,
      changes: fieldChanges(before, after),
      summary: `updated "${after.title}"${when ? ` (the occurrence of ${when})` : ''} in ${current.sourceId}`,
    };
  },
};

// ---------------------------------------------------------------------------------------------
// delete_calendar_event

function placeOf(current: Current): string {
  return current.caldav ? `${current.sourceId}/${current.caldav.calendar.name} (on the server)` : current.sourceId;
}

function whatIsLost(current: Current, v: EventView): string {
  return [
    `Deletes "${v.title}" from ${placeOf(current)}:`,
    `when: ${v.start} to ${v.end}${v.timeZone !== 'all-day' ? ` (${v.timeZone})` : ''}`,
    ...(v.repeats ? [`repeats: ${v.repeats} (every occurrence is deleted)`] : []),
    ...(v.location ? [`location: ${v.location}`] : []),
    ...(v.attendees ? [`attendees: ${v.attendees}`] : []),
    ...(v.description ? [`description: ${v.description.length > 200 ? `${v.description.slice(0, 199)}…` : v.description}`] : []),
  ].join('\n');
}

export const deleteEvent: Impl<ToolArgs['delete_calendar_event']> = {
  preview: async (args, ctx) => {
    const rt = runtimeOf(ctx);
    const current = await currentOf(rt, await rt.database(), args.id, ctx);
    const view = viewOf(current.ics, current.uid);
    previewed.set(ctx, current.etag);
    if (args.occurrence !== undefined) {
      const { when } = deleteOccurrence(current.ics, current.uid, args.occurrence);
      return { kind: 'delete', text: `Deletes one occurrence of "${view.title}" (${when}) from ${placeOf(current)}; the rest of the series stays.` };
    }
    return { kind: 'delete', text: whatIsLost(current, view) };
  },
  run: async (args, ctx) => {
    const rt = runtimeOf(ctx);
    const db = await rt.database();
    const current = await currentOf(rt, db, args.id, ctx);
    checkSincePreview(ctx, current);
    const view = viewOf(current.ics, current.uid);
    if (args.occurrence !== undefined) {
      const { ics, when } = deleteOccurrence(current.ics, current.uid, args.occurrence);
      await replace(db, rt, ctx, current, ics);
      return {
        ...eventRef(current.sourceId, current.uid, view),
        occurrence: args.occurrence,
        deleted: true,
        summary: `deleted the occurrence of ${when} of "${view.title}" from ${current.sourceId}`,
      };
    }
    if (!current.caldav) {
      const r = await db.getRepository(LocalEventRow).delete({ uid: current.uid, revision: Number(current.etag.slice(1)) });
      if (!r.affected) throw new MemoError('CONFLICT', 'The event changed while it was being deleted, so nothing was deleted. Look at it again and retry.');
    } else {
      const w = await writeObject(
        current.caldav.source,
        rt.settings,
        { kind: 'delete', url: current.caldav.url, etag: current.etag },
        WRITE_TIMEOUT_MS,
        ctx.signal,
      );
      if (!w.ok) throw conflict(current, w.status);
      await db.getRepository(CaldavObjectRow).delete({ url: current.caldav.url });
    }
    return { ...eventRef(current.sourceId, current.uid, view), deleted: true, summary: `deleted "${view.title}" from ${current.sourceId}` };
  },
};
