import { randomBytes } from 'node:crypto';
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
import { bareModel, contextWindowFor, exactTokens } from './models.js';
import { endpointUrl, resolveEndpoint, type Endpoint } from './presets.js';
import { openAiParameters, pickDefinition } from './schema.js';

type Obj = Record<string, unknown>;

/** OpenAI reasoning models accept only the default temperature: it is left out for them. */
export function fixedTemperature(model: string): boolean {
  const m = bareModel(model);
  return /^o[134](?:-|$)/.test(m) || (/^gpt-5/.test(m) && !/-chat/.test(m));
}

export function toOpenAiMessages(messages: ChatMessage[]): Obj[] {
  return messages.map((m): Obj => {
    switch (m.role) {
      case 'system':
      case 'user':
        return { role: m.role, content: m.content };
      case 'assistant':
        if (m.toolCalls?.length) {
          return {
            role: 'assistant',
            content: m.content ? m.content : null,
            tool_calls: m.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.arguments ?? {}) } })),
          };
        }
        return { role: 'assistant', content: m.content };
      case 'tool':
        return { role: 'tool', tool_call_id: m.toolCallId, content: m.content };
    }
  });
}

export function openAiBody(request: ChatRequest, model: string, ep: Endpoint): Obj {
  const body: Obj = { model, messages: toOpenAiMessages(request.messages) };
  if (request.tools.length) {
    body.tools = request.tools.map(pickDefinition).map((t) => ({
      type: 'function',
      function: { name: t.name, description: t.description, parameters: openAiParameters(t.parameters) },
    }));
  }
  if (!fixedTemperature(model)) body.temperature = clamp(request.temperature, 0, 2);
  if (request.maxOutputTokens) body[ep.preset === 'openai' ? 'max_completion_tokens' : 'max_tokens'] = request.maxOutputTokens;
  // Only reasoning models take an effort; others would refuse the unknown parameter.
  if (request.effort && fixedTemperature(model)) body.reasoning_effort = request.effort;
  if (request.onText) {
    body.stream = true;
    // The usage comes in a last chunk only when asked for; OpenAI and OpenRouter document it.
    if (ep.preset === 'openai' || ep.preset === 'openrouter') body.stream_options = { include_usage: true };
  }
  return body;
}

/**
 * Assembles a streamed chat completion (`chat.completion.chunk` events) into the reply a
 * non-streamed request gets, passing each piece of text to `onText` as it arrives. Tool call
 * arguments come in fragments keyed by `index`; the call is complete only at the end.
 */
export class OpenAiStream {
  private content = '';
  private reasoning = '';
  private finish: string | undefined;
  private usage: Obj | undefined;
  private readonly calls = new Map<number, { id?: string; name: string; args: string }>();

  constructor(private readonly onText: (text: string) => void) {}

  onData(data: string): void {
    const chunk = JSON.parse(data) as Obj;
    if (chunk.error && typeof chunk.error === 'object') {
      const message = (chunk.error as Obj).message;
      throw new ProviderError(typeof message === 'string' ? message : 'The stream reported an error.', 502, false, 'openai-compatible stream error event');
    }
    if (chunk.usage && typeof chunk.usage === 'object') this.usage = chunk.usage as Obj;
    const choice = Array.isArray(chunk.choices) ? (chunk.choices[0] as Obj | undefined) : undefined;
    if (!choice) return;
    if (typeof choice.finish_reason === 'string') this.finish = choice.finish_reason;
    const delta = (choice.delta && typeof choice.delta === 'object' ? choice.delta : {}) as Obj;
    if (typeof delta.content === 'string' && delta.content) {
      this.content += delta.content;
      this.onText(delta.content);
    }
    for (const key of ['reasoning_content', 'reasoning']) if (typeof delta[key] === 'string') this.reasoning += delta[key];
    for (const tc of Array.isArray(delta.tool_calls) ? (delta.tool_calls as Obj[]) : []) {
      const index = typeof tc.index === 'number' ? tc.index : 0;
      const fn = (tc.function ?? {}) as Obj;
      const call = this.calls.get(index) ?? { name: '', args: '' };
      if (typeof tc.id === 'string' && tc.id) call.id = tc.id;
      if (typeof fn.name === 'string') call.name += fn.name;
      if (typeof fn.arguments === 'string') call.args += fn.arguments;
      this.calls.set(index, call);
    }
  }

