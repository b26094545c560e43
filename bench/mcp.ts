import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpClientV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioClientV2, getDefaultEnvironment } from '@modelcontextprotocol/client/stdio';
import { NodeStreamableHTTPServerTransport, toNodeHandler, type NodeIncomingMessageLike } from '@modelcontextprotocol/node';
import { Server as ServerV2, createMcpHandler, isInitializeRequest as isInitializeV2 } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as HttpClientV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server as ServerV1 } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport as HttpServerV1 } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema, isInitializeRequest as isInitializeV1 } from '@modelcontextprotocol/sdk/types.js';
import { createKernel, type Kernel, type Logger, type PackDefinition } from '../kernel/index.js';
import { McpHttpEndpoint, McpStdioServer } from '../kernel/mcp/index.js';
import { reserveStdoutForProtocol } from '../kernel/mcp/mcp-stdio.js';
import { printTable, summarise, type Row } from './stats.js';

/**
 * MCP exposure against the bare SDK server of the same line, same run:
 * 1. `tools/call` of a read echo tool through Memo (the kernel pipeline with its audit line per call,
 *    rate limits off) vs a bare SDK server with one echo tool, in both protocol revisions:
 *    - 2025-11-25 sessions over Streamable HTTP: the Memo endpoint vs a low-level v2 `Server` on a
 *      sessionful `NodeStreamableHTTPServerTransport` (one per session, as the SDK examples do),
 *      both driven by the v2 client (legacy mode). The v1 line (v1 `Server` + v1 transport vs the
 *      Memo endpoint, both driven by the v1 client) runs beside it: what an old client sees.
 *    - 2026-07-28 stateless over Streamable HTTP: the Memo endpoint vs a bare `createMcpHandler`
 *      server, both driven by the v2 client pinned to 2026-07-28 (no session, `_meta` on every request).
 *    - stdio, each revision: `McpStdioServer` vs the v2 `serveStdio` (child processes).
 *    At concurrency 1 and 16: calls/s, p50/p99, and the ratio Memo/bare. HTTP concurrency 16 = 16
 *    clients (sessions, or stateless clients with distinct names) calling in a loop; stdio
 *    concurrency 16 = 16 calls in flight on the one pipe. Each group runs its sides in turn, four
 *    passes in mirrored order (a b c, c b a, a b c, c b a); each side keeps its best run.
 * 2. Launch to the first `tools/list` answer: `memo serve` (child process, built-in packs, file
 *    watching) vs a bare server script, each revision, over HTTP and stdio; median of 5. Over stdio
 *    twice: standalone (no memo serve on its data folder: it boots a kernel) and joining a memo
 *    serve that runs on its data folder (the desktop config beside a running server), each as a
 *    ratio to the bare script (target: within 1.3x).
 *
 * The Memo stdio side of (1) runs `McpStdioServer` in a child booted by this file (the CLI keeps its
 * default limits, and 30 calls/min would be the whole measurement).
 */

const HERE = path.dirname(fileURLToPath(import.meta.url));
/** dist/bench/mcp.js → the repository's bin/memo. */
const BIN = path.resolve(HERE, '../../bin/memo');
const SELF = fileURLToPath(import.meta.url);
const MODERN = '2026-07-28';
/** Runs per side in each group (see rounds). */
const PASSES = Number(process.env.BENCH_MCP_PASSES ?? 4);
const ECHO_SCHEMA = { type: 'object', properties: { text: { type: 'string' } }, required: ['text'], additionalProperties: false } as const;
const ECHO_TOOL = { name: 'echo', description: 'Returns its text.', inputSchema: { ...ECHO_SCHEMA, required: ['text'] } };
const quiet: Logger = { info() {}, warn() {}, error() {} };

type Era = 'sessions' | 'stateless';

function echoPack(): PackDefinition {
  return {
    id: 'bench',
    tools: [
      { spec: { name: 'echo', description: 'Returns its text.', parameters: { ...ECHO_SCHEMA }, danger: 'safe', effect: 'read' }, impl: ({ text }) => text },
    ],
  };
}

function memoKernel(dir: string): Kernel {
  const root = path.join(dir, 'root');
  fs.mkdirSync(root, { recursive: true });
  return createKernel({ root, dataDir: path.join(dir, 'data'), rateLimits: { maxCalls: 0, duplicateCooldownMs: 0 }, logger: quiet, packs: [echoPack()] });
}

