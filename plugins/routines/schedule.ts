/**
 * A routine's schedule: a cron expression in a time zone (croner does the calendar arithmetic,
 * daylight-saving changes included), a one-off at a local time in a zone, or every N minutes or
 * hours from a start. The model turns a person's words into one of these; this module checks it,
 * refuses what it would have to guess (with what to clarify), computes the next run times from
 * the kernel's clock and reads the schedule back in plain words.
 */
import { createRequire } from 'node:module';
import type { Cron } from 'croner';
import { MemoError } from 'memo-kernel/pack';

export type Schedule =
  | { kind: 'cron'; cron: string; time_zone: string }
  | { kind: 'once'; at: string; time_zone: string }
  | { kind: 'every'; every: number; unit: 'minutes' | 'hours'; start_at?: string; time_zone?: string };

/** A schedule checked and ready to compute: its first anchor fixed (an `every` schedule's start). */
export interface CheckedSchedule {
  schedule: Schedule;
  /** "every weekday at 08:30 (Europe/Istanbul)". */
  readBack: string;
  /** The zone run times are shown in. */
  timeZone: string;
  /** For `once`: the instant; for `every`: the first run. */
  anchor?: number;
}

/** A routine runs at most this often: each run is a model turn. */
export const MIN_INTERVAL_MINUTES = 5;

function clarify(message: string): MemoError {
  return new MemoError('VALIDATION', message);
}

/** True for a zone name the runtime knows (IANA names, and UTC). */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

function requireZone(zone: string | undefined, what: string): string {
  if (!zone) throw clarify(`Which time zone is ${what} in? Give an IANA name (Europe/Istanbul, America/New_York, UTC); it is never guessed.`);
  if (!isTimeZone(zone)) throw clarify(`"${zone}" is not a time zone this machine knows; give an IANA name such as Europe/Istanbul or America/New_York.`);
  return zone;
}

/** The wall-clock fields of an instant in a zone. */
function wallClock(ms: number, zone: string): { y: number; mo: number; d: number; h: number; mi: number; s: number } {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: zone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  }).formatToParts(new Date(ms));
  const get = (t: string) => Number(parts.find((p) => p.type === t)?.value);
  return { y: get('year'), mo: get('month'), d: get('day'), h: get('hour'), mi: get('minute'), s: get('second') };
}

/** The zone's offset from UTC at an instant, in ms. */
function offsetAt(ms: number, zone: string): number {
  const w = wallClock(ms, zone);
  return Date.UTC(w.y, w.mo - 1, w.d, w.h, w.mi, w.s) - Math.floor(ms / 1000) * 1000;
}

const LOCAL = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2}))?$/;

/**
 * The instant a local date-time names in a zone. A time that does not exist there (skipped by a
 * daylight-saving change) or exists twice (repeated by one) is refused: which one is meant is a
 * question for the person, not a guess.
 */
export function zonedInstant(local: string, zone: string): number {
  const m = LOCAL.exec(local.trim());
  if (!m) {
    throw clarify(
      `"${local}" is not a local date and time: give both, as YYYY-MM-DDTHH:MM (2026-03-08T09:00), read in the routine's time zone. A time without a date, or words such as "tomorrow morning", are not guessed.`,
    );
  }
  const [y, mo, d, h, mi, s] = m.slice(1).map((v) => Number(v ?? 0)) as [number, number, number, number, number, number];
  const wall = Date.UTC(y, mo - 1, d, h, mi, s);
  const check = new Date(wall);
  if (check.getUTCMonth() !== mo - 1 || check.getUTCDate() !== d || h > 23 || mi > 59 || s > 59) throw clarify(`"${local}" is not a real date and time.`);
  const offsets = new Set([offsetAt(wall - 86_400_000, zone), offsetAt(wall + 86_400_000, zone), offsetAt(wall, zone)]);
  const matches = [...offsets].map((o) => wall - o).filter((t) => offsetAt(t, zone) === wall - t);
  const unique = [...new Set(matches)].sort((a, b) => a - b);
  if (unique.length === 0) throw clarify(`${local} does not exist in ${zone}: the clocks skip it (daylight-saving change). Say which time is meant.`);
  if (unique.length > 1)
    throw clarify(
      `${local} happens twice in ${zone} (the clocks go back that night). Say which is meant, e.g. as a time with its UTC offset, or pick another time.`,
    );
  return unique[0]!;
}

const DAY_NAMES = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

function two(n: number): string {
  return String(n).padStart(2, '0');
}

