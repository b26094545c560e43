import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { verifyAuditFile } from '../../../kernel/audit/audit-verify.js';
import type { AuditLog } from '../../../kernel/audit/audit-log.js';
import type { AuditRecord } from '../../../kernel/audit/audit-record.js';
import { requireFreshBuild } from '../../helpers/dist.js';
import { makeKernel, tempDir, type Fixture } from '../../helpers/kernel-fixture.js';
import { lines } from './helpers.js';

/** Counts the audit log's writes: every append is one appendBatch (one lock, one write(2)). */
function countWrites(log: AuditLog): number[] {
  const batches: number[] = [];
  const original = log.appendBatch.bind(log);
  log.appendBatch = (records: readonly AuditRecord[]) => {
    batches.push(records.length);
    return original(records);
  };
  return batches;
}

const ids = (file: string): string[] => lines(file).map((l) => (JSON.parse(l) as { id?: string }).id ?? '');

describe('audit group commit', () => {
  let fx: Fixture | undefined;
  const made: string[] = [];
  afterEach(async () => {
    await fx?.close();
    fx = undefined;
    for (const d of made.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });

  it('16 calls finishing in the same turn share one write, each line is in the file when its call returns, and the chain verifies', async () => {
    fx = makeKernel();
    const file = path.join(fx.dataDir, 'agent-audit.jsonl');
    const before = lines(file).length;
    const writes = countWrites(fx.kernel.audit as AuditLog);
    const seenAtReturn: boolean[] = [];
    const results = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        fx!.kernel.invoke({ tool: 'echo_safe', args: { text: `t${i}` }, caller: { kind: 'agent' } }).then((r) => {
          seenAtReturn.push(ids(file).includes(r.callId));
          return r;
        }),
      ),
    );
    expect(results.every((r) => r.ok)).toBe(true);
    expect(seenAtReturn).toEqual(Array.from({ length: 16 }, () => true));
    expect(writes).toEqual([16]);
    const written = ids(file).slice(before);
    expect(written).toHaveLength(16);
    expect(new Set(written)).toEqual(new Set(results.map((r) => r.callId)));
    expect(verifyAuditFile(file)).toMatchObject({ ok: true, entries: 16 });
  });

  it('calls finishing in different turns each get exactly one line, and the chain verifies', async () => {
    fx = makeKernel({
      packs: [
        {
          id: 'slow',
          tools: [
            {
              spec: {
                name: 'wait_then_echo',
                description: 'waits n ms',
                danger: 'safe',
                effect: 'read',
                parameters: { type: 'object', properties: { n: { type: 'integer' } } },
              },
              impl: ({ n }) => new Promise((r) => setTimeout(() => r(n), Number(n))),
            },
          ],
        },
      ],
    });
    const file = path.join(fx.dataDir, 'agent-audit.jsonl');
    const finished: string[] = [];
    const delays = [30, 5, 20, 0, 10, 0, 25, 5];
    await Promise.all(
      delays.map((n) => fx!.kernel.invoke({ tool: 'wait_then_echo', args: { n }, caller: { kind: 'agent' } }).then((r) => finished.push(r.callId))),
    );
    const inFile = ids(file);
    expect(inFile).toHaveLength(finished.length);
    expect(new Set(inFile)).toEqual(new Set(finished));
    expect(verifyAuditFile(file)).toMatchObject({ ok: true, entries: delays.length });
  });

  it('a lone call is written at once, in its own write', async () => {
    fx = makeKernel();
    const writes = countWrites(fx.kernel.audit as AuditLog);
    const r = await fx.kernel.invoke({ tool: 'echo_safe', args: { text: 'x' }, caller: { kind: 'agent' } });
    expect(writes).toEqual([1]);
    expect(ids(path.join(fx.dataDir, 'agent-audit.jsonl'))).toContain(r.callId);
  });

  it('a kernel killed with SIGKILL as soon as some of 32 concurrent calls return keeps the line of every call that returned, and the chain verifies', async () => {
    requireFreshBuild();
    const dir = tempDir('memo-group-commit-');
    made.push(dir);
    const root = path.join(dir, 'root');
    const data = path.join(dir, 'data');
    fs.mkdirSync(root);
    const script = path.join(dir, 'child.mjs');
    const kernelUrl = new URL('../../../dist/kernel/index.js', import.meta.url).href;
    fs.writeFileSync(
      script,
      `import * as fs from 'node:fs';
      const { createKernel } = await import(${JSON.stringify(kernelUrl)});
      const kernel = createKernel({ root: ${JSON.stringify(root)}, dataDir: ${JSON.stringify(data)}, rateLimits: { maxCalls: 0, duplicateCooldownMs: 0 },
        logger: { info() {}, warn() {}, error() {} },
        packs: [{ id: 'bench', tools: [{ spec: { name: 'later', description: 'resolves after n ms', danger: 'safe', effect: 'read',
          parameters: { type: 'object', properties: { n: { type: 'integer' } } } }, impl: ({ n }) => new Promise((r) => setTimeout(() => r(n), n)) }] }] });
      let returned = 0;
      for (let i = 0; i < 32; i++) {
        kernel.invoke({ tool: 'later', args: { n: i % 4 }, caller: { kind: 'agent' } }).then((r) => {
          // Said before anything else can run: the parent learns exactly which calls had returned.
          fs.writeSync(1, r.callId + '\\n');
          if (++returned === 12) process.kill(process.pid, 'SIGKILL');
        });
      }
      `,
    );
    const child = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    const { signal } = await new Promise<{ signal: NodeJS.Signals | null }>((resolve) => child.once('close', (_code, sig) => resolve({ signal: sig })));
    expect(signal).toBe('SIGKILL');
    const returnedIds = out.split('\n').filter(Boolean);
    expect(returnedIds).toHaveLength(12);
    const file = path.join(data, 'agent-audit.jsonl');
    const inFile = ids(file);
    for (const id of returnedIds) expect(inFile).toContain(id);
    expect(new Set(inFile).size).toBe(inFile.length);
    const report = verifyAuditFile(file);
    expect(report).toMatchObject({ ok: true, torn: [] });
    expect(report.entries).toBe(inFile.length);
  });
});
