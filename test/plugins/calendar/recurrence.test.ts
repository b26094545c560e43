import { brief, calendarKernel, value, type CalendarFixture } from './helpers.js';

describe('get_calendar_events over ICS files: recurrence, time zones and DST', () => {
  let fx: CalendarFixture;
  beforeAll(async () => {
    fx = await calendarKernel();
    await fx.addFixture('ny', 'new-york-dst.ics');
    await fx.addFixture('istanbul', 'istanbul-dst.ics');
    await fx.addFixture('standup', 'exdate-moved.ics');
    await fx.addFixture('days', 'all-day.ics');
    await fx.addFixture('weekly', 'weekly-year.ics');
    await fx.addFixture('old', 'old-daily.ics');
  });
  afterAll(async () => fx.close());

  const events = async (args: Record<string, unknown>) => value(await fx.call('get_calendar_events', args)).events;

  it('reads daily series begun in 2015 at +14:00 and -11:00: occurrences of the days around the range reach it, and an instance moved from 2015 into it is shown', async () => {
    const got = await events({ start: '2026-12-10', sources: ['old'], timeZone: 'UTC' });
    // 23:30 at +14:00 on the 10th is 09:30 UTC on the 10th; the one of the 9th (09:30 UTC on the 9th) ends before the range.
    // At -11:00 the 23:00 of the 9th is 10:00 UTC on the 10th.
    expect(brief(got)).toEqual(['2026-12-10T01:00:00Z Late call (moved from 2015)', '2026-12-10T09:30:00Z Late call', '2026-12-10T10:00:00Z West call']);
    expect(got[0]).toMatchObject({ overridden: true, recurrenceId: '2015-01-05T23:30:00+14:00' });
    const kiritimati = await events({ start: '2026-12-11', sources: ['old'], timeZone: 'Pacific/Kiritimati' });
    // The 23:30 of the 10th runs into the 11th; the west call of the 10th (-11:00) is the 11th's 24:00 here.
    expect(brief(kiritimati).filter((e: string) => e.includes('Late call'))).toEqual([
      '2026-12-10T23:30:00+14:00 Late call',
      '2026-12-11T23:30:00+14:00 Late call',
    ]);
  });

  it('keeps a weekly New York event at 09:00 local across the March DST switch', async () => {
    const got = await events({ start: '2026-03-01', end: '2026-03-21', sources: ['ny'], timeZone: 'America/New_York' });
    expect(brief(got)).toEqual([
      '2026-03-01T09:00:00-05:00 Sunday brunch',
      '2026-03-08T03:30:00-04:00 Set in the skipped hour',
      '2026-03-08T09:00:00-04:00 Sunday brunch',
      '2026-03-15T09:00:00-04:00 Sunday brunch',
    ]);
    expect(got[0]).toMatchObject({ recurring: true, location: 'Brooklyn', timeZone: 'America/New_York', allDay: false });
  });

  it('shows the same New York occurrences at the right UTC instants', async () => {
    const got = await events({ start: '2026-03-01', end: '2026-03-21', sources: ['ny'], timeZone: 'UTC' });
    expect(got.filter((e: any) => e.title === 'Sunday brunch').map((e: any) => e.start)).toEqual([
      '2026-03-01T14:00:00Z',
      '2026-03-08T13:00:00Z',
      '2026-03-15T13:00:00Z',
    ]);
  });

  it('reads a time the clocks repeat in November as its first occurrence', async () => {
    const got = await events({ start: '2026-11-01', sources: ['ny'], timeZone: 'America/New_York' });
    expect(brief(got)).toEqual(['2026-11-01T01:30:00-04:00 Set in the repeated hour']);
    expect(got[0].end).toBe('2026-11-01T01:00:00-05:00');
  });

  it('follows the tz database for Istanbul (DST end moved to 8 November 2015, none after 2016), not an old VTIMEZONE', async () => {
    const got = await events({ start: '2015-10-20', end: '2015-11-20', sources: ['istanbul'], timeZone: 'UTC' });
    expect(brief(got)).toEqual([
      '2015-10-22T07:00:00Z Bosphorus ferry',
      '2015-10-29T07:00:00Z Bosphorus ferry',
      '2015-11-05T07:00:00Z Bosphorus ferry',
      '2015-11-12T08:00:00Z Bosphorus ferry',
    ]);
    const later = await events({ start: '2016-11-03', sources: ['istanbul'], timeZone: 'Europe/Istanbul' });
    expect(brief(later)).toEqual(['2016-11-03T10:00:00+03:00 After Turkey kept summer time']);
  });

  it('leaves out EXDATEs and cancelled instances, moves overridden ones, and brings in one moved from past the range', async () => {
    const got = await events({ start: '2026-05-04', end: '2026-05-09', sources: ['standup'], timeZone: 'Europe/Berlin' });
    expect(brief(got)).toEqual([
      '2026-05-04T09:30:00+02:00 Standup',
      '2026-05-05T09:30:00+02:00 Standup',
      '2026-05-07T14:00:00+02:00 Standup (afternoon)',
      '2026-05-08T09:30:00+02:00 Standup',
      '2026-05-08T16:00:00+02:00 Standup (pulled forward a week)',
    ]);
    const moved = got.find((e: any) => e.title === 'Standup (afternoon)');
    expect(moved).toMatchObject({ overridden: true, recurrenceId: '2026-05-07T09:30:00+02:00', id: 'standup:standup@memo.test' });
    expect(got[0].attendees).toBe(2);
    const week2 = await events({ start: '2026-05-11', end: '2026-05-15', sources: ['standup'], timeZone: 'Europe/Berlin' });
    expect(brief(week2)).toEqual(['2026-05-11T09:30:00+02:00 Standup', '2026-05-13T09:30:00+02:00 Standup']);
  });

  it('gives all-day events as dates with an exclusive end, spans included, and yearly ones every year', async () => {
    const got = await events({ start: '2026-05-01', end: '2026-05-06', sources: ['days'], timeZone: 'Asia/Tokyo' });
    expect(got.filter((e: any) => e.allDay).map((e: any) => `${e.start}..${e.end} ${e.title}`)).toEqual([
      '2026-05-01..2026-05-02 Labour Day',
      '2026-05-04..2026-05-07 Conference',
      "2026-05-06..2026-05-07 Ada's birthday",
    ]);
    const mid = await events({ start: '2026-05-05T10:00', end: '2026-05-05T11:00', sources: ['days'], timeZone: 'Europe/London' });
    expect(mid.map((e: any) => e.title)).toEqual(['Conference']);
  });

  it('reads a floating time in whatever zone is asked for', async () => {
    const inTokyo = await events({ start: '2026-05-05', sources: ['days'], timeZone: 'Asia/Tokyo' });
    const inNewYork = await events({ start: '2026-05-05', sources: ['days'], timeZone: 'America/New_York' });
    const lunch = (l: any[]) => l.find((e) => e.title === 'Lunch wherever I am');
    expect(lunch(inTokyo)).toMatchObject({ start: '2026-05-05T12:00:00+09:00', timeZone: 'floating' });
    expect(lunch(inNewYork)).toMatchObject({ start: '2026-05-05T12:00:00-04:00', timeZone: 'floating' });
  });

  it('expands a weekly event over a whole year into 52 Mondays at 17:00 New York time', async () => {
    const got = (await events({ start: '2026-01-01', end: '2026-12-31', sources: ['weekly'], timeZone: 'America/New_York' })).filter(
      (e: any) => e.title === 'Weekly review',
    );
    expect(got).toHaveLength(52);
    expect(new Set(got.map((e: any) => e.start.slice(11, 19)))).toEqual(new Set(['17:00:00']));
    expect(got[0].start).toBe('2026-01-05T17:00:00-05:00');
    expect(got.at(-1).start).toBe('2026-12-28T17:00:00-05:00');
  });

  it('uses the file’s own VTIMEZONE for a zone name the tz database does not know', async () => {
    const got = await events({ start: '2026-07-06', sources: ['weekly'], timeZone: 'UTC' });
    expect(got.find((e: any) => e.title === 'Named by Outlook')).toMatchObject({ start: '2026-07-06T07:00:00Z', timeZone: 'W. Europe Standard Time' });
  });
});
