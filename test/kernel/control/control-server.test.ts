/**
 * The control socket in one process: a real kernel (fixture packs), a real Unix socket in a temp
 * data folder, and the CLI's client module talking to it. The whole-process path (bin/memo against
 * memo serve) is test/e2e/cli-server.test.ts.
 */
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { ControlConnection, reachServer, type ServerExpectation } from '../../../kernel/control/control-client.js';
import { MAX_REQUEST_LINE_BYTES } from '../../../kernel/control/control-protocol.js';
import { ControlServer } from '../../../kernel/control/control-server.js';
import { toolList } from '../../../kernel/control/kernel-views.js';
import { MemoryLogger } from '../../../kernel/logger.js';
import { PackSettings } from '../../../kernel/packs/pack-settings.js';
import type { ToolResult } from '../../../kernel/tools/contract.js';
import { deferred, waitFor } from '../../helpers/wait.js';
import { makeKernel, ScriptedPrompter, tempDir, tool, type Fixture } from '../../helpers/kernel-fixture.js';
import { atTeardown } from '../../helpers/cleanup.js';
import { nestedJson } from '../../mcp/mcp-helpers.js';

const PACKS = ['/nonexistent/packs'];
const SKILLS = ['/nonexistent/skills'];

interface Running {
  fx: Fixture;
  server: ControlServer;
  expect: ServerExpectation;
}

async function running(dataDir?: string): Promise<Running> {
  const fx = makeKernel(dataDir ? { dataDir } : {});
  const server = await ControlServer.start({ kernel: fx.kernel, packFolders: PACKS, skillFolders: SKILLS, logger: fx.logger });
  if (!server) throw new Error(`no control server: ${JSON.stringify(fx.logger.lines)}`);
  atTeardown(() => server.close());
  return { fx, server, expect: { dataDir: fx.dataDir, packs: PACKS, skills: SKILLS, root: fx.root } };
}

async function connect(r: Running): Promise<ControlConnection> {
  const reach = await reachServer(r.expect);
  if (!reach || !('server' in reach)) throw new Error(`not reached: ${JSON.stringify(reach)}`);
  return reach.server;
}

/** One raw exchange: writes `data`, collects the lines until the server closes. */
function raw(socket: string, data: string | Buffer): Promise<Array<Record<string, unknown>>> {
  return new Promise((resolve, reject) => {
    const conn = net.connect(socket);
    let text = '';
    conn.setEncoding('utf8');
    conn.on('data', (d: string) => (text += d));
    conn.on('error', reject);
    conn.on('close', () =>
      resolve(
        text
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as Record<string, unknown>),
      ),
    );
    conn.write(data);
  });
}

/** A tool that runs until it is aborted, and says when it starts and when it was aborted. */
function waitingPack(fx: Fixture) {
  const started = deferred();
  const aborted = deferred();
  fx.kernel.registerPack({
    id: 'waiting',
    version: '1.0.0',
    tools: [
      {
        spec: tool('wait_forever', 'safe'),
        impl: (_args, ctx) =>
          new Promise((resolve) => {
            ctx.progress({ progress: 1, total: 2, message: 'waiting' });
            started.resolve();
            ctx.signal.addEventListener('abort', () => {
              aborted.resolve();
              resolve(null);
            });
          }),
      },
    ],
  });
  return { started: started.promise, aborted: aborted.promise };
}

