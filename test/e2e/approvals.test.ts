/**
 * Approvals as whole processes: `memo serve` boots with no face. While nobody watches its approvals,
 * an MCP client's call to a medium tool is refused at once with how to be asked; while
 * `memo approvals list --watch` runs, the call waits in the approval broker, and `memo approvals
 * list|answer` (bin/memo, through the control socket) list it and answer it; the MCP call then
 * returns. Also `memo permissions` (scopes and expiry, revoke, always-allow) on the same data folder.
 */
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { killWhenDone } from '../helpers/cleanup.js';
import { requireFreshBuild } from '../helpers/dist.js';
import { waitFor, WAIT_DEADLINE_MS } from '../helpers/wait.js';
import { BIN, connect, ServeProcess, serveWorkspace, type Connected, type ServeWorkspace as Workspace } from '../mcp/mcp-helpers.js';

beforeAll(requireFreshBuild);

/** The fixture packs and `asker`: two medium read tools an MCP client may call (so only the gate stands between), one of them editable. */
function workspace(): Workspace {
  const w = serveWorkspace('memo-approvals-');
  const dir = path.join(w.packs, 'asker');
  fs.mkdirSync(dir);
  const parameters = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'], additionalProperties: false };
  fs.writeFileSync(
    path.join(dir, 'plugin.json'),
    JSON.stringify({
      id: 'asker',
      name: 'asker',
      version: '1.0.0',
      description: 'medium read tools',
      main: 'index.js',
      tools: [
        { name: 'peek', description: 'peeks at a name', parameters, danger: 'medium', effect: 'read' },
        { name: 'peek_edit', description: 'peeks at a name; the person may edit it', parameters, danger: 'medium', effect: 'read', editable: true },
      ],
    }),
  );
  fs.writeFileSync(path.join(dir, 'index.js'), 'export const tools = { peek: (a) => ({ peeked: a.name }), peek_edit: (a) => ({ peeked: a.name }) };\n');
  return w;
}

function globals(w: Workspace): string[] {
  return ['--packs', w.packs, '--root', w.root, '--data', w.data];
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  json: any;
}

