import { createHash, randomBytes } from 'node:crypto';
import {
  ProviderError,
  type ChatMessage,
  type ChatRequest,
  type ChatResponse,
  type ModelProvider,
  type ProviderConfig,
  type ToolCallRequestPart,
} from 'memo-kernel/pack';
import { clamp, parseArguments, postJson, startRequest, type AdapterDeps } from './http.js';
import { contextWindowFor, exactTokens } from './models.js';
import { resolveEndpoint } from './presets.js';
import { geminiParameters, pickDefinition } from './schema.js';

type Obj = Record<string, unknown>;

/**
 * {baseUrl}/models/{model}:generateContent when the base ends in an API version
 * (`.../v1beta`), else {baseUrl}/v1beta/models/{model}:generateContent. The key travels in the
 * `x-goog-api-key` header, never in the URL (URLs end up in logs and proxies).
 */
export function geminiUrl(baseUrl: string, model: string): string {
  const id = encodeURIComponent(model.replace(/^models\//, ''));
  const base = /\/v\d+(?:alpha|beta)?\d*$/.test(baseUrl) ? baseUrl : `${baseUrl}/v1beta`;
  return `${base}/models/${id}:generateContent`;
}

/**
 * generateContent `contents`: roles `user`/`model`; system messages become `systemInstruction`;
 * assistant tool calls are `functionCall` parts (with the thought signature Gemini gave them, when
 * this provider still holds it); tool results are `functionResponse` parts named after their call,
 * `{output}` or `{error}`. Gemini pairs calls and responses by name and position, not by id, so
 * each run of results is put in the order of the calls of the model turn before it, and merged
 * into one user turn. Same-role neighbours merge; empty text parts are left out.
 */
export function toGemini(messages: ChatMessage[], signatures: ReadonlyMap<string, string> = new Map()): { systemInstruction?: Obj; contents: Obj[] } {
  const system: string[] = [];
  const contents: Array<{ role: 'user' | 'model'; parts: Obj[] }> = [];
  const push = (role: 'user' | 'model', parts: Obj[]) => {
    if (!parts.length) return;
    const last = contents[contents.length - 1];
    if (last && last.role === role) last.parts.push(...parts);
    else contents.push({ role, parts });
  };
  let lastCalls: ToolCallRequestPart[] = [];
  let results: Array<Extract<ChatMessage, { role: 'tool' }>> = [];
  const flushResults = () => {
    if (!results.length) return;
    const position = (id: string) => {
      const i = lastCalls.findIndex((c) => c.id === id);
      return i < 0 ? Number.MAX_SAFE_INTEGER : i;
    };
    const ordered = results.map((r, i) => ({ r, i })).sort((a, b) => position(a.r.toolCallId) - position(b.r.toolCallId) || a.i - b.i);
    push(
      'user',
      ordered.map(({ r }) => ({
        functionResponse: {
          name: lastCalls.find((c) => c.id === r.toolCallId)?.name ?? r.name,
          response: r.isError ? { error: r.content } : { output: r.content },
        },
      })),
    );
    results = [];
  };
  for (const m of messages) {
    if (m.role === 'tool') {
      results.push(m);
      continue;
    }
    flushResults();
    switch (m.role) {
      case 'system':
        if (m.content) system.push(m.content);
        break;
      case 'user':
        push('user', m.content ? [{ text: m.content }] : []);
        break;
      case 'assistant': {
        const calls = m.toolCalls ?? [];
        push('model', [
          ...(m.content ? [{ text: m.content }] : []),
          ...calls.map((c) => {
            const signature = signatures.get(c.id);
            return { functionCall: { name: c.name, args: c.arguments ?? {} }, ...(signature ? { thoughtSignature: signature } : {}) };
          }),
        ]);
        lastCalls = calls;
        break;
      }
    }
  }
  flushResults();
  return { ...(system.length ? { systemInstruction: { parts: [{ text: system.join('\n\n') }] } } : {}), contents };
}

/** Thinking budgets for an effort (Gemini 2.5's thinkingBudget); Gemini 3 takes a level instead. */
export const GEMINI_THINKING_BUDGET = { low: 1_024, medium: 8_192, high: 24_576 } as const;

export function geminiBody(request: ChatRequest, signatures: ReadonlyMap<string, string>, model = ''): Obj {
  const { systemInstruction, contents } = toGemini(request.messages, signatures);
  const body: Obj = { contents };
  if (systemInstruction) body.systemInstruction = systemInstruction;
  if (request.tools.length) {
    body.tools = [
      {
        functionDeclarations: request.tools.map(pickDefinition).map((t) => {
          const parameters = geminiParameters(t.parameters);
          return { name: t.name, description: t.description, ...(parameters ? { parameters } : {}) };
        }),
      },
    ];
  }
  body.generationConfig = { temperature: clamp(request.temperature, 0, 2), ...(request.maxOutputTokens ? { maxOutputTokens: request.maxOutputTokens } : {}) };
  if (request.effort) {
    // includeThoughts: the reply carries thought summaries (parts marked `thought`), shown as reasoning.
    const level = /^gemini-3/.test(model.replace(/^models\//, ''));
    (body.generationConfig as Obj).thinkingConfig = level
      ? { thinkingLevel: request.effort === 'low' ? 'low' : 'high', includeThoughts: true }
      : { thinkingBudget: GEMINI_THINKING_BUDGET[request.effort], includeThoughts: true };
  }
  return body;
}

/**
 * Gemini gives function calls no id (generateContent), so each gets a stable one: `call_` and 16
 * hex digits of a hash of the reply's responseId (or a per-provider counter) and the call's
 * position. Short and plain enough to stay a valid id if the conversation moves to OpenAI or
 * Anthropic. A call that does carry an id keeps it.
 */
export function parseGeminiReply(json: unknown, host: string, replyKey: string, signatures: Map<string, string>): ChatResponse {
  const r = (json && typeof json === 'object' ? json : {}) as Obj;
  const candidate = Array.isArray(r.candidates) ? (r.candidates[0] as Obj | undefined) : undefined;
  if (!candidate) {
    const feedback = (r.promptFeedback ?? {}) as Obj;
    const reason = typeof feedback.blockReason === 'string' ? feedback.blockReason : undefined;
    throw new ProviderError(
      reason ? `Gemini refused the prompt (${reason}).` : `${host} answered without a candidate.`,
      200,
      false,
      `gemini ${reason ? `blockReason ${reason}` : 'reply without candidates'}`,
    );
  }
  const parts = (((candidate.content ?? {}) as Obj).parts ?? []) as Obj[];
  const texts: string[] = [];
  const thoughts: string[] = [];
  const toolCalls: ToolCallRequestPart[] = [];
  let position = 0;
  for (const part of Array.isArray(parts) ? parts : []) {
    if (typeof part?.text === 'string' && part.thought !== true) texts.push(part.text);
    else if (typeof part?.text === 'string' && part.text.trim()) thoughts.push(part.text.trim());
    const fc = part?.functionCall as Obj | undefined;
    if (fc && typeof fc.name === 'string') {
      const id = typeof fc.id === 'string' && fc.id ? fc.id : `call_${createHash('sha256').update(`${replyKey}\n${position}`).digest('hex').slice(0, 16)}`;
      position++;
      if (typeof part.thoughtSignature === 'string') {
        signatures.set(id, part.thoughtSignature);
        if (signatures.size > 500) signatures.delete(signatures.keys().next().value as string);
      }
      toolCalls.push({ id, name: fc.name, ...parseArguments(fc.args) });
    }
  }
  if (!texts.length && !toolCalls.length && candidate.finishReason === 'MALFORMED_FUNCTION_CALL') {
    // Gemini's own "arguments were not valid": nothing to run and nothing to say, so an error the loop shows.
    const why = typeof candidate.finishMessage === 'string' ? `: ${candidate.finishMessage}` : '.';
    throw new ProviderError(`Gemini could not form a valid function call${why}`, 200, true, 'gemini finishReason MALFORMED_FUNCTION_CALL');
  }
  const u = r.usageMetadata as Obj | undefined;
  const n = (v: unknown) => (typeof v === 'number' ? v : 0);
  return {
    content: texts.join(''),
    toolCalls,
    ...(thoughts.length ? { reasoning: thoughts.join('\n\n') } : {}),
    // Thinking tokens are billed and generated as output.
    ...(u && typeof u.promptTokenCount === 'number'
      ? { usage: { inputTokens: u.promptTokenCount, outputTokens: n(u.candidatesTokenCount) + n(u.thoughtsTokenCount) } }
      : {}),
    ...(typeof candidate.finishReason === 'string' ? { finishReason: candidate.finishReason } : {}),
  };
}

/**
 * Assembles `streamGenerateContent?alt=sse` chunks (each a partial GenerateContentResponse) into
 * the response a non-streamed request gets: parts in order (text passed on as it arrives, thought
 * parts and whole function calls kept), the last finish reason and usage.
 */
export class GeminiStream {
  private readonly parts: Obj[] = [];
  private last: Obj = {};

  constructor(private readonly onText: (text: string) => void) {}

  onData(data: string): void {
    const chunk = JSON.parse(data) as Obj;
    if (chunk.error && typeof chunk.error === 'object') {
      const message = (chunk.error as Obj).message;
      throw new ProviderError(typeof message === 'string' ? message : 'The stream reported an error.', 502, false, 'gemini stream error');
    }
    const candidate = Array.isArray(chunk.candidates) ? (chunk.candidates[0] as Obj | undefined) : undefined;
    for (const part of (((candidate?.content ?? {}) as Obj).parts ?? []) as Obj[]) {
      if (!part || typeof part !== 'object') continue;
      this.parts.push(part);
      if (typeof part.text === 'string' && part.thought !== true && part.text) this.onText(part.text);
    }
    this.last = { ...this.last, ...chunk, ...(candidate ? { candidate: { ...((this.last.candidate ?? {}) as Obj), ...candidate } } : {}) };
  }

  result(): Obj {
    const { candidate, candidates: _c, ...rest } = this.last;
    if (!candidate && !this.parts.length) return rest;
    return { ...rest, candidates: [{ ...((candidate ?? {}) as Obj), content: { role: 'model', parts: this.parts } }] };
  }
}

/** Google's Gemini API (generateContent), key in `x-goog-api-key`. */
export function createGeminiProvider(config: ProviderConfig, deps: AdapterDeps): ModelProvider {
  const ep = resolveEndpoint('gemini', config);
  const salt = randomBytes(6).toString('hex');
  const signatures = new Map<string, string>();
  let replies = 0;
  return {
    name: config.name,
    kind: 'gemini',
    async chat(request: ChatRequest): Promise<ChatResponse> {
      const { signal, key, model, headers, secrets } = startRequest(config, ep, request, deps.env ?? process.env);
      if (key) headers['x-goog-api-key'] = key;
      const stream = request.onText ? new GeminiStream(request.onText) : undefined;
      if (stream) headers.accept = 'text/event-stream, application/json';
      const url = geminiUrl(ep.baseUrl, model);
      const json = await postJson({
        label: 'gemini',
        endpoint: ep,
        url: stream ? `${url.replace(/:generateContent$/, ':streamGenerateContent')}?alt=sse` : url,
        ...(stream ? { sse: stream } : {}),
        headers,
        body: geminiBody(request, signatures, model),
        signal,
        secrets,
        deps,
      });
      const responseId = (json as Obj | null)?.responseId;
      const replyKey = typeof responseId === 'string' && responseId ? `response:${responseId}` : `local:${salt}:${++replies}`;
      return parseGeminiReply(json, ep.host, replyKey, signatures);
    },
    contextWindow: (model: string) => contextWindowFor(model, config),
    countTokens: (text: string, model: string) => exactTokens(text, model) as number,
  };
}
