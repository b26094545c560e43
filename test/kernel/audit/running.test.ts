import * as fs from 'node:fs';
import * as path from 'node:path';
import { AuditLog } from '../../../kernel/audit/audit-log.js';
import { formatVerifyReport, verifyAuditFile } from '../../../kernel/audit/audit-verify.js';
import { lines, record, removeTempDirs, writeLines, writeLog } from './helpers.js';
import { nth } from '../../helpers/nth.js';

/** A log of 5 entries, open as a running kernel would hold it (checking its path on every append). */
function running(): { file: string; dir: string; log: AuditLog } {
  const file = writeLog(5);
  const log = new AuditLog(file, { pathCheckMs: 0 });
  log.open();
  return { file, dir: path.dirname(file), log };
}

describe('a running audit log whose file is cut, emptied, replaced or deleted under it', () => {
  const open: AuditLog[] = [];
  afterEach(() => {
    for (const log of open.splice(0)) log.close();
    removeTempDirs();
  });
  const start = () => {
    const r = running();
    open.push(r.log);
    return r;
  };

  it('file replaced (renamed over): reopens the new file, records the gap, saves the old content; verify explains it', () => {
    const { file, dir, log } = start();
    fs.writeFileSync(path.join(dir, 'forged.jsonl'), '');
    fs.renameSync(path.join(dir, 'forged.jsonl'), file);
    log.append(record(6));
    expect(log.events).toEqual([expect.objectContaining({ event: 'gap', seen: 'replaced', seq: 6, missing: { from: 1, to: 5 } })]);
    const ls = lines(file).map((l) => JSON.parse(l));
    expect(ls.map((e) => [e.seq, e.event ?? e.id])).toEqual([
      [6, 'gap'],
      [7, 'call-6'],
    ]);
    const r = verifyAuditFile(file);
    expect(r).toMatchObject({ ok: false, entries: 1, events: 1, problem: { kind: 'replaced', line: 1, recorded: true } });
    expect(r.problem!.message).toMatch(
      /^entries #1 to #5 are missing from agent-audit.jsonl: a kernel \(pid \d+\) found it replaced by another file at .+ and recorded it at line 1; it saved what it still held of the old file to agent-audit.recovered-.+\.jsonl$/,
    );
    expect(formatVerifyReport(r)).toMatch(/^GAP: entries #1 to #5 are missing/);
    // The saved copy is the old log, whole, and verifies on its own.
    const saved = path.join(dir, ls[0].recoveredTo);
    expect(verifyAuditFile(saved)).toMatchObject({ ok: true, entries: 5, head: { seq: 5 } });
  });

  it('file unlinked: recreates it, records the gap with what was lost; verify explains it', () => {
    const { file, dir, log } = start();
    fs.rmSync(file);
    log.append(record(6));
    log.append(record(7));
    expect(log.events).toEqual([expect.objectContaining({ event: 'gap', seen: 'deleted', missing: { from: 1, to: 5 } })]);
    const r = verifyAuditFile(file);
    expect(r).toMatchObject({ ok: false, entries: 2, lastSeq: 8, problem: { kind: 'deleted', recorded: true } });
    expect(r.problem!.message).toMatch(/entries #1 to #5 are missing from agent-audit.jsonl: a kernel \(pid \d+\) found it deleted/);
    expect(fs.readdirSync(dir).filter((n) => n.startsWith('agent-audit.recovered-') && n.endsWith('.jsonl'))).toHaveLength(1);
  });

  it('file emptied in place: records the gap on the next append', () => {
    const { file, log } = start();
    fs.truncateSync(file, 0);
    log.append(record(6));
    expect(log.events).toEqual([expect.objectContaining({ seen: 'emptied', missing: { from: 1, to: 5 } })]);
    expect(verifyAuditFile(file).problem).toMatchObject({ kind: 'emptied', recorded: true, line: 1 });
  });

  it('tail cut in place: records which entries went missing, and the chain continues after the cut', () => {
    const { file, log } = start();
    writeLines(file, lines(file).slice(0, 3));
    log.append(record(6));
    expect(log.events).toEqual([expect.objectContaining({ seen: 'cut-tail', missing: { from: 4, to: 5 }, seq: 6 })]);
    const r = verifyAuditFile(file);
    expect(r).toMatchObject({ ok: false, entries: 4, problem: { kind: 'cut-tail', recorded: true, line: 4 } });
    expect(r.problem!.message).toMatch(/^entries #4 to #5 are missing from agent-audit.jsonl: a kernel \(pid \d+\) found its end cut off/);
  });

  it('file moved away and a new one put in its place: records the gap and says the old file still exists', () => {
    const { file, dir, log } = start();
    fs.renameSync(file, path.join(dir, 'moved.jsonl'));
    fs.writeFileSync(file, '');
    log.append(record(6));
    expect(log.events).toEqual([expect.objectContaining({ seen: 'replaced', detail: expect.stringMatching(/still exists under another name/) })]);
    expect(verifyAuditFile(file).problem).toMatchObject({ kind: 'replaced', recorded: true });
  });

  it('with the default path check (every 100 ms), a replaced file is noticed and nothing written meanwhile is lost', async () => {
    const file = writeLog(5);
    const dir = path.dirname(file);
    const log = new AuditLog(file);
    log.open();
    open.push(log);
    fs.writeFileSync(path.join(dir, 'forged.jsonl'), '');
    fs.renameSync(path.join(dir, 'forged.jsonl'), file);
    let i = 6;
    for (const deadline = Date.now() + 10_000; log.events.length === 0 && Date.now() < deadline; i++) {
      log.append(record(i));
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(log.events).toEqual([expect.objectContaining({ seen: 'replaced' })]);
    // Lines appended before the check went to the old (unlinked) file: they are in the saved copy.
    const saved = path.join(dir, nth(log.events, 0).recoveredTo!);
    const savedSeqs = lines(saved).map((l) => JSON.parse(l).seq);
    const newSeqs = lines(file).map((l) => JSON.parse(l).seq);
    // Records 6..i-1 were appended; the gap event took a number of its own (the first line of the new file).
    expect(newSeqs[0]).toBe(nth(log.events, 0).seq);
    expect([...savedSeqs, ...newSeqs.slice(1)]).toEqual(Array.from({ length: i }, (_, k) => k + 1).filter((s) => s !== newSeqs[0]));
  });

  it('a deleted head is recreated by the running kernel: nothing was lost, verify passes', () => {
    const { file, dir, log } = start();
    fs.rmSync(path.join(dir, 'agent-audit.head'));
    log.append(record(6));
    log.close();
    expect(log.events).toEqual([]);
    expect(verifyAuditFile(file)).toMatchObject({ ok: true, entries: 6, head: { seq: 6 } });
  });

  it('two logs in one process on the replaced file record one gap, not two', () => {
    const { file, dir, log } = start();
    const other = new AuditLog(file, { pathCheckMs: 0 });
    other.open();
    open.push(other);
    fs.rmSync(file);
    log.append(record(6));
    other.append(record(7));
    expect(log.events).toHaveLength(1);
    expect(other.events).toHaveLength(0);
    expect(lines(file).map((l) => JSON.parse(l).seq)).toEqual([6, 7, 8]);
    expect(fs.readdirSync(dir).filter((n) => n.startsWith('agent-audit.recovered-') && n.endsWith('.jsonl'))).toHaveLength(1);
  });
});

describe('a log changed while no kernel was running, then opened', () => {
  afterEach(removeTempDirs);

  it('a cut tail found on open is recorded, so verify explains it', () => {
    const file = writeLog(8);
    writeLines(file, lines(file).slice(0, 6));
    expect(verifyAuditFile(file).problem).toMatchObject({ kind: 'cut-tail' });
    expect(verifyAuditFile(file).problem!.recorded).toBeUndefined();
    const log = new AuditLog(file);
    log.open();
    log.close();
    expect(log.events).toEqual([expect.objectContaining({ seen: 'cut-tail', missing: { from: 7, to: 8 }, seq: 9 })]);
    expect(verifyAuditFile(file).problem).toMatchObject({ kind: 'cut-tail', recorded: true, line: 7 });
  });

  it('a deleted log found on open is recorded as deleted', () => {
    const file = writeLog(3);
    fs.rmSync(file);
    const log = new AuditLog(file);
    log.open();
    log.close();
    expect(log.events).toEqual([expect.objectContaining({ seen: 'deleted', missing: { from: 1, to: 3 }, seq: 4 })]);
    expect(verifyAuditFile(file).problem).toMatchObject({ kind: 'deleted', recorded: true, line: 1 });
  });

  it('a deleted head found on open is recorded (a cut tail before it cannot be ruled out)', () => {
    const file = writeLog(3);
    fs.rmSync(path.join(path.dirname(file), 'agent-audit.head'));
    const log = new AuditLog(file);
    log.open();
    log.close();
    expect(log.events).toEqual([expect.objectContaining({ seen: 'head-missing' })]);
    expect(verifyAuditFile(file).problem).toMatchObject({ kind: 'head', recorded: true });
  });

  it('a forged line at the end is not chained over silently: the writer records it and verify names the line', () => {
    const file = writeLog(3);
    const ls = lines(file);
    const forged = JSON.parse(nth(ls, 2));
    forged.seq = 4;
    forged.prev = forged.hash;
    ls.push(JSON.stringify(forged));
    writeLines(file, ls);
    const log = new AuditLog(file);
    log.open();
    log.close();
    expect(log.events).toEqual([expect.objectContaining({ seen: 'foreign-line' })]);
    const r = verifyAuditFile(file);
    expect(r.problem).toMatchObject({ kind: 'altered', line: 4 });
    expect(r.problem!.recorded).toBeUndefined();
  });

  it('a torn last line is closed by a recovery event; a torn line with no recovery event after it is tampering', () => {
    const file = writeLog(4);
    fs.appendFileSync(file, '{"seq":5,"ts":"2026-01-01T00:0');
    const log = new AuditLog(file);
    log.open();
    log.append(record(5));
    log.close();
    expect(verifyAuditFile(file)).toMatchObject({ ok: true, torn: [5], events: 1, entries: 5 });
    // Remove the recovery event: the torn line now sits in the middle with nothing to explain it.
    const ls = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean);
    ls.splice(5, 1);
    writeLines(file, ls);
    expect(verifyAuditFile(file).problem).toMatchObject({ kind: 'torn', line: 5 });
  });
});
