/**
 * MCP profiles through the compiled CLI: `memo serve --tools vault` serves the vault pack alone over
 * HTTP and over stdio (a call outside it is UNKNOWN_TOOL), the banner says how many tools each config
 * serves and warns for clients that cap them, and `memo settings profile` stores profiles that
 * `memo serve --profile NAME` serves.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Client as ClientV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { requireFreshBuild } from '../helpers/dist.js';
import { SPAWN_TIMEOUT_MS } from '../helpers/wait.js';
import { BIN, connect, eventually, ServeProcess, serveWorkspace } from './mcp-helpers.js';

beforeAll(requireFreshBuild);

const memo = (w: { root: string; data: string; packs: string }, ...args: string[]) =>
  spawnSync(process.execPath, [BIN, '--packs', w.packs, '--root', w.root, '--data', w.data, ...args], { encoding: 'utf8' });

const text = (r: CallToolResult) => (r.content[0] as { text: string }).text;

describe('memo serve with a profile (child process)', () => {
  it(
    '--tools vault lists only vault_* tools over HTTP and refuses any other as UNKNOWN_TOOL',
    async () => {
      const w = serveWorkspace('memo-profile-');
      const serve = ServeProcess.start(['--packs', w.packs, '--root', w.root, '--data', w.data, 'serve', '--json', '--tools', 'vault']);
      try {
        const info = (await serve.json(0)) as { url: string; token: string; tools: number; profile: string };
        expect(info.profile).toBe('--tools vault');
        const c = await connect(info.url, info.token);
        try {
          const { tools } = await c.client.listTools();
          expect(tools.length).toBe(info.tools);
          expect(tools.length).toBeGreaterThan(10);
          expect(tools.filter((t) => !t.name.startsWith('vault_')).map((t) => t.name)).toEqual([]);
          const echo = (await c.client.callTool({ name: 'echo', arguments: { text: 'hi' } })) as CallToolResult;
          expect(echo.isError).toBe(true);
          expect(text(echo)).toMatch(/^UNKNOWN_TOOL: There is no tool named "echo" in the MCP profile --tools vault/);
        } finally {
          await c.close();
        }
      } finally {
        expect(await serve.stop()).toBe(0);
      }
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    '--stdio --tools vault lists only vault_* tools over stdio, and says so on stderr',
    async () => {
      const w = serveWorkspace('memo-profile-stdio-');
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [BIN, 'serve', '--stdio', '--tools', 'vault', '--packs', w.packs, '--data', w.data, '--root', w.root],
        env: getDefaultEnvironment(),
        stderr: 'pipe',
      });
      let stderr = '';
      transport.stderr?.on('data', (d) => (stderr += d));
      const client = new Client({ name: 'stdio-profile', version: '1.0.0' });
      await client.connect(transport);
      try {
        const { tools } = await client.listTools();
        expect(tools.length).toBeGreaterThan(10);
        expect(tools.filter((t) => !t.name.startsWith('vault_')).map((t) => t.name)).toEqual([]);
        const echo = (await client.callTool({ name: 'echo', arguments: { text: 'hi' } })) as CallToolResult;
        expect(text(echo)).toMatch(/^UNKNOWN_TOOL: /);
        await eventually(() => /serving \d+ tools over MCP stdio \(pid \d+\): --tools vault: \d+ tools \(vault\)/.test(stderr), 'the start-up line');
      } finally {
        await client.close();
      }
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'serves a profile stored with memo settings profile, in tool-search mode, and its stdio config serves the same',
    async () => {
      const w = serveWorkspace('memo-profile-stored-');
      const set = memo(w, 'settings', 'profile', 'set', 'notes', '--tools', 'vault,echo', '--search');
      expect(set.stderr).toBe('');
      expect(set.status).toBe(0);
      expect(set.stdout).toContain('profile notes saved:\n  notes: vault, echo, tool search');
      const listed = memo(w, 'settings', 'profile', 'list', '--json');
      expect(JSON.parse(listed.stdout).stored).toEqual({ notes: { tools: ['vault', 'echo'], search: true } });
      const serve = ServeProcess.start(['--packs', w.packs, '--root', w.root, '--data', w.data, 'serve', '--profile', 'notes']);
      try {
        const banner = await eventually(() => (serve.lines.some((l) => l.startsWith('Stop with Ctrl-C')) ? serve.lines.join('\n') : null), 'the banner');
        expect(banner).toMatch(/Tools served: profile notes: tool search over \d+ tools \(vault, echo\); clients are listed find_tools/);
        // One tool is listed at first: no client caps that.
        expect(banner).not.toContain('warning: Cursor');
        expect(banner).toMatch(/"--stdio",[\s\S]*"--profile",\s*"notes"/);
        const url = /url: +(\S+)/.exec(banner)![1]!;
        const token = /token: +(\S+)/.exec(banner)![1]!;
        const c = await connect(url, token);
        try {
          expect((await c.client.listTools()).tools.map((t) => t.name)).toEqual(['find_tools']);
          const found = (await c.client.callTool({ name: 'find_tools', arguments: { query: 'echo text back' } })) as CallToolResult;
          expect(text(found)).toContain('echo');
          await eventually(async () => (await c.client.listTools()).tools.some((t) => t.name === 'echo'), 'echo in the list');
          expect(text((await c.client.callTool({ name: 'echo', arguments: { text: 'found' } })) as CallToolResult)).toContain('found');
        } finally {
          await c.close();
        }
      } finally {
        expect(await serve.stop()).toBe(0);
      }
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    '--stdio --search serves an SDK v2 client on the stateless revision: find_tools, list_changed, the found tool called',
    async () => {
      const w = serveWorkspace('memo-profile-stdio-v2-');
      const lists: string[][] = [];
      const client = new ClientV2(
        { name: 'stdio-v2', version: '1.0.0' },
        {
          versionNegotiation: { mode: { pin: '2026-07-28' } },
          listChanged: { tools: { debounceMs: 0, onChanged: (err, tools) => void (!err && tools && lists.push(tools.map((t) => t.name))) } },
        },
      );
      await client.connect(
        new StdioV2({
          command: process.execPath,
          args: [BIN, 'serve', '--stdio', '--profile', 'search', '--packs', w.packs, '--data', w.data, '--root', w.root],
        }),
      );
      try {
        expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['find_tools']);
        await client.callTool({ name: 'find_tools', arguments: { query: 'echo text back', limit: 2 } });
        await eventually(() => lists.some((l) => l.includes('echo')), 'list_changed, and a list with echo');
        const r = await client.callTool({ name: 'echo', arguments: { text: 'over v2 stdio' } });
        expect(JSON.stringify(r.content)).toContain('over v2 stdio');
      } finally {
        await client.close();
      }
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'memo serve token add gives a client its own token and profile, which a running memo serve takes at once and refuses once removed',
    async () => {
      const w = serveWorkspace('memo-token-');
      const added = memo(w, 'serve', 'token', 'add', 'cursor', '--profile', 'vault', '--json');
      expect(added.stderr).toBe('');
      const { token } = JSON.parse(added.stdout) as { token: string };
      expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
      // Only the digest is kept.
      expect(JSON.stringify(JSON.parse(memo(w, 'settings', '--json').stdout))).not.toContain(token);
      expect(memo(w, 'serve', 'token', 'add', 'cursor').status).toBe(2);
      expect(memo(w, 'serve', 'token', 'add', 'other', '--profile', 'nope').stderr).toMatch(/There is no MCP profile "nope"/);
      const serve = ServeProcess.start(['--packs', w.packs, '--root', w.root, '--data', w.data, 'serve', '--json']);
      try {
        const info = (await serve.json(0)) as { url: string; token: string };
        const c = await connect(info.url, token, { name: 'cursor-ide' });
        try {
          const { tools } = await c.client.listTools();
          expect(tools.filter((t) => !t.name.startsWith('vault_')).map((t) => t.name)).toEqual([]);
          expect(text((await c.client.callTool({ name: 'echo', arguments: { text: 'x' } })) as CallToolResult)).toMatch(/^UNKNOWN_TOOL: .*profile vault/);
          // A token added while memo serve runs works at once.
          const late = JSON.parse(memo(w, 'serve', 'token', 'add', 'script', '--json').stdout) as { token: string };
          const s = await connect(info.url, late.token, { name: 'script' });
          expect((await s.client.listTools()).tools.some((t) => t.name === 'echo')).toBe(true);
          await s.close();
          expect(JSON.parse(memo(w, 'serve', 'token', 'list', '--json').stdout)).toEqual([
            { name: 'cursor', profile: 'vault', created: expect.any(String) },
            { name: 'script', profile: null, created: expect.any(String) },
          ]);
          const removed = memo(w, 'serve', 'token', 'remove', 'cursor');
          expect(removed.stdout).toBe('Token cursor removed: its next request is refused.\n');
          await expect(c.client.listTools()).rejects.toThrow();
        } finally {
          await c.close();
        }
      } finally {
        expect(await serve.stop()).toBe(0);
      }
      const audit = fs
        .readFileSync(path.join(w.data, 'agent-audit.jsonl'), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
      expect(audit.filter((l) => l.tool === 'echo').map((l) => l.caller)).toEqual([{ kind: 'mcp', id: 'cursor-ide', token: 'cursor' }]);
      expect(audit.filter((l) => l.event === 'admin').map((l) => [l.action, l.target])).toEqual(
        expect.arrayContaining([
          ['token.add', 'cursor'],
          ['token.add', 'script'],
          ['token.remove', 'cursor'],
        ]),
      );
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'warns in the banner when every tool is served and a client caps them, and refuses an unknown profile or two choices (exit 2)',
    async () => {
      const w = serveWorkspace('memo-profile-bad-');
      const unknown = memo(w, 'serve', '--profile', 'nope');
      expect(unknown.status).toBe(2);
      expect(unknown.stderr).toMatch(/There is no MCP profile "nope" \(profiles: all, vault, files, search;/);
      const both = memo(w, 'serve', '--profile', 'vault', '--tools', 'vault');
      expect(both.status).toBe(2);
      expect(both.stderr).toContain('--tools and --profile both choose the tools served: give one');
      const builtin = memo(w, 'settings', 'profile', 'set', 'vault', '--tools', 'echo');
      expect(builtin.status).toBe(2);
      expect(builtin.stderr).toContain('vault is a built-in profile');
      const serve = ServeProcess.start(['--packs', w.packs, '--root', w.root, '--data', w.data, 'serve']);
      try {
        const banner = await eventually(() => (serve.lines.some((l) => l.startsWith('Stop with Ctrl-C')) ? serve.lines.join('\n') : null), 'the banner');
        expect(banner).toMatch(/Tools served: profile all: (\d+) tools \(every enabled tool\)\. Every config below serves these \1\./);
        expect(banner).toMatch(/warning: Cursor warns above about 40 tools and leaves the rest out; this profile lists \d+\./);
      } finally {
        expect(await serve.stop()).toBe(0);
      }
    },
    SPAWN_TIMEOUT_MS,
  );
});
