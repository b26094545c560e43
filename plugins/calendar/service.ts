/**
 * What the calendar offers other packs through the kernel (`api.provide('calendar.events', ...)`),
 * never by import: the vault's desktop bridge reads ranges, creates events from inbox items and
 * creates, changes and deletes events (calendar.createEvent/updateEvent/deleteEvent), the canvas
 * checks that an event exists before it becomes a card. Every method takes the calling tool's
 * context and runs with the calendar pack's own settings and data folder, through the same code as
 * get_calendar_events and create/update/delete_calendar_event, so the rules are the tools' own:
 * external calendars only for the services the person allowed, decided from the stored answers and
 * never from anything the caller passes; writes only to local or a writable CalDAV calendar; the
 * previews the tools show; and a write refused (CONFLICT) when the event changed after its preview.
 *
 * That last check keys the ETag a preview saw by the context object the preview ran with, so one
 * caller context is always given the same derived context (see `mine`): the caller's preview and
 * run of one call then meet the same ETag, as the calendar's own tools do.
 */
import { MemoError, type PackApi, type Preview, type ToolContext } from 'memo-kernel/pack';
import type { ToolArgs } from './tool-args.js';

/** One occurrence as a range read gives it. */
export interface CalendarEvent {
  /** calendar:uid, as get_calendar_events gives it (the same for every occurrence of a series). */
  id: string;
  title: string;
  /** ISO date-time in the pack's zone, or a date for an all-day event. */
  start: string;
  /** Exclusive end (the day after the last day for an all-day event). */
  end: string;
  all_day: boolean;
  /** local, a file or subscription calendar's id, or account/calendar for CalDAV. */
  calendar: string;
  location?: string | null;
}

/** An event as a write gives it back: its times as the range reads give them. */
export interface WrittenEvent {
  id: string;
  title: string;
  start: string;
  end: string;
  /** local, or account/calendar for CalDAV. */
  calendar: string;
}

/**
 * A new event. `start`/`end` as create_calendar_event takes them: a date-time (with Z or an offset,
 * else read in the pack's zone), or with `all_day` dates (a date-time is cut to its date), the end
 * being the last day. Default end: an hour after a timed start, the same day for an all-day one.
 */
export interface NewEvent {
  title: string;
  start: string;
  end?: string;
  all_day?: boolean;
  location?: string;
  description?: string;
  /** local (default), a CalDAV account (its only writable calendar), or account/calendar. */
  calendar?: string;
}

/**
 * Fields to change, as update_calendar_event takes them (a date start makes the event all-day, its
 * end the last day; a start alone keeps the duration). `null` clears a location or description.
 */
export interface EventChanges {
  title?: string;
  start?: string;
  end?: string;
  location?: string | null;
  description?: string | null;
}

/** Offered under the token `calendar.events`. */
export interface CalendarEvents {
  /**
   * Events overlapping [startAt, endAt), recurring ones expanded. Each bound is ISO 8601: a date-time
   * (with Z or an offset, else read in the pack's zone) or a date (its midnight; as the end, that
   * whole day is included). No startAt: from today; no endAt: 30 days after the start. External
   * calendars only for the services the person consented to (never from the caller's say-so).
   */
  listEvents(ctx: ToolContext, q: { startAt?: string; endAt?: string }): Promise<CalendarEvent[]>;
  /** One event (a series by its first occurrence) by id; null when there is none or its service is not allowed. */
  getEvent(ctx: ToolContext, id: string): Promise<{ id: string; title: string; start: string; end: string } | null>;
  /** What create_calendar_event shows a person before it writes `e` (VALIDATION or NOT_FOUND for what it would refuse). */
  previewCreate(ctx: ToolContext, e: NewEvent): Promise<Preview>;
  /** Creates an event in the local calendar (or a named writable one), as create_calendar_event would. */
  createEvent(ctx: ToolContext, e: NewEvent): Promise<WrittenEvent>;
  /** What update_calendar_event shows: each field's old and new value. Remembers the event's ETag for this call's updateEvent. */
  previewUpdate(ctx: ToolContext, id: string, fields: EventChanges): Promise<Preview>;
  /**
   * Changes an event (every occurrence of a series), as update_calendar_event would: CONFLICT when it
   * changed after this call's previewUpdate. `changes`: one line per field, `title: Old -> New`.
   */
  updateEvent(ctx: ToolContext, id: string, fields: EventChanges): Promise<WrittenEvent & { changes: string }>;
  /** What delete_calendar_event shows: what the delete loses. Remembers the event's ETag for this call's deleteEvent. */
  previewDelete(ctx: ToolContext, id: string): Promise<Preview>;
  /** Deletes an event (every occurrence of a series), as delete_calendar_event would: CONFLICT when it changed after this call's previewDelete. */
  deleteEvent(ctx: ToolContext, id: string): Promise<{ id: string; title: string }>;
}

