import { createRequire } from 'node:module';
import type { ProviderConfig } from 'memo-kernel/pack';

/** A model id without a router prefix (`openai/gpt-4o`, `models/gemini-2.0-flash`), lower case. */
export function bareModel(model: string): string {
  const m = String(model ?? '')
    .trim()
    .toLowerCase();
  return m.slice(m.lastIndexOf('/') + 1);
}

/**
 * Context windows (tokens) of well-known models, from the providers' model pages (OpenAI, Anthropic,
 * Google AI, xAI, DeepSeek, Meta/Groq, Qwen, Mistral, Google Gemma). The first matching row wins;
 * rows match the id without a router prefix, so `openai/gpt-4o` and `gpt-4o` agree.
 */
const WINDOWS: Array<[RegExp, number]> = [
  // OpenAI
  [/^gpt-4\.1/, 1_047_576],
  [/^gpt-5(?:\.\d+)?-chat/, 128_000],
  [/^gpt-5/, 400_000],
  [/^(?:chatgpt-4o|gpt-4o)/, 128_000],
  [/^gpt-4\.5/, 128_000],
  [/^gpt-4-turbo|^gpt-4-\d{4}-preview/, 128_000],
  [/^gpt-4-32k/, 32_768],
  [/^gpt-4(?:-\d{4})?$/, 8_192],
  [/^gpt-3\.5-turbo/, 16_385],
  [/^o1-(?:mini|preview)/, 128_000],
  [/^o[134](?:-|$)/, 200_000],
  [/^gpt-oss/, 131_072],
  // Anthropic: every Claude model has a 200K window (1M is an opt-in beta).
  [/^claude-/, 200_000],
  // Google
  [/^gemini-1\.5-pro/, 2_097_152],
  [/^gemini-1\.5-flash/, 1_048_576],
  [/^gemini-[23](?:\.\d+)?-/, 1_048_576],
  // xAI
  [/^grok-4-fast/, 2_000_000],
  [/^grok-(?:4|code-fast)/, 256_000],
  [/^grok-[23]/, 131_072],
  // DeepSeek
  [/^deepseek-(?:chat|reasoner)/, 128_000],
  // Open-weight families (any host: Groq, OpenRouter, Ollama tags such as `llama3.1:8b`)
  [/llama-?3\.[1-9]/, 131_072],
  [/llama-?4/, 131_072],
  [/llama-?3(?![.\d])/, 8_192],
  [/qwen2\.5/, 32_768],
  [/mixtral-8x7b/, 32_768],
  [/gemma-?3[:-]1b/, 32_768],
  [/gemma-?3/, 131_072],
  [/gemma-?2/, 8_192],
];

/** The window a table row gives for a model, if any. */
export function knownContextWindow(model: string): number | undefined {
  const m = bareModel(model);
  for (const [re, n] of WINDOWS) if (re.test(m)) return n;
  return undefined;
}

/**
 * A provider's window for a model: the configuration's `contextWindow` when it describes this
 * model (a local server started with `-c 8192` holds 8192 whatever the model could do), else the
 * table, else the configuration's value, else undefined.
 */
export function contextWindowFor(model: string, config: ProviderConfig): number | undefined {
  const configured = typeof config.contextWindow === 'number' && config.contextWindow > 0 ? config.contextWindow : undefined;
  if (configured && (!config.model || !model || bareModel(config.model) === bareModel(model))) return configured;
  return knownContextWindow(model) ?? configured;
}

// ---------------------------------------------------------------------------------------------
// Token counting.

type Encoding = 'o200k_base' | 'cl100k_base';
type Counter = (text: string, options?: { disallowedSpecial?: Set<string> }) => number;

/** The BPE encoding of an OpenAI-family model (gpt-tokenizer's model table), if it is one. */
export function encodingFor(model: string): Encoding | undefined {
  const m = bareModel(model);
  if (/^(?:gpt-4o|chatgpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|o[134](?:-|$)|gpt-oss|codex-)/.test(m)) return 'o200k_base';
  if (/^(?:gpt-4|gpt-3\.5|gpt-35)/.test(m)) return 'cl100k_base';
  return undefined;
}

const loaded = new Map<Encoding, Counter>();
const requireHere = createRequire(import.meta.url);

/** Loads an encoding on first use (each costs ~100-200 ms and several MB), so a pack load stays cheap. */
function counter(encoding: Encoding): Counter {
  let c = loaded.get(encoding);
  if (!c) {
    const mod = requireHere(`gpt-tokenizer/cjs/encoding/${encoding}`) as { countTokens: Counter };
    c = mod.countTokens;
    loaded.set(encoding, c);
  }
  return c;
}

// Nothing is disallowed: `<|endoftext|>` or `<|im_end|>` inside a message is counted as the plain
// text it is (it is sent as text too), never thrown on.
const PLAIN_TEXT = { disallowedSpecial: new Set<string>() };

/**
 * Exact token count with gpt-tokenizer for OpenAI-family models (o200k_base: gpt-4o, gpt-4.1,
 * gpt-4.5, gpt-5, o-series, gpt-oss; cl100k_base: gpt-4, gpt-3.5), or undefined for any other model.
 * Undefined tells the kernel's TokenCounter to estimate (characters / 3.5, rounded up) and to
 * correct that estimate from the input tokens each reply reports, which a fixed figure here would
 * switch off.
 */
export function exactTokens(text: string, model: string): number | undefined {
  const encoding = encodingFor(model);
  if (!encoding) return undefined;
  const t = typeof text === 'string' ? text : String(text ?? '');
  try {
    return counter(encoding)(t, PLAIN_TEXT);
  } catch {
    return estimateTokens(t);
  }
}

/** The estimate used where no tokenizer applies: characters / 3.5, rounded up. */
export function estimateTokens(text: string): number {
  return Math.ceil((typeof text === 'string' ? text.length : 0) / 3.5);
}
