import { runTurn, type AgentEvent } from '../../../kernel/agent/agent-loop.js';
import { SUMMARY_PREFIX } from '../../../kernel/agent/compaction.js';
import { ProviderError, type ChatMessage, type ChatRequest } from '../../../kernel/providers/provider.js';
import { makeKernel, type Fixture } from '../../helpers/kernel-fixture.js';
import { reply, ScriptedProvider, toolCall } from '../../helpers/scripted-provider.js';
import { nth } from '../../helpers/nth.js';

/** True for the loop's summary request (no tools, the compaction prompt). */
const isSummary = (r: ChatRequest) => r.tools.length === 0 && /^You compact a conversation/.test(r.messages[0]?.content ?? '');

/** `turns` old exchanges of about `size` characters each: a user message, a tool call with its result, an answer. */
function longHistory(turns: number, size: number): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (let i = 1; i <= turns; i++) {
    const call = toolCall('echo_safe', { text: `t${i}` });
    out.push(
      { role: 'user', content: `question ${i} ${'q'.repeat(size)}` },
      { role: 'assistant', content: '', toolCalls: [call] },
      { role: 'tool', toolCallId: call.id, name: 'echo_safe', content: `result ${i} ${'r'.repeat(size)}` },
      { role: 'assistant', content: `answer ${i}` },
    );
  }
  return out;
}

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

describe('compaction in the agent loop', () => {
  let fx: Fixture;
  afterEach(async () => fx?.close());
  const turn = (provider: ScriptedProvider, extra: Partial<Parameters<typeof runTurn>[1]> = {}) =>
    runTurn(fx.kernel, { provider, model: 'm', conversationId: 'conv-1', history: [], userMessage: 'the newest question', toolsEnabled: false, ...extra });

  it('summarises the oldest turns of a history larger than the window, and the turn goes on with the summary', async () => {
    fx = makeKernel();
    const provider = new ScriptedProvider((req) => (isSummary(req) ? reply('They asked ten questions; all were answered.') : reply('fresh answer')), 8_000);
    const events: AgentEvent[] = [];
    // About 10 x 2 x 3000 characters: far more than an 8K window holds.
    const history = longHistory(10, 3_000);
    const r = await turn(provider, { history, onEvent: (e) => events.push(e) });

    expect(r).toMatchObject({ stopReason: 'final', answer: 'fresh answer' });
    expect(provider.requests).toHaveLength(2);
    const summaryRequest = nth(provider.requests, 0);
    expect(isSummary(summaryRequest)).toBe(true);
    // A plain transcript of what is summarised, tool results shortened; the oldest text gives way
    // when the transcript alone would not fit the summary request.
    const transcript = summaryRequest.messages[1]?.content ?? '';
    expect(transcript.startsWith('Compact this conversation:\n\n(the oldest part is left out)')).toBe(true);
    expect(/Assistant called echo_safe \{"text":"t\d+"\}\n\necho_safe returned: result \d+ r+… \(\d+ more characters\)/.test(transcript)).toBe(true);
    expect(transcript.length).toBeLessThan(8_000 * 3.5);

    const sent = nth(provider.requests, 1).messages;
    // The summary stands in for what it replaced, as a system message; the rest starts at a turn
    // boundary (every kept tool call keeps its result) and the new message goes verbatim.
    expect(sent[0]).toEqual({ role: 'system', content: `${SUMMARY_PREFIX}They asked ten questions; all were answered.` });
    expect(sent[1]?.role).toBe('user');
    expect(sent.at(-1)).toEqual({ role: 'user', content: 'the newest question' });
    assertValidHistory(sent);
    expect(r.compaction).toEqual({ summary: 'They asked ten questions; all were answered.', replaced: expect.any(Number) });
    const replaced = r.compaction!.replaced;
    expect(replaced % 4).toBe(0);
    expect(sent.slice(1, -1)).toEqual(history.slice(replaced));
    expect(events.find((e) => e.type === 'compaction')).toEqual({ type: 'compaction', replaced, summaryTokens: expect.any(Number) });
  }, 20_000);

  it('does not compact a conversation that fits comfortably', async () => {
    fx = makeKernel();
    const provider = new ScriptedProvider(() => reply('ok'), 8_000);
    const r = await turn(provider, { history: longHistory(2, 100) });
    expect(provider.requests).toHaveLength(1);
    expect(r.compaction).toBeUndefined();
  });

  it('goes on uncompacted when the summary fails but the request still fits, and says why', async () => {
    fx = makeKernel();
    const provider = new ScriptedProvider((req) => {
      if (isSummary(req)) throw new ProviderError('rate limited', 429, true);
      return reply('answered anyway');
    }, 10_000);
    // Between 80% and 100% of a 10K window: compaction is tried, and the request fits without it.
    const history = longHistory(3, 4_700);
    const r = await turn(provider, { history });
    expect(r).toMatchObject({ stopReason: 'final', answer: 'answered anyway', compactionError: 'rate limited' });
    expect(r.compaction).toBeUndefined();
    expect(nth(provider.requests, 1).messages.slice(0, -1)).toEqual(history);
  });

  it('refuses a turn that does not fit when the summary fails, saying why', async () => {
    fx = makeKernel();
    const provider = new ScriptedProvider((req) => {
      if (isSummary(req)) throw new ProviderError('the model is overloaded', 529, true);
      return reply('never');
    }, 8_000);
    const r = await turn(provider, { history: longHistory(10, 3_000) });
    expect(r.stopReason).toBe('error');
    expect(r.error).toMatch(
      /^This conversation needs .* this model's window is 8\.0K: .* Compacting the earlier conversation failed: the model is overloaded\.$/,
    );
    expect(provider.requests.filter((q) => !isSummary(q))).toHaveLength(0);
  });

  it('refuses a new message that alone outgrows the window even after compacting', async () => {
    fx = makeKernel();
    const provider = new ScriptedProvider((req) => (isSummary(req) ? reply('short summary') : reply('never')), 8_000);
    const r = await turn(provider, { history: longHistory(1, 100), userMessage: 'x'.repeat(40_000) });
    expect(r.stopReason).toBe('error');
    expect(r.error).toMatch(/conversation needs .* start a new conversation or pick a larger model/);
    expect(provider.requests.filter((q) => !isSummary(q))).toHaveLength(0);
  });

  it('never compacts a turn that asks not to, refusing it as before', async () => {
    fx = makeKernel();
    const provider = new ScriptedProvider(() => reply('never'), 8_000);
    const r = await turn(provider, { history: longHistory(10, 3_000), compact: false });
    expect(r.stopReason).toBe('error');
    expect(provider.requests).toHaveLength(0);
  });

  it('stops a turn cancelled while its history is being summarised', async () => {
    fx = makeKernel();
    const ac = new AbortController();
    const provider = new ScriptedProvider((req) => {
      if (isSummary(req)) {
        ac.abort();
        throw new Error('aborted');
      }
      return reply('never');
    }, 8_000);
    const r = await turn(provider, { history: longHistory(10, 3_000), signal: ac.signal });
    expect(r.stopReason).toBe('cancelled');
    expect(provider.requests).toHaveLength(1);
  });
});
