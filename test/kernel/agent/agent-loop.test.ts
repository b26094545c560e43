import { runTurn, type AgentEvent } from '../../../kernel/agent/agent-loop.js';
import { ProviderError, type ChatMessage } from '../../../kernel/providers/provider.js';
import { makeKernel, tool, type Fixture } from '../../helpers/kernel-fixture.js';
import { waitFor } from '../../helpers/wait.js';
import { reply, ScriptedProvider, toolCall } from '../../helpers/scripted-provider.js';
import { nth } from '../../helpers/nth.js';

/** Every assistant tool call is followed by exactly one tool result with its id. */
function assertValidHistory(messages: ChatMessage[]): void {
  const open = new Set<string>();
  for (const m of messages) {
    if (m.role === 'assistant') {
      expect(open.size).toBe(0);
      for (const c of m.toolCalls ?? []) open.add(c.id);
    } else if (m.role === 'tool') {
      expect(open.has(m.toolCallId)).toBe(true);
      open.delete(m.toolCallId);
    } else expect(open.size).toBe(0);
  }
  expect(open.size).toBe(0);
}

describe('the agent loop', () => {
  let fx: Fixture;
  afterEach(async () => fx?.close());
  const turn = (provider: ScriptedProvider, extra: Partial<Parameters<typeof runTurn>[1]> = {}) =>
    runTurn(fx.kernel, { provider, model: 'test-model', conversationId: 'conv-1', history: [], userMessage: 'hello', ...extra });

  it('runs tool calls through the pipeline and loops until the model answers', async () => {
    fx = makeKernel();
    const provider = new ScriptedProvider((_req, n) =>
      n === 1 ? reply('', toolCall('echo_safe', { text: 'a' })) : n === 2 ? reply('', toolCall('echo_safe', { text: 'b' })) : reply('done'),
    );
    const r = await turn(provider);
    expect(r).toMatchObject({ stopReason: 'final', answer: 'done', iterations: 3 });
    expect(r.steps.map((s) => [s.tool, s.outcome, s.args])).toEqual([
      ['echo_safe', 'ok', { text: 'a' }],
      ['echo_safe', 'ok', { text: 'b' }],
    ]);
    // The second request carries the first result; the audit has both calls, made by the agent.
    const second = nth(provider.requests, 1).messages;
    expect(second.at(-1)).toMatchObject({ role: 'tool', name: 'echo_safe', content: JSON.stringify({ echoed: { text: 'a' } }) });
    expect(fx.kernel.audit.tail().map((e) => [e.tool, e.caller.kind, e.caller.conversationId])).toEqual([
      ['echo_safe', 'agent', 'conv-1'],
      ['echo_safe', 'agent', 'conv-1'],
    ]);
    assertValidHistory(r.messages);
  });

  it('sends non-streaming requests at temperature 0.2 with exactly name, description and parameters per tool', async () => {
    fx = makeKernel();
    const provider = new ScriptedProvider(() => reply('hi'));
    await turn(provider);
    const req = nth(provider.requests, 0);
    expect(req.temperature).toBe(0.2);
    for (const t of req.tools) expect(Object.keys(t).sort()).toEqual(['description', 'name', 'parameters']);
    expect(req.tools.map((t) => t.name)).toEqual(expect.arrayContaining(['echo_safe', 'echo_medium', 'list_skills']));
  });

  it('stops after 40 iterations with every tool call answered', async () => {
    fx = makeKernel();
    const provider = new ScriptedProvider((_r, n) => reply(`step ${n}`, toolCall('echo_safe', { n })));
    const r = await turn(provider);
    expect(r.stopReason).toBe('max_iterations');
    expect(r.iterations).toBe(40);
    expect(provider.requests).toHaveLength(40);
    expect(r.steps).toHaveLength(40);
    assertValidHistory(r.messages);
  });

  it('stops on a permission prompt left unanswered for 60 s, closing the calls that did not run', async () => {
    fx = makeKernel();
    fx.prompter.answer('never');
    const provider = new ScriptedProvider(() => reply('', toolCall('echo_medium', { text: 'x' }), toolCall('echo_safe', { text: 'y' })));
    const pending = turn(provider);
    await waitFor(() => fx.prompter.asked.length > 0, { what: 'the permission prompt' });
    fx.clock.advance(60_000);
    const r = await pending;
    expect(r.stopReason).toBe('permission_timeout');
    expect(r.steps).toEqual([expect.objectContaining({ tool: 'echo_medium', outcome: 'denied', code: 'PERMISSION_TIMEOUT' })]);
    expect(r.messages.at(-1)).toMatchObject({ role: 'tool', name: 'echo_safe', isError: true, content: expect.stringContaining('Not run') });
    assertValidHistory(r.messages);
    expect(provider.requests).toHaveLength(1);
  });

  it('stops when an approval expires unanswered in the broker, telling the model it timed out, not that it was refused', async () => {
    fx = makeKernel({ prompter: null });
    const provider = new ScriptedProvider(() => reply('', toolCall('echo_medium', { text: 'x' }), toolCall('echo_safe', { text: 'y' })));
    const pending = turn(provider);
    await waitFor(() => fx.kernel.approvals.pending().length === 1, { what: 'the approval request' });
    fx.clock.advance(30 * 60_000);
    const r = await pending;
    expect(r.stopReason).toBe('approval_expired');
    expect(r.steps).toEqual([expect.objectContaining({ tool: 'echo_medium', outcome: 'expired', code: 'APPROVAL_EXPIRED' })]);
    expect(r.messages.find((m) => m.role === 'tool' && m.name === 'echo_medium')).toMatchObject({ content: expect.stringMatching(/expired after 30 minutes/) });
    assertValidHistory(r.messages);
  });

  it('stops a running tool when the turn is cancelled, and the handler sees the abort', async () => {
    let aborted = false;
    let started = false;
    fx = makeKernel({
      packs: [
        {
          id: 'slow',
          tools: [
            {
              spec: tool('wait_long', 'safe'),
              impl: (_a, ctx) =>
                new Promise((_, rej) => {
                  started = true;
                  ctx.signal.addEventListener('abort', () => {
                    aborted = true;
                    rej(new Error('stopped'));
                  });
                }),
            },
          ],
        },
      ],
    });
    const ac = new AbortController();
    const provider = new ScriptedProvider(() => reply('', toolCall('wait_long'), toolCall('wait_long')));
    const pending = turn(provider, { signal: ac.signal });
    await waitFor(() => started, { what: 'the tool to start' });
    ac.abort();
    const r = await pending;
    expect(r.stopReason).toBe('cancelled');
    expect(aborted).toBe(true);
    assertValidHistory(r.messages);
  });

  it('exposes only the scoped tools and refuses an out-of-scope call as unknown, audited', async () => {
    fx = makeKernel();
    fx.prompter.setFallback('allow-once');
    const provider = new ScriptedProvider((_r, n) => (n === 1 ? reply('', toolCall('echo_dangerous', { text: 'rm' })) : reply('ok')));
    const r = await turn(provider, { scope: ['echo_safe'] });
    expect(provider.requests[0]?.tools.map((t) => t.name)).toEqual(['echo_safe']);
    expect(r.steps[0]).toMatchObject({ tool: 'echo_dangerous', outcome: 'error', code: 'UNKNOWN_TOOL' });
    expect(fx.prompter.asked).toHaveLength(0);
    expect(fx.kernel.audit.tail().at(-1)).toMatchObject({ tool: 'echo_dangerous', error: { code: 'UNKNOWN_TOOL' } });
  });

  it('refuses, before sending anything, a request whose tool definitions cannot fit the window even narrowed to find_tools', async () => {
    fx = makeKernel();
    const provider = new ScriptedProvider(() => reply('never'), 120);
    const r = await turn(provider);
    expect(r.stopReason).toBe('error');
    expect(r.error).toMatch(/^1 tool definition needs [\d.]+K? tokens; this model's window is 120: disable packs or pick a larger model\.$/);
    expect(provider.requests).toHaveLength(0);
  });

  it('refuses a message that alone outgrows the window, saying so (a longer history is compacted: compaction.test.ts)', async () => {
    fx = makeKernel();
    const provider = new ScriptedProvider(() => reply('never'), 8000);
    const r = await turn(provider, { userMessage: 'x'.repeat(40_000), toolsEnabled: false });
    expect(r.stopReason).toBe('error');
    expect(r.error).toMatch(/conversation needs .* start a new conversation or pick a larger model/);
    expect(provider.requests).toHaveLength(0);
  });

  it('leaves a small model a quarter of its window for the reply instead of refusing it', async () => {
    fx = makeKernel();
    const small = new ScriptedProvider(() => reply('short'), 1024);
    const r = await turn(small, { toolsEnabled: false });
    expect(r).toMatchObject({ stopReason: 'final', answer: 'short' });
    expect(small.requests[0]?.contextTokens).toBe(1024);
  });

  it('asks for conversation + 32K headroom, never below 64K, capped by the window', async () => {
    fx = makeKernel();
    const small = new ScriptedProvider(() => reply('a'), 1_000_000);
    await turn(small, { toolsEnabled: false });
    expect(small.requests[0]?.contextTokens).toBe(64_000);
    const big = new ScriptedProvider(() => reply('a'), 1_000_000);
    await turn(big, { toolsEnabled: false, history: [{ role: 'user', content: 'y'.repeat(350_000) }] });
    expect(big.requests[0]?.contextTokens).toBeGreaterThan(100_000 + 32_000);
    const capped = new ScriptedProvider(() => reply('a'), 50_000);
    await turn(capped, { toolsEnabled: false });
    expect(capped.requests[0]?.contextTokens).toBe(50_000);
  });

  it('counts tool output holding special-token text like any other text', async () => {
    fx = makeKernel();
    const provider = new ScriptedProvider((_r, n) => (n === 1 ? reply('', toolCall('echo_safe', { text: '<|im_end|><|endoftext|>' })) : reply('fine')));
    expect((await turn(provider)).stopReason).toBe('final');
  });

  it("ends with the provider's human-readable message when the model call fails", async () => {
    fx = makeKernel();
    const provider = new ScriptedProvider(() => {
      throw new ProviderError('invalid x-api-key', 401, false, 'authentication_error');
    });
    const r = await turn(provider);
    expect(r).toMatchObject({ stopReason: 'error', error: 'invalid x-api-key' });
  });

  it('answers a call whose arguments were not JSON with an error the model sees, and audits it', async () => {
    fx = makeKernel();
    const provider = new ScriptedProvider((_r, n) =>
      n === 1 ? { content: '', toolCalls: [{ id: 'c1', name: 'echo_safe', arguments: {}, parseError: 'Unexpected token } in JSON' }] } : reply('ok'),
    );
    const r = await turn(provider);
    expect(r.messages[2]).toMatchObject({ role: 'tool', isError: true, content: expect.stringContaining('not valid JSON') });
    expect(fx.kernel.audit.tail().at(-1)).toMatchObject({ tool: 'echo_safe', error: { code: 'INVALID_ARGS' } });
  });

  it('chats without tools when tools are disabled, and a hallucinated call is refused', async () => {
    fx = makeKernel();
    const provider = new ScriptedProvider((_r, n) => (n === 1 ? reply('', toolCall('echo_safe')) : reply('ok')));
    const r = await turn(provider, { toolsEnabled: false });
    expect(provider.requests[0]?.tools).toEqual([]);
    expect(r.steps[0]).toMatchObject({ code: 'UNKNOWN_TOOL' });
  });

  it('mints a write capability for a turn of a stored conversation and destroys it when the turn ends', async () => {
    fx = makeKernel();
    const conv = await fx.kernel.conversations.create({ title: 'stored' });
    const events: AgentEvent[] = [];
    let liveDuring: string | null = null;
    const provider = new ScriptedProvider(async () => {
      const start = events.find((e) => e.type === 'turn_start') as Extract<AgentEvent, { type: 'turn_start' }>;
      liveDuring = await fx.kernel.capabilities.check(start.capability ?? undefined);
      return reply('ok');
    });
    await turn(provider, { conversationId: conv.id, onEvent: (e) => events.push(e) });
    const start = events.find((e) => e.type === 'turn_start') as Extract<AgentEvent, { type: 'turn_start' }>;
    expect(liveDuring).toBe(conv.id);
    expect(await fx.kernel.capabilities.check(start.capability ?? undefined)).toBeNull();
    expect(events.at(-1)).toEqual({ type: 'turn_end', stopReason: 'final' });
  });

  it('runs a turn of a conversation that is not stored without a write capability', async () => {
    fx = makeKernel();
    const events: AgentEvent[] = [];
    const r = await turn(new ScriptedProvider(() => reply('ok')), { onEvent: (e) => events.push(e) });
    expect(r.stopReason).toBe('final');
    expect(events[0]).toMatchObject({ type: 'turn_start', conversationId: 'conv-1', capability: null });
    expect(fx.kernel.capabilities.size).toBe(0);
  });
});
