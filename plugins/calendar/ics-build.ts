/**
 * Writing iCalendar with ical.js: a new event from the fields a tool is given, the same event with
 * some fields changed (everything else it carries, attendees, alarms and overrides, is kept), the
 * fields a preview shows, and the local calendar exported as one file.
 */
import { randomUUID } from 'node:crypto';
import ICAL from 'ical.js';
import { MemoError } from 'memo-kernel/pack';
import { parseCalendars } from './recurrence.js';
import { addDays, dateText, instantIn, isKnownZone, offsetAt, parseTime, wallAt, type Wall } from './zoned-time.js';

type Component = InstanceType<typeof ICAL.Component>;
type Time = InstanceType<typeof ICAL.Time>;

const PRODID = '-//Memo//calendar pack//EN';

/** What a write tool may set. `null` clears an optional field; undefined leaves it as it is. */
export interface EventFields {
  title?: string;
  start?: string;
  end?: string;
  timeZone?: string;
  location?: string | null;
  description?: string | null;
  recurrence?: string | null;
}

/** The fields a preview shows, as text. */
export interface EventView {
  title: string;
  start: string;
  end: string;
  timeZone: string;
  location: string | null;
  description: string | null;
  repeats: string | null;
  attendees: number;
}

function timeOf(w: Wall, isDate: boolean, zone: string | null): Time {
  const data = isDate ? { year: w.year, month: w.month, day: w.day, isDate: true } : { ...w, isDate: false };
  return zone === 'UTC' ? ICAL.Time.fromData(data, ICAL.Timezone.utcTimezone) : ICAL.Time.fromData(data);
}

function setTime(ev: Component, name: 'dtstart' | 'dtend', t: Time, zone: string | null): void {
  ev.removeAllProperties(name);
  const p = new ICAL.Property(name, ev);
  if (t.isDate) p.resetType('date');
  p.setValue(t);
  if (!t.isDate && zone && zone !== 'UTC') p.setParameter('tzid', zone);
  ev.addProperty(p);
}

function setText(ev: Component, name: string, value: string | null | undefined): void {
  if (value === undefined) return;
  ev.removeAllProperties(name);
  if (value !== null && value !== '') ev.addPropertyWithValue(name, value);
}

function checkRule(rule: string): string {
  const text = rule.replace(/^RRULE:/i, '').trim();
  try {
    const r = ICAL.Recur.fromString(text);
    if (!r.freq) throw new Error('no FREQ');
    return r.toString();
  } catch (err) {
    throw new MemoError('VALIDATION', `"${rule}" is not a recurrence rule (RFC 5545 RRULE, e.g. FREQ=WEEKLY;BYDAY=MO,WE;COUNT=10): ${(err as Error).message}.`);
  }
}

interface Times {
  start: Time;
  end: Time;
  zone: string | null;
}

/** Start and end from the fields, in `zone`; an end missing is an hour later (a day for a date). */
function timesFrom(start: string, end: string | undefined, zone: string, keep?: { durationSeconds: number }): Times {
  const s = parseTime(start, 'start');
  if (s.kind === 'date') {
    let last = addDays(s.wall, 1);
    if (end !== undefined) {
      const e = parseTime(end, 'end');
      if (e.kind !== 'date') throw new MemoError('VALIDATION', 'An all-day event (start is a date) ends on a date too.');
      // The end a person gives is the last day; iCalendar's DTEND is the day after.
      last = addDays(e.wall, 1);
    } else if (keep && keep.durationSeconds >= 86_400) last = addDays(s.wall, Math.round(keep.durationSeconds / 86_400));
    if (Date.UTC(last.year, last.month - 1, last.day) <= Date.UTC(s.wall.year, s.wall.month - 1, s.wall.day))
      throw new MemoError('VALIDATION', 'The event ends before it starts.');
    return { start: timeOf(s.wall, true, null), end: timeOf(last, true, null), zone: null };
  }
  const startMs = instantIn(s, zone);
  let endMs = startMs + (keep ? keep.durationSeconds * 1000 : 3_600_000);
  if (end !== undefined) {
    const e = parseTime(end, 'end');
    if (e.kind === 'date') throw new MemoError('VALIDATION', 'A timed event ends at a date-time, not a date.');
    endMs = instantIn(e, zone);
  }
  if (endMs < startMs) throw new MemoError('VALIDATION', 'The event ends before it starts.');
  return { start: timeOf(wallAt(startMs, zone), false, zone), end: timeOf(wallAt(endMs, zone), false, zone), zone };
}

