/**
 * Occurrences of iCalendar events in a range, by ical.js: RRULE, RDATE and EXDATE through its
 * recurrence expansion, RECURRENCE-ID overrides through its exceptions, all-day events, floating
 * times, and time zones.
 *
 * Time zones: a TZID the tz database knows (Europe/Istanbul) is converted with it (Intl), even when
 * the file carries a VTIMEZONE of the same name, because such VTIMEZONEs are often snapshots of old
 * rules (Turkey's 2015 DST end moved by two weeks; Turkey dropped DST in 2016) while Node's tz data
 * is kept current. A TZID it does not know ("W. Europe Standard Time" from Outlook) uses the file's
 * own VTIMEZONE through ical.js. A floating time (no zone) is read in the zone the caller asked for.
 */
import ICAL from 'ical.js';
import { addDays, dateText, instantOf, isKnownZone, isoInZone, type Wall } from './zoned-time.js';

type Component = InstanceType<typeof ICAL.Component>;
type Time = InstanceType<typeof ICAL.Time>;
type IcalEvent = InstanceType<typeof ICAL.Event>;

/** One occurrence, normalised, with the instants it spans (for sorting and range checks). */
export interface Occurrence {
  uid: string;
  title: string;
  /** Display: ISO date-time in the requested zone, or a date for all-day events. */
  start: string;
  /** Exclusive end: ISO date-time, or the day after the last day for all-day events. */
  end: string;
  allDay: boolean;
  /** The event's own zone: an IANA name, a TZID from the file, UTC, or floating. */
  timeZone: string;
  location?: string;
  description?: string;
  status?: string;
  attendees: number;
  recurring: boolean;
  /** For an occurrence of a series: which one (its original start, as the file names it). */
  recurrenceId?: string;
  /** This occurrence was changed on its own (a RECURRENCE-ID override). */
  overridden?: boolean;
  startMs: number;
  endMs: number;
}

export interface Expansion {
  occurrences: Occurrence[];
  /** Things that could not be read, one sentence each (a broken file, an event without a start). */
  problems: string[];
}

export interface Range {
  startMs: number;
  endMs: number;
  /** The zone floating times and all-day dates are read in, and results are shown in. */
  zone: string;
}

/** A series is expanded at most this far (occurrences from its start): a guard against rules that never end. */
const MAX_STEPS = 100_000;
/**
 * What one call may spend on expansion in all (steps of every series of every calendar it reads): a
 * file of thirty endless every-second series cannot multiply the per-series guard thirty times.
 */
export const CALL_STEPS = 200_000;

/** What is left of a call's expansion budget; shared by every series the call expands. */
export interface Budget {
  left: number;
  /** Set once the budget ran out (said once, in the call's warnings). */
  spent: boolean;
}
const DESCRIPTION_MAX = 500;

export function parseCalendars(text: string): Component[] {
  const parsed = ICAL.parse(text) as unknown;
  // One VCALENDAR gives one component; a file with several gives a list of them.
  const list = Array.isArray(parsed) && Array.isArray(parsed[0]) ? (parsed as unknown[]) : [parsed];
  return list.map((j) => new ICAL.Component(j as never));
}

function zoneOf(comp: Component, prop: 'dtstart' | 'dtend' | 'recurrence-id'): string | null {
  const p = comp.getFirstProperty(prop);
  const tzid = p?.getParameter('tzid');
  return typeof tzid === 'string' && tzid ? tzid : null;
}

function wallOf(t: Time): Wall {
  return { year: t.year, month: t.month, day: t.day, hour: t.hour, minute: t.minute, second: t.second };
}

/** The instant a date-time stands for (see the module comment for the zone rules). */
function instantOfTime(t: Time, tzid: string | null, range: Range): number {
  if (t.zone?.tzid === 'UTC') return t.toUnixTime() * 1000;
  if (tzid && isKnownZone(tzid)) return instantOf(wallOf(t), tzid);
  if (tzid && t.zone && t.zone.tzid !== 'floating') return t.toUnixTime() * 1000;
  return instantOf(wallOf(t), range.zone);
}

function zoneLabel(t: Time, tzid: string | null): string {
  if (t.isDate) return 'all-day';
  if (t.zone?.tzid === 'UTC') return 'UTC';
  if (tzid && (isKnownZone(tzid) || (t.zone && t.zone.tzid !== 'floating'))) return tzid;
  return 'floating';
}

function text(comp: Component, name: string): string | undefined {
  const v = comp.getFirstPropertyValue(name);
  return typeof v === 'string' && v.trim() ? v : undefined;
}

interface Span {
  startMs: number;
  endMs: number;
  start: string;
  end: string;
  allDay: boolean;
  zone: string;
}

/**
 * The end a DURATION gives (RFC 5545 3.3.6): weeks and days are nominal (the same wall time that
 * many days later, DST or not), hours, minutes and seconds exact (30 minutes in the hour the clocks
 * repeat end in the repeated hour).
 */
