/**
 * The providers pack: the OpenAI-compatible, Anthropic and Gemini wire formats, contributed to the
 * kernel through activate(), and the `configure_provider` tool. The kernel talks to this pack only
 * through those two exports.
 */
import { defineTools, type Disposable, type PackApi, type ProviderFactory } from 'memo-kernel/pack';
import { createAnthropicProvider } from './anthropic.js';
import { configureProvider } from './configure.js';
import { createGeminiProvider } from './gemini.js';
import { createLocalGgufProvider, LLAMA_CPP_KIND } from './local-gguf.js';
import { createOpenAiProvider } from './openai.js';
import type { Kind } from './presets.js';
import type { ToolArgs } from './tool-args.js';

/** The api of the current activation: the tool stores configurations through its settings. */
let current: PackApi | undefined;

const FACTORIES: Record<Kind, ProviderFactory> = {
  'openai-compatible': createOpenAiProvider,
  anthropic: createAnthropicProvider,
  gemini: createGeminiProvider,
};

export function activate(api: PackApi): Disposable {
  current = api;
  for (const [kind, factory] of Object.entries(FACTORIES)) api.providers.register(kind, factory);
  api.providers.register(LLAMA_CPP_KIND, createLocalGgufProvider);
  return {
    dispose: () => {
      if (current === api) current = undefined;
    },
  };
}

export const tools = defineTools<ToolArgs>({ configure_provider: configureProvider(() => current) });
