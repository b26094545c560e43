/**
 * The providers pack: the OpenAI-compatible, Anthropic and Gemini wire formats, contributed to the
 * kernel through activate(), and the `configure_provider` tool. The kernel talks to this pack only
 * through those two exports and the `providers.configuration` service activate() offers.
 */
import { defineTools, type Disposable, type PackApi, type ProviderFactory } from 'memo-kernel/pack';
import { createAnthropicProvider } from './anthropic.js';
import { configureProvider, planConfiguration } from './configure.js';
import { createGeminiProvider } from './gemini.js';
import { createLocalGgufProvider, LLAMA_CPP_KIND } from './local-gguf.js';
import { createOpenAiProvider } from './openai.js';
import { KINDS, type Kind } from './presets.js';
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
  // `memo provider add` checks a configuration of these kinds exactly as configure_provider does,
  // through the kernel's service lookup (the kernel never imports a pack).
  api.provide('providers.configuration', {
    kinds: [...KINDS],
    plan: (args: Parameters<typeof planConfiguration>[0]) => {
      const { next, warnings } = planConfiguration(args, undefined);
      return { next, warnings };
    },
  });
  return {
    dispose: () => {
      if (current === api) current = undefined;
    },
  };
}

export const tools = defineTools<ToolArgs>({ configure_provider: configureProvider(() => current) });
