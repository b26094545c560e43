/**
 * Searching the whole file trail (audit-search.ts through AuditLog.search/lines): 10,000 lines, far
 * more than the 1,000 the log keeps in memory, paged by cursor in both directions with the total
 * counted, filtered by tool prefix, caller, outcome, kind, time and free text, and exported.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { AuditLog } from '../../../kernel/audit/audit-log.js';
import type { AuditEntry, AuditEvent, AuditLine } from '../../../kernel/audit/audit-record.js';
import { auditSearchQuery, searchAuditFile, searchAuditRecords } from '../../../kernel/audit/audit-search.js';
import { auditTempDir, record, removeTempDirs } from './helpers.js';

const N = 10_000;
let file: string;
let log: AuditLog;

/** The call number of an entry (`call-<i>`). */
const num = (e: AuditLine): number => Number((e as AuditEntry).id.slice(5));
/** from, from±1, ... to (down when to < from). */
const range = (from: number, to: number): number[] => Array.from({ length: Math.abs(to - from) + 1 }, (_, k) => (to < from ? from - k : from + k));

beforeAll(() => {
  file = path.join(auditTempDir(), 'agent-audit.jsonl');
  log = new AuditLog(file);
  log.open();
  for (let i = 1; i <= N; i += 500) {
    log.appendBatch(
      Array.from({ length: 500 }, (_, k) => {
        const n = i + k;
        // Every 10th call is a vault tool from an MCP client; every 100th was refused; call 7777 names a rare word.
        return record(n, {
          ...(n % 10 === 0 ? { tool: 'vault_search_notes', pack: 'vault', caller: { kind: 'mcp', id: 'Claude Desktop' } } : {}),
          ...(n % 100 === 0 ? { decision: 'deny:once', outcome: 'error' as const, error: { code: 'PERMISSION_DENIED', message: 'denied' } } : {}),
          ...(n === 7777 ? { args: { path: 'quarterly-Zebra-report.md' } } : {}),
        });
      }),
    );
  }
  log.admin({ action: 'permission.allow', by: 'console', target: 'write_file', change: { scope: 'forever' } });
});
afterAll(() => {
  log.close();
  removeTempDirs();
});

