/**
 * MCP profiles and tool-search mode on a real endpoint, with the real SDK clients of both lines: a
 * profile limits the list and the calls (a tool outside it is UNKNOWN_TOOL from the pipeline, audited);
 * in tool-search mode a client is listed find_tools and what it found, is told with
 * notifications/tools/list_changed when that grows, and calls a found tool at once. A stateless
 * (2026-07-28) client keeps what it found between requests by its declared name@version.
 */
import { PassThrough } from 'node:stream';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { clientTokenLookup, tokenDigest } from '../../kernel/mcp/client-tokens.js';
import { FoundTools } from '../../kernel/mcp/found-tools.js';
import { McpHttpEndpoint } from '../../kernel/mcp/mcp-http-server.js';
import { chooseProfile, type McpProfile } from '../../kernel/mcp/mcp-profile.js';
import { McpStdioServer } from '../../kernel/mcp/mcp-stdio.js';
import type { PackDefinition } from '../../kernel/tools/tool-registry.js';
import { echoPack, makeKernel, tool, type Fixture } from '../helpers/kernel-fixture.js';
import { connect, eventually, raw, type Connected } from './mcp-helpers.js';

const MODERN = '2026-07-28';

/** A second pack, so a profile has something to leave out. */
function weatherPack(): PackDefinition {
  return {
    id: 'weather',
    version: '1.0.0',
    tools: [
      {
        spec: { ...tool('weather_forecast', 'safe'), description: 'Gives the weather forecast for a city: rain, sun, temperature.' },
        impl: () => ({ sky: 'rain' }),
      },
      { spec: { ...tool('weather_alerts', 'safe'), description: 'Lists storm and heat alerts for a region.' }, impl: () => ({ alerts: [] }) },
    ],
  };
}

const names = (tools: Array<{ name: string }>) => tools.map((t) => t.name).sort();
const text = (r: unknown) => JSON.stringify((r as { content: unknown }).content);