function stamp(ev: Component, name: string): void {
  ev.removeAllProperties(name);
  ev.addPropertyWithValue(name, ICAL.Time.fromJSDate(new Date(), true));
}

// ---------------------------------------------------------------------------------------------
// VTIMEZONE: RFC 5545 wants a definition of every TZID a calendar uses. Memo reads IANA zones with
// the tz database whatever the file says, but other clients and servers read the definition, so what
// Memo writes carries one, made from the same tz data: each transition in the years the event spans
// (a series without UNTIL: 15 years on) as its own observance.

const WEEK = 7 * 86_400_000;
/** Marks the definitions Memo made, which it remakes on every write (another client's are kept as they are). */
const MADE_BY_MEMO = 'x-memo-tz';

function offsetValue(ms: number): InstanceType<typeof ICAL.UtcOffset> {
  return ICAL.UtcOffset.fromSeconds(Math.round(ms / 1000));
}

function observance(kind: 'standard' | 'daylight', startMs: number, from: number, to: number): Component {
  const c = new ICAL.Component(kind);
  // DTSTART is the local time in force before the change (the old offset).
  const local = new Date(startMs + from);
  c.addPropertyWithValue(
    'dtstart',
    ICAL.Time.fromData({
      year: local.getUTCFullYear(),
      month: local.getUTCMonth() + 1,
      day: local.getUTCDate(),
      hour: local.getUTCHours(),
      minute: local.getUTCMinutes(),
      second: local.getUTCSeconds(),
      isDate: false,
    }),
  );
  c.addPropertyWithValue('tzoffsetfrom', offsetValue(from));
  c.addPropertyWithValue('tzoffsetto', offsetValue(to));
  return c;
}

/** A VTIMEZONE for an IANA zone, covering fromYear..toYear with explicit transitions. */
function vtimezone(zone: string, fromYear: number, toYear: number): Component {
  const tz = new ICAL.Component('vtimezone');
  tz.addPropertyWithValue('tzid', zone);
  tz.addPropertyWithValue(MADE_BY_MEMO, 'tzdata');
  let t = Date.UTC(fromYear, 0, 1);
  const end = Date.UTC(toYear + 1, 0, 1);
  let off = offsetAt(t, zone);
  tz.addSubcomponent(observance('standard', t, off, off));
  // Zones do not change twice within a week: step by weeks, then narrow each change to the minute.
  while (t < end) {
    const next = Math.min(t + WEEK, end);
    const o = offsetAt(next, zone);
    if (o !== off) {
      let lo = t;
      let hi = next;
      while (hi - lo > 60_000) {
        const mid = Math.floor((lo + hi) / 120_000) * 60_000;
        if (offsetAt(mid, zone) === off) lo = mid;
        else hi = mid;
      }
      tz.addSubcomponent(observance(o > off ? 'daylight' : 'standard', hi, off, o));
      off = o;
    }
    t = next;
  }
  return tz;
}

/** The calendar's text, with a VTIMEZONE added for each IANA zone its events use and it does not define. */
function textOf(cal: Component): string {
  for (const z of cal.getAllSubcomponents('vtimezone')) if (z.hasProperty(MADE_BY_MEMO)) cal.removeSubcomponent(z);
  const defined = new Set(cal.getAllSubcomponents('vtimezone').map((z) => String(z.getFirstPropertyValue('tzid'))));
  const years = new Map<string, { from: number; to: number }>();
  for (const ev of cal.getAllSubcomponents('vevent')) {
    const start = ev.getFirstPropertyValue('dtstart') as Time | null;
    if (!start) continue;
    const rule = ev.getFirstPropertyValue('rrule') as InstanceType<typeof ICAL.Recur> | null;
    const last = rule ? (rule.until ? rule.until.year : start.year + 15) : ((ev.getFirstPropertyValue('dtend') as Time | null)?.year ?? start.year);
    for (const name of ['dtstart', 'dtend', 'exdate', 'rdate', 'recurrence-id'])
      for (const p of ev.getAllProperties(name)) {
        const tzid = p.getParameter('tzid');
        if (typeof tzid !== 'string' || defined.has(tzid) || !isKnownZone(tzid)) continue;
        const y = years.get(tzid) ?? { from: start.year, to: last };
        years.set(tzid, { from: Math.min(y.from, start.year), to: Math.max(y.to, last) });
      }
  }
  for (const [zone, y] of years) cal.addSubcomponent(vtimezone(zone, y.from, y.to));
  return cal.toString() + '\r\n';
}

