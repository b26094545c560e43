import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { atTeardown } from '../../helpers/cleanup.js';
import { deferred } from '../../helpers/wait.js';
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

const write = (fx: VaultFixture, operation: string, args: unknown[]) => fx.call('vault_desktop_write', { operation, args });
const inRange = async (fx: VaultFixture, startAt: string, endAt: string) => value(await read(fx, 'calendar.listEvents', [{ startAt, endAt }])).events;

describe('calendar writes through the desktop bridge', () => {
  let fx: VaultFixture;
  beforeAll(async () => {
    fx = await withCalendar();
  });
  afterAll(() => fx.close());
  const lastPreview = () => fx.prompter.asked.at(-1)!.preview!;

  it("creates an event that calendar.listEvents then lists, after showing the calendar's own fields", async () => {
    const args = [
      { title: 'Dentist', startAt: '2026-07-01T09:00:00Z', endAt: '2026-07-01T10:00:00Z', location: 'Clinic', description: 'Bring the card\ncalendar: work' },
    ];
    const v = value(await write(fx, 'calendar.createEvent', args));
    expect(v).toEqual({
      success: true,
      operation: 'calendar.createEvent',
      event: { id: expect.stringMatching(/^local:/), title: 'Dentist', start: '2026-07-01T09:00:00Z', end: '2026-07-01T10:00:00Z', calendar: 'local' },
      summary: 'created "Dentist" in local',
    });
    const shown = lastPreview();
    expect(shown.kind).toBe('fields');
    const lines = shown.text.split('\n');
    expect(lines.slice(0, 4)).toEqual(['calendar.createEvent (write)', 'New calendar event', 'calendar: local', 'title: Dentist']);
    expect(lines).toEqual(expect.arrayContaining(['location: Clinic', 'timeZone: UTC']));
    // The description is the caller's free text: quoted, so its second line cannot pass for a field.
    expect(lines.at(-1)).toBe('description: "Bring the card\\ncalendar: work"');
    expect(lines.filter((l) => l.startsWith('calendar:'))).toEqual(['calendar: local']);

    const listed = await inRange(fx, '2026-07-01T00:00:00Z', '2026-07-02T00:00:00Z');
    expect(listed).toEqual([{ ...v.event, all_day: false, location: 'Clinic' }]);
  });

  it('creates an all-day event from dates, the end being its last day', async () => {
    const v = value(await write(fx, 'calendar.createEvent', [{ title: 'Holiday', startAt: '2026-07-10', endAt: '2026-07-12' }]));
    expect(v.event).toMatchObject({ title: 'Holiday', start: '2026-07-10', end: '2026-07-13', calendar: 'local' });
    const cut = value(await write(fx, 'calendar.createEvent', [{ title: 'Fair', startAt: '2026-07-20T09:00:00Z', allDay: true }]));
    expect(cut.event).toMatchObject({ start: '2026-07-20', end: '2026-07-21' });
    expect((await inRange(fx, '2026-07-10', '2026-07-20')).map((e: any) => [e.title, e.all_day])).toEqual([
      ['Holiday', true],
      ['Fair', true],
    ]);
  });

  it("changes an event's title and time, keeping its length, and says what changed", async () => {
    const id = value(
      await write(fx, 'calendar.createEvent', [{ title: 'Review', startAt: '2026-08-03T09:00:00Z', endAt: '2026-08-03T09:30:00Z', location: 'Room 2' }]),
    ).event.id;
    const v = value(await write(fx, 'calendar.updateEvent', [{ id, title: 'Review (moved)', startAt: '2026-08-04T14:00:00Z', location: null }]));
    expect(v).toMatchObject({
      success: true,
      operation: 'calendar.updateEvent',
      event: { id, title: 'Review (moved)', start: '2026-08-04T14:00:00Z', end: '2026-08-04T14:30:00Z', calendar: 'local' },
    });
    expect(v.changes.split('\n')).toEqual([
      'title: Review -> Review (moved)',
      'start: 2026-08-03 09:00 UTC -> 2026-08-04 14:00 UTC',
      'end: 2026-08-03 09:30 UTC -> 2026-08-04 14:30 UTC',
      'location: Room 2 -> (not set)',
    ]);
    const shown = lastPreview();
    expect(shown.kind).toBe('fields');
    expect(shown.text.split('\n')).toEqual([
      'calendar.updateEvent (write)',
      `Calendar event "Review" (id ${id})`,
      'title: Review -> Review (moved)',
      'start: 2026-08-03 09:00 UTC -> 2026-08-04 14:00 UTC',
      'end: 2026-08-03 09:30 UTC -> 2026-08-04 14:30 UTC',
      'location: Room 2 -> (not set)',
    ]);
    expect(await inRange(fx, '2026-08-03', '2026-08-03')).toEqual([]);
    expect(await inRange(fx, '2026-08-04', '2026-08-04')).toEqual([{ ...v.event, all_day: false, location: null }]);
  });

  it('answers NOT_FOUND for an event or calendar that does not exist, without anyone being asked', async () => {
    fx.prompter.asked.length = 0;
    for (const [op, args] of [
      ['calendar.updateEvent', [{ id: 'local:nobody@memo', title: 'X' }]],
      ['calendar.deleteEvent', [{ id: 'local:nobody@memo' }]],
      ['calendar.deleteEvent', [{ id: 'work:abc@memo' }]],
      ['calendar.createEvent', [{ title: 'X', startAt: '2026-07-01T09:00:00Z', calendar: 'nowhere' }]],
    ] as Array<[string, unknown[]]>) {
      const r = await write(fx, op, args);
      expect([op, args, value(r)]).toEqual([op, args, expect.objectContaining({ success: false, code: 'NOT_FOUND', operation: op })]);
      expect(bridgeRefusal(r).code).toBe('NOT_FOUND');
    }
    expect(fx.prompter.asked).toHaveLength(0);
  });

  it('answers VALIDATION for arguments it cannot take, without anyone being asked', async () => {
    const id = value(await write(fx, 'calendar.createEvent', [{ title: 'Standup', startAt: '2026-09-01T09:00:00Z' }])).event.id;
    fx.prompter.asked.length = 0;
    const cases: Array<[string, unknown[], RegExp]> = [
      ['calendar.createEvent', [], /it takes one object/],
      ['calendar.createEvent', [{ title: 'X' }], /startAt must be a non-empty text/],
      ['calendar.createEvent', [{ title: '', startAt: '2026-07-01' }], /title must be a non-empty text/],
      ['calendar.createEvent', [{ title: 'X', startAt: 'soon' }], /is not a date/],
      ['calendar.createEvent', [{ title: 'X', startAt: '2026-07-01', colour: 'red' }], /unknown key colour/],
      ['calendar.createEvent', [{ title: 'X', startAt: '2026-07-01', allDay: 'yes' }], /allDay must be true or false/],
      ['calendar.createEvent', [{ title: 'X', startAt: '2026-07-01', allDay: false }], /is a date, which is all day/],
      ['calendar.createEvent', [{ title: 'X', startAt: '2026-07-01T09:00:00Z', endAt: '2026-07-01' }], /a timed event ends at a date-time/],
      ['calendar.createEvent', [{ title: 'X', startAt: '2026-07-01T09:00:00Z', endAt: '2026-07-01T08:00:00Z' }], /endAt .* is before startAt/],
      ['calendar.createEvent', [{ title: 'X', startAt: '2026-07-03', endAt: '2026-07-01' }], /endAt .* is before startAt/],
      // Mixed zones: the calendar's own check, run before anyone is asked.
      ['calendar.createEvent', [{ title: 'X', startAt: '2026-07-01T09:00:00+02:00', endAt: '2026-07-01T06:00:00' }], /ends before it starts/],
      ['calendar.updateEvent', [{ id }], /say what to change/],
      ['calendar.updateEvent', [{ id: 'standup', title: 'X' }], /is not an event id/],
      ['calendar.updateEvent', [{ id, occurrence: '2026-09-01T09:00:00Z', title: 'X' }], /unknown key occurrence/],
      ['calendar.updateEvent', [{ id, location: '' }], /location is empty: give null to clear it/],
      ['calendar.updateEvent', [{ id, startAt: '2026-09-02', endAt: '2026-09-02T10:00:00Z' }], /both dates .* or both date-times/],
      ['calendar.updateEvent', [{ id, endAt: '2026-09-03' }], /is a timed event: endAt is a date-time/],
      ['calendar.updateEvent', [{ id, endAt: '2026-08-31T10:00:00Z' }], /before the event starts/],
      ['calendar.deleteEvent', [{}], /id must be a non-empty text/],
      ['calendar.deleteEvent', [id], /args\[0\] must be an object/],
      ['calendar.deleteEvent', [{ id, title: 'Standup' }], /unknown key title/],
    ];
    for (const [op, args, why] of cases) {
      const r = value(await write(fx, op, args));
      expect([op, args, r]).toEqual([op, args, expect.objectContaining({ success: false, code: 'VALIDATION', error: expect.stringMatching(why) })]);
    }
    expect(fx.prompter.asked).toHaveLength(0);
    expect((await inRange(fx, '2026-09-01', '2026-09-01')).map((e: any) => [e.title, e.end])).toEqual([['Standup', '2026-09-01T10:00:00Z']]);
  });

  it('refuses with CONFLICT a change or delete of an event changed after the preview was shown, and keeps that change', async () => {
    const id = value(await write(fx, 'calendar.createEvent', [{ title: 'Lunch', startAt: '2026-10-05T12:00:00Z' }])).event.id;
    const ask = fx.prompter.ask.bind(fx.prompter);
    try {
      for (const [op, args] of [
        ['calendar.updateEvent', [{ id, title: 'Lunch with Sam' }]],
        ['calendar.deleteEvent', [{ id }]],
      ] as Array<[string, unknown[]]>) {
        const asked = deferred();
        const release = deferred<'allow-once'>();
        let first = true;
        // The bridge call waits at its prompt; the change meanwhile is the calendar tool's own (allowed at once).
        (fx.prompter as any).ask = async (...a: Parameters<typeof ask>) => {
          if (!first) return ask(...a);
          first = false;
          asked.resolve();
          return release.promise;
        };
        const call = write(fx, op, args);
        await asked.promise;
        value(await fx.call('update_calendar_event', { id, title: `Lunch (${op})` }));
        release.resolve('allow-once');
        expect(value(await call)).toMatchObject({ success: false, code: 'CONFLICT', error: expect.stringMatching(/changed after the preview was shown/) });
        expect((await inRange(fx, '2026-10-05', '2026-10-05')).map((e: any) => e.title)).toEqual([`Lunch (${op})`]);
      }
    } finally {
      (fx.prompter as any).ask = ask;
    }
    // Unchanged since its preview, the same call goes through.
    expect(value(await write(fx, 'calendar.deleteEvent', [{ id }]))).toMatchObject({ success: true, deleted: { id, title: 'Lunch (calendar.deleteEvent)' } });
  });
});

