import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { atTeardown } from '../../helpers/cleanup.js';
import { error, PLUGINS, planningSql, value, vaultKernel, type VaultFixture, bridgeRefusal } from './helpers.js';

/** The vault kernel with the calendar pack loaded beside it (local calendar in UTC). */
async function withCalendar(): Promise<VaultFixture> {
  const fx = await vaultKernel();
  const statuses = await fx.kernel.loadPacks([{ dir: PLUGINS, source: 'builtin', only: ['vault', 'calendar'] }]);
  const cal = statuses.find((s) => s.id === 'calendar');
  if (cal?.status !== 'loaded') throw new Error(`calendar did not load: ${cal?.error ?? 'not found'}`);
  fx.kernel.packs.setConfig('calendar', { timeZone: 'UTC' });
  return fx;
}

/** Runs `memo calendar <sub>` in this process, as the CLI would (adding calendars and consent are the person's, not a tool's). */
async function calendarCommand(fx: VaultFixture, sub: string, args: Record<string, string>): Promise<number> {
  const s = fx.kernel.commands.get('calendar')?.command.subcommands.find((c) => c.name === sub);
  if (!s) throw new Error(`no memo calendar ${sub}`);
  const code = await s.run({
    args,
    options: { json: true },
    signal: new AbortController().signal,
    invoke: (tool, a) => fx.kernel.invoke({ tool, args: a, caller: { kind: 'cli' } }),
    print: () => undefined,
    record: (change) => fx.kernel.admin.record({ ...change, by: 'cli' }),
  });
  return typeof code === 'number' ? code : 0;
}

const FEED = [
  'BEGIN:VCALENDAR',
  'VERSION:2.0',
  'PRODID:-//Memo tests//Feed//EN',
  'BEGIN:VEVENT',
  'UID:team-1@memo.test',
  'DTSTAMP:20260101T000000Z',
  'DTSTART:20260520T150000Z',
  'DTEND:20260520T160000Z',
  'SUMMARY:Team review',
  'END:VEVENT',
  'END:VCALENDAR',
  '',
].join('\r\n');

