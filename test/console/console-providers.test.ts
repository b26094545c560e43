/**
 * Providers through the web console's API over real loopback HTTP, with the real providers pack:
 * a configuration is checked by the pack's own providers.configuration service (what `memo
 * provider add` refuses is refused here with the same reason), keys are write-only (stored, never
 * sent back; an empty key field keeps the stored key), probing talks to a model on loopback in
 * OpenAI's wire format, and a provider is removed.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { consoleFixture, post, raw, type ConsoleFixture } from './console-helpers.js';

const KEY = `sk-${'z9'.repeat(24)}`;

/** Answers the capability probe: calls get_magic_number, then says the number it was given. */
function probeServer() {
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      const json = JSON.parse(body);
      const last = json.messages.at(-1);
      const message =
        last.role === 'tool'
          ? { role: 'assistant', content: last.content }
          : { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_magic_number', arguments: '{}' } }] };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'chatcmpl-1',
          object: 'chat.completion',
          created: 1,
          model: json.model,
          choices: [{ index: 0, message, finish_reason: message.content === null ? 'tool_calls' : 'stop' }],
        }),
      );
    });
  });
  return server;
}

describe('web console: providers', () => {
  let c: ConsoleFixture;
  let cookie: string;
  const model = probeServer();
  let modelUrl: string;

  beforeAll(async () => {
    c = await consoleFixture();
    await c.fx.kernel.packs.load([{ dir: path.resolve('plugins'), source: 'builtin', only: ['providers'] }]);
    cookie = await c.login();
    await new Promise<void>((r) => model.listen(0, '127.0.0.1', () => r()));
    modelUrl = `http://127.0.0.1:${(model.address() as AddressInfo).port}/v1`;
  });
  afterAll(async () => {
    model.closeAllConnections();
    await new Promise<void>((r) => model.close(() => r()));
    await c.close();
  });

  const send = async (p: string, body: unknown) => {
    const r = await post(c.origin, `/ui/api${p}`, cookie, body);
    return { status: r.status, body: JSON.parse(r.body), raw: r.body };
  };
  const list = async () => {
    const r = await raw(`${c.origin}/ui/api/providers`, { headers: { Cookie: cookie } });
    return { body: JSON.parse(r.body), raw: r.body };
  };

  it("offers the providers pack's configure_provider schema as the form", async () => {
    const { body } = await list();
    expect(body.form.properties.kind.enum).toEqual(['openai-compatible', 'anthropic', 'gemini']);
    expect(body.form.properties.preset.enum).toContain('ollama');
    expect(body.form.required).toEqual(['name']);
  });

  it('adds a provider with a key that is stored but never sent back, and keeps it when an update leaves the key empty', async () => {
    const added = await send('/providers', { name: 'hosted', kind: 'openai-compatible', preset: 'openai', model: 'gpt-4o', apiKey: KEY, baseUrl: '' });
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({
      created: true,
      provider: { name: 'hosted', preset: 'openai', model: 'gpt-4o', apiKey: '[stored, masked]', active: true },
    });
    expect(added.raw).not.toContain(KEY);
    expect((await list()).raw).not.toContain(KEY);
    expect(c.fx.kernel.providerSettings.get('hosted')?.apiKey).toBe(KEY);
    expect(fs.statSync(path.join(c.fx.dataDir, 'providers.json')).mode & 0o777).toBe(0o600);

    const updated = await send('/providers', { name: 'hosted', kind: 'openai-compatible', preset: 'openai', model: 'gpt-4.1', apiKey: '' });
    expect(updated.status).toBe(200);
    expect(updated.body.provider).toMatchObject({ model: 'gpt-4.1', apiKey: '[stored, masked]' });
    expect(c.fx.kernel.providerSettings.get('hosted')).toMatchObject({ model: 'gpt-4.1', apiKey: KEY });

    // The stored key is never sent anywhere else on its own: a new address (or preset) needs the key again.
    for (const redirect of [{ preset: 'custom', baseUrl: modelUrl }, { preset: 'openai', baseUrl: modelUrl }, { preset: 'groq' }]) {
      const moved = await send('/providers', { name: 'hosted', kind: 'openai-compatible', model: 'gpt-4.1', apiKey: '', ...redirect });
      expect(moved.status).toBe(400);
      expect(moved.body.message).toContain('enter the key again');
      expect(c.fx.kernel.providerSettings.get('hosted')).toMatchObject({ preset: 'openai', apiKey: KEY });
      expect(c.fx.kernel.providerSettings.get('hosted')?.baseUrl).toBeUndefined();
    }
  });

  it('refuses what memo provider add refuses, with the pack’s reason, and stores nothing', async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ name: 'bad1', kind: 'anthropic', preset: 'groq' }, /not a preset of the anthropic kind/],
      [{ name: 'bad2', kind: 'openai-compatible', preset: 'ollama', baseUrl: 'http://10.1.2.3:11434/v1' }, /must be a loopback address/],
      [{ name: 'bad3', kind: 'openai-compatible', preset: 'custom', baseUrl: 'http://models.example/v1', apiKey: KEY }, /plain http on another machine/],
      [{ name: 'bad4', kind: 'openai-compatible' }, /needs a preset/],
      [{ name: 'Bad Name', kind: 'openai-compatible', preset: 'openai' }, /must be lowercase/],
      [{ name: 'bad5', kind: 'openai-compatible', preset: 'openai', contextWindow: 12 }, /at least 1024/],
      [{ name: 'bad6' }, /Choose the kind/],
    ];
    for (const [body, reason] of cases) {
      const r = await send('/providers', body);
      expect([r.status, r.body.message]).toEqual([400, expect.stringMatching(reason)]);
      expect(r.raw).not.toContain(KEY);
    }
    expect(c.fx.kernel.providerSettings.list().map((p) => p.name)).toEqual(['hosted']);
  });

  it('probes a model on loopback for tool calling, and reports an unreachable one', async () => {
    expect((await send('/providers', { name: 'local', kind: 'openai-compatible', preset: 'custom', baseUrl: modelUrl, model: 'tiny' })).status).toBe(201);
    expect((await send('/providers/local/probe', {})).body).toEqual({
      provider: 'local',
      model: 'tiny',
      toolCalling: true,
      reason: 'the model called the test tool and used its result',
    });
    await send('/providers', { name: 'gone', kind: 'openai-compatible', preset: 'custom', baseUrl: 'http://127.0.0.1:9/v1', model: 'x' });
    const gone = await send('/providers/gone/probe', {});
    expect(gone.body).toMatchObject({ provider: 'gone', toolCalling: false, reason: expect.stringMatching(/^unreachable: /) });
    expect((await send('/providers/nobody/probe', {})).status).toBe(404);
  });

  it('removes a provider, and refuses a change from another origin', async () => {
    const foreign = await raw(`${c.origin}/ui/api/providers/gone/remove`, {
      method: 'POST',
      headers: { Cookie: cookie, Origin: 'http://evil.example', 'Content-Type': 'application/json' },
      body: '{}',
    });
    expect(foreign.status).toBe(403);
    expect((await send('/providers/gone/remove', {})).body).toEqual({ removed: 'gone', active: 'hosted' });
    expect(c.fx.kernel.providerSettings.get('gone')).toBeUndefined();
    expect((await send('/providers/gone/remove', {})).status).toBe(404);
  });
});
