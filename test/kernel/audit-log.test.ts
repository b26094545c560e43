import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { AuditLog } from '../../kernel/audit/audit-log.js';
import { verifyAuditFile } from '../../kernel/audit/audit-verify.js';
import { headPathFor, readHeadFile } from '../../kernel/audit/audit-chain.js';
import { AuditFileLock, AuditLockTimeout } from '../../kernel/audit/audit-lock.js';
import { waitFor } from '../helpers/wait.js';
import { auditTempDir, compileAuditModules, lines, record, removeTempDirs, writeLines, writeLog } from './audit/helpers.js';
import { nth } from '../helpers/nth.js';

describe('the audit log', () => {
  afterEach(removeTempDirs);

  it('survives a restart: the last 1000 entries are reloaded from the file tail and the chain continues', () => {
    const file = writeLog(1205);
    const log = new AuditLog(file);
    log.open();
    const tail = log.tail();
    expect(tail).toHaveLength(1000);
    expect(tail[0]?.seq).toBe(206);
    expect(tail.at(-1)!.seq).toBe(1205);
    log.append(record(1206));
    log.close();
    expect(verifyAuditFile(file)).toMatchObject({ ok: true, entries: 1206 });
  });

  it('filters the in-memory tail by tool and limit', () => {
    const file = writeLog(10);
    const log = new AuditLog(file);
    log.open();
    expect(log.tail({ tool: 'read_file', limit: 2 }).map((e) => e.seq)).toEqual([7, 9]);
    log.close();
  });

  it('tells onAppend listeners each batch after it is in the file, survives a throwing listener, and stops when told', () => {
    const file = writeLog(3);
    const log = new AuditLog(file);
    log.open();
    const heard: Array<{ seqs: number[]; inFile: boolean }> = [];
    const stop = log.onAppend((entries) => {
      const text = fs.readFileSync(file, 'utf8');
      heard.push({ seqs: entries.map((e) => e.seq), inFile: entries.every((e) => text.includes(`"seq":${e.seq},`)) });
    });
    const stopThrowing = log.onAppend(() => {
      throw new Error('a broken watcher');
    });
    log.append(record(4));
    log.appendBatch([record(5), record(6)]);
    stop();
    stopThrowing();
    log.append(record(7));
    log.close();
    expect(heard).toEqual([
      { seqs: [4], inFile: true },
      { seqs: [5, 6], inFile: true },
    ]);
    expect(verifyAuditFile(file)).toMatchObject({ ok: true, entries: 7 });
  });

  it('skips a torn last line on reload, closes it with a recovery event, and appends cleanly after it', () => {
    const file = writeLog(5);
    fs.appendFileSync(file, '{"seq":6,"ts":"2026-01-01T00:00:06.000Z","id":"call-6","cal');
    const log = new AuditLog(file);
    log.open();
    expect(log.tail().at(-1)!.seq).toBe(5);
    log.append(record(6));
    log.close();
    const report = verifyAuditFile(file);
    // The torn fragment (line 6) is followed by the kernel's torn-tail-recovered event (#6), then the new entry (#7).
    expect(report).toMatchObject({ ok: true, entries: 6, events: 1, lastSeq: 7, torn: [6] });
    expect(lines(file)).toHaveLength(8);
    expect(JSON.parse(nth(lines(file), 6))).toMatchObject({ seq: 6, event: 'torn-tail-recovered', torn: true });
  });

  it('reports the line that was altered', () => {
    const file = writeLog(6);
    const ls = lines(file);
    ls[2] = nth(ls, 2).replace('"f3.txt"', '"other.txt"');
    writeLines(file, ls);
    expect(verifyAuditFile(file)).toMatchObject({ ok: false, problem: { line: 3, kind: 'altered' } });
  });

  it('reports a line rewritten with a recomputed (unkeyed) hash as unkeyed', async () => {
    const file = writeLog(6);
    const ls = lines(file);
    const { createHash } = await import('node:crypto');
    const entry = JSON.parse(nth(ls, 2));
    entry.summary = 'forged';
    delete entry.hash;
    const body = JSON.stringify(entry);
    const hash = createHash('sha256').update(entry.prev).update('\n').update(body).digest('hex');
    ls[2] = body.slice(0, -1) + `,"hash":"${hash}"}`;
    writeLines(file, ls);
    expect(verifyAuditFile(file)).toMatchObject({ ok: false, problem: { line: 3, entry: 3, kind: 'unkeyed' } });
  });

  it('reports removed lines', () => {
    const file = writeLog(6);
    const ls = lines(file);
    ls.splice(3, 2);
    writeLines(file, ls);
    expect(verifyAuditFile(file)).toMatchObject({ ok: false, problem: { line: 4, kind: 'removed' } });
  });

  it('reports an inserted copy of a line', () => {
    const file = writeLog(6);
    const ls = lines(file);
    ls.splice(4, 0, nth(ls, 1));
    writeLines(file, ls);
    expect(verifyAuditFile(file).ok).toBe(false);
    expect(verifyAuditFile(file).problem!.line).toBe(5);
  });

  it('reports a hand-written line that is not an entry', () => {
    const file = writeLog(3);
    const ls = lines(file);
    ls.splice(1, 0, '{"note":"hello"}');
    writeLines(file, ls);
    expect(verifyAuditFile(file)).toMatchObject({ ok: false, problem: { line: 2, kind: 'not-an-entry' } });
  });

  it('reads the trail before each append without touching its access time (no inode made dirty by a read), where the system allows it', () => {
    const file = writeLog(3);
    const log = new AuditLog(file);
    log.open();
    log.append(record(4));
    // Two days back: on a relatime mount the next read through an ordinary descriptor would move it.
    const old = new Date(Math.floor(Date.now() / 1000 - 2 * 86_400) * 1000);
    fs.utimesSync(file, old, old);
    for (let i = 5; i <= 8; i++) log.append(record(i));
    const atime = fs.statSync(file).atimeMs;
    log.close();
    expect(Math.round(atime)).toBe(old.getTime());
    expect(verifyAuditFile(file)).toMatchObject({ ok: true, entries: 8 });
  });

  it('counts the bytes of lines with multi-byte characters: the head checkpoint names the file size, and the file verifies with no gap event', () => {
    const file = writeLog(2);
    const log = new AuditLog(file);
    log.open();
    log.append(record(3));
    log.append(record(4, { args: { path: 'ünïcødé/日本語/🚀.txt' }, summary: 'ça marche ✓' }));
    log.close();
    const head = readHeadFile(headPathFor(file));
    expect(head.state === 'ok' ? head.head.size : -1).toBe(fs.statSync(file).size);
    expect(verifyAuditFile(file)).toMatchObject({ ok: true, entries: 4, events: 0 });
    expect(lines(file).map((l) => (JSON.parse(l) as { args?: { path?: string } }).args?.path)).toContain('ünïcødé/日本語/🚀.txt');
  });

  it('continues the chain when another process appended to the same file', () => {
    const file = writeLog(2);
    const a = new AuditLog(file);
    const b = new AuditLog(file);
    a.open();
    b.open();
    a.append(record(3));
    b.append(record(4));
    a.append(record(5));
    a.close();
    b.close();
    expect(verifyAuditFile(file)).toMatchObject({ ok: true, entries: 5 });
  });

  it('brings the head checkpoint up to the last line within its lag when calls stop, and at once on close', async () => {
    const dir = auditTempDir();
    const file = path.join(dir, 'agent-audit.jsonl');
    const seqOfHead = () => {
      const h = readHeadFile(headPathFor(file));
      return h.state === 'ok' ? h.head.seq : -1;
    };
    const log = new AuditLog(file, { headLagMs: 20 });
    log.open(); // writes the head (line 0)
    await new Promise((r) => setTimeout(r, 30)); // longer than the lag
    log.append(record(1));
    expect(seqOfHead()).toBe(1); // the first append after a quiet spell writes it itself
    log.append(record(2));
    log.append(record(3));
    expect(seqOfHead()).toBe(1); // a run of calls inside the lag shares one later write
    await waitFor(() => seqOfHead() === 3, { what: 'the head to reach line 3' });
    expect(verifyAuditFile(file)).toMatchObject({ ok: true, entries: 3 });
    log.append(record(4));
    log.append(record(5));
    log.close();
    expect(seqOfHead()).toBe(5);
  });

  it('closes its files even when the due head cannot be written because another holder keeps the lock', () => {
    const dir = auditTempDir();
    const file = path.join(dir, 'agent-audit.jsonl');
    const log = new AuditLog(file, { headLagMs: 60_000, lockTimeoutMs: 50 });
    log.open();
    log.append(record(1));
    log.append(record(2)); // inside the lag: the head is due
    const open = () =>
      fs.readdirSync('/proc/self/fd').filter((fd) => {
        try {
          return fs.readlinkSync(`/proc/self/fd/${fd}`).startsWith(dir);
        } catch {
          return false;
        }
      }).length;
    const other = new AuditFileLock(log.lockFile);
    other.acquire();
    try {
      expect(() => log.close()).toThrow(AuditLockTimeout);
      expect(open()).toBe(1); // only the other holder's lock file
    } finally {
      other.close();
    }
    expect(verifyAuditFile(file)).toMatchObject({ ok: true, entries: 2 });
  });

  it('loses no line when the process is killed with SIGKILL right after a call returns', () => {
    const dir = auditTempDir();
    const file = path.join(dir, 'agent-audit.jsonl');
    const modulePath = compileAuditModules(dir);
    // The child appends, prints how many it wrote, and SIGKILLs itself: no exit handlers, no flush.
    const script = `
      import { AuditLog } from ${JSON.stringify(modulePath)};
      const log = new AuditLog(${JSON.stringify(file)});
      log.open();
      for (let i = 1; i <= 500; i++) log.append({ ts: 't', id: 'c' + i, caller: { kind: 'cli' }, tool: 't', pack: null, args: {}, decision: 'auto', outcome: 'ok', summary: '', durationMs: 0 });
      process.kill(process.pid, 'SIGKILL');
    `;
    const res = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(res.stderr).toBe('');
    expect(res.signal).toBe('SIGKILL');
    // In a burst the head checkpoint is written at most once per headLagMs (5 ms), so a kill leaves
    // it at most that far behind: verify accepts a log ahead of its head.
    const report = verifyAuditFile(file);
    expect(report).toMatchObject({ ok: true, entries: 500 });
    expect(report.head!.seq).toBeGreaterThan(0);
  });
});
