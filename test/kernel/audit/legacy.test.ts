import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { AuditLog } from '../../../kernel/audit/audit-log.js';
import { formatVerifyReport, verifyAuditFile } from '../../../kernel/audit/audit-verify.js';
import { GENESIS_HASH } from '../../../kernel/audit/audit-chain.js';
import { auditTempDir, lines, record, removeTempDirs, writeLines } from './helpers.js';
import { nth } from '../../helpers/nth.js';

const plain = (prev: string, body: string) => createHash('sha256').update(prev).update('\n').update(body).digest('hex');

/** A log exactly as the writer before the keyed chain wrote it: plain SHA-256 links, no key, no head. */
function legacyLines(n: number, first = 1, prev = GENESIS_HASH): string[] {
  const out: string[] = [];
  for (let seq = first; seq < first + n; seq++) {
    const body = JSON.stringify({ seq, ...record(seq), prev });
    prev = plain(prev, body);
    out.push(body.slice(0, -1) + `,"hash":"${prev}"}`);
  }
  return out;
}

function legacyLog(n: number): string {
  const file = path.join(auditTempDir(), 'agent-audit.jsonl');
  writeLines(file, legacyLines(n));
  return file;
}

describe('upgrading a log written before the keyed chain', () => {
  afterEach(removeTempDirs);

  it('before any kernel opens it: verify passes with an UNKEYED warning, no false tamper alarm', () => {
    const file = legacyLog(4);
    const r = verifyAuditFile(file);
    expect(r).toMatchObject({ ok: true, entries: 4, legacy: { entries: 4, lines: 4 } });
    expect(formatVerifyReport(r)).toMatch(/^OK: 4 entries, unkeyed chain intact\.\nUNKEYED: the 4 entries carry plain hashes/);
  });

  it('the first open writes a keyed-chain-start event that pins the old entries; later appends are keyed; verify passes', () => {
    const file = legacyLog(4);
    const log = new AuditLog(file);
    log.open();
    expect(log.tail().map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    log.append(record(5));
    log.close();
    expect(JSON.parse(nth(lines(file), 4))).toMatchObject({ seq: 5, event: 'keyed-chain-start', legacyEntries: 4 });
    const r = verifyAuditFile(file);
    expect(r).toMatchObject({ ok: true, entries: 5, events: 1, lastSeq: 6, legacy: { entries: 4, lines: 4, sealedByLine: 5 }, head: { seq: 6 } });
    expect(r.warning).toBeUndefined();
    expect(formatVerifyReport(r)).toMatch(/the first 4 entries were written before the keyed chain \(unkeyed hashes\), pinned by the keyed chain from line 5/);
    expect(fs.statSync(path.join(path.dirname(file), 'audit.key')).mode & 0o777).toBe(0o600);
  });

  it('after the upgrade, rewriting the old entries even with recomputed hashes is caught at the pin', () => {
    const file = legacyLog(4);
    const log = new AuditLog(file);
    log.open();
    log.append(record(5));
    log.close();
    const ls = lines(file);
    // The old entries with one changed and the plain chain recomputed from there on.
    const forged = legacyLines(4);
    let prev = GENESIS_HASH;
    for (let i = 0; i < 4; i++) {
      const e = JSON.parse(nth(forged, i));
      delete e.hash;
      e.prev = prev;
      if (i === 1) e.summary = 'forged';
      const body = JSON.stringify(e);
      prev = plain(prev, body);
      ls[i] = body.slice(0, -1) + `,"hash":"${prev}"}`;
    }
    writeLines(file, ls);
    expect(verifyAuditFile(file).problem).toMatchObject({ kind: 'altered', line: 4, entry: 4 });
  });

  it('a torn line left in the middle by the old writer (closed with a newline, followed by entries) is still accepted', () => {
    const file = path.join(auditTempDir(), 'agent-audit.jsonl');
    const first = legacyLines(3);
    const lastHash = JSON.parse(nth(first, 2)).hash;
    writeLines(file, [...first, '{"seq":4,"ts":"2026-01-01T00:00:04.000Z","id":"ca', ...legacyLines(2, 4, lastHash)]);
    expect(verifyAuditFile(file)).toMatchObject({ ok: true, entries: 5, torn: [4] });
    const log = new AuditLog(file);
    log.open();
    log.close();
    expect(verifyAuditFile(file)).toMatchObject({ ok: true, entries: 5, events: 1, torn: [4] });
  });

  it('an old log that ends in a torn line: the keyed-chain-start event closes it', () => {
    const file = legacyLog(3);
    fs.appendFileSync(file, '{"seq":4,"ts":"2026-01');
    const log = new AuditLog(file);
    log.open();
    log.close();
    expect(log.events).toEqual([expect.objectContaining({ event: 'keyed-chain-start', torn: true, seq: 4, legacyEntries: 3 })]);
    expect(verifyAuditFile(file)).toMatchObject({ ok: true, entries: 3, events: 1, torn: [4] });
  });

  it('two processes opening an old log at once end up with one key and one keyed-chain-start', () => {
    const file = legacyLog(2);
    const a = new AuditLog(file);
    const b = new AuditLog(file);
    a.open();
    b.open();
    b.append(record(3));
    a.append(record(4));
    a.close();
    b.close();
    expect([...a.events, ...b.events].map((e) => e.event)).toEqual(['keyed-chain-start']);
    expect(verifyAuditFile(file)).toMatchObject({ ok: true, entries: 4, events: 1 });
  });
});
