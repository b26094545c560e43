import { ReplayServer } from './replay-server.js';
import { bootKernel, firstMessages, KEY, request, type Booted } from './conversation.js';

const sse = (body: string) => ({ status: 200, headers: { 'content-type': 'text/event-stream; charset=utf-8' }, body });

/** Anthropic's Messages stream as sent: named events, a ping, text and input_json deltas, the usage at the end. */
function anthropicEvent(type: string, data: Record<string, unknown>): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
}
const ANTHROPIC_STREAM =
  anthropicEvent('message_start', {
    message: {
      id: 'msg_01Kx',
      type: 'message',
      role: 'assistant',
      content: [],
      model: 'claude-sonnet-4-5-20250929',
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 472, output_tokens: 2 },
    },
  }) +
  anthropicEvent('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }) +
  'event: ping\ndata: {"type": "ping"}\n\n' +
  anthropicEvent('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Let me read' } }) +
  anthropicEvent('content_block_delta', { index: 0, delta: { type: 'text_delta', text: ' your notes.' } }) +
  anthropicEvent('content_block_stop', { index: 0 }) +
  anthropicEvent('content_block_start', { index: 1, content_block: { type: 'tool_use', id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', name: 'read_file', input: {} } }) +
  anthropicEvent('content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: '' } }) +
  anthropicEvent('content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: '{"path": "no' } }) +
  anthropicEvent('content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: 'tes.txt"}' } }) +
  anthropicEvent('content_block_stop', { index: 1 }) +
  anthropicEvent('message_delta', { delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 89 } }) +
  anthropicEvent('message_stop', {});

/** Gemini's streamGenerateContent?alt=sse: each event a partial response, CRLF-separated. */
const geminiChunk = (o: Record<string, unknown>) => `data: ${JSON.stringify(o)}\r\n\r\n`;
const GEMINI_STREAM =
  geminiChunk({
    candidates: [{ content: { parts: [{ text: 'Buy milk' }], role: 'model' }, index: 0 }],
    usageMetadata: { promptTokenCount: 120, totalTokenCount: 120 },
    modelVersion: 'gemini-2.5-flash',
    responseId: 'sXk1aQ',
  }) +
  geminiChunk({
    candidates: [{ content: { parts: [{ text: ' and call Ada.' }], role: 'model' }, finishReason: 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount: 120, candidatesTokenCount: 7, totalTokenCount: 127 },
    modelVersion: 'gemini-2.5-flash',
    responseId: 'sXk1aQ',
  });

describe('Anthropic and Gemini streaming', () => {
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

  it('Anthropic: asks for a stream, passes text on as it arrives, and assembles the tool call and usage', async () => {
    const provider = booted.create({ kind: 'anthropic', baseUrl: server.url, model: 'claude-sonnet-4-5', apiKey: KEY });
    server.reply(sse(ANTHROPIC_STREAM));
    const pieces: string[] = [];
    const reply = await provider.chat(request(firstMessages(), { model: 'claude-sonnet-4-5', onText: (t) => pieces.push(t) }));
    expect(server.request(0).body.stream).toBe(true);
    expect(pieces).toEqual(['Let me read', ' your notes.']);
    expect(reply).toEqual({
      content: 'Let me read your notes.',
      toolCalls: [{ id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', name: 'read_file', arguments: { path: 'notes.txt' } }],
      usage: { inputTokens: 472, outputTokens: 89 },
      finishReason: 'tool_use',
    });
  });

  it('Anthropic: an error event in the stream (overloaded) is the provider error', async () => {
    const provider = booted.create({ kind: 'anthropic', baseUrl: server.url, model: 'claude-sonnet-4-5', apiKey: KEY });
    server.reply(
      sse(
        `${ANTHROPIC_STREAM.split('event: content_block_stop')[0]!}event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}\n\n`,
      ),
    );
    await expect(provider.chat(request(firstMessages(), { model: 'claude-sonnet-4-5', onText: () => undefined }))).rejects.toMatchObject({
      name: 'ProviderError',
      message: 'Overloaded',
      status: 529,
    });
  });

  it('Gemini: streams from streamGenerateContent?alt=sse and returns the whole reply', async () => {
    const provider = booted.create({ kind: 'gemini', baseUrl: server.url, model: 'gemini-2.5-flash', apiKey: KEY });
    server.reply(sse(GEMINI_STREAM));
    const pieces: string[] = [];
    const reply = await provider.chat(request(firstMessages(), { model: 'gemini-2.5-flash', onText: (t) => pieces.push(t) }));
    expect(server.request(0).path).toBe('/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
    expect(pieces).toEqual(['Buy milk', ' and call Ada.']);
    expect(reply).toEqual({ content: 'Buy milk and call Ada.', toolCalls: [], usage: { inputTokens: 120, outputTokens: 7 }, finishReason: 'STOP' });
    // Without onText: the plain generateContent as before.
    server.reply({ status: 200, body: { candidates: [{ content: { parts: [{ text: 'ok' }], role: 'model' }, finishReason: 'STOP' }] } });
    await provider.chat(request(firstMessages(), { model: 'gemini-2.5-flash' }));
    expect(server.request(1).path).toBe('/v1beta/models/gemini-2.5-flash:generateContent');
  });
});
