import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/client/stdio';
import { createKernel, type Kernel } from '../kernel/index.js';
import { printTable, summarise, type Row } from './stats.js';

/**
 * Memo against the reference MCP filesystem server (`@modelcontextprotocol/server-filesystem`, a
 * devDependency), same run, same machine, over stdio:
 * - both servers are child processes spawned the same way (`node <script> ...`) and driven by the
 *   v2 SDK client (2025-11-25 session): `memo serve --stdio --rate-limit off` (every built-in pack
 *   loaded, audit on: the one admin setting that turns the limits off) against the reference server
 *   rooted at the same folder;
 * - cases: a 4 KB text file (`read_file` vs `read_text_file`), a folder of 100 files
 *   (`list_directory` vs the reference's `list_directory` and, the same work as Memo's listing with
 *   sizes, `list_directory_with_sizes`), and a glob over a 1,000-file tree (`search_files` both, `**\/*.ts`);
 * - concurrency 1 and 16 (16 calls in flight on the one pipe); each side runs in turn, passes in
 *   mirrored order, best run kept (as `bench mcp` does);
 * - in process: `kernel.invoke read_file` and `get_file_info` of the same 4 KB file against
 *   `fs.promises.readFile` and `fs.promises.stat`, interleaved.
 */

const HERE = path.dirname(fileURLToPath(import.meta.url));
/** dist/bench/peers.js → the repository's bin/memo. */
const BIN = path.resolve(HERE, '../../bin/memo');
const PLUGINS = path.resolve(HERE, '../plugins');
const PASSES = Number(process.env.BENCH_PEERS_PASSES ?? 3);

function referenceServerScript(): string {
  const require = createRequire(import.meta.url);
  return path.join(path.dirname(require.resolve('@modelcontextprotocol/server-filesystem/package.json')), 'dist', 'index.js');
}

function load(): string {
  return os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
}

interface Fixture {
  dir: string;
  root: string;
  text: string;
}

function fixture(): Fixture {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memo-bench-peers-'));
  fs.mkdirSync(path.join(dir, 'root'));
  const root = fs.realpathSync(path.join(dir, 'root'));
  const line = `${'lorem ipsum dolor sit amet '.repeat(3).slice(0, 63)}\n`;
  const text = line.repeat(64); // 4096 bytes
  fs.writeFileSync(path.join(root, 'small.txt'), text);
  fs.mkdirSync(path.join(root, 'folder'));
  for (let i = 0; i < 100; i++) fs.writeFileSync(path.join(root, 'folder', `file${String(i).padStart(3, '0')}.txt`), 'x');
  const exts = ['ts', 'js', 'md', 'json'];
  let n = 0;
  for (let a = 0; a < 10; a++)
    for (let b = 0; b < 10; b++) {
      const leaf = path.join(root, 'tree', `pkg${a}`, `mod${b}`);
      fs.mkdirSync(leaf, { recursive: true });
      for (let f = 0; f < 10; f++, n++) fs.writeFileSync(path.join(leaf, `file${f}.${exts[n % exts.length]}`), '');
    }
  return { dir, root, text };
}

interface Peer {
  name: string;
  call(tool: string, args: Record<string, unknown>): Promise<unknown>;
  close(): Promise<void>;
}

async function connect(name: string, args: string[]): Promise<Peer> {
  const client = new Client({ name: 'bench-peers', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command: process.execPath, args, env: getDefaultEnvironment(), stderr: 'ignore' }));
  return {
    name,
    async call(tool, a) {
      const r = await client.callTool({ name: tool, arguments: a });
      if (r.isError) throw new Error(`${name} ${tool} failed: ${JSON.stringify(r.content)}`);
      return r;
    },
    close: () => client.close(),
  };
}

interface Case {
  label: string;
  calls: number;
  memo: [tool: string, args: Record<string, unknown>];
  reference: [tool: string, args: Record<string, unknown>];
  /** Both answers must carry this (the same file, listing or matches). */
  check: (r: unknown) => boolean;
}