async function modernClient(url: string, token: string, name: string, lists?: string[][]) {
  const client = new ClientV2(
    { name, version: '1.0.0' },
    {
      versionNegotiation: { mode: { pin: MODERN } },
      ...(lists ? { listChanged: { tools: { debounceMs: 0, onChanged: (err, tools) => void (!err && tools && lists.push(tools.map((t) => t.name))) } } } : {}),
    },
  );
  await client.connect(new HttpV2(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  return client;
}

describe('MCP profiles over HTTP', () => {
  let fx: Fixture;
  let endpoint: McpHttpEndpoint;
  const clients: Array<{ close(): Promise<unknown> }> = [];

  async function serve(profile: McpProfile): Promise<void> {
    fx = makeKernel({ packs: [echoPack(), weatherPack()] });
    endpoint = new McpHttpEndpoint(fx.kernel, { profile });
    await endpoint.start();
  }
  async function v1(name = 'v1-client'): Promise<Connected> {
    const c = await connect(endpoint.url, endpoint.token, { name });
    clients.push(c);
    return c;
  }

  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close().catch(() => {})));
    await endpoint?.close();
    await fx?.close();
  });

  it('--tools weather lists only the weather pack’s tools to both client lines, and refuses a call outside it as UNKNOWN_TOOL, audited', async () => {
    await serve(chooseProfile({ tools: 'weather' }));
    const legacy = await v1();
    expect(names((await legacy.client.listTools()).tools)).toEqual(['weather_alerts', 'weather_forecast']);
    const outside = await legacy.client.callTool({ name: 'echo_safe', arguments: { text: 'hi' } });
    expect(outside.isError).toBe(true);
    expect(text(outside)).toContain('UNKNOWN_TOOL');
    expect(text(outside)).toContain('There is no tool named \\"echo_safe\\" in the MCP profile --tools weather (available: weather_alerts, weather_forecast)');
    expect(fx.kernel.audit.tail({ tool: 'echo_safe' })).toEqual([expect.objectContaining({ error: expect.objectContaining({ code: 'UNKNOWN_TOOL' }) })]);
    expect(text(await legacy.client.callTool({ name: 'weather_forecast', arguments: {} }))).toContain('rain');

    const modern = await modernClient(endpoint.url, endpoint.token, 'v2-client');
    clients.push(modern);
    expect(names((await modern.listTools()).tools)).toEqual(['weather_alerts', 'weather_forecast']);
    const refused = await modern.callTool({ name: 'echo_safe', arguments: {} });
    expect(refused.isError).toBe(true);
    expect(text(refused)).toContain('UNKNOWN_TOOL');
  });

  it('names tools one by one beside packs, and follows a pack loaded after it started', async () => {
    await serve(chooseProfile({ tools: 'echo_safe,weather_alerts,later' }));
    const c = await v1();
    expect(names((await c.client.listTools()).tools)).toEqual(['echo_safe', 'weather_alerts']);
    fx.kernel.registerPack({ id: 'later', version: '1.0.0', tools: [{ spec: tool('later_tool', 'safe'), impl: () => 'late' }] });
    expect(names((await c.client.listTools()).tools)).toEqual(['echo_safe', 'later_tool', 'weather_alerts']);
    expect(text(await c.client.callTool({ name: 'later_tool', arguments: {} }))).toContain('late');
  });

  it('in tool-search mode lists find_tools alone, then a 2025-11-25 session is told the found tools (list_changed) and calls one at once', async () => {
    await serve(chooseProfile({ profile: 'search' }));
    const c = await v1();
    await c.notificationsReady;
    expect(names((await c.client.listTools()).tools)).toEqual(['find_tools']);
    const found = await c.client.callTool({ name: 'find_tools', arguments: { query: 'weather forecast for a city', limit: 2 } });
    expect(found.isError).toBeFalsy();
    expect(text(found)).toContain('weather_forecast');
    const changed = await eventually(() => c.tools.find((list) => list.some((t) => t.name === 'weather_forecast')), 'list_changed with the found tool');
    expect(names(changed)).toContain('find_tools');
    expect(names(changed)).not.toContain('echo_dangerous');
    expect(text(await c.client.callTool({ name: 'weather_forecast', arguments: {} }))).toContain('rain');
    // Another session found nothing yet: its list is find_tools alone.
    const other = await v1('other');
    expect(names((await other.client.listTools()).tools)).toEqual(['find_tools']);
  });

  it('in tool-search mode serves an SDK v2 client on the 2025-11-25 revision the same way: list_changed, then the found tool called', async () => {
    await serve(chooseProfile({ profile: 'search' }));
    const lists: string[][] = [];
    const client = new ClientV2(
      { name: 'v2-legacy', version: '1.0.0' },
      { listChanged: { tools: { debounceMs: 0, onChanged: (err, tools) => void (!err && tools && lists.push(tools.map((t) => t.name))) } } },
    );
    const transport = new HttpV2(new URL(endpoint.url), { requestInit: { headers: { Authorization: `Bearer ${endpoint.token}` } } });
    await client.connect(transport);
    clients.push({ close: () => transport.terminateSession().then(() => client.close()) });
    expect(transport.sessionId).toBeDefined();
    expect(names((await client.listTools()).tools)).toEqual(['find_tools']);
    await client.callTool({ name: 'find_tools', arguments: { query: 'storm alerts for a region', limit: 1 } });
    await eventually(() => lists.some((l) => l.includes('weather_alerts')), 'list_changed with weather_alerts');
    expect(text(await client.callTool({ name: 'weather_alerts', arguments: {} }))).toContain('alerts');
  });

  it('in tool-search mode tells a stateless client on its listen stream, keeps what it found by name@version between requests, and calls it', async () => {
    await serve(chooseProfile({ tools: 'weather,echo-pack', search: true }));
    const lists: string[][] = [];
    const modern = await modernClient(endpoint.url, endpoint.token, 'finder', lists);
    clients.push(modern);
    expect(names((await modern.listTools()).tools)).toEqual(['find_tools']);
    // The listen stream is open once a find reaches it: a find of something new each time until one does.
    const queries = ['storm alerts for a region', 'weather forecast rain', 'echo safe'];
    let i = 0;
    await eventually(async () => {
      const q = queries[Math.min(i++, queries.length - 1)]!;
      const r = await modern.callTool({ name: 'find_tools', arguments: { query: q, limit: 1 } });
      expect(r.isError).toBeFalsy();
      return lists.some((l) => l.includes('weather_alerts') || l.includes('weather_forecast') || l.includes('echo_safe'));
    }, 'a tools/list_changed on the listen stream');
    // A new connection of the same client (name@version) lists what it found: nothing is tied to a connection.
    const again = await modernClient(endpoint.url, endpoint.token, 'finder');
    clients.push(again);
    const listed = names((await again.listTools()).tools);
    expect(listed).toContain('find_tools');
    expect(listed.length).toBeGreaterThan(1);
    const foundTool = listed.find((n) => n !== 'find_tools')!;
    expect((await again.callTool({ name: foundTool, arguments: {} })).isError).toBeFalsy();
    // Another client found nothing.
    const stranger = await modernClient(endpoint.url, endpoint.token, 'stranger');
    clients.push(stranger);
    expect(names((await stranger.listTools()).tools)).toEqual(['find_tools']);
    // Searching is within the profile: nothing outside it is found or callable.
    expect(endpoint.found.size).toBe(1);
  });
});

