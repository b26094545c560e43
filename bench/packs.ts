import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ToolResult } from '../kernel/tools/contract.js';
import { percentile } from './stats.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const HOST = path.resolve(here, '../../test/e2e/harness/kernel-host.mjs');
const BUILTIN = path.resolve(here, '../plugins');

function median(xs: number[]): number {
  return percentile(
    [...xs].sort((a, b) => a - b),
    50,
  );
}

/** A line from the host harness: `{ ready: true }` once, then `{ re: id, result }` per call. */
interface HostMessage {
  ready?: boolean;
  re?: number;
  result?: ToolResult;
}

/** Drives the e2e host harness (a real process around the compiled kernel) over JSON lines. */
class Host {
  private buf = '';
  private waiters: Array<(m: HostMessage) => boolean> = [];
  private seq = 0;
  constructor(private readonly child: ReturnType<typeof spawn>) {
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (d: string) => {
      this.buf += d;
      let nl: number;
      while ((nl = this.buf.indexOf('\n')) >= 0) {
        const msg = JSON.parse(this.buf.slice(0, nl)) as HostMessage;
        this.buf = this.buf.slice(nl + 1);
        this.waiters = this.waiters.filter((w) => !w(msg));
      }
    });
  }
  wait(test: (m: HostMessage) => boolean): Promise<HostMessage> {
    return new Promise((resolve) => this.waiters.push((m) => (test(m) ? (resolve(m), true) : false)));
  }
  async call(tool: string): Promise<ToolResult> {
    const id = ++this.seq;
    const reply = this.wait((m) => m.re === id);
    this.child.stdin!.write(JSON.stringify({ op: 'call', id, tool }) + '\n');
    const { result } = await reply;
    if (result === undefined) throw new Error(`the host answered call ${id} without a result`);
    return result;
  }
  stop(): void {
    this.child.stdin!.end();
  }
}

/**
 * Hot-reload latency: save a pack's code, then call its tool until the new behaviour answers.
 * The baseline is a call that needs no reload (the same tool, unchanged), same run.
 */
export async function benchHotReload(saves = 50): Promise<void> {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'memo-bench-hot-'));
  const packs = path.join(base, 'packs');
  fs.mkdirSync(path.join(packs, 'hot'), { recursive: true });
  fs.mkdirSync(path.join(base, 'root'));
  fs.writeFileSync(
    path.join(packs, 'hot', 'plugin.json'),
    JSON.stringify({
      id: 'hot',
      name: 'hot',
      version: '1.0.0',
      description: 'bench',
      main: 'index.js',
      tools: [{ name: 'ver', description: 'version', parameters: { type: 'object' }, danger: 'safe', effect: 'read' }],
    }),
  );
  fs.writeFileSync(path.join(packs, 'hot', 'index.js'), 'export const tools = { ver: () => 0 };');
  const child = spawn(process.execPath, [HOST, path.join(base, 'root'), path.join(base, 'data'), packs], { stdio: ['pipe', 'pipe', 'pipe'] });
  // The host logs one line per reload (50 of them here): pass on only what is not that.
  child.stderr.setEncoding('utf8').on('data', (text: string) => {
    const rest = text
      .split('\n')
      .filter((l) => l && !/ reloaded in \d+ ms /.test(l))
      .join('\n');
    if (rest) process.stderr.write(`${rest}\n`);
  });
  const host = new Host(child);
  await host.wait((m) => m.ready === true);

  const latencies: number[] = [];
  const plain: number[] = [];
  for (let v = 1; v <= saves; v++) {
    const t0 = performance.now();
    await host.call('ver');
    plain.push(performance.now() - t0);

    const saved = performance.now();
    fs.writeFileSync(path.join(packs, 'hot', 'index.js'), `export const tools = { ver: () => ${v} };`);
    for (;;) {
      const r = await host.call('ver');
      if (r.ok && r.value === v) break;
      await new Promise((r) => setTimeout(r, 5));
    }
    latencies.push(performance.now() - saved);
  }
  host.stop();
  fs.rmSync(base, { recursive: true, force: true });
  const sorted = [...latencies].sort((a, b) => a - b);
  console.log(`\nHot reload: save pack code -> new behaviour callable, ${saves} saves`);
  console.log(
    `  reload latency  p50 ${percentile(sorted, 50).toFixed(1)} ms   p95 ${percentile(sorted, 95).toFixed(1)} ms   (target p50 < 300 ms; includes the ${100} ms debounce)`,
  );
  console.log(`  baseline: a call with no reload, p50 ${median(plain).toFixed(2)} ms`);
}

