import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
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

/**
 * JSON text nested `depth` levels: `[[[]]]` or `{"a":{"a":1}}`. Built as text, since JSON.stringify
 * of such a value overflows the stack in the test itself.
 */
export function nestedJson(depth: number, shape: 'array' | 'object'): string {
  return shape === 'array' ? '['.repeat(depth) + ']'.repeat(depth) : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
}

/** What a client uploading past a server's body limit saw. */
export interface Upload {
  /** The answer, once whole (undefined if none came). */
  status?: number;
  headers: Record<string, string>;
  body: string;
  /** The whole answer came before the client sent the rest of its body. */
  answeredMidUpload: boolean;
  /** An error the client's socket saw (EPIPE, ECONNRESET: the server cut the connection), if any. */
  error?: string;
}

/** The HTTP answer at the start of `data`, once it is whole (its Content-Length of body there). */
function wholeAnswer(data: Buffer): Omit<Upload, 'answeredMidUpload' | 'error'> | undefined {
  const end = data.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine, ...lines] = data.subarray(0, end).toString('latin1').split('\r\n');
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  const length = Number(headers['content-length'] ?? 0);
  if (data.length < end + 4 + length) return undefined;
  return { status: Number(statusLine!.split(' ')[1]), headers, body: data.subarray(end + 4, end + 4 + length).toString('utf8') };
}

/**
 * A POST over a raw socket whose body (`before` + `after` bytes, declared whole in Content-Length)
 * goes in two parts: `before` bytes, then a wait for the server's whole answer (up to 10 s), then
 * `after` bytes more and the end. That is a client still uploading when the server refuses its body
 * (curl, or any client that reads its answer only once the upload is done).
 */
export function uploadPastLimit(url: string, headers: Record<string, string>, before: number, after: number): Promise<Upload> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect(Number(u.port), u.hostname);
    let received = Buffer.alloc(0);
    let answer: Omit<Upload, 'answeredMidUpload' | 'error'> | undefined;
    let answeredMidUpload = false;
    let sendingRest = false;
    let error: string | undefined;
    const answered = deferred();
    const gone = deferred();
    socket.on('data', (d: Buffer) => {
      received = Buffer.concat([received, d]);
      if (answer) return;
      answer = wholeAnswer(received);
      if (!answer) return;
      answeredMidUpload = !sendingRest;
      answered.resolve();
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      error ??= err.code ?? err.message;
      answered.resolve();
    });
    socket.on('close', () => {
      answered.resolve();
      gone.resolve();
    });
    const chunk = Buffer.alloc(64 * 1024, 'a');
    const send = async (n: number) => {
      for (let sent = 0; sent < n && !socket.destroyed; sent += chunk.length) {
        if (!socket.write(chunk.subarray(0, Math.min(chunk.length, n - sent)))) {
          await Promise.race([new Promise((r) => socket.once('drain', r)), gone.promise]);
        }
      }
    };
    socket.once('connect', () => {
      void (async () => {
        const head = [`POST ${u.pathname} HTTP/1.1`, `Host: ${u.host}`, 'Content-Type: application/json', `Content-Length: ${before + after}`];
        for (const [k, v] of Object.entries(headers)) head.push(`${k}: ${v}`);
        socket.write(`${head.join('\r\n')}\r\n\r\n`);
        await send(before);
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([answered.promise, new Promise((r) => (timer = setTimeout(r, 10_000)))]);
        clearTimeout(timer);
        sendingRest = true;
        await send(after);
        if (!socket.destroyed) socket.end();
        await gone.promise;
        resolve({ ...(answer ?? { headers: {}, body: '' }), answeredMidUpload, ...(error !== undefined ? { error } : {}) });
      })();
    });
  });
}

/** A sandbox root, a data folder and a packs folder holding a copy of the fixture packs, for a spawned memo serve. */
export interface ServeWorkspace {
  root: string;
  packs: string;
  data: string;
}

/** What one run of bin/memo printed, and its exit code. */
export interface MemoRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** memo's global options naming a serve workspace's folders. */
export function memoGlobals(w: ServeWorkspace): string[] {
  return ['--packs', w.packs, '--root', w.root, '--data', w.data];
}

/** bin/memo on a serve workspace's folders, not blocking this process (the server it talks to is a child too). */
export function memoOn(w: ServeWorkspace, args: string[]): Promise<MemoRun> {
  const child = killWhenDone(spawn(process.execPath, [BIN, ...memoGlobals(w), ...args], { stdio: ['ignore', 'pipe', 'pipe'] }));
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
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
