/**
 * The audit trail on PostgreSQL: each instance's own keyed chain in schema memo_audit, written
 * before each call returns, one transaction per group of calls, never forked (two kernels with one
 * instance id, many concurrent calls), verified per chain, exported to files the file verifier
 * accepts, and failing closed while the server is down.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { verifyAuditFile } from '../../kernel/audit/audit-verify.js';
import type { AuditEntry } from '../../kernel/audit/audit-record.js';
import { KEY_FILE } from '../../kernel/audit/audit-chain.js';
import { PgAuditLog } from '../../kernel/audit/pg-audit-log.js';
import { exportAuditChains, formatAuditDatabaseReport, verifyAuditDatabase } from '../../kernel/audit/pg-audit-read.js';
import { DatabaseUrl } from '../../kernel/storage/database-url.js';
import { instanceId } from '../../kernel/storage/instance-id.js';
import { auditSearchQuery } from '../../kernel/audit/audit-search.js';
import { administrationView } from '../../kernel/compose/administration-view.js';
import { makeKernel, tempDir, type Fixture } from '../helpers/kernel-fixture.js';
import { onPostgres } from './on-postgres.js';

const pg = onPostgres(['memo_audit']);

interface Row {
  instance: string;
  seq: string;
  prev: string;
  hash: string;
  line: string;
}

const db = () => pg.url().replace(/.*\//, '');
const rows = (instance?: string) =>
  pg
    .server()
    .query<Row>(
      `SELECT instance, seq, prev, hash, line FROM memo_audit.entry ${instance ? 'WHERE instance = $1' : ''} ORDER BY instance, seq`,
      instance ? [instance] : [],
      db(),
    );
const sql = (text: string, params: unknown[] = []) => pg.server().query(text, params, db());

/** A data folder holding `key` (the audit.key every instance of the team shares), with its own instance id. */
function dataFolder(key?: string): string {
  const dir = path.join(tempDir('memo-pg-audit-'), 'data');
  fs.mkdirSync(dir, { recursive: true });
  if (key) fs.writeFileSync(path.join(dir, KEY_FILE), key, { mode: 0o600 });
  return dir;
}

const errors = (fx: Fixture) =>
  fx.logger.lines
    .filter((l) => l.level === 'error')
    .map((l) => l.message)
    .join('\n');
const call = (fx: Fixture, text: string) => fx.kernel.invoke({ tool: 'echo_safe', args: { text }, caller: { kind: 'agent' } });
/** The lost-lines records in a data folder (audit-lost.<pid>-<n>.json, one per audit log that lost lines). */
const lostFiles = (dir: string) => fs.readdirSync(dir).filter((n) => /^audit-lost\..*\.json$/.test(n));
const verify = (fx: Fixture) => verifyAuditDatabase(DatabaseUrl.parse(pg.url()), fx.dataDir, instanceId(fx.dataDir));

