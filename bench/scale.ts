import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { printTable, summarise, type Row } from './stats.js';

/**
 * `npm run bench scale`: calls/s through HAProxy for 1, 2 and 3 `memo serve` instances on one
 * PostgreSQL database against one instance on SQLite files, same run (scripts/cluster.mjs starts
 * both: a 3-instance cluster with its own PostgreSQL, and a 1-instance `--sqlite` cluster, every
 * instance with `--rate-limit off` and every built-in pack). The call is `vault_list_tasks` (limit
 * 20) over 20 seeded tasks: a read of the vault's planning data (PostgreSQL, or vault-planning.sqlite)
 * plus the call's audit line (memo_audit in PostgreSQL, or agent-audit.jsonl) — external MCP clients
 * may only run read tools, so a task write is not something they can send. 1 and 2 instances are the
 * 3-instance cluster with the others put in maintenance on the proxy's admin socket (idle, not
 * stopped). BENCH_SCALE_CLIENTS stateless 2026-07-28 clients (default 32, distinct names) call in a
 * loop for BENCH_SCALE_SECONDS (default 10) after a 2 s warm-up; each case runs twice, in mirrored
 * order, and keeps its better run. Everything (clients, proxy, PostgreSQL, instances) shares this
 * machine's cores, which is what bounds the figures: the load average is printed with them.
 */

const HERE = path.dirname(fileURLToPath(import.meta.url));
/** dist/bench/scale.js → the repository's scripts/cluster.mjs and bin/memo. */
const SCRIPT = path.resolve(HERE, '../../scripts/cluster.mjs');
const BIN = path.resolve(HERE, '../../bin/memo');
const CLIENTS = Number(process.env.BENCH_SCALE_CLIENTS ?? 32);
const SECONDS = Number(process.env.BENCH_SCALE_SECONDS ?? 10);
const WARMUP_MS = 2000;
const TASKS = 20;

interface ClusterInfo {
  url: string;
  token: string;
  root: string;
  proxy: { socket: string };
  instances: Array<{ name: string; data: string }>;
}

class BenchCluster {
  private constructor(
    private readonly child: ChildProcessWithoutNullStreams,
    readonly info: ClusterInfo,
  ) {}

  static async start(dir: string, args: string[]): Promise<BenchCluster> {
    const env = { ...process.env };
    delete env.MEMO_DATABASE_URL;
    const child = spawn(process.execPath, [SCRIPT, 'start', '--dir', dir, '--json', ...args, '--', '--rate-limit', 'off'], {
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const line = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('\n')) resolve(out.slice(0, out.indexOf('\n')));
      });
      child.once('exit', (code) => reject(new Error(`cluster.mjs start exited ${code}: ${err}`)));
    });
    return new BenchCluster(child, JSON.parse(line) as ClusterInfo);
  }

  /** Only the first `n` instances take calls; the others are in maintenance on the proxy. */
  async use(n: number): Promise<void> {
    for (const [i, inst] of this.info.instances.entries()) {
      await haproxy(this.info.proxy.socket, `set server memo/${inst.name} state ${i < n ? 'ready' : 'maint'}`);
    }
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((r) => this.child.once('exit', r));
    this.child.kill('SIGTERM');
    await exited;
  }
}

function haproxy(socket: string, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = net.createConnection(socket);
    let out = '';
    c.on('data', (d: Buffer) => (out += d.toString()));
    c.on('end', () => resolve(out));
    c.on('error', reject);
    c.end(`${command}\n`);
  });
}

/** Tasks written through the CLI (it reaches the running instance through its control socket). */
function seed(info: ClusterInfo): void {
  const first = info.instances[0]!;
  for (let i = 0; i < TASKS; i++) {
    const r = spawnSync(
      process.execPath,
      [
        BIN,
        '--root',
        info.root,
        '--data',
        first.data,
        'tools',
        'call',
        'vault_create_task',
        '--args',
        JSON.stringify({ title: `Bench task ${i}` }),
        '--approve',
        'allow-once',
        '--json',
      ],
      { encoding: 'utf8', env: { ...process.env, MEMO_INSTANCE_ID: first.name } },
    );
    if (r.status !== 0) throw new Error(`seeding a task failed: ${r.stderr}`);
  }
}

