/** `memo routines ...` as the CLI runs it: the pack's command group, run in process against a real kernel. */
import { adminActions } from '../../helpers/admin-lines.js';
import { spawnSync } from 'node:child_process';
import * as os from 'node:os';
import Database from 'better-sqlite3';
import { ScriptedPrompter } from '../../helpers/kernel-fixture.js';
import { reply, toolCall } from '../../helpers/scripted-provider.js';
import { FRIDAY_NOON, routinesKernel, value, type RoutinesFixture } from './helpers.js';

const MIN = 60_000;
const HOUR = 60 * MIN;

/** Runs `memo routines <sub> ...` and returns its exit code and printed lines. */
async function memo(
  fx: RoutinesFixture,
  sub: string,
  args: Record<string, string> = {},
  options: Record<string, unknown> = {},
): Promise<{ code: number; out: string; json: any }> {
  const group = fx.kernel.commands.get('routines')!.command;
  const command = group.subcommands.find((s) => s.name === sub)!;
  const defaults = Object.fromEntries(
    (command.options ?? []).filter((o) => o.default !== undefined).map((o) => [o.flags.replace(/^--([\w-]+).*$/, '$1'), o.default]),
  );
  const lines: string[] = [];
  const code = await command.run({
    args,
    options: { ...defaults, ...options },
    signal: new AbortController().signal,
    invoke: (tool, toolArgs) => fx.kernel.invoke({ tool, args: toolArgs, caller: { kind: 'cli', id: `memo routines ${sub}` } }),
    print: (v) => lines.push(typeof v === 'string' ? v : JSON.stringify(v)),
    record: (change) => fx.kernel.admin.record({ ...change, by: 'cli' }),
  });
  const out = lines.join('\n');
  let json: any;
  try {
    json = JSON.parse(out);
  } catch {
    json = undefined;
  }
  return { code: typeof code === 'number' ? code : 0, out, json };
}