function afterDuration(comp: Component, start: Time, zone: string | null, startMs: number, range: Range): number {
  const d = comp.getFirstPropertyValue('duration') as InstanceType<typeof ICAL.Duration> | null;
  if (!d) return startMs;
  const sign = d.isNegative ? -1 : 1;
  const days = sign * (d.weeks * 7 + d.days);
  const exact = sign * (d.hours * 3600 + d.minutes * 60 + d.seconds) * 1000;
  if (!days) return startMs + exact;
  const shifted = start.clone();
  shifted.adjust(days, 0, 0, 0);
  return instantOfTime(shifted, zone, range) + exact;
}

/** Where an occurrence lies: its start and end as instants and as shown in the range's zone. */
function spanOf(comp: Component, start: Time, end: Time | null, range: Range, exactMs?: number): Span {
  if (start.isDate) {
    const first = { year: start.year, month: start.month, day: start.day };
    let last = end && end.isDate ? { year: end.year, month: end.month, day: end.day } : addDays(first, 1);
    if (Date.UTC(last.year, last.month - 1, last.day) <= Date.UTC(first.year, first.month - 1, first.day)) last = addDays(first, 1);
    // All-day dates are days on the reader's calendar, wherever they are.
    const startMs = instantOf({ ...first, hour: 0, minute: 0, second: 0 }, range.zone);
    const endMs = instantOf({ ...last, hour: 0, minute: 0, second: 0 }, range.zone);
    return { startMs, endMs, start: dateText(first), end: dateText(last), allDay: true, zone: 'all-day' };
  }
  const startZone = zoneOf(comp, 'dtstart');
  const startMs = instantOfTime(start, startZone, range);
  let endMs: number;
  if (exactMs !== undefined) endMs = startMs + exactMs;
  else if (comp.hasProperty('dtend')) endMs = end ? instantOfTime(end, zoneOf(comp, 'dtend'), range) : startMs;
  else endMs = afterDuration(comp, start, startZone, startMs, range);
  if (endMs < startMs) endMs = startMs;
  return { startMs, endMs, start: isoInZone(startMs, range.zone), end: isoInZone(endMs, range.zone), allDay: false, zone: zoneLabel(start, startZone) };
}

function overlaps(s: Span, range: Range): boolean {
  // A zero-length event at the range's start is in it; one ending exactly at the start is not.
  return s.startMs < range.endMs && (s.endMs > range.startMs || (s.endMs === s.startMs && s.startMs >= range.startMs));
}

function occurrenceOf(comp: Component, uid: string, span: Span, extra: Partial<Occurrence>): Occurrence {
  const description = text(comp, 'description');
  const location = text(comp, 'location');
  const status = text(comp, 'status');
  return {
    uid,
    title: text(comp, 'summary') ?? '(no title)',
    start: span.start,
    end: span.end,
    allDay: span.allDay,
    timeZone: span.zone,
    ...(location ? { location } : {}),
    ...(description ? { description: description.length > DESCRIPTION_MAX ? `${description.slice(0, DESCRIPTION_MAX - 1)}…` : description } : {}),
    ...(status ? { status: status.toLowerCase() } : {}),
    attendees: comp.getAllProperties('attendee').length,
    recurring: false,
    startMs: span.startMs,
    endMs: span.endMs,
    ...extra,
  };
}

function cancelled(comp: Component): boolean {
  return text(comp, 'status')?.toUpperCase() === 'CANCELLED';
}

/**
 * How an occurrence's original start is named, the same whatever zone the range was read in: a
 * date; a date-time with the offset of the series' zone; UTC with Z; and the wall time alone for a
 * floating series or one in a zone only the file defines (what its RECURRENCE-ID holds).
 */