function echoResult(text: unknown) {
  return { content: [{ type: 'text' as const, text: typeof text === 'string' ? text : JSON.stringify(text) }] };
}

/** The v2 baseline: the low-level `Server` with one echo tool, nothing else. Serves either revision. */
function bareServerV2(): ServerV2 {
  const server = new ServerV2({ name: 'bare', version: '2.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler('tools/list', () => ({ tools: [ECHO_TOOL] }));
  server.setRequestHandler('tools/call', (req) => echoResult(req.params.arguments?.text ?? ''));
  return server;
}

/** The v1 baseline: the v1 low-level `Server` with the same tool. */
function bareServerV1(): ServerV1 {
  const server = new ServerV1({ name: 'bare', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [ECHO_TOOL] }));
  server.setRequestHandler(CallToolRequestSchema, (req) => echoResult(req.params.arguments?.text ?? ''));
  return server;
}

interface Listening {
  url: string;
  close(): Promise<void>;
}

async function listen(handle: (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void>, onClose: () => Promise<unknown>): Promise<Listening> {
  const httpServer = http.createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  await new Promise<void>((r) => httpServer.listen(0, '127.0.0.1', r));
  const { port } = httpServer.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    async close() {
      await onClose();
      httpServer.closeAllConnections();
      await new Promise<void>((r) => httpServer.close(() => r()));
    },
  };
}

async function readJson(req: http.IncomingMessage): Promise<unknown> {
  let body = '';
  for await (const chunk of req) body += chunk;
  return JSON.parse(body) as unknown;
}

/** The 2025-11-25 baseline, v2 line: one bare `Server` + sessionful `NodeStreamableHTTPServerTransport` per session. */
function bareSessionsV2(): Promise<Listening> {
  const sessions = new Map<string, NodeStreamableHTTPServerTransport>();
  return listen(
    async (req, res) => {
      const sid = req.headers['mcp-session-id'];
      if (typeof sid === 'string') {
        const t = sessions.get(sid);
        if (!t) return void res.writeHead(404).end();
        return t.handleRequest(req, res);
      }
      const parsed = await readJson(req);
      if (!isInitializeV2(parsed)) return void res.writeHead(400).end();
      const transport = new NodeStreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => void sessions.set(id, transport),
      });
      transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
      await bareServerV2().connect(transport);
      await transport.handleRequest(req, res, parsed);
    },
    () => Promise.allSettled([...sessions.values()].map((t) => t.close())),
  );
}

/** The 2025-11-25 baseline, v1 line: the same, with the v1 classes. */
function bareSessionsV1(): Promise<Listening> {
  const sessions = new Map<string, HttpServerV1>();
  return listen(
    async (req, res) => {
      const sid = req.headers['mcp-session-id'];
      if (typeof sid === 'string') {
        const t = sessions.get(sid);
        if (!t) return void res.writeHead(404).end();
        return t.handleRequest(req, res);
      }
      const parsed = await readJson(req);
      if (!isInitializeV1(parsed)) return void res.writeHead(400).end();
      const transport = new HttpServerV1({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => void sessions.set(id, transport),
      });
      transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
      await bareServerV1().connect(transport);
      await transport.handleRequest(req, res, parsed);
    },
    () => Promise.allSettled([...sessions.values()].map((t) => t.close())),
  );
}

/** The 2026-07-28 baseline: `createMcpHandler` with one fresh bare `Server` per request, on node:http. */
function bareStateless(): Promise<Listening> {
  const handler = createMcpHandler(() => bareServerV2());
  const node = toNodeHandler(handler);
  return listen(
    (req, res) => node(req as NodeIncomingMessageLike, res),
    () => handler.close(),
  );
}

/**
 * The SDK clients hand every fetch the transport's one long-lived AbortSignal, and Node's fetch
 * drops its abort listener only when the request is garbage-collected: thousands of calls on one
 * client trip MaxListenersExceededWarning. A per-request signal, linked to the transport's until
 * the response arrives, keeps the benchmark output clean (same client code for both sides).
 */
const linkedFetch: typeof fetch = async (input, init) => {
  const outer = init?.signal;
  if (!outer) return fetch(input, init);
  const inner = new AbortController();
  const forward = () => inner.abort(outer.reason);
  outer.addEventListener('abort', forward, { once: true });
  try {
    return await fetch(input, { ...init, signal: inner.signal });
  } finally {
    outer.removeEventListener('abort', forward);
  }
};