/** An in-memory stdio pair: the SDK v1 client on one end, McpStdioServer on the other. */
function pipeTransport(toServer: PassThrough, toClient: PassThrough): Transport {
  let buf = '';
  const t: Transport = {
    start: () => {
      toClient.on('data', (c: Buffer) => {
        buf += c.toString();
        let n;
        while ((n = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, n);
          buf = buf.slice(n + 1);
          if (line.trim()) t.onmessage?.(JSON.parse(line) as JSONRPCMessage);
        }
      });
      return Promise.resolve();
    },
    send: (m: JSONRPCMessage) => {
      toServer.write(`${JSON.stringify(m)}\n`);
      return Promise.resolve();
    },
    close: () => {
      toServer.end();
      t.onclose?.();
      return Promise.resolve();
    },
  };
  return t;
}

describe('MCP profiles over stdio', () => {
  let fx: Fixture;
  afterEach(async () => fx?.close());

  it('serves the profile’s tools and, in tool-search mode, tells the client what it found', async () => {
    fx = makeKernel({ packs: [echoPack(), weatherPack()] });
    const toServer = new PassThrough();
    const toClient = new PassThrough();
    const server = new McpStdioServer(fx.kernel, { stdin: toServer, stdout: toClient, profile: chooseProfile({ tools: 'weather', search: true }) });
    await server.start();
    const lists: string[][] = [];
    const client = new Client(
      { name: 'stdio-client', version: '1.0.0' },
      { listChanged: { tools: { debounceMs: 0, onChanged: (err, list) => void (!err && list && lists.push(names(list))) } } },
    );
    await client.connect(pipeTransport(toServer, toClient));
    try {
      expect(names((await client.listTools()).tools)).toEqual(['find_tools']);
      const found = await client.callTool({ name: 'find_tools', arguments: { query: 'echo safe tool' } });
      // Only the profile is searched: the echo tools are not in it.
      expect(text(found)).not.toContain('echo_safe');
      await client.callTool({ name: 'find_tools', arguments: { query: 'storm alerts' } });
      await eventually(() => lists.some((l) => l.includes('weather_alerts')), 'list_changed with weather_alerts');
      expect(text(await client.callTool({ name: 'weather_alerts', arguments: {} }))).toContain('alerts');
      expect((await client.callTool({ name: 'echo_safe', arguments: {} })).isError).toBe(true);
    } finally {
      await client.close();
      await server.close();
    }
  });
});

describe('a client’s found tools', () => {
  it('are kept while used, dropped after the expiry without use, and capped per store', () => {
    let now = 0;
    const found = new FoundTools({ ttlMs: 1000, maxClients: 2, now: () => now });
    expect(found.add('a', ['x', 'y'])).toBe(true);
    expect(found.add('a', ['y'])).toBe(false);
    now = 900;
    expect(found.get('a')).toEqual(['x', 'y']);
    now = 1800;
    // Touched at 900: still there at 1800.
    expect(found.get('a')).toEqual(['x', 'y']);
    now = 2801;
    expect(found.get('a')).toEqual([]);
    found.add('b', ['x']);
    found.add('c', ['x']);
    found.add('d', ['x']);
    expect(found.size).toBe(2);
    expect(found.get('b')).toEqual([]);
    expect(found.get('d')).toEqual(['x']);
  });
});

