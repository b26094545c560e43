import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema, isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { createKernel, type Kernel, type Logger, type PackDefinition } from '../kernel/index.js';
import { McpHttpEndpoint, McpStdioServer } from '../kernel/mcp/index.js';
import { reserveStdoutForProtocol } from '../kernel/mcp/mcp-stdio.js';
import { printTable, summarise, type Row } from './stats.js';

/**
 * MCP exposure against the bare SDK, same run, same SDK Client:
 * 1. `tools/call` of a read echo tool through the Memo endpoint (the kernel pipeline with its audit
 *    line per call, rate limits off) vs a bare low-level SDK `Server` with one echo tool, over
 *    Streamable HTTP on loopback (in-process, each side with its own transport per session) and over
 *    stdio (child processes), at concurrency 1 and 16: calls/s, p50/p99, and the ratio Memo/bare.
 *    HTTP concurrency 16 = 16 client sessions calling in a loop; stdio concurrency 16 = 16 calls in
 *    flight on the one pipe.
 *    Each pair runs twice in alternating order; each side keeps its better run.
 * 2. Launch to the first `tools/list` answer: `memo serve` (child process, built-in packs, file
 *    watching) vs the bare server script, over HTTP and stdio; median of 5.
 *
 * The Memo stdio side of (1) runs `McpStdioServer` in a child booted by this file (rate limits
 * cannot be turned off from the CLI, and 30 calls/min would be the whole measurement).
 */

const HERE = path.dirname(fileURLToPath(import.meta.url));
/** dist/bench/mcp.js → the repository's bin/memo. */
const BIN = path.resolve(HERE, '../../bin/memo');
const SELF = fileURLToPath(import.meta.url);
const ECHO_SCHEMA = { type: 'object', properties: { text: { type: 'string' } }, required: ['text'], additionalProperties: false } as const;
const quiet: Logger = { info() {}, warn() {}, error() {} };

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

/** The baseline: the SDK's low-level Server with one echo tool, nothing else. */
function bareServer(): Server {
  const server = new Server({ name: 'bare', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [{ name: 'echo', description: 'Returns its text.', inputSchema: { ...ECHO_SCHEMA } }] }));
  server.setRequestHandler(CallToolRequestSchema, (req) => {
    const text = req.params.arguments?.text ?? '';
    return { content: [{ type: 'text', text: typeof text === 'string' ? text : JSON.stringify(text) }] };
  });
  return server;
}

/** The baseline over HTTP: one bare Server + StreamableHTTPServerTransport per session, as the SDK examples do. */
async function bareHttp(): Promise<{ url: string; close(): Promise<void> }> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const handle = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const sid = req.headers['mcp-session-id'];
    if (typeof sid === 'string') {
      const t = sessions.get(sid);
      if (!t) return void res.writeHead(404).end();
      return t.handleRequest(req, res);
    }
    let body = '';
    for await (const chunk of req) body += chunk;
    const parsed = JSON.parse(body) as unknown;
    if (!isInitializeRequest(parsed)) return void res.writeHead(400).end();
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => void sessions.set(id, transport),
    });
    transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
    await bareServer().connect(transport);
    await transport.handleRequest(req, res, parsed);
  };
  const httpServer = http.createServer((req, res) => void handle(req, res));
  await new Promise<void>((r) => httpServer.listen(0, '127.0.0.1', r));
  const { port } = httpServer.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    async close() {
      await Promise.allSettled([...sessions.values()].map((t) => t.close()));
      httpServer.closeAllConnections();
      await new Promise<void>((r) => httpServer.close(() => r()));
    },
  };
}