/** A VCALENDAR with one new VEVENT. */
export function buildEvent(fields: EventFields & { title: string; start: string }, zone: string): { uid: string; ics: string } {
  const uid = `${randomUUID()}@memo`;
  const cal = new ICAL.Component(['vcalendar', [], []]);
  cal.addPropertyWithValue('prodid', PRODID);
  cal.addPropertyWithValue('version', '2.0');
  const ev = new ICAL.Component('vevent', cal);
  ev.addPropertyWithValue('uid', uid);
  stamp(ev, 'dtstamp');
  stamp(ev, 'created');
  const t = timesFrom(fields.start, fields.end, zone);
  setTime(ev, 'dtstart', t.start, t.zone);
  setTime(ev, 'dtend', t.end, t.zone);
  setText(ev, 'summary', fields.title);
  setText(ev, 'location', fields.location);
  setText(ev, 'description', fields.description);
  if (fields.recurrence) ev.addPropertyWithValue('rrule', ICAL.Recur.fromString(checkRule(fields.recurrence)));
  cal.addSubcomponent(ev);
  return { uid, ics: textOf(cal) };
}

/** The VCALENDAR and its series' master VEVENT (the one without RECURRENCE-ID) for `uid`. */
function masterOf(ics: string, uid: string): { cal: Component; ev: Component } {
  for (const cal of parseCalendars(ics)) {
    const ev = cal.getAllSubcomponents('vevent').find((e) => String(e.getFirstPropertyValue('uid')) === uid && !e.hasProperty('recurrence-id'));
    if (ev) return { cal, ev };
  }
  throw new MemoError('NOT_FOUND', `The event ${uid} is not in its calendar any more.`);
}

function zoneParam(ev: Component, name: string): string | null {
  const z = ev.getFirstProperty(name)?.getParameter('tzid');
  return typeof z === 'string' && z ? z : null;
}

function shownTime(t: Time | null, zone: string | null, endOfAllDay = false): string {
  if (!t) return '(not set)';
  if (t.isDate) {
    const d = endOfAllDay ? addDays({ year: t.year, month: t.month, day: t.day }, -1) : t;
    return `${dateText(d)} (all day)`;
  }
  const hm = `${String(t.hour).padStart(2, '0')}:${String(t.minute).padStart(2, '0')}`;
  return `${dateText(t)} ${hm}${t.zone?.tzid === 'UTC' ? ' UTC' : ''}${zone ? ` ${zone}` : ''}`;
}

export function viewOf(ics: string, uid: string): EventView {
  return viewOfComponent(masterOf(ics, uid).ev);
}

function viewOfComponent(ev: Component): EventView {
  const e = new ICAL.Event(ev);
  const zone = zoneParam(ev, 'dtstart');
  const rrule = ev.getFirstPropertyValue('rrule');
  const text = (n: string) => {
    const v = ev.getFirstPropertyValue(n);
    return typeof v === 'string' && v ? v : null;
  };
  return {
    title: text('summary') ?? '(no title)',
    start: shownTime(ev.hasProperty('dtstart') ? e.startDate : null, zone),
    end: shownTime(ev.hasProperty('dtend') || ev.hasProperty('duration') ? e.endDate : null, zoneParam(ev, 'dtend') ?? zone, true),
    timeZone: e.startDate?.isDate ? 'all-day' : (zone ?? (e.startDate?.zone?.tzid === 'UTC' ? 'UTC' : 'floating')),
    location: text('location'),
    description: text('description'),
    repeats: rrule ? String(rrule) : null,
    attendees: ev.getAllProperties('attendee').length,
  };
}

/** The event's text with `fields` applied to its series (SEQUENCE bumped), and how its fields read before and after. */
export function changeEvent(ics: string, uid: string, fields: EventFields, defaultZone: string): { ics: string; before: EventView; after: EventView } {
  const before = viewOf(ics, uid);
  const { cal, ev } = masterOf(ics, uid);
  applyFields(ev, fields, defaultZone);
  const text = textOf(cal);
  return { ics: text, before, after: viewOf(text, uid) };
}

