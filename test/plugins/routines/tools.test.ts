import { ScriptedPrompter } from '../../helpers/kernel-fixture.js';
import { error, routinesKernel, value, type RoutinesFixture } from './helpers.js';

const weekdays = { kind: 'cron', cron: '30 8 * * 1-5', time_zone: 'Europe/Istanbul' };

describe('create_routine', () => {
  let fx: RoutinesFixture;
  afterEach(async () => fx?.close());

  it('shows the schedule read back, the next 3 run times, the pinned model and each tool with its danger before it is approved', async () => {
    const prompter = new ScriptedPrompter('allow-once');
    fx = await routinesKernel({ prompter });
    const r = await fx.call('create_routine', {
      name: 'Morning brief',
      request: 'Every weekday at 8:30 summarise my calendar and inbox',
      prompt: 'Summarise my calendar and inbox.',
      schedule: weekdays,
      tools: ['echo_safe', 'echo_dangerous', 'echo_delete', 'echo_confirm'],
    });
    expect(value(r)).toMatchObject({
      schedule: 'every weekday at 08:30 (Europe/Istanbul)',
      next_runs: ['Mon 2026-03-30 08:30 (Europe/Istanbul)', 'Tue 2026-03-31 08:30 (Europe/Istanbul)', 'Wed 2026-04-01 08:30 (Europe/Istanbul)'],
      provider: 'scripted-one',
      model: 'model-a',
    });
    const [asked] = prompter.asked;
    expect(asked).toMatchObject({ tool: 'create_routine', danger: 'medium' });
    expect(asked!.preview!.facts).toEqual([
      { label: 'routine', value: '"Morning brief"' },
      { label: 'when', value: 'every weekday at 08:30 (Europe/Istanbul)' },
      { label: 'next runs', value: 'Mon 2026-03-30 08:30 (Europe/Istanbul); Tue 2026-03-31 08:30 (Europe/Istanbul); Wed 2026-04-01 08:30 (Europe/Istanbul)' },
      { label: 'runs with', value: "scripted-one / model-a, pinned now (the active provider's: the call comes from no chat that names one)" },
      { label: 'access mode', value: 'Computer access (the mode of the chat it was made in)' },
      { label: 'may use', value: 'echo_safe (safe, read): runs without asking' },
      { label: 'may use', value: expect.stringMatching(/^echo_dangerous \(dangerous, write\): PRE-APPROVED for its runs \(a dangerous tool\)/) },
      { label: 'may use', value: 'echo_delete (dangerous, delete): asked every time it runs; never pre-approved' },
      { label: 'may use', value: 'echo_confirm (medium, write, confirm always): asked every time it runs; never pre-approved' },
      { label: 'missed runs', value: expect.stringMatching(/run once when it is back if it is less than 60 minutes old/) },
    ]);
    // What the model wrote is quoted, never a fact.
    expect(asked!.preview!.quoted).toEqual([
      { label: 'prompt each run sends', text: 'Summarise my calendar and inbox.' },
      { label: 'the request it was made for', text: 'Every weekday at 8:30 summarise my calendar and inbox' },
    ]);
  });

  it('says a routine may use no tool when it names none', async () => {
    const prompter = new ScriptedPrompter('allow-once');
    fx = await routinesKernel({ prompter });
    value(await fx.call('create_routine', { name: 'Just talk', prompt: 'Say hello.', schedule: weekdays }));
    expect(prompter.asked[0]!.preview!.facts).toContainEqual({ label: 'may use', value: 'no tool (the model can only answer)' });
  });

  it('is asked every time it pre-approves a medium or dangerous tool, even when create_routine is allowed forever', async () => {
    const prompter = new ScriptedPrompter('allow-once');
    fx = await routinesKernel({ prompter });
    fx.kernel.permissions.set({ tool: 'create_routine', decision: 'allow', plugin: 'routines', scope: 'forever' }, new Date(fx.clock.now()));
    value(await fx.call('create_routine', { name: 'Only reads', prompt: 'p', schedule: weekdays, tools: ['echo_safe'] }));
    expect(prompter.asked).toHaveLength(0);
    value(await fx.call('create_routine', { name: 'Writes', prompt: 'p', schedule: weekdays, tools: ['echo_medium'] }));
    expect(prompter.asked.map((q) => [q.tool, q.concern?.rule, q.standingApprovalAllowed])).toEqual([['create_routine', 'routine-pre-approval', false]]);
  });

  it('creates nothing when the person denies it', async () => {
    fx = await routinesKernel({ prompter: new ScriptedPrompter('deny-once') });
    expect(error(await fx.call('create_routine', { name: 'x', prompt: 'p', schedule: weekdays })).code).toBe('PERMISSION_DENIED');
    expect(value(await fx.call('list_routines', { status: 'all' })).count).toBe(0);
  });

  it.each([
    ['what the words leave open', { schedule: weekdays, unclear: ['Which inbox: work or personal?'] }, /leaves open "Which inbox: work or personal\?"/],
    ['a cron without a time zone', { schedule: { kind: 'cron', cron: '30 8 * * 1-5' } }, /time_zone: which time zone is meant\? It is never guessed/],
    ['a zone nobody knows', { schedule: { kind: 'cron', cron: '30 8 * * *', time_zone: 'Istanbul' } }, /"Istanbul" is not a time zone/],
    ['a one-off in the past', { schedule: { kind: 'once', at: '2026-03-27T09:00', time_zone: 'UTC' } }, /Fri 2026-03-27 09:00 \(UTC\) is in the past/],
    ['a one-off without a date', { schedule: { kind: 'once', at: '09:00', time_zone: 'UTC' } }, /is not a local date and time/],
    ['a time the clocks skip', { schedule: { kind: 'once', at: '2026-03-29T02:30', time_zone: 'Europe/Berlin' } }, /does not exist in Europe\/Berlin/],
    ['a time that happens twice', { schedule: { kind: 'once', at: '2026-10-25T02:30', time_zone: 'Europe/Berlin' } }, /happens twice in Europe\/Berlin/],
    ['a cron with seconds', { schedule: { kind: 'cron', cron: '0 30 8 * * *', time_zone: 'UTC' } }, /exactly 5 fields/],
    ['a cron with both day fields', { schedule: { kind: 'cron', cron: '0 9 1 * 1', time_zone: 'UTC' } }, /both the day of the month and the day of the week/],
    ['a cron croner rejects', { schedule: { kind: 'cron', cron: '61 8 * * *', time_zone: 'UTC' } }, /is not valid/],
    ['every minute', { schedule: { kind: 'cron', cron: '* * * * *', time_zone: 'UTC' } }, /more often than every 5 minutes/],
    ['every 2 minutes', { schedule: { kind: 'every', every: 2, unit: 'minutes' } }, /at most every 5 minutes/],
    ['a tool that does not exist', { schedule: weekdays, tools: ['read_inbox'] }, /No tool is called "read_inbox"/],
    ['its own tools', { schedule: weekdays, tools: ['cancel_routine'] }, /routines do not create or cancel routines/],
  ])('refuses %s, saying what to clarify, before anyone is asked, and creates nothing', async (_what, args, message) => {
    const prompter = new ScriptedPrompter('allow-once');
    fx = await routinesKernel({ prompter });
    const e = error(await fx.call('create_routine', { name: 'x', prompt: 'p', ...args }));
    expect(e.code).toBe('VALIDATION');
    expect(e.message).toMatch(message);
    expect(prompter.asked).toHaveLength(0);
    expect(value(await fx.call('list_routines', { status: 'all' })).count).toBe(0);
  });

  it('refuses when no model provider is configured, since a run would have nothing to run with', async () => {
    fx = await routinesKernel();
    fx.kernel.providerSettings.remove('scripted-one');
    expect(error(await fx.call('create_routine', { name: 'x', prompt: 'p', schedule: weekdays })).message).toMatch(/No model provider is configured/);
  });

  describe('the provider and model it pins', () => {
    /** A second provider, `scripted-two` / `model-b`, beside the active `scripted-one`, and a chat that uses it. */
    async function chatOnSecondProvider(f: RoutinesFixture): Promise<string> {
      f.kernel.providerSettings.put({ name: 'scripted-two', kind: 'scripted', model: 'model-b' });
      expect(f.kernel.providerSettings.active()?.name).toBe('scripted-one');
      return (await f.kernel.conversations.create({ provider: 'scripted-two', model: 'model-b' })).id;
    }
    const fromChat = (conversationId: string, args: Record<string, unknown>) =>
      fx.kernel.invoke({ tool: 'create_routine', args, caller: { kind: 'agent', conversationId } });

    it("are the chat's, not the active provider's, and the preview says so", async () => {
      const prompter = new ScriptedPrompter('allow-once');
      fx = await routinesKernel({ prompter });
      const chat = await chatOnSecondProvider(fx);
      const made = value(await fromChat(chat, { name: 'Brief', prompt: 'p', schedule: weekdays, tools: ['echo_medium'] }));
      expect(made).toMatchObject({ provider: 'scripted-two', model: 'model-b' });
      expect(prompter.asked[0]!.preview!.facts).toContainEqual({ label: 'runs with', value: "scripted-two / model-b, pinned now (this chat's)" });
      expect(value(await fx.call('list_routines', {})).routines).toEqual([
        expect.objectContaining({ id: made.id, provider: 'scripted-two', model: 'model-b' }),
      ]);
    });

    it('are not swapped unseen: nothing is created when the chat moved to another model while the person was asked', async () => {
      const prompter = new ScriptedPrompter('allow-once');
      fx = await routinesKernel({ prompter });
      const chat = await chatOnSecondProvider(fx);
      const ask = prompter.ask.bind(prompter);
      prompter.ask = async (req, signal) => {
        await fx.kernel.conversations.update(chat, { provider: 'scripted-one', model: 'model-a' });
        return ask(req, signal);
      };
      const e = error(await fromChat(chat, { name: 'Brief', prompt: 'p', schedule: weekdays, tools: ['echo_medium'] }));
      expect(e).toMatchObject({
        code: 'CONFLICT',
        message: expect.stringContaining('shown to run with scripted-two / model-b, and would now run with scripted-one / model-a'),
      });
      expect(value(await fx.call('list_routines', { status: 'all' })).count).toBe(0);
    });

    it('are the active ones for a chat that has no provider yet', async () => {
      fx = await routinesKernel();
      const chat = (await fx.kernel.conversations.create({})).id;
      expect(value(await fromChat(chat, { name: 'Brief', prompt: 'p', schedule: weekdays }))).toMatchObject({ provider: 'scripted-one', model: 'model-a' });
    });

    it('refuse, before anyone is asked, a chat whose provider is no longer configured, rather than pin the active one', async () => {
      const prompter = new ScriptedPrompter('allow-once');
      fx = await routinesKernel({ prompter });
      const chat = await chatOnSecondProvider(fx);
      fx.kernel.providerSettings.remove('scripted-two');
      const e = error(await fromChat(chat, { name: 'Brief', prompt: 'p', schedule: weekdays }));
      expect(e.code).toBe('VALIDATION');
      expect(e.message).toMatch(/This conversation runs on "scripted-two", which is not a configured model provider/);
      expect(prompter.asked).toHaveLength(0);
      expect(value(await fx.call('list_routines', { status: 'all' })).count).toBe(0);
    });
  });

  it('reads back interval and one-off schedules', async () => {
    fx = await routinesKernel();
    expect(value(await fx.call('create_routine', { name: 'a', prompt: 'p', schedule: { kind: 'every', every: 2, unit: 'hours' } }))).toMatchObject({
      schedule: 'every 2 hours, from Fri 2026-03-27 14:00 (UTC)',
      next_runs: ['Fri 2026-03-27 14:00 (UTC)', 'Fri 2026-03-27 16:00 (UTC)', 'Fri 2026-03-27 18:00 (UTC)'],
    });
    expect(
      value(await fx.call('create_routine', { name: 'b', prompt: 'p', schedule: { kind: 'once', at: '2026-04-02T18:15', time_zone: 'America/New_York' } })),
    ).toMatchObject({ schedule: 'once, on Thu 2026-04-02 18:15 (America/New_York)', next_runs: ['Thu 2026-04-02 18:15 (America/New_York)'] });
  });
});

