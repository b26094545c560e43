/**
 * Wall-clock time in an IANA time zone, through the tz database Node ships (Intl): what an instant
 * reads as in a zone, and which instant a wall time in a zone is. Only the conversion lives here;
 * recurrence is ical.js's.
 */
import { MemoError } from 'memo-kernel/pack';

/** A wall-clock reading: month 1-12. */
export interface Wall {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(zone, f);
  }
  return f;
}

/** True when the tz database knows `zone` (an IANA name such as Europe/Istanbul, or UTC). */
export function isKnownZone(zone: string): boolean {
  if (!zone) return false;
  try {
    formatter(zone);
    return true;
  } catch {
    return false;
  }
}

/** The zone this machine runs in (the default for a range without one). */
export function hostZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
}

export function checkZone(zone: string): string {
  if (!isKnownZone(zone))
    throw new MemoError(
      'VALIDATION',
      `"${zone}" is not a time zone the tz database knows: give an IANA name such as Europe/Istanbul, America/New_York or UTC.`,
    );
  return zone;
}

/** How `ms` reads on a wall clock in `zone`. */
export function wallAt(ms: number, zone: string): Wall {
  const parts: Record<string, number> = {};
  for (const p of formatter(zone).formatToParts(new Date(ms))) if (p.type !== 'literal') parts[p.type] = Number(p.value);
  return {
    year: parts.year!,
    month: parts.month!,
    day: parts.day!,
    hour: parts.hour!,
    minute: parts.minute!,
    second: parts.second!,
  };
}

function wallMs(w: Wall): number {
  return Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);
}

/** The zone's offset from UTC at instant `ms`, in ms (whole seconds). */
export function offsetAt(ms: number, zone: string): number {
  const whole = Math.floor(ms / 1000) * 1000;
  return wallMs(wallAt(whole, zone)) - whole;
}

const HALF_DAY = 12 * 3600_000;

/**
 * The instant a wall time in `zone` stands for. RFC 5545 (3.3.5) decides the two DST edge cases: a
 * time that occurs twice (clocks going back) is the first of the two; a time the clocks skip
 * (clocks going forward) is read with the offset in force before the gap, so 02:30 on a
 * spring-forward night is 03:30 of the new offset.
 */
export function instantOf(w: Wall, zone: string): number {
  const local = wallMs(w);
  const before = offsetAt(local - HALF_DAY, zone);
  const after = offsetAt(local + HALF_DAY, zone);
  const fits = [...new Set([before, after])].map((o) => local - o).filter((t) => offsetAt(t, zone) === local - t);
  if (fits.length) return Math.min(...fits);
  return local - before;
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

export function dateText(w: Pick<Wall, 'year' | 'month' | 'day'>): string {
  return `${pad(w.year, 4)}-${pad(w.month)}-${pad(w.day)}`;
}

/** `2026-03-08T09:00:00-04:00`: the instant as the zone's wall clock reads it, with that offset. */
export function isoInZone(ms: number, zone: string): string {
  const w = wallAt(ms, zone);
  const off = Math.round(offsetAt(ms, zone) / 60_000);
  const sign = off < 0 ? '-' : '+';
  const abs = Math.abs(off);
  const offset = zone === 'UTC' || zone === 'Etc/UTC' ? 'Z' : `${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
  return `${dateText(w)}T${pad(w.hour)}:${pad(w.minute)}:${pad(w.second)}${offset}`;
}

/** Adds whole days to a calendar date (no zone involved). */
export function addDays(d: Pick<Wall, 'year' | 'month' | 'day'>, days: number): Wall {
  const t = new Date(Date.UTC(d.year, d.month - 1, d.day + days));
  return { year: t.getUTCFullYear(), month: t.getUTCMonth() + 1, day: t.getUTCDate(), hour: 0, minute: 0, second: 0 };
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/;

/** A date or date-time a caller gives: `2026-03-08`, `2026-03-08T09:00`, `2026-03-08T09:00:00+03:00`, `...Z`. */
export type ParsedTime = { kind: 'date'; wall: Wall } | { kind: 'local'; wall: Wall } | { kind: 'instant'; ms: number };

export function parseTime(text: string, what: string): ParsedTime {
  const t = text.trim();
  const d = DATE.exec(t);
  const bad = () =>
    new MemoError(
      'VALIDATION',
      `${what} "${text}" is not a date (2026-03-08) or a date-time (2026-03-08T09:00, optionally with Z or an offset such as +03:00).`,
    );
  if (d) {
    const wall = { year: Number(d[1]), month: Number(d[2]), day: Number(d[3]), hour: 0, minute: 0, second: 0 };
    if (!validWall(wall)) throw bad();
    return { kind: 'date', wall };
  }
  const m = DATE_TIME.exec(t);
  if (!m) throw bad();
  const wall = { year: Number(m[1]), month: Number(m[2]), day: Number(m[3]), hour: Number(m[4]), minute: Number(m[5]), second: Number(m[6] ?? 0) };
  if (!validWall(wall)) throw bad();
  const zone = m[7];
  if (!zone) return { kind: 'local', wall };
  if (zone === 'Z') return { kind: 'instant', ms: wallMs(wall) };
  const z = /^([+-])(\d{2}):?(\d{2})$/.exec(zone)!; // the pattern above admits only this shape
  const offset = (Number(z[2]) * 60 + Number(z[3])) * 60_000 * (z[1] === '-' ? -1 : 1);
  return { kind: 'instant', ms: wallMs(wall) - offset };
}

function validWall(w: Wall): boolean {
  if (w.month < 1 || w.month > 12 || w.day < 1 || w.hour > 23 || w.minute > 59 || w.second > 59) return false;
  const t = new Date(Date.UTC(w.year, w.month - 1, w.day));
  return t.getUTCDate() === w.day;
}

/** The instant a parsed time stands for in `zone` (a date is its midnight). */
export function instantIn(p: ParsedTime, zone: string): number {
  return p.kind === 'instant' ? p.ms : instantOf(p.wall, zone);
}
