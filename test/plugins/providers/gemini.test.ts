import type { ChatMessage, ToolDefinition } from '../../../kernel/index.js';
import { fixture, recorded, ReplayServer } from './replay-server.js';
import { bootKernel, firstMessages, KEY, request, USER, withResults, type Booted } from './conversation.js';

const MODEL = 'gemini-2.0-flash';

describe('the gemini adapter', () => {
  let booted: Booted;
  let server: ReplayServer;
  const provider = (extra: Record<string, unknown> = {}) => booted.create({ kind: 'gemini', baseUrl: server.url, model: MODEL, apiKey: KEY, ...extra });
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

  it('sends the recorded first request: generateContent path, key only in x-goog-api-key, systemInstruction, cleaned declarations', async () => {
    const exchange = fixture('gemini/01-function-call.json');
    server.reply(recorded('gemini/01-function-call.json'));
    await chat(firstMessages());
    const got = server.request(0);
    expect(got.path).toBe(exchange.request!.path);
    expect(got.path).not.toMatch(/key=/);
    expect(got.raw).not.toContain(KEY);
    expect(got.headers['x-goog-api-key']).toBe(KEY);
    expect(got.headers).not.toHaveProperty('authorization');
    expect(got.body).toEqual(exchange.request!.body);
    for (const d of got.body.tools[0].functionDeclarations) expect(Object.keys(d).sort()).toEqual(['description', 'name', 'parameters']);
    expect(got.raw).not.toMatch(/additionalProperties|\$schema|"default"|danger|_registeredAt/);
  });

  it('parses functionCall parts with generated stable ids, usageMetadata and finishReason', async () => {
    server.reply(recorded('gemini/01-function-call.json'), recorded('gemini/01-function-call.json'));
    const reply = await chat(firstMessages());
    expect(reply).toEqual({
      content: "I'll look at both.",
      toolCalls: [
        { id: expect.stringMatching(/^call_[0-9a-f]{16}$/), name: 'read_file', arguments: { path: 'notes.txt' } },
        { id: expect.stringMatching(/^call_[0-9a-f]{16}$/), name: 'get_weather', arguments: { city: 'Paris', unit: 'celsius' } },
      ],
      usage: { inputTokens: 141, outputTokens: 32 },
      finishReason: 'STOP',
    });
    expect(reply.toolCalls[0]!.id).not.toBe(reply.toolCalls[1]!.id); // both checked just above
    // The same reply (same responseId) gets the same ids: stable, not random.
    const again = await chat(firstMessages());
    expect(again.toolCalls.map((c) => c.id)).toEqual(reply.toolCalls.map((c) => c.id));
  });

  it('sends a whole tool conversation (functionResponse by name, output/error) and parses the final answer', async () => {
    const first = fixture('gemini/01-function-call.json');
    const second = fixture('gemini/02-final-answer.json');
    server.reply(recorded('gemini/01-function-call.json'), recorded('gemini/02-final-answer.json'));
    const p = provider();
    const calls = await p.chat(request(firstMessages(), { model: MODEL }));
    const final = await p.chat(request(withResults(calls), { model: MODEL }));
    expect(server.request(1).body).toEqual({ ...second.request!.body, tools: first.request!.body.tools });
    expect(final).toEqual({
      content: "notes.txt says: buy milk, call Ada. The weather service failed, so I can't tell you about Paris.",
      toolCalls: [],
      usage: { inputTokens: 230, outputTokens: 35 },
      finishReason: 'STOP',
    });
  });

  it('puts results in the order of the calls they answer, whatever order they arrive in', async () => {
    server.reply(recorded('gemini/02-final-answer.json'));
    await chat([
      { role: 'user', content: USER },
      {
        role: 'assistant',
        content: '',
        toolCalls: [
          { id: 'a', name: 'read_file', arguments: { path: 'x' } },
          { id: 'b', name: 'read_file', arguments: { path: 'y' } },
          { id: 'c', name: 'get_weather', arguments: { city: 'Rome' } },
        ],
      },
      { role: 'tool', toolCallId: 'c', name: 'get_weather', content: 'sunny' },
      { role: 'tool', toolCallId: 'b', name: 'read_file', content: 'Y' },
      { role: 'tool', toolCallId: 'a', name: 'read_file', content: 'X' },
      { role: 'user', content: 'thanks' },
    ]);
    const contents = server.request(0).body.contents;
    expect(contents).toHaveLength(3);
    expect(contents[2]).toEqual({
      role: 'user',
      parts: [
        { functionResponse: { name: 'read_file', response: { output: 'X' } } },
        { functionResponse: { name: 'read_file', response: { output: 'Y' } } },
        { functionResponse: { name: 'get_weather', response: { output: 'sunny' } } },
        { text: 'thanks' },
      ],
    });
  });

  it('echoes a thought signature back on the function call it came with', async () => {
    const body = fixture('gemini/01-function-call.json').response.body as any;
    const signed = structuredClone(body);
    signed.candidates[0].content.parts[1].thoughtSignature = 'c2lnbmF0dXJlLW9uZQ==';
    server.reply({ status: 200, body: signed }, recorded('gemini/02-final-answer.json'));
    const p = provider();
    const calls = await p.chat(request(firstMessages(), { model: MODEL }));
    await p.chat(request(withResults(calls), { model: MODEL }));
    expect(server.request(1).body.contents[1].parts).toEqual([
      { text: "I'll look at both." },
      { functionCall: { name: 'read_file', args: { path: 'notes.txt' } }, thoughtSignature: 'c2lnbmF0dXJlLW9uZQ==' },
      { functionCall: { name: 'get_weather', args: { city: 'Paris', unit: 'celsius' } } },
    ]);
  });

  it('declares a tool without parameters when its schema has no properties', async () => {
    server.reply(recorded('gemini/02-final-answer.json'));
    const tools = [
      { name: 'get_magic_number', description: 'Returns the magic number.', parameters: { type: 'object', properties: {}, additionalProperties: false } },
    ] as ToolDefinition[];
    await chat(firstMessages(), { tools, maxOutputTokens: 200, temperature: 0 });
    expect(server.request(0).body.tools).toEqual([{ functionDeclarations: [{ name: 'get_magic_number', description: 'Returns the magic number.' }] }]);
    expect(server.request(0).body.generationConfig).toEqual({ temperature: 0, maxOutputTokens: 200 });
  });

  it('refuses a blocked prompt with a sentence, not an empty answer', async () => {
    server.reply({ status: 200, body: { promptFeedback: { blockReason: 'SAFETY' }, usageMetadata: { promptTokenCount: 8, totalTokenCount: 8 } } });
    await expect(chat(firstMessages())).rejects.toMatchObject({ name: 'ProviderError', message: 'Gemini refused the prompt (SAFETY).', retryable: false });
  });

  it("reports Gemini's MALFORMED_FUNCTION_CALL as an error instead of an empty answer", async () => {
    server.reply({
      status: 200,
      body: {
        candidates: [
          {
            content: { role: 'model' },
            finishReason: 'MALFORMED_FUNCTION_CALL',
            finishMessage: "Malformed function call: print(default_api.read_file(path='notes.txt'",
          },
        ],
        usageMetadata: { promptTokenCount: 90, totalTokenCount: 90 },
      },
    });
    await expect(chat(firstMessages())).rejects.toMatchObject({
      message: "Gemini could not form a valid function call: Malformed function call: print(default_api.read_file(path='notes.txt'",
      retryable: true,
    });
  });

  it('accepts a base URL that ends in the API version and a model given as models/<id>', async () => {
    server.reply(recorded('gemini/02-final-answer.json'));
    await provider({ baseUrl: `${server.url}/v1beta` }).chat(request(firstMessages(), { model: 'models/gemini-2.5-pro' }));
    expect(server.request(0).path).toBe('/v1beta/models/gemini-2.5-pro:generateContent');
  });

  it('knows Gemini windows and leaves token counts to the loop estimate', () => {
    const p = provider();
    expect(p.contextWindow('gemini-2.0-flash')).toBe(1048576);
    expect(p.contextWindow('gemini-2.5-pro')).toBe(1048576);
    expect(p.contextWindow('gemini-1.5-flash-002')).toBe(1048576);
    expect(p.countTokens!('hello', MODEL)).toBeUndefined();
  });
});