/** Sets the fields on one VEVENT (a series' master or one occurrence's override), bumping its SEQUENCE. */
function applyFields(ev: Component, fields: EventFields, defaultZone: string): void {
  const e = new ICAL.Event(ev);
  if (fields.start !== undefined || fields.end !== undefined || fields.timeZone !== undefined) {
    const zone = fields.timeZone ?? zoneParam(ev, 'dtstart') ?? defaultZone;
    const durationSeconds = e.endDate && e.startDate ? e.endDate.subtractDate(e.startDate).toSeconds() : 3600;
    const startText =
      fields.start ??
      (e.startDate.isDate
        ? dateText(e.startDate)
        : `${dateText(e.startDate)}T${[e.startDate.hour, e.startDate.minute, e.startDate.second].map((n) => String(n).padStart(2, '0')).join(':')}`);
    // A new zone alone moves the event to the same wall time there; with a start, the start is read in it.
    const endText = fields.end ?? undefined;
    const t = timesFrom(startText, endText, zone, endText === undefined ? { durationSeconds } : undefined);
    ev.removeAllProperties('duration');
    setTime(ev, 'dtstart', t.start, t.zone);
    setTime(ev, 'dtend', t.end, t.zone);
  }
  setText(ev, 'summary', fields.title);
  setText(ev, 'location', fields.location);
  setText(ev, 'description', fields.description);
  if (fields.recurrence !== undefined) {
    ev.removeAllProperties('rrule');
    if (fields.recurrence) ev.addPropertyWithValue('rrule', ICAL.Recur.fromString(checkRule(fields.recurrence)));
  }
  const seq = Number(ev.getFirstPropertyValue('sequence') ?? 0);
  ev.updatePropertyWithValue('sequence', (Number.isFinite(seq) ? seq : 0) + 1);
  stamp(ev, 'dtstamp');
  stamp(ev, 'last-modified');
}

// ---------------------------------------------------------------------------------------------
// One occurrence of a series

function sameTime(a: Time, b: Time): boolean {
  return (
    a.isDate === b.isDate &&
    a.year === b.year &&
    a.month === b.month &&
    a.day === b.day &&
    (a.isDate || (a.hour === b.hour && a.minute === b.minute && a.second === b.second))
  );
}

/**
 * The occurrence `occurrence` names (a recurrenceId as get_calendar_events gives it), in the series'
 * own terms (its zone's wall time), after checking the series really has it.
 */
function occurrenceOf(master: Component, occurrence: string): { time: Time; zone: string | null } {
  const e = new ICAL.Event(master);
  if (!e.isRecurring()) throw new MemoError('VALIDATION', 'This event does not repeat: change or delete it as a whole (leave out occurrence).');
  const start = e.startDate;
  const utc = start.zone?.tzid === 'UTC';
  const zone = utc ? 'UTC' : zoneParam(master, 'dtstart');
  const p = parseTime(occurrence, 'occurrence');
  let time: Time;
  if (start.isDate) {
    if (p.kind !== 'date') throw new MemoError('VALIDATION', 'This series is all-day: name the occurrence by its date (2026-05-07).');
    time = timeOf(p.wall, true, null);
  } else if (p.kind === 'date') {
    throw new MemoError('VALIDATION', 'Name the occurrence by its recurrenceId from get_calendar_events (a date-time), not a date.');
  } else if (p.kind === 'instant') {
    if (!utc && !(zone && isKnownZone(zone)))
      throw new MemoError('VALIDATION', 'This series has no time zone: name the occurrence by its wall time, without an offset (2026-05-07T09:30:00).');
    time = timeOf(wallAt(p.ms, zone!), false, utc ? 'UTC' : zone); // zone is set: checked on the line above
  } else time = timeOf(p.wall, false, utc ? 'UTC' : zone);
  const it = e.iterator();
  for (let next = it.next(), steps = 0; next && steps < 100_000; next = it.next(), steps++) {
    if (sameTime(next, time)) return { time, zone: utc ? null : zone };
    if (next.compare(time) > 0 && next.year > time.year + 1) break;
  }
  throw new MemoError('NOT_FOUND', `The series has no occurrence at ${occurrence} (get_calendar_events gives each occurrence's recurrenceId).`);
}

function overridesOf(cal: Component, uid: string, time: Time): Component[] {
  return cal.getAllSubcomponents('vevent').filter((v) => {
    if (String(v.getFirstPropertyValue('uid')) !== uid) return false;
    const rid = v.getFirstPropertyValue('recurrence-id') as Time | null;
    return !!rid && sameTime(rid, time);
  });
}