/**
 * The SDK client hands every fetch the transport's one long-lived AbortSignal, and Node's fetch
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

async function httpClient(url: string, token?: string): Promise<Client> {
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      fetch: linkedFetch,
      ...(token ? { requestInit: { headers: { Authorization: `Bearer ${token}` } } } : {}),
    }),
  );
  return client;
}

/** Runs the pair twice in alternating order (bare, memo, memo, bare) and keeps each side's better run: less order bias and noise. */
async function pair(bare: () => Promise<Row>, memo: () => Promise<Row>): Promise<{ bare: Row; memo: Row }> {
  const b1 = await bare();
  const m1 = await memo();
  const m2 = await memo();
  const b2 = await bare();
  const best = (x: Row, y: Row) => (x.callsPerSec >= y.callsPerSec ? x : y);
  return { bare: best(b1, b2), memo: best(m1, m2) };
}

async function closeHttpClient(client: Client): Promise<void> {
  await (client.transport as StreamableHTTPClientTransport | undefined)?.terminateSession().catch(() => {});
  await client.close();
}

/** `calls` echo calls spread over `workers` loops (each on clients[i % clients.length]); per-call latency in us. */
async function drive(name: string, clients: Client[], workers: number, calls: number): Promise<Row> {
  const warm = Math.min(200, calls);
  // clients is never empty: every caller passes at least one.
  for (let i = 0; i < warm; i++) await clients[i % clients.length]!.callTool({ name: 'echo', arguments: { text: `w${i}` } });
  const samples = new Float64Array(calls);
  let next = 0;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      const client = clients[w % clients.length]!;
      for (let i = next++; i < calls; i = next++) {
        const t0 = process.hrtime.bigint();
        const r = await client.callTool({ name: 'echo', arguments: { text: `c${i}` } });
        if (r.isError) throw new Error(`bench call failed: ${JSON.stringify(r.content)}`);
        samples[i] = Number(process.hrtime.bigint() - t0) / 1000;
      }
    }),
  );
  return summarise(name, samples, Number(process.hrtime.bigint() - start) / 1e6);
}

async function benchHttp(calls: number, dir: string): Promise<Array<{ concurrency: number; bare: Row; memo: Row }>> {
  const kernel = memoKernel(dir);
  const endpoint = new McpHttpEndpoint(kernel, { logger: quiet });
  await endpoint.start();
  const bare = await bareHttp();
  const out: Array<{ concurrency: number; bare: Row; memo: Row }> = [];
  try {
    for (const concurrency of [1, 16]) {
      const bareClients = await Promise.all(Array.from({ length: concurrency }, () => httpClient(bare.url)));
      const memoClients = await Promise.all(Array.from({ length: concurrency }, () => httpClient(endpoint.url, endpoint.token)));
      const r = await pair(
        () => drive(`HTTP c=${concurrency}: bare SDK Server`, bareClients, concurrency, calls),
        () => drive(`HTTP c=${concurrency}: Memo endpoint (pipeline+audit)`, memoClients, concurrency, calls),
      );
      out.push({ concurrency, ...r });
      await Promise.all([...bareClients, ...memoClients].map(closeHttpClient));
    }
  } finally {
    await bare.close();
    await endpoint.close();
    await kernel.shutdown();
  }
  return out;
}

function stdioClientFor(args: string[]): { client: Client; transport: StdioClientTransport } {
  const transport = new StdioClientTransport({ command: process.execPath, args, env: getDefaultEnvironment(), stderr: 'ignore' });
  return { client: new Client({ name: 'bench', version: '1.0.0' }), transport };
}

