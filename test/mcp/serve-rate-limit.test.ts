import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { requireFreshBuild } from '../helpers/dist.js';
import { tempDir } from '../helpers/kernel-fixture.js';
import { WAIT_DEADLINE_MS } from '../helpers/wait.js';
import { BIN, connect, FIXTURE_PACKS, ServeProcess } from './mcp-helpers.js';

beforeAll(requireFreshBuild);

function workspace() {
  const base = tempDir('memo-serve-rl-');
  const root = path.join(base, 'root');
  fs.mkdirSync(root);
  return { root, data: path.join(base, 'data') };
}

function text(r: CallToolResult): string {
  return (r.content[0] as { text: string }).text;
}

async function serveWith(limit: string): Promise<{ serve: ServeProcess; info: { url: string; token: string } }> {
  const w = workspace();
  const serve = ServeProcess.start(['--packs', FIXTURE_PACKS, '--root', w.root, '--data', w.data, 'serve', '--json', '--rate-limit', limit]);
  return { serve, info: await serve.json(0) };
}

describe('memo serve --rate-limit', () => {
  it('gives each MCP session its own N calls per minute and names the session in the refusal', async () => {
    const { serve, info } = await serveWith('2');
    const a = await connect(info.url, info.token);
    const b = await connect(info.url, info.token);
    try {
      for (const n of ['1', '2']) expect(((await a.client.callTool({ name: 'echo', arguments: { text: n } })) as CallToolResult).isError).toBeFalsy();
      const third = (await a.client.callTool({ name: 'echo', arguments: { text: '3' } })) as CallToolResult;
      expect(third.isError).toBe(true);
      expect(text(third)).toMatch(/^RATE_LIMITED: .*this MCP session's 2 calls per minute.*refills in \d+ s/);
      // The other session reads the same thing a moment later: its own budget, its own cooldown.
      expect(((await b.client.callTool({ name: 'echo', arguments: { text: '1' } })) as CallToolResult).isError).toBeFalsy();
    } finally {
      await a.close();
      await b.close();
      expect(await serve.stop()).toBe(0);
    }
  });

  it('turns every limit off with off, and says so in one warning line', async () => {
    const { serve, info } = await serveWith('off');
    const c = await connect(info.url, info.token);
    try {
      for (let i = 0; i < 40; i++) expect(((await c.client.callTool({ name: 'echo', arguments: { text: 'same' } })) as CallToolResult).isError).toBeFalsy();
      expect(serve.stderr.split('\n').filter((l) => l.includes('rate limits are off'))).toHaveLength(1);
    } finally {
      await c.close();
      expect(await serve.stop()).toBe(0);
    }
  });

  it('refuses a value that is neither off nor a whole number of at least 1 (exit 2)', () => {
    const w = workspace();
    for (const value of ['0', 'abc', '1.5', 'OFF']) {
      const r = spawnSync(process.execPath, [BIN, '--root', w.root, '--data', w.data, 'serve', '--rate-limit', value], {
        encoding: 'utf8',
        timeout: WAIT_DEADLINE_MS,
      });
      expect([r.status, r.stderr]).toEqual([2, expect.stringContaining('--rate-limit must be off or a whole number')]);
    }
  });
});

describe('memo settings rate-limit', () => {
  function memo(w: { root: string; data: string }, args: string[]) {
    return spawnSync(process.execPath, [BIN, '--root', w.root, '--data', w.data, ...args], { encoding: 'utf8', timeout: WAIT_DEADLINE_MS });
  }

  it('stores the limit memo serve uses when --rate-limit is not given, and --rate-limit overrides it for one run', async () => {
    const w = workspace();
    expect(memo(w, ['settings']).stdout).toBe(
      'rate limit: default (30 calls per minute for each caller, 300 machine-wide)\nsandbox: refuse (where the OS sandbox cannot start, commands are refused; the default)\n' +
        'MCP profiles (memo serve --profile NAME):\n  all: every enabled tool (built in)\n  vault: vault (built in)\n  files: fs-tools (built in)\n' +
        '  search: every enabled tool, tool search (find_tools, then what the client found) (built in)\n',
    );
    const set = memo(w, ['settings', 'rate-limit', '1']);
    expect([set.status, set.stdout]).toEqual([
      0,
      'rate limit: 1 calls per minute for each caller, 300 machine-wide; memo serve applies it at its next start.\n',
    ]);
    expect(JSON.parse(memo(w, ['settings', '--json']).stdout)).toEqual({ rateLimit: 1 });
    expect(fs.statSync(path.join(w.data, 'settings.json')).mode & 0o777).toBe(0o600);

    let serve = ServeProcess.start(['--packs', FIXTURE_PACKS, '--root', w.root, '--data', w.data, 'serve', '--json']);
    let c = await connect((await serve.json(0)).url, (await serve.json(0)).token);
    try {
      expect(((await c.client.callTool({ name: 'echo', arguments: { text: '1' } })) as CallToolResult).isError).toBeFalsy();
      expect(text((await c.client.callTool({ name: 'echo', arguments: { text: '2' } })) as CallToolResult)).toMatch(/^RATE_LIMITED: .*1 calls per minute/);
    } finally {
      await c.close();
      expect(await serve.stop()).toBe(0);
    }

    serve = ServeProcess.start(['--packs', FIXTURE_PACKS, '--root', w.root, '--data', w.data, 'serve', '--json', '--rate-limit', '5']);
    c = await connect((await serve.json(0)).url, (await serve.json(0)).token);
    try {
      for (const n of ['1', '2', '3']) expect(((await c.client.callTool({ name: 'echo', arguments: { text: n } })) as CallToolResult).isError).toBeFalsy();
    } finally {
      await c.close();
      expect(await serve.stop()).toBe(0);
    }
  });

  it('turns every limit off with off (memo serve warns, naming the setting) and back to the default with default', async () => {
    const w = workspace();
    const off = memo(w, ['settings', 'rate-limit', 'off']);
    expect([off.status, off.stderr]).toEqual([0, expect.stringContaining('warning: with the rate limit off')]);
    const serve = ServeProcess.start(['--packs', FIXTURE_PACKS, '--root', w.root, '--data', w.data, 'serve', '--json']);
    const info = await serve.json(0);
    const c = await connect(info.url, info.token);
    try {
      for (let i = 0; i < 35; i++) expect(((await c.client.callTool({ name: 'echo', arguments: { text: `${i}` } })) as CallToolResult).isError).toBeFalsy();
      expect(serve.stderr).toContain('rate limits are off (memo settings rate-limit off)');
    } finally {
      await c.close();
      expect(await serve.stop()).toBe(0);
    }
    expect(memo(w, ['settings', 'rate-limit', 'default']).status).toBe(0);
    expect(JSON.parse(memo(w, ['settings', '--json']).stdout)).toEqual({});
  });

  it('refuses a bad value with exit 2 and leaves the stored setting as it was', () => {
    const w = workspace();
    expect(memo(w, ['settings', 'rate-limit', '7']).status).toBe(0);
    for (const value of ['0', 'abc', '-3']) {
      const r = memo(w, ['settings', 'rate-limit', value]);
      expect([r.status, r.stderr]).toEqual([2, expect.stringContaining('the rate limit must be off or a whole number')]);
    }
    expect(JSON.parse(memo(w, ['settings', '--json']).stdout)).toEqual({ rateLimit: 7 });
  });
});