function dateProperty(name: string, parent: Component, t: Time, zone: string | null): InstanceType<typeof ICAL.Property> {
  const p = new ICAL.Property(name, parent);
  if (t.isDate) p.resetType('date');
  p.setValue(t);
  if (!t.isDate && zone && zone !== 'UTC') p.setParameter('tzid', zone);
  return p;
}

/** The series without one occurrence: an EXDATE, and any override of it removed. */
export function deleteOccurrence(ics: string, uid: string, occurrence: string): { ics: string; when: string } {
  const { cal, ev } = masterOf(ics, uid);
  const { time, zone } = occurrenceOf(ev, occurrence);
  for (const o of overridesOf(cal, uid, time)) cal.removeSubcomponent(o);
  ev.addProperty(dateProperty('exdate', ev, time, zone));
  const seq = Number(ev.getFirstPropertyValue('sequence') ?? 0);
  ev.updatePropertyWithValue('sequence', (Number.isFinite(seq) ? seq : 0) + 1);
  stamp(ev, 'dtstamp');
  return { ics: textOf(cal), when: shownTime(time, zone) };
}

/** One occurrence changed on its own: its override (made from the series when there is none yet) gets the fields. */
export function changeOccurrence(
  ics: string,
  uid: string,
  occurrence: string,
  fields: EventFields,
  defaultZone: string,
): { ics: string; before: EventView; after: EventView; when: string } {
  if (fields.recurrence !== undefined)
    throw new MemoError('VALIDATION', 'One occurrence cannot get its own recurrence: change the series (leave out occurrence).');
  const { cal, ev } = masterOf(ics, uid);
  const { time, zone } = occurrenceOf(ev, occurrence);
  let ov = overridesOf(cal, uid, time)[0];
  if (!ov) {
    const e = new ICAL.Event(ev);
    // A deep copy: a Component wraps its jCal array, so a shallow one would change the series too.
    ov = new ICAL.Component(JSON.parse(JSON.stringify(ev.toJSON())) as never);
    for (const p of ['rrule', 'rdate', 'exdate', 'recurrence-id', 'duration']) ov.removeAllProperties(p);
    const end = time.clone();
    end.addDuration(e.endDate.subtractDate(e.startDate));
    setTime(ov, 'dtstart', time.clone(), zone);
    setTime(ov, 'dtend', end, zone);
    ov.addProperty(dateProperty('recurrence-id', ov, time, zone));
    cal.addSubcomponent(ov);
  }
  const before = viewOfComponent(ov);
  applyFields(ov, fields, defaultZone);
  return { ics: textOf(cal), before, after: viewOfComponent(ov), when: shownTime(time, zone) };
}

/** One line per field that differs: `title: Standup -> Daily standup`. */
export function fieldChanges(before: Partial<EventView> | null, after: EventView): string {
  const keys: Array<keyof EventView> = ['title', 'start', 'end', 'timeZone', 'location', 'description', 'repeats'];
  const show = (v: unknown) => (v === null || v === undefined ? '(not set)' : typeof v === 'string' ? v : JSON.stringify(v));
  return keys
    .filter((k) => !before || show(before[k]) !== show(after[k]))
    .map((k) => (before ? `${k}: ${show(before[k])} -> ${show(after[k])}` : `${k}: ${show(after[k])}`))
    .join('\n');
}

/** The local calendar as one VCALENDAR: every event's components, time zone definitions once each. */
export function exportCalendar(texts: string[]): string {
  const out = new ICAL.Component(['vcalendar', [], []]);
  out.addPropertyWithValue('prodid', PRODID);
  out.addPropertyWithValue('version', '2.0');
  out.addPropertyWithValue('x-wr-calname', 'Memo local calendar');
  const zones = new Set<string>();
  for (const t of texts)
    for (const cal of parseCalendars(t)) {
      for (const z of cal.getAllSubcomponents('vtimezone')) {
        if (z.hasProperty(MADE_BY_MEMO)) continue;
        const id = String(z.getFirstPropertyValue('tzid'));
        if (zones.has(id)) continue;
        zones.add(id);
        out.addSubcomponent(z);
      }
      for (const ev of cal.getAllSubcomponents('vevent')) out.addSubcomponent(ev);
    }
  // Memo's own zone definitions are made once for the whole file, spanning every event.
  return textOf(out);
}
