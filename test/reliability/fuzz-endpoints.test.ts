import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import fc from 'fast-check';
import * as http from 'node:http';
import * as path from 'node:path';
import { connect } from '../mcp/mcp-helpers.js';
import { consoleFixture, raw, type ConsoleFixture, type RawResponse } from '../console/console-helpers.js';

/**
 * Malformed input against the real HTTP endpoint (MCP at /mcp and the console API under /ui/api, one
 * loopback server around a real kernel): whatever arrives, the server answers (no crash, no hang),
 * never with a 500 that carries a stack trace or a path of this checkout, and keeps serving a
 * well-formed client afterwards. Property-based: fast-check generates the requests; a failure
 * prints the shrunk request that broke it and the seed to replay it.
 */

const REPO = path.resolve('.');
const PROTOCOL_VERSIONS = ['2025-03-26', '2025-06-18', '2025-11-25', '2026-07-28'];
const METHODS = [
  'initialize',
  'notifications/initialized',
  'tools/list',
  'tools/call',
  'resources/list',
  'resources/read',
  'prompts/list',
  'prompts/get',
  'ping',
  'logging/setLevel',
  'completion/complete',
  'server/discover',
];
const TOOLS = ['read_file', 'list_directory', 'search_files', 'echo', 'no_such_tool', '../read_file', ''];

/** What a bad answer looks like: a server fault, or internals (stack frames, source paths) in the body. */
function problem(res: RawResponse): string | null {
  if (res.status >= 500) return `status ${res.status}: ${res.body.slice(0, 300)}`;
  if (/\n\s+at .+:\d+:\d+/.test(res.body)) return `a stack trace in the body: ${res.body.slice(0, 300)}`;
  // The one path a body may name is memo's launcher, bin/memo: the MCP page's stdio snippet gives it to
  // the person, as memo serve's banner does. Any other path of the checkout (a source file) is a leak.
  if (
    res.body
      .split(path.join(REPO, 'bin', 'memo'))
      .join('<bin/memo>')
      .includes(REPO)
  )
    return `a path of the checkout in the body: ${res.body.slice(0, 300)}`;
  return null;
}

const json = fc.jsonValue({ maxDepth: 4 });
const text = fc.oneof(fc.string({ maxLength: 60 }), fc.constantFrom('', ' ', '\u0000', '%00', '../../etc/passwd', '\ud800', 'a'.repeat(5000)));

/** A JSON-RPC message that is often almost right: a known method with random params, a random id. */
const rpcMessage = fc.record(
  {
    jsonrpc: fc.oneof(fc.constant('2.0'), fc.constant('1.0'), json),
    id: fc.oneof(fc.integer(), fc.string({ maxLength: 10 }), fc.constant(null), json),
    method: fc.oneof(fc.constantFrom(...METHODS), text),
    params: fc.oneof(
      json,
      fc.record(
        { name: fc.oneof(fc.constantFrom(...TOOLS), text), arguments: fc.oneof(json, fc.dictionary(text, json, { maxKeys: 4 })) },
        { requiredKeys: [] },
      ),
      fc.record({ protocolVersion: fc.oneof(fc.constantFrom(...PROTOCOL_VERSIONS), text), capabilities: json, clientInfo: json }, { requiredKeys: [] }),
    ),
  },
  { requiredKeys: [] },
);

const mcpRequest = fc.record({
  method: fc.constantFrom('POST', 'POST', 'POST', 'GET', 'DELETE', 'PUT', 'OPTIONS'),
  path: fc.constantFrom('/mcp', '/mcp', '/mcp/', '/mcp/rotate-token', '/mcp?x=1', '/healthz', '/.well-known/oauth-authorization-server', '/%2e%2e/mcp'),
  auth: fc.constantFrom('good', 'good', 'good', 'none', 'wrong', 'garbage'),
  version: fc.option(fc.oneof(fc.constantFrom(...PROTOCOL_VERSIONS), text), { nil: undefined }),
  session: fc.option(fc.oneof(fc.uuid(), text), { nil: undefined }),
  accept: fc.constantFrom('application/json, text/event-stream', 'application/json', 'text/event-stream', '*/*', 'text/html', ''),
  contentType: fc.constantFrom('application/json', 'application/json', 'text/plain', 'application/x-www-form-urlencoded', ''),
  body: fc.oneof(
    rpcMessage.map((m) => JSON.stringify(m)),
    fc.array(rpcMessage, { maxLength: 3 }).map((a) => JSON.stringify(a)),
    json.map((v) => JSON.stringify(v)),
    text,
    fc.constant('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":'),
  ),
});

