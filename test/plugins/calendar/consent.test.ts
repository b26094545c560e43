import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import type { AddressInfo } from 'node:net';
import { atTeardown } from '../../helpers/cleanup.js';
import { waitFor } from '../../helpers/wait.js';
import { calendarKernel, error, value, type CalendarFixture } from './helpers.js';

const FEED = [
  'BEGIN:VCALENDAR',
  'VERSION:2.0',
  'PRODID:-//Memo tests//Feed//EN',
  'BEGIN:VEVENT',
  'UID:feed-1@memo.test',
  'DTSTAMP:20260101T000000Z',
  'DTSTART:20260505T100000Z',
  'DTEND:20260505T110000Z',
  'SUMMARY:From the subscription',
  'END:VEVENT',
  'END:VCALENDAR',
  '',
].join('\r\n');

const LAST_MODIFIED = 'Tue, 05 May 2026 08:00:00 GMT';

/** A loopback ICS server whose behaviour a test switches: serve (with an ETag), fail with 500, or hang. */
async function feedServer() {
  const seen: Array<{ ifNoneMatch?: string; ifModifiedSince?: string | undefined; status: number }> = [];
  let mode: 'serve' | 'fail' | 'hang' | 'nonsense' = 'serve';
  const server = http.createServer((req, res) => {
    const inm = req.headers['if-none-match'];
    if (mode === 'hang') return; // never answers
    if (mode === 'fail') {
      seen.push({ status: 500 });
      res.writeHead(500).end('down');
      return;
    }
    if (mode === 'nonsense') {
      seen.push({ status: 200 });
      res.writeHead(200, { 'content-type': 'text/calendar', etag: '"v2"' }).end('<html>not a calendar</html>');
      return;
    }
    if (inm === '"v1"') {
      seen.push({ ifNoneMatch: inm, ifModifiedSince: req.headers['if-modified-since'], status: 304 });
      res.writeHead(304, { etag: '"v1"' }).end();
      return;
    }
    seen.push({ status: 200 });
    res.writeHead(200, { 'content-type': 'text/calendar', etag: '"v1"', 'last-modified': LAST_MODIFIED }).end(FEED);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  atTeardown(() => {
    server.closeAllConnections();
    return new Promise((r) => server.close(r));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/cal.ics`,
    seen,
    set: (m: typeof mode) => (mode = m),
  };
}

async function withSubscription(config: Record<string, unknown> = {}) {
  const fx = await calendarKernel({ config });
  const feed = await feedServer();
  await fx.addFixture('mine', 'all-day.ics');
  const added = await fx.command('add', { kind: 'subscription', name: 'team', location: feed.url }, { json: true });
  expect(added.code).toBe(0);
  return { fx, feed };
}

const titles = (v: any) => v.events.map((e: any) => e.title).sort();

describe('consent per calendar service (seed 003)', () => {
  let fx: CalendarFixture;
  beforeAll(async () => {
    ({ fx } = await withSubscription());
  });
  afterAll(async () => fx.close());

  const consentFile = () => path.join(fx.packData, 'consent.json');
  const states: Array<[string, () => Promise<void>, boolean]> = [
    ['not asked', () => Promise.resolve(fs.rmSync(consentFile(), { force: true })), false],
    ['declined', async () => void (await fx.command('consent', { service: 'subscriptions', answer: 'deny' })), false],
    ['allowed', async () => void (await fx.command('consent', { service: 'subscriptions', answer: 'allow' })), true],
    ['unreadable', () => Promise.resolve(fs.writeFileSync(consentFile(), '{"services": {"subscriptions": "allow"')), false],
  ];

  for (const [state, arrange, allowed] of states)
    for (const includeExternal of [true, false]) {
      it(`${allowed && includeExternal ? 'shows' : 'leaves out'} subscribed events when the answer is ${state} and includeExternal is ${includeExternal}`, async () => {
        await arrange();
        const v = value(await fx.call('get_calendar_events', { start: '2026-05-05', includeExternal }));
        const own = ['Conference', 'Lunch wherever I am'];
        if (allowed && includeExternal) {
          expect(titles(v)).toEqual([...own, 'From the subscription'].sort());
          expect(v.left_out).toBeUndefined();
          expect(v.sources).toEqual(['local', 'mine', 'team']);
        } else {
          expect(titles(v)).toEqual(own);
          expect(v.left_out).toEqual([{ service: 'subscriptions', state: includeExternal ? state : 'not requested', calendars: ['team'] }]);
          if (includeExternal) expect(v.note).toMatch(/memo calendar consent <service> allow/);
        }
      });
    }

  it('lets no caller name its way past a missing answer: asking for the subscription by id still leaves it out', async () => {
    fs.rmSync(consentFile(), { force: true });
    const v = value(await fx.call('get_calendar_events', { start: '2026-05-05', sources: ['team'], includeExternal: true }));
    expect(v.events).toEqual([]);
    expect(v.left_out).toEqual([{ service: 'subscriptions', state: 'not asked', calendars: ['team'] }]);
  });

  it('lists each calendar with its consent state, and memo calendar consent shows the answers', async () => {
    await fx.command('consent', { service: 'subscriptions', answer: 'deny' });
    const v = value(await fx.call('list_calendars', {}));
    expect(v.calendars.map((c: any) => [c.id, c.kind, c.consent ?? null, c.readable])).toEqual([
      ['local', 'local', null, true],
      ['mine', 'file', null, true],
      ['team', 'subscription', 'declined', false],
    ]);
    expect(JSON.stringify(v)).not.toContain('/cal.ics');
    const shown = await fx.command('consent', {}, { json: true });
    expect(shown.out[0]).toEqual({ ok: true, result: [{ service: 'subscriptions', state: 'declined' }] });
  });

  it('refuses an answer for something that is not a service', async () => {
    const r = await fx.command('consent', { service: 'mine', answer: 'allow' }, { json: true });
    expect(r.code).toBe(2);
    expect(r.out[0]).toMatchObject({ ok: false, error: { code: 'VALIDATION', message: expect.stringMatching(/need no consent/) } });
  });

  it('has no tool through which a caller could allow a service', async () => {
    const names = fx.kernel.registry.list().map((t) => t.spec.name);
    expect(names.filter((n: string) => /consent/.test(n))).toEqual([]);
    expect(error(await fx.call('get_calendar_events', { start: '2026-05-05', consent: 'allow' })).code).toBe('INVALID_ARGS');
  });
});

describe('subscribed calendars: conditional refresh, offline copy, and servers that fail', () => {
  it('refreshes with If-None-Match and If-Modified-Since and keeps reading the copy when the server answers 304', async () => {
    const { fx, feed } = await withSubscription({ refreshMinutes: 0 });
    await fx.command('consent', { service: 'subscriptions', answer: 'allow' });
    const v = value(await fx.call('get_calendar_events', { start: '2026-05-05', sources: ['team'] }));
    expect(titles(v)).toEqual(['From the subscription']);
    expect(feed.seen).toEqual([{ status: 200 }, { ifNoneMatch: '"v1"', ifModifiedSince: LAST_MODIFIED, status: 304 }]);
    await fx.close();
  });

  it('answers from the last good copy, with a warning, when the server fails', async () => {
    const { fx, feed } = await withSubscription({ refreshMinutes: 0 });
    await fx.command('consent', { service: 'subscriptions', answer: 'allow' });
    feed.set('fail');
    const v = value(await fx.call('get_calendar_events', { start: '2026-05-05' }));
    expect(titles(v)).toEqual(['Conference', 'From the subscription', 'Lunch wherever I am']);
    expect(v.warnings).toEqual([expect.stringMatching(/^team: .*HTTP 500; showing the copy from 20\d\d-/)]);
    await fx.close();
  });

  it('keeps the last good copy, saying why, when the server sends something that is not iCalendar (checked in a worker)', async () => {
    const { fx, feed } = await withSubscription({ refreshMinutes: 0 });
    await fx.command('consent', { service: 'subscriptions', answer: 'allow' });
    value(await fx.call('get_calendar_events', { start: '2026-05-05' }));
    feed.set('nonsense');
    const v = value(await fx.call('get_calendar_events', { start: '2026-05-05' }));
    expect(titles(v)).toEqual(['Conference', 'From the subscription', 'Lunch wherever I am']);
    expect(v.warnings).toEqual([expect.stringMatching(/^team: .*did not send iCalendar data \(.+\); showing the copy from 20\d\d-/)]);
    await fx.close();
  });

  it('refreshes added subscriptions in the background once the kernel runs its services', async () => {
    const { fx, feed } = await withSubscription();
    expect(feed.seen).toEqual([{ status: 200 }]);
    await fx.kernel.start();
    await waitFor(() => feed.seen.length >= 2, { what: () => `a background refresh (seen: ${JSON.stringify(feed.seen)})` });
    expect(feed.seen[1]).toEqual({ ifNoneMatch: '"v1"', ifModifiedSince: LAST_MODIFIED, status: 304 });
    expect(fx.kernel.services.list()).toContainEqual({ pack: 'calendar', name: 'sync', state: 'running' });
    await fx.close();
  });

  it('does not hold up the own calendars when a subscription never answers', async () => {
    const fx = await calendarKernel({ config: { refreshMinutes: 0, fetchTimeoutMs: 300 } });
    const feed = await feedServer();
    feed.set('hang');
    await fx.addFixture('mine', 'all-day.ics');
    const added = await fx.command('add', { kind: 'subscription', name: 'slow', location: feed.url }, { json: true });
    expect(added.out[0]).toMatchObject({ ok: true, result: { sync: { status: 'failed', reason: expect.stringMatching(/did not answer within 0.3 s/) } } });
    await fx.command('consent', { service: 'subscriptions', answer: 'allow' });
    value(await fx.call('create_calendar_event', { title: 'Local call', start: '2026-05-05T08:00' }));
    const v = value(await fx.call('get_calendar_events', { start: '2026-05-05' }));
    expect(titles(v)).toEqual(['Conference', 'Local call', 'Lunch wherever I am']);
    expect(v.warnings).toEqual([expect.stringMatching(/^slow: .*did not answer within 0.3 s; no copy was fetched before/)]);
    await fx.close();
  });
});