describe('choosing a profile', () => {
  it('takes --tools, a built-in or a stored --profile, and refuses an unknown one naming those there are', () => {
    expect(chooseProfile({})).toEqual({ name: 'all', tools: ['*'] });
    expect(chooseProfile({ tools: ' vault , read_file,vault' })).toEqual({ name: '--tools  vault , read_file,vault', tools: ['vault', 'read_file'] });
    expect(chooseProfile({ profile: 'search' })).toEqual({ name: 'search', tools: ['*'], search: true });
    expect(chooseProfile({ profile: 'mine', search: true }, { mine: { tools: ['calendar'] } })).toEqual({ name: 'mine', tools: ['calendar'], search: true });
    expect(() => chooseProfile({ profile: 'nope' }, { mine: { tools: ['x'] } })).toThrow(
      /There is no MCP profile "nope" \(profiles: all, vault, files, search, mine;/,
    );
    expect(() => chooseProfile({ tools: 'a', profile: 'vault' })).toThrow(/give one/);
    expect(() => chooseProfile({ tools: ' , ' })).toThrow(/needs at least one pack id or tool name/);
    expect(() => chooseProfile({ tools: 'rm -rf' })).toThrow(/"rm -rf" is not a pack id or tool name/);
  });
});

describe('per-client tokens', () => {
  let fx: Fixture;
  let endpoint: McpHttpEndpoint;
  afterEach(async () => {
    await endpoint?.close();
    await fx?.close();
  });

  it('give each token its own rate budget whatever name the clients declare (two clients saying mcp@0.1.0), its profile, and its name in the audit', async () => {
    fx = makeKernel({ packs: [echoPack(), weatherPack()], rateLimits: { maxCalls: 2, duplicateCooldownMs: 0, globalMaxCalls: 0 } });
    fx.kernel.settings.setToken('alpha', { digest: tokenDigest('a'.repeat(43)), created: '2026-12-06T00:00:00Z' });
    fx.kernel.settings.setToken('beta', { digest: tokenDigest('b'.repeat(43)), profile: 'weatherish', created: '2026-12-06T00:00:00Z' });
    fx.kernel.settings.setProfile('weatherish', { tools: ['weather'] });
    endpoint = new McpHttpEndpoint(fx.kernel, { clients: clientTokenLookup(() => fx.kernel.settings.read()) });
    await endpoint.start();
    const calls = async (token: string, tool: string) => {
      const c = await modernClient(endpoint.url, token, 'mcp');
      try {
        const out: string[] = [];
        for (let n = 0; n < 3; n++) {
          const r = await c.callTool({ name: tool, arguments: {} });
          out.push(r.isError ? String((r.structuredContent as { code: string }).code) : 'ok');
        }
        return { out, tools: names((await c.listTools()).tools) };
      } finally {
        await c.close();
      }
    };
    const alpha = await calls('a'.repeat(43), 'echo_safe');
    expect(alpha.out).toEqual(['ok', 'ok', 'RATE_LIMITED']);
    expect(alpha.tools).toContain('echo_safe');
    // Same declared name, another token: a budget of its own, and the token's profile.
    const beta = await calls('b'.repeat(43), 'weather_alerts');
    expect(beta.out).toEqual(['ok', 'ok', 'RATE_LIMITED']);
    expect(beta.tools).toEqual(['weather_alerts', 'weather_forecast']);
    // The endpoint's own token: the declared name's budget, as before.
    expect((await calls(endpoint.token, 'echo_safe')).out).toEqual(['ok', 'ok', 'RATE_LIMITED']);
    const audited = fx.kernel.audit.tail({}).map((a) => [a.caller.id, a.caller.token ?? null, a.tool]);
    expect(audited).toContainEqual(['mcp@1.0.0', 'alpha', 'echo_safe']);
    expect(audited).toContainEqual(['mcp@1.0.0', 'beta', 'weather_alerts']);
    expect(audited).toContainEqual(['mcp@1.0.0', null, 'echo_safe']);
  });

  it('refuse a removed token at its next request, even in a session it opened, and keep a session to the token that opened it', async () => {
    fx = makeKernel({ packs: [echoPack()] });
    fx.kernel.settings.setToken('gone', { digest: tokenDigest('g'.repeat(43)), created: '2026-12-06T00:00:00Z' });
    endpoint = new McpHttpEndpoint(fx.kernel, { clients: clientTokenLookup(() => fx.kernel.settings.read()) });
    await endpoint.start();
    const c = await connect(endpoint.url, 'g'.repeat(43), { name: 'legacy' });
    try {
      expect((await c.client.callTool({ name: 'echo_safe', arguments: {} })).isError).toBeFalsy();
      // Another token cannot use this session.
      const other = await raw(endpoint.url, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
          Authorization: `Bearer ${endpoint.token}`,
          'Mcp-Session-Id': c.transport.sessionId!,
          'MCP-Protocol-Version': '2025-11-25',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
      });
      expect(other.status).toBe(403);
      expect(JSON.parse(other.body).error.message).toBe('This session was opened with another token; initialize a session of your own.');
      fx.kernel.settings.setToken('gone', undefined);
      await expect(c.client.listTools()).rejects.toThrow(/401|bearer token/i);
    } finally {
      await c.close();
    }
  });
});