/** bin/memo, not blocking this process (the server it talks to is a child too). */
function memo(w: Workspace, args: string[]): Promise<Run> {
  const child = killWhenDone(spawn(process.execPath, [BIN, ...globals(w), ...args], { stdio: ['ignore', 'pipe', 'pipe'] }));
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  return new Promise((resolve) =>
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
}

function audit(w: Workspace): any[] {
  return fs
    .readFileSync(path.join(w.data, 'agent-audit.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

/** The request for `tool` once `memo approvals list --json` shows it. */
function listed(w: Workspace, tool: string): Promise<any> {
  return waitFor(
    async () => {
      const r = await memo(w, ['approvals', 'list', '--json']);
      if (r.code !== 0) throw new Error(`memo approvals list failed: ${r.stderr}`);
      return (r.json as any[]).find((a) => a.tool === tool);
    },
    { what: `${tool} in memo approvals list` },
  );
}

describe('memo approvals with memo serve and an MCP client', () => {
  let w: Workspace;
  let serve: ServeProcess;
  let mcp: Connected;

  beforeAll(async () => {
    w = workspace();
    serve = ServeProcess.start([...globals(w), 'serve', '--json']);
    const info = (await serve.json(0)) as { url: string; token: string };
    mcp = await connect(info.url, info.token, { name: 'approvals-e2e' });
  });
  afterAll(async () => {
    await mcp?.close();
    expect(await serve.stop()).toBe(0);
  });

  const call = (name: string, args: Record<string, unknown>) =>
    mcp.client.callTool({ name, arguments: args }, undefined, { timeout: WAIT_DEADLINE_MS }) as Promise<CallToolResult>;

  it('refuses a call that needs approval at once while nobody watches, saying how to be asked, and lists nothing', async () => {
    const r = await call('peek', { name: 'unwatched' });
    expect(r.isError).toBe(true);
    expect(r.structuredContent).toMatchObject({ code: 'PERMISSION_DENIED' });
    expect((r.structuredContent as { message: string }).message).toMatch(
      /^peek needs a person's approval, and nobody is watching this server's approvals, so it was refused at once\. To be asked, keep `memo approvals list --watch` running/,
    );
    expect((await memo(w, ['approvals', 'list', '--json'])).json).toEqual([]);
    expect(audit(w).filter((e) => e.tool === 'peek')).toEqual([expect.objectContaining({ args: { name: 'unwatched' }, decision: 'deny:unattended' })]);
  });

  it('runs a tool allowed ahead of time with memo permissions allow for an MCP caller while nobody watches, and asks again once revoked', async () => {
    const allowed = await memo(w, ['permissions', 'allow', 'peek']);
    expect([allowed.code, allowed.stdout.split('\n')[0]]).toEqual([
      0,
      expect.stringMatching(/^Allowed peek \(asker, medium\) for every caller, until revoked\./),
    ]);
    const r = await call('peek', { name: 'ahead' });
    expect(r.isError).toBeFalsy();
    expect(
      audit(w)
        .filter((e) => e.tool === 'peek')
        .at(-1),
    ).toMatchObject({ args: { name: 'ahead' }, decision: 'allow:stored-forever' });
    expect((await memo(w, ['permissions', 'revoke', 'peek'])).code).toBe(0);
    const again = await call('peek', { name: 'revoked' });
    expect(again.isError).toBe(true);
    expect((again.structuredContent as { message: string }).message).toContain('Or allow it ahead of time: `memo permissions allow peek`.');
  });

  describe('while memo approvals list --watch runs', () => {
    let watcher: ChildProcessWithoutNullStreams;
    beforeAll(async () => {
      watcher = killWhenDone(spawn(process.execPath, [BIN, ...globals(w), 'approvals', 'list', '--watch', '--json'], { stdio: ['pipe', 'pipe', 'pipe'] }));
      let out = '';
      watcher.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
      await waitFor(() => out.includes('\n'), { what: 'the watcher to start' });
    });
    afterAll(() => {
      watcher.kill('SIGINT');
    });

    it('shows an MCP call to a medium tool in memo approvals list; answered allow-once, the call returns ok and the audit says allow:once', async () => {
      const result = call('peek', { name: 'first' });
      const request = await listed(w, 'peek');
      expect(request).toMatchObject({
        plugin: 'asker',
        danger: 'medium',
        effect: 'read',
        caller: { kind: 'mcp', id: 'approvals-e2e' },
        args: { name: 'first' },
        answers: ['allow-once', 'allow-session', 'allow-minutes:N', 'allow-forever', 'deny-once', 'deny-forever'],
        editable: false,
        answerable: true,
      });
      expect(Date.parse(request.expiresAt) - Date.parse(request.askedAt)).toBe(30 * 60_000);

      const text = await memo(w, ['approvals', 'list']);
      expect(text.stdout).toContain(`${request.id}  peek (asker)  medium, read\n  caller:    mcp "approvals-e2e"\n`);
      expect(text.stdout).toContain(`  answer:    memo approvals answer ${request.id} allow-once\n`);

      const answered = await memo(w, ['approvals', 'answer', request.id, 'allow-once']);
      expect([answered.code, answered.stdout, answered.stderr]).toEqual([0, `Answered peek (${request.id}): allow-once.\n`, '']);
      const r = await result;
      expect(r.isError).toBeFalsy();
      expect(r.structuredContent).toEqual({ peeked: 'first' });
      expect(audit(w).filter((e) => e.tool === 'peek' && e.args?.name === 'first')).toEqual([
        expect.objectContaining({ caller: { kind: 'mcp', id: 'approvals-e2e' }, decision: 'allow:once', outcome: 'ok' }),
      ]);
      expect((await memo(w, ['approvals', 'list', '--json'])).json).toEqual([]);
    });

    it('denies the MCP call when answered deny-once', async () => {
      const result = call('peek', { name: 'second' });
      const request = await listed(w, 'peek');
      expect((await memo(w, ['approvals', 'answer', request.id, 'deny-once'])).code).toBe(0);
      const r = await result;
      expect(r.isError).toBe(true);
      expect(r.structuredContent).toMatchObject({ code: 'PERMISSION_DENIED' });
      expect(
        audit(w)
          .filter((e) => e.tool === 'peek')
          .at(-1),
      ).toMatchObject({ decision: 'deny:once' });
    });

    it('runs the edited arguments after --edit and allow-once, and the audit records that cli edited them', async () => {
      const result = call('peek_edit', { name: 'draft' });
      const request = await listed(w, 'peek_edit');
      expect(request.editable).toBe(true);
      const edited = await memo(w, ['approvals', 'answer', request.id, '--edit', '{"name":"final"}']);
      expect(edited.code).toBe(0);
      const again = await waitFor(
        async () => ((await memo(w, ['approvals', 'list', '--json'])).json as any[]).find((a) => a.id === request.id && a.revision === 2),
        { what: 'revision 2 of the request' },
      );
      expect(again).toMatchObject({ args: { name: 'final' }, editedBy: 'cli' });
      expect((await memo(w, ['approvals', 'answer', request.id, 'allow-once'])).code).toBe(0);
      expect((await result).structuredContent).toEqual({ peeked: 'final' });
      expect(
        audit(w)
          .filter((e) => e.tool === 'peek_edit')
          .at(-1),
      ).toMatchObject({ decision: 'allow:once', args: { name: 'final' }, editedBy: 'cli' });
    });

    it('stores allow-minutes as a timed decision that memo permissions lists with its expiry, and revoke removes it', async () => {
      const result = call('peek', { name: 'timed' });
      const request = await listed(w, 'peek');
      expect((await memo(w, ['approvals', 'answer', request.id.slice(0, 8), 'allow-minutes:15'])).code).toBe(0);
      expect((await result).structuredContent).toEqual({ peeked: 'timed' });
      const stored = (await memo(w, ['permissions', 'list', '--json'])).json as any[];
      expect(stored).toEqual([expect.objectContaining({ tool: 'peek', decision: 'allow', scope: 'until', plugin: 'asker' })]);
      expect(Date.parse(stored[0].expiresAt) - Date.parse(stored[0].at)).toBe(15 * 60_000);
      const text = await memo(w, ['permissions', 'list']);
      expect(text.stdout).toMatch(/^peek +allow +until \d{4}-\d\d-\d\dT\d\d:\d\dZ \(in 1?\d min\) +asker /m);
      // The stored decision answers the next call: nothing waits.
      expect((await call('peek', { name: 'covered' })).structuredContent).toEqual({ peeked: 'covered' });
      const revoked = await memo(w, ['permissions', 'revoke', 'peek']);
      expect(revoked.stdout).toMatch(/^Revoked the stored decision for peek \(allow until .*\)\.\n$/);
      expect((await memo(w, ['permissions', 'list', '--json'])).json).toEqual([]);
    });

    it('prints the pending requests and then each change with list --watch --json, and stops on Ctrl-C with exit 0', async () => {
      const watcher: ChildProcessWithoutNullStreams = killWhenDone(
        spawn(process.execPath, [BIN, ...globals(w), 'approvals', 'list', '--watch', '--json'], { stdio: ['pipe', 'pipe', 'pipe'] }),
      );
      const lines: any[] = [];
      let buf = '';
      watcher.stdout.setEncoding('utf8').on('data', (d: string) => {
        buf += d;
        for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
          lines.push(JSON.parse(buf.slice(0, nl)));
          buf = buf.slice(nl + 1);
        }
      });
      const exited = new Promise<number | null>((resolve) => watcher.on('close', (code) => resolve(code)));
      await waitFor(() => lines.length >= 1, { what: 'the first watch line' });
      expect(lines[0]).toEqual({ event: 'pending', approvals: [] });
      const result = call('peek', { name: 'watched' });
      const asked = await waitFor(() => lines.find((l) => l.event === 'asked'), { what: 'the asked line' });
      expect(asked.approval).toMatchObject({ tool: 'peek', args: { name: 'watched' } });
      expect((await memo(w, ['approvals', 'answer', asked.approval.id, 'deny-once'])).code).toBe(0);
      const settled = await waitFor(() => lines.find((l) => l.event === 'settled'), { what: 'the settled line' });
      expect(settled).toEqual({ event: 'settled', id: asked.approval.id, outcome: 'answered', by: 'cli', reply: 'deny-once' });
      await result;
      watcher.kill('SIGINT');
      expect(await exited).toBe(0);
    });
  });

  it('exits 1 saying so for an unknown id, and 2 for an answer that is not one', async () => {
    const unknown = await memo(w, ['approvals', 'answer', 'no-such-request', 'allow-once']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe(
      'memo: no request "no-such-request" is waiting for an answer (it was answered, expired or cancelled, or never existed; see memo approvals list)\n',
    );
    const bad = await memo(w, ['approvals', 'answer', 'whatever', 'allow-sometimes']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('the answer must be one of allow-once');
  });
});

describe('memo approvals and memo permissions without a server', () => {
  it('says no memo serve runs on the data folder and exits 1', async () => {
    const w = workspace();
    for (const args of [
      ['approvals', 'list', '--json'],
      ['approvals', 'answer', 'abcd', 'allow-once'],
    ]) {
      const r = await memo(w, args);
      expect([r.code, r.stdout]).toEqual([1, '']);
      expect(r.stderr).toBe(
        `memo: no memo serve runs on the data folder ${w.data}; permission requests wait only in a running server (start one with memo serve, or pass its --data)\n`,
      );
    }
  });

  it('allows and denies a tool ahead of time, for minutes or until revoked; refuses a delete, says a safe tool needs nothing, and names an unknown one', async () => {
    const w = workspace();
    const timed = await memo(w, ['permissions', 'allow', 'peek', '--minutes', '15']);
    expect(timed.code).toBe(0);
    expect(timed.stdout).toMatch(/^Allowed peek \(asker, medium\) for every caller, until \d{4}-\d\d-\d\dT\d\d:\d\dZ \(in 15 min\)\./);
    expect((await memo(w, ['permissions', 'list', '--json'])).json).toEqual([expect.objectContaining({ tool: 'peek', decision: 'allow', scope: 'until' })]);
    const denied = await memo(w, ['permissions', 'deny', 'peek_edit']);
    expect([denied.code, denied.stdout]).toEqual([0, 'Denied peek_edit (asker) for every caller until revoked.\nUndo: memo permissions revoke peek_edit\n']);
    const del = await memo(w, ['permissions', 'allow', 'delete_file']);
    expect([del.code, del.stderr]).toEqual([2, expect.stringContaining('delete_file cannot be allowed ahead of time: it deletes, so it is asked every time')]);
    const safe = await memo(w, ['permissions', 'allow', 'read_file']);
    expect([safe.code, safe.stdout]).toEqual([0, 'read_file is safe: it runs without asking already. Nothing was stored.\n']);
    const unknown = await memo(w, ['permissions', 'allow', 'no_such_tool']);
    expect([unknown.code, unknown.stderr]).toEqual([1, expect.stringContaining('there is no tool named no_such_tool')]);
    expect(((await memo(w, ['permissions', 'list', '--json'])).json as any[]).map((d) => [d.tool, d.decision])).toEqual([
      ['peek', 'allow'],
      ['peek_edit', 'deny'],
    ]);
  });

  it('turns always-allow on (saying what it covers and never covers), reports its status, and turns it off', () => {
    const w = workspace();
    const run = (...args: string[]) => spawnSync(process.execPath, [BIN, '--data', w.data, 'permissions', ...args], { encoding: 'utf8' });
    expect(run('always-allow', 'status').stdout).toBe('Always allow is off: medium and dangerous tools are asked unless a stored decision answers.\n');
    const on = run('always-allow', 'on');
    expect(on.status).toBe(0);
    expect(on.stdout).toMatch(/^Always allow is now ON\.\nIt covers: calls made by the kernel's own agent turns and by routines/);
    for (const never of ['deletes (effect: delete)', 'commands the judge cannot vouch for', 'outside callers: MCP clients', 'a stored deny'])
      expect(on.stdout).toContain(never);
    expect(JSON.parse(fs.readFileSync(path.join(w.data, 'permissions.json'), 'utf8'))).toMatchObject({ version: 2, alwaysAllow: true });
    expect(run('list').stdout).toBe(
      'Always allow is ON for agent turns and routines (memo permissions always-allow status).\nNo stored permission decisions.\n',
    );
    expect(run('always-allow', 'status').stdout).toMatch(/^Always allow is ON\./);
    expect(run('always-allow', 'off').stdout).toMatch(/^Always allow is now off/);
    expect(JSON.parse(fs.readFileSync(path.join(w.data, 'permissions.json'), 'utf8'))).toMatchObject({ alwaysAllow: false });
    const bad = run('always-allow', 'maybe');
    expect([bad.status, bad.stderr]).toEqual([2, 'memo: always-allow takes on, off or status\n']);
  });

  it('lists each scope with its expiry, leaves out expired decisions, and revoke removes every scope of a tool', () => {
    const w = workspace();
    fs.mkdirSync(w.data, { recursive: true });
    const now = Date.now();
    const later = new Date(now + 3 * 86_400_000).toISOString();
    fs.writeFileSync(
      path.join(w.data, 'permissions.json'),
      JSON.stringify({
        version: 2,
        alwaysAllow: false,
        decisions: [
          { tool: 'write_file', decision: 'allow', plugin: 'fs-tools', at: '2026-01-01T00:00:00.000Z', scope: 'forever' },
          { tool: 'write_file', decision: 'allow', plugin: 'fs-tools', at: '2026-01-01T00:00:00.000Z', scope: 'conversation', conversationId: 'conv-7' },
          { tool: 'edit_file', decision: 'allow', plugin: 'fs-tools', at: '2026-01-01T00:00:00.000Z', scope: 'until', expiresAt: later },
          { tool: 'read_env', decision: 'allow', plugin: 'shell', at: '2026-01-01T00:00:00.000Z', scope: 'until', expiresAt: '2020-01-01T00:00:00.000Z' },
        ],
      }),
    );
    const run = (...args: string[]) => spawnSync(process.execPath, [BIN, '--data', w.data, 'permissions', ...args], { encoding: 'utf8' });
    const json = JSON.parse(run('list', '--json').stdout) as any[];
    expect(json.map((d) => [d.tool, d.scope])).toEqual([
      ['edit_file', 'until'],
      ['write_file', 'conversation'],
      ['write_file', 'forever'],
    ]);
    const text = run('list').stdout;
    expect(text).toContain(`until ${later.slice(0, 16)}Z (in 3 days)`);
    expect(text).toMatch(/^write_file +allow +conversation conv-7 /m);
    expect(text).toMatch(/^write_file +allow +forever /m);
    expect(text).not.toContain('read_env');
    const revoked = run('revoke', 'write_file');
    expect([revoked.status, revoked.stdout]).toEqual([0, 'Revoked the stored decisions for write_file (allow conversation conv-7; allow forever).\n']);
    expect((JSON.parse(run('list', '--json').stdout) as any[]).map((d) => d.tool)).toEqual(['edit_file']);
    const none = run('revoke', 'write_file');
    expect([none.status, none.stderr]).toEqual([1, 'memo: there is no stored decision for write_file.\n']);
  });
});