async function measure(name: string, info: ClusterInfo): Promise<Row> {
  const clients = await Promise.all(
    Array.from({ length: CLIENTS }, async (_, i) => {
      const client = new Client({ name: `scale-${i}`, version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
      await client.connect(new StreamableHTTPClientTransport(new URL(info.url), { requestInit: { headers: { Authorization: `Bearer ${info.token}` } } }));
      return client;
    }),
  );
  const samples: number[] = [];
  let failures = 0;
  let measuring = false;
  const begin = performance.now();
  const warm = begin + WARMUP_MS;
  const end = warm + SECONDS * 1000;
  await Promise.all(
    clients.map(async (client) => {
      while (performance.now() < end) {
        const t0 = performance.now();
        const r = await client.callTool({ name: 'vault_list_tasks', arguments: { limit: TASKS } });
        const t1 = performance.now();
        if (t0 >= warm) {
          measuring = true;
          if (r.isError) failures++;
          else samples.push((t1 - t0) * 1000);
        }
      }
    }),
  );
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
  if (!measuring || failures > 0) throw new Error(`${name}: ${failures} calls failed`);
  return summarise(name, Float64Array.from(samples), SECONDS * 1000);
}

export async function benchScale(): Promise<void> {
  const cores = os.cpus().length;
  const load = () =>
    os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ');
  console.log(
    `\nbench scale: ${cores} cores, load average ${load()} at the start; ${CLIENTS} clients, ${SECONDS} s per case after ${WARMUP_MS / 1000} s warm-up`,
  );
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'memo-bench-scale-'));
  // The cluster's own PostgreSQL runs as the postgres user, who must pass through this folder.
  fs.chmodSync(base, 0o711);
  let pg: BenchCluster | undefined;
  let lite: BenchCluster | undefined;
  try {
    [pg, lite] = await Promise.all([
      BenchCluster.start(path.join(base, 'pg'), ['--instances', '3']),
      BenchCluster.start(path.join(base, 'sqlite'), ['--instances', '1', '--sqlite']),
    ]);
    seed(pg.info);
    seed(lite.info);
    const cases: Array<{ name: string; run: () => Promise<Row> }> = [
      { name: '1 instance, SQLite', run: () => measure('1 instance, SQLite', lite!.info) },
      ...[1, 2, 3].map((n) => ({
        name: `${n} instance${n > 1 ? 's' : ''}, PostgreSQL`,
        run: async () => {
          await pg!.use(n);
          return measure(`${n} instance${n > 1 ? 's' : ''}, PostgreSQL`, pg!.info);
        },
      })),
    ];
    const best = new Map<string, Row>();
    for (const order of [cases, [...cases].reverse()]) {
      for (const c of order) {
        const row = await c.run();
        const prev = best.get(c.name);
        if (!prev || row.callsPerSec > prev.callsPerSec) best.set(c.name, row);
      }
    }
    const rows = cases.map((c) => best.get(c.name)!);
    printTable(`vault_list_tasks through HAProxy, ${CLIENTS} stateless clients (best of 2 runs)`, rows);
    const lite1 = rows[0]!.callsPerSec;
    const pg1 = rows[1]!.callsPerSec;
    for (const r of rows.slice(1)) {
      console.log(
        `${r.name.padEnd(26)} ${(r.callsPerSec / lite1).toFixed(2)}x one SQLite instance, ${(r.callsPerSec / pg1).toFixed(2)}x one PostgreSQL instance`,
      );
    }
    console.log(`load average ${load()} at the end`);
  } finally {
    await Promise.all([pg?.stop(), lite?.stop()]);
    fs.rmSync(base, { recursive: true, force: true });
  }
}