function textOf(r: unknown): string {
  const c = (r as { content?: Array<{ text?: string }> }).content?.[0]?.text;
  return typeof c === 'string' ? c : '';
}

async function drive(peer: Peer, [tool, args]: [string, Record<string, unknown>], calls: number, workers: number, label: string): Promise<Row> {
  for (let i = 0; i < Math.min(100, calls); i++) await peer.call(tool, args);
  const samples = new Float64Array(calls);
  let next = 0;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: workers }, async () => {
      for (let i = next++; i < calls; i = next++) {
        const t0 = process.hrtime.bigint();
        await peer.call(tool, args);
        samples[i] = Number(process.hrtime.bigint() - t0) / 1000;
      }
    }),
  );
  return summarise(label, samples, Number(process.hrtime.bigint() - start) / 1e6);
}

export interface PeerRatio {
  label: string;
  concurrency: number;
  ratio: number;
}

async function benchStdioPeers(fx: Fixture): Promise<PeerRatio[]> {
  const data = path.join(fx.dir, 'data');
  const memo = await connect('Memo', [BIN, '--root', fx.root, '--data', data, 'serve', '--stdio', '--rate-limit', 'off']);
  const reference = await connect('reference', [referenceServerScript(), fx.root]);
  const cases: Case[] = [
    {
      label: 'read 4 KB',
      calls: 2000,
      memo: ['read_file', { path: 'small.txt' }],
      reference: ['read_text_file', { path: path.join(fx.root, 'small.txt') }],
      check: (r) => textOf(r).includes('lorem ipsum'),
    },
    {
      // Memo's listing gives each file's size: the reference's names-only listing does less work...
      label: 'list 100 entries (reference: names only)',
      calls: 1000,
      memo: ['list_directory', { path: 'folder' }],
      reference: ['list_directory', { path: path.join(fx.root, 'folder') }],
      check: (r) => textOf(r).includes('file099.txt'),
    },
    {
      // ... and its listing with sizes (a stat per entry) is the same work.
      label: 'list 100 entries with sizes',
      calls: 1000,
      memo: ['list_directory', { path: 'folder' }],
      reference: ['list_directory_with_sizes', { path: path.join(fx.root, 'folder') }],
      check: (r) => textOf(r).includes('file099.txt'),
    },
    {
      label: 'search **/*.ts in 1,000 files',
      calls: 100,
      memo: ['search_files', { pattern: '**/*.ts', path: 'tree', maxResults: 1000 }],
      reference: ['search_files', { pattern: '**/*.ts', path: path.join(fx.root, 'tree') }],
      check: (r) => textOf(r).includes('file8.ts'),
    },
  ];
  const ratios: PeerRatio[] = [];
  try {
    for (const c of cases) {
      // Same answer first: the comparison is only fair if both do the same work.
      if (!c.check(await memo.call(...c.memo))) throw new Error(`Memo's ${c.memo[0]} did not return the expected content`);
      if (!c.check(await reference.call(...c.reference))) throw new Error(`the reference ${c.reference[0]} did not return the expected content`);
      for (const conc of [1, 16]) {
        const sides = [
          { peer: reference, call: c.reference, name: `c=${conc}: reference ${c.reference[0]}` },
          { peer: memo, call: c.memo, name: `c=${conc}: Memo ${c.memo[0]}` },
        ];
        const best: Array<Row | undefined> = [undefined, undefined];
        for (let p = 0; p < PASSES; p++) {
          const order = p % 2 ? [1, 0] : [0, 1];
          for (const i of order) {
            const s = sides[i]!;
            const row = await drive(s.peer, s.call, c.calls, conc, s.name);
            if (!best[i] || row.callsPerSec > best[i].callsPerSec) best[i] = row;
          }
        }
        const [ref, mine] = best as [Row, Row];
        printTable(`${c.label}, ${c.calls} calls per run, best of ${PASSES} (load ${load()})`, [ref, mine]);
        const ratio = mine.callsPerSec / ref.callsPerSec;
        console.log(`  c=${conc} ${c.label}: Memo/reference throughput ${ratio.toFixed(2)}x (target >= 0.8x)`);
        ratios.push({ label: c.label, concurrency: conc, ratio });
      }
    }
  } finally {
    await Promise.allSettled([memo.close(), reference.close()]);
  }
  return ratios;
}

