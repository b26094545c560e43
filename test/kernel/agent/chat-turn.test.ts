import { runChatTurn } from '../../../kernel/agent/chat-turn.js';
import { SUMMARY_PREFIX } from '../../../kernel/agent/compaction.js';
import type { ChatRequest, ChatResponse } from '../../../kernel/providers/provider.js';
import { makeKernel, type Fixture } from '../../helpers/kernel-fixture.js';
import { reply, ScriptedProvider, toolCall, type Script } from '../../helpers/scripted-provider.js';

const isSummary = (r: ChatRequest) => r.tools.length === 0 && /^You compact a conversation/.test(r.messages[0]?.content ?? '');
const isTitle = (r: ChatRequest) => r.tools.length === 0 && /^Write a title/.test(r.messages[0]?.content ?? '');

/** A scripted model under another configured name. */
function named(name: string, script: Script, window?: number): ScriptedProvider {
  const p = new ScriptedProvider(script, window);
  Object.defineProperty(p, 'name', { value: name });
  return p;
}

describe('a turn of a stored conversation', () => {
  let fx: Fixture;
  afterEach(async () => fx?.close());

  it('keeps going past the window: the summary is stored, replayed in place of what it replaced, and compacted again later', async () => {
    fx = makeKernel();
    const store = fx.kernel.conversations;
    const conv = await store.create();
    let summaries = 0;
    const provider = named(
      'scripted',
      (req) => {
        if (isTitle(req)) return reply('Long talk');
        if (isSummary(req)) return reply(`summary ${++summaries}`);
        return reply(`answer ${'a'.repeat(3_000)}`);
      },
      8_000,
    );
    const send = (text: string) =>
      runChatTurn(fx.kernel, { provider, model: 'm', conversationId: conv.id, userMessage: text, toolsEnabled: false, titles: false });

    let compactedAt = 0;
    for (let i = 1; i <= 12 && summaries < 2; i++) {
      const r = await send(`message ${i} ${'q'.repeat(3_000)}`);
      expect(r.stopReason).toBe('final');
      if (r.compaction && !compactedAt) compactedAt = i;
    }
    expect(compactedAt).toBeGreaterThan(1);
    expect(summaries).toBe(2);

    const stored = await store.summaries!(conv.id);
    expect(stored.map((s) => s.content)).toEqual(['summary 1', 'summary 2']);
    expect(stored[0]).toMatchObject({ provider: 'scripted', model: 'm' });
    expect(stored[1]!.throughSeq).toBeGreaterThan(stored[0]!.throughSeq);
    // The second summary was made from the first one and the turns after it.
    const second = provider.requests.filter(isSummary)[1]!;
    expect(second.messages[1]?.content).toContain('Earlier summary:\nsummary 1');

    // Replayed: the newest summary, then every message after it, starting at a turn.
    const history = await store.history(conv.id);
    expect(history[0]).toEqual({ role: 'system', content: `${SUMMARY_PREFIX}summary 2` });
    expect(history[1]?.role).toBe('user');
    // Nothing is lost from the record: every message is still stored.
    const all = await store.messages!(conv.id);
    expect(all.length).toBe((await store.info(conv.id)).messages);
    expect(all.length).toBeGreaterThan(history.length);
    expect(all.at(-history.length + 1)?.content).toBe(history[1]?.content);
  }, 30_000);

  it('names the conversation after its first exchange with one request without tools, in the background', async () => {
    fx = makeKernel();
    const conv = await fx.kernel.conversations.create();
    let releaseTitle: (r: ChatResponse) => void = () => {};
    const provider = named('scripted', (req, n) => {
      if (isTitle(req)) return new Promise<ChatResponse>((resolve) => (releaseTitle = resolve));
      return n === 1 ? reply('', toolCall('echo_safe', { text: 'x' })) : reply('Paris is the capital.');
    });
    const r = await runChatTurn(fx.kernel, {
      provider,
      model: 'm',
      conversationId: conv.id,
      userMessage: '  What is the capital\nof France, and why is it that one?',
    });
    // The turn is done while the title request still waits: naming never holds a turn up.
    expect(r.stopReason).toBe('final');
    expect((await fx.kernel.conversations.info(conv.id)).title).toBe('What is the capital of France, and why is it that one?');
    const titleRequest = provider.requests.find(isTitle)!;
    expect(titleRequest.tools).toEqual([]);
    expect(titleRequest.messages[1]?.content).toContain('Assistant: Paris is the capital.');
    releaseTitle(reply('Title: "Capital of France."'));
    expect(await r.title).toBe('Capital of France');
    expect((await fx.kernel.conversations.info(conv.id)).title).toBe('Capital of France');

    // Only the first exchange is named.
    const again = await runChatTurn(fx.kernel, { provider, model: 'm', conversationId: conv.id, userMessage: 'and Italy?' });
    expect(again.title).toBeNull();
    expect(provider.requests.filter(isTitle)).toHaveLength(1);
  });

  it('keeps the fallback title when naming fails or is cancelled', async () => {
    fx = makeKernel();
    const failing = named('scripted', (req) => {
      if (isTitle(req)) throw new Error('no titles today');
      return reply('ok');
    });
    const a = await fx.kernel.conversations.create();
    const ra = await runChatTurn(fx.kernel, { provider: failing, model: 'm', conversationId: a.id, userMessage: 'x'.repeat(100) });
    expect(await ra.title).toBeNull();
    expect((await fx.kernel.conversations.info(a.id)).title).toBe(`${'x'.repeat(59)}…`);

    const leaving = new AbortController();
    const hanging = named('scripted', (req) =>
      isTitle(req) ? new Promise<ChatResponse>((_, reject) => req.signal.addEventListener('abort', () => reject(new Error('aborted')))) : reply('ok'),
    );
    const b = await fx.kernel.conversations.create();
    const rb = await runChatTurn(fx.kernel, { provider: hanging, model: 'm', conversationId: b.id, userMessage: 'hello there', titleSignal: leaving.signal });
    leaving.abort();
    expect(await rb.title).toBeNull();
    expect((await fx.kernel.conversations.info(b.id)).title).toBe('hello there');
  });

  it('shows and stores the reasoning of each reply but never sends it back to the model', async () => {
    fx = makeKernel();
    const store = fx.kernel.conversations;
    const conv = await store.create();
    const provider = named('scripted', (_req, n) =>
      n === 1
        ? { ...reply('', toolCall('echo_safe', { text: 'x' })), reasoning: 'THOUGHT-ONE: call the echo tool' }
        : n === 2
          ? { ...reply('done'), reasoning: 'THOUGHT-TWO: it echoed' }
          : reply('again'),
    );
    const r = await runChatTurn(fx.kernel, { provider, model: 'm', conversationId: conv.id, userMessage: 'go', titles: false });
    expect(r.reasoning).toEqual([
      { message: 1, text: 'THOUGHT-ONE: call the echo tool' },
      { message: 3, text: 'THOUGHT-TWO: it echoed' },
    ]);
    await runChatTurn(fx.kernel, { provider, model: 'm', conversationId: conv.id, userMessage: 'more', titles: false });
    // Neither the second request of the turn nor the next turn carries any reasoning.
    for (const req of provider.requests.slice(1)) expect(JSON.stringify(req.messages)).not.toContain('THOUGHT');
    expect(JSON.stringify(await store.history(conv.id))).not.toContain('THOUGHT');
    expect((await store.messages!(conv.id)).map((m) => m.reasoning)).toEqual([
      null,
      'THOUGHT-ONE: call the echo tool',
      null,
      'THOUGHT-TWO: it echoed',
      null,
      null,
    ]);
  });

  it('records the provider and model of each reply, and a switch mid-conversation', async () => {
    fx = makeKernel();
    const store = fx.kernel.conversations;
    const conv = await store.create();
    const first = named('openai', () => reply('from the first'));
    const second = named('anthropic', () => reply('from the second'));
    const r1 = await runChatTurn(fx.kernel, { provider: first, model: 'gpt-x', conversationId: conv.id, userMessage: 'one', titles: false });
    expect(r1.switchedFrom).toBeUndefined();
    const r2 = await runChatTurn(fx.kernel, { provider: second, model: 'claude-y', conversationId: conv.id, userMessage: 'two', titles: false });
    expect(r2.switchedFrom).toEqual({ provider: 'openai', model: 'gpt-x' });
    const r3 = await runChatTurn(fx.kernel, { provider: second, model: 'claude-y', conversationId: conv.id, userMessage: 'three', titles: false });
    expect(r3.switchedFrom).toBeUndefined();

    expect((await store.messages!(conv.id)).map((m) => [m.role, m.content, m.provider, m.model])).toEqual([
      ['user', 'one', null, null],
      ['assistant', 'from the first', 'openai', 'gpt-x'],
      ['user', 'two', null, null],
      ['assistant', 'from the second', 'anthropic', 'claude-y'],
      ['user', 'three', null, null],
      ['assistant', 'from the second', 'anthropic', 'claude-y'],
    ]);
    expect(await store.info(conv.id)).toMatchObject({ provider: 'anthropic', model: 'claude-y' });
    // The second model got the first one's reply as history: a switch keeps the conversation.
    expect(second.requests[0]?.messages.map((m) => m.content)).toEqual(['one', 'from the first', 'two']);
  });
});
