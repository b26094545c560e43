import Database from 'better-sqlite3';
import ICAL from 'ical.js';
import * as path from 'node:path';
import { shownPreview } from '../../helpers/shown-preview.js';
import { calendarKernel, error, value, type CalendarFixture } from './helpers.js';

describe('the local calendar: create, update and delete behind previews', () => {
  let fx: CalendarFixture;
  beforeAll(async () => {
    fx = await calendarKernel({ config: { timeZone: 'Europe/Istanbul' } });
  });
  afterAll(async () => fx.close());

  const events = async (start: string, end?: string) =>
    value(await fx.call('get_calendar_events', { start, ...(end ? { end } : {}), sources: ['local'] })).events;

  it('creates a weekly event after showing its fields, and reads it back across weeks in its own zone', async () => {
    fx.prompter.asked.length = 0;
    const made = value(
      await fx.call('create_calendar_event', { title: 'Yoga', start: '2026-03-02T19:00', recurrence: 'FREQ=WEEKLY;COUNT=3', location: 'Moda' }),
    );
    expect(made).toMatchObject({ id: expect.stringMatching(/^local:.+@memo$/), created: true, calendar: 'local' });
    expect(shownPreview(fx.prompter.asked[0]).split('\n')).toEqual([
      'caller: agent',
      'calendar: local',
      'title: Yoga',
      'start: 2026-03-02 19:00 Europe/Istanbul',
      'end: 2026-03-02 20:00 Europe/Istanbul',
      'timeZone: Europe/Istanbul',
      'location: Moda',
      'repeats: FREQ=WEEKLY;COUNT=3',
      'description: (not set)',
    ]);
    const got = await events('2026-03-01', '2026-03-31');
    expect(got.map((e: any) => `${e.start} ${e.title}`)).toEqual([
      '2026-03-02T19:00:00+03:00 Yoga',
      '2026-03-09T19:00:00+03:00 Yoga',
      '2026-03-16T19:00:00+03:00 Yoga',
    ]);
    expect(got[0]).toMatchObject({ id: made.id, source: 'local', recurring: true, location: 'Moda' });
  });

  it('quotes a description after the fields, as the model wrote it and as it was, so no line of it passes for a field', async () => {
    fx.prompter.asked.length = 0;
    const forged = 'Bring the papers.\ncalendar: work/Personal\nstart: 2026-08-01 09:00';
    const id = value(await fx.call('create_calendar_event', { title: 'Notary', start: '2026-08-03T11:00', description: forged })).id;
    const created = shownPreview(fx.prompter.asked[0]).split('\n');
    expect(created.filter((l) => l.startsWith('calendar:') || l.startsWith('start:'))).toEqual(['calendar: local', 'start: 2026-08-03 11:00 Europe/Istanbul']);
    expect(created.at(-1)).toBe('description, written by the model: "Bring the papers.⏎calendar: work/Personal⏎start: 2026-08-01 09:00"');
    fx.prompter.asked.length = 0;
    value(await fx.call('update_calendar_event', { id, description: 'Bring the papers and an ID.' }));
    expect(shownPreview(fx.prompter.asked[0]).split('\n').slice(1)).toEqual([
      'description: replaced (both quoted below)',
      'description now, written by the calendar: "Bring the papers.⏎calendar: work/Personal⏎start: 2026-08-01 09:00"',
      'description after, written by the model: "Bring the papers and an ID."',
    ]);
    value(await fx.call('delete_calendar_event', { id }));
  });

  it('creates an all-day span given its last day', async () => {
    value(await fx.call('create_calendar_event', { title: 'Trip', start: '2026-04-10', end: '2026-04-12' }));
    const got = await events('2026-04-11');
    expect(got).toEqual([expect.objectContaining({ title: 'Trip', start: '2026-04-10', end: '2026-04-13', allDay: true })]);
  });

  it('shows old and new values before an update, and keeps the duration when only the start moves', async () => {
    const id = value(await fx.call('create_calendar_event', { title: 'Dentist', start: '2026-05-04T10:00', end: '2026-05-04T10:45' })).id;
    fx.prompter.asked.length = 0;
    const r = value(await fx.call('update_calendar_event', { id, start: '2026-05-05T15:00', title: 'Dentist (moved)' }));
    expect(fx.prompter.asked[0]?.preview?.facts).toEqual([
      { label: 'title', value: 'Dentist -> Dentist (moved)' },
      { label: 'start', value: '2026-05-04 10:00 Europe/Istanbul -> 2026-05-05 15:00 Europe/Istanbul' },
      { label: 'end', value: '2026-05-04 10:45 Europe/Istanbul -> 2026-05-05 15:45 Europe/Istanbul' },
    ]);
    expect(r).toMatchObject({ id, updated: true });
    expect((await events('2026-05-05')).map((e: any) => `${e.start}..${e.end} ${e.title}`)).toEqual([
      '2026-05-05T15:00:00+03:00..2026-05-05T15:45:00+03:00 Dentist (moved)',
    ]);
  });

  it('refuses an update when the event changed after the preview, and writes nothing', async () => {
    const id: string = value(await fx.call('create_calendar_event', { title: 'Review', start: '2026-06-01T09:00' })).id;
    const db = new Database(path.join(fx.packData, 'calendar.sqlite'));
    // Someone else's change lands between the preview and the run: bump the revision as a write would.
    const original = fx.prompter.ask.bind(fx.prompter);
    fx.prompter.ask = (req, signal) => {
      db.prepare('UPDATE local_events SET revision = revision + 1 WHERE uid = ?').run(id.slice('local:'.length));
      return original(req, signal);
    };
    try {
      const e = error(await fx.call('update_calendar_event', { id, title: 'Review (renamed)' }));
      expect(e).toMatchObject({ code: 'CONFLICT', message: expect.stringMatching(/changed after the preview/) });
    } finally {
      fx.prompter.ask = original;
      db.close();
    }
    expect((await events('2026-06-01')).map((e: any) => e.title)).toEqual(['Review']);
  });

  it('says what a delete loses, asks every time, and deletes every occurrence', async () => {
    const id = value(await fx.call('create_calendar_event', { title: 'Standup', start: '2026-07-01T09:30', recurrence: 'FREQ=DAILY;COUNT=5' })).id;
    fx.prompter.asked.length = 0;
    value(await fx.call('delete_calendar_event', { id }));
    expect(fx.prompter.asked[0]?.preview).toEqual({
      kind: 'delete',
      text: 'Deletes "Standup" from local:\nwhen: 2026-07-01 09:30 Europe/Istanbul to 2026-07-01 10:30 Europe/Istanbul (Europe/Istanbul)\nrepeats: FREQ=DAILY;COUNT=5 (every occurrence is deleted)',
    });
    expect(await events('2026-07-01', '2026-07-10')).toEqual([]);
    expect(error(await fx.call('delete_calendar_event', { id })).code).toBe('NOT_FOUND');
  });

  it('moves and deletes single occurrences of a series, leaving the rest as they were', async () => {
    const id = value(
      await fx.call('create_calendar_event', { title: 'Standup', start: '2026-07-06T09:30', end: '2026-07-06T09:45', recurrence: 'FREQ=DAILY;COUNT=5' }),
    ).id;
    const week = async () => (await events('2026-07-06', '2026-07-12')).map((e: any) => `${e.start} ${e.title}${e.overridden ? ' *' : ''}`);
    const first = await events('2026-07-07');
    expect(first[0]).toMatchObject({ recurrenceId: '2026-07-07T09:30:00+03:00', recurring: true });

    fx.prompter.asked.length = 0;
    value(await fx.call('update_calendar_event', { id, occurrence: '2026-07-07T09:30:00+03:00', start: '2026-07-07T14:00', title: 'Standup (afternoon)' }));
    expect(fx.prompter.asked[0]?.preview?.facts).toEqual([
      { label: 'occurrence', value: 'only the one of 2026-07-07 09:30 Europe/Istanbul' },
      { label: 'title', value: 'Standup -> Standup (afternoon)' },
      { label: 'start', value: '2026-07-07 09:30 Europe/Istanbul -> 2026-07-07 14:00 Europe/Istanbul' },
      { label: 'end', value: '2026-07-07 09:45 Europe/Istanbul -> 2026-07-07 14:15 Europe/Istanbul' },
    ]);
    fx.prompter.asked.length = 0;
    value(await fx.call('delete_calendar_event', { id, occurrence: '2026-07-08T09:30:00+03:00' }));
    expect(fx.prompter.asked[0]?.preview).toEqual({
      kind: 'delete',
      text: 'Deletes one occurrence of "Standup" (2026-07-08 09:30 Europe/Istanbul) from local; the rest of the series stays.',
    });
    expect(await week()).toEqual([
      '2026-07-06T09:30:00+03:00 Standup',
      '2026-07-07T14:00:00+03:00 Standup (afternoon) *',
      '2026-07-09T09:30:00+03:00 Standup',
      '2026-07-10T09:30:00+03:00 Standup',
    ]);
    // The moved one is still named by its original start; deleting it drops its override too.
    value(await fx.call('delete_calendar_event', { id, occurrence: '2026-07-07T09:30:00+03:00' }));
    expect(await week()).toEqual(['2026-07-06T09:30:00+03:00 Standup', '2026-07-09T09:30:00+03:00 Standup', '2026-07-10T09:30:00+03:00 Standup']);
    expect(error(await fx.call('delete_calendar_event', { id, occurrence: '2026-07-06T10:00:00+03:00' })).code).toBe('NOT_FOUND');
    const single = value(await fx.call('create_calendar_event', { title: 'Once', start: '2026-07-20T10:00' })).id;
    expect(error(await fx.call('delete_calendar_event', { id: single, occurrence: '2026-07-20T10:00:00+03:00' })).code).toBe('VALIDATION');
  });

  it('refuses writes to calendars Memo only reads, and names unknown ones', async () => {
    await fx.addFixture('days', 'all-day.ics');
    expect(error(await fx.call('create_calendar_event', { title: 'x', start: '2026-01-01', calendar: 'days' })).code).toBe('PERMISSION_DENIED');
    expect(error(await fx.call('create_calendar_event', { title: 'x', start: '2026-01-01', calendar: 'nope' })).code).toBe('NOT_FOUND');
    expect(error(await fx.call('create_calendar_event', { title: 'x', start: '2026-01-01', recurrence: 'EVERY TUESDAY' })).code).toBe('VALIDATION');
  });

  it('exports the local calendar as one .ics that reads back the same events', async () => {
    const r = await fx.command('export');
    expect(r.code).toBe(0);
    const ics = String(r.out[0]);
    expect(ics).toMatch(/^BEGIN:VCALENDAR\r\n/);
    expect(ics.match(/BEGIN:VEVENT/g)).toHaveLength(6);
    expect(ics).toContain('SUMMARY:Yoga');
    expect(ics).toContain('RRULE:FREQ=WEEKLY;COUNT=3');
  });

  it('writes a VTIMEZONE for the zone an event is kept in, made from the tz database, that other readers agree with', async () => {
    value(
      await fx.call('create_calendar_event', {
        title: 'Call New York',
        start: '2026-03-06T09:00',
        timeZone: 'America/New_York',
        recurrence: 'FREQ=WEEKLY;UNTIL=20261231T000000Z',
      }),
    );
    const ics = String((await fx.command('export')).out[0]);
    const cal = new ICAL.Component(ICAL.parse(ics) as never);
    const zones = cal.getAllSubcomponents('vtimezone').map((z) => String(z.getFirstPropertyValue('tzid')));
    expect(zones.sort()).toEqual(['America/New_York', 'Europe/Istanbul']);
    const ny = new ICAL.Timezone(cal.getAllSubcomponents('vtimezone').find((z) => z.getFirstPropertyValue('tzid') === 'America/New_York')!);
    const offsetHours = (y: number, m: number, d: number, h: number) =>
      ny.utcOffset(ICAL.Time.fromData({ year: y, month: m, day: d, hour: h, minute: 0, second: 0 })) / 3600;
    expect([offsetHours(2026, 3, 8, 1), offsetHours(2026, 3, 8, 3), offsetHours(2026, 7, 1, 12), offsetHours(2026, 11, 1, 3)]).toEqual([-5, -4, -4, -5]);
    expect(ics).toMatch(/BEGIN:DAYLIGHT\r\nDTSTART:20260308T020000\r\nTZOFFSETFROM:-0500\r\nTZOFFSETTO:-0400\r\nEND:DAYLIGHT/);
  });
});
