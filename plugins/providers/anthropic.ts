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
import { resolveEndpoint } from './presets.js';
import { anthropicInputSchema, pickDefinition } from './schema.js';

type Obj = Record<string, unknown>;

export const ANTHROPIC_VERSION = '2023-06-01';

/** `max_tokens` is required: the request's bound, else 4096 for Claude 3 (its ceiling), else 8192. */
export function defaultMaxTokens(model: string): number {
  return /^claude-3-(?:opus|sonnet|haiku)/.test(bareModel(model)) ? 4096 : 8192;
}

/**
 * {baseUrl}/messages when the base ends in a version (`https://api.anthropic.com/v1`), else
 * {baseUrl}/v1/messages (a base URL as the Anthropic SDKs take it, or a gateway root).
 */
export function anthropicUrl(baseUrl: string): string {
  if (baseUrl.endsWith('/messages')) return baseUrl;
  return /\/v\d+$/.test(baseUrl) ? `${baseUrl}/messages` : `${baseUrl}/v1/messages`;
}

type Block = Obj & { type: string };

/**
 * Messages API turns: system messages become the top-level `system` (joined by a blank line);
 * assistant tool calls are `tool_use` blocks after the text; tool results are `tool_result`
 * blocks (`is_error` when the call failed) and consecutive ones, with any user text that
 * follows, merge into one user turn with the results first; same-role neighbours merge; empty
 * text is left out (the API refuses empty text blocks). A turn of one text block is sent as a
 * plain string.
 */
export function toAnthropic(messages: ChatMessage[], thinking: ReadonlyMap<string, Obj[]> = new Map()): { system?: string; messages: Obj[] } {
  const system: string[] = [];
  const turns: Array<{ role: 'user' | 'assistant'; content: Block[] }> = [];
  const push = (role: 'user' | 'assistant', blocks: Block[]) => {
    if (!blocks.length) return;
    const last = turns[turns.length - 1];
    if (last && last.role === role) last.content.push(...blocks);
    else turns.push({ role, content: blocks });
  };
  for (const m of messages) {
    switch (m.role) {
      case 'system':
        if (m.content) system.push(m.content);
        break;
      case 'user':
        push('user', m.content ? [{ type: 'text', text: m.content }] : []);
        break;
      case 'assistant':
        push('assistant', [
          // The signed thinking blocks of a reply that called tools go back with it, first (the API
          // requires them while a tool call is answered); the loop itself never replays reasoning.
          ...(m.toolCalls?.length ? ((thinking.get(m.toolCalls[0]!.id) ?? []) as Block[]) : []),
          ...(m.content ? [{ type: 'text', text: m.content }] : []),
          ...(m.toolCalls ?? []).map((c) => ({ type: 'tool_use', id: c.id, name: c.name, input: c.arguments ?? {} })),
        ]);
        break;
      case 'tool':
        push('user', [{ type: 'tool_result', tool_use_id: m.toolCallId, content: m.content, ...(m.isError ? { is_error: true } : {}) }]);
        break;
    }
  }
  const out = turns.map((t) => {
    // tool_result blocks must lead the user turn that answers a tool_use.
    const blocks = t.role === 'user' ? [...t.content.filter((b) => b.type === 'tool_result'), ...t.content.filter((b) => b.type !== 'tool_result')] : t.content;
    const only = blocks.length === 1 ? blocks[0] : undefined;
    return { role: t.role, content: only && only.type === 'text' ? only.text : blocks };
  });
  return { ...(system.length ? { system: system.join('\n\n') } : {}), messages: out };
}

/** Extended-thinking budgets for an effort (budget_tokens, at least 1024). */
export const THINKING_BUDGET = { low: 2_048, medium: 8_192, high: 24_576 } as const;

/** Claude 3.7 and the Claude 4 family think; Claude 3 and 3.5 do not. */
export function canThink(model: string): boolean {
  const m = bareModel(model);
  return /^claude-/.test(m) && !/^claude-3-(?!7)/.test(m) && !/^claude-(?:instant|2)/.test(m);
}

export function anthropicBody(request: ChatRequest, model: string, thinking?: ReadonlyMap<string, Obj[]>): Obj {
  const { system, messages } = toAnthropic(request.messages, thinking);
  const body: Obj = { model, max_tokens: request.maxOutputTokens ?? defaultMaxTokens(model) };
  if (system !== undefined) body.system = system;
  body.messages = messages;
  if (request.tools.length) {
    body.tools = request.tools.map(pickDefinition).map((t) => ({ name: t.name, description: t.description, input_schema: anthropicInputSchema(t.parameters) }));
  }
  if (request.effort && canThink(model)) {
    // Thinking takes its budget out of max_tokens, and refuses any temperature but the default.
    const budget = THINKING_BUDGET[request.effort];
    body.thinking = { type: 'enabled', budget_tokens: budget };
    body.max_tokens = budget + (request.maxOutputTokens ?? defaultMaxTokens(model));
  } else body.temperature = clamp(request.temperature, 0, 1);
  if (request.onText) body.stream = true;
  return body;
}

/**
 * Assembles a streamed Messages reply (message_start, content_block_start/delta/stop, message_delta,
 * message_stop) into the message a non-streamed request gets, passing text on as it arrives. Tool
 * inputs come as partial JSON and thinking blocks with their signature; both are complete only at
 * the end.
 */
export class AnthropicStream {
  private message: Obj = {};
  private readonly blocks: Obj[] = [];
  private readonly partialJson = new Map<number, string>();

  constructor(private readonly onText: (text: string) => void) {}

