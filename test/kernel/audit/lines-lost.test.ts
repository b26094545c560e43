/**
 * A `lines-lost` gap event (written by a PostgreSQL-backed kernel once its database could be used
 * again) is explained in words by the file verifier, on a chain exported with `memo audit export`:
 * what was lost, the calls it names, and which instance recorded it; the same sentence the database
 * verifier gives (one wording function, lostLinesMessage).
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { encodeHead, GENESIS_HASH, HEAD_SIZE, headPathFor, KEY_FILE, readKey, sealLine } from '../../../kernel/audit/audit-chain.js';
import { formatVerifyReport, verifyAuditFile } from '../../../kernel/audit/audit-verify.js';
import { lostLinesMessage } from '../../../kernel/audit/audit-verify.js';
import { auditTempDir, record, removeTempDirs } from './helpers.js';

afterEach(removeTempDirs);

const INSTANCE = 'inst-7f3a';
const TS = '2026-01-01T00:05:00.000Z';

/** An exported chain: entry #1, a lines-lost gap event #2 with `lost`, entry #3, its head and key beside it. */
function exportedChain(lost: Record<string, unknown>, detail?: string): string {
  const dir = auditTempDir();
  fs.writeFileSync(path.join(dir, KEY_FILE), randomBytes(32).toString('hex') + '\n', { mode: 0o600 });
  const key = readKey(path.join(dir, KEY_FILE))!;
  const file = path.join(dir, `agent-audit.${INSTANCE}.jsonl`);
  const bodies: Array<Record<string, unknown>> = [
    { seq: 1, instance: INSTANCE, ...record(1) },
    { seq: 2, ts: TS, instance: INSTANCE, event: 'gap', pid: 4242, seen: 'lines-lost', lost, ...(detail ? { detail } : {}) },
    { seq: 3, instance: INSTANCE, ...record(3) },
  ];
  let prev = GENESIS_HASH;
  let text = '';
  let tag = '';
  for (const b of bodies) {
    const sealed = sealLine(key, prev, JSON.stringify({ ...b, prev }));
    text += sealed.line;
    prev = sealed.hash;
    tag = sealed.tag;
  }
  fs.writeFileSync(file, text);
  fs.writeFileSync(headPathFor(file), encodeHead({ seq: 3, size: Buffer.byteLength(text), hash: prev, tag }, Buffer.alloc(HEAD_SIZE)));
  return file;
}

describe('a lines-lost gap in an exported chain', () => {
  it('is explained by the file verifier: what was lost, the calls named, the instance and pid that recorded it, at which line', () => {
    const detail = `2 call lines could not be written between 2026-01-01T00:01:00.000Z and 2026-01-01T00:04:00.000Z (the database could not be used)`;
    const file = exportedChain(
      {
        lines: 2,
        calls: [
          { id: 'call-a', tool: 'echo_safe', outcome: 'ok' },
          { id: 'call-b', tool: 'touch_file', outcome: 'error' },
        ],
        from: '2026-01-01T00:01:00.000Z',
        to: '2026-01-01T00:04:00.000Z',
      },
      detail,
    );
    const report = verifyAuditFile(file);
    expect(report.ok).toBe(false);
    expect(report.gaps).toEqual([expect.objectContaining({ line: 2, seen: 'lines-lost', instance: INSTANCE, lost: expect.objectContaining({ lines: 2 }) })]);
    expect(report.problem).toEqual({
      line: 2,
      kind: 'removed',
      recorded: true,
      message: `agent-audit.${INSTANCE}.jsonl: lines are missing: ${detail} (calls: echo_safe call-a, touch_file call-b); a kernel of instance ${INSTANCE} (pid 4242) recorded it at ${TS} as line 2`,
    });
    expect(formatVerifyReport(report)).not.toContain('found lines-lost');
    expect(formatVerifyReport(report)).toMatch(/^GAP: agent-audit\.inst-7f3a\.jsonl: lines are missing: 2 call lines could not be written between/);
  });

  it('names the first ten calls and counts the rest (also those the event only counted), and says how many lines when the event has no detail', () => {
    const calls = Array.from({ length: 12 }, (_, i) => ({ id: `c${i}`, tool: 'echo_safe', outcome: 'ok' }));
    const file = exportedChain({ lines: 15, calls, unlisted: 3, from: TS, to: TS });
    const message = verifyAuditFile(file).problem?.message ?? '';
    expect(message).toContain('lines are missing: 15 lines could not be written (the database could not be used) (calls: echo_safe c0, ');
    expect(message).toContain('echo_safe c9 and 5 more)');
    expect(message).not.toContain('c10');
  });

  it('reads the same in the database verifier, which names the entry instead of the line', () => {
    const gap = {
      line: 7,
      seen: 'lines-lost',
      pid: 9,
      ts: TS,
      instance: INSTANCE,
      detail: '1 call line could not be written',
      lost: { lines: 1, calls: [{ id: 'x1', tool: 'echo_safe' }], from: TS, to: TS },
    };
    expect(lostLinesMessage(gap, 'entry #7')).toBe(
      `lines are missing: 1 call line could not be written (calls: echo_safe x1); a kernel of instance ${INSTANCE} (pid 9) recorded it at ${TS} as entry #7`,
    );
  });
});
