import { createHash, createHmac, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { AuditLog } from '../../../kernel/audit/audit-log.js';
import { verifyAuditFile, formatVerifyReport, type AuditProblemKind } from '../../../kernel/audit/audit-verify.js';
import { GENESIS_HASH } from '../../../kernel/audit/audit-chain.js';
import { lines, record, removeTempDirs, writeLines, writeLog } from './helpers.js';
import { nth } from '../../helpers/nth.js';

/** Rewrites every line with a fresh chain computed by `seal` (what a forger without our key can do). */
function rechain(file: string, seal: (prev: string, body: string) => string): void {
  let prev = GENESIS_HASH;
  const out = lines(file).map((l) => {
    const { hash: _drop, ...rest } = JSON.parse(l);
    rest.prev = prev;
    if (rest.summary) rest.summary = `forged ${rest.summary}`;
    const body = JSON.stringify(rest);
    prev = seal(prev, body);
    return body.slice(0, -1) + `,"hash":"${prev}"}`;
  });
  writeLines(file, out);
}

const sibling = (file: string, name: string) => path.join(path.dirname(file), name);

interface Row {
  name: string;
  entries?: number;
  tamper: (file: string) => void;
  kind: AuditProblemKind;
  line?: number;
  message: RegExp;
}

const rows: Row[] = [
  { name: 'cut tail', tamper: (f) => writeLines(f, lines(f).slice(0, 7)), kind: 'cut-tail', line: 7, message: /entries #8 to #10 are missing at the end/ },
  { name: 'last line cut', tamper: (f) => writeLines(f, lines(f).slice(0, 9)), kind: 'cut-tail', message: /entry #10 is missing at the end/ },
  { name: 'emptied file', tamper: (f) => fs.writeFileSync(f, ''), kind: 'emptied', line: 0, message: /holds no entries.*says it held 10/ },
  { name: 'deleted file', tamper: (f) => fs.rmSync(f), kind: 'deleted', line: 0, message: /agent-audit.jsonl is missing.*held 10 entries/ },
  {
    name: 'deleted file and head',
    tamper: (f) => {
      fs.rmSync(f);
      fs.rmSync(sibling(f, 'agent-audit.head'));
    },
    kind: 'deleted',
    message: /both missing.*audit.key/,
  },
  {
    name: 'emptied file and deleted head',
    tamper: (f) => {
      fs.writeFileSync(f, '');
      fs.rmSync(sibling(f, 'agent-audit.head'));
    },
    kind: 'emptied',
    message: /empty and agent-audit.head is missing/,
  },
  {
    name: 'full rewrite with recomputed unkeyed hashes',
    tamper: (f) => rechain(f, (prev, body) => createHash('sha256').update(prev).update('\n').update(body).digest('hex')),
    kind: 'unkeyed',
    line: 1,
    message: /unkeyed hash/,
  },
  {
    name: 'rewrite with a wrong key',
    tamper: (f) => {
      const wrong = randomBytes(32);
      rechain(f, (prev, body) => createHmac('sha512', wrong).update(prev).update('\n').update(body).digest('hex').slice(0, 64));
    },
    kind: 'bad-key',
    line: 1,
    message: /sealed with another key/,
  },
  {
    name: 'audit.key replaced by another key',
    tamper: (f) => fs.writeFileSync(sibling(f, 'audit.key'), randomBytes(32).toString('hex') + '\n'),
    kind: 'bad-key',
    line: 1,
    message: /another key/,
  },
  {
    name: 'audit.key altered',
    tamper: (f) => fs.writeFileSync(sibling(f, 'audit.key'), 'not a key\n'),
    kind: 'bad-key',
    line: 0,
    message: /not 64 hex characters/,
  },
  { name: 'audit.key deleted', tamper: (f) => fs.rmSync(sibling(f, 'audit.key')), kind: 'bad-key', line: 1, message: /audit.key is missing/ },
  {
    name: 'a line edited',
    tamper: (f) => {
      const ls = lines(f);
      ls[3] = nth(ls, 3).replace('"f4.txt"', '"other.txt"');
      writeLines(f, ls);
    },
    kind: 'altered',
    line: 4,
    message: /line 4 \(entry #4\) was altered/,
  },
  {
    name: 'a line removed',
    tamper: (f) => {
      const ls = lines(f);
      ls.splice(4, 1);
      writeLines(f, ls);
    },
    kind: 'removed',
    line: 5,
    message: /entry #5 was removed before line 5/,
  },
  {
    name: 'a line inserted (a copy of the one before)',
    tamper: (f) => {
      const ls = lines(f);
      ls.splice(4, 0, nth(ls, 3));
      writeLines(f, ls);
    },
    kind: 'inserted',
    line: 5,
    message: /line 5 \(entry #4\) was inserted/,
  },
  {
    name: 'two lines reordered',
    tamper: (f) => {
      const ls = lines(f);
      [ls[5], ls[6]] = [nth(ls, 6), nth(ls, 5)];
      writeLines(f, ls);
    },
    kind: 'reordered',
    line: 6,
    message: /line 6 \(entry #7\) is out of order: entry #6 comes later, at line 7/,
  },
  {
    name: 'an old line moved to the end',
    tamper: (f) => {
      const ls = lines(f);
      ls.push(nth(ls, 1));
      writeLines(f, ls);
    },
    kind: 'reordered',
    line: 11,
    message: /out of order/,
  },
  {
    name: 'a torn line in the middle',
    tamper: (f) => {
      const ls = lines(f);
      ls[4] = nth(ls, 4).slice(0, 40);
      writeLines(f, ls);
    },
    kind: 'torn',
    line: 5,
    message: /cut short in the middle/,
  },
  {
    name: 'a hand-written line',
    tamper: (f) => {
      const ls = lines(f);
      ls.splice(2, 0, '{"note":"hello"}');
      writeLines(f, ls);
    },
    kind: 'not-an-entry',
    line: 3,
    message: /not an audit entry/,
  },
  {
    name: 'cut tail with the head rewritten to match',
    tamper: (f) => {
      const ls = lines(f).slice(0, 7);
      writeLines(f, ls);
      const last = JSON.parse(nth(ls, 6));
      const size = fs.statSync(f).size;
      const text = `{"v":2,"seq":7,"size":${size},"hash":"${last.hash}","tag":"${'a'.repeat(64)}"}`;
      fs.writeFileSync(sibling(f, 'agent-audit.head'), text.padEnd(255) + '\n');
    },
    kind: 'head',
    message: /tag does not match entry #7/,
  },
  { name: 'head deleted', tamper: (f) => fs.rmSync(sibling(f, 'agent-audit.head')), kind: 'head', message: /agent-audit.head is missing/ },
  { name: 'head garbled', tamper: (f) => fs.writeFileSync(sibling(f, 'agent-audit.head'), 'x'.repeat(256)), kind: 'head', message: /not a head record/ },
  {
    name: 'file replaced by an older copy of itself',
    tamper: (f) => {
      const old = lines(f).slice(0, 4);
      const tmp = f + '.tmp';
      writeLines(tmp, old);
      fs.renameSync(tmp, f);
    },
    kind: 'cut-tail',
    message: /entries #5 to #10 are missing/,
  },
];

describe('audit verify finds each kind of tampering (a 10-entry log, tampered on disk, no kernel running)', () => {
  afterEach(removeTempDirs);

  it('passes an intact log, with its head', () => {
    const file = writeLog(10);
    const r = verifyAuditFile(file);
    expect(r).toMatchObject({ ok: true, entries: 10, events: 0, lastSeq: 10, head: { seq: 10 }, gaps: [] });
    expect(formatVerifyReport(r)).toBe('OK: 10 entries, keyed chain intact, head matches (#10).\n');
  });

  it.each(rows)('$name -> $kind', (row) => {
    const file = writeLog(row.entries ?? 10);
    row.tamper(file);
    const r = verifyAuditFile(file);
    expect(r.ok).toBe(false);
    expect(r.problem).toMatchObject({ kind: row.kind, ...(row.line !== undefined ? { line: row.line } : {}) });
    expect(r.problem!.message).toMatch(row.message);
    expect(r.problem!.recorded).toBeUndefined();
    expect(formatVerifyReport(r)).toMatch(/^TAMPERED: .+\.\n$/);
  });

  it('accepts a torn last line (a crash mid-write) before any kernel reopens the file', () => {
    const file = writeLog(5);
    fs.appendFileSync(file, nth(lines(file), 4).replace('"seq":5', '"seq":6').slice(0, 50));
    const r = verifyAuditFile(file);
    expect(r).toMatchObject({ ok: true, entries: 5, torn: [6] });
    expect(formatVerifyReport(r)).toMatch(/torn by a crash \(not tampering\): line 6/);
  });

  it('accepts a log one line ahead of its head (killed between the line and the head write)', () => {
    const file = writeLog(5);
    const head = fs.readFileSync(path.join(path.dirname(file), 'agent-audit.head'));
    const log = new AuditLog(file);
    log.open();
    log.append(record(6));
    log.close();
    fs.writeFileSync(path.join(path.dirname(file), 'agent-audit.head'), head);
    expect(verifyAuditFile(file)).toMatchObject({ ok: true, entries: 6, head: { seq: 5 } });
  });

  it('reports a line torn in the middle even when its end was re-attached as a separate line', () => {
    const file = writeLog(6);
    const ls = lines(file);
    ls.splice(3, 1, nth(ls, 3).slice(0, 30), nth(ls, 3).slice(30));
    writeLines(file, ls);
    expect(verifyAuditFile(file).problem).toMatchObject({ kind: 'torn', line: 4 });
  });
});
