import * as fs from 'node:fs';
import * as path from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/client/stdio';
import { requireFreshBuild } from '../helpers/dist.js';
import { SPAWN_TIMEOUT_MS, waitFor } from '../helpers/wait.js';
import { BIN, ServeProcess, serveWorkspace } from './mcp-helpers.js';

beforeAll(requireFreshBuild);

/**
 * `memo serve` (the built CLI, a child process) reached by the SDK v2 client pinned to the
 * stateless revision 2026-07-28: no initialize, no session, `server/discover` at connect and the
 * `_meta` envelope on every request. Over HTTP with the token the banner prints, and over stdio
 * with `memo serve --stdio` as the client's server command (no token).
 */

const MODERN = '2026-07-28';
const NOTE = 'Written for the stateless revision.\nSecond line.\n';

function pinned(name: string): Client {
  return new Client({ name, version: '1.0.0' }, { versionNegotiation: { mode: { pin: MODERN } } });
}

function workspace() {
  const w = serveWorkspace('memo-serve-rev-');
  fs.writeFileSync(path.join(w.root, 'note.md'), NOTE);
  return w;
}

/** Lists the tools and reads note.md through read_file, as an outside client would. */
async function listAndRead(client: Client): Promise<{ revision: unknown; server: unknown; tools: string[]; content: unknown; isError: unknown }> {
  const { tools } = await client.listTools();
  const r = await client.callTool({ name: 'read_file', arguments: { path: 'note.md' } });
  return {
    revision: client.getNegotiatedProtocolVersion(),
    server: client.getServerVersion()?.name,
    tools: tools.map((t) => t.name),
    content: r.structuredContent,
    isError: r.isError,
  };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('memo serve (child process) on the 2026-07-28 stateless revision, SDK v2 client', () => {
  it(
    'lists the tools and reads a workspace file over HTTP with the token from the banner, opening no session',
    async () => {
      const w = workspace();
      const serve = ServeProcess.start(['--packs', w.packs, '--root', w.root, '--data', w.data, 'serve', '--json']);
      const info: { url: string; token: string } = await serve.json(0);
      const client = pinned('serve-http-test');
      const transport = new StreamableHTTPClientTransport(new URL(info.url), { requestInit: { headers: { Authorization: `Bearer ${info.token}` } } });
      try {
        await client.connect(transport);
        const seen = await listAndRead(client);
        expect([seen.revision, seen.server]).toEqual([MODERN, 'memo']);
        expect(seen.tools).toEqual(expect.arrayContaining(['read_file', 'echo']));
        expect(seen.isError).toBeFalsy();
        expect(seen.content).toMatchObject({ content: NOTE });
        expect(transport.sessionId).toBeUndefined();
      } finally {
        await client.close().catch(() => {});
        expect(await serve.stop()).toBe(0);
      }
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'lists the tools and reads a workspace file over stdio with memo serve --stdio as the server command, and the child exits when the client closes',
    async () => {
      const w = workspace();
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [BIN, '--packs', w.packs, '--root', w.root, '--data', w.data, 'serve', '--stdio'],
        env: getDefaultEnvironment(),
        stderr: 'pipe',
      });
      let stderr = '';
      transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
      const client = pinned('serve-stdio-test');
      let pid: number | null = null;
      try {
        await client.connect(transport);
        pid = transport.pid;
        const seen = await listAndRead(client);
        expect([seen.revision, seen.server]).toEqual([MODERN, 'memo']);
        expect(seen.tools).toEqual(expect.arrayContaining(['read_file', 'echo']));
        expect(seen.isError).toBeFalsy();
        expect(seen.content).toMatchObject({ content: NOTE });
      } catch (err) {
        throw new Error(`${(err as Error).message}\nmemo serve --stdio stderr:\n${stderr}`, { cause: err });
      } finally {
        await client.close().catch(() => {});
      }
      expect(pid).not.toBeNull();
      await waitFor(() => !alive(pid!), { what: `memo serve --stdio (pid ${pid}) to exit after the client closed` });
    },
    SPAWN_TIMEOUT_MS,
  );
});
