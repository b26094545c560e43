/**
 * Subscribed calendars (ICS URLs): fetched only because the person added the URL, conditionally
 * (If-None-Match / If-Modified-Since), through the kernel's fetchWithRetry with a deadline, and
 * kept in the pack's database so they can be read offline. A server that is slow, down or answers
 * nonsense leaves the last good copy in place.
 */
import { fetchWithRetry, MemoError, runHeavy, withDeadline, type AttemptOutcome } from 'memo-kernel/pack';
import type { DataSource } from 'typeorm';
import { FeedCacheRow } from './schema.js';
import { feedUrl, shownUrl, type SubscriptionSource } from './sources.js';

/** A feed larger than this is refused (a calendar of many years is a few MB). */
const MAX_FEED_BYTES = 20 * 1024 * 1024;

export type RefreshOutcome = { status: 'updated' | 'not-modified'; checkedAt: number } | { status: 'failed'; reason: string };

async function readBody(res: Response, signal: AbortSignal): Promise<string> {
  const reader = (res.body as ReadableStream<Uint8Array> | null)?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    if (signal.aborted) throw signal.reason;
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_FEED_BYTES) {
      await reader.cancel().catch(() => {});
      throw new MemoError('VALIDATION', `the calendar is larger than ${MAX_FEED_BYTES / 1024 / 1024} MB`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

type Fetched = { notModified: true } | { notModified: false; body: string; etag: string | null; lastModified: string | null };

/** Fetches one subscription now and updates its cached copy. Never throws: a failure is an outcome. */
export async function refreshFeed(db: DataSource, source: SubscriptionSource, timeoutMs: number, signal?: AbortSignal): Promise<RefreshOutcome> {
  const repo = db.getRepository(FeedCacheRow);
  const cached = await repo.findOneBy({ source_id: source.id });
  const url = feedUrl(source.url);
  const usable = cached && cached.url === url ? cached : null;
  const headers: Record<string, string> = { accept: 'text/calendar, */*;q=0.5' };
  if (usable?.etag) headers['if-none-match'] = usable.etag;
  if (usable?.last_modified) headers['if-modified-since'] = usable.last_modified;
  const deadline = withDeadline(signal, timeoutMs);
  try {
    const got = await fetchWithRetry<Fetched>(
      url,
      { headers, signal: deadline.signal, redirect: 'follow' },
      {
        attempts: 2,
        baseDelayMs: 250,
        maxRetryAfterMs: 0,
        judge: async (outcome: AttemptOutcome, _attempt, attemptSignal) => {
          if ('error' in outcome) return { retry: outcome.error };
          const res = outcome.response;
          if (res.status === 304) return { done: { notModified: true } };
          if (res.status >= 500 || res.status === 429 || res.status === 408) {
            void res.body?.cancel().catch(() => {});
            return { retry: new Error(`HTTP ${res.status}`) };
          }
          if (!res.ok) throw new Error(`HTTP ${res.status}`);
          const body = await readBody(res, attemptSignal);
          return { done: { notModified: false, body, etag: res.headers.get('etag'), lastModified: res.headers.get('last-modified') } };
        },
        giveUp: (info) => new Error(info.last instanceof Error ? info.last.message : String(info.last)),
      },
    );
    const now = Date.now();
    if (got.notModified) {
      if (usable) await repo.update({ source_id: source.id }, { checked_at: now });
      return { status: 'not-modified', checkedAt: now };
    }
    try {
      // A feed is up to 20 MB from elsewhere: it is checked in a worker, off the event loop.
      await runHeavy(new URL('./recurrence.js', import.meta.url), 'checkCalendar', got.body, { what: `Reading ${shownUrl(url)}` });
    } catch (err) {
      return { status: 'failed', reason: `${shownUrl(url)} did not send iCalendar data (${(err as Error).message})` };
    }
    await repo.save({ source_id: source.id, url, etag: got.etag, last_modified: got.lastModified, body: got.body, checked_at: now });
    return { status: 'updated', checkedAt: now };
  } catch (err) {
    const reason =
      deadline.cause === 'timeout'
        ? `${shownUrl(url)} did not answer within ${Math.round(timeoutMs / 100) / 10} s`
        : deadline.cause === 'cancelled'
          ? 'the refresh was cancelled'
          : `${shownUrl(url)} could not be fetched: ${(err as Error)?.message ?? String(err)}`;
    return { status: 'failed', reason };
  } finally {
    deadline.dispose();
  }
}