  onData(data: string): void {
    const e = JSON.parse(data) as Obj;
    const index = typeof e.index === 'number' ? e.index : -1;
    switch (e.type) {
      case 'message_start':
        this.message = { ...((e.message ?? {}) as Obj) };
        break;
      case 'content_block_start':
        this.blocks[index] = { ...((e.content_block ?? {}) as Obj) };
        break;
      case 'content_block_delta': {
        const block = this.blocks[index];
        const d = (e.delta ?? {}) as Obj;
        if (!block) break;
        if (d.type === 'text_delta' && typeof d.text === 'string') {
          block.text = `${typeof block.text === 'string' ? block.text : ''}${d.text}`;
          this.onText(d.text);
        } else if (d.type === 'input_json_delta' && typeof d.partial_json === 'string') {
          this.partialJson.set(index, (this.partialJson.get(index) ?? '') + d.partial_json);
        } else if (d.type === 'thinking_delta' && typeof d.thinking === 'string') {
          block.thinking = `${typeof block.thinking === 'string' ? block.thinking : ''}${d.thinking}`;
        } else if (d.type === 'signature_delta' && typeof d.signature === 'string') block.signature = d.signature;
        break;
      }
      case 'content_block_stop': {
        const block = this.blocks[index];
        const json = this.partialJson.get(index);
        // The input stays a string when it is not JSON: parseArguments reports it to the loop.
        if (block && json !== undefined) block.input = json ? (parseArguments(json).parseError ? json : JSON.parse(json)) : {};
        break;
      }
      case 'message_delta': {
        const d = (e.delta ?? {}) as Obj;
        if (typeof d.stop_reason === 'string') this.message.stop_reason = d.stop_reason;
        if (e.usage && typeof e.usage === 'object') this.message.usage = { ...((this.message.usage ?? {}) as Obj), ...(e.usage as Obj) };
        break;
      }
      case 'error': {
        const err = (e.error ?? {}) as Obj;
        const overloaded = err.type === 'overloaded_error';
        throw new ProviderError(
          typeof err.message === 'string' ? err.message : 'The stream reported an error.',
          overloaded ? 529 : 502,
          false,
          `anthropic stream ${String(err.type)}`,
        );
      }
      default:
        break;
    }
  }

  result(): Obj {
    return { ...this.message, content: this.blocks.filter(Boolean) };
  }
}

export function parseAnthropicReply(json: unknown, host: string, thinking?: Map<string, Obj[]>): ChatResponse {
  const r = (json && typeof json === 'object' ? json : {}) as Obj;
  if (!Array.isArray(r.content)) throw new ProviderError(`${host} answered without message content.`, 200, false, 'anthropic reply without content');
  const texts: string[] = [];
  const thoughts: string[] = [];
  const signed: Obj[] = [];
  const toolCalls: ToolCallRequestPart[] = [];
  for (const block of r.content as Obj[]) {
    if (block?.type === 'text' && typeof block.text === 'string') texts.push(block.text);
    else if (block?.type === 'thinking' || block?.type === 'redacted_thinking') {
      signed.push(block);
      if (typeof block.thinking === 'string' && block.thinking.trim()) thoughts.push(block.thinking.trim());
    } else if (block?.type === 'tool_use' && typeof block.name === 'string') {
      const id = typeof block.id === 'string' && block.id ? block.id : `toolu_${randomBytes(12).toString('hex')}`;
      toolCalls.push({ id, name: block.name, ...parseArguments(block.input) });
    }
  }
  // Kept by the provider under the reply's first call, to go back with it while the calls are answered.
  if (thinking && signed.length && toolCalls.length) {
    thinking.set(toolCalls[0]!.id, signed);
    if (thinking.size > 500) thinking.delete(thinking.keys().next().value as string);
  }
  const u = r.usage as Obj | undefined;
  const n = (v: unknown) => (typeof v === 'number' ? v : 0);
  return {
    content: texts.join('\n'),
    toolCalls,
    ...(thoughts.length ? { reasoning: thoughts.join('\n\n') } : {}),
    // Cached prompt tokens still fill the window: they count as input.
    ...(u && typeof u.input_tokens === 'number'
      ? { usage: { inputTokens: u.input_tokens + n(u.cache_creation_input_tokens) + n(u.cache_read_input_tokens), outputTokens: n(u.output_tokens) } }
      : {}),
    ...(typeof r.stop_reason === 'string' ? { finishReason: r.stop_reason } : {}),
  };
}

/** The Anthropic Messages API: POST {base}/v1/messages with `x-api-key` and `anthropic-version`. */
export function createAnthropicProvider(config: ProviderConfig, deps: AdapterDeps): ModelProvider {
  const ep = resolveEndpoint('anthropic', config);
  const url = anthropicUrl(ep.baseUrl);
  const thinking = new Map<string, Obj[]>();
  return {
    name: config.name,
    kind: 'anthropic',
    async chat(request: ChatRequest): Promise<ChatResponse> {
      const { signal, key, model, headers, secrets } = startRequest(config, ep, request, deps.env ?? process.env);
      if (key) headers['x-api-key'] = key;
      headers['anthropic-version'] = ANTHROPIC_VERSION;
      const stream = request.onText ? new AnthropicStream(request.onText) : undefined;
      if (stream) headers.accept = 'text/event-stream, application/json';
      const json = await postJson({
        label: 'anthropic',
        endpoint: ep,
        url,
        headers,
        body: anthropicBody(request, model, thinking),
        signal,
        secrets,
        deps,
        ...(stream ? { sse: stream } : {}),
      });
      return parseAnthropicReply(json, ep.host, thinking);
    },
    contextWindow: (model: string) => contextWindowFor(model, config),
    countTokens: (text: string, model: string) => exactTokens(text, model) as number,
  };
}
