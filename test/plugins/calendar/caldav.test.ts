import * as fs from 'node:fs';
import * as path from 'node:path';
import { runTurn } from '../../../kernel/agent/agent-loop.js';
import { reply, ScriptedProvider, toolCall } from '../../helpers/scripted-provider.js';
import { calendarKernel, error, value, type CalendarFixture } from './helpers.js';
import { makeCalendar, RADICALE, startRadicale, type Radicale } from './radicale.js';
import type { ApprovalReply, PermissionRequest } from '../../../kernel/permissions/prompter.js';

const SERIES = [
  'BEGIN:VCALENDAR',
  'VERSION:2.0',
  'PRODID:-//Memo tests//Radicale//EN',
  'BEGIN:VEVENT',
  'UID:team-sync@memo.test',
  'DTSTAMP:20260101T000000Z',
  'DTSTART;TZID=America/New_York:20260302T110000',
  'DTEND;TZID=America/New_York:20260302T113000',
  'RRULE:FREQ=WEEKLY;COUNT=3',
  'SUMMARY:Team sync',
  'END:VEVENT',
  'BEGIN:VEVENT',
  'UID:team-sync@memo.test',
  'DTSTAMP:20260101T000000Z',
  'RECURRENCE-ID;TZID=America/New_York:20260309T110000',
  'DTSTART;TZID=America/New_York:20260310T160000',
  'DTEND;TZID=America/New_York:20260310T163000',
  'SUMMARY:Team sync (Tuesday this week)',
  'END:VEVENT',
  'END:VCALENDAR',
  '',
].join('\r\n');

const PASSWORD_ENV = 'MEMO_TEST_CALDAV_PASSWORD';

if (!RADICALE) {
  if (process.env.CI === 'true') {
    it('has Radicale installed (CI installs it in .ci/run; the CalDAV tests need it)', () => {
      throw new Error('radicale was not found on PATH: .ci/run must apt-get install -y radicale before npm ci');
    });
  } else {
    console.warn(
      'The CalDAV tests (test/plugins/calendar/caldav.test.ts) did NOT run: radicale is not installed here. Install it with: apt-get install -y radicale',
    );
  }
}

const describeWithRadicale = RADICALE ? describe : describe.skip;

/** A prompter that answers allow-once, and can run something first (a change someone else makes meanwhile). */
class Answering {
  readonly asked: PermissionRequest[] = [];
  before: (() => Promise<void>) | null = null;
  async ask(request: PermissionRequest): Promise<ApprovalReply> {
    this.asked.push(request);
    const b = this.before;
    this.before = null;
    if (b) await b();
    return 'allow-once';
  }
}

