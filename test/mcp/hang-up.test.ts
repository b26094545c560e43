/**
 * A request ends with its caller (issue 41, problem 1): a client that hangs up on a call waiting for a
 * person's approval takes the request out of the inbox at once, on both revisions, and the call never
 * runs. Before, a v1 client that timed out left its request pending for 30 minutes, and an answer given
 * 12 minutes later ran it.
 */
import * as http from 'node:http';
import { PassThrough } from 'node:stream';
import { McpHttpEndpoint } from '../../kernel/mcp/mcp-http-server.js';
import { McpStdioServer } from '../../kernel/mcp/mcp-stdio.js';
import { echoPack, makeKernel, tool, type Fixture } from '../helpers/kernel-fixture.js';
import { waitFor } from '../helpers/wait.js';
import { connect } from './mcp-helpers.js';

const MODERN = '2026-07-28';

/** A POST the test can hang up on: resolves once sent; `hangUp()` destroys the socket mid-answer. */
function postAndHold(url: string, headers: Record<string, string>, body: unknown): { hangUp(): void } {
  const req = http.request(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
  });
  req.on('error', () => {
    // destroyed on purpose
  });
  req.end(JSON.stringify(body));
  return { hangUp: () => req.destroy() };
}

describe('a call whose MCP client hung up', () => {
  let fx: Fixture;
  let endpoint: McpHttpEndpoint;
  beforeEach(async () => {
    // No face: a request waits in the inbox for an answer, as under memo serve with memo approvals watching.
    fx = makeKernel({
      prompter: null,
      packs: [echoPack(), { id: 'asks', version: '1.0.0', tools: [{ spec: tool('ask_read', 'medium', 'read'), impl: () => 'ran' }] }],
    });
    endpoint = new McpHttpEndpoint(fx.kernel);
    await endpoint.start();
  });
  afterEach(async () => {
    await endpoint.close();
    await fx.close();
  });

  const callOf = (id: number, meta?: Record<string, unknown>) => ({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'ask_read', arguments: { text: 'x' }, ...(meta ? { _meta: meta } : {}) },
  });

  async function expectWithdrawn(hangUp: () => void): Promise<void> {
    await waitFor(() => fx.kernel.approvals.pending().length === 1, { what: 'the request in the inbox' });
    hangUp();
    await waitFor(() => fx.kernel.approvals.pending().length === 0, { what: 'the request withdrawn from the inbox' });
    const line = await waitFor(() => fx.kernel.audit.tail({ tool: 'ask_read' }).at(-1), { what: 'the audit line' });
    expect(line.outcome).not.toBe('ok');
    expect(line.error?.code).toBe('CANCELLED');
  }

  it('in a 2025-11-25 session: the dropped response stream withdraws it, and the session goes on', async () => {
    const c = await connect(endpoint.url, endpoint.token);
    try {
      const held = postAndHold(
        endpoint.url,
        { Authorization: `Bearer ${endpoint.token}`, 'Mcp-Session-Id': c.transport.sessionId!, 'MCP-Protocol-Version': '2025-11-25' },
        callOf(7),
      );
      await expectWithdrawn(() => held.hangUp());
      expect((await c.client.listTools()).tools.length).toBeGreaterThan(0);
    } finally {
      await c.close();
    }
  });

  it('on the stateless revision: the closed request withdraws it', async () => {
    const held = postAndHold(
      endpoint.url,
      { Authorization: `Bearer ${endpoint.token}`, 'MCP-Protocol-Version': MODERN, 'Mcp-Method': 'tools/call', 'Mcp-Name': 'ask_read' },
      callOf(8, {
        'io.modelcontextprotocol/protocolVersion': MODERN,
        'io.modelcontextprotocol/clientInfo': { name: 'gone', version: '1' },
        'io.modelcontextprotocol/clientCapabilities': {},
      }),
    );
    await expectWithdrawn(() => held.hangUp());
  });
});

describe('a call whose stdio client went away', () => {
  it('is withdrawn from the inbox when stdin ends', async () => {
    const fx = makeKernel({
      prompter: null,
      packs: [{ id: 'asks', version: '1.0.0', tools: [{ spec: tool('ask_read', 'medium', 'read'), impl: () => 'ran' }] }],
    });
    const toServer = new PassThrough();
    const toClient = new PassThrough();
    const server = new McpStdioServer(fx.kernel, { stdin: toServer, stdout: toClient });
    await server.start();
    try {
      toServer.write(
        `${JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: {
            name: 'ask_read',
            arguments: {},
            _meta: {
              'io.modelcontextprotocol/protocolVersion': MODERN,
              'io.modelcontextprotocol/clientInfo': { name: 'desktop', version: '1' },
              'io.modelcontextprotocol/clientCapabilities': {},
            },
          },
        })}\n`,
      );
      await waitFor(() => fx.kernel.approvals.pending().length === 1, { what: 'the request in the inbox' });
      toServer.end();
      await waitFor(() => fx.kernel.approvals.pending().length === 0, { what: 'the request withdrawn' });
      const line = await waitFor(() => fx.kernel.audit.tail({ tool: 'ask_read' }).at(-1), { what: 'the audit line' });
      expect(line.error?.code).toBe('CANCELLED');
    } finally {
      await server.close();
      await fx.close();
    }
  });
});
