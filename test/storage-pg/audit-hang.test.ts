/**
 * The audit trail on PostgreSQL with a server that hangs (SIGSTOP of its processes: it keeps the
 * connections open and answers nothing), not one that is down: the call whose line could not be
 * written says so, the calls after it are refused before they run, and once the server answers
 * again (SIGCONT) calls go through without a restart and the chain verifies.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { AuditEntry } from '../../kernel/audit/audit-record.js';
import { formatAuditDatabaseReport, verifyAuditDatabase } from '../../kernel/audit/pg-audit-read.js';
import { DatabaseUrl } from '../../kernel/storage/database-url.js';
import { instanceId } from '../../kernel/storage/instance-id.js';
import type { ToolResult } from '../../kernel/tools/contract.js';
import type { PackDefinition } from '../../kernel/tools/tool-registry.js';
import { echoPack, makeKernel, tempDir, tool, type Fixture } from '../helpers/kernel-fixture.js';
import { onPostgres } from './on-postgres.js';

const pg = onPostgres(['memo_audit']);

/** A pack whose one tool leaves a visible trace: a file named after its argument in `dir`. */
function touchPack(dir: string): PackDefinition {
  return {
    id: 'touch-pack',
    version: '1.0.0',
    tools: [
      {
        spec: tool('touch_file', 'safe', 'write'),
        impl: (args: Record<string, unknown>) => {
          fs.writeFileSync(path.join(dir, String(args.text)), 'ran');
          return { touched: args.text };
        },
      },
    ],
  };
}

/** The calls whose audit line the pipeline reported lost (stderr), in order: [call id, tool]. */
function loggedLost(fx: Fixture): Array<{ id: string; tool: string }> {
  return fx.logger.lines
    .filter((l) => l.level === 'error')
    .map((l) => /the audit line of (\S+) \(call (\S+)\) could not be written/.exec(l.message))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ id: m[2]!, tool: m[1]! }));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Calls `touch(text)` until it goes through (the guard's question may still be in flight when the
 * database is back): each refusal meanwhile must be the audit's, and must not have run the tool.
 */
async function untilThrough(touch: (text: string) => Promise<ToolResult>, ran: (text: string) => boolean, text: string) {
  let refused = 0;
  for (;;) {
    const r = await touch(text);
    if (r.ok) return { result: r, refused };
    expect(r.error).toMatchObject({ code: 'PERMISSION_DENIED', details: { decision: 'deny:audit-unavailable' } });
    expect(ran(text)).toBe(false);
    refused++;
    await sleep(100);
  }
}

