import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { requireFreshBuild } from '../helpers/dist.js';
import { WAIT_DEADLINE_MS } from '../helpers/wait.js';
import { BIN, connect, eventually, raw, rawInitialize, ServeProcess, serveWorkspace, writePack, type Connected } from './mcp-helpers.js';
import { nth } from '../helpers/nth.js';

beforeAll(requireFreshBuild);

/** A workspace with its own copy of the fixture packs, so the test can drop new packs in. */
const workspace = () => serveWorkspace('memo-serve-');

describe('memo serve (child process)', () => {
  let serve: ServeProcess;
  let w: ReturnType<typeof workspace>;
  let info: { url: string; token: string; pid: number; tools: number };
  const clients: Connected[] = [];

  beforeAll(async () => {
    w = workspace();
    serve = ServeProcess.start(['--packs', w.packs, '--root', w.root, '--data', w.data, 'serve', '--json']);
    info = await serve.json(0);
  });
  afterAll(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    expect(await serve.stop()).toBe(0);
  });

  async function client(): Promise<Connected> {
    const c = await connect(info.url, info.token);
    clients.push(c);
    return c;
  }

  it('prints one JSON line with the URL, the token and the pid', () => {
    expect(info.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    expect(info.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(info.pid).toBe(serve.child.pid);
    expect(info.tools).toBeGreaterThan(3);
  });

  it('answers /healthz without auth, and 401 without a token or with a wrong one', async () => {
    const health = await raw(info.url.replace('/mcp', '/healthz'));
    expect([health.status, JSON.parse(health.body)]).toEqual([200, { ok: true }]);
    const none = await rawInitialize(info.url);
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toMatch(/^Bearer/);
    expect((await rawInitialize(info.url, { Authorization: 'Bearer not-the-token' })).status).toBe(401);
    expect((await rawInitialize(info.url, { Authorization: `Bearer ${info.token}`, Host: 'evil.example' })).status).toBe(403);
  });

  it('lists the tools with annotations and calls a read tool', async () => {
    const { client: c } = await client();
    const { tools } = await c.listTools();
    expect(tools.find((t) => t.name === 'echo')?.annotations).toEqual({
      readOnlyHint: true,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    });
    expect(tools.find((t) => t.name === 'note_delete')?.annotations).toMatchObject({ destructiveHint: true });
    const r = (await c.callTool({ name: 'echo', arguments: { text: 'child' } })) as CallToolResult;
    expect(r.structuredContent).toEqual({ text: 'child', summary: 'echoed 5 chars' });
    const write = (await c.callTool({ name: 'note_write', arguments: { line: 'x' } })) as CallToolResult;
    expect(write.isError).toBe(true);
    expect((write.content[0] as { text: string }).text).toMatch(/^PERMISSION_DENIED: .*writes need a running Memo agent turn/);
    expect(fs.existsSync(path.join(w.root, 'notes.txt'))).toBe(false);
  });

  it('tells connected clients when a pack folder is dropped in', async () => {
    const c = await client();
    await c.notificationsReady;
    writePack(w.packs, 'dropped-in', [{ name: 'dropped_tool' }], 'export const tools = { dropped_tool: () => "new" };');
    await eventually(() => c.tools.some((list) => list.some((t) => t.name === 'dropped_tool')), 'list_changed with the new tool');
    expect(((await c.client.callTool({ name: 'dropped_tool', arguments: {} })) as CallToolResult).content).toEqual([{ type: 'text', text: 'new' }]);
  });

  it('rotates the token on POST /mcp/rotate-token: the old one gets 401 at once', async () => {
    const old = info.token;
    const r = await raw(`${info.url}/rotate-token`, { method: 'POST', headers: { Authorization: `Bearer ${old}` } });
    expect(r.status).toBe(200);
    info = { ...info, token: JSON.parse(r.body).token };
    expect((await rawInitialize(info.url, { Authorization: `Bearer ${old}` })).status).toBe(401);
    expect((await rawInitialize(info.url, { Authorization: `Bearer ${info.token}` })).status).toBe(200);
  });

  it('rotates the token on SIGHUP and prints a new JSON line', async () => {
    const old = info.token;
    const before = serve.lines.length;
    serve.child.kill('SIGHUP');
    const next = await serve.json(before);
    expect(next).toMatchObject({ url: info.url, pid: info.pid });
    expect(next.token).not.toBe(old);
    expect((await rawInitialize(info.url, { Authorization: `Bearer ${old}` })).status).toBe(401);
    info = next;
    const { client: c } = await client();
    expect((await c.listTools()).tools.length).toBeGreaterThan(0);
  });

  it('keeps every token it ever had out of stderr and the audit trail', () => {
    const audit = fs.readFileSync(path.join(w.data, 'agent-audit.jsonl'), 'utf8');
    const tokens = serve.lines.map((l) => JSON.parse(l).token as string);
    expect(tokens.length).toBeGreaterThanOrEqual(2);
    for (const t of [...tokens, info.token]) {
      expect(serve.stderr).not.toContain(t);
      expect(audit).not.toContain(t);
    }
  });
});

describe('memo serve options', () => {
  it('prints the URL, the token and client configs (including mcp-remote) in text mode, and rotates on SIGHUP', async () => {
    const w = workspace();
    const serve = ServeProcess.start(['--packs', w.packs, '--root', w.root, '--data', w.data, 'serve', '--port', '0']);
    try {
      await eventually(() => serve.lines.some((l) => l.startsWith('Stop with Ctrl-C')), 'banner');
      const out = serve.lines.join('\n');
      const url = nth(/url: +(http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(out) ?? [], 1);
      const token = nth(/token: +([A-Za-z0-9_-]{43})/.exec(out) ?? [], 1);
      expect(out).toContain(`"Authorization": "Bearer ${token}"`);
      expect(out).toContain('"mcp-remote"');
      expect(out).toContain(`kill -HUP ${serve.child.pid}`);
      const before = serve.lines.length;
      serve.child.kill('SIGHUP');
      await eventually(() => serve.lines.length > before, 'rotation line');
      const fresh = nth(/New token: ([A-Za-z0-9_-]{43})/.exec(nth(serve.lines, before)) ?? [], 1);
      expect((await rawInitialize(url, { Authorization: `Bearer ${token}` })).status).toBe(401);
      expect((await rawInitialize(url, { Authorization: `Bearer ${fresh}` })).status).toBe(200);
    } finally {
      expect(await serve.stop()).toBe(0);
    }
  });

  it('leads the banner with a stdio config on the same root, data and packs, which joins the running server without a token', async () => {
    const w = workspace();
    const serve = ServeProcess.start(['--packs', w.packs, '--root', w.root, '--data', w.data, 'serve']);
    try {
      await eventually(() => serve.lines.some((l) => l.startsWith('Stop with Ctrl-C')), 'banner');
      const lines = serve.lines;
      const lead = lines.findIndex((l) => l.startsWith('Desktop clients'));
      expect(lead).toBeGreaterThan(0);
      expect(lead).toBeLessThan(lines.findIndex((l) => l.startsWith('MCP endpoint')));
      expect(lines[lead]).toMatch(/needs no token. While this memo serve runs, the client joins it/);
      const close = lines.indexOf('}', lead);
      const config = JSON.parse(lines.slice(lead + 1, close + 1).join('\n'));
      const entry = config.mcpServers.memo as { command: string; args: string[] };
      expect(entry).toEqual({ command: process.execPath, args: [BIN, 'serve', '--stdio', '--root', w.root, '--data', w.data, '--packs', w.packs] });
      expect(lines.join('\n')).toMatch(/pass --port N to keep the URL \(the token still changes\)/);
      // Run the snippet as a desktop client would, beside the running HTTP server.
      const client = new Client({ name: 'desktop', version: '1' });
      const transport = new StdioClientTransport({ command: entry.command, args: entry.args, stderr: 'pipe' });
      let stderr = '';
      transport.stderr?.on('data', (d) => (stderr += d));
      await client.connect(transport);
      try {
        expect((await client.listTools()).tools.length).toBeGreaterThan(0);
        expect(stderr).toContain('through the memo serve running on this data folder');
      } finally {
        await client.close();
      }
    } finally {
      expect(await serve.stop()).toBe(0);
    }
  });

  it('refuses to bind to a non-loopback interface without --allow-remote, saying why (exit 2)', () => {
    const w = workspace();
    const r = spawnSync(process.execPath, [BIN, '--root', w.root, '--data', w.data, 'serve', '--host', '0.0.0.0', '--json'], {
      encoding: 'utf8',
      timeout: WAIT_DEADLINE_MS,
    });
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/loopback only.*token.*--allow-remote/);
    expect(fs.existsSync(w.data)).toBe(false);
  });

  it('refuses a bad --port or --max-sessions with exit 2', () => {
    const w = workspace();
    for (const args of [
      ['--port', 'abc'],
      ['--port', '70000'],
      ['--max-sessions', '0'],
      ['--idle-timeout', '-1'],
    ]) {
      const r = spawnSync(process.execPath, [BIN, '--root', w.root, '--data', w.data, 'serve', ...args], { encoding: 'utf8', timeout: WAIT_DEADLINE_MS });
      expect(r.status).toBe(2);
    }
  });
});