describe('calendar deletes through the desktop bridge', () => {
  it('asks for every delete, even after a standing approval of vault_desktop_write, shows what is lost, and removes the event', async () => {
    const fx = await withCalendar();
    try {
      fx.prompter.answer('allow-forever');
      const made = [];
      for (const title of ['One', 'Two'])
        made.push(value(await write(fx, 'calendar.createEvent', [{ title, startAt: '2026-11-02T10:00:00Z', location: 'Hall' }])).event);
      // The standing approval covers the second create.
      expect(fx.prompter.asked).toHaveLength(1);
      for (const e of made) {
        const v = value(await write(fx, 'calendar.deleteEvent', [{ id: e.id }]));
        expect(v).toEqual({ success: true, operation: 'calendar.deleteEvent', deleted: { id: e.id, title: e.title }, summary: `deleted "${e.title}"` });
      }
      const deletes = fx.prompter.asked.slice(1);
      expect(deletes).toHaveLength(2);
      for (const [i, q] of deletes.entries()) {
        expect(q).toMatchObject({ tool: 'vault_desktop_write', standingApprovalAllowed: false, concern: { verdict: 'ask', rule: 'bridge-delete' } });
        expect(q.preview).toEqual({
          kind: 'delete',
          text: [
            'calendar.deleteEvent (delete: asked every time)',
            `Calendar event ${made[i].id}`,
            `Deletes "${made[i].title}" from local:`,
            'when: 2026-11-02 10:00 UTC to 2026-11-02 11:00 UTC (UTC)',
            'location: Hall',
          ].join('\n'),
        });
      }
      expect(await inRange(fx, '2026-11-02', '2026-11-02')).toEqual([]);
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

  it('refuses the writes saying the calendar pack is not loaded, before anyone is asked', async () => {
    const fx = await vaultKernel();
    try {
      for (const [op, args] of [
        ['calendar.createEvent', [{ title: 'X', startAt: '2026-07-01T09:00:00Z' }]],
        ['calendar.updateEvent', [{ id: 'local:x@memo', title: 'Y' }]],
        ['calendar.deleteEvent', [{ id: 'local:x@memo' }]],
      ] as Array<[string, unknown[]]>) {
        // As inbox.convertToEvent: the bridge's refusal (TOOL_FAILED), not an answer to approve.
        expect([op, bridgeRefusal(await write(fx, op, args))]).toEqual([
          op,
          expect.objectContaining({ code: 'TOOL_FAILED', message: 'the calendar pack is not loaded' }),
        ]);
      }
      expect(fx.prompter.asked).toHaveLength(0);
    } finally {
      await fx.close();
    }
  });
});
