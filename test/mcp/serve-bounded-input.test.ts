/**
 * Bounded input on a served kernel (`memo serve --json`, a child process, real HTTP on loopback):
 * JSON nested past the depth limit, in a tool's arguments or in `_meta`, in both protocol
 * revisions, is refused before parsing with a clean JSON-RPC error, never the 500 that a stack
 * overflow gave; a body past the size limit gets its 413 while the client is still uploading, and
 * the connection is not cut under it. The stdio transport's side is in mcp-stdio.test.ts.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { requireFreshBuild } from '../helpers/dist.js';
import { waitFor } from '../helpers/wait.js';
import { nestedJson, raw, rawInitialize, ServeProcess, serveWorkspace, uploadPastLimit, writePack } from './mcp-helpers.js';

beforeAll(requireFreshBuild);

const MODERN = '2026-07-28';
const LEGACY = '2025-11-25';
const LIMIT = 64;
const TOO_DEEP = `The request is nested deeper than ${LIMIT} levels.`;
const envelope = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientInfo': { name: 'deep-client', version: '1.0.0' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

describe('memo serve: bounded request bodies', () => {
  let serve: ServeProcess;
  let w: ReturnType<typeof serveWorkspace>;
  let info: { url: string; token: string };
  let session: string;

  beforeAll(async () => {
    w = serveWorkspace('memo-bounded-');
    // A read tool that takes any arguments: deep ones would reach the kernel's recursive code.
    writePack(w.packs, 'open', [{ name: 'open_read' }], 'export const tools = { open_read: (args) => "got " + Object.keys(args).join(",") };');
    serve = ServeProcess.start(['--packs', w.packs, '--root', w.root, '--data', w.data, 'serve', '--json']);
    info = await serve.json(0);
    const init = await rawInitialize(info.url, { Authorization: `Bearer ${info.token}` });
    session = String(init.headers['mcp-session-id']);
    await post(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), 'legacy');
  });
  afterAll(async () => {
    expect(await serve.stop()).toBe(0);
  });

  /** A raw JSON-RPC POST (the body as text: a deep one cannot go through JSON.stringify) of either revision. */
  function post(body: string, revision: 'legacy' | 'modern', method = 'tools/call') {
    const headers: Record<string, string> = {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      Authorization: `Bearer ${info.token}`,
    };
    if (revision === 'legacy') Object.assign(headers, { 'Mcp-Session-Id': session, 'MCP-Protocol-Version': LEGACY });
    else Object.assign(headers, { 'MCP-Protocol-Version': MODERN, 'Mcp-Method': method, ...(method === 'tools/call' ? { 'Mcp-Name': 'open_read' } : {}) });
    return raw(info.url, { method: 'POST', headers, body });
  }

  /** A tools/call of open_read with `deep` (JSON text) in its arguments or in `_meta`. */
  function call(id: number, revision: 'legacy' | 'modern', where: 'arguments' | '_meta', deep: string): string {
    const meta = revision === 'modern' ? JSON.stringify(envelope).slice(1, -1) : '';
    const metaWith = (extra: string) => `{${[meta, extra].filter(Boolean).join(',')}}`;
    const args = where === 'arguments' ? `{"deep":${deep}}` : '{}';
    const params = `"name":"open_read","arguments":${args},"_meta":${metaWith(where === '_meta' ? `"deep":${deep}` : '')}`;
    return `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{${params}}}`;
  }

  /** A result out of a JSON answer or an SSE one (a 2025-11-25 session answers a call as an event stream). */
  function message(body: string): any {
    const data = /^data: (.*)$/m.exec(body);
    return JSON.parse(data ? data[1]! : body);
  }

  it('answers 5,000- and 20,000-level nested arguments and _meta with -32600 naming the limit and HTTP 400, in both revisions, and keeps serving', async () => {
    let id = 100;
    for (const revision of ['legacy', 'modern'] as const)
      for (const where of ['arguments', '_meta'] as const)
        for (const depth of [5000, 20_000])
          for (const shape of ['array', 'object'] as const) {
            const r = await post(call(++id, revision, where, nestedJson(depth, shape)), revision);
            expect([`${revision} ${where} ${depth} ${shape}`, r.status, message(r.body)]).toEqual([
              `${revision} ${where} ${depth} ${shape}`,
              400,
              { jsonrpc: '2.0', error: { code: -32600, message: TOO_DEEP }, id },
            ]);
          }
    // Nested as deep as the limit allows (64 with the envelope's three levels), the call runs, in both revisions.
    for (const revision of ['legacy', 'modern'] as const) {
      const ok = await post(call(++id, revision, 'arguments', nestedJson(LIMIT - 3, 'object')), revision);
      expect([revision, ok.status, message(ok.body).result.content[0].text]).toEqual([revision, 200, 'got deep']);
      const over = await post(call(++id, revision, 'arguments', nestedJson(LIMIT - 2, 'object')), revision);
      expect([revision, over.status, JSON.parse(over.body).error]).toEqual([revision, 400, { code: -32600, message: TOO_DEEP }]);
    }
    // A refused request is no tool call: the audit has the two calls that ran, and nothing else of open_read.
    const audit = path.join(w.data, 'agent-audit.jsonl');
    const calls = () => (fs.existsSync(audit) ? fs.readFileSync(audit, 'utf8') : '').split('\n').filter((l) => l.includes('"tool":"open_read"'));
    await waitFor(() => calls().length >= 2, { what: () => `two audited open_read calls (so far ${calls().length})` });
    expect(calls().map((l) => JSON.parse(l).outcome)).toEqual(['ok', 'ok']);
    // Nothing reached the 500 path: no stack overflow and no stack trace on the server's stderr.
    expect(serve.stderr).not.toMatch(/Maximum call stack|Internal server error|\n\s+at .+:\d+:\d+/);
    const health = await raw(info.url.replace('/mcp', '/healthz'));
    expect(health.status).toBe(200);
  });

  it('answers a 10 MB body with 413 and Connection: close while the client is still uploading, and reads the rest instead of cutting the connection', async () => {
    const auth = { Authorization: `Bearer ${info.token}`, Accept: 'application/json, text/event-stream' };
    const MiB = 1024 * 1024;
    for (const [what, headers] of [
      ['a request without a session', auth],
      ['a request of a session', { ...auth, 'Mcp-Session-Id': session, 'MCP-Protocol-Version': LEGACY }],
    ] as const) {
      const up = await uploadPastLimit(info.url, headers, 5 * MiB, 5 * MiB);
      expect({ what, status: up.status, connection: up.headers.connection, body: up.body, answeredMidUpload: up.answeredMidUpload, error: up.error }).toEqual({
        what,
        status: 413,
        connection: 'close',
        body: JSON.stringify({ jsonrpc: '2.0', error: { code: -32600, message: 'The request body is over 4194304 bytes.' }, id: null }),
        answeredMidUpload: true,
        error: undefined,
      });
    }
    // The session is still there, and the server serves.
    const after = await post(call(900, 'legacy', 'arguments', '"fine"'), 'legacy');
    expect(message(after.body).result.content[0].text).toBe('got deep');
  });
});