describe('the audit trail on PostgreSQL', () => {
  const open: Fixture[] = [];
  const kernel = (dataDir: string) => {
    const fx = makeKernel({ dataDir });
    open.push(fx);
    return fx;
  };
  afterEach(async () => {
    for (const fx of open.splice(0)) await fx.close();
  });

  it('two kernels on one database each write their own chain, every entry naming its instance, committed before the call returns', async () => {
    const a = kernel(dataFolder());
    const key = fs.readFileSync(path.join(a.dataDir, KEY_FILE), 'utf8');
    const b = kernel(dataFolder(key));
    expect(a.kernel.audit).toBeInstanceOf(PgAuditLog);
    expect(fs.existsSync(path.join(a.dataDir, 'agent-audit.jsonl'))).toBe(false);
    const ia = instanceId(a.dataDir);
    const ib = instanceId(b.dataDir);
    expect(ia).not.toBe(ib);

    for (const [fx, text] of [
      [a, 'a1'],
      [b, 'b1'],
      [a, 'a2'],
    ] as const) {
      const r = await call(fx, text);
      // Committed before invoke returned: the row is there, in the caller's instance's chain.
      const mine = (await rows(instanceId(fx.dataDir))).map((row) => JSON.parse(row.line) as AuditEntry);
      expect(mine.at(-1)).toMatchObject({ id: r.callId, instance: instanceId(fx.dataDir), tool: 'echo_safe', args: { text } });
    }
    expect((await rows(ia)).map((r) => Number(r.seq))).toEqual([1, 2]);
    expect((await rows(ib)).map((r) => Number(r.seq))).toEqual([1]);

    const report = await verify(a);
    expect(report).toMatchObject({ ok: true });
    expect(report.chains.map((c) => [c.instance, c.entries, c.ok, c.local])).toEqual(
      expect.arrayContaining([
        [ia, 2, true, true],
        [ib, 1, true, false],
      ]),
    );
    expect(formatAuditDatabaseReport(report, ia)).toContain(`instance ${ia} (this one): OK: 2 entries, keyed chain intact, head matches (#2)`);
  });

  it("shows every instance's entries in each kernel's tail and change feed, with the instance named", async () => {
    const a = kernel(dataFolder());
    const b = kernel(dataFolder(fs.readFileSync(path.join(a.dataDir, KEY_FILE), 'utf8')));
    const heard: AuditEntry[] = [];
    const got = new Promise<void>((resolve) => {
      (a.kernel.audit as PgAuditLog).onAppend((entries) => {
        heard.push(...entries);
        if (entries.some((e) => e.instance === instanceId(b.dataDir))) resolve();
      });
    });
    await call(a, 'from a');
    const fromB = await call(b, 'from b');
    await got; // NOTIFY on commit (or the 2 s re-read)
    expect(heard.map((e) => [e.instance, e.args])).toEqual([
      [instanceId(a.dataDir), { text: 'from a' }],
      [instanceId(b.dataDir), { text: 'from b' }],
    ]);
    const tail = a.kernel.audit.tail() as AuditEntry[];
    expect(tail.map((e) => e.id)).toContain(fromB.callId);
    // B's own view has A's entry as well, once it has heard of it.
    const c = kernel(dataFolder(fs.readFileSync(path.join(a.dataDir, KEY_FILE), 'utf8')));
    expect((c.kernel.audit.tail() as AuditEntry[]).map((e) => e.instance)).toEqual([instanceId(a.dataDir), instanceId(b.dataDir)]);
  });

  it("the console's audit view pages every instance's entries from the database, filters by instance, and its Verify checks every chain", async () => {
    const a = kernel(dataFolder());
    const b = kernel(dataFolder(fs.readFileSync(path.join(a.dataDir, KEY_FILE), 'utf8')));
    await call(a, 'on a');
    // Each fixture has its own fake clock, both at the same moment: b's call is a second later, so the trail orders it after a's.
    b.clock.advance(1000);
    await call(b, 'on b');
    const view = administrationView(a.kernel, 'console', () => {});
    // Read from the chains themselves, not from what instance a has heard of: b's entry is there at once.
    const all = await view.audit.search({ kind: 'calls' });
    expect([all.total, all.entries.map((e) => [e.instance, (e as AuditEntry).args])]).toEqual([
      2,
      [
        [instanceId(b.dataDir), { text: 'on b' }],
        [instanceId(a.dataDir), { text: 'on a' }],
      ],
    ]);
    const q = auditSearchQuery(new URLSearchParams({ instance: instanceId(b.dataDir), kind: 'calls' }));
    expect('problem' in q ? q.problem : (await view.audit.search(q)).entries.map((e) => (e as AuditEntry).args)).toEqual([{ text: 'on b' }]);
    // One entry a page: the cursor walks to the older one, and the export holds both lines as written.
    const first = await view.audit.search({ kind: 'calls', limit: 1 });
    const second = await view.audit.search({ kind: 'calls', limit: 1, cursor: first.older! });
    expect([first.newer, second.entries.map((e) => (e as AuditEntry).args), second.older, second.newerCount]).toEqual([null, [{ text: 'on a' }], null, 1]);
    const lines: string[] = [];
    await view.audit.lines({ kind: 'calls' }, (raw) => void lines.push(raw));
    expect(lines.map((l) => JSON.parse(l).args)).toEqual([{ text: 'on a' }, { text: 'on b' }]);
    expect(await view.audit.verify()).toMatchObject({ ok: true, chains: [{ ok: true }, { ok: true }] });
  });

  it('a running kernel that finds its chain cut in the database records a gap event, and verify explains the hole', async () => {
    const a = kernel(dataFolder());
    const id = instanceId(a.dataDir);
    await call(a, 't1');
    await call(a, 't2');
    const [head2] = await sql(`SELECT head_hash, head_tag FROM memo_audit.chain WHERE instance = $1`, [id]);
    await call(a, 't3');
    await sql(`DELETE FROM memo_audit.entry WHERE instance = $1 AND seq = 3`, [id]);
    await sql(`UPDATE memo_audit.chain SET head_seq = 2, head_hash = $2, head_tag = $3 WHERE instance = $1`, [id, head2!.head_hash, head2!.head_tag]);
    expect((await call(a, 't4')).ok).toBe(true);
    const lines = (await rows(id)).map((r) => JSON.parse(r.line) as Record<string, unknown>);
    expect(lines.map((l) => [l.seq, l.event ?? (l.args as { text: string }).text])).toEqual([
      [1, 't1'],
      [2, 't2'],
      [4, 'gap'],
      [5, 't4'],
    ]);
    expect(lines[2]).toMatchObject({ seen: 'cut-tail', missing: { from: 3, to: 3 }, instance: id, pid: process.pid });
    const report = await verify(a);
    expect(report.chains[0]).toMatchObject({ ok: false, entries: 3, events: 1, problem: { recorded: true } });
    expect(report.chains[0]!.problem!.message).toMatch(
      /^entry #3 is missing: a kernel \(pid \d+\) found the chain in the database ends at entry #2 at \S+ and recorded it as entry #4$/,
    );
    expect(formatAuditDatabaseReport(report, id)).toMatch(/^instance \S+ \(this one\): GAP: entry #3 is missing/);
  });

  it('a running kernel whose chain was deleted from the database makes it again, starting with a gap event', async () => {
    const a = kernel(dataFolder());
    const id = instanceId(a.dataDir);
    await call(a, 't1');
    await call(a, 't2');
    await sql(`DELETE FROM memo_audit.entry WHERE instance = $1`, [id]);
    await sql(`DELETE FROM memo_audit.chain WHERE instance = $1`, [id]);
    expect((await call(a, 't3')).ok).toBe(true);
    const lines = (await rows(id)).map((r) => JSON.parse(r.line) as Record<string, unknown>);
    expect(lines.map((l) => [l.seq, l.event ?? (l.args as { text: string }).text])).toEqual([
      [3, 'gap'],
      [4, 't3'],
    ]);
    expect(lines[0]).toMatchObject({ seen: 'emptied', missing: { from: 1, to: 2 } });
    const report = await verify(a);
    expect(report.chains[0]).toMatchObject({ ok: false, problem: { recorded: true, message: expect.stringMatching(/^entries #1 to #2 are missing: /) } });
  });

  it("records an agent CLI's access as a chained event in the instance's chain (note), shown by tail only as an event", async () => {
    const a = kernel(dataFolder());
    await call(a, 'before');
    const event = await (a.kernel.audit as PgAuditLog).note({
      event: 'agent-access',
      conversationId: 'c1',
      backend: 'claude',
      version: '2.1',
      access: 'computer',
    });
    await call(a, 'after');
    const lines = (await rows(instanceId(a.dataDir))).map((r) => JSON.parse(r.line) as Record<string, unknown>);
    expect(lines.map((l) => l.event ?? 'entry')).toEqual(['entry', 'agent-access', 'entry']);
    expect(lines[1]).toMatchObject({ seq: 2, instance: instanceId(a.dataDir), backend: 'claude', access: 'computer', hash: event.hash });
    expect(a.kernel.audit.tail().map((e) => e.args)).toEqual([{ text: 'before' }, { text: 'after' }]);
    expect(await verify(a)).toMatchObject({ ok: true, chains: [{ entries: 2, events: 1 }] });
  });

  it('48 calls finishing together are one transaction, and the chain verifies', async () => {
    const a = kernel(dataFolder());
    const log = a.kernel.audit as PgAuditLog;
    const batches: number[] = [];
    const original = log.appendBatch.bind(log);
    log.appendBatch = (records) => {
      batches.push(records.length);
      return original(records);
    };
    const results = await Promise.all(Array.from({ length: 48 }, (_, i) => call(a, `t${i}`)));
    expect(results.every((r) => r.ok)).toBe(true);
    expect(batches).toEqual([48]);
    expect((await rows(instanceId(a.dataDir))).map((r) => Number(r.seq))).toEqual(Array.from({ length: 48 }, (_, i) => i + 1));
    expect(await verify(a)).toMatchObject({ ok: true, chains: [{ entries: 48 }] });
  });

  it('two kernels started with the same instance id by mistake never fork the chain: 2 x 40 interleaved calls make one chain of 80', async () => {
    const a = kernel(dataFolder());
    await call(a, 'first');
    // The same data folder copied whole (instance id and key with it): the mistake the brief warns about.
    const copy = dataFolder();
    fs.cpSync(a.dataDir, copy, { recursive: true });
    const b = kernel(copy);
    expect(instanceId(b.dataDir)).toBe(instanceId(a.dataDir));
    await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        await call(a, `a${i}`);
        await call(b, `b${i}`);
      }),
    );
    const chain = await rows(instanceId(a.dataDir));
    expect(chain.map((r) => Number(r.seq))).toEqual(Array.from({ length: 81 }, (_, i) => i + 1));
    // Each entry has exactly one successor: no two rows share a predecessor.
    expect(new Set(chain.map((r) => r.prev)).size).toBe(chain.length);
    for (let i = 1; i < chain.length; i++) expect(chain[i]!.prev).toBe(chain[i - 1]!.hash);
    expect(chain.filter((r) => (JSON.parse(r.line) as { event?: string }).event)).toEqual([]);
    expect(await verify(a)).toMatchObject({ ok: true, chains: [{ entries: 81 }] });
    expect(await verify(b)).toMatchObject({ ok: true, chains: [{ entries: 81 }] });
  });

  it('the database itself refuses a second successor of an entry', async () => {
    const a = kernel(dataFolder());
    await call(a, 'one');
    await call(a, 'two');
    const [first, second] = await rows(instanceId(a.dataDir));
    await expect(
      sql(`INSERT INTO memo_audit.entry (instance, seq, ts, prev, hash, line) VALUES ($1, 3, now(), $2, $3, $4)`, [
        first!.instance,
        first!.hash,
        'f'.repeat(64),
        second!.line,
      ]),
    ).rejects.toThrow(/entry_one_successor/);
    await expect(
      sql(`INSERT INTO memo_audit.entry (instance, seq, ts, prev, hash, line) VALUES ($1, 2, now(), $2, $3, $4)`, [
        first!.instance,
        'e'.repeat(64),
        'f'.repeat(64),
        second!.line,
      ]),
    ).rejects.toThrow(/entry_pkey/);
  });

  it.each([
    [
      'a row edited',
      (i: string) => sql(`UPDATE memo_audit.entry SET line = replace(line, '"t2"', '"t9"') WHERE instance = $1 AND seq = 2`, [i]),
      /^entry #2 was altered: its content no longer matches its MAC$/,
    ],
    [
      'a row edited with its hash recomputed without the key',
      (i: string) => sql(`UPDATE memo_audit.entry SET line = replace(line, '"t2"', '"t9"'), hash = repeat('a', 64) WHERE instance = $1 AND seq = 2`, [i]),
      /^entry #2 was altered: its line no longer matches its row/,
    ],
    ['a row removed', (i: string) => sql(`DELETE FROM memo_audit.entry WHERE instance = $1 AND seq = 2`, [i]), /^entry #2 was removed before entry #3$/],
    [
      'the tail cut and the head row set back',
      async (i: string) => {
        await sql(`DELETE FROM memo_audit.entry WHERE instance = $1 AND seq = 3`, [i]);
        await sql(
          `UPDATE memo_audit.chain SET head_seq = 2, head_hash = (SELECT hash FROM memo_audit.entry WHERE instance = $1 AND seq = 2) WHERE instance = $1`,
          [i],
        );
      },
      /^the chain's head row does not match entry #2 \(it was rewritten without the key\)$/,
    ],
    [
      'the tail cut and an older head row put back whole',
      async (i: string) => {
        await sql(`DELETE FROM memo_audit.entry WHERE instance = $1 AND seq = 3`, [i]);
        await sql(`UPDATE memo_audit.chain SET head_seq = 2, head_hash = $2, head_tag = $3 WHERE instance = $1`, [i, saved.hash, saved.tag]);
      },
      /^entries #3 to #3 are missing: this data folder's audit-chain.head says this instance wrote up to #3$/,
    ],
    [
      'the whole chain deleted',
      async (i: string) => {
        await sql(`DELETE FROM memo_audit.entry WHERE instance = $1`, [i]);
        await sql(`DELETE FROM memo_audit.chain WHERE instance = $1`, [i]);
      },
      /^the chain of this instance \(\S+\) is not in the database, while this data folder's audit-chain.head says it went up to #3: it was deleted$/,
    ],
  ])('verify catches %s by someone who can write the database but not the data folder', async (_what, tamper, message) => {
    const a = kernel(dataFolder());
    const b = kernel(dataFolder(fs.readFileSync(path.join(a.dataDir, KEY_FILE), 'utf8')));
    await call(a, 't1');
    await call(a, 't2');
    const [head2] = await sql(`SELECT head_hash AS hash, head_tag AS tag FROM memo_audit.chain WHERE instance = $1`, [instanceId(a.dataDir)]);
    saved = head2 as { hash: string; tag: string };
    await call(a, 't3');
    await call(b, 'other');
    await tamper(instanceId(a.dataDir));
    const report = await verify(a);
    expect(report.ok).toBe(false);
    const problem = report.chains.find((c) => c.instance === instanceId(a.dataDir))?.problem ?? report.problem;
    expect(problem?.message).toMatch(message);
    // The other instance's chain is untouched and still says so.
    expect(report.chains.find((c) => c.instance === instanceId(b.dataDir))).toMatchObject({ ok: true, entries: 1 });
  });

  it('a chain sealed with a key that is not at hand is reported as such, not as tampering', async () => {
    const a = kernel(dataFolder());
    const b = kernel(dataFolder()); // its own key: the instances did not share audit.key
    await call(a, 'a');
    await call(b, 'b');
    const report = await verify(a);
    expect(report.ok).toBe(false);
    expect(report.chains.find((c) => c.instance === instanceId(b.dataDir))?.problem).toMatchObject({ kind: 'bad-key' });
    expect(report.chains.find((c) => c.instance === instanceId(a.dataDir))).toMatchObject({ ok: true });
    // With B's key given as well, both chains check out.
    const both = await verifyAuditDatabase(DatabaseUrl.parse(pg.url()), a.dataDir, instanceId(a.dataDir), [path.join(b.dataDir, KEY_FILE)]);
    expect(both).toMatchObject({ ok: true });
  });

  it('refuses to open a chain sealed with another key than the data folder holds', async () => {
    const a = kernel(dataFolder());
    await call(a, 'a');
    await a.close();
    open.splice(0);
    fs.writeFileSync(path.join(a.dataDir, KEY_FILE), `${'ab'.repeat(32)}\n`);
    expect(() => makeKernel({ dataDir: a.dataDir })).toThrow(/is sealed with the key [0-9a-f]{16}, not with .*audit\.key \(key [0-9a-f]{16}\)/);
  });

  it('exports each chain to a JSONL file that the file verifier accepts', async () => {
    const a = kernel(dataFolder());
    const b = kernel(dataFolder(fs.readFileSync(path.join(a.dataDir, KEY_FILE), 'utf8')));
    for (let i = 0; i < 5; i++) await call(a, `a${i}`);
    await call(b, 'b');
    const out = tempDir('memo-pg-export-');
    const exported = await exportAuditChains(DatabaseUrl.parse(pg.url()), { dir: out });
    expect(exported.map((e) => [e.instance, e.lines]).sort()).toEqual(
      [
        [instanceId(a.dataDir), 5],
        [instanceId(b.dataDir), 1],
      ].sort(),
    );
    // The key stays with the instances: put it beside the export to check it.
    fs.copyFileSync(path.join(a.dataDir, KEY_FILE), path.join(out, KEY_FILE));
    for (const e of exported) expect(verifyAuditFile(e.file!)).toMatchObject({ ok: true, entries: e.lines, head: { seq: e.lines } });
    // The file is the same lines as the rows, in order.
    const text = fs.readFileSync(path.join(out, `agent-audit.${instanceId(a.dataDir)}.jsonl`), 'utf8');
    expect(text).toBe((await rows(instanceId(a.dataDir))).map((r) => `${r.line}\n`).join(''));
    // An exported line altered afterwards is caught by the file verifier.
    fs.writeFileSync(path.join(out, `agent-audit.${instanceId(a.dataDir)}.jsonl`), text.replace('"a3"', '"zz"'));
    expect(verifyAuditFile(path.join(out, `agent-audit.${instanceId(a.dataDir)}.jsonl`))).toMatchObject({ ok: false, problem: { kind: 'altered', line: 4 } });
  });

  it('while the server is down, calls fail closed with a clear message; once it is back, the same kernel records calls again', async () => {
    const a = kernel(dataFolder());
    await call(a, 'before');
    await pg.server().stop();
    try {
      const lost = await call(a, 'unrecorded');
      // The call had already run when its line could not be written: the kernel says so loudly.
      expect(lost.ok).toBe(true);
      expect(errors(a)).toMatch(
        /the audit line of echo_safe \(call \S+\) could not be written: the audit trail's database .* cannot be used \(.*ECONNREFUSED.*\)/,
      );
      const refused = await call(a, 'refused');
      expect(refused.ok).toBe(false);
      expect(refused.ok ? '' : refused.error).toMatchObject({ code: 'PERMISSION_DENIED' });
      expect(refused.ok ? '' : refused.error.message).toMatch(
        /^The audit trail's database postgres:\/\/memo:\[masked\]@127\.0\.0\.1:\d+\/t\d+ cannot be used \(.*ECONNREFUSED.*\), so this call could not be recorded: calls are refused until it answers again \(Memo reconnects by itself\)\.$/,
      );
      expect(errors(a)).not.toContain(pg.server().password);
    } finally {
      await pg.server().start();
    }
    const after = await call(a, 'after');
    expect(after.ok).toBe(true);
    // The lines lost meanwhile (the call that ran, the one refused) are named by a chained gap event, written before the next line.
    const lines = (await rows(instanceId(a.dataDir))).map((r) => JSON.parse(r.line) as AuditEntry & { event?: string; lost?: { calls: unknown[] } });
    expect(lines.map((l) => l.event ?? l.args)).toEqual([{ text: 'before' }, 'gap', { text: 'after' }]);
    const ids = [...errors(a).matchAll(/the audit line of echo_safe \(call (\S+)\)/g)].map((m) => m[1]);
    expect(ids).toHaveLength(2);
    expect(lines[1]).toMatchObject({
      seen: 'lines-lost',
      lost: {
        lines: 2,
        calls: [
          { id: ids[0], tool: 'echo_safe', outcome: 'ok' },
          { id: ids[1], tool: 'echo_safe', outcome: 'error' },
        ],
      },
    });
    expect(await verify(a)).toMatchObject({ ok: false, chains: [{ problem: { recorded: true }, gaps: [{ seen: 'lines-lost' }] }] });
  });

  it('lines lost while the server is down are named by the next start of the instance when the kernel stopped first: the record waits in a file of its own until the gap event is committed', async () => {
    const dir = dataFolder();
    const a = kernel(dir);
    await call(a, 'before');
    let ids: string[];
    await pg.server().stop();
    try {
      expect((await call(a, 'unrecorded')).ok).toBe(true);
      expect((await call(a, 'refused')).ok).toBe(false);
      ids = [...errors(a).matchAll(/the audit line of echo_safe \(call (\S+)\)/g)].map((m) => m[1]!);
      expect(ids).toHaveLength(2);
      // Written before each call returned: calls by id and tool, never their arguments; the owner's alone.
      const [name] = lostFiles(dir);
      expect(name).toMatch(new RegExp(`^audit-lost\\.${process.pid}-\\d+\\.json$`));
      const file = path.join(dir, name!);
      expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toMatchObject({ lost: { count: 2, mine: 2, calls: ids.map((id) => ({ id, tool: 'echo_safe' })) } });
      expect(fs.readFileSync(file, 'utf8')).not.toContain('unrecorded');
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      // Stopped before the server came back: this process no longer has the record in memory.
      await a.close();
      open.splice(open.indexOf(a), 1);
    } finally {
      await pg.server().start();
    }
    const b = kernel(dir);
    expect((await call(b, 'after')).ok).toBe(true);
    const lines = (await rows(instanceId(dir))).map((r) => JSON.parse(r.line) as AuditEntry & { event?: string; detail?: string });
    expect(lines.map((l) => l.event ?? l.args)).toEqual([{ text: 'before' }, 'gap', { text: 'after' }]);
    expect(lines[1]).toMatchObject({
      seen: 'lines-lost',
      lost: {
        lines: 2,
        calls: [
          { id: ids[0], tool: 'echo_safe', outcome: 'ok' },
          { id: ids[1], tool: 'echo_safe', outcome: 'error' },
        ],
        earlier: [process.pid],
      },
      detail: expect.stringMatching(
        /^2 call lines could not be written between \S+ and \S+ \(by an earlier run of this instance, pid \d+\) \(the database could not be used\)$/,
      ),
    });
    expect(lostFiles(dir)).toEqual([]);
    const report = await verify(b);
    expect(report).toMatchObject({ ok: false, chains: [{ problem: { recorded: true }, gaps: [{ seen: 'lines-lost', lost: { lines: 2 } }] }] });
    expect(formatAuditDatabaseReport(report, instanceId(dir))).toContain(`calls: echo_safe ${ids[0]}, echo_safe ${ids[1]}`);
  });

  it("two kernels on one data folder through an outage keep a record each: the one still running names its own lines, and the stopped one's are named by the next start, none overwritten", async () => {
    const dir = dataFolder();
    const a = kernel(dir);
    const b = kernel(dir);
    await call(a, 'before');
    await pg.server().stop();
    try {
      await call(a, 'from a');
      await call(b, 'from b');
      expect(lostFiles(dir)).toHaveLength(2);
      await a.close();
      open.splice(open.indexOf(a), 1);
    } finally {
      await pg.server().start();
    }
    const lostBy = (fx: Fixture) => [...errors(fx).matchAll(/the audit line of echo_safe \(call (\S+)\)/g)].map((m) => m[1]!);
    const [ofA, ofB] = [lostBy(a), lostBy(b)];
    expect([ofA.length, ofB.length]).toEqual([1, 1]);
    expect((await call(b, 'after')).ok).toBe(true);
    // B's event names B's line only; A's record is still there for the next start.
    expect(lostFiles(dir)).toHaveLength(1);
    const c = kernel(dir);
    expect((await call(c, 'last')).ok).toBe(true);
    expect(lostFiles(dir)).toEqual([]);
    const gaps = (await rows(instanceId(dir)))
      .map((r) => JSON.parse(r.line) as { event?: string; lost?: { calls: Array<{ id: string }>; earlier?: number[] } })
      .filter((l) => l.event === 'gap');
    expect(gaps.map((g) => [g.lost?.calls.map((x) => x.id), g.lost?.earlier ?? []])).toEqual([
      [ofB, []],
      [ofA, [process.pid]],
    ]);
  });

  it('an unreadable record of lost lines is not dropped: the next start writes a gap event saying lines an earlier run lost are not known, then removes it', async () => {
    const dir = dataFolder();
    const a = kernel(dir);
    await call(a, 'before');
    await a.close();
    open.splice(open.indexOf(a), 1);
    // Left by a process that is gone (pids never go this high).
    fs.writeFileSync(path.join(dir, 'audit-lost.99999999-1.json'), '{"version":1,"lost":{"count":', { mode: 0o600 });
    fs.writeFileSync(path.join(dir, 'audit-lost.99999999-1.json.tmp'), '{"version":1', { mode: 0o600 });
    const b = kernel(dir);
    expect((await call(b, 'after')).ok).toBe(true);
    const lines = (await rows(instanceId(dir))).map((r) => JSON.parse(r.line) as AuditEntry & { event?: string; detail?: string });
    expect(lines.map((l) => l.event ?? l.args)).toEqual([{ text: 'before' }, 'gap', { text: 'after' }]);
    expect(lines[1]).toMatchObject({
      seen: 'lines-lost',
      lost: { lines: 0, calls: [], unreadable: true },
      detail:
        'The record of lines an earlier run of this instance could not write could not be read (audit-lost.99999999-1.json: it is not JSON): how many are missing is not known',
    });
    // The unfinished write of that process is gone too.
    expect(lostFiles(dir)).toEqual([]);
    expect(fs.readdirSync(dir).filter((n) => n.startsWith('audit-lost'))).toEqual([]);
    expect(await verify(b)).toMatchObject({ ok: false, chains: [{ problem: { recorded: true }, gaps: [{ seen: 'lines-lost' }] }] });
  });

  it('a kernel started while the server is down starts, refuses calls saying why, and records calls once the server is back', async () => {
    await pg.server().stop();
    let a: Fixture;
    try {
      a = kernel(dataFolder());
      const refused = await call(a, 'too early');
      expect(refused.ok ? '' : refused.error).toMatchObject({
        code: 'PERMISSION_DENIED',
        message: expect.stringMatching(/cannot be used \(.*ECONNREFUSED.*\)/),
      });
    } finally {
      await pg.server().start();
    }
    const r = await call(a, 'on time');
    expect(r.ok).toBe(true);
    // The refusal's line, lost while the chain could not even be opened, is named by the chain's first line.
    const lines = (await rows(instanceId(a.dataDir))).map((row) => JSON.parse(row.line) as AuditEntry & { event?: string });
    expect(lines.map((l) => l.event ?? l.args)).toEqual(['gap', { text: 'on time' }]);
    expect(lines[0]).toMatchObject({ seq: 1, seen: 'lines-lost', lost: { lines: 1, calls: [{ tool: 'echo_safe', outcome: 'error' }] } });
  });

  it('a wrong password: calls are refused naming the failure, and the password is in no message', async () => {
    const wrong = pg.url().replace(encodeURIComponent(pg.server().password), 'wrong-5e7c');
    const a = makeKernel({ dataDir: dataFolder(), databaseUrl: wrong });
    open.push(a);
    const refused = await call(a, 'x');
    const message = refused.ok ? '' : refused.error.message;
    expect(message).toMatch(/cannot be used \(password authentication failed for user "memo"\)/);
    for (const secret of ['wrong-5e7c', pg.server().password]) {
      expect(message).not.toContain(secret);
      expect(JSON.stringify(a.logger.lines)).not.toContain(secret);
    }
  });
});

let saved: { hash: string; tag: string };