/** One connected client of either SDK line, reduced to what the benchmark does with it. */
interface BenchClient {
  listTools(): Promise<number>;
  echo(text: string): Promise<void>;
  close(): Promise<void>;
}

function checked(r: { isError?: boolean | undefined; content?: unknown }): void {
  if (r.isError) throw new Error(`bench call failed: ${JSON.stringify(r.content)}`);
}

function headersFor(token?: string): RequestInit | undefined {
  return token ? { headers: { Authorization: `Bearer ${token}` } } : undefined;
}

function v2Options(era: Era) {
  return era === 'stateless' ? { versionNegotiation: { mode: { pin: MODERN } } } : {};
}

function wrapV2(client: ClientV2, close: () => Promise<void>): BenchClient {
  return {
    listTools: async () => (await client.listTools()).tools.length,
    echo: async (text) => checked(await client.callTool({ name: 'echo', arguments: { text } })),
    close,
  };
}

/** The v2 client over HTTP: a 2025-11-25 session (legacy mode) or a stateless 2026-07-28 client under `name`. */
async function httpClientV2(url: string, era: Era, token?: string, name = 'bench'): Promise<BenchClient> {
  const client = new ClientV2({ name, version: '2.4.0' }, v2Options(era));
  const requestInit = headersFor(token);
  const transport = new HttpClientV2(new URL(url), { fetch: linkedFetch, ...(requestInit ? { requestInit } : {}) });
  await client.connect(transport);
  return wrapV2(client, async () => {
    if (era === 'sessions') await transport.terminateSession().catch(() => {});
    await client.close();
  });
}

/** The v1 client over HTTP: always a 2025-11-25 session. */
async function httpClientV1(url: string, token?: string): Promise<BenchClient> {
  const client = new ClientV1({ name: 'bench', version: '1.32.2' });
  const requestInit = headersFor(token);
  const transport = new HttpClientV1(new URL(url), { fetch: linkedFetch, ...(requestInit ? { requestInit } : {}) });
  await client.connect(transport);
  return {
    listTools: async () => (await client.listTools()).tools.length,
    echo: async (text) => checked((await client.callTool({ name: 'echo', arguments: { text } })) as { isError?: boolean; content: unknown }),
    async close() {
      await transport.terminateSession().catch(() => {});
      await client.close();
    },
  };
}