async function feedUrl(): Promise<string> {
  const server = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/calendar' }).end(FEED));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  atTeardown(() => {
    server.closeAllConnections();
    return new Promise((r) => server.close(r));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/team.ics`;
}

const read = (fx: VaultFixture, operation: string, args: unknown[]) => fx.call('vault_desktop_read', { operation, args });
const titles = (v: any) => (v.events as Array<{ title: string }>).map((e) => e.title);

describe('calendar reads through the desktop bridge', () => {
  let fx: VaultFixture;
  beforeAll(async () => {
    fx = await withCalendar();
    const make = async (args: Record<string, unknown>) => value(await fx.call('create_calendar_event', args));
    await make({ title: 'Kickoff', start: '2026-05-14T09:00:00Z', end: '2026-05-14T10:00:00Z', location: 'Room 1' });
    await make({ title: 'Weekly', start: '2026-05-18T08:00:00Z', end: '2026-05-18T08:30:00Z', recurrence: 'FREQ=WEEKLY;COUNT=3' });
    await make({ title: 'Offsite', start: '2026-06-14' });
    await make({ title: 'Too late', start: '2026-06-15T00:00:00Z' });
  });
  afterAll(() => fx.close());

  it('reads a range given as two dates, the end day included, with recurring events expanded', async () => {
    const v = value(await read(fx, 'calendar.getRange', ['2026-05-14', '2026-06-14']));
    expect(v).toMatchObject({ success: true, operation: 'calendar.getRange', count: 5 });
    expect(titles(v)).toEqual(['Kickoff', 'Weekly', 'Weekly', 'Weekly', 'Offsite']);
    expect(v.events[0]).toEqual({
      id: expect.stringMatching(/^local:/),
      title: 'Kickoff',
      start: '2026-05-14T09:00:00Z',
      end: '2026-05-14T10:00:00Z',
      all_day: false,
      calendar: 'local',
      location: 'Room 1',
    });
    expect(v.events.at(-1)).toMatchObject({ title: 'Offsite', start: '2026-06-14', end: '2026-06-15', all_day: true });
  });

  it('reads the same range given as one object with an exclusive end', async () => {
    const dates = value(await read(fx, 'calendar.getRange', ['2026-05-14', '2026-06-14']));
    const object = value(await read(fx, 'calendar.getRange', [{ startAt: '2026-05-14T00:00:00.000Z', endAt: '2026-06-15T00:00:00.000Z' }]));
    expect(object.events).toEqual(dates.events);
    expect(titles(value(await read(fx, 'calendar.listEvents', [{ startAt: '2026-05-18T00:00:00Z', endAt: '2026-05-19T00:00:00Z' }])))).toEqual(['Weekly']);
  });

  it('lists from today through the next 30 days when no range is given', async () => {
    const soon = new Date(Date.now() + 2 * 86_400_000).toISOString().slice(0, 10);
    const later = new Date(Date.now() + 45 * 86_400_000).toISOString().slice(0, 10);
    value(await fx.call('create_calendar_event', { title: 'Soon', start: soon }));
    value(await fx.call('create_calendar_event', { title: 'Later', start: later }));
    for (const args of [[{}], []]) {
      const got = titles(value(await read(fx, 'calendar.listEvents', args)));
      expect(got).toContain('Soon');
      expect(got).not.toContain('Later');
    }
  });

  it('refuses ranges it cannot read', async () => {
    for (const [op, args] of [
      ['calendar.getRange', ['2026-05-14']],
      ['calendar.getRange', ['soon', '2026-06-14']],
      ['calendar.getRange', [{ startAt: '2026-05-14' }]],
      ['calendar.listEvents', [{ from: '2026-05-14' }]],
      ['calendar.listEvents', [{}, {}]],
    ] as Array<[string, unknown[]]>) {
      // The seed's shape: an operation's own failure is {success: false, error}, not an MCP error.
      expect([op, args, value(await read(fx, op, args))]).toEqual([op, args, expect.objectContaining({ success: false, code: 'VALIDATION' })]);
    }
    expect(value(await read(fx, 'calendar.getRange', [{ startAt: '2026-06-14', endAt: '2026-05-14' }]))).toMatchObject({
      success: false,
      error: expect.stringMatching(/ends .* before it starts/),
    });
  });

  it('answers that the Calendar feature is off when it is switched off', async () => {
    value(await fx.call('vault_list_tasks', {}));
    await planningSql(fx, `INSERT INTO vault_settings (key, value) VALUES ('features', '{"calendar": false}')`);
    try {
      const e = error(await read(fx, 'calendar.listEvents', [{}]));
      expect(e.code).toBe('TOOL_DISABLED');
      expect(e.message).toMatch(/Calendar feature is switched off/);
    } finally {
      await planningSql(fx, `DELETE FROM vault_settings WHERE key = 'features'`);
    }
  });
});

describe('external calendars through the bridge follow the stored consent, not the caller', () => {
  it('leaves a subscribed calendar out until the person allows its service, whatever includeExternal says', async () => {
    const fx = await withCalendar();
    try {
      expect(await calendarCommand(fx, 'add', { kind: 'subscription', name: 'team', location: await feedUrl() })).toBe(0);
      value(await fx.call('create_calendar_event', { title: 'Mine', start: '2026-05-20T09:00:00Z' }));
      const range = { startAt: '2026-05-20T00:00:00Z', endAt: '2026-05-21T00:00:00Z' };

      expect(titles(value(await read(fx, 'calendar.getRange', [{ ...range, includeExternal: true }])))).toEqual(['Mine']);
      expect(titles(value(await read(fx, 'calendar.listEvents', [{ ...range, includeExternal: true }])))).toEqual(['Mine']);
      // Nor can a project link reach the event by naming it.
      const project = value(await fx.call('vault_create_project', { name: 'P' }));
      fx.prompter.asked.length = 0;
      const linkArgs = [{ projectId: project.id, itemType: 'calendar_event', itemId: 'team:team-1@memo.test' }];
      expect(bridgeRefusal(await fx.call('vault_desktop_write', { operation: 'tasks.linkProjectItem', args: linkArgs })).code).toBe('NOT_FOUND');
      expect(fx.prompter.asked).toHaveLength(0);

      expect(await calendarCommand(fx, 'consent', { service: 'subscriptions', answer: 'deny' })).toBe(0);
      expect(titles(value(await read(fx, 'calendar.getRange', ['2026-05-20', '2026-05-20'])))).toEqual(['Mine']);

      expect(await calendarCommand(fx, 'consent', { service: 'subscriptions', answer: 'allow' })).toBe(0);
      const allowed = value(await read(fx, 'calendar.getRange', ['2026-05-20', '2026-05-20']));
      expect(titles(allowed)).toEqual(['Mine', 'Team review']);
      expect(allowed.events[1]).toMatchObject({ id: 'team:team-1@memo.test', calendar: 'team', start: '2026-05-20T15:00:00Z' });
      expect(value(await fx.call('vault_desktop_write', { operation: 'tasks.linkProjectItem', args: linkArgs })).item).toMatchObject({
        id: 'team:team-1@memo.test',
        title: 'Team review',
      });
    } finally {
      await fx.close();
    }
  });
});

describe('calendar reads without the calendar pack', () => {
  it('answers success: false saying the calendar pack is not loaded', async () => {
    const fx = await vaultKernel();
    try {
      for (const [op, args] of [
        ['calendar.listEvents', [{}]],
        ['calendar.getRange', ['2026-05-14', '2026-06-14']],
      ] as Array<[string, unknown[]]>) {
        expect(value(await read(fx, op, args))).toMatchObject({ success: false, error: 'the calendar pack is not loaded', operation: op });
      }
    } finally {
      await fx.close();
    }
  });
});