describe('ControlServer', () => {
  it('creates the socket in the data folder with mode 0600 and leaves no private folder behind', async () => {
    const r = await running();
    expect(r.server.socketPath).toBe(path.join(r.fx.dataDir, 'control.sock'));
    const st = fs.lstatSync(r.server.socketPath);
    expect(st.isSocket()).toBe(true);
    expect(st.mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(r.fx.dataDir).filter((n) => n.startsWith('.c-'))).toEqual([]);
  });

  it('removes a private folder a killed server left between binding and linking', async () => {
    const dataDir = path.join(tempDir('memo-ctl-left-'), 'data');
    fs.mkdirSync(path.join(dataDir, '.c-abc123'), { recursive: true });
    fs.writeFileSync(path.join(dataDir, '.c-abc123', 's'), '');
    await running(dataDir);
    expect(fs.readdirSync(dataDir).filter((n) => n.startsWith('.c-'))).toEqual([]);
  });

  it('answers list requests with the same shapes the CLI prints from a kernel of its own', async () => {
    const r = await running();
    const tools = (await (await connect(r)).request('tools.list')) as Array<{ name: string }>;
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['echo_safe', 'echo_medium']));
    expect(tools).toEqual(toolList(r.fx.kernel));
    expect(await (await connect(r)).request('plugins.info', { id: 'no-such-pack' })).toBeNull();
    expect(await (await connect(r)).request('plugins.list')).toEqual([]);
  });

  it('runs a call through the pipeline as caller cli and audits it', async () => {
    const r = await running();
    const result = (await (
      await connect(r)
    ).request('tools.call', { tool: 'echo_safe', args: { text: 'hi' } }, { prompter: new ScriptedPrompter() })) as ToolResult;
    expect(result).toMatchObject({ ok: true, value: { echoed: { text: 'hi' } } });
    expect(r.fx.kernel.audit.tail({ limit: 1 })[0]).toMatchObject({ tool: 'echo_safe', caller: { kind: 'cli', id: 'memo tools call' }, outcome: 'ok' });
  });

  it('applies a pack disabled a moment ago by another process before it lists or calls tools', async () => {
    const r = await running();
    await r.fx.kernel.loadPacks([{ dir: path.resolve('test/fixtures/packs'), source: 'extra', only: ['echo-tools'] }]);
    expect(((await (await connect(r)).request('tools.list')) as Array<{ name: string }>).map((t) => t.name)).toContain('note_write');
    // As `memo plugins disable echo-tools` does from its own process; the kernel is not watching, so
    // only the control server's re-read of data/packs.json can make the change count.
    new PackSettings(path.join(r.fx.dataDir, 'packs.json'), new MemoryLogger()).setEnabled('echo-tools', false);
    expect(((await (await connect(r)).request('tools.list')) as Array<{ name: string }>).map((t) => t.name)).not.toContain('note_write');
    const result = (await (
      await connect(r)
    ).request('tools.call', { tool: 'note_write', args: { line: 'x' } }, { prompter: new ScriptedPrompter('allow-once') })) as ToolResult;
    expect(result).toMatchObject({ ok: false, error: { code: 'TOOL_DISABLED' } });
  });

  it("puts a socket call's permission prompt to the CLI's prompter, never to the kernel's", async () => {
    const r = await running();
    const cli = new ScriptedPrompter().answer('allow-once');
    const result = (await (await connect(r)).request('tools.call', { tool: 'echo_medium', args: { text: 'x' } }, { prompter: cli })) as ToolResult;
    expect(result.ok).toBe(true);
    expect(cli.asked).toHaveLength(1);
    expect(cli.asked[0]).toMatchObject({ tool: 'echo_medium', args: { text: 'x' }, caller: { kind: 'cli' } });
    expect(r.fx.prompter.asked).toHaveLength(0);
  });

  it("asks another caller's question through the kernel's prompter while a socket call's prompt waits", async () => {
    const r = await running();
    const cli = new ScriptedPrompter('never');
    const pending = (await connect(r)).request('tools.call', { tool: 'echo_medium', args: { text: 'socket' } }, { prompter: cli });
    await waitFor(() => cli.asked.length === 1, { what: 'the CLI to be asked' });
    r.fx.prompter.answer('deny-once');
    const other = await r.fx.kernel.invoke({ tool: 'echo_medium', args: { text: 'host' }, caller: { kind: 'host' } });
    expect(other).toMatchObject({ ok: false, error: { code: 'PERMISSION_DENIED' } });
    expect(r.fx.prompter.asked.map((q) => q.args)).toEqual([{ text: 'host' }]);
    expect(cli.asked).toHaveLength(1);
    await r.server.close();
    expect(await pending).toMatchObject({ ok: false, error: { code: 'CANCELLED' } });
  });

  it("keeps a CLI's allow-session to its own call: the kernel's later calls are asked again", async () => {
    const r = await running();
    const cli = new ScriptedPrompter().answer('allow-session');
    expect(await (await connect(r)).request('tools.call', { tool: 'echo_medium', args: { text: 'a' } }, { prompter: cli })).toMatchObject({ ok: true });
    const later = await r.fx.kernel.invoke({ tool: 'echo_medium', args: { text: 'b' }, caller: { kind: 'host' } });
    expect(later).toMatchObject({ ok: false, error: { code: 'PERMISSION_DENIED' } });
    expect(r.fx.prompter.asked).toHaveLength(1);
  });

  it("denies a call with the CLI's reason when the CLI's prompter refuses", async () => {
    const r = await running();
    const refusing = { ask: () => Promise.reject(new Error('nobody at this terminal')) };
    const result = (await (await connect(r)).request('tools.call', { tool: 'echo_medium', args: {} }, { prompter: refusing })) as ToolResult;
    expect(result).toMatchObject({ ok: false, error: { code: 'PERMISSION_DENIED', message: expect.stringContaining('nobody at this terminal') } });
  });

  it('forwards progress, and cancel from the CLI aborts the running handler (CANCELLED, audited)', async () => {
    const r = await running();
    const w = waitingPack(r.fx);
    const progress: unknown[] = [];
    const conn = await connect(r);
    const pending = conn.request('tools.call', { tool: 'wait_forever', args: {} }, { prompter: new ScriptedPrompter(), onProgress: (u) => progress.push(u) });
    await w.started;
    conn.cancel();
    await w.aborted;
    expect(await pending).toMatchObject({ ok: false, error: { code: 'CANCELLED' } });
    expect(progress).toEqual([{ progress: 1, total: 2, message: 'waiting' }]);
    expect(r.fx.kernel.audit.tail({ limit: 1 })[0]).toMatchObject({ tool: 'wait_forever', caller: { kind: 'cli' }, error: { code: 'CANCELLED' } });
  });

  it('cancels the call of a CLI that disconnects', async () => {
    const r = await running();
    const w = waitingPack(r.fx);
    const conn = await connect(r);
    const pending = conn.request('tools.call', { tool: 'wait_forever', args: {} }, { prompter: new ScriptedPrompter() }).catch((err: Error) => err);
    await w.started;
    conn.close();
    await w.aborted;
    expect(await pending).toMatchObject({ code: 'DISCONNECTED' });
    await waitFor(() => r.fx.kernel.audit.tail({ limit: 1 })[0]?.tool === 'wait_forever', { what: 'the audit line' });
    expect(r.fx.kernel.audit.tail({ limit: 1 })[0]).toMatchObject({ error: { code: 'CANCELLED' } });
  });

  it("withdraws the CLI's question when the call is cancelled while it waits", async () => {
    const r = await running();
    const withdrawn = deferred();
    const cli = {
      ask: (_req: unknown, signal: AbortSignal) =>
        new Promise<never>((_resolve, reject) => {
          conn.cancel();
          signal.addEventListener('abort', () => {
            withdrawn.resolve();
            reject(new Error('withdrawn'));
          });
        }),
    };
    const conn = await connect(r);
    const result = await conn.request('tools.call', { tool: 'echo_medium', args: {} }, { prompter: cli });
    await withdrawn.promise;
    expect(result).toMatchObject({ ok: false, error: { code: 'CANCELLED' } });
  });

  it('answers bad input with an error line and keeps serving', async () => {
    const r = await running();
    const sock = r.server.socketPath;
    const hello = { v: 1, type: 'hello', pid: process.pid };
    expect(await raw(sock, 'not json\n')).toEqual([
      expect.objectContaining(hello),
      { v: 1, type: 'error', code: 'BAD_REQUEST', message: expect.stringContaining('not JSON') },
    ]);
    expect((await raw(sock, '[1,2]\n'))[1]).toMatchObject({ code: 'BAD_REQUEST' });
    expect((await raw(sock, '{"v":2,"op":"tools.list"}\n'))[1]).toMatchObject({ code: 'UNSUPPORTED_VERSION', message: expect.stringContaining('v1') });
    expect((await raw(sock, '{"op":"tools.list"}\n'))[1]).toMatchObject({ code: 'UNSUPPORTED_VERSION' });
    expect((await raw(sock, '{"v":1,"op":"rm -rf"}\n'))[1]).toMatchObject({ code: 'BAD_REQUEST', message: expect.stringContaining('tools.call') });
    expect((await raw(sock, '{"v":1,"op":"plugins.info"}\n'))[1]).toMatchObject({ code: 'BAD_REQUEST' });
    expect((await raw(sock, '{"v":1,"op":"tools.call","tool":7}\n'))[1]).toMatchObject({ code: 'BAD_REQUEST' });
    expect((await raw(sock, Buffer.alloc(MAX_REQUEST_LINE_BYTES + 10, 'a')))[1]).toMatchObject({ code: 'TOO_LARGE' });
    const after = (await raw(sock, '{"v":1,"op":"tools.list"}\n'))[1];
    expect(after).toMatchObject({ type: 'result', value: expect.arrayContaining([expect.objectContaining({ name: 'echo_safe' })]) });
  });

  it('answers a 20,000-level nested request line with TOO_DEEP naming the limit, without running or auditing the call, and keeps serving', async () => {
    const r = await running();
    const sock = r.server.socketPath;
    // A tool that takes any arguments: deep ones would reach the kernel's recursive code.
    r.fx.kernel.registerPack({
      id: 'open',
      version: '1.0.0',
      tools: [{ spec: { ...tool('open_read', 'safe'), parameters: { type: 'object' } }, impl: (args) => `got ${Object.keys(args).join(',')}` }],
    });
    for (const depth of [5000, 20_000])
      for (const shape of ['array', 'object'] as const) {
        const lines = await raw(sock, `{"v":1,"op":"tools.call","tool":"open_read","args":{"deep":${nestedJson(depth, shape)}}}\n`);
        expect([depth, shape, lines[1]]).toEqual([
          depth,
          shape,
          { v: 1, type: 'error', code: 'TOO_DEEP', message: expect.stringMatching(/^the line is nested deeper than 64 levels; /) },
        ]);
      }
    // As deep as the limit allows (64 with the request's two levels), the call runs; one level more is refused.
    const ok = await raw(sock, `{"v":1,"op":"tools.call","tool":"open_read","args":{"deep":${nestedJson(62, 'object')}}}\n`);
    expect(ok[1]).toMatchObject({ type: 'result', value: { ok: true, value: 'got deep' } });
    expect((await raw(sock, `{"v":1,"op":"tools.call","tool":"open_read","args":{"deep":${nestedJson(63, 'object')}}}\n`))[1]).toMatchObject({
      code: 'TOO_DEEP',
    });
    // An edit of an approval is a request line too.
    const edit = await raw(sock, `{"v":1,"op":"approvals.answer","id":"abcd","edit":{"deep":${nestedJson(20_000, 'array')}}}\n`);
    expect(edit[1]).toMatchObject({ code: 'TOO_DEEP' });
    expect(r.fx.kernel.audit.tail({ tool: 'open_read' }).map((e) => e.outcome)).toEqual(['ok']);
    expect(r.fx.logger.lines.map((l) => l.message).join('\n')).not.toMatch(/Maximum call stack|\n\s+at /);
  });

  it('leaves a live socket to the server that has it: a second server on the same data folder starts without one and says why', async () => {
    const first = await running();
    const fx = makeKernel({ dataDir: first.fx.dataDir });
    expect(await ControlServer.start({ kernel: fx.kernel, packFolders: PACKS, skillFolders: SKILLS, logger: fx.logger })).toBeNull();
    expect(fx.logger.lines).toEqual([{ level: 'warn', message: expect.stringContaining(`another memo serve (pid ${process.pid}) already answers`) }]);
    expect(await (await connect(first)).request('tools.list')).toEqual(expect.any(Array));
  });

  it('removes a stale socket (nothing listening) before listening', async () => {
    const dataDir = path.join(tempDir('memo-ctl-data-'), 'data');
    fs.mkdirSync(dataDir);
    // A socket file whose server is gone, as a SIGKILLed memo serve leaves it.
    const dead = net.createServer();
    const inner = path.join(dataDir, 'x.sock');
    await new Promise<void>((resolve) => dead.listen(inner, resolve));
    fs.linkSync(inner, path.join(dataDir, 'control.sock'));
    await new Promise((resolve) => dead.close(resolve));
    const stale = await reachServer({ dataDir, packs: PACKS, skills: SKILLS });
    expect(stale).toEqual({ skipped: expect.stringContaining('is stale: nothing listens on it') });
    const r = await running(dataDir);
    expect(r.fx.logger.lines[0]?.message).toContain('removing the stale control socket');
    expect(await (await connect(r)).request('plugins.list')).toEqual([]);
  });

  it('puts the socket in a private temp folder named by a pointer file when the data folder path is too long, and protects that folder', async () => {
    const dataDir = path.join(tempDir('memo-ctl-long-'), 'a'.repeat(60), 'b'.repeat(60), 'data');
    const r = await running(dataDir);
    const dir = path.dirname(r.server.socketPath);
    expect(path.dirname(dir)).toBe(os.tmpdir());
    expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
    expect(fs.statSync(r.server.socketPath).mode & 0o777).toBe(0o600);
    expect(JSON.parse(fs.readFileSync(path.join(dataDir, 'control-socket.json'), 'utf8'))).toMatchObject({ v: 1, socket: r.server.socketPath });
    expect(r.fx.kernel.state.owner(r.server.socketPath, 'read')).toMatchObject({ label: 'the control socket folder' });
    expect(await (await connect(r)).request('plugins.list')).toEqual([]);
    await r.server.close();
    expect(fs.existsSync(dir)).toBe(false);
    expect(fs.existsSync(path.join(dataDir, 'control-socket.json'))).toBe(false);
    expect(r.fx.kernel.state.owner(r.server.socketPath, 'read')).toBeNull();
  });

  it('removes the socket at close, and a CLI then finds no server', async () => {
    const r = await running();
    await r.server.close();
    expect(fs.existsSync(r.server.socketPath)).toBe(false);
    expect(await reachServer(r.expect)).toBeNull();
  });
});