/** Kernel start-up: create + load every built-in pack and skill, vs an empty kernel; fresh processes. */
export async function benchStartup(runs = 10): Promise<void> {
  const kernelUrl = new URL('../kernel/index.js', import.meta.url).href;
  const script = (withPacks: boolean) => `
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const { createKernel } = await import(${JSON.stringify(kernelUrl)});
    const fs = await import('node:fs'); const os = await import('node:os'); const path = await import('node:path');
    const base = fs.mkdtempSync(path.join(os.tmpdir(), 'memo-bench-start-'));
    const k = createKernel({ root: base, dataDir: path.join(base, 'data'), logger: { info() {}, warn() {}, error() {} } });
    ${withPacks ? `await k.loadPacks([{ dir: ${JSON.stringify(BUILTIN)}, source: 'builtin' }]); await k.loadSkills([{ dir: ${JSON.stringify(path.resolve(here, '../skills'))}, source: 'builtin' }]);` : ''}
    const ms = performance.now() - t0;
    const used = process.cpuUsage(c0);
    const tools = k.registry.list().length;
    await k.shutdown();
    fs.rmSync(base, { recursive: true, force: true });
    process.stdout.write(JSON.stringify({ ms, cpuMs: (used.user + used.system) / 1000, tools }));
  `;
  const once = async (withPacks: boolean) => {
    const out = await new Promise<string>((resolve, reject) => {
      const c = spawn(process.execPath, ['--input-type=module', '-e', script(withPacks)], { stdio: ['ignore', 'pipe', 'inherit'] });
      let s = '';
      c.stdout.on('data', (d) => (s += d));
      c.on('exit', (code) => (code === 0 ? resolve(s) : reject(new Error(`startup run exited ${code}`))));
    });
    return JSON.parse(out) as { ms: number; cpuMs: number; tools: number };
  };
  // Interleaved (empty, full, empty, full, ...): on a shared machine the load drifts, and the ratio
  // should not depend on which side ran in the busier minute.
  const times = { empty: [] as number[], full: [] as number[] };
  const cpu = { empty: [] as number[], full: [] as number[] };
  const tools = { empty: 0, full: 0 };
  for (let i = 0; i < runs; i++) {
    for (const side of ['empty', 'full'] as const) {
      const r = await once(side === 'full');
      times[side].push(r.ms);
      cpu[side].push(r.cpuMs);
      tools[side] = r.tools;
    }
  }
  const empty = { ms: median(times.empty), cpuMs: median(cpu.empty), tools: tools.empty };
  const full = { ms: median(times.full), cpuMs: median(cpu.full), tools: tools.full };
  console.log(`\nKernel start-up (import + create + load), median of ${runs} fresh processes each, interleaved (load ${os.loadavg()[0]!.toFixed(2)})`);
  console.log(`  empty kernel:                 ${empty.ms.toFixed(1)} ms (${empty.tools} kernel tools)`);
  console.log(`  every built-in pack + skill:  ${full.ms.toFixed(1)} ms (${full.tools} tools)   ratio ${(full.ms / empty.ms).toFixed(2)}x`);
  // CPU time (all threads) over the same span: the work done, which a busy machine moves less than the wall clock.
  console.log(`  CPU time, empty / full:       ${empty.cpuMs.toFixed(1)} / ${full.cpuMs.toFixed(1)} ms   ratio ${(full.cpuMs / empty.cpuMs).toFixed(2)}x`);
}
