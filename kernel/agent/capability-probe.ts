import { createHash } from 'node:crypto';
import { Clock } from '../clock.js';
import { inject, injectable } from '../di.js';
import { isProviderError, type ChatMessage, type ModelProvider, type ProviderConfig, type ToolDefinition } from '../providers/provider.js';
import { resolveApiKey } from '../providers/provider-settings.js';
import { isLoopback } from '../util/is-loopback.js';

export const PROBE_TTL_MS = 10 * 60_000;

export interface ProbeVerdict {
  toolCalling: boolean;
  /** Why it failed, in a sentence a person can act on. */
  reason: string;
  checkedAt: number;
  cached: boolean;
}

const PROBE_TOOL: ToolDefinition = {
  name: 'get_magic_number',
  description: 'Returns the magic number. Call it whenever the user asks for the magic number.',
  parameters: { type: 'object', properties: {}, additionalProperties: false },
};

/**
 * Can this local model emit a tool call and then continue after the tool's result? Costs two
 * generations, so a verdict is cached for 10 minutes per (preset, base URL, model, key). A change
 * to any of those probes again; an unreachable server is never cached (start it, and the next
 * message re-probes); `force` re-probes a model swapped behind an unchanged configuration.
 */
@injectable()
export class CapabilityProbe {
  private readonly cache = new Map<string, ProbeVerdict>();

  constructor(@inject(Clock) private readonly clock: Clock) {}

  key(config: ProviderConfig, model: string): string {
    const key = resolveApiKey(config) ?? '';
    // The key is part of the identity but never kept in clear: only a hash of it.
    const keyHash = key ? createHash('sha256').update(key).digest('hex').slice(0, 16) : '';
    return JSON.stringify([config.kind, config.preset ?? '', config.baseUrl ?? '', model, keyHash]);
  }

  async probe(provider: ModelProvider, config: ProviderConfig, model: string, options: { force?: boolean; signal?: AbortSignal } = {}): Promise<ProbeVerdict> {
    const k = this.key(config, model);
    const hit = this.cache.get(k);
    if (hit && !options.force && this.clock.now() - hit.checkedAt < PROBE_TTL_MS) return { ...hit, cached: true };
    this.cache.delete(k);
    const signal = options.signal ?? new AbortController().signal;
    const messages: ChatMessage[] = [{ role: 'user', content: 'What is the magic number? Use the get_magic_number tool, then answer with the number only.' }];
    let verdict: ProbeVerdict;
    try {
      const first = await provider.chat({ model, messages, tools: [PROBE_TOOL], temperature: 0, signal, maxOutputTokens: 200 });
      const call = first.toolCalls.find((c) => c.name === PROBE_TOOL.name);
      if (!call) {
        verdict = this.fail('the model answered without calling the test tool, so its chat template probably does not support tool calls');
      } else {
        messages.push(
          { role: 'assistant', content: first.content, toolCalls: [call] },
          { role: 'tool', toolCallId: call.id, name: call.name, content: '7341' },
        );
        const second = await provider.chat({ model, messages, tools: [PROBE_TOOL], temperature: 0, signal, maxOutputTokens: 200 });
        verdict = second.content.includes('7341')
          ? { toolCalling: true, reason: 'the model called the test tool and used its result', checkedAt: this.clock.now(), cached: false }
          : this.fail('the model called the test tool but did not continue correctly after its result');
      }
    } catch (err) {
      // Unreachable or failing servers are not remembered: the next message tries again.
      if (isProviderError(err) && (err.status === null || err.retryable)) throw err;
      verdict = this.fail(`the tool-calling request was rejected: ${(err as Error).message}`);
    }
    this.cache.set(k, verdict);
    return verdict;
  }

  private fail(reason: string): ProbeVerdict {
    return { toolCalling: false, reason, checkedAt: this.clock.now(), cached: false };
  }
}

/**
 * True for a configuration that points at a model on this machine (probe it before giving it
 * tools): one its pack marked `local`, or one whose base URL is a loopback address. A configuration
 * stored before packs set the flag is also local when its kind is `llama-cpp` (an in-process GGUF
 * model); the kernel names no presets.
 */
export function isLocalProvider(config: ProviderConfig): boolean {
  if (config.local === true || config.kind === 'llama-cpp') return true;
  return config.baseUrl !== undefined && isLoopback(config.baseUrl);
}
