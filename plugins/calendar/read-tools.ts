/**
 * The calendar's read tools (safe): get_calendar_events and list_calendars.
 *
 * Seed 003: events from external calendars (subscriptions, each CalDAV account) are shown only for
 * the services the person allowed, and the list of those services is built from the stored answers,
 * never from the caller: `includeExternal: true` can only narrow nothing, `false` leaves external
 * calendars out. The answer names what was left out and how the person can allow it.
 */
import { MemoError, runHeavy, type ToolContext } from 'memo-kernel/pack';
import type { DataSource } from 'typeorm';
import type { Expansion, Occurrence, Range } from './recurrence.js';
import { runtimeOf, type CalendarRuntime } from './runtime.js';
import { CaldavCalendarRow, CaldavObjectRow, FeedCacheRow, LocalEventRow } from './schema.js';
import { isWritable, LOCAL_ID, serviceOf, shownUrl, type ConsentState, type Source } from './sources.js';
import type { ToolArgs } from './tool-args.js';
import { addDays, checkZone, hostZone, instantIn, isoInZone, parseTime } from './zoned-time.js';

const DEFAULT_LIMIT = 500;
const MAX_RANGE_DAYS = 3660;
const MAX_FILE_BYTES = 20 * 1024 * 1024;

/** The zone a call means: its own, else the pack setting, else this machine's. */
export function zoneFor(ctx: ToolContext, given: string | undefined): string {
  const z = given ?? (typeof ctx.config.timeZone === 'string' && ctx.config.timeZone ? ctx.config.timeZone : hostZone());
  return checkZone(z);
}

function rangeOf(args: ToolArgs['get_calendar_events'], zone: string): Range {
  const start = parseTime(args.start, 'start');
  const startMs = instantIn(start, zone);
  let endMs: number;
  if (args.end !== undefined) {
    const end = parseTime(args.end, 'end');
    // A date as the end means the whole of that day.
    endMs = end.kind === 'date' ? instantIn({ kind: 'date', wall: addDays(end.wall, 1) }, zone) : instantIn(end, zone);
  } else {
    endMs = start.kind === 'date' ? instantIn({ kind: 'date', wall: addDays(start.wall, 1) }, zone) : startMs + 86_400_000;
  }
  if (endMs <= startMs) throw new MemoError('VALIDATION', `The range ends (${args.end}) before it starts (${args.start}).`);
  if (endMs - startMs > MAX_RANGE_DAYS * 86_400_000) throw new MemoError('VALIDATION', `The range is longer than ${MAX_RANGE_DAYS} days; ask for less.`);
  return { startMs, endMs, zone };
}

interface SourceText {
  calendar?: string;
  /** The CalDAV object's URL (one per event there). */
  url?: string;
  ics: string;
}

/** The iCalendar texts a source holds now (local rows, a file, a cached copy). */
async function textsOf(db: DataSource, ctx: ToolContext, source: Source | null): Promise<SourceText[]> {
  if (!source) return (await db.getRepository(LocalEventRow).find()).map((r) => ({ ics: r.ics }));
  if (source.kind === 'file') {
    const { handle, size } = await ctx.sandbox.openForRead(source.path);
    try {
      if (size > MAX_FILE_BYTES) throw new MemoError('VALIDATION', `${source.path} is larger than ${MAX_FILE_BYTES / 1024 / 1024} MB.`);
      return [{ ics: await handle.readFile('utf8') }];
    } finally {
      await handle.close();
    }
  }
  if (source.kind === 'subscription') {
    const row = await db.getRepository(FeedCacheRow).findOneBy({ source_id: source.id });
    return row ? [{ ics: row.body }] : [];
  }
  const names = new Map((await db.getRepository(CaldavCalendarRow).findBy({ source_id: source.id })).map((c) => [c.url, c.name]));
  return (await db.getRepository(CaldavObjectRow).findBy({ source_id: source.id })).map((o) => ({
    ics: o.ics,
    url: o.url,
    calendar: names.get(o.calendar_url) ?? o.calendar_url,
  }));
}