/** The v2 client over stdio, spawning `node <args>`. Pinned to 2026-07-28, the SDK first probes on a sibling process. */
async function stdioClientV2(args: string[], era: Era): Promise<BenchClient> {
  const client = new ClientV2({ name: 'bench', version: '2.4.0' }, v2Options(era));
  // BENCH_MCP_CPU_PROF=<dir>: each server child writes a V8 CPU profile there when it exits.
  const prof = process.env.BENCH_MCP_CPU_PROF;
  const argv = prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`, ...args] : args;
  // BENCH_MCP_BREAKDOWN=1: the children's breakdown lines (see timeRequests) come through on stderr.
  const breakdown = process.env.BENCH_MCP_BREAKDOWN;
  const env = { ...getDefaultEnvironment(), ...(breakdown ? { BENCH_MCP_BREAKDOWN: breakdown } : {}) };
  await client.connect(new StdioClientV2({ command: process.execPath, args: argv, env, stderr: breakdown ? 'inherit' : 'ignore' }));
  return wrapV2(client, () => client.close());
}

interface Side {
  name: string;
  clients: BenchClient[];
  workers: number;
}

/** `calls` echo calls spread over `workers` loops (each on clients[w % clients.length]); per-call latency in us. */
async function drive(side: Side, calls: number): Promise<Row> {
  const { clients, workers } = side;
  const warm = Math.min(200, calls);
  // clients is never empty: every side has at least one.
  for (let i = 0; i < warm; i++) await clients[i % clients.length]!.echo(`w${i}`);
  const samples = new Float64Array(calls);
  let next = 0;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      const client = clients[w % clients.length]!;
      for (let i = next++; i < calls; i = next++) {
        const t0 = process.hrtime.bigint();
        await client.echo(`c${i}`);
        samples[i] = Number(process.hrtime.bigint() - t0) / 1000;
      }
    }),
  );
  return summarise(side.name, samples, Number(process.hrtime.bigint() - start) / 1e6);
}

/**
 * Runs every side in turn, `passes` times, each pass in the reverse order of the one before
 * (a b c, c b a, a b c, ...); each side keeps its best run. On a shared 2-core machine the other
 * load comes in bursts: the best of several short runs is what each side can do, and mirrored
 * order spreads any drift evenly.
 */
async function rounds(sides: Side[], calls: number, passes: number): Promise<Row[]> {
  const best: Array<Row | undefined> = sides.map(() => undefined);
  for (let p = 0; p < passes; p++) {
    const order = sides.map((_, i) => i);
    if (p % 2 === 1) order.reverse();
    for (const i of order) {
      const row = await drive(sides[i]!, calls);
      if (!best[i] || row.callsPerSec > best[i].callsPerSec) best[i] = row;
    }
  }
  return best.map((r) => r!);
}

/** A bare side and the Memo side it is compared with (indexes into the group's rows). */
interface Comparison {
  label: string;
  bare: number;
  memo: number;
}

interface GroupResult {
  title: string;
  concurrency: number;
  rows: Row[];
  comparisons: Comparison[];
}

interface RatioLine {
  group: string;
  concurrency: number;
  label: string;
  ratio: number;
  bare: Row;
  memo: Row;
}

async function group(title: string, concurrency: number, sides: Side[], comparisons: Comparison[], calls: number): Promise<GroupResult> {
  return { title, concurrency, rows: await rounds(sides, calls, PASSES), comparisons };
}

async function closeAll(clients: BenchClient[]): Promise<void> {
  await Promise.allSettled(clients.map((c) => c.close()));
}

const many = <T>(n: number, make: (i: number) => Promise<T>): Promise<T[]> => Promise.all(Array.from({ length: n }, (_, i) => make(i)));

async function benchHttp(calls: number, dir: string): Promise<GroupResult[]> {
  const kernel = memoKernel(dir);
  const endpoint = new McpHttpEndpoint(kernel, { logger: quiet });
  await endpoint.start();
  const servers = { v2: await bareSessionsV2(), v1: await bareSessionsV1(), stateless: await bareStateless() };
  const out: GroupResult[] = [];
  try {
    for (const c of [1, 16]) {
      const sessions: Side[] = [
        { name: `c=${c}: bare v2 Server, v2 client`, clients: await many(c, () => httpClientV2(servers.v2.url, 'sessions')), workers: c },
        { name: `c=${c}: Memo endpoint, v2 client`, clients: await many(c, () => httpClientV2(endpoint.url, 'sessions', endpoint.token)), workers: c },
        { name: `c=${c}: bare v1 Server, v1 client`, clients: await many(c, () => httpClientV1(servers.v1.url)), workers: c },
        { name: `c=${c}: Memo endpoint, v1 client`, clients: await many(c, () => httpClientV1(endpoint.url, endpoint.token)), workers: c },
      ];
      out.push(
        await group(
          '2025-11-25 sessions over Streamable HTTP (loopback)',
          c,
          sessions,
          [
            { label: 'v2 line', bare: 0, memo: 1 },
            { label: 'v1 line', bare: 2, memo: 3 },
          ],
          calls,
        ),
      );
      await closeAll(sessions.flatMap((s) => s.clients));
      // Distinct declared names: each stateless client is its own caller, as 16 different apps would be.
      const stateless: Side[] = [
        {
          name: `c=${c}: bare createMcpHandler`,
          clients: await many(c, (i) => httpClientV2(servers.stateless.url, 'stateless', undefined, `bench-${i}`)),
          workers: c,
        },
        { name: `c=${c}: Memo endpoint`, clients: await many(c, (i) => httpClientV2(endpoint.url, 'stateless', endpoint.token, `bench-${i}`)), workers: c },
      ];
      out.push(await group('2026-07-28 stateless over Streamable HTTP (loopback)', c, stateless, [{ label: 'v2 line', bare: 0, memo: 1 }], calls));
      await closeAll(stateless.flatMap((s) => s.clients));
    }
  } finally {
    await Promise.allSettled(Object.values(servers).map((s) => s.close()));
    await endpoint.close();
    await kernel.shutdown();
  }
  return out;
}

async function benchStdio(calls: number, dir: string, eras: readonly Era[] = ['sessions', 'stateless']): Promise<GroupResult[]> {
  const out: GroupResult[] = [];
  for (const era of eras) {
    const bare = await stdioClientV2([SELF, '--serve', 'bare-stdio'], era);
    const memo = await stdioClientV2([SELF, '--serve', 'memo-stdio', path.join(dir, `stdio-${era}`)], era);
    try {
      // The breakdown times one request at a time (see timeRequests).
      for (const c of process.env.BENCH_MCP_BREAKDOWN ? [1] : [1, 16]) {
        const title = era === 'sessions' ? '2025-11-25 (initialize) over stdio' : '2026-07-28 stateless over stdio';
        const sides: Side[] = [
          { name: `c=${c}: bare v2 serveStdio`, clients: [bare], workers: c },
          { name: `c=${c}: Memo McpStdioServer`, clients: [memo], workers: c },
        ];
        out.push(await group(`${title} (child processes, v2 client)`, c, sides, [{ label: 'v2 line', bare: 0, memo: 1 }], calls));
      }
    } finally {
      await closeAll([bare, memo]);
    }
  }
  return out;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  const upper = s[m] ?? NaN; // NaN for no samples, as before
  return s.length % 2 ? upper : ((s[m - 1] ?? NaN) + upper) / 2;
}

/** Spawns a server that prints a JSON line with `url` (and `token`), then times connect + tools/list. */
async function launchHttp(args: string[], era: Era): Promise<number> {
  const t0 = process.hrtime.bigint();
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'ignore'] });
  try {
    const line = await new Promise<string>((resolve, reject) => {
      let buf = '';
      child.stdout.on('data', (d) => {
        buf += d;
        const nl = buf.indexOf('\n');
        if (nl >= 0) resolve(buf.slice(0, nl));
      });
      child.once('exit', (code) => reject(new Error(`server exited (${code}) before printing its URL`)));
    });
    const { url, token } = JSON.parse(line) as { url: string; token?: string };
    const client = await httpClientV2(url, era, token);
    const tools = await client.listTools();
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    if (tools === 0) throw new Error('no tools listed');
    await client.close();
    return ms;
  } finally {
    const exited = new Promise((r) => child.once('exit', r));
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  }
}

async function launchStdio(args: string[], era: Era): Promise<number> {
  const t0 = process.hrtime.bigint();
  const client = await stdioClientV2(args, era);
  await client.listTools();
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  await client.close();
  return ms;
}

/** `memo serve --json` on a data folder, running until stopped (the server a joining stdio client finds). */
async function runningServe(args: string[]): Promise<{ stop(): Promise<void> }> {
  const child = spawn(process.execPath, [...args, '--json'], { stdio: ['ignore', 'pipe', 'ignore'] });
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => d.includes(10) && resolve());
    child.once('exit', (code) => reject(new Error(`memo serve exited (${code}) before it was ready`)));
  });
  return {
    stop: async () => {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

async function benchLaunch(dir: string, runs = 5): Promise<Record<string, number>> {
  const root = path.join(dir, 'launch-root');
  fs.mkdirSync(root, { recursive: true });
  const memoArgs = [BIN, '--root', root, '--data', path.join(dir, 'launch-data'), 'serve'];
  // A second data folder with a memo serve on it: a stdio launch there joins that server.
  const joinArgs = [BIN, '--root', root, '--data', path.join(dir, 'launch-joined-data'), 'serve'];
  const server = await runningServe(joinArgs);
  try {
    return await launchCases(memoArgs, joinArgs, runs);
  } finally {
    await server.stop();
  }
}

async function launchCases(memoArgs: string[], joinArgs: string[], runs: number): Promise<Record<string, number>> {
  const cases: Array<[string, () => Promise<number>]> = [
    ['HTTP 2025: bare v2 session server script', () => launchHttp([SELF, '--serve', 'bare-http-sessions'], 'sessions')],
    ['HTTP 2025: memo serve --json', () => launchHttp([...memoArgs, '--json'], 'sessions')],
    ['HTTP 2026: bare createMcpHandler script', () => launchHttp([SELF, '--serve', 'bare-http-stateless'], 'stateless')],
    ['HTTP 2026: memo serve --json', () => launchHttp([...memoArgs, '--json'], 'stateless')],
    ['stdio 2025: bare serveStdio script', () => launchStdio([SELF, '--serve', 'bare-stdio'], 'sessions')],
    ['stdio 2025: memo serve --stdio', () => launchStdio([...memoArgs, '--stdio'], 'sessions')],
    ['stdio 2025: memo serve --stdio, joining', () => launchStdio([...joinArgs, '--stdio'], 'sessions')],
    ['stdio 2026: bare serveStdio script', () => launchStdio([SELF, '--serve', 'bare-stdio'], 'stateless')],
    ['stdio 2026: memo serve --stdio', () => launchStdio([...memoArgs, '--stdio'], 'stateless')],
    ['stdio 2026: memo serve --stdio, joining', () => launchStdio([...joinArgs, '--stdio'], 'stateless')],
  ];
  const times = cases.map(([name, run]) => ({ name, run, ms: [] as number[] }));
  await times[1]!.run(); // warm the file cache once (the list above is not empty)
  for (let i = 0; i < runs; i++) for (const t of times) t.ms.push(await t.run());
  return Object.fromEntries(times.map((t) => [t.name, median(t.ms)]));
}

/** One table per revision and transport (c=1 and c=16 together), each followed by its ratios. */
function printGroups(results: GroupResult[], calls: number): RatioLine[] {
  const lines: RatioLine[] = [];
  for (const title of new Set(results.map((r) => r.title))) {
    const mine = results.filter((r) => r.title === title);
    printTable(
      `${title}, ${calls} calls per run`,
      mine.flatMap((r) => r.rows),
    );
    for (const r of mine) {
      for (const c of r.comparisons) {
        const bare = r.rows[c.bare]!;
        const memo = r.rows[c.memo]!;
        const ratio = memo.callsPerSec / bare.callsPerSec;
        const dp50 = memo.p50us - bare.p50us;
        console.log(
          `  c=${r.concurrency} ${c.label}: Memo/bare throughput ${ratio.toFixed(2)}x (target >= 0.8x); p50 ${dp50 >= 0 ? '+' : ''}${dp50.toFixed(0)} us`,
        );
        lines.push({ group: title, concurrency: r.concurrency, label: c.label, ratio, bare, memo });
      }
    }
  }
  return lines;
}

/** The machine's load average, printed with the figures: on a shared machine it says how much to trust them. */
function load(): string {
  return os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
}

export async function benchMcp(calls = Number(process.env.BENCH_MCP_CALLS ?? 2000)): Promise<{ ratios: RatioLine[]; launchMs: Record<string, number> }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memo-bench-mcp-'));
  try {
    console.log(`\nMCP: ${calls} calls per run, ${PASSES} runs per side (best kept); load average ${load()} (${os.cpus().length} CPUs)`);
    // BENCH_MCP_ONLY=stdio-stateless runs only the 2026-07-28 stdio groups, =stdio both revisions', =launch only the launch times (for profiling and repeated runs).
    if (process.env.BENCH_MCP_ONLY === 'stdio-stateless') return { ratios: printGroups(await benchStdio(calls, dir, ['stateless']), calls), launchMs: {} };
    if (process.env.BENCH_MCP_ONLY === 'stdio') return { ratios: printGroups(await benchStdio(calls, dir), calls), launchMs: {} };
    const ratios = process.env.BENCH_MCP_ONLY === 'launch' ? [] : printGroups(await benchHttp(calls, dir), calls);
    if (process.env.BENCH_MCP_ONLY !== 'launch') ratios.push(...printGroups(await benchStdio(calls, dir), calls));
    const launchMs = await benchLaunch(dir);
    console.log('\nLaunch to first tools/list answer, v2 client (median of 5)');
    for (const [name, ms] of Object.entries(launchMs)) console.log(`${name.padEnd(44)} ${ms.toFixed(0).padStart(8)} ms`);
    for (const era of ['2025', '2026'])
      for (const how of ['', ', joining']) {
        const bare = launchMs[`stdio ${era}: bare serveStdio script`]!;
        const memo = launchMs[`stdio ${era}: memo serve --stdio${how}`]!;
        console.log(`  stdio ${era}${how || ', standalone'}: Memo/bare launch ${(memo / bare).toFixed(2)}x (target <= 1.3x)`);
      }
    console.log(`\nMCP: load average at the end ${load()}`);
    return { ratios, launchMs };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * BENCH_MCP_BREAKDOWN=1 (stdio, concurrency 1): a server child times each request from its bytes
 * arriving on stdin to its response's write returning, and in Memo's child the part spent in
 * `kernel.invoke` and, inside it, in the audit append; each child prints one line to stderr when it
 * exits. These are wall-clock spans measured on the server, per call: a CPU profile of a process
 * woken for every call misattributes native time (its samples put a flock at 8 us where timing it
 * in place gives 2).
 */
function timeRequests(kind: string): { watch(kernel: Kernel): void } {
  const now = () => process.hrtime.bigint();
  const sum = { requests: 0, server: 0n, invoke: 0n, audit: 0n };
  let arrived = 0n;
  const emit = process.stdin.emit.bind(process.stdin) as (event: string | symbol, ...args: unknown[]) => boolean;
  process.stdin.emit = ((event: string | symbol, ...args: unknown[]) => {
    if (event === 'data') arrived = now();
    return emit(event, ...args);
  }) as typeof process.stdin.emit;
  const write = process.stdout.write.bind(process.stdout) as (...args: unknown[]) => boolean;
  process.stdout.write = (...args: unknown[]) => {
    const ok = write(...args);
    if (arrived !== 0n) {
      sum.server += now() - arrived;
      sum.requests++;
      arrived = 0n;
    }
    return ok;
  };
  let watched = false;
  const watch = (kernel: Kernel) => {
    watched = true;
    const invoke = kernel.invoke.bind(kernel);
    kernel.invoke = async (...args) => {
      const t = now();
      try {
        return await invoke(...args);
      } finally {
        sum.invoke += now() - t;
      }
    };
    let depth = 0;
    const sink = kernel.audit as { append: (...a: never[]) => unknown; appendBatch?: (...a: never[]) => unknown };
    for (const name of ['append', 'appendBatch'] as const) {
      const original = sink[name]?.bind(sink);
      if (!original) continue;
      sink[name] = (...a: never[]) => {
        // append calls appendBatch: the outer one counts.
        if (depth > 0) return original(...a);
        depth++;
        const t = now();
        try {
          return original(...a);
        } finally {
          depth--;
          sum.audit += now() - t;
        }
      };
    }
  };
  let reported = false;
  const report = () => {
    if (reported) return;
    reported = true;
    // The 2026-07-28 client's probe on a sibling process answers a request or two: not a measurement.
    if (sum.requests < 100) return;
    const us = (ns: bigint) => (Number(ns) / sum.requests / 1000).toFixed(1);
    const inside = watched ? `; kernel.invoke ${us(sum.invoke)} us, of which the audit append ${us(sum.audit)} us` : '';
    process.stderr.write(`breakdown ${kind}: ${sum.requests} requests, server ${us(sum.server)} us a request (bytes in to response written)${inside}\n`);
  };
  // When the client hangs up (it may then stop the child with a signal, which skips exit handlers).
  process.stdin.once('end', report);
  process.once('exit', report);
  return { watch };
}

/** The child-process servers the benchmark launches: `node dist/bench/mcp.js --serve <kind> [dir]`. */
async function serveChild(kind: string | undefined, dir: string | undefined): Promise<void> {
  const breakdown = process.env.BENCH_MCP_BREAKDOWN && kind?.endsWith('-stdio');
  if (kind === 'bare-stdio') {
    if (breakdown) timeRequests(kind);
    serveStdio(() => bareServerV2());
    return;
  }
  if (kind === 'bare-http-sessions' || kind === 'bare-http-stateless') {
    const server = kind === 'bare-http-sessions' ? await bareSessionsV2() : await bareStateless();
    process.stdout.write(JSON.stringify({ url: server.url, pid: process.pid }) + '\n');
    process.once('SIGTERM', () => void server.close().then(() => process.exit(0)));
    return;
  }
  if (kind === 'memo-stdio' && dir) {
    // Patched before stdout is reserved: the reserved stream writes through the timed write.
    const timing = breakdown ? timeRequests(kind) : undefined;
    const stdout = reserveStdoutForProtocol();
    const kernel = memoKernel(dir);
    timing?.watch(kernel);
    const stdio = new McpStdioServer(kernel, { stdout });
    await stdio.start();
    await stdio.closed;
    await kernel.shutdown();
    return;
  }
  throw new Error(`unknown --serve kind ${kind}`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href && process.argv[2] === '--serve') {
  await serveChild(process.argv[3], process.argv[4]);
}
