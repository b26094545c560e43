import * as path from 'node:path';
import type { ChatMessage, ChatRequest, ChatResponse, ModelProvider, ProviderConfig, ProviderFactory, ToolDefinition } from '../../../kernel/index.js';
import { makeKernel, type Fixture } from '../../helpers/kernel-fixture.js';

export const SYSTEM = 'You are Memo. Use the tools when they help.';
export const USER = 'What does notes.txt say, and how is the weather in Paris?';
export const NOTES = 'buy milk\ncall Ada';
export const WEATHER_ERROR = 'Error TOOL_FAILED: the weather service did not answer';
/** Not a real key; the 401 fixture echoes it the way OpenAI's error message does. */
export const KEY = 'sk-test-NOT-A-REAL-KEY-0123456789';

/**
 * The two tools, as the kernel's registry holds them: with bookkeeping fields (danger, effect,
 * pack, ...) that must never reach a provider. Typed as ToolDefinition the way a careless caller
 * would pass them.
 */
export const TOOLS = [
  {
    name: 'read_file',
    description: "Read a file's contents (max 1MB)",
    parameters: {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      properties: { path: { type: 'string', minLength: 1, description: 'Path relative to the project root' } },
      required: ['path'],
      additionalProperties: false,
    },
    danger: 'safe',
    effect: 'read',
    pack: 'fs-tools',
    timeoutMs: 120000,
  },
  {
    name: 'get_weather',
    description: 'Current weather for a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'], default: 'celsius' } },
      required: ['city'],
      additionalProperties: false,
    },
    danger: 'medium',
    effect: 'read',
    sensitiveArgs: ['token'],
    _registeredAt: 1733400000000,
  },
] as unknown as ToolDefinition[];

export function request(messages: ChatMessage[], extra: Partial<ChatRequest> = {}): ChatRequest {
  return { model: 'gpt-4o', messages, tools: TOOLS, temperature: 0.2, signal: new AbortController().signal, ...extra };
}

export function firstMessages(): ChatMessage[] {
  return [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: USER },
  ];
}

/** The conversation after the model's tool calls ran: user -> assistant tool calls -> results. */
export function withResults(reply: ChatResponse): ChatMessage[] {
  const [read, weather] = reply.toolCalls;
  if (!read || !weather) throw new Error(`expected two tool calls, got ${reply.toolCalls.length}`);
  return [
    ...firstMessages(),
    { role: 'assistant', content: reply.content, toolCalls: reply.toolCalls },
    { role: 'tool', toolCallId: read.id, name: read.name, content: NOTES },
    { role: 'tool', toolCallId: weather.id, name: weather.name, content: WEATHER_ERROR, isError: true },
  ];
}

export interface Booted {
  fx: Fixture;
  /** The factories the providers pack registered (to build providers with a fake sleep/clock). */
  factories: Map<string, ProviderFactory>;
  create(config: Partial<ProviderConfig> & { kind: string }): ModelProvider;
}

/** A real kernel with the built-in packs loaded (the providers pack among them). */
export async function bootKernel(): Promise<Booted> {
  const fx = makeKernel({ packs: [] });
  const factories = new Map<string, ProviderFactory>();
  const registry = fx.kernel.providers;
  const register = registry.register.bind(registry);
  registry.register = (kind, factory, owner) => {
    factories.set(kind, factory);
    return register(kind, factory, owner);
  };
  await fx.kernel.loadPacks([{ dir: path.resolve('plugins'), source: 'builtin' }]);
  return { fx, factories, create: (config) => fx.kernel.providers.create({ name: 'test', ...config }) };
}

/** Test overrides of a provider configuration: a key given as undefined is left out (not set), as in a config file. */
export type ConfigOverrides = { [K in keyof ProviderConfig]?: ProviderConfig[K] | undefined };

export function configWith(base: ProviderConfig, overrides: ConfigOverrides): ProviderConfig {
  const merged: Record<string, unknown> = { ...base, ...overrides };
  for (const key of Object.keys(merged)) if (merged[key] === undefined) delete merged[key];
  return merged as unknown as ProviderConfig; // base's required keys are never overridden with undefined
}

/** Waits for a rejected promise and returns what it was rejected with. */
export async function rejection(p: Promise<unknown>): Promise<any> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}