/** Header values node:http refuses to send (control characters) are left out: they never reach a server. */
function headerSafe(v: string): boolean {
  return /^[\t\x20-\x7e]*$/.test(v);
}

describe('malformed input against the HTTP endpoint (fast-check)', () => {
  let c: ConsoleFixture;
  let cookie: string;

  beforeAll(async () => {
    c = await consoleFixture();
    cookie = await c.login();
  });
  const openClients: Client[] = [];
  afterAll(async () => {
    await Promise.all(openClients.map((client) => client.close().catch(() => {})));
    await c?.close();
  });

  /** A well-formed client still gets its tool list: the server is alive and not wedged. */
  async function stillServes(): Promise<void> {
    const client = await connect(c.endpoint.url, c.endpoint.token, { name: 'after-fuzz' });
    try {
      const { tools } = await client.client.listTools();
      expect(tools.length).toBeGreaterThan(0);
    } finally {
      await client.close();
    }
  }

  it('answers every malformed MCP request without a 500, a stack trace or a source path, and keeps serving', async () => {
    await fc.assert(
      fc.asyncProperty(mcpRequest, async (r) => {
        const headers: Record<string, string> = { Host: new URL(c.origin).host };
        if (r.auth === 'good') headers.Authorization = `Bearer ${c.endpoint.token}`;
        if (r.auth === 'wrong') headers.Authorization = `Bearer ${'x'.repeat(43)}`;
        if (r.auth === 'garbage') headers.Authorization = 'Basic Zm9vOmJhcg==';
        if (r.version !== undefined && headerSafe(r.version)) headers['MCP-Protocol-Version'] = r.version;
        if (r.session !== undefined && headerSafe(r.session)) headers['Mcp-Session-Id'] = r.session;
        if (r.accept) headers.Accept = r.accept;
        if (r.contentType) headers['Content-Type'] = r.contentType;
        const hasBody = r.method === 'POST' || r.method === 'PUT';
        // A GET that opens an event stream stays open by design: only its status and headers matter.
        const res = await rawBounded(`${c.origin}${r.path}`, { method: r.method, headers, ...(hasBody ? { body: r.body } : {}) });
        const bad = problem(res);
        if (bad) throw new Error(bad);
      }),
      { numRuns: 400 },
    );
    await stillServes();
  });

  /**
   * The real requests a well-behaved client sends for `tools/call` (both revisions: the stateless
   * 2026-07-28 one with its `_meta` envelope and headers, and a 2025-11-25 session's), captured from
   * the SDK client's own fetch: the deep property replays them with mutated parameters, so the
   * requests get past authentication and routing into the MCP server and the tool pipeline.
   */
  async function capturedCalls(): Promise<Array<{ headers: Record<string, string>; body: Record<string, any> }>> {
    const captured: Array<{ headers: Record<string, string>; body: Record<string, any> }> = [];
    const capture: typeof fetch = async (input, init) => {
      const body = typeof init?.body === 'string' ? (JSON.parse(init.body) as Record<string, any>) : null;
      if (body?.method === 'tools/call') captured.push({ headers: Object.fromEntries(new Headers(init?.headers).entries()), body });
      return fetch(input, init);
    };
    for (const pin of ['2026-07-28', undefined]) {
      const client = new Client({ name: 'fuzz-capture', version: '1.0.0' }, pin ? { versionNegotiation: { mode: { pin } } } : {});
      const transport = new StreamableHTTPClientTransport(new URL(c.endpoint.url), {
        requestInit: { headers: { Authorization: `Bearer ${c.endpoint.token}` } },
        fetch: capture,
      });
      await client.connect(transport);
      await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
      // The 2025-11-25 session stays open until the end, so its captured session id keeps working.
      if (pin) await client.close();
      else openClients.push(client);
    }
    expect(captured.map((r) => r.headers['mcp-protocol-version'])).toEqual(['2026-07-28', '2025-11-25']);
    return captured;
  }

  it('answers mutated tools/call requests of a real client (both revisions) with results or clean errors, never a 500 or a stack', async () => {
    const [modern, legacy] = await capturedCalls();
    const toolNames = c.fx.kernel.registry.list().map((t) => t.spec.name);
    // Weighted so that a good share of the calls are well-formed (a real tool with arguments it
    // accepts, the envelope left whole): the property must reach the tools in every run, not only
    // with a lucky seed, while the rest of the calls are mangled.
    const mutation = fc.record({
      which: fc.constantFrom(modern!, legacy!),
      name: fc.oneof(
        { arbitrary: fc.constant('echo_safe'), weight: 2 },
        { arbitrary: fc.constantFrom(...toolNames), weight: 1 },
        { arbitrary: text, weight: 1 },
      ),
      args: fc.oneof(
        { arbitrary: fc.record({ text: fc.string({ maxLength: 40 }) }, { requiredKeys: [] }), weight: 2 },
        {
          arbitrary: fc.dictionary(fc.constantFrom('path', 'text', 'pattern', 'query', 'content', 'name', 'args', 'op', 'id'), json, { maxKeys: 4 }),
          weight: 1,
        },
        { arbitrary: json, weight: 1 },
      ),
      meta: fc.option(json, { nil: undefined, freq: 2 }),
      dropHeader: fc.option(fc.constantFrom('mcp-method', 'mcp-name', 'mcp-protocol-version', 'accept'), { nil: undefined, freq: 2 }),
    });
    const outcomes = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(mutation, async (m) => {
        const body = structuredClone(m.which.body);
        body.params = { ...body.params, name: m.name, arguments: m.args };
        if (m.meta !== undefined) body.params._meta = m.meta;
        const headers: Record<string, string> = { ...m.which.headers, authorization: `Bearer ${c.endpoint.token}` };
        if (headers['mcp-name'] !== undefined && headerSafe(m.name)) headers['mcp-name'] = m.name;
        if (m.dropHeader) delete headers[m.dropHeader];
        const res = await rawBounded(c.endpoint.url, { method: 'POST', headers, body: JSON.stringify(body) });
        const bad = problem(res);
        if (bad) throw new Error(bad);
        const kind = res.body.includes('"result"') ? (res.body.includes('"isError":true') ? 'tool error' : 'result') : `status ${res.status}`;
        outcomes.set(kind, (outcomes.get(kind) ?? 0) + 1);
      }),
      { numRuns: 400 },
    );
    // The property reached the tools, not only the front door.
    expect(outcomes.get('result') ?? 0).toBeGreaterThan(0);
    expect(outcomes.get('tool error') ?? 0).toBeGreaterThan(0);
    await stillServes();
  });

  it('answers tool calls nested to any depth (to 30,000 levels, in the arguments or _meta, both revisions) with a result or -32600 naming the limit, never a 500', async () => {
    const [modern, legacy] = await capturedCalls();
    const LIMIT = 64;
    const deep = fc.record({
      which: fc.constantFrom(modern!, legacy!),
      // Around the limit as often as far past it.
      depth: fc.oneof(fc.integer({ min: 1, max: 2 * LIMIT }), fc.integer({ min: 2 * LIMIT, max: 30_000 })),
      shape: fc.constantFrom('array', 'object'),
      where: fc.constantFrom('arguments', '_meta'),
      // Brackets inside strings (escaped quotes and backslashes among them) are no nesting.
      decoy: fc.constantFrom('', '[[[[{{{{'.repeat(40), '\\"[{\\'.repeat(40)),
    });
    await fc.assert(
      fc.asyncProperty(deep, async (d) => {
        const body = structuredClone(d.which.body);
        const slot = { deep: '__DEEP__', decoy: d.decoy };
        if (d.where === 'arguments') body.params.arguments = slot;
        else body.params._meta = { ...(body.params._meta ?? {}), ...slot };
        // Built as text: JSON.stringify of the nested value would overflow here first.
        const nested = d.shape === 'array' ? '['.repeat(d.depth) + ']'.repeat(d.depth) : '{"a":'.repeat(d.depth) + '1' + '}'.repeat(d.depth);
        const text = JSON.stringify(body).replace('"__DEEP__"', nested);
        const headers = { ...d.which.headers, authorization: `Bearer ${c.endpoint.token}` };
        const res = await rawBounded(c.endpoint.url, { method: 'POST', headers, body: text });
        const bad = problem(res);
        if (bad) throw new Error(bad);
        // The slot's value opens at depth 4 (the body, params, arguments or _meta).
        const refused = res.status === 400 && res.body.includes(`"code":-32600,"message":"The request is nested deeper than ${LIMIT} levels."`);
        if (refused !== 3 + d.depth > LIMIT) throw new Error(`depth ${3 + d.depth}: ${res.status} ${res.body.slice(0, 200)}`);
        if (refused && JSON.parse(res.body).id !== body.id) throw new Error(`refused without the request's id ${body.id}: ${res.body}`);
      }),
      { numRuns: 150 },
    );
    await stillServes();
  });

  it('answers every malformed console API request without a 500, a stack trace or a source path, and keeps serving', async () => {
    const routes = [
      '/session',
      '/approvals',
      '/approvals/%ID%',
      '/audit',
      '/audit?tool=%ID%&outcome=%ID%&limit=%ID%',
      '/audit/verify',
      '/packs',
      '/packs/%ID%/enable',
      '/packs/%ID%/disable',
      '/packs/%ID%/config',
      '/mcp',
      '/providers',
      '/providers/%ID%/use',
      '/skills',
      '/permissions',
      '/permissions/always-allow',
      '/permissions/%ID%/revoke',
      '/panels',
      '/panels/%ID%/%ID%/%ID%',
      '/chat',
      '/conversations',
      '/conversations/%ID%',
      '/%ID%',
    ];
    // Ids go into the path %-encoded, except the raw ones: malformed escapes as a client might send them.
    const id = fc.oneof(
      fc.constantFrom('echo-pack', 'vault', 'nope', '..', '%2e%2e', '1', '-1', 'x'.repeat(300)).map(encodeURIComponent),
      fc.webSegment().map(encodeURIComponent),
      fc.constantFrom('%', '%E0%A4%A', '%zz', '%2', 'a%2Fb', '%C3%28', '%FF'),
    );
    const consoleRequest = fc.record({
      method: fc.constantFrom('GET', 'POST', 'POST', 'DELETE', 'PUT'),
      route: fc.constantFrom(...routes),
      ids: fc.array(id, { minLength: 3, maxLength: 3 }),
      body: fc.oneof(
        json.map((v) => JSON.stringify(v)),
        text,
        fc.constant('{"answer":'),
      ),
      contentType: fc.constantFrom('application/json', 'application/json', 'text/plain', ''),
      withCookie: fc.boolean(),
      // Mostly the console's own origin; sometimes none or a foreign one (must be refused, not crash).
      origin: fc.constantFrom('own', 'own', 'own', 'none', 'foreign'),
    });
    await fc.assert(
      fc.asyncProperty(consoleRequest, async (r) => {
        let n = 0;
        const route = r.route.replace(/%ID%/g, () => r.ids[n++ % 3]!);
        const headers: Record<string, string> = {};
        if (r.withCookie) headers.Cookie = cookie;
        if (r.origin === 'own') headers.Origin = c.origin;
        if (r.origin === 'foreign') headers.Origin = 'http://evil.example';
        if (r.contentType) headers['Content-Type'] = r.contentType;
        const hasBody = r.method !== 'GET';
        const res = await rawBounded(`${c.origin}/ui/api${route}`, { method: r.method, headers, ...(hasBody ? { body: r.body } : {}) });
        const bad = problem(res);
        if (bad) throw new Error(`${r.method} /ui/api${route}: ${bad}`);
        // A route like `/..` leaves the API once the URL is normalised (`/ui/api/..` is the public page `/ui/`).
        const api = new URL(`${c.origin}/ui/api${route}`).pathname.startsWith('/ui/api/');
        if (api && !r.withCookie && res.status < 400) throw new Error(`${r.method} /ui/api${route} answered ${res.status} without a session`);
        if (r.method !== 'GET' && r.origin !== 'own' && res.status < 400)
          throw new Error(`${r.method} /ui/api${route} from origin "${r.origin}" answered ${res.status}`);
      }),
      { numRuns: 400 },
    );
    const session = await raw(`${c.origin}/ui/api/session`, { headers: { Cookie: cookie } });
    expect(session.status).toBe(200);
    await stillServes();
  });
});

/**
 * One plain request (node:http, so any method, header and body can be sent). An event stream (a GET
 * the server keeps open on purpose) is judged on what arrived in its first moments, then hung up.
 */
function rawBounded(url: string, opts: { method: string; headers: Record<string, string>; body?: string }): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    let hungUp = false;
    const req = http.request(url, { method: opts.method, headers: opts.headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      const done = () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
      const timer = String(res.headers['content-type'] ?? '').includes('text/event-stream')
        ? setTimeout(() => {
            hungUp = true;
            done();
            req.destroy();
          }, 200)
        : undefined;
      res.on('data', (d: string) => (body += d));
      const end = () => {
        clearTimeout(timer);
        done();
      };
      res.on('end', end);
      res.on('error', end);
    });
    req.on('error', (err) => (hungUp ? undefined : reject(err)));
    if (opts.body !== undefined) req.write(opts.body);
    req.end();
  });
}