describe('the audit trail on PostgreSQL while the server hangs', () => {
  let fx: Fixture | undefined;
  afterEach(async () => {
    pg.server().thaw();
    await fx?.close();
    fx = undefined;
  });

  it('the call whose line is lost says so, the next calls are refused before they run, and after the server answers again calls go through and the chain verifies', async () => {
    const traces = tempDir('memo-pg-audit-hang-');
    const dataDir = path.join(tempDir('memo-pg-audit-hang-data-'), 'data');
    fx = makeKernel({ dataDir, packs: [echoPack(), touchPack(traces)] });
    const touch = (text: string) => fx!.kernel.invoke({ tool: 'touch_file', args: { text }, caller: { kind: 'agent' } });
    const ran = (text: string) => fs.existsSync(path.join(traces, text));

    const before = await touch('before');
    expect(before).toMatchObject({ ok: true, summary: expect.not.stringMatching(/audit/) });

    const refusalMs: number[] = [];
    pg.server().freeze();
    try {
      // The call runs, its commit gets no answer: the result stays the tool's, and its summary says the line is missing.
      const first = await touch('first');
      expect(ran('first')).toBe(true);
      expect(first).toMatchObject({ ok: true, value: { touched: 'first' }, summary: expect.stringMatching(/its audit line could not be written\)$/) });
      const errors = fx.logger.lines.filter((l) => l.level === 'error').map((l) => l.message);
      expect(errors).toContainEqual(
        expect.stringMatching(
          /the audit line of touch_file \(call \S+\) could not be written: .*(Query read timeout|did not answer).*may not have been written/,
        ),
      );

      // From then on calls are refused before they run, while the server still hangs.
      for (const text of ['second', 'third', 'fourth']) {
        const started = performance.now();
        const refused = await touch(text);
        refusalMs.push(Math.round(performance.now() - started));
        expect(refused).toMatchObject({ ok: false, error: { code: 'PERMISSION_DENIED', details: { decision: 'deny:audit-unavailable' } } });
        expect(refused.ok ? '' : refused.error.message).toMatch(/^The audit trail's database .* cannot be used \(.*\), so this call could not be recorded/);
        expect(ran(text)).toBe(false);
      }
    } finally {
      pg.server().thaw();
    }

    // The server answers again: the same kernel lets calls through by itself (refused ones meanwhile do not run).
    const { result: after, refused: refusedMeanwhile } = await untilThrough(touch, ran, 'after');
    expect(ran('after')).toBe(true);
    expect(after).toMatchObject({ ok: true, summary: expect.not.stringMatching(/audit/) });
    const again = await touch('again');
    expect(again.ok).toBe(true);

    const instance = instanceId(dataDir);
    const db = pg.url().replace(/.*\//, '');
    const rows = await pg.server().query<{ line: string }>(`SELECT line FROM memo_audit.entry WHERE instance = $1 ORDER BY seq`, [instance], db);
    const lines = rows.map((r) => JSON.parse(r.line) as AuditEntry & { event?: string });
    const callLines = lines.filter((l) => !l.event && l.tool === 'touch_file');
    const texts = callLines.filter((l) => l.outcome === 'ok').map((l) => (l.args as { text: string }).text);
    // The calls that ran are recorded in order, each once; the first call's statement may still have
    // committed when the server resumed (it was sent before the timeout), never twice.
    expect(['before', 'first', 'after', 'again'].filter((t) => texts.includes(t))).toEqual(texts);
    // The other lines are refusals: those made while the server hung were lost with it, but a call
    // refused just after it answered again (the guard's question still in flight) may have its
    // refusal recorded. Such a line says why the call did not run.
    for (const refusal of callLines.filter((l) => l.outcome !== 'ok')) {
      expect(refusal).toMatchObject({ decision: 'deny:audit-unavailable', error: { code: 'PERMISSION_DENIED' } });
      expect(['second', 'third', 'fourth', 'after']).toContain((refusal.args as { text: string }).text);
    }
    expect(texts).toEqual(expect.arrayContaining(['before', 'after', 'again']));
    // Every line not written (the refused calls' too; a first line committed anyway is no loss) is named by a recorded gap.
    const written = new Set(lines.map((l) => l.id));
    const lost = loggedLost(fx).filter((c) => !written.has(c.id));
    expect(lost.length).toBeGreaterThanOrEqual(3);
    const report = await verifyAuditDatabase(DatabaseUrl.parse(pg.url()), dataDir, instance);
    expect(report.chains.find((c) => c.instance === instance)).toMatchObject({
      ok: false,
      problem: { recorded: true },
      gaps: [{ seen: 'lines-lost', lost: { lines: lost.length, calls: lost.map((c) => expect.objectContaining(c)) } }],
    });
    process.stdout.write(
      `refusals while frozen took ${refusalMs.join(', ')} ms; calls refused after thaw before recovery: ${refusedMeanwhile}; first line committed anyway: ${texts.includes('first')}\n`,
    );
  });

  it('a line lost while the server hangs is named in the chain once it answers again: a lines-lost gap event with the call id and tool, which verify reports as a recorded gap', async () => {
    const traces = tempDir('memo-pg-audit-lost-');
    const dataDir = path.join(tempDir('memo-pg-audit-lost-data-'), 'data');
    fx = makeKernel({ dataDir, packs: [echoPack(), touchPack(traces)] });
    const touch = (text: string) => fx!.kernel.invoke({ tool: 'touch_file', args: { text }, caller: { kind: 'agent' } });
    const ran = (text: string) => fs.existsSync(path.join(traces, text));
    expect((await touch('before')).ok).toBe(true);

    pg.server().freeze();
    let first: ToolResult;
    let second: ToolResult;
    try {
      // The first call's commit is sent and gets no answer; the second call ran before the database was
      // marked unusable, and its line waits behind that commit: it is never sent, so it is surely lost.
      const pending = touch('first');
      await sleep(300);
      [first, second] = await Promise.all([pending, touch('second')]);
    } finally {
      pg.server().thaw();
    }
    expect(ran('first') && ran('second')).toBe(true);
    for (const r of [first, second]) expect(r).toMatchObject({ ok: true, summary: expect.stringMatching(/its audit line could not be written\)$/) });
    const ids = loggedLost(fx).map((c) => c.id);
    expect(ids).toHaveLength(2);
    const [firstId, secondId] = ids as [string, string];

    // The next call goes through once the server answers; the lost lines' event is written before its line.
    const { result: after } = await untilThrough(touch, ran, 'after');
    expect(after).toMatchObject({ ok: true, summary: expect.not.stringMatching(/audit/) });

    const instance = instanceId(dataDir);
    const db = pg.url().replace(/.*\//, '');
    const rows = await pg.server().query<{ line: string }>(`SELECT line FROM memo_audit.entry WHERE instance = $1 ORDER BY seq`, [instance], db);
    const lines = rows.map(
      (r) => JSON.parse(r.line) as AuditEntry & { event?: string; seen?: string; lost?: { lines: number; calls: unknown[]; unconfirmed?: number } },
    );
    const calls = lines.filter((l) => !l.event && l.tool === 'touch_file');
    // The first line may have been committed when the server woke up (its statement was sent); the second never was.
    const firstWritten = calls.some((l) => l.id === firstId);
    expect(calls.map((l) => (l.args as { text: string }).text)).toEqual(firstWritten ? ['before', 'first', 'after'] : ['before', 'after']);
    const gaps = lines.filter((l) => l.event === 'gap');
    expect(gaps).toHaveLength(1);
    // Lost: the second line, the first unless it was committed, and any refusal's line while the guard still found the server away.
    const written = new Set(calls.map((l) => l.id));
    const lostCalls = loggedLost(fx)
      .filter((c) => !written.has(c.id))
      .map((c) => expect.objectContaining(c));
    expect(loggedLost(fx).map((c) => c.id)).toEqual(expect.arrayContaining(firstWritten ? [secondId] : [firstId, secondId]));
    expect(gaps[0]).toMatchObject({ seen: 'lines-lost', instance, lost: { lines: lostCalls.length, calls: lostCalls } });
    // No arguments of the lost calls in it.
    expect(JSON.stringify(gaps[0])).not.toMatch(/"(first|second)"/);
    // It comes right before the call that went through after the server answered.
    expect(lines.indexOf(gaps[0]!)).toBe(lines.findIndex((l) => !l.event && (l.args as { text?: string })?.text === 'after') - 1);

    // verify reports it as a recorded gap naming the lost call, and finds nothing else wrong with the chain.
    const report = await verifyAuditDatabase(DatabaseUrl.parse(pg.url()), dataDir, instance);
    const mine = report.chains.find((c) => c.instance === instance)!;
    expect(report.problem).toBeUndefined();
    expect(mine).toMatchObject({ ok: false, local: true, gaps: [{ seen: 'lines-lost', lost: { calls: lostCalls } }], problem: { recorded: true } });
    expect(mine.problem!.message).toContain(`touch_file ${secondId}`);
    const printed = formatAuditDatabaseReport(report, instance);
    expect(printed).toMatch(
      new RegExp(
        `instance ${instance} \\(this one\\): GAP: lines are missing: ${lostCalls.length} call lines? could not be written between .*touch_file ${secondId}`,
      ),
    );
    expect(printed).not.toContain('TAMPERED');
    process.stdout.write(`lost-line gap: ${printed}`);
  });

  it('a line the database refuses although it answers (a write that fails) also trips the guard: calls are refused and do not run until a row can be written again', async () => {
    const traces = tempDir('memo-pg-audit-refused-');
    const dataDir = path.join(tempDir('memo-pg-audit-refused-data-'), 'data');
    fx = makeKernel({ dataDir, packs: [echoPack(), touchPack(traces)] });
    const touch = (text: string) => fx!.kernel.invoke({ tool: 'touch_file', args: { text }, caller: { kind: 'agent' } });
    const ran = (text: string) => fs.existsSync(path.join(traces, text));
    const db = pg.url().replace(/.*\//, '');
    const sql = (text: string) => pg.server().query(text, [], db);

    expect((await touch('before')).ok).toBe(true);
    await sql(`CREATE FUNCTION memo_audit.no_room() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no room left for audit rows'; END $$`);
    await sql(`CREATE TRIGGER no_room BEFORE INSERT ON memo_audit.entry FOR EACH ROW EXECUTE FUNCTION memo_audit.no_room()`);
    const first = await touch('first');
    expect(ran('first')).toBe(true);
    expect(first).toMatchObject({ ok: true, summary: expect.stringMatching(/its audit line could not be written\)$/) });
    // The server answers every question, but no line can be written: the guard keeps refusing (it asks by writing a row it rolls back).
    for (const text of ['second', 'third']) {
      const refused = await touch(text);
      expect(refused).toMatchObject({ ok: false, error: { code: 'PERMISSION_DENIED', details: { decision: 'deny:audit-unavailable' } } });
      expect(refused.ok ? '' : refused.error.message).toMatch(/cannot be used \(refused the write: no room left for audit rows\)/);
      expect(ran(text)).toBe(false);
    }
    await sql(`DROP TRIGGER no_room ON memo_audit.entry`);
    const { result: after } = await untilThrough(touch, ran, 'after');
    expect(after).toMatchObject({ ok: true, summary: expect.not.stringMatching(/audit/) });
    expect(ran('after')).toBe(true);
    const instance = instanceId(dataDir);
    const rows = await pg.server().query<{ line: string }>(`SELECT line FROM memo_audit.entry WHERE instance = $1 ORDER BY seq`, [instance], db);
    const texts = rows
      .map((r) => JSON.parse(r.line) as AuditEntry)
      .filter((l) => l.tool === 'touch_file')
      .map((l) => (l.args as { text: string }).text);
    expect(texts).toEqual(['before', 'after']);
    // The refused line is named by a recorded gap (by call id and tool), the rest of the chain verifies.
    // The lines not written (the first call's, which ran, and the refused calls', which did not) are named by a recorded gap.
    const lost = loggedLost(fx);
    expect(lost.length).toBeGreaterThanOrEqual(3);
    const report = await verifyAuditDatabase(DatabaseUrl.parse(pg.url()), dataDir, instance);
    expect(report.chains.find((c) => c.instance === instance)).toMatchObject({
      ok: false,
      problem: { recorded: true },
      gaps: [{ seen: 'lines-lost', lost: { lines: lost.length, calls: lost.map((c) => expect.objectContaining(c)) } }],
    });
    expect(report.chains.find((c) => c.instance === instance)!.gaps[0]!.lost!.calls.map((c) => c.outcome)).toEqual(['ok', ...lost.slice(1).map(() => 'error')]);
  });
});