describe('audit search over the whole file trail', () => {
  it('keeps only 1,000 entries in memory, yet pages all 10,000 calls with their total, newest first', async () => {
    expect(log.tail().length).toBeLessThanOrEqual(2000);
    const page = await log.search({ kind: 'calls', limit: 100 });
    expect([page.total, page.newerCount, page.newer, page.entries.map(num)]).toEqual([N, 0, null, range(N, N - 99)]);
    expect(page.older).toEqual(expect.stringMatching(/^older:\d+$/));
    expect(page.scanned).toBe(N + 1); // every line was read once (the admin event too)
  });

  it('walks older to the middle, back newer, and jumps to the oldest page', async () => {
    let page = await log.search({ kind: 'calls', limit: 100 });
    for (let k = 0; k < 50; k++) page = await log.search({ kind: 'calls', limit: 100, cursor: page.older! });
    expect([page.newerCount, page.entries.map(num)]).toEqual([5000, range(5000, 4901)]);
    const newer = await log.search({ kind: 'calls', limit: 100, cursor: page.newer! });
    expect([newer.newerCount, newer.entries.map(num)]).toEqual([4900, range(5100, 5001)]);
    const oldest = await log.search({ kind: 'calls', limit: 100, cursor: 'oldest' });
    expect([oldest.newerCount, oldest.older, oldest.entries.map(num)]).toEqual([N - 100, null, range(100, 1)]);
    const back = await log.search({ kind: 'calls', limit: 100, cursor: oldest.newer! });
    expect(back.entries.map(num)).toEqual(range(200, 101));
  });

  it('filters by tool prefix, caller, outcome and time, counting every match', async () => {
    const vault = await log.search({ tool: 'vault_', limit: 5 });
    expect([vault.total, vault.entries.map(num)]).toEqual([N / 10, [10000, 9990, 9980, 9970, 9960]]);
    expect((await log.search({ tool: 'write', kind: 'calls' })).total).toBe(N / 2 - N / 10);
    expect((await log.search({ caller: 'claude' })).total).toBe(N / 10);
    const denied = await log.search({ outcome: 'denied', limit: 3 });
    expect([denied.total, denied.entries.map(num)]).toEqual([N / 100, [10000, 9900, 9800]]);
    expect((await log.search({ outcome: 'ok', kind: 'calls' })).total).toBe(N - N / 100);
    // record(i) is at i seconds past 2026-01-01T00:00:00Z.
    const hour = await log.search({ kind: 'calls', since: '2026-01-01T01:00:00Z', until: '2026-01-01T01:59:59Z', limit: 1 });
    expect([hour.total, hour.entries.map(num)]).toEqual([3600, [7199]]);
  });

  it('finds free text in any case inside the masked arguments, and a change by its kind and face', async () => {
    const zebra = await log.search({ text: 'zebra' });
    expect([zebra.total, zebra.entries.map(num)]).toEqual([1, [7777]]);
    const changes = await log.search({ kind: 'changes' });
    expect([changes.total, changes.entries.map((e) => [(e as AuditEvent).action, (e as AuditEvent).target])]).toEqual([
      1,
      [['permission.allow', 'write_file']],
    ]);
    expect((await log.search({ kind: 'changes', caller: 'console', tool: 'write' })).total).toBe(1);
    expect((await log.search({ text: 'no such words anywhere' })).entries).toEqual([]);
  });

  it('gives the newest page, marked restarted, for a cursor whose line is gone', async () => {
    const page = await log.search({ kind: 'calls', limit: 10, cursor: 'older:123' });
    expect([page.restarted, page.entries.map(num)]).toEqual([true, range(N, N - 9)]);
  });

  it('exports every matching line exactly as written, oldest first', async () => {
    const out: string[] = [];
    await log.lines({ tool: 'vault_', outcome: 'denied' }, (raw) => void out.push(raw));
    const written = fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l.includes('"vault_search_notes"') && l.includes('"deny:once"'));
    expect(out).toEqual(written);
    expect(out.map((l) => num(JSON.parse(l)))).toEqual(Array.from({ length: N / 100 }, (_, k) => 100 * (k + 1)));
  });

  it('leaves out a torn last line, which has no newline yet', async () => {
    const dir = auditTempDir();
    const torn = path.join(dir, 'agent-audit.jsonl');
    fs.copyFileSync(file, torn);
    fs.appendFileSync(torn, '{"seq":99999,"ts":"2026-01-02T00:00:00.000Z","id":"call-99999","caller":{"kind":"ag');
    const page = await searchAuditFile(torn, { kind: 'calls', limit: 1 });
    expect([page.total, page.entries.map(num)]).toEqual([N, [N]]);
  });
});

describe('audit search queries from a URL', () => {
  it('refuses a bad outcome, kind, time, limit or cursor with a sentence', () => {
    const problem = (qs: string) => {
      const q = auditSearchQuery(new URLSearchParams(qs));
      return 'problem' in q ? q.problem : null;
    };
    expect([problem('outcome=maybe'), problem('kind=all'), problem('since=yesterday'), problem('limit=0'), problem('cursor=page-3')]).toEqual([
      'outcome must be ok, error or denied',
      'kind must be calls, changes or events',
      'since must be a date and time (ISO 8601)',
      'limit must be a whole number of at least 1',
      'cursor is not one this server gave out; start again from the newest page',
    ]);
    expect(auditSearchQuery(new URLSearchParams('tool=vault_&limit=5000&cursor=oldest'))).toEqual({ tool: 'vault_', limit: 1000, cursor: 'oldest' });
  });

  it("pages a host sink's kept records the same way when the sink cannot search", () => {
    const kept = range(1, 30).map((i) => record(i));
    const first = searchAuditRecords(kept, { limit: 10 });
    const second = searchAuditRecords(kept, { limit: 10, cursor: first.older! });
    expect([first.total, first.entries.map(num), second.entries.map(num)]).toEqual([30, range(30, 21), range(20, 11)]);
  });
});