describe('reachServer', () => {
  it('says nothing when the data folder has no socket', async () => {
    expect(await reachServer({ dataDir: tempDir('memo-ctl-none-'), packs: PACKS, skills: SKILLS })).toBeNull();
  });

  it('skips a server whose root, packs or skills differ from the command, saying which', async () => {
    const r = await running();
    const other = tempDir('memo-ctl-root-');
    expect(await reachServer({ ...r.expect, root: other })).toEqual({
      skipped: expect.stringMatching(new RegExp(`has the sandbox root .*, and this command ${other}`)),
    });
    expect(await reachServer({ ...r.expect, packs: ['/elsewhere'] })).toEqual({ skipped: expect.stringContaining('loads packs from /nonexistent/packs') });
    expect(await reachServer({ ...r.expect, skills: [] })).toEqual({ skipped: expect.stringContaining('loads skills from') });
    const { root: _root, ...anyRoot } = { ...r.expect, root: other };
    expect(await reachServer(anyRoot)).toMatchObject({ server: { pid: process.pid } });
  });

  it('skips a socket that answers with something other than the control protocol', async () => {
    const dataDir = tempDir('memo-ctl-foreign-');
    const foreign = net.createServer((c) => c.end('HTTP/1.1 400 Bad Request\r\n\r\n'));
    await new Promise<void>((resolve) => foreign.listen(path.join(dataDir, 'control.sock'), resolve));
    atTeardown(() => new Promise((resolve) => foreign.close(resolve)));
    expect(await reachServer({ dataDir, packs: PACKS, skills: SKILLS })).toEqual({
      skipped: expect.stringContaining('does not speak the Memo control protocol'),
    });
  });
});