async function benchStdio(calls: number, dir: string): Promise<Array<{ concurrency: number; bare: Row; memo: Row }>> {
  const bare = stdioClientFor([SELF, '--serve', 'bare-stdio']);
  const memo = stdioClientFor([SELF, '--serve', 'memo-stdio', path.join(dir, 'stdio')]);
  await bare.client.connect(bare.transport);
  await memo.client.connect(memo.transport);
  const out: Array<{ concurrency: number; bare: Row; memo: Row }> = [];
  try {
    for (const concurrency of [1, 16]) {
      const r = await pair(
        () => drive(`stdio c=${concurrency}: bare SDK Server`, [bare.client], concurrency, calls),
        () => drive(`stdio c=${concurrency}: Memo stdio (pipeline+audit)`, [memo.client], concurrency, calls),
      );
      out.push({ concurrency, ...r });
    }
  } finally {
    await bare.client.close();
    await memo.client.close();
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
async function launchHttp(args: string[]): Promise<number> {
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
    const client = await httpClient(url, token);
    const { tools } = await client.listTools();
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    if (tools.length === 0) throw new Error('no tools listed');
    await closeHttpClient(client);
    return ms;
  } finally {
    const exited = new Promise((r) => child.once('exit', r));
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  }
}

async function launchStdio(args: string[]): Promise<number> {
  const t0 = process.hrtime.bigint();
  const { client, transport } = stdioClientFor(args);
  await client.connect(transport);
  await client.listTools();
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  await client.close();
  return ms;
}

async function benchLaunch(dir: string, runs = 5): Promise<Record<string, number>> {
  const root = path.join(dir, 'launch-root');
  fs.mkdirSync(root, { recursive: true });
  const memoArgs = [BIN, '--root', root, '--data', path.join(dir, 'launch-data'), 'serve'];
  const cases: Array<[string, () => Promise<number>]> = [
    ['HTTP: bare SDK server script', () => launchHttp([SELF, '--serve', 'bare-http'])],
    ['HTTP: memo serve --json', () => launchHttp([...memoArgs, '--json'])],
    ['stdio: bare SDK server script', () => launchStdio([SELF, '--serve', 'bare-stdio'])],
    ['stdio: memo serve --stdio', () => launchStdio([...memoArgs, '--stdio'])],
  ];
  const times = cases.map(([name, run]) => ({ name, run, ms: [] as number[] }));
  await times[0]!.run(); // warm the file cache once (the list above is not empty)
  for (let i = 0; i < runs; i++) for (const t of times) t.ms.push(await t.run());
  return Object.fromEntries(times.map((t) => [t.name, median(t.ms)]));
}

function printRatios(title: string, results: Array<{ concurrency: number; bare: Row; memo: Row }>): number[] {
  printTable(
    title,
    results.flatMap((r) => [r.bare, r.memo]),
  );
  return results.map((r) => {
    const ratio = r.memo.callsPerSec / r.bare.callsPerSec;
    console.log(`  c=${r.concurrency}: Memo/bare throughput ${ratio.toFixed(2)}x (target >= 0.8x); p50 +${(r.memo.p50us - r.bare.p50us).toFixed(0)} us`);
    return ratio;
  });
}

export async function benchMcp(
  calls = Number(process.env.BENCH_MCP_CALLS ?? 3000),
): Promise<{ httpRatios: number[]; stdioRatios: number[]; launchMs: Record<string, number> }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memo-bench-mcp-'));
  try {
    const httpResults = await benchHttp(calls, dir);
    const httpRatios = printRatios(`MCP tools/call over Streamable HTTP (loopback), ${calls} calls per case`, httpResults);
    const stdioResults = await benchStdio(calls, dir);
    const stdioRatios = printRatios(`MCP tools/call over stdio (child processes), ${calls} calls per case`, stdioResults);
    const launchMs = await benchLaunch(dir);
    console.log('\nLaunch to first tools/list answer (median of 5)');
    for (const [name, ms] of Object.entries(launchMs)) console.log(`${name.padEnd(44)} ${ms.toFixed(0).padStart(8)} ms`);
    return { httpRatios, stdioRatios, launchMs };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The child-process servers the benchmark launches: `node dist/bench/mcp.js --serve <kind> [dir]`. */
async function serveChild(kind: string | undefined, dir: string | undefined): Promise<void> {
  if (kind === 'bare-stdio') {
    await bareServer().connect(new StdioServerTransport());
    return;
  }
  if (kind === 'bare-http') {
    const server = await bareHttp();
    process.stdout.write(JSON.stringify({ url: server.url, pid: process.pid }) + '\n');
    process.once('SIGTERM', () => void server.close().then(() => process.exit(0)));
    return;
  }
  if (kind === 'memo-stdio' && dir) {
    const stdout = reserveStdoutForProtocol();
    const kernel = memoKernel(dir);
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
