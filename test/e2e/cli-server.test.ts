/**
 * The CLI and a running `memo serve` on the same data folder, as whole processes: bin/memo commands
 * go through the server's control socket (and say so), or say plainly why they did not and use a
 * kernel of their own. Each proof of the path is a difference only the server's kernel makes: a
 * tool that reports its process id, the server's audit trail, cancellation reaching the server.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { killWhenDone } from '../helpers/cleanup.js';
import { requireFreshBuild } from '../helpers/dist.js';
import { tempDir } from '../helpers/kernel-fixture.js';
import { processesWithArg } from '../helpers/processes.js';
import { waitFor } from '../helpers/wait.js';
import { BIN, connect, ServeProcess, serveWorkspace, writePack, type ServeWorkspace as Workspace } from '../mcp/mcp-helpers.js';

beforeAll(requireFreshBuild);

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  json: any;
}

/** A workspace with its own packs folder: the fixture packs and `whoami`, a tool that returns the pid of the process it runs in. */
function workspace(): Workspace {
  const w = serveWorkspace('memo-cli-server-');
  writePack(w.packs, 'whoami', [{ name: 'whoami' }], 'export const tools = { whoami: () => ({ pid: process.pid }) };\n');
  return w;
}

function globals(w: Workspace): string[] {
  return ['--packs', w.packs, '--root', w.root, '--data', w.data];
}

/** bin/memo as a child process that does not block this one (the server it talks to may be a child too). */
function start(args: string[]): { child: ChildProcessWithoutNullStreams; done: Promise<Run> } {
  const child = killWhenDone(spawn(process.execPath, [BIN, ...args], { stdio: ['pipe', 'pipe', 'pipe'] }));
  child.stdin.end();
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const done = new Promise<Run>((resolve) =>
    child.on('close', (code) => {
      let json: any;
      try {
        json = JSON.parse(stdout);
      } catch {
        json = undefined;
      }
      resolve({ code, stdout, stderr, json });
    }),
  );
  return { child, done };
}

function memo(w: Workspace, args: string[]): Promise<Run> {
  return start([...globals(w), ...args]).done;
}

