/**
 * scripts/cluster.mjs driven from a test: `start` as a child process (its ready line parsed), the
 * state file it keeps, `status` and `stop` as a person would run them, and each instance's memory.
 * Whatever a test leaves running is stopped when its file ends: the supervisor gets SIGTERM (it stops
 * its instances, HAProxy and its own PostgreSQL), then `cluster.mjs stop` ends anything it left.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { atTeardown } from '../../helpers/cleanup.js';
import { tempDir } from '../../helpers/kernel-fixture.js';
import { waitFor } from '../../helpers/wait.js';

export const CLUSTER_SCRIPT = path.resolve('scripts/cluster.mjs');

export interface ClusterInfo {
  url: string;
  token: string;
  tokenFile: string;
  dir: string;
  root: string;
  database: string | null;
  supervisor: number;
  proxy: { pid: number; port: number; socket: string };
  /** memo-1's one-time web console login link, through the proxy. */
  console: string | null;
  instances: Array<{ name: string; pid: number; port: number; data: string; console: string | null }>;
}

/** What `cluster.mjs status --json` prints. */
export interface ClusterStatus {
  running: boolean;
  proxyHealthy: boolean;
  instances: Array<{ name: string; pid: number; port: number; alive: boolean; healthy: boolean; proxy: string; restarts: number }>;
}

export function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const c = spawn(process.execPath, [CLUSTER_SCRIPT, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    c.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    c.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    c.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * Every process on the machine whose command line holds `secret` (pid and command line, the secret
 * masked): what any local user could read in ps or /proc/<pid>/cmdline.
 */
export function commandLinesHolding(secret: string): Array<{ pid: number; cmdline: string }> {
  const found: Array<{ pid: number; cmdline: string }> = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let text: string;
    try {
      text = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8');
    } catch {
      continue; // ended meanwhile
    }
    if (text.includes(secret)) found.push({ pid: Number(entry), cmdline: text.split('\0').join(' ').split(secret).join('***') });
  }
  return found;
}

/** The pids of `pid` and every process below it (children, their children...), read from /proc. */
export function processTree(pid: number): number[] {
  const parents = new Map<number, number[]>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // /proc/<pid>/stat: "pid (comm) state ppid ..."; comm may hold spaces or parentheses.
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(ppid, [...(parents.get(ppid) ?? []), Number(entry)]);
    } catch {
      // ended meanwhile
    }
  }
  const out: number[] = [];
  const todo = [pid];
  while (todo.length) {
    const p = todo.pop()!;
    out.push(p);
    todo.push(...(parents.get(p) ?? []));
  }
  return out;
}

export function rssMb(pid: number): number {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

export class Cluster {
  stderr = '';
  private constructor(
    readonly child: ChildProcessWithoutNullStreams,
    readonly info: ClusterInfo,
  ) {
    child.stderr.on('data', (d: Buffer) => (this.stderr += d.toString()));
  }

  /**
   * Starts a cluster in a new temp folder: `instances` memo serve behind HAProxy, on `databaseUrl`
   * (given in MEMO_DATABASE_URL, or with `viaFile` in a 0600 --database-url-file; never on a command
   * line), else the script's own PostgreSQL; `serveArgs` passed to every memo serve.
   */
  static async start(opts: { instances: number; databaseUrl?: string; viaFile?: boolean; sqlite?: boolean; serveArgs?: string[] }): Promise<Cluster> {
    const base = tempDir('memo-cluster-');
    // The postgres user runs the cluster's own server in dir/pg: it must be able to pass through.
    fs.chmodSync(base, 0o711);
    const dir = path.join(base, 'cluster');
    const args = ['start', '--dir', dir, '--instances', String(opts.instances), '--json'];
    // MEMO_DATABASE_URL of the runner must not leak in: the cluster uses what it is given, or its own.
    const env = { ...process.env };
    delete env.MEMO_DATABASE_URL;
    if (opts.databaseUrl && opts.viaFile) {
      const file = path.join(base, 'database-url');
      fs.writeFileSync(file, `${opts.databaseUrl}\n`, { mode: 0o600 });
      args.push('--database-url-file', file);
    } else if (opts.databaseUrl) env.MEMO_DATABASE_URL = opts.databaseUrl;
    if (opts.sqlite) args.push('--sqlite');
    if (opts.serveArgs?.length) args.push('--', ...opts.serveArgs);
    const child = spawn(process.execPath, [CLUSTER_SCRIPT, ...args], { stdio: ['pipe', 'pipe', 'pipe'], env });
    atTeardown(async () => {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
        await exited;
        clearTimeout(timer);
      }
      if (fs.existsSync(path.join(dir, 'cluster.json'))) await run(['stop', '--dir', dir]);
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d: string) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const line = await waitFor(
      () => {
        if (stdout.includes('\n')) return stdout.slice(0, stdout.indexOf('\n'));
        if (child.exitCode !== null) throw new Error(`cluster.mjs start exited ${child.exitCode}: ${stderr}`);
        return undefined;
      },
      { what: 'the cluster to be ready', timeoutMs: 240_000, intervalMs: 100 },
    );
    const cluster = new Cluster(child, JSON.parse(line) as ClusterInfo);
    cluster.stderr = stderr;
    return cluster;
  }

  /** The state file as the supervisor keeps it (pids change when an instance is started again). */
  state(): { instances: Array<{ name: string; pid: number; port: number; restarts: number }> } {
    return JSON.parse(fs.readFileSync(path.join(this.info.dir, 'cluster.json'), 'utf8'));
  }

  pids(): number[] {
    return this.state().instances.map((i) => i.pid);
  }

  async status(): Promise<{ code: number | null; status: ClusterStatus }> {
    const r = await run(['status', '--dir', this.info.dir, '--json']);
    return { code: r.code, status: JSON.parse(r.stdout) as ClusterStatus };
  }

  /** `cluster.mjs stop`, as a person would; resolves with the supervisor's exit code. */
  async stop(): Promise<number | null> {
    const exited = new Promise<number | null>((r) =>
      this.child.exitCode !== null || this.child.signalCode !== null ? r(this.child.exitCode) : this.child.once('exit', (code) => r(code)),
    );
    const r = await run(['stop', '--dir', this.info.dir]);
    if (r.code !== 0) throw new Error(`cluster.mjs stop: ${r.stderr}`);
    return exited;
  }
}

/** What the proxy answered to one HTTP request: the instance that served it (HAProxy's X-Memo-Instance) and the status. */
export interface Served {
  instance: string | null;
  status: number;
}

/** A fetch that remembers the last answer's instance and status (a client making one call at a time reads it after each call). */
export function recordingFetch(): { fetch: typeof fetch; last: () => Served | undefined; all: Served[] } {
  const all: Served[] = [];
  return {
    all,
    last: () => all.at(-1),
    fetch: async (input, init) => {
      const res = await fetch(input, init);
      all.push({ instance: res.headers.get('x-memo-instance'), status: res.status });
      return res;
    },
  };
}
