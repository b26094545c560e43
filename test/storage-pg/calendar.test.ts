/**
 * The calendar pack's own suites, run with its database in PostgreSQL (its schema
 * pack_calendar__calendar) instead of calendar.sqlite; they also run on SQLite in test/plugins/calendar.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import './sqlite-only.js';
import { onPostgres } from './on-postgres.js';
import { DatabaseUrl } from '../../kernel/storage/database-url.js';
import { openPackDatabase } from '../../kernel/storage/pack-database.js';
import { CaldavCalendarRow, ENTITIES, FeedCacheRow, MIGRATIONS } from '../../plugins/calendar/schema.js';
import { tempDir } from '../helpers/kernel-fixture.js';
import { calendarKernel, error, value } from '../plugins/calendar/helpers.js';
import '../plugins/calendar/local-writes.test.js';
import '../plugins/calendar/sources.test.js';
import '../plugins/calendar/consent.test.js';
import '../plugins/calendar/cli.test.js';
import '../plugins/calendar/caldav.test.js';

const pg = onPostgres(['pack_calendar__calendar']);

describe('the calendar pack on PostgreSQL', () => {
  const schemaRows = (sql: string, params: unknown[] = []) => pg.server().query(sql, params, new URL(pg.url()).pathname.slice(1));

  it('keeps its events in its own schema, not in a file', async () => {
    const fx = await calendarKernel();
    value(await fx.call('create_calendar_event', { title: 'Dentist', start: '2026-03-02T09:00' }));
    expect(await schemaRows(`SELECT title, revision FROM pack_calendar__calendar.local_events`)).toEqual([{ title: 'Dentist', revision: 1 }]);
    expect(fs.existsSync(path.join(fx.packData, 'calendar.sqlite'))).toBe(false);
    await fx.close();
  });

  it('refuses an update when the event changed after the preview (another instance bumped it), and writes nothing', async () => {
    const fx = await calendarKernel();
    const id: string = value(await fx.call('create_calendar_event', { title: 'Review', start: '2026-06-01T09:00' })).id;
    const original = fx.prompter.ask.bind(fx.prompter);
    fx.prompter.ask = async (req, signal) => {
      await schemaRows(`UPDATE pack_calendar__calendar.local_events SET revision = revision + 1 WHERE uid = $1`, [id.slice('local:'.length)]);
      return original(req, signal);
    };
    try {
      const e = error(await fx.call('update_calendar_event', { id, title: 'Review (renamed)' }));
      expect(e).toMatchObject({ code: 'CONFLICT', message: expect.stringMatching(/changed after the preview/) });
    } finally {
      fx.prompter.ask = original;
    }
    expect(await schemaRows(`SELECT title, revision FROM pack_calendar__calendar.local_events`)).toEqual([{ title: 'Review', revision: 2 }]);
    await fx.close();
  });

  it('exports the local calendar, read from PostgreSQL, as one .ics with each event once', async () => {
    const fx = await calendarKernel();
    value(await fx.call('create_calendar_event', { title: 'Yoga', start: '2026-03-02T19:00', recurrence: 'FREQ=WEEKLY;COUNT=3' }));
    value(await fx.call('create_calendar_event', { title: 'Dentist', start: '2026-03-04T09:00' }));
    const r = await fx.command('export');
    expect(r.code).toBe(0);
    const ics = String(r.out[0]);
    expect(ics.match(/BEGIN:VEVENT/g)).toHaveLength(2);
    expect(ics).toContain('SUMMARY:Yoga');
    expect(ics).toContain('RRULE:FREQ=WEEKLY;COUNT=3');
    expect(ics).toContain('SUMMARY:Dentist');
    await fx.close();
  });

  it('keeps a cache check time, an epoch millisecond past 32 bits, as a number', async () => {
    const url = DatabaseUrl.parse(pg.url());
    const ds = await openPackDatabase(tempDir(), { name: 'calendar', entities: ENTITIES, migrations: MIGRATIONS, portable: true }, { url, packId: 'calendar' });
    try {
      const now = Date.now();
      await ds
        .getRepository(FeedCacheRow)
        .save({ source_id: 'feed', url: 'https://example.org/cal.ics', etag: null, last_modified: null, body: 'BEGIN:VCALENDAR', checked_at: now });
      await ds.getRepository(CaldavCalendarRow).save({ url: 'https://dav.example/cal/', source_id: 'dav', name: 'Work', ctag: null, checked_at: now });
      expect((await ds.getRepository(FeedCacheRow).findOneByOrFail({ source_id: 'feed' })).checked_at).toBe(now);
      expect((await ds.getRepository(CaldavCalendarRow).findOneByOrFail({ source_id: 'dav' })).checked_at).toBe(now);
    } finally {
      await ds.destroy();
    }
  });
});