async function lastChecked(db: DataSource, source: Source): Promise<number | null> {
  if (source.kind === 'subscription') return (await db.getRepository(FeedCacheRow).findOneBy({ source_id: source.id }))?.checked_at ?? null;
  if (source.kind === 'caldav') {
    const rows = await db.getRepository(CaldavCalendarRow).findBy({ source_id: source.id });
    return rows.length ? Math.min(...rows.map((r) => r.checked_at)) : null;
  }
  return null;
}

/** Brings stale external copies up to date, each within the deadline; what failed becomes a warning, the cache is used. */
async function freshen(rt: CalendarRuntime, db: DataSource, ctx: ToolContext, sources: Source[], warnings: string[]): Promise<void> {
  const maxAge = rt.maxAgeMs(ctx.config);
  const timeout = rt.fetchTimeoutMs(ctx.config);
  await Promise.all(
    sources.map(async (s) => {
      const checked = await lastChecked(db, s);
      if (checked !== null && Date.now() - checked < maxAge) return;
      const r = await rt.refresh(s, timeout, ctx.signal);
      if (r.status !== 'failed') return;
      const kept = await lastChecked(db, s);
      warnings.push(
        `${s.id}: ${r.reason}; ${kept !== null ? `showing the copy from ${new Date(kept).toISOString().replace(/\.\d{3}Z$/, 'Z')}` : 'no copy was fetched before, so none of its events are shown'}.`,
      );
    }),
  );
}

interface LeftOut {
  service: string;
  state: ConsentState | 'not requested';
  calendars: string[];
}

export async function getCalendarEvents(args: ToolArgs['get_calendar_events'], ctx: ToolContext) {
  const rt = runtimeOf(ctx);
  const zone = zoneFor(ctx, args.timeZone);
  const range = rangeOf(args, zone);
  const includeExternal = args.includeExternal !== false;
  const all: Array<Source | null> = [null, ...rt.settings.sources()];
  const idOf = (s: Source | null) => (s ? s.id : LOCAL_ID);
  if (args.sources?.length) {
    const unknown = args.sources.filter((id) => !all.some((s) => idOf(s) === id));
    if (unknown.length)
      throw new MemoError('NOT_FOUND', `No calendar is called ${unknown.map((u) => `"${u}"`).join(', ')} (calendars: ${all.map(idOf).join(', ')}).`);
  }
  const wanted = all.filter((s) => !args.sources?.length || args.sources.includes(idOf(s)));

  // Which services may be read comes from the person's stored answers alone.
  const leftOut = new Map<string, LeftOut>();
  const readable: Array<Source | null> = [];
  for (const s of wanted) {
    const service = s ? serviceOf(s) : null;
    if (!service) {
      readable.push(s);
      continue;
    }
    const state: LeftOut['state'] = includeExternal ? rt.settings.consentState(service) : 'not requested';
    if (state === 'allowed') {
      readable.push(s);
      continue;
    }
    const entry = leftOut.get(service) ?? { service, state, calendars: [] };
    entry.calendars.push(idOf(s));
    leftOut.set(service, entry);
  }

  const warnings: string[] = [];
  if (rt.settings.sourcesProblem)
    warnings.push(
      'The list of added calendars cannot be read, so only the local calendar is shown; the person can fix it by adding them again (memo calendar add).',
    );
  const db = await rt.database();
  await freshen(
    rt,
    db,
    ctx,
    readable.filter((s): s is Source => s !== null && s.kind !== 'file'),
    warnings,
  );

  const events: Array<Occurrence & { source: string; calendar?: string }> = [];
  const pending: Array<{ source: Source | null; text: SourceText }> = [];
  for (const s of readable) {
    try {
      for (const text of await textsOf(db, ctx, s)) pending.push({ source: s, text });
    } catch (err) {
      warnings.push(`${idOf(s)}: ${(err as Error).message}`);
    }
  }
  // Parsing and expansion run in a worker under one budget for the whole call, off the event loop:
  // the tool's timeout ends it, and the kernel keeps serving while it runs.
  const expansions =
    pending.length === 0
      ? []
      : await runHeavy<Expansion[]>(
          new URL('./recurrence.js', import.meta.url),
          'expandTexts',
          { texts: pending.map((a) => a.text.ics), range } satisfies { texts: string[]; range: Range },
          {
            signal: ctx.signal,
            what: 'Reading the calendars',
          },
        );
  pending.forEach(({ source: s, text: t }, i) => {
    const { occurrences, problems } = expansions[i] ?? { occurrences: [], problems: [] };
    for (const p of problems) warnings.push(`${idOf(s)}: ${p}`);
    for (const o of occurrences) events.push({ ...o, source: idOf(s), ...(t.calendar ? { calendar: t.calendar } : {}) });
  });
  events.sort((a, b) => a.startMs - b.startMs || a.endMs - b.endMs || a.title.localeCompare(b.title));
  const limit = args.limit ?? DEFAULT_LIMIT;
  const shown = events.slice(0, limit).map(({ startMs: _s, endMs: _e, ...o }) => ({ id: `${o.source}:${o.uid}`, ...o }));

  const out = [...leftOut.values()];
  const consentLeftOut = out.filter((l) => l.state !== 'not requested');
  const result = {
    range: { start: isoInZone(range.startMs, zone), end: isoInZone(range.endMs, zone), timeZone: zone },
    events: shown,
    count: shown.length,
    ...(events.length > limit ? { truncated: true, total: events.length } : {}),
    sources: readable.map(idOf),
    ...(out.length ? { left_out: out } : {}),
    ...(consentLeftOut.length
      ? {
          note: `Events from ${consentLeftOut.map((l) => l.service).join(', ')} were left out: the person has not allowed AI access to ${consentLeftOut.length === 1 ? 'that calendar service' : 'those calendar services'}. They can allow one with: memo calendar consent <service> allow.`,
        }
      : {}),
    ...(warnings.length ? { warnings } : {}),
    summary: `${shown.length} event${shown.length === 1 ? '' : 's'} from ${readable.length} calendar${readable.length === 1 ? '' : 's'}${out.length ? `, ${out.reduce((n, l) => n + l.calendars.length, 0)} left out` : ''}`,
  };
  return result;
}

