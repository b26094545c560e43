import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { CallToolResultSchema, ErrorCode, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { McpHttpEndpoint } from '../../kernel/mcp/mcp-http-server.js';
import { changeFeeds } from '../../kernel/mcp/mcp-server.js';
import { MemoryLogger } from '../../kernel/logger.js';
import type { ToolContext } from '../../kernel/tools/contract.js';
import { makeKernel, type Fixture } from '../helpers/kernel-fixture.js';
import { connect, deferred, eventually, FIXTURE_PACKS, raw, rawInitialize, type Connected } from './mcp-helpers.js';
import { nth } from '../helpers/nth.js';

const slowGate = deferred();
const slowStarted = deferred();
const abortSeen = deferred<string>();
const cancellableStarted = deferred();

/** A host pack for timing-sensitive cases: each tool waits on something the test controls. */
function controlPack() {
  const spec = (name: string) => ({ name, description: `${name} for tests`, parameters: { type: 'object' }, danger: 'safe' as const, effect: 'read' as const });
  return {
    id: 'control',
    tools: [
      {
        spec: spec('wait_gate'),
        impl: async () => {
          slowStarted.resolve();
          await slowGate.promise;
          return 'released';
        },
      },
      {
        spec: spec('wait_abort'),
        impl: (_args: Record<string, unknown>, ctx: ToolContext) =>
          new Promise((resolve) => {
            cancellableStarted.resolve();
            ctx.signal.addEventListener('abort', () => {
              abortSeen.resolve(String((ctx.signal.reason as Error)?.message ?? ctx.signal.reason));
              resolve('stopped');
            });
          }),
      },
      {
        spec: spec('count_up'),
        impl: async (_args: Record<string, unknown>, ctx: ToolContext) => {
          for (let i = 1; i <= 3; i++) {
            ctx.progress({ progress: i, total: 3, message: `step ${i}` });
            await new Promise((r) => setImmediate(r));
          }
          return { counted: 3 };
        },
      },
      { spec: spec('list_things'), impl: () => ['a', 'b'] },
    ],
  };
}

async function start(options: ConstructorParameters<typeof McpHttpEndpoint>[1] = {}, kernelOptions: Parameters<typeof makeKernel>[0] = {}) {
  const fx = makeKernel(kernelOptions);
  fx.kernel.registerPack(controlPack());
  await fx.kernel.loadPacks([{ dir: FIXTURE_PACKS, source: 'extra' }]);
  const logger = new MemoryLogger();
  const endpoint = new McpHttpEndpoint(fx.kernel, { logger, ...options });
  await endpoint.start();
  return { fx, endpoint, logger };
}

function text(r: CallToolResult): string {
  return (r.content[0] as { text: string }).text;
}

describe('MCP over Streamable HTTP (in-process endpoint around a real kernel)', () => {
  let fx: Fixture;
  let endpoint: McpHttpEndpoint;
  let logger: MemoryLogger;
  const clients: Connected[] = [];

  beforeEach(async () => {
    ({ fx, endpoint, logger } = await start());
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await endpoint.close();
    await fx.close();
  });

  async function client(opts: Parameters<typeof connect>[2] = {}): Promise<Connected> {
    const c = await connect(endpoint.url, endpoint.token, opts);
    clients.push(c);
    return c;
  }

  it('serves on 127.0.0.1 at /mcp with a 43-character base64url token', () => {
    expect(endpoint.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    expect(endpoint.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('lists every tool with its own JSON Schema and annotations from danger and effect', async () => {
    const { client: c } = await client();
    const { tools } = await c.listTools();
    const by = Object.fromEntries(tools.map((t) => [t.name, t]));
    expect(Object.keys(by)).toEqual(expect.arrayContaining(['echo', 'note_write', 'note_delete', 'echo_safe', 'echo_dangerous', 'list_skills']));
    expect(by.echo?.inputSchema).toEqual({ type: 'object', properties: { text: { type: 'string' } }, required: ['text'], additionalProperties: false });
    expect(by.echo?.annotations).toEqual({ readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false });
    expect(by.note_write?.annotations).toEqual({ readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false });
    expect(by.echo_dangerous?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    expect(by.note_delete?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true, idempotentHint: false });
  });

  it('marks a tool open-world when its declaration says openWorld, whatever its pack or name', async () => {
    const readTool = (name: string, openWorld?: boolean) => ({
      spec: { name, description: 'x', parameters: { type: 'object' }, danger: 'safe' as const, effect: 'read' as const, ...(openWorld ? { openWorld } : {}) },
      impl: () => 1,
    });
    fx.kernel.registerPack({ id: 'web-search', tools: [readTool('search_web')] });
    fx.kernel.registerPack({ id: 'misc', tools: [readTool('web_fetch'), readTool('fetch_page', true)] });
    const { tools } = await (await client()).client.listTools();
    const hint = (n: string) => tools.find((t) => t.name === n)!.annotations!.openWorldHint;
    expect([hint('search_web'), hint('web_fetch'), hint('fetch_page')]).toEqual([false, false, true]);
  });

  it('calls a read tool through the pipeline: text plus structuredContent, audited with the client name', async () => {
    const { client: c } = await client({ name: 'outside-party' });
    const r = (await c.callTool({ name: 'echo', arguments: { text: 'hi' } })) as CallToolResult;
    expect(r.isError).toBeFalsy();
    expect(JSON.parse(text(r))).toEqual({ text: 'hi', summary: 'echoed 2 chars' });
    expect(r.structuredContent).toEqual({ text: 'hi', summary: 'echoed 2 chars' });
    const last = fx.kernel.audit.tail({ tool: 'echo' }).at(-1)!;
    expect(last).toMatchObject({ caller: { kind: 'mcp', id: 'outside-party' }, outcome: 'ok', args: { text: 'hi' } });
  });

  it('returns a string value as plain text and an array without structuredContent', async () => {
    const { client: c } = await client();
    const s = (await c.callTool({ name: 'echo_safe', arguments: { text: 'x' } })) as CallToolResult;
    expect(s.structuredContent).toEqual({ echoed: { text: 'x' } });
    const a = (await c.callTool({ name: 'list_things', arguments: {} })) as CallToolResult;
    expect(text(a)).toBe('["a","b"]');
    expect(a.structuredContent).toBeUndefined();
  });

  it('turns every pipeline refusal into an isError result "CODE: message", and audits it', async () => {
    const { client: c } = await client();
    const unknown = (await c.callTool({ name: 'nope', arguments: {} })) as CallToolResult;
    expect(unknown.isError).toBe(true);
    expect(text(unknown)).toMatch(/^UNKNOWN_TOOL: There is no tool named "nope"/);
    expect(unknown.structuredContent).toEqual({ code: 'UNKNOWN_TOOL', message: expect.stringContaining('nope') });
    const invalid = (await c.callTool({ name: 'echo', arguments: { text: 3 } })) as CallToolResult;
    expect(invalid.isError).toBe(true);
    expect(text(invalid)).toMatch(/^INVALID_ARGS: .*text must be string/);
    expect(
      fx.kernel.audit
        .tail()
        .slice(-2)
        .map((e) => e.error?.code),
    ).toEqual(['UNKNOWN_TOOL', 'INVALID_ARGS']);
  });

  it('keeps protocol faults as JSON-RPC errors', async () => {
    const { client: c } = await client();
    // A tools/call without a tool name is malformed: refused before the kernel sees it.
    await expect(c.request({ method: 'tools/call', params: { arguments: {} } }, CallToolResultSchema)).rejects.toMatchObject({
      code: ErrorCode.InvalidParams,
    });
    await expect(c.request({ method: 'memo/no-such-method', params: {} }, CallToolResultSchema)).rejects.toMatchObject({ code: ErrorCode.MethodNotFound });
    expect(fx.kernel.audit.tail()).toEqual([]);
  });

  it('answers a malformed raw tools/call with -32602 Invalid params and a one-line message', async () => {
    const init = await rawInitialize(endpoint.url, { Authorization: `Bearer ${endpoint.token}` });
    const sid = init.headers['mcp-session-id'] as string;
    const call = async (params: unknown) => {
      const r = await raw(endpoint.url, {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${endpoint.token}`,
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
          'Mcp-Session-Id': sid,
          'Mcp-Protocol-Version': '2025-06-18',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', ...(params === undefined ? {} : { params }) }),
      });
      expect(r.status).toBe(200);
      // The transport answers a request on an SSE stream: one `data:` line with the response.
      const data = r.body.split('\n').find((l) => l.startsWith('data: '))!;
      return JSON.parse(data.slice('data: '.length)).error as { code: number; message: string };
    };
    const errors = [await call({ arguments: {} }), await call(undefined), await call({ name: 'echo', arguments: [1] }), await call({ name: 7 })];
    expect(errors.map((e) => e.code)).toEqual([-32602, -32602, -32602, -32602]);
    expect(errors.map((e) => e.message)).toEqual([
      'Invalid tools/call: params.name (the tool name, a string) is missing.',
      'Invalid tools/call: params must be an object with the tool name.',
      'Invalid tools/call: params.arguments must be an object.',
      'Invalid tools/call: params.name (the tool name, a string) is missing.',
    ]);
    expect(fx.kernel.audit.tail()).toEqual([]);
  });

  describe('auth', () => {
    it('answers 401 with WWW-Authenticate: Bearer without a token or with a wrong one', async () => {
      const none = await rawInitialize(endpoint.url);
      expect(none.status).toBe(401);
      expect(none.headers['www-authenticate']).toMatch(/^Bearer/);
      const wrong = await rawInitialize(endpoint.url, { Authorization: `Bearer ${endpoint.token.slice(0, -1)}x` });
      expect(wrong.status).toBe(401);
      expect(wrong.headers['www-authenticate']).toMatch(/^Bearer/);
      const basic = await rawInitialize(endpoint.url, { Authorization: `Basic ${endpoint.token}` });
      expect(basic.status).toBe(401);
      expect(endpoint.sessionCount).toBe(0);
    });

    it('says in a JSON-RPC shaped 401 body whether the token is missing or wrong, where the current one is printed, and that it is not OAuth', async () => {
      const wrongToken = `${endpoint.token.slice(0, -1)}x`;
      const none = await rawInitialize(endpoint.url);
      const wrong = await rawInitialize(endpoint.url, { Authorization: `Bearer ${wrongToken}` });
      // A client that shows only a JSON-RPC error's message (the Python SDK, FastMCP) shows the hint.
      expect(JSON.parse(none.body)).toEqual({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32001, message: expect.stringMatching(/^The bearer token is missing\. .*`memo serve` printed/) },
      });
      const message = JSON.parse(wrong.body).error.message as string;
      expect(message).toMatch(/^The bearer token is wrong \(or from an earlier run\)\. /);
      expect(message).toMatch(/changes every time memo serve restarts.*static bearer token, not OAuth/);
      expect(message).not.toContain('\n');
      for (const body of [none.body, wrong.body]) {
        expect(body).not.toContain(wrongToken);
        expect(body).not.toContain(endpoint.token);
      }
      for (const r of [none, wrong]) expect(r.headers['www-authenticate']).not.toMatch(/resource_metadata|authorization_uri/);
    });

    it('advertises no OAuth metadata: the well-known paths answer 404 saying the server uses a static bearer token', async () => {
      const base = endpoint.url.replace('/mcp', '');
      const paths = [
        '/.well-known/oauth-protected-resource',
        '/.well-known/oauth-protected-resource/mcp',
        '/.well-known/oauth-authorization-server',
        '/.well-known/oauth-authorization-server/mcp',
        '/.well-known/openid-configuration',
      ];
      for (const p of paths) {
        for (const headers of [{}, { Authorization: `Bearer ${endpoint.token}` }]) {
          const r = await raw(base + p, { headers });
          expect([p, r.status, r.headers['content-type']]).toEqual([p, 404, 'application/json']);
          expect(JSON.parse(r.body)).toEqual({
            error: 'not found',
            error_description: expect.stringMatching(/^This server uses a static bearer token, not OAuth/),
            message: expect.stringMatching(/^This server uses a static bearer token, not OAuth/),
          });
        }
      }
      // The OAuth endpoints a client tries next (mcp-remote, the Inspector) give the same hint.
      for (const [p, method] of [
        ['/register', 'POST'],
        ['/authorize', 'GET'],
        ['/token', 'POST'],
      ] as const) {
        const r = await raw(base + p, { method });
        expect([p, r.status]).toEqual([p, 404]);
        expect(JSON.parse(r.body).error_description).toMatch(/^This server uses a static bearer token, not OAuth/);
      }
    });

    it('tells a client still sending a rotated token that it was rotated, not merely wrong', async () => {
      const old = endpoint.token;
      endpoint.rotateToken();
      const r = await rawInitialize(endpoint.url, { Authorization: `Bearer ${old}` });
      expect(r.status).toBe(401);
      const message = JSON.parse(r.body).error.message as string;
      expect(message).toMatch(/^The bearer token was rotated at \d{4}-\d\d-\d\dT[\d:.]+Z \(memo serve rotate-token, SIGHUP/);
      expect(message).not.toContain(old);
      expect(message).not.toContain(endpoint.token);
      const other = await rawInitialize(endpoint.url, { Authorization: 'Bearer never-a-token-of-this-server' });
      expect(JSON.parse(other.body).error.message).toMatch(/^The bearer token is wrong/);
    });

    it('checks the token on every request, not only on initialize', async () => {
      const { transport } = await client();
      const sid = transport.sessionId!;
      const r = await raw(endpoint.url, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
          'Mcp-Session-Id': sid,
          'Mcp-Protocol-Version': '2025-06-18',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
      });
      expect(r.status).toBe(401);
      expect(r.body).not.toContain('echo');
    });

    it('rotates the token with an authenticated POST /mcp/rotate-token: the old one is refused at once', async () => {
      const { client: c } = await client();
      const old = endpoint.token;
      const denied = await raw(`${endpoint.url}/rotate-token`, { method: 'POST' });
      expect(denied.status).toBe(401);
      const r = await raw(`${endpoint.url}/rotate-token`, { method: 'POST', headers: { Authorization: `Bearer ${old}` } });
      expect(r.status).toBe(200);
      const { token } = JSON.parse(r.body);
      expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(token).not.toBe(old);
      expect(endpoint.token).toBe(token);
      expect((await rawInitialize(endpoint.url, { Authorization: `Bearer ${old}` })).status).toBe(401);
      await expect(c.listTools()).rejects.toThrow();
      expect((await rawInitialize(endpoint.url, { Authorization: `Bearer ${token}` })).status).toBe(200);
      const fresh = await client();
      expect((await fresh.client.listTools()).tools.length).toBeGreaterThan(0);
    });

    it('closes the sessions the old token admitted when it rotates', async () => {
      await client();
      await client();
      expect(endpoint.sessionCount).toBe(2);
      endpoint.rotateToken();
      await eventually(() => endpoint.sessionCount === 0, 'sessions closed');
    });

    it('never writes the token into logs or audit lines', async () => {
      const { client: c } = await client();
      await c.callTool({ name: 'echo', arguments: { text: 'a' } });
      await c.callTool({ name: 'note_write', arguments: { line: 'x' } });
      await rawInitialize(endpoint.url, { Authorization: 'Bearer wrong' });
      const token = endpoint.token;
      const everything = JSON.stringify(logger.lines) + JSON.stringify(fx.logger.lines) + fs.readFileSync(path.join(fx.dataDir, 'agent-audit.jsonl'), 'utf8');
      expect(everything).not.toContain(token);
    });
  });

  describe('DNS-rebinding protection', () => {
    it('refuses a foreign Host with 403, even with the right token', async () => {
      const port = new URL(endpoint.url).port;
      const r = await rawInitialize(endpoint.url, { Authorization: `Bearer ${endpoint.token}`, Host: `evil.example:${port}` });
      expect(r.status).toBe(403);
      expect((await raw(endpoint.url.replace('/mcp', '/healthz'), { headers: { Host: 'evil.example' } })).status).toBe(403);
      expect(endpoint.sessionCount).toBe(0);
    });

    it('refuses a foreign Origin with 403 and accepts loopback ones', async () => {
      const auth = { Authorization: `Bearer ${endpoint.token}` };
      expect((await rawInitialize(endpoint.url, { ...auth, Origin: 'https://evil.example' })).status).toBe(403);
      expect((await rawInitialize(endpoint.url, { ...auth, Origin: 'null' })).status).toBe(403);
      expect((await rawInitialize(endpoint.url, { ...auth, Origin: 'http://localhost:5173' })).status).toBe(200);
      expect((await rawInitialize(endpoint.url, { ...auth, Host: 'localhost:1', Origin: 'http://[::1]:3000' })).status).toBe(200);
    });

    it('refuses to bind to a non-loopback interface unless allowRemote is given', () => {
      expect(() => new McpHttpEndpoint(fx.kernel, { host: '0.0.0.0' })).toThrow(/loopback only.*--allow-remote/);
      expect(() => new McpHttpEndpoint(fx.kernel, { host: '0.0.0.0', allowRemote: true })).not.toThrow();
    });
  });

  it('answers GET /healthz without auth and without tool data', async () => {
    const r = await raw(endpoint.url.replace('/mcp', '/healthz'));
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toEqual({ ok: true });
  });

  describe('external callers and the write capability', () => {
    const cap = (c: string) => ({ headers: { 'X-Memo-Write-Capability': c } });
    const notes = () => path.join(fx.root, 'notes.txt');

    it('refuses a write tool without a capability: isError PERMISSION_DENIED, nothing written, nobody asked', async () => {
      const { client: c } = await client();
      const r = (await c.callTool({ name: 'note_write', arguments: { line: 'x' } })) as CallToolResult;
      expect(r.isError).toBe(true);
      expect(r.structuredContent).toMatchObject({ code: 'PERMISSION_DENIED' });
      expect(text(r)).toMatch(/^PERMISSION_DENIED: .*writes need a running Memo agent turn/);
      expect(fs.existsSync(notes())).toBe(false);
      expect(fx.prompter.asked).toEqual([]);
      expect(fx.kernel.audit.tail({ tool: 'note_write' }).at(-1)).toMatchObject({ decision: 'deny:caller', outcome: 'error' });
    });

    it('refuses a capability from a finished (revoked) turn', async () => {
      const token = await fx.kernel.capabilities.mint((await fx.kernel.conversations.create()).id);
      fx.kernel.capabilities.revoke(token);
      const { client: c } = await client(cap(token));
      const r = (await c.callTool({ name: 'note_write', arguments: { line: 'x' } })) as CallToolResult;
      expect(r.structuredContent).toMatchObject({ code: 'PERMISSION_DENIED' });
      expect(fs.existsSync(notes())).toBe(false);
    });

    it('refuses a capability whose conversation was deleted', async () => {
      const conv = await fx.kernel.conversations.create();
      const token = await fx.kernel.capabilities.mint(conv.id);
      await fx.kernel.conversations.delete(conv.id);
      const { client: c } = await client(cap(token));
      const r = (await c.callTool({ name: 'note_write', arguments: { line: 'x' } })) as CallToolResult;
      expect(r.structuredContent).toMatchObject({ code: 'PERMISSION_DENIED' });
      expect(fs.existsSync(notes())).toBe(false);
      expect(fx.prompter.asked).toEqual([]);
    });

    it('lets a live capability through to the permission gate, which asks, and audits the call', async () => {
      const live = (await fx.kernel.conversations.create()).id;
      const token = await fx.kernel.capabilities.mint(live);
      fx.prompter.answer('allow-once');
      const { client: c } = await client({ name: 'agent-backend', ...cap(token) });
      const r = (await c.callTool({ name: 'note_write', arguments: { line: 'from mcp' } })) as CallToolResult;
      expect(r.isError).toBeFalsy();
      expect(fs.readFileSync(notes(), 'utf8')).toBe('from mcp\n');
      expect(fx.prompter.asked).toHaveLength(1);
      expect(fx.prompter.asked[0]).toMatchObject({ tool: 'note_write', caller: { kind: 'mcp', id: 'agent-backend', conversationId: live } });
      expect(fx.kernel.audit.tail({ tool: 'note_write' }).at(-1)).toMatchObject({
        caller: { kind: 'mcp', id: 'agent-backend', conversationId: live },
        decision: 'allow:once',
        outcome: 'ok',
      });
      expect(fs.readFileSync(path.join(fx.dataDir, 'agent-audit.jsonl'), 'utf8')).not.toContain(token);
      // The capability is checked per request: once the turn ends, the same session is refused.
      fx.kernel.capabilities.revoke(token);
      const again = (await c.callTool({ name: 'note_write', arguments: { line: 'later' } })) as CallToolResult;
      expect(again.structuredContent).toMatchObject({ code: 'PERMISSION_DENIED' });
      expect(fs.readFileSync(notes(), 'utf8')).toBe('from mcp\n');
    });
  });

  it('serves 50 concurrent sessions while one of them waits on a slow call', async () => {
    const sessions = await Promise.all(Array.from({ length: 50 }, (_, i) => client({ name: `client-${i}` })));
    let slowDone = false;
    const slow = nth(sessions, 0)
      .client.callTool({ name: 'wait_gate', arguments: {} })
      .then((r) => {
        slowDone = true;
        return r as CallToolResult;
      });
    await slowStarted.promise;
    const others = await Promise.all(
      sessions.slice(1).map((s, i) => s.client.callTool({ name: 'echo', arguments: { text: `n${i}` } }) as Promise<CallToolResult>),
    );
    expect(slowDone).toBe(false);
    expect(others.map((r) => r.structuredContent?.text)).toEqual(sessions.slice(1).map((_, i) => `n${i}`));
    expect(endpoint.sessionCount).toBe(50);
    slowGate.resolve();
    expect(text(await slow)).toBe('released');
  });

  it("aborts the handler's signal when the client cancels the call", async () => {
    const { client: c } = await client();
    const ac = new AbortController();
    const call = c.callTool({ name: 'wait_abort', arguments: {} }, undefined, { signal: ac.signal });
    await cancellableStarted.promise;
    ac.abort('user pressed stop');
    await expect(call).rejects.toThrow();
    expect(await abortSeen.promise).toBeDefined();
    await eventually(() => fx.kernel.audit.tail({ tool: 'wait_abort' }).at(-1)?.error?.code === 'CANCELLED', 'CANCELLED audit line');
  });

  it('forwards ctx.progress() as notifications/progress when the call has a progress token', async () => {
    const { client: c } = await client();
    const seen: Array<{ progress: number; total?: number | undefined; message?: string | undefined }> = [];
    const r = (await c.callTool({ name: 'count_up', arguments: {} }, undefined, { onprogress: (p) => seen.push(p) })) as CallToolResult;
    expect(r.structuredContent).toEqual({ counted: 3 });
    expect(seen).toEqual([1, 2, 3].map((i) => ({ progress: i, total: 3, message: `step ${i}` })));
  });

  it('sends notifications/tools/list_changed when a pack is added, and the fresh list has its tools', async () => {
    const a = await client();
    const b = await client();
    await Promise.all([a.notificationsReady, b.notificationsReady]);
    const pack = fx.kernel.registerPack({
      id: 'late',
      tools: [{ spec: { name: 'late_tool', description: 'late', parameters: { type: 'object' }, danger: 'safe', effect: 'read' }, impl: () => 'late' }],
    });
    for (const c of [a, b]) await eventually(() => c.tools.some((list) => list.some((t) => t.name === 'late_tool')), 'refreshed tool list');
    pack.dispose();
    await eventually(() => a.tools.at(-1)!.every((t) => t.name !== 'late_tool'), 'tool removed from the list');
  });

  /** A raw tools/list in session `sid`, as a client that kept an old session id would send it. */
  function inSession(sid: string) {
    return raw(endpoint.url, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${endpoint.token}`,
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'Mcp-Session-Id': sid,
        'Mcp-Protocol-Version': '2025-06-18',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/list' }),
    });
  }

  async function restart(options: ConstructorParameters<typeof McpHttpEndpoint>[1]) {
    await endpoint.close();
    endpoint = new McpHttpEndpoint(fx.kernel, { logger, ...options });
    await endpoint.start();
  }

  it('admits a session past the cap by closing the longest-idle one, which then gets 404 saying it was evicted', async () => {
    await restart({ maxSessions: 2 });
    const first = await client({ name: 'first' });
    const second = await client({ name: 'second' });
    const evictedId = second.transport.sessionId!;
    // first is used after second connected, so second is now the longest idle.
    await first.client.listTools();
    const third = await client({ name: 'third' });
    expect(endpoint.sessionCount).toBe(2);
    expect((await third.client.listTools()).tools.length).toBeGreaterThan(0);
    expect((await first.client.listTools()).tools.length).toBeGreaterThan(0);
    const evictions = logger.lines.filter((l) => /longest-idle/.test(l.message)).map((l) => l.message);
    expect(evictions).toEqual([expect.stringContaining('(second)')]);
    const gone = await inSession(evictedId);
    expect(gone.status).toBe(404);
    const body = JSON.parse(gone.body);
    expect(body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32001 } });
    expect(body.error.message).toMatch(/^Session ended \(evicted\): .*cap is 2.*Initialize a new session\.$/);
    await expect(second.client.listTools()).rejects.toThrow();
  });

  it('answers 503 past the cap only while every open session is running a call', async () => {
    await restart({ maxSessions: 1 });
    const gate = deferred();
    const started = deferred();
    fx.kernel.registerPack({
      id: 'busy',
      tools: [
        {
          spec: { name: 'busy_call', description: 'busy', parameters: { type: 'object' }, danger: 'safe', effect: 'read' },
          impl: async () => (started.resolve(), await gate.promise, 'done'),
        },
      ],
    });
    const { client: c } = await client();
    const call = c.callTool({ name: 'busy_call', arguments: {} });
    await started.promise;
    const over = await rawInitialize(endpoint.url, { Authorization: `Bearer ${endpoint.token}` });
    expect(over.status).toBe(503);
    expect(over.headers['retry-after']).toBe('5');
    expect(JSON.parse(over.body).error.message).toMatch(/each running a call/);
    gate.resolve();
    expect(text((await call) as CallToolResult)).toBe('done');
    const next = await client();
    expect((await next.client.listTools()).tools.length).toBeGreaterThan(0);
    expect(endpoint.sessionCount).toBe(1);
  });

  it('answers 404 "Session not found" for a session id it never issued', async () => {
    const r = await inSession('00000000-0000-4000-8000-000000000000');
    expect(r.status).toBe(404);
    expect(JSON.parse(r.body).error).toEqual({ code: -32001, message: expect.stringMatching(/^Session not found: .*Initialize a new session\.$/) });
  });

  it('answers 404 saying the token was rotated for a session the rotation closed', async () => {
    const { transport } = await client();
    const sid = transport.sessionId!;
    endpoint.rotateToken();
    const r = await inSession(sid);
    expect(r.status).toBe(404);
    expect(JSON.parse(r.body).error.message).toMatch(/^Session ended \(token-rotated\)/);
  });

  it('closes an idle session and frees what it held (transport, server, change listener)', async () => {
    await endpoint.close();
    endpoint = new McpHttpEndpoint(fx.kernel, { idleTimeoutMs: 150, logger });
    await endpoint.start();
    const listeners = () => changeFeeds(fx.kernel).tools.size;
    const before = listeners();
    const c = await client();
    expect(endpoint.sessionCount).toBe(1);
    expect(listeners()).toBe(before + 1);
    await eventually(() => endpoint.sessionCount === 0, 'idle session closed');
    await eventually(() => listeners() === before, 'change listener released');
    const gone = await inSession(c.transport.sessionId!);
    expect(gone.status).toBe(404);
    expect(JSON.parse(gone.body).error.message).toMatch(/^Session ended \(idle\): it was idle for 150 ms\. Initialize a new session\.$/);
    await expect(c.client.listTools()).rejects.toThrow();
    expect(logger.lines.some((l) => /closed the idle session of test-client/.test(l.message))).toBe(true);
  });

  it('keeps an idle session open while its call is still running', async () => {
    await endpoint.close();
    endpoint = new McpHttpEndpoint(fx.kernel, { idleTimeoutMs: 100, logger });
    await endpoint.start();
    const gate = deferred();
    const started = deferred();
    fx.kernel.registerPack({
      id: 'long',
      tools: [
        {
          spec: { name: 'long_call', description: 'long', parameters: { type: 'object' }, danger: 'safe', effect: 'read' },
          impl: async () => (started.resolve(), await gate.promise, 'done'),
        },
      ],
    });
    const { client: c } = await client();
    const call = c.callTool({ name: 'long_call', arguments: {} });
    await started.promise;
    // A second session, idle from now on: its idle timer was set after the busy session's last
    // activity, so by the time it expires the busy session's timer has fired too (and was put off).
    await client({ name: 'idle-client' });
    await eventually(() => endpoint.sessionCount === 1, 'the idle session to close');
    expect(logger.lines.filter((l) => /closed the idle session/.test(l.message)).map((l) => l.message)).toEqual([expect.stringContaining('idle-client')]);
    gate.resolve();
    expect(text((await call) as CallToolResult)).toBe('done');
    await eventually(() => endpoint.sessionCount === 0, 'idle after the call');
  });

  it('logs a server error (EMFILE while accepting) and keeps serving on the same URL and token', async () => {
    const { client: c } = await client();
    const { url, token } = endpoint;
    const server = (endpoint as unknown as { server: import('node:http').Server }).server;
    server.emit('error', Object.assign(new Error('accept EMFILE'), { code: 'EMFILE' }));
    expect(logger.lines.find((l) => l.level === 'error')?.message).toMatch(/EMFILE.*still listening on http:\/\/127\.0\.0\.1/);
    // A malformed request on a raw socket is dropped with 400; the endpoint is unaffected.
    const port = Number(new URL(url).port);
    const reply = await new Promise<string>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => s.write('NOT HTTP\r\n\r\n'));
      let got = '';
      s.on('data', (d) => (got += d.toString()));
      s.on('close', () => resolve(got));
    });
    expect(reply).toMatch(/^HTTP\/1.1 400/);
    expect(endpoint.url).toBe(url);
    expect(endpoint.token).toBe(token);
    expect((await c.listTools()).tools.length).toBeGreaterThan(0);
    const again = await client();
    expect((await again.client.callTool({ name: 'echo', arguments: { text: 'still here' } })).isError).toBeFalsy();
  });

  it('closes every session and stops listening on close()', async () => {
    const { client: c } = await client();
    const url = endpoint.url;
    await endpoint.close();
    expect(endpoint.sessionCount).toBe(0);
    await expect(c.listTools()).rejects.toThrow();
    await expect(raw(url.replace('/mcp', '/healthz'))).rejects.toThrow();
  });
});

describe('one lifecycle for the kernel and its MCP endpoint', () => {
  it('closes the endpoint and its sessions when the kernel shuts down', async () => {
    const { fx, endpoint } = await start();
    const c = await connect(endpoint.url, endpoint.token);
    const url = endpoint.url;
    expect(endpoint.sessionCount).toBe(1);
    await fx.kernel.shutdown();
    expect(endpoint.sessionCount).toBe(0);
    await expect(c.client.listTools()).rejects.toThrow();
    await expect(raw(url.replace('/mcp', '/healthz'))).rejects.toThrow();
    // Closing it again afterwards is harmless.
    await endpoint.close();
  });
});

describe('MCP refusals under the rate limiter', () => {
  it('reports RATE_LIMITED as an isError result', async () => {
    const { fx, endpoint } = await start({}, { rateLimits: { maxCalls: 0, duplicateCooldownMs: 5000 } });
    const c = await connect(endpoint.url, endpoint.token);
    try {
      expect(((await c.client.callTool({ name: 'echo', arguments: { text: 'same' } })) as CallToolResult).isError).toBeFalsy();
      const again = (await c.client.callTool({ name: 'echo', arguments: { text: 'same' } })) as CallToolResult;
      expect(again.isError).toBe(true);
      expect(again.structuredContent).toMatchObject({ code: 'RATE_LIMITED' });
      expect(text(again)).toMatch(/^RATE_LIMITED: /);
    } finally {
      await c.close();
      await endpoint.close();
      await fx.close();
    }
  });
});
