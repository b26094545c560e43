/**
 * CalDAV accounts through tsdav (Basic authentication: Nextcloud, Radicale, Fastmail, iCloud app
 * passwords). Reads are synced into the pack's database (so they work offline); writes go to the
 * server with the ETag the person's preview was made from (If-Match), so a change someone made in
 * the meantime is refused instead of overwritten. Every request has a deadline; error messages
 * never carry the password.
 */
import { isMemoError, maskSecrets, MemoError, withDeadline } from 'memo-kernel/pack';
import { createDAVClient, type DAVCalendar } from 'tsdav';
import type { DataSource } from 'typeorm';
import type { RefreshOutcome } from './feeds.js';
import { CaldavCalendarRow, CaldavObjectRow } from './schema.js';
import { isWritable, shownUrl, type CalendarSettings, type CaldavSource } from './sources.js';

type Client = Awaited<ReturnType<typeof createDAVClient>>;

function nameOf(cal: DAVCalendar): string {
  return typeof cal.displayName === 'string' && cal.displayName.trim()
    ? cal.displayName
    : decodeURIComponent(cal.url.replace(/\/$/, '').split('/').pop() ?? '') || cal.url;
}

function holdsEvents(cal: DAVCalendar): boolean {
  return !cal.components || cal.components.length === 0 || cal.components.includes('VEVENT');
}

/** A tsdav client whose every request follows `signal` (the caller's deadline). */
async function connect(source: CaldavSource, settings: CalendarSettings, signal: AbortSignal): Promise<Client> {
  const password = settings.password(source);
  const boundFetch: typeof fetch = (input, init) => fetch(input, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, signal]) : signal });
  return createDAVClient({
    serverUrl: source.url,
    credentials: { username: source.username, password },
    authMethod: 'Basic',
    defaultAccountType: 'caldav',
    fetch: boundFetch,
  });
}

