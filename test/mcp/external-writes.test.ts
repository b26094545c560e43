/**
 * External writes by a person's choice (issue 41, item 2): off by default, as seed 003 says, and the
 * refusal says how to turn them on; on (for every client, or for one declared client name), an
 * external MCP client's write waits in the approvals inbox every time, offers allow-once and deny-once
 * only, names the client, and nothing stored (allow-forever, a session grant, always-allow) answers it.
 * Real HTTP on loopback, the SDK's v1 client (2025-11-25 sessions) and hand-made stateless requests.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { McpHttpEndpoint } from '../../kernel/mcp/mcp-http-server.js';
import { PermissionStore } from '../../kernel/permissions/permission-store.js';
import { MemoryLogger } from '../../kernel/logger.js';
import { approvalView } from '../../kernel/control/kernel-views.js';
import { makeKernel, tempDir, tool, type Fixture } from '../helpers/kernel-fixture.js';
import { waitFor } from '../helpers/wait.js';
import { connect, type Connected } from './mcp-helpers.js';

const MODERN = '2026-07-28';

function text(r: CallToolResult): string {
  return (r.content[0] as { text: string }).text;
}

describe('external MCP clients writing, by a person’s choice', () => {
  let fx: Fixture;
  let endpoint: McpHttpEndpoint;
  let written: string[];
  const clients: Connected[] = [];

  beforeEach(async () => {
    written = [];
    // No face of its own: requests wait in the inbox (memo serve with memo approvals or the console watching).
    fx = makeKernel({
      prompter: null,
      packs: [
        {
          id: 'notes',
          version: '1.0.0',
          tools: [
            { spec: tool('note_add', 'medium', 'write'), impl: (a) => (written.push(String(a.text)), 'added') },
            { spec: tool('note_touch', 'safe', 'write'), impl: () => (written.push('touched'), 'touched') },
            { spec: tool('note_read', 'safe', 'read'), impl: () => written.join(',') },
          ],
        },
      ],
    });
    endpoint = new McpHttpEndpoint(fx.kernel);
    await endpoint.start();
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) await c.close();
    await endpoint.close();
    await fx.close();
  });

  async function client(name: string): Promise<Connected> {
    const c = await connect(endpoint.url, endpoint.token, { name });
    clients.push(c);
    return c;
  }

  const call = (c: Connected, name: string, args: Record<string, unknown> = { text: 'x' }) =>
    c.client.callTool({ name, arguments: args }) as Promise<CallToolResult>;

  /** The one request waiting in the inbox. */
  const waiting = () =>
    waitFor(() => (fx.kernel.approvals.pending().length === 1 ? fx.kernel.approvals.pending()[0] : undefined), { what: 'a request in the inbox' });

  it('off by default: a write is refused at once, nothing asked, and the refusal says how to let this client ask', async () => {
    const c = await client('desk');
    const r = await call(c, 'note_add');
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/^PERMISSION_DENIED: .*external MCP clients may only use read tools/);
    expect(text(r)).toContain('memo permissions external-writes on --client "desk"');
    expect(fx.kernel.approvals.pending()).toEqual([]);
    expect(written).toEqual([]);
    expect(fx.kernel.audit.tail({ tool: 'note_add' }).at(-1)).toMatchObject({ decision: 'deny:caller', outcome: 'error' });
    // Reads are untouched.
    expect((await call(c, 'note_read', {})).isError).toBeFalsy();
  });

  it('on for one client name: that client’s write waits in the inbox naming it, allow-once or deny-once, and runs once allowed', async () => {
    fx.kernel.permissions.setExternalWrites(true, 'desk');
    const desk = await client('desk');
    const other = await client('other');

    const refused = await call(other, 'note_add');
    expect(text(refused)).toContain('--client "other"');

    const pending = call(desk, 'note_add', { text: 'from desk' });
    const request = await waiting();
    const view = approvalView(request);
    expect(view.external).toBe('desk');
    expect(view.answers).toEqual(['allow-once', 'deny-once']);
    expect(view.caller).toMatchObject({ kind: 'mcp', id: 'desk' });
    const fact = view.display.facts.find((f) => f.label === 'external write');
    expect(fact?.value).toContain('"desk"');
    expect(fact?.value).toContain('not verified');
    expect(written).toEqual([]);

    expect(fx.kernel.approvals.answer(request.id, 'allow-once', 'console')).toBe(true);
    const r = await pending;
    expect(r.isError).toBeFalsy();
    expect(written).toEqual(['from desk']);
    expect(fx.kernel.audit.tail({ tool: 'note_add' }).at(-1)).toMatchObject({
      decision: 'allow:once',
      answeredBy: 'console',
      outcome: 'ok',
      caller: { kind: 'mcp', id: 'desk' },
    });
  });

  it('nothing stored answers an external write: allow-forever, always-allow and a session answer leave the next one asked; a safe write is asked too', async () => {
    fx.kernel.permissions.setExternalWrites(true);
    fx.kernel.permissions.set({ tool: 'note_add', decision: 'allow', plugin: 'notes', scope: 'forever' }, new Date());
    fx.kernel.permissions.setAlwaysAllow(true);
    const c = await client('anyone');

    for (const answer of ['allow-session', 'allow-forever'] as const) {
      const pending = call(c, 'note_add', { text: answer });
      const request = await waiting();
      fx.kernel.approvals.answer(request.id, answer, 'host');
      expect((await pending).isError).toBeFalsy();
      expect(fx.kernel.audit.tail({ tool: 'note_add' }).at(-1)).toMatchObject({ decision: 'allow:once' });
    }
    // The stored allow is the person's own, from before; no answer above added a session grant or a new decision.
    expect(fx.kernel.permissions.list().filter((d) => d.tool === 'note_add')).toHaveLength(1);

    const touch = call(c, 'note_touch', {});
    const request = await waiting();
    expect(request.request.tool).toBe('note_touch');
    fx.kernel.approvals.answer(request.id, 'deny-forever', 'host');
    const r = await touch;
    expect(text(r)).toMatch(/^PERMISSION_DENIED: The user denied this note_touch call/);
    // A deny for ever on an external write denies this call only.
    expect(fx.kernel.permissions.list().filter((d) => d.tool === 'note_touch')).toEqual([]);
    expect(written).toEqual(['allow-session', 'allow-forever']);
  });

  it('a stored deny still refuses an external write without asking', async () => {
    fx.kernel.permissions.setExternalWrites(true);
    fx.kernel.permissions.set({ tool: 'note_add', decision: 'deny', plugin: 'notes', scope: 'forever' }, new Date());
    const r = await call(await client('desk'), 'note_add');
    expect(text(r)).toMatch(/^PERMISSION_DENIED: note_add is denied/);
    expect(fx.kernel.approvals.pending()).toEqual([]);
  });

  it('on the stateless revision too: the declared name is matched, and turning it off refuses again at the next call', async () => {
    fx.kernel.permissions.setExternalWrites(true, 'pinned');
    const post = (id: number, who: string) =>
      fetch(endpoint.url, {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${endpoint.token}`,
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
          'MCP-Protocol-Version': MODERN,
          'Mcp-Method': 'tools/call',
          'Mcp-Name': 'note_add',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id,
          method: 'tools/call',
          params: {
            name: 'note_add',
            arguments: { text: who },
            _meta: {
              'io.modelcontextprotocol/protocolVersion': MODERN,
              'io.modelcontextprotocol/clientInfo': { name: who, version: '2.4.0' },
              'io.modelcontextprotocol/clientCapabilities': {},
            },
          },
        }),
      }).then(async (res) => JSON.parse(await res.text()) as { result: CallToolResult });

    const asked = post(1, 'pinned');
    const request = await waiting();
    expect(approvalView(request)).toMatchObject({ external: 'pinned', caller: { id: 'pinned@2.4.0' } });
    fx.kernel.approvals.answer(request.id, 'deny-once', 'cli');
    expect(text((await asked).result)).toMatch(/^PERMISSION_DENIED: The user denied this note_add call/);

    fx.kernel.permissions.setExternalWrites(false, 'pinned');
    const off = await post(2, 'pinned');
    expect(text(off.result)).toContain('memo permissions external-writes on --client "pinned"');
    expect(written).toEqual([]);
  });
});

describe('the external-writes setting as stored', () => {
  it('survives a restart in data/permissions.json, and off without a client clears the named ones', () => {
    const file = path.join(tempDir('memo-perm-'), 'permissions.json');
    const logger = new MemoryLogger();
    const store = new PermissionStore(file, logger);
    expect(store.externalWrites).toEqual({ all: false, clients: [] });
    store.setExternalWrites(true, 'claude-ai');
    store.setExternalWrites(true, 'cursor');
    store.setExternalWrites(true, 'cursor');
    expect(new PermissionStore(file, logger).externalWrites).toEqual({ all: false, clients: ['claude-ai', 'cursor'] });
    expect(new PermissionStore(file, logger).externalWritesFor('cursor')).toBe(true);
    expect(new PermissionStore(file, logger).externalWritesFor('Cursor')).toBe(false);
    expect(new PermissionStore(file, logger).externalWritesFor(undefined)).toBe(false);
    store.setExternalWrites(true);
    expect(store.externalWritesFor('anything')).toBe(true);
    store.setExternalWrites(false);
    expect(new PermissionStore(file, logger).externalWrites).toEqual({ all: false, clients: [] });
  });

  it('a malformed setting makes the file unusable, which is off for every client (fail closed)', () => {
    const file = path.join(tempDir('memo-perm-'), 'permissions.json');
    fs.writeFileSync(file, JSON.stringify({ version: 2, alwaysAllow: false, decisions: [], externalWrites: { all: 'yes', clients: [] } }));
    const logger = new MemoryLogger();
    const store = new PermissionStore(file, logger);
    expect(store.externalWritesFor('x')).toBe(false);
    expect(store.problem).toMatch(/externalWrites/);
  });
});
