/**
 * `npm run bench audit-search`: one page of the console's audit search over a whole file trail of
 * 10,000 and 100,000 calls (audit-search.ts: one pass, counting every match, keeping one page, a
 * line parsed only when a filter needs its fields) against the baseline of reading the file whole
 * and parsing every line (what a viewer that loads the trail into memory does). Each case runs 5
 * times; the median is printed with the heap the call grew by at its peak sample.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { AuditLog } from '../kernel/audit/audit-log.js';
import type { AuditRecord } from '../kernel/audit/audit-record.js';
import { auditLineMatches, searchAuditFile, type AuditSearchQuery } from '../kernel/audit/audit-search.js';

function record(i: number): AuditRecord {
  return {
    ts: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
    id: `call-${i}`,
    caller: i % 10 === 0 ? { kind: 'mcp', id: 'Claude Desktop' } : { kind: 'agent', conversationId: `c-${i % 97}` },
    tool: i % 10 === 0 ? 'vault_search_notes' : i % 2 ? 'read_file' : 'write_file',
    pack: i % 10 === 0 ? 'vault' : 'fs-tools',
    args: { path: `notes/project-${i % 500}/file-${i}.md`, content: 'x'.repeat(120) },
    decision: i % 100 === 0 ? 'deny:once' : 'auto',
    outcome: i % 100 === 0 ? 'error' : 'ok',
    summary: `read ${i % 4000} bytes`,
    durationMs: 1.5,
  };
}

/** The baseline: the whole file read, every line parsed, filtered, the newest 100 kept. */
function naive(file: string, q: AuditSearchQuery): number {
  const all = fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Parameters<typeof auditLineMatches>[0])
    .filter((e) => auditLineMatches(e, q) && (!q.text || JSON.stringify(e).toLowerCase().includes(q.text)));
  return all.slice(-100).length + all.length;
}

async function median(fn: () => unknown): Promise<{ ms: number; heapMb: number }> {
  const times: number[] = [];
  let heap = 0;
  for (let k = 0; k < 5; k++) {
    global.gc?.();
    const before = process.memoryUsage().heapUsed;
    const t = performance.now();
    await fn();
    times.push(performance.now() - t);
    heap = Math.max(heap, process.memoryUsage().heapUsed - before);
  }
  times.sort((a, b) => a - b);
  return { ms: times[2]!, heapMb: heap / 2 ** 20 };
}

export async function benchAuditSearch(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memo-bench-audit-'));
  try {
    console.log('\nAudit search: one page of 100 from the whole file trail (median of 5; heap growth at the peak)');
    console.log('| lines | query | search ms | read-all baseline ms | ratio | search heap MB | baseline heap MB |');
    console.log('|---:|---|---:|---:|---:|---:|---:|');
    for (const n of [10_000, 100_000]) {
      const file = path.join(dir, `trail-${n}`, 'agent-audit.jsonl');
      const log = new AuditLog(file);
      log.open();
      for (let i = 1; i <= n; i += 1000) log.appendBatch(Array.from({ length: Math.min(1000, n - i + 1) }, (_, k) => record(i + k)));
      log.close();
      const queries: Array<[string, AuditSearchQuery]> = [
        ['newest page', { limit: 100 }],
        ['tool prefix vault_', { tool: 'vault_', limit: 100 }],
        ['words "project-42/"', { text: 'project-42/', limit: 100 }],
        ['denied, one hour', { outcome: 'denied', since: '2026-01-01T01:00:00Z', until: '2026-01-01T02:00:00Z', limit: 100 }],
      ];
      for (const [name, q] of queries) {
        const s = await median(() => searchAuditFile(file, q));
        const b = await median(() => naive(file, q));
        console.log(
          `| ${n.toLocaleString('en')} | ${name} | ${s.ms.toFixed(1)} | ${b.ms.toFixed(1)} | ${(b.ms / s.ms).toFixed(2)}x | ${s.heapMb.toFixed(1)} | ${b.heapMb.toFixed(1)} |`,
        );
      }
      console.log(`(${n.toLocaleString('en')} lines: ${(fs.statSync(file).size / 2 ** 20).toFixed(1)} MB)`);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
