import { fixture, recorded, ReplayServer } from './replay-server.js';
import { bootKernel, firstMessages, KEY, NOTES, request, TOOLS, withResults, type Booted } from './conversation.js';

describe('the openai-compatible adapter', () => {
  let booted: Booted;
  let server: ReplayServer;
  const provider = (extra: Record<string, unknown> = {}) =>
    booted.create({ kind: 'openai-compatible', baseUrl: `${server.url}/v1`, model: 'gpt-4o', apiKey: KEY, ...extra });

  beforeAll(async () => {
    booted = await bootKernel();
    server = await ReplayServer.start();
  });
  afterAll(async () => {
    await server.close();
    await booted.fx.close();
  });
  beforeEach(() => server.reset());

  it('is registered with the anthropic and gemini formats when the pack loads', () => {
    expect(booted.fx.kernel.providers.kinds()).toEqual(expect.arrayContaining(['anthropic', 'gemini', 'openai-compatible']));
    expect(booted.fx.kernel.packs.list().find((p) => p.id === 'providers')).toMatchObject({ status: 'loaded' });
  });

  it('says whether the model runs on this machine, from its preset or a loopback address', () => {
    expect(booted.create({ kind: 'openai-compatible', preset: 'ollama', model: 'llama3' }).local).toBe(true);
    expect(booted.create({ kind: 'openai-compatible', preset: 'lmstudio', model: 'qwen' }).local).toBe(true);
    // The replay server listens on 127.0.0.1.
    expect(provider().local).toBe(true);
    expect(booted.create({ kind: 'openai-compatible', preset: 'groq', model: 'llama3', apiKey: KEY }).local).toBe(false);
  });

  it('sends the recorded first request: path, bearer key, messages, tools and temperature', async () => {
    const exchange = fixture('openai/01-tool-call.json');
    server.reply(recorded('openai/01-tool-call.json'));
    await provider().chat(request(firstMessages()));
    const got = server.request(0);
    expect(got.method).toBe('POST');
    expect(got.path).toBe(exchange.request!.path);
    expect(got.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(got.headers['content-type']).toBe('application/json');
    expect(got.body).toEqual(exchange.request!.body);
  });

  it('sends each tool as exactly {type, function: {name, description, parameters}}, without $schema or bookkeeping fields', async () => {
    server.reply(recorded('openai/01-tool-call.json'));
    await provider().chat(request(firstMessages()));
    const tools = server.request(0).body.tools as any[];
    expect(tools).toHaveLength(2);
    for (const t of tools) {
      expect(Object.keys(t).sort()).toEqual(['function', 'type']);
      expect(Object.keys(t.function).sort()).toEqual(['description', 'name', 'parameters']);
      expect(t.function.parameters).not.toHaveProperty('$schema');
    }
    expect(server.request(0).raw).not.toMatch(/danger|effect|sensitiveArgs|_registeredAt|timeoutMs|fs-tools/);
  });

  it('parses the tool calls, usage and finish reason of the reply', async () => {
    server.reply(recorded('openai/01-tool-call.json'));
    const reply = await provider().chat(request(firstMessages()));
    expect(reply).toEqual({
      content: "I'll look at both.",
      toolCalls: [
        { id: 'call_Xk2a9Qd7', name: 'read_file', arguments: { path: 'notes.txt' } },
        { id: 'call_Pw4b1Rz8', name: 'get_weather', arguments: { city: 'Paris', unit: 'celsius' } },
      ],
      usage: { inputTokens: 182, outputTokens: 51 },
      finishReason: 'tool_calls',
    });
  });

  it('sends a whole tool conversation (user, assistant tool calls, tool results) and parses the final answer', async () => {
    const first = fixture('openai/01-tool-call.json');
    const second = fixture('openai/02-final-answer.json');
    server.reply(recorded('openai/01-tool-call.json'), recorded('openai/02-final-answer.json'));
    const p = provider();
    const calls = await p.chat(request(firstMessages()));
    const final = await p.chat(request(withResults(calls)));
    expect(server.request(1).body).toEqual({ ...second.request!.body, tools: first.request!.body.tools });
    expect(final).toEqual({
      content: "notes.txt says: buy milk, call Ada. The weather service failed, so I can't tell you about Paris.",
      toolCalls: [],
      usage: { inputTokens: 260, outputTokens: 24 },
      finishReason: 'stop',
    });
    expect(server.request(1).body.messages[3]).toEqual({ role: 'tool', tool_call_id: 'call_Xk2a9Qd7', content: NOTES });
  });

  it('turns malformed tool-call arguments into {} with a parseError instead of throwing', async () => {
    server.reply(recorded('openai/malformed-arguments.json'));
    const reply = await provider({ model: 'llama-3.1-8b-instruct' }).chat(request(firstMessages(), { model: 'llama-3.1-8b-instruct' }));
    expect(reply.content).toBe('');
    expect(reply.toolCalls).toEqual([
      { id: 'call_bad1', name: 'read_file', arguments: {}, parseError: expect.any(String) },
      { id: 'call_ok2', name: 'get_weather', arguments: { city: 'Oslo' } },
      { id: 'call_list3', name: 'get_weather', arguments: {}, parseError: 'the arguments are a list, not an object' },
    ]);
  });

  it('gives a tool call without an id (some local servers) a generated one', async () => {
    server.reply({
      status: 200,
      body: {
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: null, tool_calls: [{ type: 'function', function: { name: 'read_file', arguments: '{"path":"a"}' } }] },
            finish_reason: 'tool_calls',
          },
        ],
      },
    });
    const reply = await provider({ model: 'qwen2.5:7b' }).chat(request(firstMessages(), { model: 'qwen2.5:7b' }));
    expect(reply.toolCalls).toEqual([{ id: expect.stringMatching(/^call_[0-9a-f]{16}$/), name: 'read_file', arguments: { path: 'a' } }]);
    expect(reply.usage).toBeUndefined();
  });

  it('sends no tools field at all when there are no tools, and max_tokens when a bound is given', async () => {
    server.reply(recorded('openai/02-final-answer.json'));
    await provider({ preset: 'llamacpp', baseUrl: `${server.url}/v1` }).chat(request(firstMessages(), { tools: [], maxOutputTokens: 300, model: 'local' }));
    const body = server.request(0).body;
    expect(body).not.toHaveProperty('tools');
    expect(body.max_tokens).toBe(300);
    expect(body).not.toHaveProperty('max_completion_tokens');
    expect(server.request(0).path).toBe('/v1/chat/completions');
  });

  it('uses max_completion_tokens for the openai preset and leaves temperature out for reasoning models', async () => {
    server.reply(recorded('openai/02-final-answer.json'), recorded('openai/02-final-answer.json'));
    const p = provider({ preset: 'openai' });
    await p.chat(request(firstMessages(), { model: 'o3-mini', maxOutputTokens: 500 }));
    await p.chat(request(firstMessages(), { model: 'gpt-4.1', temperature: 0.7 }));
    expect(server.request(0).body).toMatchObject({ model: 'o3-mini', max_completion_tokens: 500 });
    expect(server.request(0).body).not.toHaveProperty('temperature');
    expect(server.request(1).body.temperature).toBe(0.7);
  });

  it('overrides a hosted preset base URL and sends configured headers without letting them replace the key', async () => {
    server.reply(recorded('openai/02-final-answer.json'));
    await provider({ preset: 'openrouter', headers: { 'HTTP-Referer': 'https://memo.example', 'X-Title': 'Memo', Authorization: 'Bearer nope' } }).chat(
      request(firstMessages()),
    );
    const h = server.request(0).headers;
    expect(h['http-referer']).toBe('https://memo.example');
    expect(h['x-title']).toBe('Memo');
    expect(h.authorization).toBe(`Bearer ${KEY}`);
  });

  it('sends no authorization header to a keyless local server', async () => {
    server.reply(recorded('openai/02-final-answer.json'));
    await provider({ apiKey: undefined }).chat(request(firstMessages()));
    expect(server.request(0).headers).not.toHaveProperty('authorization');
  });

  it('knows context windows from the table, the configuration first when it describes the model', () => {
    const p = provider();
    expect(p.contextWindow('gpt-4o')).toBe(128000);
    expect(p.contextWindow('gpt-4.1-mini')).toBe(1047576);
    expect(p.contextWindow('o4-mini')).toBe(200000);
    expect(p.contextWindow('meta-llama/llama-3.3-70b-instruct')).toBe(131072);
    expect(p.contextWindow('qwen2.5:7b')).toBe(32768);
    expect(p.contextWindow('mystery-model')).toBeUndefined();
    const local = provider({ model: 'llama3.1:8b', contextWindow: 8192 });
    expect(local.contextWindow('llama3.1:8b')).toBe(8192);
    expect(local.contextWindow('mystery-model')).toBe(8192);
    expect(local.contextWindow('gpt-4o')).toBe(128000);
  });

  it('passes the tool definitions it was given unchanged to the caller (no mutation)', async () => {
    const before = JSON.stringify(TOOLS);
    server.reply(recorded('openai/02-final-answer.json'));
    await provider().chat(request(firstMessages()));
    expect(JSON.stringify(TOOLS)).toBe(before);
  });
});