  /** The whole reply, in the non-streamed shape (parseOpenAiReply reads it). */
  result(): Obj {
    const toolCalls = [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, c]) => ({ ...(c.id ? { id: c.id } : {}), type: 'function', function: { name: c.name, arguments: c.args } }));
    const message: Obj = { role: 'assistant', content: this.content };
    if (toolCalls.length) message.tool_calls = toolCalls;
    if (this.reasoning) message.reasoning_content = this.reasoning;
    return { choices: [{ index: 0, message, ...(this.finish ? { finish_reason: this.finish } : {}) }], ...(this.usage ? { usage: this.usage } : {}) };
  }
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content.map((p) => (p && typeof p === 'object' && typeof (p as Obj).text === 'string' ? ((p as Obj).text as string) : '')).join('');
  }
  return '';
}

export function parseOpenAiReply(json: unknown, host: string): ChatResponse {
  const r = (json && typeof json === 'object' ? json : {}) as Obj;
  const choice = Array.isArray(r.choices) ? (r.choices[0] as Obj | undefined) : undefined;
  if (!choice) throw new ProviderError(`${host} answered without a choice.`, 200, false, 'openai-compatible reply without choices');
  const msg = (choice.message && typeof choice.message === 'object' ? choice.message : {}) as Obj;
  let content = textOf(msg.content);
  if (!content && typeof msg.refusal === 'string') content = msg.refusal;
  const toolCalls: ToolCallRequestPart[] = [];
  const raw = Array.isArray(msg.tool_calls) ? (msg.tool_calls as Obj[]) : [];
  for (const tc of raw) {
    const fn = (tc?.function ?? {}) as Obj;
    if (typeof fn.name !== 'string' || !fn.name) continue;
    const parsed = parseArguments(fn.arguments);
    // Some local servers omit ids: the loop needs one to pair the result with the call.
    const id = typeof tc.id === 'string' && tc.id ? tc.id : `call_${randomBytes(8).toString('hex')}`;
    toolCalls.push({ id, name: fn.name, ...parsed });
  }
  const usage = r.usage as Obj | undefined;
  return {
    content,
    toolCalls,
    ...(usage && typeof usage.prompt_tokens === 'number' && typeof usage.completion_tokens === 'number'
      ? { usage: { inputTokens: usage.prompt_tokens, outputTokens: usage.completion_tokens } }
      : {}),
    ...(typeof choice.finish_reason === 'string' ? { finishReason: choice.finish_reason } : {}),
    // DeepSeek, llama.cpp, vLLM and OpenRouter return the model's reasoning beside the answer.
    ...(reasoningOf(msg) ? { reasoning: reasoningOf(msg) } : {}),
  };
}

function reasoningOf(msg: Obj): string {
  for (const key of ['reasoning_content', 'reasoning']) {
    const v = msg[key];
    if (typeof v === 'string' && v.trim()) return v.trim();
  }
  return '';
}

/**
 * The OpenAI chat-completions wire format (OpenAI, Groq, OpenRouter, xAI, OpenCode Zen, Ollama,
 * LM Studio, llama.cpp and any compatible server): POST {baseUrl}/chat/completions,
 * `Authorization: Bearer <key>` when there is a key.
 */
export function createOpenAiProvider(config: ProviderConfig, deps: AdapterDeps): ModelProvider {
  const ep = resolveEndpoint('openai-compatible', config);
  const url = endpointUrl(ep.baseUrl, '/chat/completions');
  return {
    name: config.name,
    kind: 'openai-compatible',
    local: ep.local,
    async chat(request: ChatRequest): Promise<ChatResponse> {
      const { signal, key, model, headers, secrets } = startRequest(config, ep, request, deps.env ?? process.env);
      if (key) headers.authorization = `Bearer ${key}`;
      const stream = request.onText ? new OpenAiStream(request.onText) : undefined;
      if (stream) headers.accept = 'text/event-stream, application/json';
      const json = await postJson({
        label: 'openai-compatible',
        endpoint: ep,
        url,
        headers,
        body: openAiBody(request, model, ep),
        signal,
        secrets,
        deps,
        ...(stream ? { sse: stream } : {}),
      });
      return parseOpenAiReply(json, ep.host);
    },
    contextWindow: (model: string) => contextWindowFor(model, config),
    // Undefined (not a number) for models without a tokenizer here: see exactTokens.
    countTokens: (text: string, model: string) => exactTokens(text, model) as number,
  };
}