/** Day-of-week field to words, or null when it is not a simple list or range. */
function daysInWords(dow: string): string | null {
  if (dow === '*' || dow === '?') return 'every day';
  const days = new Set<number>();
  for (const part of dow.split(',')) {
    const range = /^([0-7])(?:-([0-7]))?$/.exec(part);
    if (!range) return null;
    const from = Number(range[1]);
    const to = range[2] === undefined ? from : Number(range[2]);
    if (to < from) return null;
    for (let d = from; d <= to; d++) days.add(d % 7);
  }
  const sorted = [...days].sort((a, b) => ((a + 6) % 7) - ((b + 6) % 7));
  const key = sorted.join(',');
  if (key === '1,2,3,4,5') return 'every weekday';
  if (key === '6,0') return 'every Saturday and Sunday';
  if (sorted.length === 7) return 'every day';
  const names = sorted.map((d) => DAY_NAMES[d]!);
  return `every ${names.length > 1 ? `${names.slice(0, -1).join(', ')} and ${names.at(-1)}` : names[0]}`;
}

/** Plain words for the common cron shapes; anything else is quoted as it is. */
function cronInWords(cron: string, zone: string): string {
  const [min, hour, dom, month, dow] = cron.trim().split(/\s+/) as [string, string, string, string, string];
  const at = /^\d+$/.test(min) && /^\d+$/.test(hour) ? `${two(Number(hour))}:${two(Number(min))}` : null;
  if (at && month === '*') {
    if (dom === '*') {
      const days = daysInWords(dow);
      if (days) return `${days} at ${at} (${zone})`;
    } else if (/^\d+$/.test(dom) && (dow === '*' || dow === '?')) return `on day ${dom} of every month at ${at} (${zone})`;
  }
  const step = /^\*\/(\d+)$/.exec(min);
  if (step && hour === '*' && dom === '*' && month === '*' && dow === '*') return `every ${step[1]} minutes (${zone})`;
  if (min === '0' && /^\*\/(\d+)$/.test(hour) && dom === '*' && month === '*' && dow === '*') return `every ${hour.slice(2)} hours, on the hour (${zone})`;
  return `at the times of the cron schedule "${cron.trim()}" (${zone})`;
}

type CronClass = typeof Cron;
let cronClass: CronClass | undefined;

/** croner is loaded on the first cron schedule, not when the pack loads. */
function cronOf(expr: string, zone: string): Cron {
  cronClass ??= (createRequire(import.meta.url)('croner') as { Cron: CronClass }).Cron;
  return new cronClass(expr, { timezone: zone, paused: true });
}

/** Formats an instant for a person, in the routine's zone: "Mon 2026-03-30 08:30 (Europe/Istanbul)". */
export function formatInstant(ms: number, zone: string): string {
  const w = wallClock(ms, zone);
  const day = new Intl.DateTimeFormat('en-US', { timeZone: zone, weekday: 'short' }).format(new Date(ms));
  return `${day} ${w.y}-${two(w.mo)}-${two(w.d)} ${two(w.h)}:${two(w.mi)} (${zone})`;
}

/**
 * Checks a schedule as the model gave it, at `now` (the kernel's clock). Refuses, with what to
 * clarify: an unknown or missing zone, a cron expression croner rejects, one with a seconds field
 * or with both a day of the month and a day of the week (cron runs on either, which people rarely
 * mean), anything more frequent than every 5 minutes, and a one-off time in the past.
 */
