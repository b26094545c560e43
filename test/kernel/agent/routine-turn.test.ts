import type { AgentEvent } from '../../../kernel/agent/agent-loop.js';
import type { PackApi } from '../../../kernel/packs/pack-api.js';
import { echoPack, flush, makeKernel, tool, type Fixture } from '../../helpers/kernel-fixture.js';
import { reply, ScriptedProvider, toolCall, type Script } from '../../helpers/scripted-provider.js';

/** A kernel with the echo tools, a pack registered in code whose api the test holds, and a scripted model as the active provider. */
async function routineKernel(options: Parameters<typeof makeKernel>[0] = {}): Promise<{ fx: Fixture; api: PackApi; use(script: Script): ScriptedProvider }> {
  let api: PackApi | undefined;
  const fx = makeKernel({
    packs: [
      echoPack(),
      {
        id: 'routine-host',
        version: '1.0.0',
        tools: [
          {
            spec: tool('judged_command', 'medium', 'write'),
            impl: {
              run: (args: Record<string, unknown>) => ({ ran: args.text }),
              assess: (args: Record<string, unknown>) =>
                args.text === 'inline' ? { verdict: 'ask' as const, rule: 'inline-code', reason: 'runs inline code' } : null,
            },
          },
        ],
        activate: (a) => void (api = a),
      },
    ],
    ...options,
  });
  let provider = new ScriptedProvider(() => reply('nothing scripted'));
  fx.kernel.providers.register('scripted', () => provider, 'test');
  fx.kernel.providerSettings.put({ name: 'scripted-one', kind: 'scripted', model: 'model-a' });
  await fx.kernel.start();
  if (!api) throw new Error('the pack was not activated');
  return {
    fx,
    api,
    use(script) {
      provider = new ScriptedProvider(script);
      return provider;
    },
  };
}

const base = { routineId: 'r-1', runId: 'run-1', provider: 'scripted-one', model: 'model-a', prompt: 'do the thing' };