describeWithRadicale('CalDAV accounts against a real Radicale server', () => {
  let server: Radicale;
  let fx: CalendarFixture;
  const prompter = new Answering();
  const events = async (start: string, end?: string) =>
    value(await fx.call('get_calendar_events', { start, ...(end ? { end } : {}), sources: ['work'], timeZone: 'America/New_York' }));

  beforeAll(async () => {
    server = await startRadicale();
    const personal = await makeCalendar(server, 'personal', 'Personal');
    await makeCalendar(server, 'shared', 'Shared');
    const put = await server.request('PUT', `${personal}team-sync.ics`, SERIES, { 'content-type': 'text/calendar' });
    expect(put.status).toBe(201);
    process.env[PASSWORD_ENV] = server.password;
    fx = await calendarKernel({ prompter, config: { refreshMinutes: 0, timeZone: 'America/New_York' } });
    const added = await fx.command(
      'add',
      { kind: 'caldav', name: 'work', location: server.url },
      { username: server.user, passwordEnv: PASSWORD_ENV, writable: 'Personal', json: true },
    );
    expect(added.out[0]).toMatchObject({ ok: true, result: { service: 'caldav:work', consent: 'not asked', sync: { status: 'updated' } } });
  });
  afterAll(async () => {
    await fx?.close();
    delete process.env[PASSWORD_ENV];
  });

  it('leaves the account out until the person allows it, then reads its series with the moved instance', async () => {
    const before = await events('2026-03-01', '2026-03-21');
    expect(before.events).toEqual([]);
    expect(before.left_out).toEqual([{ service: 'caldav:work', state: 'not asked', calendars: ['work'] }]);
    await fx.command('consent', { service: 'caldav:work', answer: 'allow' });
    const after = await events('2026-03-01', '2026-03-21');
    expect(after.events.map((e: any) => `${e.start} ${e.title} (${e.calendar})`)).toEqual([
      '2026-03-02T11:00:00-05:00 Team sync (Personal)',
      '2026-03-10T16:00:00-04:00 Team sync (Tuesday this week) (Personal)',
      '2026-03-16T11:00:00-04:00 Team sync (Personal)',
    ]);
  });

  it('lists the account’s calendars with which are writable, and never shows the password', async () => {
    const v = value(await fx.call('list_calendars', {}));
    const work = v.calendars.find((c: any) => c.id === 'work');
    expect(work).toMatchObject({ kind: 'caldav', consent: 'allowed', user: 'alice', password: `from $${PASSWORD_ENV}`, writable: true });
    expect(work.calendars).toEqual([
      { name: 'Personal', id: 'work/Personal', writable: true },
      { name: 'Shared', id: 'work/Shared', writable: false },
    ]);
    expect(JSON.stringify(v)).not.toContain(server.password);
  });

  let created = '';
  it('creates an event on the server after the person saw its fields', async () => {
    prompter.asked.length = 0;
    const r = value(
      await fx.call('create_calendar_event', { calendar: 'work', title: 'Dentist', start: '2026-03-12T15:00', end: '2026-03-12T15:45', location: 'Main St' }),
    );
    expect(prompter.asked[0]?.preview?.facts?.slice(0, 3)).toEqual([
      { label: 'calendar', value: 'work/Personal' },
      { label: 'title', value: 'Dentist' },
      { label: 'start', value: '2026-03-12 15:00 America/New_York' },
    ]);
    expect(r).toMatchObject({ id: expect.stringMatching(/^work:/), created: true, calendar: 'work/Personal' });
    created = r.id;
    const listing = await (await server.request('PROPFIND', `/${server.user}/personal/`, undefined, { depth: '1' })).text();
    expect(listing.match(/\.ics</g)).toHaveLength(2);
    expect((await events('2026-03-12')).events.map((e: any) => `${e.start} ${e.title} @ ${e.location}`)).toEqual([
      '2026-03-12T15:00:00-04:00 Dentist @ Main St',
    ]);
  });

  it('updates it on the server, showing the field changes first', async () => {
    prompter.asked.length = 0;
    value(await fx.call('update_calendar_event', { id: created, title: 'Dentist (check-up)' }));
    expect(prompter.asked[0]?.preview).toEqual({ kind: 'fields', text: '', facts: [{ label: 'title', value: 'Dentist -> Dentist (check-up)' }], quoted: [] });
    expect((await events('2026-03-12')).events.map((e: any) => e.title)).toEqual(['Dentist (check-up)']);
  });

  it('refuses an update when the event changed on the server after the preview, keeping the other change', async () => {
    const uid = created.slice('work:'.length);
    const listing = await (await server.request('PROPFIND', `/${server.user}/personal/`, undefined, { depth: '1' })).text();
    const href = [...listing.matchAll(/<href>([^<]+\.ics)<\/href>/g)].map((m) => m[1]!).find((h) => !h.endsWith('team-sync.ics'))!;
    prompter.before = async () => {
      const current = await (await server.request('GET', href)).text();
      const res = await server.request('PUT', href, current.replace(/SUMMARY:[^\r\n]*/, 'SUMMARY:Dentist (moved by phone)'), {
        'content-type': 'text/calendar',
      });
      expect(res.status).toBeLessThan(300);
    };
    const e = error(await fx.call('update_calendar_event', { id: created, title: 'Dentist (mine)' }));
    expect(e).toMatchObject({ code: 'CONFLICT' });
    expect(await (await server.request('GET', href)).text()).toContain('SUMMARY:Dentist (moved by phone)');
    expect(uid).toBeTruthy();
  });

  it('deletes it on the server after saying what is lost', async () => {
    prompter.asked.length = 0;
    value(await fx.call('delete_calendar_event', { id: created }));
    expect(prompter.asked[0]?.preview?.text).toMatch(/^Deletes "Dentist \(moved by phone\)" from work\/Personal \(on the server\):/);
    expect((await events('2026-03-12')).events).toEqual([]);
    const listing = await (await server.request('PROPFIND', `/${server.user}/personal/`, undefined, { depth: '1' })).text();
    expect(listing.match(/\.ics</g)).toHaveLength(1);
  });

  it('deletes one occurrence of a series on the server, the moved one included, and keeps the others', async () => {
    const moved = (await events('2026-03-10')).events[0];
    expect(moved).toMatchObject({ title: 'Team sync (Tuesday this week)', recurrenceId: '2026-03-09T11:00:00-04:00', overridden: true });
    value(await fx.call('delete_calendar_event', { id: moved.id, occurrence: moved.recurrenceId }));
    expect((await events('2026-03-01', '2026-03-21')).events.map((e: any) => e.start)).toEqual(['2026-03-02T11:00:00-05:00', '2026-03-16T11:00:00-04:00']);
    const text = await (await server.request('GET', `/${server.user}/personal/team-sync.ics`)).text();
    expect(text).toMatch(/EXDATE;TZID=America\/New_York:20260309T110000/);
    expect(text).not.toContain('RECURRENCE-ID');
  });

  it('lets an agent turn read the calendar and create an event on the server once the person approves the preview', async () => {
    prompter.asked.length = 0;
    const provider = new ScriptedProvider((_req, n) =>
      n === 1
        ? reply('', toolCall('get_calendar_events', { start: '2026-03-23', end: '2026-03-27', timeZone: 'America/New_York' }))
        : n === 2
          ? reply('', toolCall('create_calendar_event', { calendar: 'work', title: 'Planning', start: '2026-03-24T10:00', timeZone: 'America/New_York' }))
          : reply('Booked Planning on Tuesday at 10:00.'),
    );
    const r = await runTurn(fx.kernel, {
      provider,
      model: 'test-model',
      conversationId: 'cal-1',
      history: [],
      userMessage: 'Find a slot on Tuesday and book Planning.',
    });
    expect(r).toMatchObject({ stopReason: 'final', answer: 'Booked Planning on Tuesday at 10:00.' });
    expect(r.steps.map((s) => [s.tool, s.outcome])).toEqual([
      ['get_calendar_events', 'ok'],
      ['create_calendar_event', 'ok'],
    ]);
    expect(provider.requests[0]!.tools.map((t) => t.name)).toEqual(expect.arrayContaining(['get_calendar_events', 'create_calendar_event']));
    expect(prompter.asked.map((a) => [a.tool, a.preview?.kind])).toEqual([['create_calendar_event', 'fields']]);
    expect((await events('2026-03-24')).events.map((e: any) => `${e.start} ${e.title} (${e.calendar})`)).toEqual([
      '2026-03-24T10:00:00-04:00 Planning (Personal)',
    ]);
  });

  it('refuses to write to a calendar the person did not mark writable', async () => {
    expect(error(await fx.call('create_calendar_event', { calendar: 'work/Shared', title: 'x', start: '2026-03-12T10:00' }))).toMatchObject({
      code: 'PERMISSION_DENIED',
      message: expect.stringMatching(/read-only for Memo/),
    });
  });

  it('keeps the password out of the audit trail and the pack’s settings', () => {
    expect(JSON.stringify(fx.kernel.audit.tail({ limit: 1000 }))).not.toContain(server.password);
    // Without a shared database the trail is the data folder's file; with one, its lines are the rows tail() read.
    if (!process.env.MEMO_DATABASE_URL) expect(fs.readFileSync(path.join(fx.dataDir, 'agent-audit.jsonl'), 'utf8')).not.toContain(server.password);
    expect(fs.readFileSync(path.join(fx.packData, 'sources.json'), 'utf8')).not.toContain(server.password);
  });
});
