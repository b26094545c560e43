/**
 * Desktop bridge operations: calendar reads (see bridge-op.ts for the contract every operation keeps).
 * The events come from the calendar pack, reached through the kernel (`calendar.events`), never by
 * import; without it loaded the operations answer `{success: false}` saying so. Which external
 * calendars are shown is the calendar pack's decision from the person's stored consent answers: a
 * caller's `includeExternal` is accepted, as the renderer bridge accepts it, and ignored.
 */
import { MemoError, type JsonValue, type ToolContext } from 'memo-kernel/pack';
import { objectArg, onlyKeys, op, stringArg, type BridgeOp } from './bridge-op.js';
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
  createEvent(
    ctx: ToolContext,
    e: { title: string; start: string; end?: string; all_day?: boolean; description?: string; calendar?: string },
  ): Promise<{ id: string; title: string; start: string; end: string; calendar: string }>;
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
];
