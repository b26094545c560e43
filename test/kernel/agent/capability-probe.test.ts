import { CapabilityProbe, isLocalProvider } from '../../../kernel/agent/capability-probe.js';
import { ProviderError, type ProviderConfig } from '../../../kernel/providers/provider.js';
import { ManualClock } from '../../../kernel/clock.js';
import { reply, ScriptedProvider, toolCall } from '../../helpers/scripted-provider.js';

const config: ProviderConfig = { name: 'local', kind: 'openai-compatible', preset: 'ollama', baseUrl: 'http://127.0.0.1:11434/v1', model: 'qwen' };

/** A model that calls the tool and then repeats the number from the tool result. */
const capable = () =>
  new ScriptedProvider((req) => {
    const last = req.messages.at(-1)!;
    return last.role === 'tool' ? reply(`It is ${last.content}.`) : reply('', toolCall('get_magic_number'));
  });

describe('the tool-calling capability probe', () => {
  it('passes a model that calls the tool and continues after the result, and caches it for 10 minutes', async () => {
    const clock = new ManualClock();
    const probe = new CapabilityProbe(clock);
    const provider = capable();
    expect(await probe.probe(provider, config, 'qwen')).toMatchObject({ toolCalling: true, cached: false });
    expect(provider.requests).toHaveLength(2);
    clock.advance(9 * 60_000);
    expect(await probe.probe(provider, config, 'qwen')).toMatchObject({ toolCalling: true, cached: true });
    expect(provider.requests).toHaveLength(2);
    clock.advance(60_000);
    await probe.probe(provider, config, 'qwen');
    expect(provider.requests).toHaveLength(4);
  });

  it('fails a model that answers without calling the tool, with a reason', async () => {
    const probe = new CapabilityProbe(new ManualClock());
    const v = await probe.probe(new ScriptedProvider(() => reply('The magic number is 42.')), config, 'tiny');
    expect(v).toMatchObject({ toolCalling: false, reason: expect.stringContaining('without calling the test tool') });
  });

  it('fails a model that calls the tool but ignores its result', async () => {
    const probe = new CapabilityProbe(new ManualClock());
    const provider = new ScriptedProvider((req) => (req.messages.at(-1)!.role === 'tool' ? reply('I do not know.') : reply('', toolCall('get_magic_number'))));
    expect((await probe.probe(provider, config, 'm')).toolCalling).toBe(false);
  });

  it('probes again when the base URL, model or key changes, or when forced', async () => {
    const probe = new CapabilityProbe(new ManualClock());
    const provider = capable();
    await probe.probe(provider, config, 'qwen');
    await probe.probe(provider, { ...config, baseUrl: 'http://127.0.0.1:8080/v1' }, 'qwen');
    await probe.probe(provider, config, 'llama');
    await probe.probe(provider, { ...config, apiKey: 'k1-abcdef' }, 'qwen');
    await probe.probe(provider, config, 'qwen', { force: true });
    expect(provider.requests).toHaveLength(10);
    expect(probe.key({ ...config, apiKey: 'k1-abcdef' }, 'qwen')).not.toContain('k1-abcdef');
  });

  it('never caches an unreachable server', async () => {
    const probe = new CapabilityProbe(new ManualClock());
    let up = false;
    const provider = new ScriptedProvider((req) => {
      if (!up) throw new ProviderError('could not reach http://127.0.0.1:11434', null, true);
      return req.messages.at(-1)!.role === 'tool' ? reply(`${req.messages.at(-1)!.content}`) : reply('', toolCall('get_magic_number'));
    });
    await expect(probe.probe(provider, config, 'qwen')).rejects.toThrow('could not reach');
    up = true;
    expect((await probe.probe(provider, config, 'qwen')).toolCalling).toBe(true);
  });

  it('recognises local providers by the flag their pack stored or a loopback base URL, never by preset name', () => {
    expect(isLocalProvider(config)).toBe(true);
    expect(isLocalProvider({ name: 'x', kind: 'openai-compatible', preset: 'ollama', local: true })).toBe(true);
    expect(isLocalProvider({ name: 'x', kind: 'openai-compatible', preset: 'custom', baseUrl: 'http://localhost:9000/v1' })).toBe(true);
    expect(isLocalProvider({ name: 'x', kind: 'openai-compatible', preset: 'custom', baseUrl: 'http://[::1]:9000/v1' })).toBe(true);
    expect(isLocalProvider({ name: 'x', kind: 'openai-compatible', preset: 'openai', baseUrl: 'https://api.openai.com/v1' })).toBe(false);
    expect(isLocalProvider({ name: 'x', kind: 'openai-compatible', preset: 'custom', baseUrl: 'http://127.0.0.1.evil.com/v1' })).toBe(false);
    // The kernel does not know what the ollama preset means: only its pack's flag says so.
    expect(isLocalProvider({ name: 'x', kind: 'openai-compatible', preset: 'ollama' })).toBe(false);
  });

  it('keeps a stored llama-cpp configuration (from before packs set the flag) local', () => {
    expect(isLocalProvider({ name: 'g', kind: 'llama-cpp', preset: 'gguf', model: '/models/x.gguf' })).toBe(true);
  });
});