export function checkSchedule(schedule: Schedule, now: number): CheckedSchedule {
  switch (schedule.kind) {
    case 'cron': {
      const zone = requireZone(schedule.time_zone, 'the cron schedule');
      const fields = schedule.cron.trim().split(/\s+/);
      if (fields.length !== 5)
        throw clarify(`The cron expression "${schedule.cron}" needs exactly 5 fields (minute hour day-of-month month day-of-week), e.g. "30 8 * * 1-5".`);
      const [, , dom, , dow] = fields as [string, string, string, string, string];
      if (dom !== '*' && dom !== '?' && dow !== '*' && dow !== '?')
        throw clarify(
          `The cron expression "${schedule.cron}" restricts both the day of the month and the day of the week, so it would run on either; say whether both must hold or either, and give one of the two.`,
        );
      let cron: Cron;
      try {
        cron = cronOf(schedule.cron, zone);
      } catch (err) {
        throw clarify(`The cron expression "${schedule.cron}" is not valid: ${(err as Error).message}.`);
      }
      const runs = cron.nextRuns(3, new Date(now));
      if (runs.length === 0) throw clarify(`The cron expression "${schedule.cron}" never runs.`);
      // Two runs closer than the minimum interval anywhere in the next ones: too frequent.
      const sample = cron.nextRuns(50, new Date(now)).map((d) => d.getTime());
      for (let i = 1; i < sample.length; i++)
        if (sample[i]! - sample[i - 1]! < MIN_INTERVAL_MINUTES * 60_000)
          throw clarify(
            `"${schedule.cron}" runs more often than every ${MIN_INTERVAL_MINUTES} minutes; each run is a model turn, so a routine runs at most that often.`,
          );
      return { schedule: { kind: 'cron', cron: fields.join(' '), time_zone: zone }, readBack: cronInWords(schedule.cron, zone), timeZone: zone };
    }
    case 'once': {
      const zone = requireZone(schedule.time_zone, 'the time');
      const at = zonedInstant(schedule.at, zone);
      if (at <= now) throw clarify(`${formatInstant(at, zone)} is in the past (it is now ${formatInstant(now, zone)}); give a time that is still to come.`);
      return {
        schedule: { kind: 'once', at: schedule.at.trim(), time_zone: zone },
        readBack: `once, on ${formatInstant(at, zone)}`,
        timeZone: zone,
        anchor: at,
      };
    }
    case 'every': {
      const minutes = schedule.unit === 'hours' ? schedule.every * 60 : schedule.every;
      if (!Number.isInteger(schedule.every) || schedule.every < 1) throw clarify('"every" takes a whole number of minutes or hours, at least 1.');
      if (minutes < MIN_INTERVAL_MINUTES) throw clarify(`A routine runs at most every ${MIN_INTERVAL_MINUTES} minutes; each run is a model turn.`);
      const zone = schedule.start_at
        ? requireZone(schedule.time_zone, 'the start time')
        : schedule.time_zone
          ? requireZone(schedule.time_zone, 'the start')
          : 'UTC';
      let anchor = now + minutes * 60_000;
      if (schedule.start_at) {
        anchor = zonedInstant(schedule.start_at, zone);
        if (anchor <= now)
          throw clarify(`The start ${formatInstant(anchor, zone)} is in the past; give one still to come, or leave it out to start one interval from now.`);
      }
      const unit = schedule.unit === 'hours' ? (schedule.every === 1 ? 'hour' : `${schedule.every} hours`) : `${schedule.every} minutes`;
      return {
        schedule: {
          kind: 'every',
          every: schedule.every,
          unit: schedule.unit,
          ...(schedule.start_at ? { start_at: schedule.start_at.trim() } : {}),
          time_zone: zone,
        },
        readBack: `every ${unit}, from ${formatInstant(anchor, zone)}`,
        timeZone: zone,
        anchor,
      };
    }
    default:
      throw clarify('The schedule kind must be cron, once or every.');
  }
}

/** The interval of an `every` schedule, in ms. */
function intervalMs(s: Extract<Schedule, { kind: 'every' }>): number {
  return (s.unit === 'hours' ? s.every * 60 : s.every) * 60_000;
}

/**
 * The first run time strictly after `after`, or null when there is none (a one-off that is past).
 * `anchor` is the stored first run of a `once` or `every` schedule.
 */
export function nextRunAfter(schedule: Schedule, anchor: number | null, after: number): number | null {
  switch (schedule.kind) {
    case 'cron':
      return cronOf(schedule.cron, schedule.time_zone).nextRun(new Date(after))?.getTime() ?? null;
    case 'once':
      return anchor !== null && anchor > after ? anchor : null;
    case 'every': {
      if (anchor === null) return null;
      if (anchor > after) return anchor;
      const step = intervalMs(schedule);
      return anchor + (Math.floor((after - anchor) / step) + 1) * step;
    }
  }
}

/** The next `n` run times after `after`. */
export function nextRuns(schedule: Schedule, anchor: number | null, after: number, n: number): number[] {
  const out: number[] = [];
  let t = after;
  while (out.length < n) {
    const next = nextRunAfter(schedule, anchor, t);
    if (next === null) break;
    out.push(next);
    t = next;
  }
  return out;
}

/**
 * The run times in (from, to]: the latest of them and how many there were (counting stops at
 * `cap`). What a scheduler missed while it was not running.
 */
export function runsBetween(schedule: Schedule, anchor: number | null, from: number, to: number, cap = 10_000): { latest: number | null; count: number } {
  if (schedule.kind === 'every' && anchor !== null) {
    // Arithmetic, not iteration: a week of a five-minute routine is not 2016 steps.
    const step = intervalMs(schedule);
    const first = nextRunAfter(schedule, anchor, from);
    if (first === null || first > to) return { latest: null, count: 0 };
    const count = Math.floor((to - first) / step) + 1;
    return { latest: first + (count - 1) * step, count };
  }
  let count = 0;
  let latest: number | null = null;
  let t = from;
  while (count < cap) {
    const next = nextRunAfter(schedule, anchor, t);
    if (next === null || next > to) break;
    count++;
    latest = next;
    t = next;
  }
  return { latest, count };
}