export async function listCalendars(_args: ToolArgs['list_calendars'], ctx: ToolContext) {
  const rt = runtimeOf(ctx);
  const db = await rt.database();
  const localCount = await db.getRepository(LocalEventRow).count();
  const calendars: Array<Record<string, unknown>> = [{ id: LOCAL_ID, kind: 'local', readable: true, writable: true, events: localCount }];
  for (const s of rt.settings.sources()) {
    const service = serviceOf(s);
    const consent = service ? rt.settings.consentState(service) : null;
    const entry: Record<string, unknown> = {
      id: s.id,
      kind: s.kind,
      ...(service ? { service, consent } : {}),
      readable: !service || consent === 'allowed',
      writable: false,
    };
    if (s.kind === 'file') entry.path = s.path;
    else entry.url = shownUrl(s.url);
    const checked = await lastChecked(db, s);
    if (checked !== null) entry.last_checked = new Date(checked).toISOString();
    if (s.kind === 'caldav') {
      entry.user = s.username;
      entry.password = rt.settings.passwordShown(s);
      const cals = await db.getRepository(CaldavCalendarRow).find({ where: { source_id: s.id }, order: { name: 'ASC' } });
      entry.calendars = cals.map((c) => ({ name: c.name, id: `${s.id}/${c.name}`, writable: isWritable(s, c) }));
      entry.writable = cals.some((c) => isWritable(s, c));
    }
    calendars.push(entry);
  }
  return {
    calendars,
    ...(rt.settings.consentProblem
      ? {
          warning:
            'The stored consent answers cannot be read, so no external calendar is shown to the AI until the person answers again (memo calendar consent).',
        }
      : {}),
    summary: `${calendars.length} calendar${calendars.length === 1 ? '' : 's'}`,
  };
}