describe('the access mode a routine records', () => {
  let fx: RoutinesFixture;
  afterEach(async () => fx?.close());
  const inVault = (tool: string, args: Record<string, unknown>) =>
    fx.kernel.invoke({ tool, args, caller: { kind: 'agent', conversationId: 'c-1' } }, { mode: 'vault' });

  it('is the chat’s: made in Vault only, it may name only tools Vault only offers, refused before anyone is asked', async () => {
    const prompter = new ScriptedPrompter('allow-once');
    fx = await routinesKernel({ prompter, vaultTools: true });
    const refused = error(
      await inVault('create_routine', { name: 'Clean up', prompt: 'p', schedule: weekdays, tools: ['note_read', 'echo_dangerous', 'echo_safe'] }),
    );
    expect(refused.code).toBe('VALIDATION');
    expect(refused.message).toBe(
      'This chat is in Vault only, and a routine created in it may use only the tools Vault only offers: echo_dangerous, echo_safe are not among them. Leave them out, or ask the user to switch the chat to Computer access first.',
    );
    expect(prompter.asked).toHaveLength(0);
    expect(value(await fx.call('list_routines', {})).count).toBe(0);

    const made = value(await inVault('create_routine', { name: 'Notes', prompt: 'p', schedule: weekdays, tools: ['note_read', 'note_write'] }));
    expect(made).toMatchObject({ mode: 'vault', tools: [{ name: 'note_read' }, { name: 'note_write', pre_approved: true }] });
    expect(prompter.asked[0]!.preview!.facts).toContainEqual({
      label: 'access mode',
      value: 'Vault only (the mode of the chat it was made in): its runs get no tool that mode does not offer',
    });
    expect(value(await fx.call('list_routines', {})).routines).toEqual([expect.objectContaining({ id: made.id, mode: 'vault' })]);
  });

  it('is Computer access for a call from no chat turn (a person’s CLI, a host, an MCP client), which may name any tool', async () => {
    fx = await routinesKernel({ vaultTools: true });
    const made = value(await fx.call('create_routine', { name: 'Any', prompt: 'p', schedule: weekdays, tools: ['note_read', 'echo_safe'] }));
    expect(made.mode).toBe('computer');
    expect(value(await fx.call('list_routines', {})).routines).toEqual([expect.objectContaining({ mode: 'computer', tools: ['note_read', 'echo_safe'] })]);
  });
});