function audit(w: Workspace): any[] {
  const text = fs.existsSync(path.join(w.data, 'agent-audit.jsonl')) ? fs.readFileSync(path.join(w.data, 'agent-audit.jsonl'), 'utf8') : '';
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

async function serve(w: Workspace, extra: string[] = []): Promise<{ serve: ServeProcess; pid: number }> {
  const s = ServeProcess.start([...globals(w), 'serve', '--json', ...extra]);
  const info = (await s.json(0)) as { pid: number };
  return { serve: s, pid: info.pid };
}

describe('the CLI with memo serve running on its data folder', () => {
  let w: Workspace;
  let server: ServeProcess;
  let pid: number;
  const via = () => `memo: via the running server (pid ${pid})\n`;

  beforeAll(async () => {
    w = workspace();
    ({ serve: server, pid } = await serve(w));
  });
  afterAll(async () => {
    expect(await server.stop()).toBe(0);
    expect(fs.existsSync(path.join(w.data, 'control.sock'))).toBe(false);
  });

  it('creates the control socket in the data folder with mode 0600', () => {
    const st = fs.lstatSync(path.join(w.data, 'control.sock'));
    expect(st.isSocket()).toBe(true);
    expect(st.mode & 0o777).toBe(0o600);
  });

  it('runs tools call in the server process, says so in one stderr line, and the server audits it as a cli call', async () => {
    const r = await memo(w, ['tools', 'call', 'whoami', '--args', '{}', '--json']);
    expect(r.code).toBe(0);
    expect(r.json).toEqual({ ok: true, result: { pid } });
    expect(r.stderr).toBe(via());
    const line = audit(w).find((e) => e.tool === 'whoami');
    expect(line).toMatchObject({ caller: { kind: 'cli', id: 'memo tools call' }, outcome: 'ok' });
  });

  it('uses a kernel of its own with --no-server, and says nothing about the server', async () => {
    const run = start([...globals(w), 'tools', 'call', 'whoami', '--args', '{"n":1}', '--json', '--no-server']);
    const r = await run.done;
    expect(r.json).toEqual({ ok: true, result: { pid: run.child.pid } });
    expect(r.stderr).toBe('');
  });

  it('shows in plugins list --json a pack the server hot-loaded after it started', async () => {
    writePack(w.packs, 'late-pack', [{ name: 'late_tool' }], 'export const tools = { late_tool: () => "late" };\n');
    const r = await waitFor(
      async () => {
        const run = await memo(w, ['plugins', 'list', '--json']);
        return (run.json as any[] | undefined)?.some((p) => p.id === 'late-pack') ? run : undefined;
      },
      { what: 'late-pack in plugins list' },
    );
    expect(r.code).toBe(0);
    expect(r.stderr).toBe(via());
    expect(r.json.find((p: any) => p.id === 'late-pack')).toMatchObject({ status: 'loaded', tools: 1, source: 'extra' });
  });

  it('applies plugins disable and enable in the server before the command returns: an MCP call right after sees each, and the command says so', async () => {
    const info = await server.json(0);
    const mcp = await connect(info.url, info.token, { name: 'toggle-client' });
    try {
      const off = await memo(w, ['plugins', 'disable', 'whoami']);
      expect([off.code, off.stdout]).toEqual([0, `Disabled whoami. The running server (pid ${pid}) applied it.\n`]);
      const refused = (await mcp.client.callTool({ name: 'whoami', arguments: {} })) as { isError?: boolean; content: Array<{ text: string }> };
      expect([refused.isError, refused.content[0]!.text]).toEqual([true, expect.stringContaining('TOOL_DISABLED')]);
      const on = await memo(w, ['plugins', 'enable', 'whoami']);
      expect([on.code, on.stdout]).toEqual([0, `Enabled whoami. The running server (pid ${pid}) applied it.\n`]);
      const ran = (await mcp.client.callTool({ name: 'whoami', arguments: {} })) as {
        isError?: boolean;
        structuredContent?: unknown;
        content: Array<{ text: string }>;
      };
      expect(ran.isError).toBeFalsy();
      expect(ran.content[0]!.text).toContain(String(pid));
    } finally {
      await mcp.close();
    }
  });

  it('prints the same tools list and plugins info JSON through the server as with a kernel of its own', async () => {
    for (const args of [
      ['tools', 'list', '--json'],
      ['plugins', 'info', 'echo-tools', '--json'],
    ]) {
      const [through, own] = await Promise.all([memo(w, args), memo(w, [...args, '--no-server'])]);
      expect(through.stderr).toBe(via());
      expect(through.code).toBe(0);
      expect(through.stdout).toBe(own.stdout);
    }
    const missing = await memo(w, ['plugins', 'info', 'nope']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(`${via()}memo: There is no pack "nope".\n`);
  });

  it("answers the server's permission prompt with the CLI's --approve, and is denied without it when the CLI has no terminal", async () => {
    const allowed = await memo(w, ['tools', 'call', 'note_write', '--args', '{"line":"approved"}', '--approve', 'allow-once', '--json']);
    expect(allowed.stderr).toBe(via());
    expect(allowed.json).toEqual({ ok: true, result: { written: 9 } });
    const denied = await memo(w, ['tools', 'call', 'note_write', '--args', '{"line":"unapproved"}', '--json']);
    expect(denied.code).toBe(1);
    expect(denied.json.error).toEqual({ code: 'PERMISSION_DENIED', message: expect.stringContaining('answer in advance with --approve') });
    expect(fs.readFileSync(path.join(w.root, 'notes.txt'), 'utf8')).toBe('approved\n');
    expect(
      audit(w)
        .filter((e) => e.tool === 'note_write')
        .map((e) => e.decision),
    ).toEqual(['allow:once', 'deny:unanswered']);
  });

  it('cancels the running call on the server when the CLI gets Ctrl-C: CANCELLED printed and audited, the command stopped', async () => {
    const sleeper = 'sleep\u000030.25';
    const run = start([...globals(w), 'tools', 'call', 'run_command', '--args', '{"command":"sleep 30.25"}', '--approve', 'allow-once', '--json']);
    await waitFor(() => processesWithArg(sleeper).length > 0, { what: 'the sleep to start on the server' });
    run.child.kill('SIGINT');
    const r = await run.done;
    expect(r.code).toBe(1);
    expect(r.json).toEqual({ ok: false, error: { code: 'CANCELLED', message: expect.any(String) } });
    await waitFor(() => processesWithArg(sleeper).length === 0, { what: 'the sleep to end' });
    expect(audit(w).find((e) => e.args?.command === 'sleep 30.25')).toMatchObject({ caller: { kind: 'cli' }, error: { code: 'CANCELLED' } });
  });

  it('cancels the call of a CLI that is killed mid-call', async () => {
    const sleeper = 'sleep\u000030.5';
    const run = start([...globals(w), 'tools', 'call', 'run_command', '--args', '{"command":"sleep 30.5"}', '--approve', 'allow-once', '--json']);
    await waitFor(() => processesWithArg(sleeper).length > 0, { what: 'the sleep to start on the server' });
    run.child.kill('SIGKILL');
    await run.done;
    await waitFor(() => processesWithArg(sleeper).length === 0, { what: 'the sleep to end' });
    const line = await waitFor(() => audit(w).find((e) => e.args?.command === 'sleep 30.5'), { what: 'the audit line' });
    expect(line).toMatchObject({ caller: { kind: 'cli' }, error: { code: 'CANCELLED' } });
  });

  it('answers bad protocol input with an error line and keeps serving', async () => {
    const lines = await new Promise<any[]>((resolve, reject) => {
      const conn = net.connect(path.join(w.data, 'control.sock'));
      let text = '';
      conn.setEncoding('utf8').on('data', (d: string) => (text += d));
      conn.on('error', reject);
      conn.on('close', () =>
        resolve(
          text
            .split('\n')
            .filter(Boolean)
            .map((l) => JSON.parse(l)),
        ),
      );
      conn.write('{"v":1,"op":\n');
    });
    expect(lines).toEqual([expect.objectContaining({ v: 1, type: 'hello', pid }), { v: 1, type: 'error', code: 'BAD_REQUEST', message: expect.any(String) }]);
    const after = await memo(w, ['tools', 'call', 'echo', '--args', '{"text":"still serving"}', '--json']);
    expect(after.stderr).toBe(via());
    expect(after.json).toEqual({ ok: true, result: { text: 'still serving', summary: 'echoed 13 chars' } });
  });

  it("runs a call whose --root is not the server's on a kernel of its own, and says why", async () => {
    const other = tempDir('memo-cli-server-root-');
    const run = start(['--packs', w.packs, '--root', other, '--data', w.data, 'tools', 'call', 'whoami', '--args', '{"n":2}', '--json']);
    const r = await run.done;
    expect(r.json).toEqual({ ok: true, result: { pid: run.child.pid } });
    expect(r.stderr).toBe(
      `memo: not via the running server: the running server (pid ${pid}) has the sandbox root ${fs.realpathSync(w.root)}, and this command ${fs.realpathSync(other)} (pass --root ${fs.realpathSync(w.root)}, or --no-server); using a kernel of its own\n`,
    );
  });
});

describe('the CLI when memo serve is gone or serves over stdio', () => {
  it('reports a stale socket left by a SIGKILLed server, falls back to a kernel of its own, and the next serve removes it', async () => {
    const w = workspace();
    const first = await serve(w);
    first.serve.child.kill('SIGKILL');
    await first.serve.exited();
    const socket = path.join(w.data, 'control.sock');
    expect(fs.lstatSync(socket).isSocket()).toBe(true);

    const run = start([...globals(w), 'tools', 'call', 'whoami', '--args', '{}', '--json']);
    const r = await run.done;
    expect(r.json).toEqual({ ok: true, result: { pid: run.child.pid } });
    expect(r.stderr).toBe(
      `memo: not via the running server: ${socket} is stale: nothing listens on it (memo serve stopped without removing it; the next memo serve removes it); using a kernel of its own\n`,
    );

    const second = await serve(w);
    try {
      expect(second.serve.stderr).toContain(`removing the stale control socket ${socket}`);
      const again = await memo(w, ['tools', 'call', 'whoami', '--args', '{"n":3}', '--json']);
      expect(again.json).toEqual({ ok: true, result: { pid: second.pid } });
    } finally {
      expect(await second.serve.stop()).toBe(0);
    }
  });

  it('serves the control socket under memo serve --stdio too, and removes it when stdin closes', async () => {
    const w = workspace();
    const s = ServeProcess.start([...globals(w), 'serve', '--stdio']);
    await waitFor(() => s.stderr.includes('serving') || s.child.exitCode !== null, { what: 'the stdio server to start' });
    expect(s.stderr).toContain(`reach this server through ${path.join(w.data, 'control.sock')}`);
    const r = await memo(w, ['tools', 'call', 'whoami', '--args', '{}', '--json']);
    expect(r.json).toEqual({ ok: true, result: { pid: s.child.pid } });
    expect(r.stderr).toBe(`memo: via the running server (pid ${s.child.pid})\n`);
    s.child.stdin.end();
    expect(await s.exited()).toBe(0);
    expect(fs.existsSync(path.join(w.data, 'control.sock'))).toBe(false);
    expect(s.lines).toEqual([]);
  });
});