const DEFAULT_DAYS = 30;

export function calendarEvents(api: PackApi): CalendarEvents {
  // The caller's context with the calendar's own settings and data folder: one per caller context,
  // because the write tools remember the ETag a preview saw by the context object, and a call's
  // preview and run must meet there (a fresh copy each time would skip the CONFLICT check).
  const derived = new WeakMap<ToolContext, ToolContext>();
  const mine = (ctx: ToolContext): ToolContext => {
    let c = derived.get(ctx);
    if (!c) derived.set(ctx, (c = { ...ctx, config: api.config(), dataDir: api.dataDir }));
    return c;
  };
  const writes = () => import('./write-tools.js');
  const service: CalendarEvents = {
    async listEvents(ctx, q) {
      const c = mine(ctx);
      const { getCalendarEvents, zoneFor } = await import('./read-tools.js');
      const { isoInZone } = await import('./zoned-time.js');
      const start = q.startAt ?? isoInZone(Date.now(), zoneFor(c, undefined)).slice(0, 10);
      const end = q.endAt ?? daysAfter(start.slice(0, 10), DEFAULT_DAYS);
      // includeExternal is left at its default: the stored consent answers alone decide.
      const r = await getCalendarEvents({ start, end }, c);
      return r.events.map((e) => ({
        id: e.id,
        title: e.title,
        start: e.start,
        end: e.end,
        all_day: e.allDay,
        calendar: e.calendar ? `${e.source}/${e.calendar}` : e.source,
        location: e.location ?? null,
      }));
    },

    async getEvent(ctx, id) {
      const c = mine(ctx);
      const i = id.indexOf(':');
      if (i <= 0 || i === id.length - 1) return null;
      const sourceId = id.slice(0, i);
      const uid = id.slice(i + 1);
      const { runtimeOf } = await import('./runtime.js');
      const { LOCAL_ID, serviceOf } = await import('./sources.js');
      const { CaldavObjectRow, FeedCacheRow, LocalEventRow } = await import('./schema.js');
      const { zoneFor } = await import('./read-tools.js');
      const rt = runtimeOf(c);
      const db = await rt.database();
      let ics: string | null;
      if (sourceId === LOCAL_ID) ics = (await db.getRepository(LocalEventRow).findOneBy({ uid }))?.ics ?? null;
      else {
        const source = rt.settings.source(sourceId);
        if (!source) return null;
        const service = serviceOf(source);
        // The same rule as the range reads: an external service only when the person allowed it.
        if (service && rt.settings.consentState(service) !== 'allowed') return null;
        if (source.kind === 'caldav') ics = (await db.getRepository(CaldavObjectRow).findOneBy({ source_id: sourceId, uid }))?.ics ?? null;
        else if (source.kind === 'subscription') ics = (await db.getRepository(FeedCacheRow).findOneBy({ source_id: sourceId }))?.body ?? null;
        else {
          const { handle } = await c.sandbox.openForRead(source.path);
          try {
            ics = await handle.readFile('utf8');
          } finally {
            await handle.close();
          }
        }
      }
      if (ics === null) return null;
      return firstOccurrence(ics, uid, `${sourceId}:${uid}`, zoneFor(c, undefined));
    },

    previewCreate: async (ctx, e) => (await writes()).createEvent.preview(createArgs(e), mine(ctx)),

    async createEvent(ctx, e) {
      const args = createArgs(e);
      const made = (await (await writes()).createEvent.run(args, mine(ctx))) as { id: string; title: string; calendar: string };
      // The times as the range reads give them (ISO 8601 in the pack's zone), not as the preview shows them.
      const stored = await service.getEvent(ctx, made.id);
      return { id: made.id, title: made.title, start: stored?.start ?? args.start, end: stored?.end ?? args.end ?? args.start, calendar: made.calendar };
    },

    previewUpdate: async (ctx, id, fields) => (await writes()).updateEvent.preview(updateArgs(id, fields), mine(ctx)),

    async updateEvent(ctx, id, fields) {
      const c = mine(ctx);
      const done = (await (await writes()).updateEvent.run(updateArgs(id, fields), c)) as {
        id: string;
        title: string;
        start: string;
        end: string;
        changes: string;
      };
      // As the range reads give the times; a calendar written to but not read (no consent) keeps the tool's.
      const stored = await service.getEvent(ctx, done.id);
      return {
        id: done.id,
        title: done.title,
        start: stored?.start ?? done.start,
        end: stored?.end ?? done.end,
        calendar: await calendarOf(c, done.id),
        changes: done.changes,
      };
    },

    previewDelete: async (ctx, id) => (await writes()).deleteEvent.preview({ id }, mine(ctx)),

    async deleteEvent(ctx, id) {
      const done = (await (await writes()).deleteEvent.run({ id }, mine(ctx))) as { id: string; title: string };
      return { id: done.id, title: done.title };
    },
  };
  return service;
}

