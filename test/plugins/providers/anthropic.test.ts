import type { ChatMessage, ToolDefinition } from '../../../kernel/index.js';
import { fixture, recorded, ReplayServer } from './replay-server.js';
import { bootKernel, firstMessages, KEY, request, USER, withResults, type Booted } from './conversation.js';

const MODEL = 'claude-sonnet-4-20250514';

describe('the anthropic adapter', () => {
  let booted: Booted;
  let server: ReplayServer;
  const provider = (extra: Record<string, unknown> = {}) => booted.create({ kind: 'anthropic', baseUrl: server.url, model: MODEL, apiKey: KEY, ...extra });
  const chat = (messages: ChatMessage[], extra: Record<string, unknown> = {}) => provider().chat(request(messages, { model: MODEL, ...extra }));

  beforeAll(async () => {
    booted = await bootKernel();
    server = await ReplayServer.start();
  });
  afterAll(async () => {
    await server.close();
    await booted.fx.close();
  });
  beforeEach(() => server.reset());

  it('sends the recorded first request: /v1/messages, x-api-key, anthropic-version, system on top, max_tokens', async () => {
    const exchange = fixture('anthropic/01-tool-use.json');
    server.reply(recorded('anthropic/01-tool-use.json'));
    await chat(firstMessages());
    const got = server.request(0);
    expect(got.path).toBe(exchange.request!.path);
    expect(got.headers['x-api-key']).toBe(KEY);
    expect(got.headers['anthropic-version']).toBe('2023-06-01');
    expect(got.headers).not.toHaveProperty('authorization');
    expect(got.body).toEqual(exchange.request!.body);
    for (const t of got.body.tools) expect(Object.keys(t).sort()).toEqual(['description', 'input_schema', 'name']);
  });

  it('parses text and tool_use blocks, stop_reason tool_use and usage', async () => {
    server.reply(recorded('anthropic/01-tool-use.json'));
    expect(await chat(firstMessages())).toEqual({
      content: "I'll look at both.",
      toolCalls: [
        { id: 'toolu_01A09q90qw90lq917835lq9', name: 'read_file', arguments: { path: 'notes.txt' } },
        { id: 'toolu_01B18r81rx81mr826724mr8', name: 'get_weather', arguments: { city: 'Paris', unit: 'celsius' } },
      ],
      usage: { inputTokens: 472, outputTokens: 91 },
      finishReason: 'tool_use',
    });
  });

  it('sends a whole tool conversation with both results in one user turn (is_error kept) and parses the final answer', async () => {
    const first = fixture('anthropic/01-tool-use.json');
    const second = fixture('anthropic/02-final-answer.json');
    server.reply(recorded('anthropic/01-tool-use.json'), recorded('anthropic/02-final-answer.json'));
    const p = provider();
    const calls = await p.chat(request(firstMessages(), { model: MODEL }));
    const final = await p.chat(request(withResults(calls), { model: MODEL }));
    expect(server.request(1).body).toEqual({ ...second.request!.body, tools: first.request!.body.tools });
    // Cached prompt tokens fill the window too: 310 + 200 read from the cache.
    expect(final).toEqual({
      content: "notes.txt says: buy milk, call Ada. The weather service failed, so I can't tell you about Paris.",
      toolCalls: [],
      usage: { inputTokens: 510, outputTokens: 28 },
      finishReason: 'end_turn',
    });
  });

  it('merges results and the user text after them into one user turn, results first; joins system messages; skips empty text', async () => {
    server.reply(recorded('anthropic/02-final-answer.json'));
    await chat([
      { role: 'system', content: 'one' },
      { role: 'user', content: USER },
      { role: 'assistant', content: '', toolCalls: [{ id: 'toolu_1', name: 'read_file', arguments: { path: 'a' } }] },
      { role: 'tool', toolCallId: 'toolu_1', name: 'read_file', content: 'A' },
      { role: 'user', content: 'and now?' },
      { role: 'system', content: 'two' },
      { role: 'user', content: 'please' },
      { role: 'assistant', content: '' },
      { role: 'assistant', content: 'ok' },
    ]);
    const body = server.request(0).body;
    expect(body.system).toBe('one\n\ntwo');
    expect(body.messages).toEqual([
      { role: 'user', content: USER },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'a' } }] },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: 'A' },
          { type: 'text', text: 'and now?' },
          { type: 'text', text: 'please' },
        ],
      },
      { role: 'assistant', content: 'ok' },
    ]);
  });

  it('defaults max_tokens to 4096 for Claude 3 models, uses the request bound when given, and keeps temperature within 0..1', async () => {
    server.reply(recorded('anthropic/02-final-answer.json'), recorded('anthropic/02-final-answer.json'));
    await chat(firstMessages(), { model: 'claude-3-haiku-20240307', temperature: 1.5 });
    await chat(firstMessages(), { maxOutputTokens: 200 });
    expect(server.request(0).body).toMatchObject({ model: 'claude-3-haiku-20240307', max_tokens: 4096, temperature: 1 });
    expect(server.request(1).body.max_tokens).toBe(200);
  });

  it('makes input_schema an object schema and drops $schema', async () => {
    server.reply(recorded('anthropic/02-final-answer.json'));
    const tools = [
      { name: 'no_type', description: 'x', parameters: { $schema: 'https://json-schema.org/draft/2020-12/schema', properties: { a: { type: 'string' } } } },
      { name: 'empty', description: 'y', parameters: { type: 'object', properties: {} } },
    ] as ToolDefinition[];
    await chat(firstMessages(), { tools });
    expect(server.request(0).body.tools).toEqual([
      { name: 'no_type', description: 'x', input_schema: { type: 'object', properties: { a: { type: 'string' } } } },
      { name: 'empty', description: 'y', input_schema: { type: 'object', properties: {} } },
    ]);
  });

  it('posts to {base}/messages when the base URL already ends in a version', async () => {
    server.reply(recorded('anthropic/02-final-answer.json'));
    await provider({ baseUrl: `${server.url}/v1` }).chat(request(firstMessages(), { model: MODEL }));
    expect(server.request(0).path).toBe('/v1/messages');
  });

  it('knows the 200K Claude window and leaves token counts to the loop estimate', () => {
    const p = provider();
    expect(p.contextWindow('claude-3-5-sonnet-20241022')).toBe(200000);
    expect(p.contextWindow('anthropic/claude-opus-4.1')).toBe(200000);
    expect(p.countTokens!('hello there', MODEL)).toBeUndefined();
  });
});
