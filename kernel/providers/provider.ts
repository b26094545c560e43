/**
 * The provider-neutral model contract. Adapters (OpenAI-compatible, Anthropic, Gemini, local
 * GGUF) live in the `providers` pack and translate this to and from their wire formats; the agent
 * loop only ever sees these shapes.
 */
import type { JsonSchema } from '../tools/contract.js';

export interface ToolCallRequestPart {
  /** The provider's call id (generated when a provider has none, e.g. Gemini). */
  id: string;
  name: string;
  /** Parsed arguments; `{}` when they could not be parsed (see `parseError`). */
  arguments: Record<string, unknown>;
  /** Set when the model's arguments were not valid JSON: the loop answers the call with an error. */
  parseError?: string;
}

export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls?: ToolCallRequestPart[] }
  | { role: 'tool'; toolCallId: string; name: string; content: string; isError?: boolean };

/** Exactly what is sent to the model for one tool: nothing else (no kernel bookkeeping fields). */
export interface ToolDefinition {
  name: string;
  description: string;
  parameters: JsonSchema;
}

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  tools: ToolDefinition[];
  temperature: number;
  /** Upper bound for the reply, when the adapter supports one. */
  maxOutputTokens?: number;
  /** The context size to ask a local server for (llama.cpp, Ollama), from the loop's budget. */
  contextTokens?: number;
  signal: AbortSignal;
  /** Reasoning effort, for models that have the setting (OpenAI reasoning_effort, Anthropic/Gemini thinking budgets). */
  effort?: 'low' | 'medium' | 'high';
  /**
   * Called with each piece of the reply's text as it arrives, when the adapter streams. The reply is
   * still returned whole: tool calls run only after it is complete, so the tool loop is unchanged.
   */
  onText?: (text: string) => void;
}

export interface ChatResponse {
  content: string;
  toolCalls: ToolCallRequestPart[];
  usage?: { inputTokens: number; outputTokens: number };
  /** The provider's own finish reason, for diagnostics. */
  finishReason?: string;
  /** The model's reasoning, where the provider returns it: shown to the person, never sent back to the model. */
  reasoning?: string;
}

/** A configured model endpoint. */
export interface ModelProvider {
  /** The configured name (e.g. `openai`, `local-llama`). */
  readonly name: string;
  /** The wire format (`openai-compatible`, `anthropic`, `gemini`, ...). */
  readonly kind: string;
  /**
   * The model runs on this machine (a local server or in process): the kernel checks it can call
   * tools before giving it any. The pack that made the provider knows its presets; the kernel does not.
   */
  readonly local?: boolean;
  chat(request: ChatRequest): Promise<ChatResponse>;
  /** The model's context window in tokens, when known. */
  contextWindow(model: string): number | undefined;
  /** Token count of a serialised request piece; adapters with a real tokenizer override the estimate. */
  countTokens?(text: string, model: string): number;
}

/** What a provider configuration holds (data/providers.json). Keys are never logged. */
export interface ProviderConfig {
  name: string;
  kind: string;
  /** A preset of the kind (`openai`, `groq`, `openrouter`, `xai`, `ollama`, `lmstudio`, `llamacpp`, `custom`, ...). */
  preset?: string;
  baseUrl?: string;
  model?: string;
  /** The name of an environment variable holding the API key (preferred over a stored key). */
  apiKeyEnv?: string;
  /** A stored key (file mode 0600); masked everywhere. */
  apiKey?: string;
  contextWindow?: number;
  /** Extra headers some gateways need (OpenRouter's HTTP-Referer, ...). */
  headers?: Record<string, string>;
  /**
   * The model runs on this machine (probe it before giving it tools). Set by the pack that stores
   * the configuration, which knows its presets; the kernel never names them.
   */
  local?: boolean;
}

/** Turns a configuration into a provider. Registered by packs for the kinds they implement. */
export type ProviderFactory = (config: ProviderConfig, deps: { fetch: typeof fetch }) => ModelProvider;

/**
 * A provider failure the person can act on: `message` is the provider's human-readable text
 * ("invalid x-api-key"), never its raw JSON; `detail` keeps more for the audit (never the key).
 */
export class ProviderError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
    readonly retryable: boolean,
    readonly detail?: string,
  ) {
    super(message);
    this.name = 'ProviderError';
  }
}

/**
 * True for a ProviderError from any copy of this module (a pack loaded with its own copy of the
 * kernel, an older pack build): checked by its name and fields, never `instanceof`.
 */
export function isProviderError(err: unknown): err is ProviderError {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { name?: unknown; message?: unknown; status?: unknown; retryable?: unknown };
  return e.name === 'ProviderError' && typeof e.message === 'string' && (e.status === null || typeof e.status === 'number') && typeof e.retryable === 'boolean';
}

/**
 * What the pack that owns some provider kinds offers under `providers.configuration` (looked up, never
 * imported): its own checks of a configuration, so `memo provider add` refuses exactly what
 * `configure_provider` refuses. Throws a VALIDATION MemoError with the reason.
 */
export interface ProviderConfigurationService {
  readonly kinds: readonly string[];
  plan(args: { name: string; kind?: string; preset?: string; baseUrl?: string; model?: string; apiKey?: string; apiKeyEnv?: string; contextWindow?: number }): {
    next: ProviderConfig;
    warnings: string[];
  };
}