/** create_calendar_event's arguments for a new event: an all-day event is dates, its last day as the end. */
function createArgs(e: NewEvent): ToolArgs['create_calendar_event'] {
  const day = (t: string | undefined) => (t === undefined ? undefined : e.all_day ? t.slice(0, 10) : t);
  const start = day(e.start)!;
  const end = day(e.end);
  if (e.all_day && !/^\d{4}-\d{2}-\d{2}$/.test(start)) throw new MemoError('VALIDATION', `${JSON.stringify(e.start)} is not a date.`);
  return {
    title: e.title,
    start,
    ...(end !== undefined ? { end } : {}),
    ...(e.location ? { location: e.location } : {}),
    ...(e.description ? { description: e.description } : {}),
    ...(e.calendar !== undefined ? { calendar: e.calendar } : {}),
  };
}

/** update_calendar_event's arguments: a null location or description is its empty text, which clears the field. */
function updateArgs(id: string, f: EventChanges): ToolArgs['update_calendar_event'] {
  return {
    id,
    ...(f.title !== undefined ? { title: f.title } : {}),
    ...(f.start !== undefined ? { start: f.start } : {}),
    ...(f.end !== undefined ? { end: f.end } : {}),
    ...(f.location !== undefined ? { location: f.location ?? '' } : {}),
    ...(f.description !== undefined ? { description: f.description ?? '' } : {}),
  };
}

/** The calendar an event is in as the range reads name it: local, or account/calendar for CalDAV. */
async function calendarOf(c: ToolContext, id: string): Promise<string> {
  const sourceId = id.slice(0, id.indexOf(':'));
  const { LOCAL_ID } = await import('./sources.js');
  if (sourceId === LOCAL_ID) return LOCAL_ID;
  const { runtimeOf } = await import('./runtime.js');
  const { CaldavCalendarRow, CaldavObjectRow } = await import('./schema.js');
  const db = await runtimeOf(c).database();
  const row = await db.getRepository(CaldavObjectRow).findOneBy({ source_id: sourceId, uid: id.slice(sourceId.length + 1) });
  const cal = row ? await db.getRepository(CaldavCalendarRow).findOneBy({ url: row.calendar_url }) : null;
  return cal ? `${sourceId}/${cal.name}` : sourceId;
}

/** The date `days` after a YYYY-MM-DD date (an unreadable one is left for the range check to refuse). */
function daysAfter(date: string, days: number): string {
  const t = Date.parse(`${date}T00:00:00Z`);
  return Number.isNaN(t) ? date : new Date(t + days * 86_400_000).toISOString().slice(0, 10);
}

/**
 * An event's first occurrence (a series: its first one) with its times as get_calendar_events gives
 * them: expanded by the same code over a window around its DTSTART. Null when the text has no such event.
 */
async function firstOccurrence(ics: string, uid: string, id: string, zone: string): Promise<{ id: string; title: string; start: string; end: string } | null> {
  const { expandCalendar, parseCalendars } = await import('./recurrence.js');
  const { default: ICAL } = await import('ical.js');
  let startMs: number | null = null;
  for (const cal of parseCalendars(ics)) {
    const ev = cal.getAllSubcomponents('vevent').find((e) => String(e.getFirstPropertyValue('uid')) === uid && !e.hasProperty('recurrence-id'));
    if (ev) {
      startMs = new ICAL.Event(ev).startDate.toUnixTime() * 1000;
      break;
    }
  }
  if (startMs === null) return null;
  // Two days either side cover every zone and a floating time read in any of them.
  const { occurrences } = expandCalendar(ics, { startMs: startMs - 2 * 86_400_000, endMs: startMs + 2 * 86_400_000, zone });
  const o = occurrences.filter((x) => x.uid === uid).sort((a, b) => a.startMs - b.startMs)[0];
  return o ? { id, title: o.title, start: o.start, end: o.end } : null;
}
