import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { PassThrough, type Readable, type Writable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolResult, JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { CAPABILITY_ENV, McpStdioServer, takeWriteCapabilityFromEnv } from '../../kernel/mcp/mcp-stdio.js';
import type { ToolContext } from '../../kernel/tools/contract.js';
import { requireFreshBuild } from '../helpers/dist.js';
import { makeKernel, tempDir, type Fixture } from '../helpers/kernel-fixture.js';
import { SPAWN_TIMEOUT_MS, waitFor } from '../helpers/wait.js';
import { killWhenDone } from '../helpers/cleanup.js';
import { BIN, deferred, FIXTURE_PACKS, nestedJson, writePack } from './mcp-helpers.js';

function workspace() {
  const base = tempDir('memo-stdio-');
  const root = path.join(base, 'root');
  const packs = path.join(base, 'packs');
  fs.mkdirSync(root);
  fs.cpSync(FIXTURE_PACKS, packs, { recursive: true });
  return { root, packs, data: path.join(base, 'data') };
}

const text = (r: CallToolResult) => (r.content[0] as { text: string }).text;

describe('memo serve --stdio (child process)', () => {
  beforeAll(requireFreshBuild);

  async function spawnClient(w: ReturnType<typeof workspace>, env: Record<string, string> = {}) {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, 'serve', '--stdio', '--packs', w.packs, '--data', w.data, '--root', w.root],
      env: { ...getDefaultEnvironment(), ...env },
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (d) => (stderr += d));
    const client = new Client({ name: 'stdio-test', version: '1.0.0' });
    // Anything on the child's stdout that is not a protocol message surfaces here.
    const protocolErrors: Error[] = [];
    client.onerror = (err) => protocolErrors.push(err);
    await client.connect(transport);
    return { client, transport, stderr: () => stderr, protocolErrors };
  }

  it(
    'lists and calls tools over stdio, refuses writes, and logs only to stderr',
    async () => {
      const w = workspace();
      // A pack that prints to stdout must not corrupt the protocol stream.
      writePack(w.packs, 'noisy', [{ name: 'noisy' }], 'export const tools = { noisy: () => { console.log("noise on stdout"); return "quiet result"; } };');
      const { client, stderr, protocolErrors } = await spawnClient(w);
      try {
        const { tools } = await client.listTools();
        expect(tools.find((t) => t.name === 'echo')?.annotations).toMatchObject({ readOnlyHint: true, openWorldHint: false });
        const r = (await client.callTool({ name: 'echo', arguments: { text: 'over stdio' } })) as CallToolResult;
        expect(r.structuredContent).toEqual({ text: 'over stdio', summary: 'echoed 10 chars' });
        const write = (await client.callTool({ name: 'note_write', arguments: { line: 'x' } })) as CallToolResult;
        expect(write.isError).toBe(true);
        expect(text(write)).toMatch(/^PERMISSION_DENIED: .*writes need a running Memo agent turn/);
        expect(fs.existsSync(path.join(w.root, 'notes.txt'))).toBe(false);
        expect(text((await client.callTool({ name: 'noisy', arguments: {} })) as CallToolResult)).toBe('quiet result');
        // stdout and stderr are two pipes read independently: the result above can arrive before the
        // stderr bytes the child wrote earlier, so wait for them rather than expect them already there.
        await waitFor(() => /serving \d+ tools over MCP stdio/.test(stderr()) && stderr().includes('noise on stdout'), {
          what: () => `the start-up line and the noise on stderr (so far: ${JSON.stringify(stderr())})`,
        });
        expect(protocolErrors).toEqual([]);
      } finally {
        await client.close();
      }
      const audit = fs.readFileSync(path.join(w.data, 'agent-audit.jsonl'), 'utf8');
      expect(audit).toContain('"caller":{"kind":"mcp","id":"stdio-test"}');
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'refuses a write capability this kernel never minted, and never records it',
    async () => {
      const w = workspace();
      const foreign = 'memo-cap-not-minted-by-this-kernel';
      const { client } = await spawnClient(w, { [CAPABILITY_ENV]: foreign });
      try {
        const r = (await client.callTool({ name: 'note_write', arguments: { line: 'x' } })) as CallToolResult;
        expect(r.structuredContent).toMatchObject({ code: 'PERMISSION_DENIED' });
      } finally {
        await client.close();
      }
      expect(fs.existsSync(path.join(w.root, 'notes.txt'))).toBe(false);
      expect(fs.readFileSync(path.join(w.data, 'agent-audit.jsonl'), 'utf8')).not.toContain(foreign);
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'starts no long-running pack service for a stdio client unless --services asks for them',
    async () => {
      const w = workspace();
      for (const extra of [[], ['--services']]) {
        const transport = new StdioClientTransport({
          command: process.execPath,
          args: [BIN, 'serve', '--stdio', ...extra, '--packs', w.packs, '--data', w.data, '--root', w.root],
          env: getDefaultEnvironment(),
          stderr: 'pipe',
        });
        let stderr = '';
        transport.stderr?.on('data', (d) => (stderr += d));
        const client = new Client({ name: 'stdio-services', version: '1.0.0' });
        await client.connect(transport);
        try {
          expect((await client.listTools()).tools.length).toBeGreaterThan(10);
          await waitFor(() => /serving \d+ tools over MCP stdio/.test(stderr), { what: () => `the start-up line (so far: ${stderr})` });
          if (extra.length) expect(stderr).toContain('service routines/scheduler started');
          else {
            expect(stderr).toContain(
              'pack services (routines scheduler, WhatsApp connection, calendar sync) are not started over stdio; --services starts them',
            );
            expect(stderr).not.toMatch(/service \S+ started/);
          }
        } finally {
          await client.close();
        }
      }
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'answers a 20,000-level nested argument or _meta line with -32600 naming the limit, a line past 10 MiB with -32600 naming its size, and keeps serving',
    async () => {
      const w = workspace();
      // A read tool that takes any arguments: deep ones would reach the kernel's recursive code.
      writePack(w.packs, 'open', [{ name: 'open_read' }], 'export const tools = { open_read: (args) => "got " + Object.keys(args).join(",") };');
      // A raw child: the SDK client would JSON.stringify the deep message itself, and overflow first.
      const child = killWhenDone(
        spawn(process.execPath, [BIN, 'serve', '--stdio', '--packs', w.packs, '--data', w.data, '--root', w.root], { stdio: ['pipe', 'pipe', 'pipe'] }),
      );
      let stderr = '';
      let out = '';
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
      const answers = () =>
        out
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as { id?: unknown; result?: any; error?: { code: number; message: string } });
      const answer = (id: number | null, nth = 0) =>
        waitFor(() => answers().filter((m) => m.id === id)[nth], { what: () => `the answer to ${id} (so far: ${out.slice(0, 2000)}; stderr: ${stderr})` });
      const send = (text: string) => child.stdin.write(text + '\n');
      const envelope = JSON.stringify({
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientInfo': { name: 'deep-stdio', version: '1' },
        'io.modelcontextprotocol/clientCapabilities': {},
      });
      const call = (id: number, args: string, meta = '{}') =>
        `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"open_read","arguments":${args},"_meta":${meta}}}`;
      const tooDeep = (id: number) => ({ jsonrpc: '2.0', id, error: { code: -32600, message: 'The request is nested deeper than 64 levels.' } });
      try {
        send(
          JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'initialize',
            params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'deep-stdio', version: '1' } },
          }),
        );
        await answer(1);
        send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
        send(call(2, `{"deep":${nestedJson(20_000, 'array')}}`));
        send(call(3, '{}', `{"deep":${nestedJson(20_000, 'object')}}`));
        send(call(4, `{"deep":${nestedJson(5000, 'object')}}`, envelope));
        expect(await answer(2)).toEqual(tooDeep(2));
        expect(await answer(3)).toEqual(tooDeep(3));
        expect(await answer(4)).toEqual(tooDeep(4));
        // Over the SDK's 10 MiB read buffer, which closed the whole connection.
        send(call(5, `{"text":"${'a'.repeat(11 * 1024 * 1024)}"}`));
        expect(await answer(null)).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'The message is over 4194304 bytes.' } });
        // Nested as deep as the limit allows (64 with the envelope's three levels), the call runs.
        send(call(6, `{"deep":${nestedJson(61, 'array')}}`));
        expect((await answer(6)).result.content[0].text).toBe('got deep');
        expect(stderr).not.toMatch(/Maximum call stack|\n\s+at .+:\d+:\d+/);
      } finally {
        child.stdin.end();
      }
      expect(await new Promise((resolve) => child.once('exit', resolve))).toBe(0);
      // Only the call that ran is audited.
      const audit = fs.readFileSync(path.join(w.data, 'agent-audit.jsonl'), 'utf8').split('\n');
      expect(audit.filter((l) => l.includes('"tool":"open_read"')).map((l) => JSON.parse(l).outcome)).toEqual(['ok']);
    },
    SPAWN_TIMEOUT_MS,
  );
});

