/**
 * The routines pack's web console panel and the two tools behind its actions: routine_history
 * (a routine's runs) and run_routine_now (a run outside the schedule, asked like any write),
 * through the real pipeline with the real pack, a scripted model and a fake clock.
 */
import { ScriptedPrompter } from '../../helpers/kernel-fixture.js';
import { shownPreview } from '../../helpers/shown-preview.js';
import { reply } from '../../helpers/scripted-provider.js';
import { error, FRIDAY_NOON, routinesKernel, value, type RoutinesFixture } from './helpers.js';

const HOUR = 3_600_000;

describe('routines in the web console', () => {
  let fx: RoutinesFixture;
  afterEach(async () => fx?.close());

  async function hourly(name = 'Hourly check'): Promise<string> {
    return value(await fx.call('create_routine', { name, prompt: 'Check things.', schedule: { kind: 'cron', cron: '0 * * * *', time_zone: 'UTC' } })).id;
  }

  it('registers a Routines panel listing the routines, each row with its own tools as buttons', async () => {
    fx = await routinesKernel({ start: false });
    expect(fx.kernel.panels.get('routines', 'routines')).toMatchObject({
      pack: 'routines',
      title: 'Routines',
      lists: [
        {
          id: 'routines',
          tool: 'list_routines',
          rows: 'routines',
          rowActions: [
            { id: 'history', tool: 'routine_history', from: { id: 'id' } },
            { id: 'run-now', tool: 'run_routine_now', from: { id: 'id' } },
            { id: 'cancel', tool: 'cancel_routine', from: { id: 'id' } },
          ],
        },
      ],
    });
  });

  it('runs a routine now after asking, leaves its schedule alone, and routine_history shows the run', async () => {
    const prompter = new ScriptedPrompter('allow-once');
    fx = await routinesKernel({ prompter });
    fx.script = () => reply('Checked by hand.');
    const id = await hourly();
    const before = value(await fx.call('list_routines', {})).routines[0].next_run;
    expect(value(await fx.call('routine_history', { id }))).toEqual({ id, name: 'Hourly check', runs: [], count: 0 });

    const started = value(await fx.call('run_routine_now', { id }));
    expect(started).toMatchObject({ started: true, id, run_id: expect.any(String) });
    const asked = prompter.asked.find((q) => q.tool === 'run_routine_now')!;
    expect(asked).toMatchObject({ danger: 'medium' });
    expect(shownPreview(asked).split('\n')).toEqual([
      'caller: agent, conversation c-1',
      `routine: "Hourly check" (${id}): at the times of the cron schedule "0 * * * *" (UTC)`,
      'runs with: scripted-one / model-a',
      'access mode: Computer access',
      'may use: no tool',
      'It runs once now, outside its schedule; the schedule is unchanged.',
      'prompt it sends, written by the model, when the routine was created: "Check things."',
    ]);
    await fx.settle();
    const history = value(await fx.call('routine_history', { id }));
    expect(history.runs).toEqual([expect.objectContaining({ id: started.run_id, trigger: 'manual', status: 'ok', answer: 'Checked by hand.' })]);
    expect(value(await fx.call('list_routines', {})).routines[0].next_run).toBe(before);
    // The scheduled runs go on as before.
    await fx.advanceTo(FRIDAY_NOON + HOUR);
    expect(value(await fx.call('routine_history', { id, limit: 1 })).runs).toEqual([expect.objectContaining({ trigger: 'schedule', status: 'ok' })]);
  });

  it('refuses an unknown or cancelled routine before anyone is asked, and a routine may not run routines', async () => {
    const prompter = new ScriptedPrompter('allow-once');
    fx = await routinesKernel({ prompter, start: false });
    expect(error(await fx.call('run_routine_now', { id: 'rt_nope' })).code).toBe('NOT_FOUND');
    expect(error(await fx.call('routine_history', { id: 'rt_nope' })).code).toBe('NOT_FOUND');
    const id = await hourly();
    value(await fx.call('cancel_routine', { id }));
    const asked = prompter.asked.length;
    expect(error(await fx.call('run_routine_now', { id }))).toMatchObject({
      code: 'CONFLICT',
      message: 'Hourly check is cancelled; create it again to run it.',
    });
    expect(prompter.asked.length).toBe(asked);
    const own = error(
      await fx.call('create_routine', {
        name: 'Loop',
        prompt: 'p',
        schedule: { kind: 'cron', cron: '0 * * * *', time_zone: 'UTC' },
        tools: ['run_routine_now'],
      }),
    );
    expect(own.message).toMatch(/routines do not create or cancel routines/);
  });
});
