import * as fs from 'node:fs';
import * as path from 'node:path';
import { isLocalProvider } from '../../../kernel/agent/capability-probe.js';
import { describeProvider } from '../../../kernel/providers/provider-settings.js';
import type { ToolResult } from '../../../kernel/tools/contract.js';
import { bootKernel, type Booted } from './conversation.js';

const KEY = 'gsk_test_NOT_A_REAL_GROQ_KEY_42';
const value = (r: ToolResult): any => (r.ok ? r.value : undefined);
const error = (r: ToolResult) => (r.ok ? undefined : r.error);

describe('configure_provider', () => {
  let booted: Booted;
  const fx = () => booted.fx;
  const configure = (args: Record<string, unknown>) => fx().kernel.invoke({ tool: 'configure_provider', args, caller: { kind: 'agent' } });
  const file = () => path.join(fx().dataDir, 'providers.json');
  const everything = () =>
    JSON.stringify([
      fx().prompter.asked,
      fx().kernel.audit.tail(),
      fs.existsSync(path.join(fx().dataDir, 'agent-audit.jsonl')) ? fs.readFileSync(path.join(fx().dataDir, 'agent-audit.jsonl'), 'utf8') : '',
    ]);

  beforeEach(async () => {
    booted = await bootKernel();
    fx().prompter.setFallback('allow-once');
  });
  afterEach(async () => fx().close());

  it('is declared dangerous, a write, with apiKey as a sensitive argument', () => {
    expect(fx().kernel.registry.get('configure_provider')!.spec).toMatchObject({ danger: 'dangerous', effect: 'write', sensitiveArgs: ['apiKey'] });
  });

  it('asks with a fields preview (key masked), stores the configuration with mode 0600 and returns it without the key', async () => {
    const r = await configure({ name: 'groq', kind: 'openai-compatible', preset: 'groq', model: 'llama-3.3-70b-versatile', apiKey: KEY });
    const asked = fx().prompter.asked.at(-1)!;
    expect(asked).toMatchObject({ tool: 'configure_provider', danger: 'dangerous', effect: 'write' });
    expect((asked.args as any).apiKey).toBe('[masked]');
    expect(asked.preview).toEqual({
      kind: 'fields',
      text: [
        'Add provider "groq":',
        '  kind: openai-compatible',
        '  preset: groq',
        "  endpoint: https://api.groq.com/openai/v1 (the groq preset's)",
        '  model: llama-3.3-70b-versatile',
        '  apiKey: [stored, masked]',
      ].join('\n'),
    });
    expect(value(r)).toEqual({
      stored: true,
      created: true,
      active: true,
      provider: { name: 'groq', kind: 'openai-compatible', preset: 'groq', model: 'llama-3.3-70b-versatile', apiKey: '[stored, masked]', local: false },
      changes: expect.any(Array),
      warnings: [],
      summary: 'added provider groq (openai-compatible/groq, llama-3.3-70b-versatile), key stored, masked',
    });
    expect(fs.statSync(file()).mode & 0o777).toBe(0o600);
    expect(fx().kernel.providerSettings.get('groq')).toMatchObject({ apiKey: KEY });
    // Everything a person or the audit trail sees is masked.
    const listing = fx()
      .kernel.providerSettings.list()
      .map((c) => describeProvider(c, 'groq'));
    expect(listing).toEqual([expect.objectContaining({ name: 'groq', apiKey: '[stored, masked]' })]);
    expect(JSON.stringify([listing, r])).not.toContain(KEY);
    expect(everything()).not.toContain(KEY);
    // The stored configuration builds a working provider.
    const p = fx().kernel.providers.create(fx().kernel.providerSettings.get('groq')!);
    expect(p.contextWindow('llama-3.3-70b-versatile')).toBe(131072);
  });

  it('asks every time: a stored forever-allow and global always-allow do not cover a change to a provider', async () => {
    const k = fx().kernel;
    k.permissions.set({ tool: 'configure_provider', decision: 'allow', plugin: 'providers', scope: 'forever' }, new Date());
    k.permissions.setAlwaysAllow(true);
    const before = fx().prompter.asked.length;
    expect((await configure({ name: 'groq', kind: 'openai-compatible', preset: 'groq', apiKeyEnv: 'GROQ_API_KEY' })).ok).toBe(true);
    expect(fx().prompter.asked.length).toBe(before + 1);
    expect(fx().prompter.asked.at(-1)).toMatchObject({ tool: 'configure_provider', concern: { rule: 'provider-setting' } });
    fx().prompter.setFallback('deny-once');
    expect(error(await configure({ name: 'groq', baseUrl: 'https://elsewhere.example/v1' }))?.code).toBe('PERMISSION_DENIED');
    expect(k.providerSettings.get('groq')?.baseUrl).toBeUndefined();
  });

  it('stores nothing when the person denies', async () => {
    fx().prompter.answer('deny-once');
    const r = await configure({ name: 'groq', kind: 'openai-compatible', preset: 'groq', apiKey: KEY });
    expect(error(r)?.code).toBe('PERMISSION_DENIED');
    expect(fs.existsSync(file())).toBe(false);
  });

  it('updates only the fields it is given, and a key variable replaces a stored key', async () => {
    await configure({ name: 'groq', kind: 'openai-compatible', preset: 'groq', model: 'llama-3.1-8b-instant', apiKey: KEY });
    const r = await configure({ name: 'groq', model: 'llama-3.3-70b-versatile' });
    expect(fx().prompter.asked.at(-1)!.preview).toEqual({
      kind: 'fields',
      text: 'Update provider "groq":\n  model: llama-3.1-8b-instant -> llama-3.3-70b-versatile',
    });
    expect(value(r)).toMatchObject({ created: false, provider: { model: 'llama-3.3-70b-versatile', apiKey: '[stored, masked]' } });
    expect(fx().kernel.providerSettings.get('groq')!.apiKey).toBe(KEY);

    const env = await configure({ name: 'groq', apiKeyEnv: 'MEMO_TEST_GROQ_KEY_UNSET' });
    expect(fx().prompter.asked.at(-1)!.preview!.text).toBe(
      'Update provider "groq":\n  apiKey: [stored, masked] -> from $MEMO_TEST_GROQ_KEY_UNSET\nwarning: $MEMO_TEST_GROQ_KEY_UNSET is not set in this process: set it before chatting.',
    );
    expect(value(env).provider).toEqual({
      name: 'groq',
      kind: 'openai-compatible',
      preset: 'groq',
      model: 'llama-3.3-70b-versatile',
      apiKeyEnv: 'MEMO_TEST_GROQ_KEY_UNSET',
      apiKey: 'from $MEMO_TEST_GROQ_KEY_UNSET',
      local: false,
    });
    expect(fs.readFileSync(file(), 'utf8')).not.toContain(KEY);
  });

  it('says when a new key replaces a stored one without showing either', async () => {
    await configure({ name: 'claude', kind: 'anthropic', model: 'claude-sonnet-4-20250514', apiKey: 'sk-ant-test-first-key-000000' });
    await configure({ name: 'claude', apiKey: 'sk-ant-test-second-key-11111' });
    const text = fx().prompter.asked.at(-1)!.preview!.text;
    expect(text).toBe('Update provider "claude":\n  apiKey: [stored, masked] -> a new key, stored, masked');
    expect(everything()).not.toMatch(/first-key|second-key/);
  });

  it.each([
    ['custom without a baseUrl', { kind: 'openai-compatible', preset: 'custom' }, 'The custom preset needs a baseUrl.'],
    ['openai-compatible without preset or baseUrl', { kind: 'openai-compatible' }, 'An openai-compatible provider needs a preset'],
    [
      'a local preset on another machine',
      { kind: 'openai-compatible', preset: 'ollama', baseUrl: 'http://192.168.1.20:11434/v1' },
      'The ollama preset is a server on this machine: its baseUrl must be a loopback address',
    ],
    [
      'apiKey together with apiKeyEnv',
      { kind: 'openai-compatible', preset: 'groq', apiKey: KEY, apiKeyEnv: 'GROQ_API_KEY' },
      'Give either apiKey or apiKeyEnv, not both.',
    ],
    ['a new provider without a kind', { preset: 'groq' }, 'A new provider needs a kind'],
    ['a preset of another kind', { kind: 'anthropic', preset: 'groq' }, '"groq" is not a preset of the anthropic kind'],
    [
      'a key over plain http to another machine',
      { kind: 'openai-compatible', preset: 'custom', baseUrl: 'http://10.0.0.5:8000/v1', apiKey: KEY },
      'plain http on another machine',
    ],
    [
      'credentials in the baseUrl',
      { kind: 'openai-compatible', preset: 'custom', baseUrl: 'https://user:pw@gateway.example/v1' },
      'must not carry credentials',
    ],
    ['a baseUrl that is not a URL', { kind: 'gemini', baseUrl: 'not a url' }, 'is not a URL'],
  ])('refuses %s and stores nothing', async (_label, args, message) => {
    const r = await configure({ name: 'bad', ...args });
    expect(error(r)).toMatchObject({ code: 'VALIDATION', message: expect.stringContaining(message) });
    expect(fx().prompter.asked.at(-1)!.preview).toEqual({ kind: 'text', text: expect.stringContaining(`Provider "bad" will not be stored: `) });
    expect(fs.existsSync(file())).toBe(false);
    expect(everything()).not.toContain(KEY);
  });

  it('accepts a local preset on a loopback address and a custom server elsewhere without a key', async () => {
    expect(
      value(
        await configure({
          name: 'local-llama',
          kind: 'openai-compatible',
          preset: 'llamacpp',
          baseUrl: 'http://localhost:8081/v1',
          model: 'llama3.1:8b',
          contextWindow: 8192,
        }),
      ),
    ).toMatchObject({
      provider: { name: 'local-llama', preset: 'llamacpp', baseUrl: 'http://localhost:8081/v1', contextWindow: 8192, apiKey: 'none' },
    });
    expect(value(await configure({ name: 'lan', kind: 'openai-compatible', preset: 'custom', baseUrl: 'http://192.168.1.20:11434/v1/' }))).toMatchObject({
      provider: { baseUrl: 'http://192.168.1.20:11434/v1' },
    });
    expect(fx().kernel.providers.create(fx().kernel.providerSettings.get('local-llama')!).contextWindow('llama3.1:8b')).toBe(8192);
  });

  it('stores whether the model runs on this machine, so the kernel probes it without knowing preset names', async () => {
    await configure({ name: 'ollama', kind: 'openai-compatible', preset: 'ollama', model: 'qwen3' });
    await configure({ name: 'lan', kind: 'openai-compatible', preset: 'custom', baseUrl: 'http://192.168.1.20:11434/v1' });
    const stored = JSON.parse(fs.readFileSync(file(), 'utf8')).providers;
    expect(stored.ollama).toMatchObject({ preset: 'ollama', local: true });
    expect(stored.ollama.baseUrl).toBeUndefined();
    expect(stored.lan.local).toBe(false);
    expect(isLocalProvider(fx().kernel.providerSettings.get('ollama')!)).toBe(true);
    expect(isLocalProvider(fx().kernel.providerSettings.get('lan')!)).toBe(false);
  });

  it('warns in the preview when a hosted preset sends its key somewhere else', async () => {
    await configure({ name: 'work', kind: 'openai-compatible', preset: 'openai', baseUrl: 'https://proxy.example.com/v1', apiKeyEnv: 'PATH' });
    expect(fx().prompter.asked.at(-1)!.preview!.text).toContain("warning: The key will go to proxy.example.com, not to the openai preset's api.openai.com.");
  });

  it('refuses an invalid name before asking anyone', async () => {
    const r = await configure({ name: 'My Provider', kind: 'gemini' });
    expect(error(r)?.code).toBe('INVALID_ARGS');
    expect(fx().prompter.asked).toHaveLength(0);
  });
});
