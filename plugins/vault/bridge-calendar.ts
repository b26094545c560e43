/**
 * Desktop bridge operations: the calendar (see bridge-op.ts for the contract every operation keeps).
 * The events come from the calendar pack, reached through the kernel (`calendar.events`), never by
 * import; without it loaded the reads answer `{success: false}` saying so and the writes are refused
 * saying so before anyone is asked. Which external calendars are shown is the calendar pack's
 * decision from the person's stored consent answers: a caller's `includeExternal` is accepted, as the
 * renderer bridge accepts it, and ignored.
 *
 * The writes (createEvent, updateEvent, deleteEvent) run the calendar's own create/update/
 * delete_calendar_event through that service, so its rules hold here too: writes only to local or a
 * writable CalDAV calendar, the preview the calendar's tools show, and a write refused (CONFLICT)
 * when the event changed after that preview. An event the vault cannot read (a service the person
 * has not allowed) is NOT_FOUND here, as for calendar.listEvents: the bridge changes only what it can see.
 */
import { MemoError, type JsonValue, type Preview, type ToolContext } from 'memo-kernel/pack';
import { booleanArg, objectArg, onlyKeys, op, stringArg, type BridgeOp } from './bridge-op.js';
import { runtimeOf } from './runtime.js';
import { shown } from './vault.js';

/**
 * What the vault uses of the calendar pack's `calendar.events` service (declared here because packs
 * never import each other; the calendar pack's plugins/calendar/service.ts is the source).
 */
export interface CalendarEventsService {
  listEvents(
    ctx: ToolContext,
    q: { startAt?: string; endAt?: string },
  ): Promise<Array<{ id: string; title: string; start: string; end: string; all_day: boolean; calendar: string; location?: string | null }>>;
  getEvent(ctx: ToolContext, id: string): Promise<{ id: string; title: string; start: string; end: string } | null>;
  previewCreate(ctx: ToolContext, e: NewEvent): Promise<Preview>;
  createEvent(ctx: ToolContext, e: NewEvent): Promise<WrittenEvent>;
  previewUpdate(ctx: ToolContext, id: string, fields: EventChanges): Promise<Preview>;
  /** CONFLICT when the event changed after this call's previewUpdate (the same ctx). */
  updateEvent(ctx: ToolContext, id: string, fields: EventChanges): Promise<WrittenEvent & { changes: string }>;
  previewDelete(ctx: ToolContext, id: string): Promise<Preview>;
  /** CONFLICT when the event changed after this call's previewDelete (the same ctx). */
  deleteEvent(ctx: ToolContext, id: string): Promise<{ id: string; title: string }>;
}

/** A new event: with all_day, dates (a date-time is cut to its date) and the end is the last day. */
interface NewEvent {
  title: string;
  start: string;
  end?: string;
  all_day?: boolean;
  location?: string;
  description?: string;
  calendar?: string;
}

/** Fields to change, as update_calendar_event takes them; null clears a location or description. */
interface EventChanges {
  title?: string;
  start?: string;
  end?: string;
  location?: string | null;
  description?: string | null;
}

interface WrittenEvent {
  id: string;
  title: string;
  start: string;
  end: string;
  calendar: string;
}

const CALENDAR_NOT_LOADED = 'the calendar pack is not loaded';

/** The calendar pack's service as it is now (looked up per call: the pack may be unloaded), or null. */
export function calendarService(ctx: ToolContext): CalendarEventsService | null {
  return runtimeOf(ctx).api.lookup<CalendarEventsService>('calendar.events') ?? null;
}