/** An SDK client transport over two in-memory streams (what StdioClientTransport does over a child's pipes). */
class StreamClientTransport implements Transport {
  onmessage?: (m: JSONRPCMessage) => void;
  onclose?: () => void;
  onerror?: (e: Error) => void;
  private readonly buffer = new ReadBuffer();
  constructor(
    private readonly input: Readable,
    private readonly output: Writable,
  ) {}
  start(): Promise<void> {
    this.input.on('data', (chunk: Buffer) => {
      this.buffer.append(chunk);
      for (let m = this.buffer.readMessage(); m; m = this.buffer.readMessage()) this.onmessage?.(m);
    });
    return Promise.resolve();
  }
  send(message: JSONRPCMessage): Promise<void> {
    this.output.write(serializeMessage(message));
    return Promise.resolve();
  }
  close(): Promise<void> {
    this.output.end();
    this.onclose?.();
    return Promise.resolve();
  }
}

describe('McpStdioServer (in-process)', () => {
  let fx: Fixture;
  let server: McpStdioServer;
  let client: Client;
  let opened = false;
  const started = deferred();
  const aborted = deferred();

  let listenersBefore = 0;
  const listeners = () => (fx.kernel.registry as unknown as { events: { listenerCount(e: string): number } }).events.listenerCount('change');

  async function open(capabilityFor?: (kernel: Fixture['kernel']) => Promise<string>) {
    fx = makeKernel();
    opened = true;
    await fx.kernel.loadPacks([{ dir: FIXTURE_PACKS, source: 'extra' }]);
    const spec = (name: string) => ({ name, description: name, parameters: { type: 'object' }, danger: 'safe' as const, effect: 'read' as const });
    fx.kernel.registerPack({
      id: 'stdio-control',
      tools: [
        {
          spec: spec('wait_abort'),
          impl: (_a: Record<string, unknown>, ctx: ToolContext) =>
            new Promise((resolve) => {
              started.resolve();
              ctx.signal.addEventListener('abort', () => (aborted.resolve(), resolve('stopped')));
            }),
        },
        {
          spec: spec('two_steps'),
          impl: (_a: Record<string, unknown>, ctx: ToolContext) => (ctx.progress({ progress: 1, total: 2 }), ctx.progress({ progress: 2, total: 2 }), 'done'),
        },
      ],
    });
    const capability = await capabilityFor?.(fx.kernel);
    listenersBefore = listeners();
    const toServer = new PassThrough();
    const toClient = new PassThrough();
    server = new McpStdioServer(fx.kernel, { stdin: toServer, stdout: toClient, ...(capability ? { capability } : {}) });
    await server.start();
    client = new Client({ name: 'embedded-backend', version: '1' });
    await client.connect(new StreamClientTransport(toClient, toServer));
  }
  afterEach(async () => {
    if (!opened) return;
    opened = false;
    await client.close();
    await server.closed;
    await fx.close();
  });

  it('takes the capability from the environment once and deletes it there', () => {
    const env: NodeJS.ProcessEnv = { [CAPABILITY_ENV]: 'memo-cap-x', OTHER: '1' };
    expect(takeWriteCapabilityFromEnv(env)).toBe('memo-cap-x');
    expect(env).toEqual({ OTHER: '1' });
    expect(takeWriteCapabilityFromEnv(env)).toBeUndefined();
  });

  it('presents its capability on every call: a live one reaches the gate and the write is audited', async () => {
    let live = '';
    let conversation = '';
    await open(async (k) => {
      // What an agent turn does: mint, hand it over in the environment; the server takes it out again.
      conversation = (await k.conversations.create()).id;
      const env: NodeJS.ProcessEnv = { [CAPABILITY_ENV]: (live = await k.capabilities.mint(conversation)) };
      return takeWriteCapabilityFromEnv(env)!;
    });
    fx.prompter.answer('allow-once');
    const r = (await client.callTool({ name: 'note_write', arguments: { line: 'via stdio' } })) as CallToolResult;
    expect(r.isError).toBeFalsy();
    expect(fs.readFileSync(path.join(fx.root, 'notes.txt'), 'utf8')).toBe('via stdio\n');
    expect(fx.prompter.asked).toHaveLength(1);
    expect(fx.kernel.audit.tail({ tool: 'note_write' }).at(-1)).toMatchObject({
      caller: { kind: 'mcp', id: 'embedded-backend', conversationId: conversation },
      decision: 'allow:once',
    });
    fx.kernel.capabilities.revoke(live);
    const after = (await client.callTool({ name: 'note_write', arguments: { line: 'late' } })) as CallToolResult;
    expect(after.structuredContent).toMatchObject({ code: 'PERMISSION_DENIED' });
  });

  it('forwards progress and cancellation over stdio', async () => {
    await open();
    const seen: number[] = [];
    const r = (await client.callTool({ name: 'two_steps', arguments: {} }, undefined, { onprogress: (p) => seen.push(p.progress) })) as CallToolResult;
    expect(text(r)).toBe('done');
    expect(seen).toEqual([1, 2]);
    const ac = new AbortController();
    const call = client.callTool({ name: 'wait_abort', arguments: {} }, undefined, { signal: ac.signal });
    await started.promise;
    ac.abort();
    await expect(call).rejects.toThrow();
    await aborted.promise;
  });

  it('ends the session when stdin ends', async () => {
    await open();
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    expect(listeners()).toBe(listenersBefore + 1);
    await client.close();
    await server.closed;
    expect(listeners()).toBe(listenersBefore);
  });
});

