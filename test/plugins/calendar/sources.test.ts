import * as fs from 'node:fs';
import * as path from 'node:path';
import { tempDir } from '../../helpers/kernel-fixture.js';
import { calendarKernel, value } from './helpers.js';

describe('calendars the person adds', () => {
  it('reads an .ics file only through the sandbox: a file source pointing into the data folder gives a warning, not its content', async () => {
    const root = tempDir('memo-cal-root-');
    const fx = await calendarKernel({ root, dataDir: path.join(root, 'data') });
    value(await fx.call('create_calendar_event', { title: 'Mine', start: '2026-05-05T10:00' }));
    const inside = 'data/packs-data/calendar/sources.json';
    expect((await fx.command('add', { kind: 'file', name: 'sneaky', location: inside })).code).toBe(0);
    const v = value(await fx.call('get_calendar_events', { start: '2026-05-05' }));
    expect(v.events.map((e: any) => e.title)).toEqual(['Mine']);
    expect(v.warnings).toEqual([expect.stringMatching(/^sneaky: .*data folder/)]);
    expect(JSON.stringify(v)).not.toContain('"sources":[{');
    await fx.close();
  });

  it('syncs, lists and removes an added calendar, and never removes the local one', async () => {
    const fx = await calendarKernel();
    fs.mkdirSync(path.join(fx.root, 'cal'));
    fs.copyFileSync(path.resolve('test/fixtures/calendar/all-day.ics'), path.join(fx.root, 'cal', 'days.ics'));
    await fx.command('add', { kind: 'file', name: 'days', location: 'cal/days.ics' });
    const sync = await fx.command('sync', {}, { json: true });
    expect(sync).toEqual({ code: 0, out: [{ ok: true, result: [{ id: 'days', status: 'read when asked' }] }] });
    const list = await fx.command('list');
    expect(String(list.out[0]).split('\n')).toEqual(['local\tlocal\town\twritable\t', 'days\tfile\town\tread-only\tcal/days.ics']);
    expect(await fx.command('remove', { name: 'days' })).toEqual({ code: 0, out: ['Removed calendar days.'] });
    expect((await fx.command('remove', { name: 'days' }, { json: true })).out[0]).toMatchObject({ ok: false, error: { code: 'NOT_FOUND' } });
    expect((await fx.command('remove', { name: 'local' })).code).toBe(2);
    await fx.close();
  });

  it('shows the local calendar with a warning when the list of added calendars is unreadable, and refuses to add over it', async () => {
    const fx = await calendarKernel();
    value(await fx.call('create_calendar_event', { title: 'Still here', start: '2026-05-05T10:00' }));
    fs.mkdirSync(fx.packData, { recursive: true });
    fs.writeFileSync(path.join(fx.packData, 'sources.json'), '{"sources": [');
    const v = value(await fx.call('get_calendar_events', { start: '2026-05-05' }));
    expect(v.events.map((e: any) => e.title)).toEqual(['Still here']);
    expect(v.warnings).toEqual([expect.stringMatching(/list of added calendars cannot be read/)]);
    const add = await fx.command('add', { kind: 'file', name: 'x', location: 'x.ics' }, { json: true });
    expect(add.out[0]).toMatchObject({ ok: false, error: { code: 'CONFLICT' } });
    await fx.close();
  });

  it('refuses a subscription URL that is not http(s) or webcal, or that carries credentials, and stores webcal as https', async () => {
    const fx = await calendarKernel({ config: { fetchTimeoutMs: 200 } });
    expect((await fx.command('add', { kind: 'subscription', name: 'a', location: 'file:///etc/passwd' })).code).toBe(2);
    expect((await fx.command('add', { kind: 'subscription', name: 'b', location: 'https://u:p@example.invalid/x.ics' })).code).toBe(2);
    // 127.0.0.1 port 1: nothing listens there, so nothing leaves the machine.
    await fx.command('add', { kind: 'subscription', name: 'c', location: 'webcal://127.0.0.1:1/c.ics' });
    const sources = JSON.parse(fs.readFileSync(path.join(fx.packData, 'sources.json'), 'utf8')).sources;
    expect(sources).toEqual([{ id: 'c', kind: 'subscription', url: 'https://127.0.0.1:1/c.ics' }]);
    await fx.close();
  });
});
