import { runTurn, type AgentEvent } from '../../../kernel/agent/agent-loop.js';
import { ReplayServer } from './replay-server.js';
import { bootKernel, firstMessages, KEY, request, type Booted } from './conversation.js';

/**
 * OpenAI's chat-completions stream as it comes over the wire (`stream: true`,
 * `stream_options.include_usage`): `chat.completion.chunk` events, a last chunk with the usage and
 * no choices, then `[DONE]`. Shapes as OpenAI documents and sends them (ids shortened).
 */
function chunk(choices: unknown[], usage: unknown = null): string {
  return `data: ${JSON.stringify({ id: 'chatcmpl-B9x', object: 'chat.completion.chunk', created: 1764550000, model: 'gpt-4o-2024-08-06', system_fingerprint: 'fp_f9f4fb6dbf', choices, usage })}\n\n`;
}

const TEXT_STREAM =
  chunk([{ index: 0, delta: { role: 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: null }]) +
  chunk([{ index: 0, delta: { content: 'Notes say:' }, logprobs: null, finish_reason: null }]) +
  chunk([{ index: 0, delta: { content: ' buy milk' }, logprobs: null, finish_reason: null }]) +
  chunk([{ index: 0, delta: { content: ', call Ada.' }, logprobs: null, finish_reason: null }]) +
  chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }]) +
  chunk([], { prompt_tokens: 141, completion_tokens: 9, total_tokens: 150, prompt_tokens_details: { cached_tokens: 0 } }) +
  'data: [DONE]\n\n';

const TOOL_STREAM =
  chunk([
    {
      index: 0,
      delta: {
        role: 'assistant',
        content: null,
        tool_calls: [{ index: 0, id: 'call_Qx1', type: 'function', function: { name: 'read_file', arguments: '' } }],
        refusal: null,
      },
      logprobs: null,
      finish_reason: null,
    },
  ]) +
  chunk([{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{"pa' } }] }, logprobs: null, finish_reason: null }]) +
  chunk([{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: 'th": "notes.txt"}' } }] }, logprobs: null, finish_reason: null }]) +
  chunk([
    {
      index: 0,
      delta: { tool_calls: [{ index: 1, id: 'call_Qx2', type: 'function', function: { name: 'get_weather', arguments: '{"city":' } }] },
      finish_reason: null,
    },
  ]) +
  chunk([{ index: 0, delta: { tool_calls: [{ index: 1, function: { arguments: ' "Paris"}' } }] }, logprobs: null, finish_reason: null }]) +
  chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: 'tool_calls' }]) +
  chunk([], { prompt_tokens: 120, completion_tokens: 40, total_tokens: 160 }) +
  'data: [DONE]\n\n';

const sse = (body: string) => ({ status: 200, headers: { 'content-type': 'text/event-stream; charset=utf-8' }, body });

describe('the openai-compatible adapter, streaming', () => {
  let booted: Booted;
  let server: ReplayServer;
  const provider = (extra: Record<string, unknown> = {}) =>
    booted.create({ kind: 'openai-compatible', preset: 'openai', baseUrl: `${server.url}/v1`, model: 'gpt-4o', apiKey: KEY, ...extra });

  beforeAll(async () => {
    booted = await bootKernel();
    server = await ReplayServer.start();
  });
  afterAll(async () => {
    await server.close();
    await booted.fx.close();
  });
  beforeEach(() => server.reset());

  it('asks for a stream, passes each piece of text on as it arrives, and returns the whole reply with its usage', async () => {
    server.reply(sse(TEXT_STREAM));
    const pieces: string[] = [];
    const reply = await provider().chat(request(firstMessages(), { onText: (t) => pieces.push(t) }));
    expect(pieces).toEqual(['Notes say:', ' buy milk', ', call Ada.']);
    expect(reply).toEqual({ content: 'Notes say: buy milk, call Ada.', toolCalls: [], usage: { inputTokens: 141, outputTokens: 9 }, finishReason: 'stop' });
    const body = server.request(0).body;
    expect(body).toMatchObject({ stream: true, stream_options: { include_usage: true }, temperature: 0.2 });
    expect(server.request(0).headers.accept).toContain('text/event-stream');
  });

  it('assembles tool calls from their fragments, in order, only once the stream is complete', async () => {
    server.reply(sse(TOOL_STREAM));
    const pieces: string[] = [];
    const reply = await provider().chat(request(firstMessages(), { onText: (t) => pieces.push(t) }));
    expect(pieces).toEqual([]);
    expect(reply.toolCalls).toEqual([
      { id: 'call_Qx1', name: 'read_file', arguments: { path: 'notes.txt' } },
      { id: 'call_Qx2', name: 'get_weather', arguments: { city: 'Paris' } },
    ]);
    expect(reply.finishReason).toBe('tool_calls');
  });

  it('does not ask for a stream without onText, and reads a server that answers plain JSON anyway', async () => {
    server.reply({ status: 200, body: { choices: [{ message: { role: 'assistant', content: 'plain' }, finish_reason: 'stop' }] } });
    await provider().chat(request(firstMessages()));
    expect(server.request(0).body).not.toHaveProperty('stream');
    server.reply({ status: 200, body: { choices: [{ message: { role: 'assistant', content: 'plain anyway' }, finish_reason: 'stop' }] } });
    const pieces: string[] = [];
    expect((await provider().chat(request(firstMessages(), { onText: (t) => pieces.push(t) }))).content).toBe('plain anyway');
  });

  it('an error event inside the stream is the provider error, with its message', async () => {
    server.reply(
      sse(
        `${chunk([{ index: 0, delta: { content: 'Hal' }, finish_reason: null }])}data: {"error":{"message":"The server had an error while processing your request.","type":"server_error"}}\n\n`,
      ),
    );
    await expect(provider().chat(request(firstMessages(), { onText: () => undefined }))).rejects.toMatchObject({
      name: 'ProviderError',
      message: 'The server had an error while processing your request.',
    });
  });

  it('the agent loop streams when asked: text_delta events as the answer arrives, tools run only after the complete reply, same temperature', async () => {
    const fx = booted.fx;
    const conv = await fx.kernel.conversations.create();
    // First the tool-call stream (no tool named read_file in this kernel: the loop answers UNKNOWN_TOOL), then the answer.
    server.reply(sse(TOOL_STREAM), sse(TEXT_STREAM));
    const events: AgentEvent[] = [];
    const r = await runTurn(fx.kernel, {
      provider: provider(),
      model: 'gpt-4o',
      conversationId: conv.id,
      history: [],
      userMessage: 'What do my notes say?',
      stream: true,
      onEvent: (e) => events.push(e),
    });
    expect(r.stopReason).toBe('final');
    expect(r.answer).toBe('Notes say: buy milk, call Ada.');
    const order = events.filter((e) => e.type === 'text_delta' || e.type === 'tool_end').map((e) => (e.type === 'text_delta' ? e.text : `tool:${e.step.tool}`));
    expect(order).toEqual(['tool:read_file', 'tool:get_weather', 'Notes say:', ' buy milk', ', call Ada.']);
    expect(server.received.map((q) => [q.body.stream, q.body.temperature])).toEqual([
      [true, 0.2],
      [true, 0.2],
    ]);
  });
});
