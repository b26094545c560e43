import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { killWhenDone } from '../helpers/cleanup.js';
import { tempDir } from '../helpers/kernel-fixture.js';
import { deferred, WAIT_DEADLINE_MS, waitFor } from '../helpers/wait.js';

export const BIN = path.resolve('bin/memo');
export const FIXTURE_PACKS = path.resolve('test/fixtures/packs');

export { deferred };

/** Polls until `check` returns truthy; fails after a deadline for a busy machine, naming `what`. */
export function eventually<T>(check: () => T | Promise<T>, what = 'condition'): Promise<NonNullable<T>> {
  return waitFor(check, { what });
}

export interface Connected {
  client: Client;
  transport: StreamableHTTPClientTransport;
  /** Resolves once the server has accepted the client's notification stream (GET). */
  notificationsReady: Promise<void>;
  tools: Tool[][];
  close(): Promise<void>;
}

/** Connects the SDK client the way an outside party would: Streamable HTTP with a bearer header. */
export async function connect(url: string, token: string, opts: { name?: string; headers?: Record<string, string> } = {}): Promise<Connected> {
  const ready = deferred();
  const tools: Tool[][] = [];
  const client = new Client(
    { name: opts.name ?? 'test-client', version: '1.0.0' },
    { listChanged: { tools: { debounceMs: 0, onChanged: (err, list) => !err && list && tools.push(list) } } },
  );
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}`, ...opts.headers } },
    fetch: async (input, init) => {
      const res = await fetch(input, init);
      if (init?.method === 'GET' && res.ok) ready.resolve();
      return res;
    },
  });
  await client.connect(transport);
  return {
    client,
    transport,
    notificationsReady: ready.promise,
    tools,
    async close() {
      await transport.terminateSession().catch(() => {});
      await client.close().catch(() => {});
    },
  };
}

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One plain HTTP request (node:http, so Host can be set freely). */
export function raw(url: string, opts: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: opts.method ?? 'GET', headers: opts.headers ?? {} }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    if (opts.body !== undefined) req.write(opts.body);
    req.end();
  });
}

export const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});

/** A raw `initialize` POST, with whatever Authorization (or none) the test wants. */
export function rawInitialize(url: string, headers: Record<string, string> = {}): Promise<RawResponse> {
  return raw(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
    body: INITIALIZE,
  });
}

/** A sandbox root, a data folder and a packs folder holding a copy of the fixture packs, for a spawned memo serve. */
export interface ServeWorkspace {
  root: string;
  packs: string;
  data: string;
}

export function serveWorkspace(prefix: string): ServeWorkspace {
  const base = tempDir(prefix);
  const w = { root: path.join(base, 'root'), packs: path.join(base, 'packs'), data: path.join(base, 'data') };
  fs.mkdirSync(w.root);
  fs.cpSync(FIXTURE_PACKS, w.packs, { recursive: true });
  return w;
}

export function writePack(base: string, id: string, tools: Array<{ name: string; effect?: string; danger?: string }>, code: string): void {
  const dir = path.join(base, id);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(
    path.join(dir, 'plugin.json'),
    JSON.stringify({
      id,
      name: id,
      version: '1.0.0',
      description: `${id} pack`,
      main: 'index.js',
      tools: tools.map((t) => ({
        name: t.name,
        description: `${t.name} tool`,
        parameters: { type: 'object' },
        danger: t.danger ?? 'safe',
        effect: t.effect ?? 'read',
      })),
    }),
  );
  fs.writeFileSync(path.join(dir, 'index.js'), code);
}

/** `memo serve` as a child process; collects stdout lines and stderr. */
export class ServeProcess {
  readonly lines: string[] = [];
  stderr = '';
  private constructor(readonly child: ChildProcessWithoutNullStreams) {
    let buf = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d: string) => {
      buf += d;
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        this.lines.push(buf.slice(0, nl));
        buf = buf.slice(nl + 1);
      }
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (d: string) => (this.stderr += d));
  }

  static start(args: string[]): ServeProcess {
    return new ServeProcess(killWhenDone(spawn(process.execPath, [BIN, ...args], { stdio: ['pipe', 'pipe', 'pipe'] })));
  }

  /** The n-th stdout line (0-based), parsed as JSON. */
  async json(n: number, timeoutMs = WAIT_DEADLINE_MS): Promise<any> {
    const line = await waitFor(
      () => this.lines[n] ?? (this.child.exitCode !== null ? Promise.reject(new Error(`memo serve exited: ${this.stderr}`)) : undefined),
      { timeoutMs, what: `stdout line ${n}` },
    );
    return JSON.parse(line);
  }

  exited(): Promise<number | null> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return Promise.resolve(this.child.exitCode);
    return new Promise((resolve) => this.child.once('exit', (code) => resolve(code)));
  }

  async stop(): Promise<number | null> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return this.child.exitCode;
    const done = this.exited();
    this.child.kill('SIGTERM');
    // A last resort for a server that ignores SIGTERM (the test then fails on the exit code).
    const timer = setTimeout(() => this.child.kill('SIGKILL'), WAIT_DEADLINE_MS);
    const code = await done;
    clearTimeout(timer);
    return code;
  }
}