/** Runs CalDAV work under a deadline, turning failures into one sentence without the password. */
async function withAccount<T>(
  source: CaldavSource,
  settings: CalendarSettings,
  timeoutMs: number,
  signal: AbortSignal | undefined,
  work: (client: Client, signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const deadline = withDeadline(signal, timeoutMs);
  try {
    const client = await connect(source, settings, deadline.signal);
    return await work(client, deadline.signal);
  } catch (err) {
    if (deadline.cause === 'timeout')
      throw new MemoError('TIMEOUT', `CalDAV account "${source.id}" (${shownUrl(source.url)}) did not answer within ${Math.round(timeoutMs / 100) / 10} s.`);
    if (deadline.cause === 'cancelled') throw new MemoError('CANCELLED', 'The CalDAV request was cancelled.');
    if (isMemoError(err)) throw err;
    const raw = (err as Error)?.message ?? String(err);
    const cause = (err as { cause?: { message?: string } })?.cause?.message;
    const message = maskSecrets(`${raw}${cause ? ` (${cause})` : ''}`, settings.secrets());
    throw new MemoError('TOOL_FAILED', `CalDAV account "${source.id}" (${shownUrl(source.url)}): ${message}`);
  } finally {
    deadline.dispose();
  }
}

/** Fetches the account's calendars and the events of each one that changed (by its ctag), into the cache. */
export async function syncAccount(
  db: DataSource,
  source: CaldavSource,
  settings: CalendarSettings,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<RefreshOutcome> {
  try {
    const changed = await withAccount(source, settings, timeoutMs, signal, async (client) => {
      const calendars = (await client.fetchCalendars()).filter(holdsEvents);
      const known = new Map((await db.getRepository(CaldavCalendarRow).findBy({ source_id: source.id })).map((c) => [c.url, c]));
      const now = Date.now();
      let updated = false;
      const fresh: Array<{ cal: DAVCalendar; objects: Array<{ url: string; etag?: string; data?: unknown }> | null }> = [];
      for (const cal of calendars) {
        const before = known.get(cal.url);
        const same = before && cal.ctag && before.ctag === cal.ctag;
        fresh.push({ cal, objects: same ? null : await client.fetchCalendarObjects({ calendar: cal }) });
      }
      await db.transaction(async (m) => {
        const seen = new Set(calendars.map((c) => c.url));
        for (const url of known.keys())
          if (!seen.has(url)) {
            await m.delete(CaldavObjectRow, { calendar_url: url });
            await m.delete(CaldavCalendarRow, { url });
            updated = true;
          }
        for (const { cal, objects } of fresh) {
          await m.save(CaldavCalendarRow, { url: cal.url, source_id: source.id, name: nameOf(cal), ctag: cal.ctag ?? null, checked_at: now });
          if (!objects) continue;
          updated = true;
          await m.delete(CaldavObjectRow, { calendar_url: cal.url });
          for (const o of objects) {
            if (typeof o.data !== 'string' || !o.data.trim()) continue;
            await m.save(CaldavObjectRow, { url: o.url, source_id: source.id, calendar_url: cal.url, uid: uidOf(o.data), etag: o.etag ?? null, ics: o.data });
          }
        }
      });
      return updated;
    });
    return { status: changed ? 'updated' : 'not-modified', checkedAt: Date.now() };
  } catch (err) {
    return { status: 'failed', reason: (err as Error).message };
  }
}

export function uidOf(ics: string): string {
  const m = /^UID:(.*)$/im.exec(ics.replace(/\r?\n[ \t]/g, ''));
  return m ? m[1]!.trim() : '';
}

/** The calendar of an account that a write names: by name or URL; the only one when there is one. */
export async function writableCalendar(db: DataSource, source: CaldavSource, calendar: string | undefined): Promise<CaldavCalendarRow> {
  const calendars = await db.getRepository(CaldavCalendarRow).findBy({ source_id: source.id });
  if (!calendars.length)
    throw new MemoError('NOT_FOUND', `CalDAV account "${source.id}" has no known calendars yet: the person can run memo calendar sync ${source.id}.`);
  const writable = calendars.filter((c) => isWritable(source, c));
  // Named: that one. Not named: the account's only calendar Memo may write to.
  const pick = calendar
    ? calendars.find((c) => c.name === calendar || c.url === calendar || c.url.replace(/\/$/, '').endsWith(`/${calendar}`))
    : writable.length === 1
      ? writable[0]
      : calendars.length === 1
        ? calendars[0]
        : undefined;
  if (!pick)
    throw new MemoError(
      'VALIDATION',
      `Say which calendar of "${source.id}" to write to (${source.id}/<calendar>): ${calendars.map((c) => `"${c.name}"`).join(', ')}.`,
    );
  if (!isWritable(source, pick))
    throw new MemoError(
      'PERMISSION_DENIED',
      `The calendar "${pick.name}" of "${source.id}" is read-only for Memo: the person can mark it writable with memo calendar add caldav ... --writable "${pick.name}".`,
    );
  return pick;
}

/** The object as the server has it now (its ETag and text), or null when it is gone. */
export async function fetchObject(
  source: CaldavSource,
  settings: CalendarSettings,
  url: string,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<{ etag: string | null; ics: string } | null> {
  return withAccount(source, settings, timeoutMs, signal, async (_client, s) => {
    const password = settings.password(source);
    const res = await fetch(url, {
      headers: { authorization: `Basic ${Buffer.from(`${source.username}:${password}`).toString('base64')}`, accept: 'text/calendar' },
      signal: s,
    });
    if (res.status === 404 || res.status === 410) return null;
    if (!res.ok) throw new Error(`HTTP ${res.status} reading the event`);
    return { etag: res.headers.get('etag'), ics: await res.text() };
  });
}

export type WriteOutcome = { ok: true; etag: string | null } | { ok: false; status: number };

/** PUT a new object (If-None-Match: *), replace one (If-Match: etag) or DELETE one (If-Match: etag). */
export async function writeObject(
  source: CaldavSource,
  settings: CalendarSettings,
  op:
    | { kind: 'create'; calendarUrl: string; filename: string; ics: string }
    | { kind: 'update'; url: string; etag: string; ics: string }
    | { kind: 'delete'; url: string; etag: string },
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<WriteOutcome> {
  return withAccount(source, settings, timeoutMs, signal, async (client) => {
    let res: Response;
    if (op.kind === 'create') {
      res = await client.createCalendarObject({ calendar: { url: op.calendarUrl }, filename: op.filename, iCalString: op.ics });
    } else if (op.kind === 'update') {
      res = await client.updateCalendarObject({ calendarObject: { url: op.url, etag: op.etag, data: op.ics } });
    } else {
      res = await client.deleteCalendarObject({ calendarObject: { url: op.url, etag: op.etag } });
    }
    if (!res.ok) return { ok: false, status: res.status };
    return { ok: true, etag: res.headers.get('etag') };
  });
}
