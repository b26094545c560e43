import Database from 'better-sqlite3';
import { ManualClock } from '../../../kernel/clock.js';
import { ProviderError } from '../../../kernel/providers/provider.js';
import { ScriptedPrompter } from '../../helpers/kernel-fixture.js';
import { waitFor } from '../../helpers/wait.js';
import { reply, toolCall } from '../../helpers/scripted-provider.js';
import { FRIDAY_NOON, hangsUntilAborted, iso, routinesKernel, value, type RoutinesFixture } from './helpers.js';

const MIN = 60_000;
const HOUR = 60 * MIN;

async function create(fx: RoutinesFixture, schedule: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<string> {
  return value(await fx.call('create_routine', { name: 'Test routine', prompt: 'Do the thing.', schedule, ...extra })).id as string;
}

describe('the routines scheduler', () => {
  let fx: RoutinesFixture;
  afterEach(async () => fx?.close());

  it('runs a weekday routine at 08:30 Istanbul as an agent turn through the pipeline, and records the run', async () => {
    fx = await routinesKernel();
    fx.script = (_r, n) => (n === 1 ? reply('', toolCall('echo_safe', { text: 'calendar' })) : reply('Two meetings today.'));
    const id = await create(fx, { kind: 'cron', cron: '30 8 * * 1-5', time_zone: 'Europe/Istanbul' }, { tools: ['echo_safe'] });
    // Friday noon: the next weekday 08:30 in Istanbul (UTC+3) is Monday 05:30 UTC.
    const monday = Date.UTC(2026, 2, 30, 5, 30);
    await fx.advanceTo(monday - MIN);
    expect(fx.runs(id)).toEqual([]);
    await fx.advanceTo(monday);
    const [run] = fx.runs(id);
    expect(run).toMatchObject({ scheduled_for: monday, attempt: 1, trigger: 'schedule', status: 'ok', stop_reason: 'final', answer: 'Two meetings today.' });
    expect(JSON.parse(run!.steps)).toEqual([expect.objectContaining({ tool: 'echo_safe', outcome: 'ok' })]);
    const line = fx.kernel.audit.tail({ tool: 'echo_safe' }).at(-1)!;
    expect(line.caller).toMatchObject({ kind: 'routine', id });
    // Pinned when created: the provider and model the run used.
    expect(fx.providers).toHaveLength(1);
    expect(fx.providers[0]!.requests[0]!.model).toBe('model-a');
    const listed = value(await fx.call('list_routines', {})).routines[0];
    expect(listed).toMatchObject({ next_run: 'Tue 2026-03-31 08:30 (Europe/Istanbul)', last_result: { status: 'ok', answer: 'Two meetings today.' } });
  });

  it('keeps 08:30 local across the daylight-saving changes of Berlin and New York, running once a day', async () => {
    fx = await routinesKernel({ clock: new ManualClock(Date.UTC(2026, 2, 27, 12)) });
    const berlin = await create(fx, { kind: 'cron', cron: '30 8 * * *', time_zone: 'Europe/Berlin' });
    const newYork = await create(fx, { kind: 'cron', cron: '30 8 * * *', time_zone: 'America/New_York' });
    // Berlin goes from UTC+1 to UTC+2 on 29 March; New York is already on UTC-4 (since 8 March).
    const berlinTimes = [Date.UTC(2026, 2, 28, 7, 30), Date.UTC(2026, 2, 29, 6, 30), Date.UTC(2026, 2, 30, 6, 30)];
    const nyTimes = [Date.UTC(2026, 2, 27, 12, 30), Date.UTC(2026, 2, 28, 12, 30), Date.UTC(2026, 2, 29, 12, 30)];
    for (const t of [...berlinTimes, ...nyTimes].sort((a, b) => a - b)) await fx.advanceTo(t);
    expect(fx.runs(berlin).map((r) => [iso(r.scheduled_for), r.trigger, r.status])).toEqual(berlinTimes.map((t) => [iso(t), 'schedule', 'ok']));
    expect(fx.runs(newYork).map((r) => [iso(r.scheduled_for), r.trigger, r.status])).toEqual(nyTimes.map((t) => [iso(t), 'schedule', 'ok']));
  });

  it('runs a routine whose time falls in the hour New York repeats in autumn exactly once', async () => {
    fx = await routinesKernel({ clock: new ManualClock(Date.UTC(2026, 9, 31, 12)) });
    const id = await create(fx, { kind: 'cron', cron: '30 1 * * *', time_zone: 'America/New_York' });
    // 1 November: 01:30 EDT (05:30 UTC) and 01:30 EST (06:30 UTC) are both 01:30; it runs at the first.
    for (const t of [Date.UTC(2026, 10, 1, 5, 30), Date.UTC(2026, 10, 1, 6, 30), Date.UTC(2026, 10, 2, 6, 30)]) await fx.advanceTo(t);
    expect(fx.runs(id).map((r) => iso(r.scheduled_for))).toEqual([iso(Date.UTC(2026, 10, 1, 5, 30)), iso(Date.UTC(2026, 10, 2, 6, 30))]);
  });

  it('runs a routine whose time falls in the hour Berlin skips in spring once, when the clocks have moved on', async () => {
    fx = await routinesKernel({ clock: new ManualClock(Date.UTC(2026, 2, 27, 12)) });
    const id = await create(fx, { kind: 'cron', cron: '30 2 * * *', time_zone: 'Europe/Berlin' });
    // 29 March: 02:00 becomes 03:00, so 02:30 does not exist; it runs at 03:00 CEST (01:00 UTC).
    const times = [Date.UTC(2026, 2, 28, 1, 30), Date.UTC(2026, 2, 29, 1, 0), Date.UTC(2026, 2, 30, 0, 30)];
    for (const t of times) await fx.advanceTo(t);
    expect(fx.runs(id).map((r) => [iso(r.scheduled_for), r.trigger])).toEqual(times.map((t) => [iso(t), 'schedule']));
  });

  describe('after 3 hours of downtime', () => {
    it('applies each routine’s misfire policy: skip, run once, run once only if recent', async () => {
      fx = await routinesKernel();
      // Friday 12:00 UTC; each of these was due at 13:00 UTC (2 hours before Memo is back at 15:00)...
      const skip = await create(fx, { kind: 'cron', cron: '0 13 * * *', time_zone: 'UTC' }, { name: 'a skip', misfire: 'skip' });
      const once = await create(fx, { kind: 'cron', cron: '0 13 * * *', time_zone: 'UTC' }, { name: 'b once', misfire: 'run_once' });
      const recentOld = await create(fx, { kind: 'cron', cron: '0 13 * * *', time_zone: 'UTC' }, { name: 'c default' });
      // ...and this one at 14:30, half an hour before.
      const recentNew = await create(fx, { kind: 'cron', cron: '30 14 * * *', time_zone: 'UTC' }, { name: 'd default' });
      await fx.close();
      fx.clock.advance(3 * HOUR);
      fx = await restartOf(fx);
      await fx.settle();
      expect(fx.runs(skip)).toEqual([
        expect.objectContaining({ status: 'skipped', scheduled_for: FRIDAY_NOON + HOUR, error: expect.stringMatching(/skips missed runs/) }),
      ]);
      expect(fx.runs(once)).toEqual([expect.objectContaining({ status: 'ok', trigger: 'misfire', scheduled_for: FRIDAY_NOON + HOUR })]);
      expect(fx.runs(recentOld)).toEqual([
        expect.objectContaining({ status: 'skipped', error: expect.stringMatching(/more than 60 minutes ago, so it was not run late/) }),
      ]);
      expect(fx.runs(recentNew)).toEqual([expect.objectContaining({ status: 'ok', trigger: 'misfire', scheduled_for: FRIDAY_NOON + 2.5 * HOUR })]);
      // Each moves on to tomorrow, and is not run twice for today.
      const next = value(await fx.call('list_routines', {})).routines.map((r: any) => r.next_run);
      expect(next).toEqual(['Sat 2026-03-28 13:00 (UTC)', 'Sat 2026-03-28 13:00 (UTC)', 'Sat 2026-03-28 13:00 (UTC)', 'Sat 2026-03-28 14:30 (UTC)']);
      expect(fx.providers).toHaveLength(2);
    });

    it('runs an every-30-minutes routine once for all it missed, and records what was skipped', async () => {
      fx = await routinesKernel();
      const id = await create(fx, { kind: 'every', every: 30, unit: 'minutes' }, { misfire: 'run_once' });
      await fx.close();
      fx.clock.advance(3 * HOUR);
      fx = await restartOf(fx);
      await fx.settle();
      const runs = fx.runs(id);
      expect(runs.map((r) => r.status)).toEqual(['skipped', 'ok']);
      expect(runs[0]!.error).toMatch(/^5 earlier run time\(s\) from Fri 2026-03-27 12:30 \(UTC\) were missed/);
      // 15:00 is a run time of its own: it runs on time, once.
      expect(runs[1]).toMatchObject({ scheduled_for: FRIDAY_NOON + 3 * HOUR, trigger: 'schedule' });
    });
  });

  it('runs an occurrence exactly once when two schedulers share one data folder', async () => {
    const clock = new ManualClock(FRIDAY_NOON);
    fx = await routinesKernel({ clock });
    const other = await routinesKernel({ clock, dataDir: fx.dataDir });
    try {
      const id = await create(fx, { kind: 'every', every: 10, unit: 'minutes' });
      // The second host learns of it at its next look of the database.
      await other.advanceTo(FRIDAY_NOON + 1000);
      for (const t of [10, 20, 30].map((m) => FRIDAY_NOON + m * MIN)) {
        clock.advance(t - clock.now());
        await Promise.all([fx.settle(), other.settle()]);
        await Promise.all([fx.settle(), other.settle()]);
      }
      expect(fx.runs(id).map((r) => [iso(r.scheduled_for), r.attempt, r.status])).toEqual([10, 20, 30].map((m) => [iso(FRIDAY_NOON + m * MIN), 1, 'ok']));
      expect(fx.providers.length + other.providers.length).toBe(3);
    } finally {
      await other.close();
    }
  });

  it('marks a run that died with its process as crashed when a scheduler next starts', async () => {
    const clockA = new ManualClock(FRIDAY_NOON);
    fx = await routinesKernel({ clock: clockA, script: (req) => hangsUntilAborted(req.signal) });
    const id = await create(fx, { kind: 'every', every: 15, unit: 'minutes' });
    clockA.advance(15 * MIN);
    await waitUntil(() => fx.runs(id).some((r) => r.status === 'running'));
    // The first host is frozen mid-run (its clock stops: no heartbeat); another starts 10 minutes later.
    const restarted = await routinesKernel({ clock: new ManualClock(FRIDAY_NOON + 25 * MIN), dataDir: fx.dataDir });
    try {
      await restarted.settle();
      const [first] = restarted.runs(id);
      expect(first).toMatchObject({
        scheduled_for: FRIDAY_NOON + 15 * MIN,
        status: 'crashed',
        error: expect.stringMatching(/stopped with the process that ran it/),
      });
      // The frozen host, stopped at last, does not overwrite what was recorded.
      await fx.close();
      expect(restarted.runs(id)[0]!.status).toBe('crashed');
    } finally {
      await restarted.close();
    }
  });

  it('retries a failed run after 1 and then 5 minutes, and stops after the third attempt', async () => {
    fx = await routinesKernel({
      script: () => {
        throw new ProviderError('The provider is overloaded.', 529, true);
      },
    });
    const id = await create(fx, { kind: 'once', at: '2026-03-27T13:00', time_zone: 'UTC' });
    const due = FRIDAY_NOON + HOUR;
    await fx.advanceTo(due);
    expect(fx.runs(id)).toEqual([expect.objectContaining({ attempt: 1, status: 'failed', retry_at: due + MIN, error: 'The provider is overloaded.' })]);
    await fx.advanceTo(due + MIN);
    expect(fx.runs(id).map((r) => [r.attempt, r.status, r.retry_at])).toEqual([
      [1, 'failed', null],
      [2, 'failed', due + 6 * MIN],
    ]);
    fx.script = () => reply('Worked this time.');
    await fx.advanceTo(due + 6 * MIN);
    expect(fx.runs(id).map((r) => [r.attempt, r.trigger, r.status])).toEqual([
      [1, 'schedule', 'failed'],
      [2, 'retry', 'failed'],
      [3, 'retry', 'ok'],
    ]);
    await fx.advanceTo(due + HOUR);
    expect(fx.runs(id)).toHaveLength(3);
    expect(value(await fx.call('list_routines', { status: 'all' })).routines[0]).toMatchObject({ status: 'done', next_run: null });
  });

  it('gives up after the third failed attempt', async () => {
    fx = await routinesKernel({
      script: () => {
        throw new ProviderError('invalid x-api-key', 401, false);
      },
    });
    const id = await create(fx, { kind: 'once', at: '2026-03-27T13:00', time_zone: 'UTC' });
    for (const t of [60, 61, 66, 120]) await fx.advanceTo(FRIDAY_NOON + t * MIN);
    expect(fx.runs(id).map((r) => [r.attempt, r.status, r.retry_at])).toEqual([
      [1, 'failed', null],
      [2, 'failed', null],
      [3, 'failed', null],
    ]);
  });

  it('pre-approves the tools approved with the routine and refuses, when nobody watches (memo serve), what must still be asked', async () => {
    fx = await routinesKernel({ prompter: null, unattendedApprovals: 'refuse' });
    fx.kernel.permissions.set({ tool: 'create_routine', decision: 'allow', plugin: 'routines', scope: 'forever' }, new Date(fx.clock.now()));
    fx.script = (_r, n) =>
      n === 1
        ? reply('', toolCall('echo_medium', { text: 'note' }), toolCall('echo_delete', { text: 'old' }), toolCall('echo_dangerous', { text: 'x' }))
        : reply('Done, one delete refused.');
    // Created with a face watching (the create itself is asked: it pre-approves a medium tool).
    const face = fx.kernel.approvals.attach({ name: 'test-face', ask: () => Promise.resolve('allow-once' as const) });
    const id = await create(fx, { kind: 'once', at: '2026-03-27T13:00', time_zone: 'UTC' }, { tools: ['echo_medium', 'echo_delete'] });
    face.dispose();
    await fx.advanceTo(FRIDAY_NOON + HOUR);
    const [run] = fx.runs(id);
    expect(run).toMatchObject({ status: 'ok', answer: 'Done, one delete refused.' });
    expect(JSON.parse(run!.steps).map((s: any) => [s.tool, s.outcome, s.code ?? null])).toEqual([
      ['echo_medium', 'ok', null],
      ['echo_delete', 'denied', 'PERMISSION_DENIED'],
      // Not one of the routine's tools: it does not exist for the run.
      ['echo_dangerous', 'error', 'UNKNOWN_TOOL'],
    ]);
    expect(fx.kernel.audit.tail({ tool: 'echo_medium' }).at(-1)!.decision).toBe('allow:pre-approved');
  });

  it('runs a routine made in Vault only as a Vault-only turn: a tool its list names that the mode no longer offers does not exist for the run', async () => {
    fx = await routinesKernel({ vaultTools: true });
    const seen: string[][] = [];
    fx.script = (req, n) => {
      seen.push((req.tools ?? []).map((t) => t.name));
      return n === 1 ? reply('', toolCall('note_read', { text: 'a' }), toolCall('echo_safe', { text: 'b' })) : reply('Read the notes.');
    };
    const made = await fx.kernel.invoke(
      {
        tool: 'create_routine',
        args: { name: 'Notes', prompt: 'Read my notes.', schedule: { kind: 'once', at: '2026-03-27T13:00', time_zone: 'UTC' }, tools: ['note_read'] },
        caller: { kind: 'agent', conversationId: 'c-1' },
      },
      { mode: 'vault' },
    );
    const id = value(made).id as string;
    // As if a pack update had taken echo_safe out of Vault only after the routine was approved with it.
    const db = new Database(fx.dbFile);
    db.prepare(`UPDATE routines SET tools = ? WHERE id = ?`).run(JSON.stringify(['note_read', 'echo_safe']), id);
    db.close();
    await fx.advanceTo(FRIDAY_NOON + HOUR);
    const [run] = fx.runs(id);
    expect(run).toMatchObject({ status: 'ok', answer: 'Read the notes.' });
    expect(seen[0]).toEqual(['note_read']);
    expect(JSON.parse(run!.steps).map((s: any) => [s.tool, s.outcome, s.code ?? null])).toEqual([
      ['note_read', 'ok', null],
      ['echo_safe', 'error', 'UNKNOWN_TOOL'],
    ]);
  });

  it('holds a run, with no face and approvals kept waiting (a host app), until its question is answered', async () => {
    fx = await routinesKernel({ prompter: null });
    fx.script = (_r, n) => (n === 1 ? reply('', toolCall('echo_delete', { text: 'old' })) : reply('Deleted.'));
    const face = fx.kernel.approvals.attach({ name: 'test-face', ask: () => Promise.resolve('allow-once' as const) });
    const id = await create(fx, { kind: 'once', at: '2026-03-27T13:00', time_zone: 'UTC' }, { tools: ['echo_delete'] });
    face.dispose();
    fx.clock.advance(HOUR);
    await fx.idle();
    const pending = await waitFor(() => fx.kernel.approvals.pending()[0], { what: 'the run’s question in the broker' });
    expect(pending.request).toMatchObject({ tool: 'echo_delete', caller: { kind: 'routine', id } });
    fx.kernel.approvals.answer(pending.id, 'allow-once', 'console');
    await fx.settle();
    expect(fx.runs(id)).toEqual([expect.objectContaining({ status: 'ok', answer: 'Deleted.' })]);
  });

  it('asks a watching face for what the routine’s approval does not cover', async () => {
    const prompter = new ScriptedPrompter('allow-once');
    fx = await routinesKernel({ prompter });
    fx.script = (_r, n) => (n === 1 ? reply('', toolCall('echo_medium', { text: 'a' }), toolCall('echo_delete', { text: 'b' })) : reply('ok'));
    const id = await create(fx, { kind: 'once', at: '2026-03-27T13:00', time_zone: 'UTC' }, { tools: ['echo_medium', 'echo_delete'] });
    const askedBefore = prompter.asked.length;
    await fx.advanceTo(FRIDAY_NOON + HOUR);
    expect(prompter.asked.slice(askedBefore).map((q) => [q.tool, q.caller.kind])).toEqual([['echo_delete', 'routine']]);
    expect(JSON.parse(fx.runs(id)[0]!.steps).map((s: any) => s.outcome)).toEqual(['ok', 'ok']);
  });

  it('stops a run in progress when the routine is cancelled, and never runs it again', async () => {
    fx = await routinesKernel({ script: (req) => hangsUntilAborted(req.signal) });
    const id = await create(fx, { kind: 'every', every: 15, unit: 'minutes' });
    fx.clock.advance(15 * MIN);
    await waitUntil(() => fx.runs(id).some((r) => r.status === 'running'));
    const cancelled = value(await fx.call('cancel_routine', { id }));
    expect(cancelled).toMatchObject({ status: 'cancelled', stopped_run: true });
    await fx.settle();
    expect(fx.runs(id)).toEqual([expect.objectContaining({ status: 'cancelled', error: 'Stopped: the routine was cancelled.' })]);
    await fx.advanceTo(FRIDAY_NOON + 3 * HOUR);
    expect(fx.runs(id)).toHaveLength(1);
  });

  it('runs one run at a time: an occurrence that comes while the previous run goes on is skipped, with why', async () => {
    fx = await routinesKernel({ script: (req) => hangsUntilAborted(req.signal) });
    const id = await create(fx, { kind: 'every', every: 5, unit: 'minutes' });
    fx.clock.advance(5 * MIN);
    await waitUntil(() => fx.runs(id).some((r) => r.status === 'running'));
    fx.clock.advance(5 * MIN);
    await waitUntil(() => fx.runs(id).length === 2);
    expect(fx.runs(id).map((r) => [r.status, r.error])).toEqual([
      ['running', null],
      ['skipped', expect.stringMatching(/the previous run was still going/)],
    ]);
  });
});

/** The same data folder and clock, a new kernel (Memo started again). */
async function restartOf(fx: RoutinesFixture): Promise<RoutinesFixture> {
  return routinesKernel({ clock: fx.clock, dataDir: fx.dataDir });
}

async function waitUntil(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (condition()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('the condition never held');
}
