import { runTurn } from '../../../kernel/agent/agent-loop.js';
import { ReplayServer } from './replay-server.js';
import type { ChatMessage } from '../../../kernel/providers/provider.js';
import { bootKernel, firstMessages, KEY, NOTES, request, type Booted } from './conversation.js';

/** Anthropic's Messages reply with extended thinking on, calling a tool (shape as the API returns it). */
const ANTHROPIC_THINKING_TOOL = {
  id: 'msg_01Xk',
  type: 'message',
  role: 'assistant',
  model: 'claude-sonnet-4-5-20250929',
  content: [
    {
      type: 'thinking',
      thinking: 'The person asks about notes.txt; I should read it first.',
      signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds',
    },
    { type: 'tool_use', id: 'toolu_01A09q90qw90lq917835lq9', name: 'read_file', input: { path: 'notes.txt' } },
  ],
  stop_reason: 'tool_use',
  stop_sequence: null,
  usage: { input_tokens: 512, output_tokens: 96 },
};

/** Gemini generateContent with includeThoughts: a thought summary part, then the answer. */
const GEMINI_THOUGHTS = {
  candidates: [
    {
      content: {
        parts: [{ text: '**Reading the notes**\nThe list has two items.', thought: true }, { text: 'Buy milk and call Ada.' }],
        role: 'model',
      },
      finishReason: 'STOP',
      index: 0,
    },
  ],
  usageMetadata: { promptTokenCount: 120, candidatesTokenCount: 8, thoughtsTokenCount: 64, totalTokenCount: 192 },
  modelVersion: 'gemini-2.5-flash',
  responseId: 'mKxAaZ3kL9',
};

describe('effort and reasoning across providers', () => {
  let booted: Booted;
  let server: ReplayServer;

  beforeAll(async () => {
    booted = await bootKernel();
    server = await ReplayServer.start();
  });
  afterAll(async () => {
    await server.close();
    await booted.fx.close();
  });
  beforeEach(() => server.reset());

  it('OpenAI: reasoning_effort goes to reasoning models only', async () => {
    const make = (model: string) => booted.create({ kind: 'openai-compatible', preset: 'openai', baseUrl: `${server.url}/v1`, model, apiKey: KEY });
    const ok = { status: 200, body: { choices: [{ message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }] } };
    server.reply(ok, ok);
    await make('o3').chat(request(firstMessages(), { model: 'o3', effort: 'high' }));
    await make('gpt-4o').chat(request(firstMessages(), { model: 'gpt-4o', effort: 'high' }));
    expect(server.request(0).body.reasoning_effort).toBe('high');
    expect(server.request(1).body).not.toHaveProperty('reasoning_effort');
  });

  it('Anthropic: an effort turns extended thinking on (budget, no temperature), the thinking is returned as reasoning, and its signed block goes back with the tool call', async () => {
    const provider = booted.create({ kind: 'anthropic', baseUrl: server.url, model: 'claude-sonnet-4-5', apiKey: KEY });
    server.reply({ status: 200, body: ANTHROPIC_THINKING_TOOL });
    const first = await provider.chat(request(firstMessages(), { model: 'claude-sonnet-4-5', effort: 'medium' }));
    const body = server.request(0).body;
    expect(body.thinking).toEqual({ type: 'enabled', budget_tokens: 8192 });
    expect(body).not.toHaveProperty('temperature');
    expect(body.max_tokens).toBe(8192 + 8192);
    expect(first.reasoning).toBe('The person asks about notes.txt; I should read it first.');
    expect(first.toolCalls).toEqual([{ id: 'toolu_01A09q90qw90lq917835lq9', name: 'read_file', arguments: { path: 'notes.txt' } }]);

    server.reply({ status: 200, body: { ...ANTHROPIC_THINKING_TOOL, content: [{ type: 'text', text: 'Buy milk.' }], stop_reason: 'end_turn' } });
    const answered: ChatMessage[] = [
      ...firstMessages(),
      { role: 'assistant', content: first.content, toolCalls: first.toolCalls },
      { role: 'tool', toolCallId: first.toolCalls[0]!.id, name: 'read_file', content: NOTES },
    ];
    await provider.chat(request(answered, { model: 'claude-sonnet-4-5', effort: 'medium' }));
    const assistant = (server.request(1).body.messages as any[]).find((m) => m.role === 'assistant');
    expect(assistant.content[0]).toEqual(ANTHROPIC_THINKING_TOOL.content[0]);
    expect(assistant.content[1]).toMatchObject({ type: 'tool_use', id: 'toolu_01A09q90qw90lq917835lq9' });
  });

  it('Anthropic: models without thinking (Claude 3.5) keep the temperature and get no thinking block', async () => {
    const provider = booted.create({ kind: 'anthropic', baseUrl: server.url, model: 'claude-3-5-haiku-20241022', apiKey: KEY });
    server.reply({ status: 200, body: { ...ANTHROPIC_THINKING_TOOL, content: [{ type: 'text', text: 'hi' }] } });
    await provider.chat(request(firstMessages(), { model: 'claude-3-5-haiku-20241022', effort: 'high' }));
    expect(server.request(0).body).not.toHaveProperty('thinking');
    expect(server.request(0).body.temperature).toBe(0.2);
  });

  it('Gemini: thinkingBudget (2.5) or thinkingLevel (3) with includeThoughts; thought parts are reasoning, not the answer', async () => {
    const flash = booted.create({ kind: 'gemini', baseUrl: server.url, model: 'gemini-2.5-flash', apiKey: KEY });
    server.reply({ status: 200, body: GEMINI_THOUGHTS });
    const reply = await flash.chat(request(firstMessages(), { model: 'gemini-2.5-flash', effort: 'low' }));
    expect(server.request(0).body.generationConfig).toEqual({ temperature: 0.2, thinkingConfig: { thinkingBudget: 1024, includeThoughts: true } });
    expect(reply.content).toBe('Buy milk and call Ada.');
    expect(reply.reasoning).toBe('**Reading the notes**\nThe list has two items.');
    expect(reply.usage).toEqual({ inputTokens: 120, outputTokens: 72 });

    const pro = booted.create({ kind: 'gemini', baseUrl: server.url, model: 'gemini-3-pro-preview', apiKey: KEY });
    server.reply({ status: 200, body: GEMINI_THOUGHTS });
    await pro.chat(request(firstMessages(), { model: 'gemini-3-pro-preview', effort: 'medium' }));
    expect(server.request(1).body.generationConfig.thinkingConfig).toEqual({ thinkingLevel: 'high', includeThoughts: true });
    // No effort: the request is as before.
    server.reply({ status: 200, body: GEMINI_THOUGHTS });
    await flash.chat(request(firstMessages(), { model: 'gemini-2.5-flash' }));
    expect(server.request(2).body.generationConfig).toEqual({ temperature: 0.2 });
  });

  it('the agent loop passes the effort to every request of the turn', async () => {
    const conv = await booted.fx.kernel.conversations.create();
    const provider = booted.create({ kind: 'openai-compatible', preset: 'openai', baseUrl: `${server.url}/v1`, model: 'gpt-5', apiKey: KEY });
    server.reply({ status: 200, body: { choices: [{ message: { role: 'assistant', content: 'done' }, finish_reason: 'stop' }] } });
    const r = await runTurn(booted.fx.kernel, { provider, model: 'gpt-5', conversationId: conv.id, history: [], userMessage: 'hi', effort: 'low' });
    expect(r.answer).toBe('done');
    expect(server.request(0).body.reasoning_effort).toBe('low');
  });
});