export function recurrenceIdText(t: Time, tzid: string | null, range: Range): string {
  if (t.isDate) return dateText(t);
  if (t.zone?.tzid === 'UTC') return new Date(t.toUnixTime() * 1000).toISOString().replace('.000Z', 'Z');
  if (tzid && isKnownZone(tzid)) return isoInZone(instantOfTime(t, tzid, range), tzid);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${dateText(t)}T${pad(t.hour)}:${pad(t.minute)}:${pad(t.second)}`;
}

/** Expands one series (a master with its overrides) into the occurrences that overlap the range. */
function expandSeries(master: Component, overrides: Component[], range: Range, out: Occurrence[], problems: string[], budget: Budget): void {
  const event: IcalEvent = new ICAL.Event(master, { exceptions: overrides, strictExceptions: false });
  const uid = event.uid;
  if (!master.hasProperty('dtstart')) {
    problems.push(`Event ${uid || '(no UID)'} has no start (DTSTART) and was left out.`);
    return;
  }
  if (!event.isRecurring()) {
    const span = spanOf(master, event.startDate, event.endDate, range);
    if (!cancelled(master) && overlaps(span, range)) out.push(occurrenceOf(master, uid, span, {}));
    return;
  }
  const masterZone = zoneOf(master, 'dtstart');
  // Every instance lasts exactly as long as the first one (RFC 5545 3.8.5.3), DST or not.
  const first = spanOf(master, event.startDate, event.endDate, range);
  const exactMs = first.allDay ? undefined : first.endMs - first.startMs;
  const seen = new Set<string>();
  const it = event.iterator();
  let steps = 0;
  // An occurrence whose wall time (read as UTC, off by at most a zone's offset) plus its length ends a
  // day and a half before the range cannot reach it: skipped without the zone conversion, the costly
  // part of a step (a series begun years ago walks every earlier occurrence). An override of such an
  // occurrence is not marked seen, so the loop after this one still places it wherever it was moved.
  const lengthMs = Math.max(0, first.endMs - first.startMs);
  const skipBefore = range.startMs - lengthMs - 36 * 3_600_000;
  for (let next = it.next(); next; next = it.next()) {
    if (++steps > MAX_STEPS) {
      problems.push(`Event ${uid} repeats more than ${MAX_STEPS} times before the range ends; later occurrences were left out.`);
      break;
    }
    if (--budget.left < 0) {
      if (!budget.spent)
        problems.push(
          `Expanding repeating events took more than ${CALL_STEPS} steps in all (event ${uid} and later ones); the occurrences after that point were left out. Ask for a shorter range or a calendar without endless every-second rules.`,
        );
      budget.spent = true;
      break;
    }
    if (Date.UTC(next.year, next.month - 1, next.day, next.hour, next.minute, next.second) < skipBefore) continue;
    const originalMs = next.isDate
      ? instantOf({ year: next.year, month: next.month, day: next.day, hour: 0, minute: 0, second: 0 }, range.zone)
      : instantOfTime(next, masterZone, range);
    if (originalMs >= range.endMs) break;
    const details = event.getOccurrenceDetails(next) as { item?: IcalEvent; startDate: Time; endDate: Time };
    const comp = details.item?.component ?? master;
    seen.add(next.toString());
    if (cancelled(comp)) continue;
    const own = details.item && details.item !== event;
    const span = spanOf(comp, details.startDate, details.endDate, range, own ? undefined : exactMs);
    if (!overlaps(span, range)) continue;
    out.push(
      occurrenceOf(comp, uid, span, {
        recurring: true,
        recurrenceId: recurrenceIdText(next, masterZone, range),
        ...(own ? { overridden: true } : {}),
      }),
    );
  }
  // An override whose original start lies past the range may have been moved into it.
  for (const o of overrides) {
    const rid = o.getFirstPropertyValue('recurrence-id') as Time | null;
    if (!rid || seen.has(rid.toString()) || cancelled(o) || !o.hasProperty('dtstart')) continue;
    const ev = new ICAL.Event(o);
    const span = spanOf(o, ev.startDate, ev.endDate, range);
    if (!overlaps(span, range)) continue;
    out.push(occurrenceOf(o, uid, span, { recurring: true, recurrenceId: recurrenceIdText(rid, zoneOf(o, 'recurrence-id'), range), overridden: true }));
  }
}

/** Every occurrence in `text` (one or more VCALENDARs) that overlaps the range, sorted by start. */
export function expandCalendar(text: string, range: Range, budget: Budget = { left: CALL_STEPS, spent: false }): Expansion {
  const problems: string[] = [];
  const occurrences: Occurrence[] = [];
  let calendars: Component[];
  try {
    calendars = parseCalendars(text);
  } catch (err) {
    return { occurrences, problems: [`It is not valid iCalendar: ${(err as Error).message}.`] };
  }
  for (const cal of calendars) {
    const masters = new Map<string, Component>();
    const overrides = new Map<string, Component[]>();
    for (const ve of cal.getAllSubcomponents('vevent')) {
      const uid = String(ve.getFirstPropertyValue('uid') ?? '');
      if (ve.hasProperty('recurrence-id')) {
        const list = overrides.get(uid) ?? [];
        list.push(ve);
        overrides.set(uid, list);
      } else masters.set(uid || `(no UID ${masters.size + 1})`, ve);
    }
    for (const [uid, master] of masters) {
      try {
        expandSeries(master, overrides.get(uid) ?? [], range, occurrences, problems, budget);
      } catch (err) {
        problems.push(`Event ${uid} could not be read: ${(err as Error).message}.`);
      }
      overrides.delete(uid);
    }
    // Overrides whose series is not here (a CalDAV object holding only its own instances) stand alone.
    for (const [uid, list] of overrides)
      for (const o of list) {
        try {
          expandSeries(o, [], range, occurrences, problems, budget);
        } catch (err) {
          problems.push(`Event ${uid} could not be read: ${(err as Error).message}.`);
        }
      }
  }
  occurrences.sort((a, b) => a.startMs - b.startMs || a.endMs - b.endMs || a.title.localeCompare(b.title));
  return { occurrences, problems };
}

/**
 * The work of one get_calendar_events call, as heavy-work.ts runs it in a worker: every text expanded
 * under one budget, each text's occurrences and problems in order.
 */
export function expandTexts(input: { texts: string[]; range: Range; steps?: number }): Expansion[] {
  const budget: Budget = { left: input.steps ?? CALL_STEPS, spent: false };
  return input.texts.map((text) => expandCalendar(text, input.range, budget));
}

/** Whether a text reads as iCalendar (throws ical.js's error when not), as heavy-work.ts runs it. */
export function checkCalendar(text: string): boolean {
  parseCalendars(text);
  return true;
}