async function timeUs(fn: () => Promise<unknown>): Promise<number> {
  const t0 = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t0) / 1000;
}

async function benchInProcess(fx: Fixture, rounds = 3000): Promise<{ readRatio: number }> {
  const kernel: Kernel = createKernel({
    root: fx.root,
    dataDir: path.join(fx.dir, 'data-in-process'),
    rateLimits: { maxCalls: 0, duplicateCooldownMs: 0 },
    packs: [],
  });
  const statuses = await kernel.loadPacks([{ dir: PLUGINS, source: 'builtin' }]);
  if (statuses.find((s) => s.id === 'fs-tools')?.status !== 'loaded') throw new Error('fs-tools did not load');
  const file = path.join(fx.root, 'small.txt');
  const host = { kind: 'host' as const };
  const cases: Array<[string, () => Promise<unknown>]> = [
    ['fs.promises.readFile utf8 (baseline)', async () => (await fs.promises.readFile(file, 'utf8')).length === fx.text.length || fail()],
    [
      'kernel.invoke read_file, audit on',
      async () => {
        const r = await kernel.invoke({ tool: 'read_file', args: { path: 'small.txt' }, caller: host });
        if (!r.ok || (r.value as { content: string }).content !== fx.text) fail();
      },
    ],
    ['fs.promises.stat (baseline)', async () => (await fs.promises.stat(file)).size === 4096 || fail()],
    [
      'kernel.invoke get_file_info, audit on',
      async () => {
        const r = await kernel.invoke({ tool: 'get_file_info', args: { path: 'small.txt' }, caller: host });
        if (!r.ok) fail();
      },
    ],
  ];
  const series = cases.map(() => new Float64Array(rounds));
  const totals = cases.map(() => 0);
  for (let i = 0; i < 300; i++) for (const [, fn] of cases) await fn();
  for (let i = 0; i < rounds; i++)
    for (const [k, [, fn]] of cases.entries()) {
      const us = await timeUs(fn);
      series[k]![i] = us;
      totals[k]! += us;
    }
  await kernel.shutdown();
  const rows = cases.map(([name], k) => summarise(name, series[k]!, totals[k]! / 1000));
  printTable(`In process, a 4 KB file, ${rounds} calls each, interleaved (load ${load()})`, rows);
  const readRatio = rows[1]!.p50us / rows[0]!.p50us;
  console.log(
    `  read_file / fs.promises.readFile p50: ${readRatio.toFixed(2)}x (target <= 2x); get_file_info / stat p50: ${(rows[3]!.p50us / rows[2]!.p50us).toFixed(2)}x`,
  );
  return { readRatio };
}

function fail(): never {
  throw new Error('bench call returned something unexpected');
}

export async function benchPeers(): Promise<{ ratios: PeerRatio[]; readRatio: number }> {
  const fx = fixture();
  try {
    console.log(`\nPeers: Memo vs @modelcontextprotocol/server-filesystem over stdio; load average ${load()} (${os.cpus().length} CPUs)`);
    const ratios = await benchStdioPeers(fx);
    const { readRatio } = await benchInProcess(fx);
    console.log(`\nPeers: load average at the end ${load()}`);
    return { ratios, readRatio };
  } finally {
    fs.rmSync(fx.dir, { recursive: true, force: true });
  }
}