describe('api.agent: agent turns run as routines', () => {
  let fx: Fixture;
  afterEach(async () => fx?.close());

  it('gives the active provider and model to pin, and null when none is configured', async () => {
    const k = await routineKernel();
    fx = k.fx;
    expect(k.api.agent.active()).toEqual({ provider: 'scripted-one', model: 'model-a' });
    fx.kernel.providerSettings.remove('scripted-one');
    expect(k.api.agent.active()).toBeNull();
  });

  it('lists the tools with their danger, and which ones never take a standing approval', async () => {
    const k = await routineKernel();
    fx = k.fx;
    const byName = Object.fromEntries(k.api.agent.tools().map((t) => [t.name, t]));
    expect(byName.echo_dangerous).toMatchObject({ plugin: 'echo-pack', danger: 'dangerous', effect: 'write', asksEveryTime: false });
    expect(byName.echo_delete).toMatchObject({ effect: 'delete', asksEveryTime: true });
    expect(byName.echo_confirm).toMatchObject({ confirm: 'always', asksEveryTime: true });
  });

  it('runs the turn through the pipeline as caller kind routine, with no write capability minted', async () => {
    const k = await routineKernel();
    fx = k.fx;
    k.use((_r, n) => (n === 1 ? reply('', toolCall('echo_safe', { text: 'a' })) : reply('all done')));
    const events: AgentEvent[] = [];
    let liveDuringTurn = -1;
    const r = await k.api.agent.run({
      ...base,
      onEvent: (e) => {
        events.push(e);
        if (e.type === 'tool_end') liveDuringTurn = fx.kernel.capabilities.size;
      },
    });
    expect(r).toMatchObject({ stopReason: 'final', answer: 'all done' });
    expect(r.steps.map((s) => [s.tool, s.outcome])).toEqual([['echo_safe', 'ok']]);
    expect(events[0]).toMatchObject({ type: 'turn_start', capability: null });
    expect(liveDuringTurn).toBe(0);
    const line = fx.kernel.audit.tail().at(-1)!;
    expect(line.caller).toMatchObject({ kind: 'routine', id: 'r-1' });
    expect(line.caller.conversationId).toBeUndefined();
  });

  it('offers only the routine’s tools to the model', async () => {
    const k = await routineKernel();
    fx = k.fx;
    const provider = k.use(() => reply('ok'));
    await k.api.agent.run({ ...base, tools: ['echo_safe', 'echo_medium'] });
    expect(provider.requests[0]!.tools.map((t) => t.name).sort()).toEqual(['echo_medium', 'echo_safe']);
  });

  it('runs pre-approved tools without asking and asks the face for the others', async () => {
    const k = await routineKernel();
    fx = k.fx;
    fx.prompter.setFallback('allow-once');
    k.use((_r, n) => (n === 1 ? reply('', toolCall('echo_dangerous', { text: 'x' }), toolCall('echo_medium', { text: 'y' })) : reply('done')));
    const r = await k.api.agent.run({ ...base, preApproved: ['echo_dangerous'] });
    expect(r.steps.map((s) => [s.tool, s.outcome])).toEqual([
      ['echo_dangerous', 'ok'],
      ['echo_medium', 'ok'],
    ]);
    expect(fx.prompter.asked.map((q) => q.tool)).toEqual(['echo_medium']);
    expect(fx.kernel.audit.tail().map((l) => [l.tool, l.decision])).toEqual([
      ['echo_dangerous', 'allow:pre-approved'],
      ['echo_medium', 'allow:once'],
    ]);
  });

  it('never lets a pre-approval cover a delete or a confirm-always tool', async () => {
    const k = await routineKernel();
    fx = k.fx;
    fx.prompter.setFallback('deny-once');
    k.use((_r, n) => (n === 1 ? reply('', toolCall('echo_delete', { text: 'x' }), toolCall('echo_confirm', { text: 'y' })) : reply('done')));
    const r = await k.api.agent.run({ ...base, preApproved: ['echo_delete', 'echo_confirm'] });
    expect(fx.prompter.asked.map((q) => q.tool)).toEqual(['echo_delete', 'echo_confirm']);
    expect(r.steps.map((s) => s.outcome)).toEqual(['denied', 'denied']);
  });

  it('still asks about a pre-approved tool’s call the tool itself flags (a command the judge cannot vouch for)', async () => {
    const k = await routineKernel();
    fx = k.fx;
    fx.prompter.setFallback('deny-once');
    k.use((_r, n) => (n === 1 ? reply('', toolCall('judged_command', { text: 'plain' }), toolCall('judged_command', { text: 'inline' })) : reply('done')));
    const r = await k.api.agent.run({ ...base, preApproved: ['judged_command'] });
    expect(r.steps.map((s) => s.outcome)).toEqual(['ok', 'denied']);
    expect(fx.prompter.asked.map((q) => q.concern?.rule)).toEqual(['inline-code']);
  });

  it('lets a stored deny win over a pre-approval', async () => {
    const k = await routineKernel();
    fx = k.fx;
    fx.kernel.permissions.set({ tool: 'echo_medium', decision: 'deny', plugin: 'echo-pack', scope: 'forever' }, new Date(fx.clock.now()));
    k.use((_r, n) => (n === 1 ? reply('', toolCall('echo_medium', { text: 'x' })) : reply('done')));
    const r = await k.api.agent.run({ ...base, preApproved: ['echo_medium'] });
    expect(r.steps[0]).toMatchObject({ outcome: 'denied', code: 'PERMISSION_DENIED' });
    expect(fx.prompter.asked).toHaveLength(0);
  });

  it("grants a run's pre-approvals to the routine's own calls only, not to another caller that names the same session", async () => {
    const k = await routineKernel();
    fx = k.fx;
    const grant = fx.kernel.gate.preApprove('routine:r-1:run-9', ['echo_medium']);
    try {
      const mcp = await fx.kernel.invoke({ tool: 'echo_medium', args: { text: 'm' }, caller: { kind: 'mcp', id: 'x', sessionId: 'routine:r-1:run-9' } });
      const agent = await fx.kernel.invoke({ tool: 'echo_medium', args: { text: 'a' }, caller: { kind: 'agent', sessionId: 'routine:r-1:run-9' } });
      expect([mcp.ok, agent.ok]).toEqual([false, false]);
      expect(fx.prompter.asked.map((q) => q.tool)).toEqual(['echo_medium']);
      const own = await fx.kernel.invoke({ tool: 'echo_medium', args: { text: 'r' }, caller: { kind: 'routine', id: 'r-1', sessionId: 'routine:r-1:run-9' } });
      expect(own.ok).toBe(true);
      expect(fx.kernel.audit.tail().at(-1)).toMatchObject({ tool: 'echo_medium', decision: 'allow:pre-approved' });
    } finally {
      grant.dispose();
    }
  });

  it('ends the pre-approvals with the run', async () => {
    const k = await routineKernel();
    fx = k.fx;
    k.use(() => reply('done'));
    await k.api.agent.run({ ...base, preApproved: ['echo_medium'] });
    const after = await fx.kernel.invoke({ tool: 'echo_medium', args: { text: 'z' }, caller: { kind: 'routine', id: 'r-1', sessionId: 'routine:r-1:run-1' } });
    expect(after.ok).toBe(false);
    expect(fx.prompter.asked.map((q) => q.tool)).toEqual(['echo_medium']);
  });

  it('refuses at once what needs a person when nobody is watching approvals (as memo serve does), and tells the model', async () => {
    const k = await routineKernel({ prompter: null, unattendedApprovals: 'refuse' });
    fx = k.fx;
    const provider = k.use((_r, n) => (n === 1 ? reply('', toolCall('echo_medium', { text: 'x' })) : reply('could not')));
    const r = await k.api.agent.run({ ...base });
    expect(r.stopReason).toBe('final');
    expect(r.steps[0]).toMatchObject({ outcome: 'denied', code: 'PERMISSION_DENIED' });
    expect(r.steps[0]!.summary).toMatch(/nobody was watching approvals/);
    expect(fx.kernel.approvals.pending()).toHaveLength(0);
    expect(provider.requests[1]!.messages.at(-1)).toMatchObject({ role: 'tool', isError: true });
  });

  it('waits for a face when someone watches approvals, and runs the call once answered', async () => {
    const k = await routineKernel({ prompter: null, unattendedApprovals: 'refuse' });
    fx = k.fx;
    const watching = fx.kernel.approvals.onChange(() => {});
    k.use((_r, n) => (n === 1 ? reply('', toolCall('echo_medium', { text: 'x' })) : reply('done')));
    const run = k.api.agent.run({ ...base });
    for (let i = 0; i < 20 && fx.kernel.approvals.pending().length === 0; i++) await flush();
    const [pending] = fx.kernel.approvals.pending();
    expect(pending!.request.caller).toMatchObject({ kind: 'routine', id: 'r-1' });
    fx.kernel.approvals.answer(pending!.id, 'allow-once', 'console');
    const r = await run;
    expect(r.steps[0]).toMatchObject({ outcome: 'ok' });
    watching.dispose();
  });

  it('stops when its signal is aborted', async () => {
    const k = await routineKernel();
    fx = k.fx;
    const ac = new AbortController();
    k.use((_r, n) => {
      if (n === 2) ac.abort();
      return reply('', toolCall('echo_safe', { n }));
    });
    const r = await k.api.agent.run({ ...base, signal: ac.signal });
    expect(r.stopReason).toBe('cancelled');
  });

  it('refuses a provider that is no longer configured, naming it', async () => {
    const k = await routineKernel();
    fx = k.fx;
    await expect(k.api.agent.run({ ...base, provider: 'gone' })).rejects.toMatchObject({ code: 'NOT_FOUND', message: expect.stringContaining('"gone"') });
  });

  it('fails, saying why, when its pinned local model cannot call tools and the routine needs them', async () => {
    const k = await routineKernel();
    fx = k.fx;
    fx.kernel.providerSettings.put({ name: 'local-one', kind: 'scripted', model: 'tiny', local: true });
    // The model never calls the probe's tool: it cannot call tools.
    k.use(() => reply('I do not know any magic number.'));
    await expect(k.api.agent.run({ ...base, provider: 'local-one', model: 'tiny', tools: ['echo_safe'] })).rejects.toMatchObject({
      code: 'VALIDATION',
      message: expect.stringMatching(/^The routine's model tiny \(local-one\) cannot call tools/),
    });
    // Without tools it just answers.
    expect(await k.api.agent.run({ ...base, provider: 'local-one', model: 'tiny', tools: [] })).toMatchObject({ stopReason: 'final' });
  });

  it('uses the routine’s own rate-limit budget', async () => {
    const k = await routineKernel({ rateLimits: { maxCalls: 2, duplicateCooldownMs: 0, globalMaxCalls: 0 } });
    fx = k.fx;
    // The agent's conversation used up its own budget: the routine's is untouched.
    for (const n of [1, 2]) await fx.kernel.invoke({ tool: 'echo_safe', args: { n }, caller: { kind: 'agent', conversationId: 'c' } });
    k.use((_r, n) => (n <= 3 ? reply('', toolCall('echo_safe', { n })) : reply('done')));
    const r = await k.api.agent.run({ ...base });
    expect(r.steps.map((s) => s.code ?? 'ok')).toEqual(['ok', 'ok', 'RATE_LIMITED']);
    expect(r.steps[2]!.summary).toMatch(/the routine r-1's/);
  });
});