describe('list_routines and cancel_routine', () => {
  let fx: RoutinesFixture;
  afterEach(async () => fx?.close());

  it('lists each routine with its schedule, next run and last result, and leaves cancelled ones out unless asked', async () => {
    fx = await routinesKernel();
    const a = value(await fx.call('create_routine', { name: 'A', prompt: 'p', schedule: weekdays })).id;
    const b = value(await fx.call('create_routine', { name: 'B', prompt: 'p', schedule: { kind: 'every', every: 1, unit: 'hours' } })).id;
    value(await fx.call('cancel_routine', { id: b }));
    const listed = value(await fx.call('list_routines', {}));
    expect(listed.routines).toEqual([
      expect.objectContaining({
        id: a,
        name: 'A',
        status: 'active',
        schedule: 'every weekday at 08:30 (Europe/Istanbul)',
        next_run: 'Mon 2026-03-30 08:30 (Europe/Istanbul)',
        last_result: null,
      }),
    ]);
    expect(value(await fx.call('list_routines', { status: 'cancelled' })).routines).toEqual([expect.objectContaining({ id: b, next_run: null })]);
  });

  it('shows in the cancel preview the runs that will not happen', async () => {
    const prompter = new ScriptedPrompter('allow-once');
    fx = await routinesKernel({ prompter });
    const id = value(await fx.call('create_routine', { name: 'Morning brief', prompt: 'p', schedule: weekdays })).id;
    expect(value(await fx.call('cancel_routine', { id }))).toMatchObject({ status: 'cancelled', stopped_run: false });
    const preview = prompter.asked.find((q) => q.tool === 'cancel_routine')!.preview!;
    expect(preview.facts).toEqual([
      { label: 'routine', value: `"Morning brief" (${id}), active: every weekday at 08:30 (Europe/Istanbul)` },
      {
        label: 'runs that will not happen',
        value: 'Mon 2026-03-30 08:30 (Europe/Istanbul); Tue 2026-03-31 08:30 (Europe/Istanbul); Wed 2026-04-01 08:30 (Europe/Istanbul), and every later one',
      },
    ]);
    expect(preview.text).toContain('Its history is kept.');
  });

  it('says which routine does not exist, without asking anyone', async () => {
    const prompter = new ScriptedPrompter('allow-once');
    fx = await routinesKernel({ prompter });
    expect(error(await fx.call('cancel_routine', { id: 'rt_nope' }))).toMatchObject({ code: 'NOT_FOUND', message: expect.stringContaining('"rt_nope"') });
    expect(prompter.asked).toHaveLength(0);
  });
});
