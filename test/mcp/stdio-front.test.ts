/**
 * One kernel per data folder (issue 41, item 1): `memo serve --stdio` started while `memo serve` runs
 * on the same data folder (the desktop config memo serve prints) joins it through the control socket.
 * Its waiting request shows in that server's `memo approvals list`, is withdrawn when the client exits,
 * is answered from the server's web console when external writes are on (the line in the server's one
 * audit chain), and is refused with the hint when they are off. Real processes: memo serve, the SDK's
 * stdio client spawning bin/memo, the CLI, the console over HTTP.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { requireFreshBuild } from '../helpers/dist.js';
import { waitFor } from '../helpers/wait.js';
import { openEvents, post } from '../console/console-helpers.js';
import { BIN, memoGlobals, memoOn, raw, ServeProcess, serveWorkspace, type ServeWorkspace } from './mcp-helpers.js';

const text = (r: CallToolResult) => (r.content[0] as { text: string }).text;

interface StdioClient {
  client: Client;
  transport: StdioClientTransport;
  stderr(): string;
  exited: Promise<void>;
}

/** A desktop-style client: it spawns `memo serve --stdio` with the folders the banner's config names. */
async function desktop(w: ServeWorkspace, name: string, extra: string[] = []): Promise<StdioClient> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'serve', '--stdio', ...memoGlobals(w), ...extra],
    env: getDefaultEnvironment(),
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (d) => (stderr += d));
  let closed!: () => void;
  const exited = new Promise<void>((r) => (closed = r));
  const client = new Client({ name, version: '1.0.0' });
  client.onclose = () => closed();
  await client.connect(transport);
  return { client, transport, stderr: () => stderr, exited };
}

async function approvalsList(w: ServeWorkspace): Promise<Array<{ id: string; tool: string; external?: string; caller: { id?: string } }>> {
  const run = await memoOn(w, ['approvals', 'list', '--json']);
  if (run.code !== 0) throw new Error(`memo approvals list failed: ${run.stderr}`);
  return JSON.parse(run.stdout);
}

describe('memo serve --stdio beside a running memo serve', () => {
  beforeAll(requireFreshBuild);
  let w: ServeWorkspace;
  let serve: ServeProcess;
  let info: { url: string; pid: number; console: string };
  const clients: StdioClient[] = [];

  beforeEach(async () => {
    w = serveWorkspace('memo-front-');
    serve = ServeProcess.start([...memoGlobals(w), 'serve', '--json']);
    info = await serve.json(0);
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) await c.client.close().catch(() => {});
    expect(await serve.stop()).toBe(0);
  });

  const join = async (name: string, extra: string[] = []) => {
    const c = await desktop(w, name, extra);
    clients.push(c);
    return c;
  };

  it('joins it: the request waits in its approvals list, is withdrawn when the client exits, and a write is refused with the hint while external writes are off', async () => {
    const c = await join('desk');
    expect(c.stderr()).toContain(`through the memo serve running on this data folder (pid ${info.pid})`);
    const { tools } = await c.client.listTools();
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['echo', 'note_write']));

    const refused = (await c.client.callTool({ name: 'note_write', arguments: { line: 'x' } })) as CallToolResult;
    expect(text(refused)).toMatch(/^PERMISSION_DENIED: .*memo permissions external-writes on --client "desk"/);

    // A person watches the server's approvals (memo approvals list --watch); the client's write waits there.
    expect((await memoOn(w, ['permissions', 'external-writes', 'on', '--client', 'desk'])).code).toBe(0);
    const watch = ServeProcess.start([...memoGlobals(w), 'approvals', 'list', '--watch', '--json']);
    try {
      await waitFor(() => watch.lines.length > 0, { what: 'the watch to start' });
      const call = c.client.callTool({ name: 'note_write', arguments: { line: 'never' } }).catch((err: Error) => err);
      const [waiting] = await waitFor(
        async () => {
          const list = await approvalsList(w);
          return list.length === 1 ? list : undefined;
        },
        { what: "the client's request in the server's memo approvals list" },
      );
      expect(waiting).toMatchObject({ tool: 'note_write', external: 'desk', caller: { id: 'desk' } });

      // The client exits (the desktop app quits): the request is withdrawn and never runs.
      await c.client.close();
      await waitFor(async () => (await approvalsList(w)).length === 0, { what: 'the request withdrawn' });
      await call;
      expect(fs.existsSync(path.join(w.root, 'notes.txt'))).toBe(false);
      const tail = await memoOn(w, ['audit', 'tail', '--tool', 'note_write', '--json']);
      expect(JSON.parse(tail.stdout.trim().split('\n').at(-1)!)).toMatchObject({ outcome: 'error', error: { code: 'CANCELLED' } });
    } finally {
      await watch.stop();
    }
  });

  it('with external writes on, a write approved in the web console runs and its line is in the server’s audit chain', async () => {
    expect((await memoOn(w, ['permissions', 'external-writes', 'on'])).code).toBe(0);
    const login = await raw(info.console);
    const cookie = (login.headers['set-cookie']?.[0] ?? '').split(';')[0]!;
    const origin = new URL(info.url).origin;
    const events = openEvents(origin, cookie);
    try {
      expect(await events.status).toBe(200);
      const c = await join('claude-ai');
      const call = c.client.callTool({ name: 'note_write', arguments: { line: 'from the desktop' } }) as Promise<CallToolResult>;
      const asked = await waitFor(() => events.events.find((e) => e.event === 'asked')?.data, { what: 'the request in the console' });
      expect(asked).toMatchObject({ tool: 'note_write', external: 'claude-ai', answers: ['allow-once', 'deny-once'] });
      const answered = await post(origin, `/ui/api/approvals/${asked.id}`, cookie, { answer: 'allow-once' });
      expect(answered.status).toBe(200);
      const r = await call;
      expect(r.isError).toBeFalsy();
      expect(fs.readFileSync(path.join(w.root, 'notes.txt'), 'utf8')).toContain('from the desktop');

      const tail = await memoOn(w, ['audit', 'tail', '--tool', 'note_write', '--json']);
      expect(JSON.parse(tail.stdout.trim().split('\n').at(-1)!)).toMatchObject({
        outcome: 'ok',
        decision: 'allow:once',
        answeredBy: 'console',
        caller: { kind: 'mcp', id: 'claude-ai' },
      });
      const verify = await memoOn(w, ['audit', 'verify']);
      expect(verify.code).toBe(0);
    } finally {
      events.close();
    }
  });

  it('ends with a line saying so when the server stops, and a profile the server does not know is a usage error', async () => {
    const bad = spawnSync(process.execPath, [BIN, 'serve', '--stdio', ...memoGlobals(w), '--profile', 'nope'], { encoding: 'utf8', input: '' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/^memo: .*nope/);

    const c = await join('desk', ['--tools', 'echo-tools']);
    expect((await c.client.listTools()).tools.map((t) => t.name).sort()).toEqual(['echo', 'note_delete', 'note_write']);
    expect(await serve.stop()).toBe(0);
    await c.exited;
    await waitFor(() => c.stderr().includes('has stopped; restart the MCP client to reconnect'), { what: "the front's last line" });
  });

  it('does not join a server with another sandbox root, saying why, and runs a kernel of its own', async () => {
    const other = fs.mkdtempSync(path.join(path.dirname(w.root), 'other-root-'));
    const c = await join('desk', ['--root', other]);
    expect(c.stderr()).toMatch(/not joining the memo serve on this data folder: the running server \(pid \d+\) has the sandbox root/);
    expect((await c.client.listTools()).tools.length).toBeGreaterThan(0);
  });
});