/** The service, or TOOL_FAILED saying the calendar pack is not loaded. */
export function requireCalendar(ctx: ToolContext): CalendarEventsService {
  const s = calendarService(ctx);
  if (!s) throw new MemoError('TOOL_FAILED', CALENDAR_NOT_LOADED);
  return s;
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/;

/** A range bound: a date or an ISO 8601 date-time. */
function moment(v: JsonValue | undefined, what: string, optional: boolean): string | undefined {
  if (v === undefined && optional) return undefined;
  const t = stringArg(v, what, { max: 40 });
  if (!DATE.test(t) && !DATE_TIME.test(t)) throw new MemoError('VALIDATION', `${what} ${shown(t)} is not a date (2026-05-14) or an ISO 8601 date-time.`);
  return t;
}

interface Range {
  startAt?: string;
  endAt?: string;
}

/** The single-object shape [{startAt?, endAt?}] (includeExternal accepted and ignored). */
function rangeObject(args: JsonValue[], required: boolean): Range {
  if (args.length > 1) throw new MemoError('VALIDATION', 'it takes one object.');
  const o = args.length ? objectArg(args) : {};
  onlyKeys(o, ['startAt', 'endAt', 'includeExternal']);
  const startAt = moment(o.startAt, 'startAt', !required);
  const endAt = moment(o.endAt, 'endAt', !required);
  return { ...(startAt ? { startAt } : {}), ...(endAt ? { endAt } : {}) };
}

async function events(p: Range, ctx: ToolContext) {
  const list = await requireCalendar(ctx).listEvents(ctx, p);
  return { events: list, count: list.length, summary: `${list.length} event${list.length === 1 ? '' : 's'}` };
}

// ---------------------------------------------------------------------------------------------
// Writes

/** A write's args: exactly one object with only these keys. */
function theObject(args: JsonValue[], keys: readonly string[]): Record<string, JsonValue> {
  if (args.length !== 1) throw new MemoError('VALIDATION', 'it takes one object.');
  const o = objectArg(args);
  onlyKeys(o, keys);
  return o;
}

/** An event id as calendar.listEvents gives it (calendar:uid). */
function eventId(v: JsonValue | undefined): string {
  const id = stringArg(v, 'id', { max: 1000 });
  const i = id.indexOf(':');
  if (i <= 0 || i === id.length - 1) throw new MemoError('VALIDATION', `id ${shown(id)} is not an event id: calendar.listEvents gives them as calendar:uid.`);
  return id;
}

/** A location or description to change to: a text, or null to clear it. */
function clearable(v: JsonValue | undefined, what: string, max: number): string | null | undefined {
  if (v === null) return null;
  if (typeof v === 'string' && v.trim() === '') throw new MemoError('VALIDATION', `${what} is empty: give null to clear it.`);
  return stringArg(v, what, { optional: true, max });
}

const ZONED = /(Z|[+-]\d{2}:?\d{2})$/;

/**
 * Whether `end` comes before `start`, when that can be told here: both dates (the end the last day),
 * or date-times both with a zone or both without (read in the same zone). Anything else is left to
 * the calendar, whose preview and run refuse it too.
 */
function endsBefore(start: string, end: string): boolean {
  if (DATE.test(start) && DATE.test(end)) return end < start;
  if (!DATE_TIME.test(start) || !DATE_TIME.test(end) || ZONED.test(start) !== ZONED.test(end)) return false;
  const ms = (t: string) => Date.parse(ZONED.test(t) ? t.replace(/([+-]\d{2})(\d{2})$/, '$1:$2') : `${t}Z`);
  return ms(end) < ms(start);
}

/** The event an update or delete names, as the vault can see it (consent included), or NOT_FOUND. */
async function existingEvent(ctx: ToolContext, id: string) {
  const e = await requireCalendar(ctx).getEvent(ctx, id);
  if (!e) throw new MemoError('NOT_FOUND', `No calendar event ${shown(id)} (calendar.listEvents gives the ids, calendar:uid).`);
  return e;
}

/**
 * The calendar's preview as the bridge shows it, as text: its facts one line each (a line break
 * shown as ⏎), and free text (a description) quoted as JSON, so no line of it passes for a field.
 */
function asText(head: string, p: Preview): Preview {
  const line = (t: string) => t.replace(/\r\n|\r|\n/g, '⏎');
  const lines = [
    head,
    ...(p.text ? [p.text] : []),
    ...(p.facts ?? []).map((f) => `${f.label}: ${line(f.value)}`),
    ...(p.quoted ?? []).map((q) => `${q.label}${q.from ? ` (from ${q.from})` : ''}: ${JSON.stringify(q.text)}`),
  ];
  return { kind: p.kind, text: lines.join('\n') };
}

const CREATE_KEYS = ['title', 'startAt', 'endAt', 'allDay', 'location', 'description', 'calendar'];

function parseCreate(args: JsonValue[]): NewEvent {
  const o = theObject(args, CREATE_KEYS);
  const title = stringArg(o.title, 'title', { max: 500 });
  const startAt = moment(o.startAt, 'startAt', false)!;
  const endAt = moment(o.endAt, 'endAt', true);
  // A date is all day unless said otherwise, as inbox.convertToEvent reads it.
  const allDay = o.allDay === undefined ? DATE.test(startAt) : booleanArg(o.allDay, 'allDay');
  if (!allDay && DATE.test(startAt))
    throw new MemoError('VALIDATION', `startAt ${shown(startAt)} is a date, which is all day: give a date-time (2026-05-14T09:00) for a timed event.`);
  if (!allDay && endAt !== undefined && DATE.test(endAt))
    throw new MemoError('VALIDATION', `endAt ${shown(endAt)} is a date: a timed event ends at a date-time (2026-05-14T10:00).`);
  // All day, a date-time counts by its date (as the calendar service cuts it).
  const day = (t: string) => (allDay ? t.slice(0, 10) : t);
  if (endAt !== undefined && endsBefore(day(startAt), day(endAt))) throw new MemoError('VALIDATION', `endAt ${endAt} is before startAt ${startAt}.`);
  const location = stringArg(o.location, 'location', { optional: true, max: 2000 });
  const description = stringArg(o.description, 'description', { optional: true, max: 20000 });
  const calendar = stringArg(o.calendar, 'calendar', { optional: true, max: 300 });
  return {
    title,
    start: startAt,
    ...(endAt !== undefined ? { end: endAt } : {}),
    all_day: allDay,
    ...(location !== undefined ? { location } : {}),
    ...(description !== undefined ? { description } : {}),
    ...(calendar !== undefined ? { calendar } : {}),
  };
}

interface Update {
  id: string;
  fields: EventChanges;
}

const UPDATE_KEYS = ['id', 'title', 'startAt', 'endAt', 'location', 'description'];

function parseUpdate(args: JsonValue[]): Update {
  const o = theObject(args, UPDATE_KEYS);
  const id = eventId(o.id);
  const title = stringArg(o.title, 'title', { optional: true, max: 500 });
  const start = moment(o.startAt, 'startAt', true);
  const end = moment(o.endAt, 'endAt', true);
  const location = clearable(o.location, 'location', 2000);
  const description = clearable(o.description, 'description', 20000);
  const fields: EventChanges = {
    ...(title !== undefined ? { title } : {}),
    ...(start !== undefined ? { start } : {}),
    ...(end !== undefined ? { end } : {}),
    ...(location !== undefined ? { location } : {}),
    ...(description !== undefined ? { description } : {}),
  };
  if (!Object.keys(fields).length) throw new MemoError('VALIDATION', 'say what to change: title, startAt, endAt, location or description.');
  if (start !== undefined && end !== undefined) {
    if (DATE.test(start) !== DATE.test(end))
      throw new MemoError('VALIDATION', 'startAt and endAt are both dates (all day, endAt the last day) or both date-times.');
    if (endsBefore(start, end)) throw new MemoError('VALIDATION', `endAt ${end} is before startAt ${start}.`);
  }
  return { id, fields };
}

/** An update's end without a start keeps the event's start, so it has the event's form (a date when all day). */
async function checkUpdate(p: Update, ctx: ToolContext): Promise<void> {
  const e = await existingEvent(ctx, p.id);
  const { start, end } = p.fields;
  if (end === undefined || start !== undefined) return;
  // The range reads give an all-day event's start as a date.
  const allDay = DATE.test(e.start);
  if (allDay !== DATE.test(end))
    throw new MemoError(
      'VALIDATION',
      allDay
        ? `${shown(e.title)} is all day: endAt is its last day, a date (or give startAt as a date-time to make it a timed event).`
        : `${shown(e.title)} is a timed event: endAt is a date-time (or give startAt as a date to make it all day).`,
    );
  if (endsBefore(e.start, end)) throw new MemoError('VALIDATION', `endAt ${end} is before the event starts (${e.start}).`);
}

const writeOps: BridgeOp[] = [
  op<NewEvent>({
    name: 'calendar.createEvent',
    effect: 'write',
    feature: 'calendar',
    usage:
      "args [{title, startAt, endAt?, allDay?, location?, description?, calendar?}] (a date is all day, endAt then its last day; a date-time without Z or an offset is read in the calendar pack's zone; calendar: local by default); answers {event: {id, title, start, end, calendar}}",
    parse: parseCreate,
    // The calendar's own preview, run before anyone is asked: its refusals (an unknown calendar, an
    // end before the start) are answered then, not after a person said yes.
    check: async (p, ctx) => void (await requireCalendar(ctx).previewCreate(ctx, p)),
    preview: async (p, ctx) => asText('New calendar event', await requireCalendar(ctx).previewCreate(ctx, p)),
    run: async (p, ctx) => {
      const event = await requireCalendar(ctx).createEvent(ctx, p);
      return { event, summary: `created ${shown(event.title)} in ${event.calendar}` };
    },
  }),
  op<Update>({
    name: 'calendar.updateEvent',
    effect: 'write',
    feature: 'calendar',
    usage:
      'args [{id, title?, startAt?, endAt?, location?, description?}] (at least one; every occurrence of a recurring event; a date startAt makes it all day, a startAt alone keeps its length; null clears location or description); answers {event: {id, title, start, end, calendar}, changes}',
    parse: parseUpdate,
    check: checkUpdate,
    preview: async (p, ctx) => {
      const e = await existingEvent(ctx, p.id);
      return asText(`Calendar event ${shown(e.title)} (id ${p.id})`, await requireCalendar(ctx).previewUpdate(ctx, p.id, p.fields));
    },
    run: async (p, ctx) => {
      const { changes, ...event } = await requireCalendar(ctx).updateEvent(ctx, p.id, p.fields);
      return { event, changes, summary: `updated ${shown(event.title)} in ${event.calendar}` };
    },
  }),
  op<string>({
    name: 'calendar.deleteEvent',
    effect: 'delete',
    feature: 'calendar',
    usage: 'args [{id}] (every occurrence of a recurring event; asked every time); answers {deleted: {id, title}}',
    parse: (args) => eventId(theObject(args, ['id']).id),
    check: async (id, ctx) => void (await existingEvent(ctx, id)),
    preview: async (id, ctx) => asText(`Calendar event ${id}`, await requireCalendar(ctx).previewDelete(ctx, id)),
    run: async (id, ctx) => {
      const deleted = await requireCalendar(ctx).deleteEvent(ctx, id);
      return { deleted, summary: `deleted ${shown(deleted.title)}` };
    },
  }),
];

export const BRIDGE_CALENDAR_OPS: BridgeOp[] = [
  op<Range>({
    name: 'calendar.listEvents',
    effect: 'read',
    feature: 'calendar',
    usage: 'args [{startAt?, endAt?}] (ISO 8601; default: today and the 30 days after); answers {events, count}',
    parse: (args) => rangeObject(args, false),
    run: events,
  }),
  op<Range>({
    name: 'calendar.getRange',
    effect: 'read',
    feature: 'calendar',
    usage: 'args [start, end] (dates: the end day included) or [{startAt, endAt}] (end exclusive); answers {events, count}',
    parse: (args) => {
      if (typeof args[0] === 'string') {
        if (args.length !== 2) throw new MemoError('VALIDATION', 'give the start and the end: ["2026-05-14", "2026-06-14"].');
        return { startAt: moment(args[0], 'start', false)!, endAt: moment(args[1], 'end', false)! };
      }
      return rangeObject(args, true);
    },
    run: events,
  }),
  ...writeOps,
];
