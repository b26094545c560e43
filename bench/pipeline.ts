import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { printTable, summarise } from './stats.js';
import { noopKernel } from './noop-kernel.js';

/**
 * Pipeline overhead: a no-op `safe` tool called through the kernel (validate, rate limiter with
 * limits off, gate, run, audit to a real file) against calling its handler directly, same run.
 */
export async function benchPipeline(calls = 100_000): Promise<{ overheadP50us: number; ratio: number }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memo-bench-'));
  const root = path.join(dir, 'root');
  fs.mkdirSync(root);
  // Typed as the kernel sees a tool's result (unknown, maybe a promise): the direct calls await it as the pipeline does.
  const handler = (args: Record<string, unknown>): unknown => ({ ok: true, n: args.n });
  const kernel = noopKernel(root, path.join(dir, 'data'), handler);

  const direct = new Float64Array(calls);
  const piped = new Float64Array(calls);
  const warm = Math.min(5000, calls);
  for (let i = 0; i < warm; i++) {
    await handler({ n: i });
    await kernel.invoke({ tool: 'noop', args: { n: i }, caller: { kind: 'host' } });
  }

  let t0 = process.hrtime.bigint();
  const directStart = t0;
  for (let i = 0; i < calls; i++) {
    await handler({ n: i });
    const t1 = process.hrtime.bigint();
    direct[i] = Number(t1 - t0) / 1000;
    t0 = t1;
  }
  const directMs = Number(process.hrtime.bigint() - directStart) / 1e6;

  t0 = process.hrtime.bigint();
  const pipeStart = t0;
  for (let i = 0; i < calls; i++) {
    const r = await kernel.invoke({ tool: 'noop', args: { n: i }, caller: { kind: 'host' } });
    if (!r.ok) throw new Error(`bench call failed: ${r.error.message}`);
    const t1 = process.hrtime.bigint();
    piped[i] = Number(t1 - t0) / 1000;
    t0 = t1;
  }
  const pipeMs = Number(process.hrtime.bigint() - pipeStart) / 1e6;
  await kernel.shutdown();
  const auditLines = fs
    .readFileSync(path.join(dir, 'data', 'agent-audit.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean).length;
  fs.rmSync(dir, { recursive: true, force: true });

  const d = summarise('handler called directly (baseline)', direct, directMs);
  const p = summarise('through the pipeline, audit on', piped, pipeMs);
  printTable(`Pipeline overhead, ${calls} calls of a no-op safe tool (audit lines written: ${auditLines})`, [d, p]);
  const overheadP50us = p.p50us - d.p50us;
  const ratio = d.callsPerSec / p.callsPerSec;
  console.log(`overhead p50: ${overheadP50us.toFixed(2)} us per call (target < 25 us); throughput ratio baseline/pipeline: ${ratio.toFixed(1)}x`);
  return { overheadP50us, ratio };
}