describe('memo routines', () => {
  let fx: RoutinesFixture;
  afterEach(async () => fx?.close());

  async function hourly(name = 'Hourly check'): Promise<string> {
    return value(await fx.call('create_routine', { name, prompt: 'Check things.', schedule: { kind: 'cron', cron: '0 * * * *', time_zone: 'UTC' } })).id;
  }

  it('lists the routines with their schedule, next run and last result', async () => {
    fx = await routinesKernel();
    const id = await hourly();
    await fx.advanceTo(FRIDAY_NOON + HOUR);
    const r = await memo(fx, 'list');
    expect(r.code).toBe(0);
    expect(r.out).toBe(`${id}  active  Hourly check: at the times of the cron schedule "0 * * * *" (UTC); next Fri 2026-03-27 14:00 (UTC); last ok`);
    expect((await memo(fx, 'list', {}, { json: true })).json.result.routines[0]).toMatchObject({ id, last_result: { status: 'ok' } });
  });

  it('shows a routine and its history: start, end, status, stop reason, tool steps, answer', async () => {
    fx = await routinesKernel();
    fx.script = (_r, n) => (n === 1 ? reply('', toolCall('echo_safe', { text: 'inbox' })) : reply('Inbox is empty.'));
    const id = value(
      await fx.call('create_routine', {
        name: 'Inbox',
        prompt: 'Check the inbox.',
        schedule: { kind: 'every', every: 1, unit: 'hours' },
        tools: ['echo_safe'],
      }),
    ).id;
    await fx.advanceTo(FRIDAY_NOON + HOUR);
    const shown = await memo(fx, 'show', { id });
    expect(shown.out).toContain('When: every hour, from Fri 2026-03-27 13:00 (UTC)');
    expect(shown.out).toContain('Asks scripted-one / model-a: "Check the inbox."');
    expect(shown.out).toContain('Tools: echo_safe');
    expect(shown.out).toContain('Fri 2026-03-27 13:00 (UTC)  ok  schedule  1 step(s)  Inbox is empty.');
    const history = await memo(fx, 'history', { id }, { json: true });
    expect(history.json.result.runs).toEqual([
      expect.objectContaining({
        scheduled_for: 'Fri 2026-03-27 13:00 (UTC)',
        started_at: '2026-03-27T13:00:00.000Z',
        ended_at: '2026-03-27T13:00:00.000Z',
        status: 'ok',
        stop_reason: 'final',
        answer: 'Inbox is empty.',
        steps: [expect.objectContaining({ tool: 'echo_safe', outcome: 'ok', args: { text: 'inbox' } })],
      }),
    ]);
  });

  it('pauses a routine (nothing runs) and resumes it from now, without running what was missed while paused', async () => {
    fx = await routinesKernel();
    const id = await hourly();
    expect((await memo(fx, 'pause', { id })).code).toBe(0);
    await fx.advanceTo(FRIDAY_NOON + 3.5 * HOUR);
    expect(fx.runs(id)).toEqual([]);
    const resumed = await memo(fx, 'resume', { id });
    expect(resumed.out).toBe('Hourly check is active again; next run Fri 2026-03-27 16:00 (UTC).');
    await fx.kernel.invoke({ tool: 'list_routines', args: {}, caller: { kind: 'cli' } });
    await fx.advanceTo(FRIDAY_NOON + 4 * HOUR);
    expect(fx.runs(id).map((r) => [r.scheduled_for, r.status])).toEqual([[FRIDAY_NOON + 4 * HOUR, 'ok']]);
    expect((await memo(fx, 'resume', { id })).code).toBe(1);
    // The person's decisions are on the audit trail (the refused second resume is not).
    expect(adminActions(fx.kernel)).toEqual([`routine.pause ${id} by cli`, `routine.resume ${id} by cli`]);
  });

  it('runs a routine now in its own process, as the routine, and prints how it ended', async () => {
    fx = await routinesKernel({ start: false });
    fx.script = () => reply('Ran by hand.');
    const id = await hourly();
    const r = await memo(fx, 'run-now', { id });
    expect(r.code).toBe(0);
    expect(r.out).toBe('Fri 2026-03-27 12:00 (UTC)  ok  manual  0 step(s)  Ran by hand.\n\nRan by hand.');
    expect(fx.runs(id)).toEqual([expect.objectContaining({ trigger: 'manual', status: 'ok' })]);
  });

  it('cancels through cancel_routine, which is asked with its preview, and says so when refused', async () => {
    const prompter = new ScriptedPrompter('allow-once');
    fx = await routinesKernel({ prompter });
    const id = await hourly();
    prompter.answer('deny-once');
    const refused = await memo(fx, 'cancel', { id });
    expect(refused).toMatchObject({ code: 1, out: expect.stringMatching(/^PERMISSION_DENIED: /) });
    const ok = await memo(fx, 'cancel', { id });
    expect(ok).toMatchObject({ code: 0, out: 'Hourly check is cancelled.' });
    expect(prompter.asked.filter((q) => q.tool === 'cancel_routine').map((q) => q.caller.kind)).toEqual(['cli', 'cli']);
    expect((await memo(fx, 'list')).out).toBe('No routines.');
  });

  it('says which routine does not exist', async () => {
    fx = await routinesKernel();
    expect(await memo(fx, 'show', { id: 'rt_missing' })).toMatchObject({ code: 1, out: 'NOT_FOUND: There is no routine "rt_missing" (memo routines list).' });
  });
});

describe('a run whose process is gone', () => {
  let fx: RoutinesFixture;
  afterEach(async () => fx?.close());

  it('is marked crashed at once when the scheduler starts on the same machine, its heartbeat still fresh', async () => {
    fx = await routinesKernel({ start: false });
    const id = value(await fx.call('create_routine', { name: 'x', prompt: 'p', schedule: { kind: 'every', every: 1, unit: 'hours' } })).id;
    const db = new Database(fx.dbFile);
    // The pid of a process that has exited: the host that ran it no longer exists.
    const gone = spawnSync(process.execPath, ['-e', '']).pid;
    db.prepare(
      `INSERT INTO routine_runs (id, routine_id, scheduled_for, attempt, "trigger", status, owner, heartbeat_at, started_at, steps) VALUES (?, ?, ?, 1, 'schedule', 'running', ?, ?, ?, '[]')`,
    ).run('run-gone', id, FRIDAY_NOON - MIN, `${os.hostname()}:${gone}:abcd1234`, FRIDAY_NOON, FRIDAY_NOON - MIN);
    db.close();
    await fx.kernel.start();
    await fx.settle();
    expect(fx.runs(id)).toEqual([expect.objectContaining({ id: 'run-gone', status: 'crashed' })]);
  });
});