describe('McpStdioServer answering what is not a message', () => {
  let fx: Fixture | undefined;
  afterEach(async () => fx?.close());

  it('answers a line that is not JSON with -32700, a batch, a non-object or a message without a method with -32600 (with its id), and keeps serving', async () => {
    fx = makeKernel();
    const toServer = new PassThrough();
    const toClient = new PassThrough();
    const server = new McpStdioServer(fx.kernel, { stdin: toServer, stdout: toClient });
    await server.start();
    let out = '';
    toClient.setEncoding('utf8').on('data', (d: string) => (out += d));
    const answers = () =>
      out
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { id?: unknown; result?: any; error?: { code: number; message: string } });
    const nth = (n: number) => waitFor(() => answers()[n], { what: () => `answer ${n} (so far: ${out})` });
    const send = (line: string) => toServer.write(`${line}\n`);
    try {
      send('{"jsonrpc":"2.0","id":1,"method":"tools/list",');
      expect(await nth(0)).toEqual({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32700, message: 'Parse error: the line is not JSON. Send one JSON-RPC message per line.' },
      });
      send('[{"jsonrpc":"2.0","id":2,"method":"ping"}]');
      expect(await nth(1)).toMatchObject({ id: null, error: { code: -32600, message: expect.stringMatching(/^Invalid Request: batches .* not supported/) } });
      send('{"id":6}');
      expect(await nth(2)).toMatchObject({ id: 6, error: { code: -32600, message: 'Invalid Request: "jsonrpc" must be "2.0".' } });
      send('{"jsonrpc":"2.0","id":7}');
      expect(await nth(3)).toMatchObject({ id: 7, error: { code: -32600, message: expect.stringMatching(/^Invalid Request: the message has no "method"/) } });
      send('42');
      expect(await nth(4)).toMatchObject({ id: null, error: { code: -32600, message: 'Invalid Request: a message is a JSON object.' } });
      // A blank line is nothing to answer; the connection goes on and serves the next request.
      send('');
      send(
        JSON.stringify({
          jsonrpc: '2.0',
          id: 8,
          method: 'initialize',
          params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
        }),
      );
      expect(await nth(5)).toMatchObject({ id: 8, result: { protocolVersion: '2025-11-25' } });
    } finally {
      await server.close();
    }
  });
});
