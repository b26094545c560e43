import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { formatAuditDatabaseReport, verifyAuditDatabase } from '../../kernel/audit/pg-audit-read.js';
import { DatabaseUrl } from '../../kernel/storage/database-url.js';
import { instanceId } from '../../kernel/storage/instance-id.js';
import { killWhenDone, removeWhenDone } from '../helpers/cleanup.js';
import { requireFreshBuild } from '../helpers/dist.js';
import { tempDir } from '../helpers/kernel-fixture.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { SPAWN_TIMEOUT_MS } from '../helpers/wait.js';

/**
 * The crash test of crash-during-writes.test.ts on PostgreSQL (MEMO_DATABASE_URL): the tasks, the
 * conversation and the audit chain are in a throwaway PostgreSQL server, the notes in the vault's
 * folder. The writer (test/reliability/harness/writer.mjs, the built kernel in a child process, given
 * the database through its environment) is killed with SIGKILL at a different step of a round each
 * time; after each kill a new kernel on the same folders and database reads everything back. Then
 * PostgreSQL itself is stopped like a crash under the running writer and started again.
 *
 * After each round: every acknowledged note, task and turn is there and whole, nothing half-written
 * is visible, the instance's audit chain verifies (verifyAuditDatabase, with no gap but a recorded
 * `lines-lost` one naming every call that ran without its line while PostgreSQL was away: the README's
 * design commits each call's line before the call returns, in one transaction per group, so a kill
 * loses only lines of calls that had not returned), and every acknowledged call has its line.
 */

const HARNESS = path.resolve('test/reliability/harness/writer.mjs');
const noteBody = (i: number) => `begin ${i}\n${`line ${i} `.repeat(6000)}\nend ${i}\n`;
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

type Kind = 'note' | 'task' | 'turn';
/** unrecorded: the call ran and returned, but said its audit line could not be written. */
type Ack = { ack: Kind; i: number; unrecorded?: boolean };
type Fail = { fail: Kind; i: number; message: string };

let pg: TestPostgres;
let url: string;

beforeAll(async () => {
  requireFreshBuild();
  pg = await startPostgres();
  url = await pg.database('memo');
}, SPAWN_TIMEOUT_MS);

/** The writer's environment: the database URL travels here, never in argv. */
const env = () => ({ ...process.env, MEMO_DATABASE_URL: url });

interface Writer {
  acks: Ack[];
  fails: Fail[];
  stderr(): string;
  conversation: Promise<string>;
  /** Resolves once `until` holds for what the writer reported so far (checked on each line). */
  when(until: (acks: Ack[], fails: Fail[]) => boolean): Promise<void>;
  /** SIGKILL, then waits for the exit; fails if the writer had ended by itself. */
  kill(): Promise<void>;
}

function startWriter(mode: 'write' | 'endure', root: string, data: string, conversation: string, first: number): Writer {
  const child = killWhenDone(
    spawn(process.execPath, [HARNESS, mode, root, data, conversation, String(first)], { env: env(), stdio: ['ignore', 'pipe', 'pipe'] }),
  );
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const acks: Ack[] = [];
  const fails: Fail[] = [];
  const waiters: Array<{ until: (a: Ack[], f: Fail[]) => boolean; resolve: () => void }> = [];
  let ready: (id: string) => void = () => {};
  const conversationId = new Promise<string>((r) => (ready = r));
  let killed = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const ended = exited.then((end) => {
    if (!killed) throw new Error(`the writer ended by itself (${end.code}, ${end.signal}) before it was killed: ${stderr}`);
    return end;
  });
  ended.catch(() => {});
  readline.createInterface({ input: child.stdout }).on('line', (line) => {
    const msg = JSON.parse(line) as { ready?: boolean; conversation?: string } & Partial<Ack> & Partial<Fail>;
    if (msg.ready) ready(msg.conversation!);
    if (msg.ack) acks.push({ ack: msg.ack, i: msg.i!, ...(msg.unrecorded ? { unrecorded: true } : {}) });
    if (msg.fail) fails.push({ fail: msg.fail, i: msg.i!, message: msg.message! });
    for (const w of [...waiters]) {
      if (w.until(acks, fails) && !killed) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  });
  return {
    acks,
    fails,
    stderr: () => stderr,
    conversation: Promise.race([conversationId, ended.then(() => '')]),
    when: (until) =>
      Promise.race([
        new Promise<void>((resolve) => (until(acks, fails) ? resolve() : waiters.push({ until, resolve }))),
        ended.then(() => {
          throw new Error('the writer exited');
        }),
      ]),
    async kill() {
      killed = true;
      child.kill('SIGKILL');
      const end = await exited;
      expect(end.signal).toBe('SIGKILL');
    },
  };
}

interface Seen {
  notes: Array<{ path: string; title: string; sha256: string }>;
  tasks: string[];
  history: Array<{ role: string; content: string }>;
}

/** Boots a kernel on the same folders and database (recovering from the crash) and reads everything back through its tools. */
async function check(root: string, data: string, conversation: string): Promise<Seen> {
  const child = killWhenDone(spawn(process.execPath, [HARNESS, 'check', root, data, conversation, '0'], { env: env(), stdio: ['ignore', 'pipe', 'pipe'] }));
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`the checker failed (${code}): ${stderr}`);
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as Seen;
}

interface AuditLine {
  seq: number;
  tool?: string;
  outcome?: string;
  event?: string;
  caller?: { id?: string };
  args?: { title?: string };
}

/** The instance's chain as stored, line by line. */
async function chainLines(instance: string): Promise<AuditLine[]> {
  const rows = await pg.query<{ line: string }>('SELECT line FROM memo_audit.entry WHERE instance = $1 ORDER BY seq', [instance], 'memo');
  return rows.map((r) => JSON.parse(r.line) as AuditLine);
}

/** Everything the kernel shows after a crash, checked against what the writer had acknowledged. */
async function expectWholeAfterCrash(root: string, data: string, conversation: string, acked: Ack[]): Promise<void> {
  const seen = await check(root, data, conversation);
  const notesByTitle = new Map(seen.notes.map((n) => [n.title, n]));
  const ackedOf = (kind: Kind) => acked.filter((a) => a.ack === kind).map((a) => a.i);
  const recordedOf = (kind: Kind) => acked.filter((a) => a.ack === kind && !a.unrecorded).map((a) => a.i);
  const unrecordedTasks = new Set(acked.filter((a) => a.ack === 'task' && a.unrecorded).map((a) => `Task ${a.i}`));

  // Every acknowledged write is there, and whole.
  for (const i of ackedOf('note')) expect(notesByTitle.get(`Note ${i}`)?.sha256).toBe(sha256(noteBody(i)));
  for (const i of ackedOf('task')) expect(seen.tasks).toContain(`Task ${i}`);
  const contents = seen.history.map((m) => m.content);
  for (const i of ackedOf('turn')) expect(contents).toEqual(expect.arrayContaining([`question ${i}`, `answer ${i}`]));

  // Nothing half-written: whole notes of some round, each task once with its whole title, whole
  // question/answer pairs in order, and nothing beyond the one call that was in flight at each kill.
  for (const n of seen.notes) {
    const round = Number(/^Note (\d+)$/.exec(n.title)?.[1] ?? NaN);
    expect(Number.isInteger(round)).toBe(true);
    expect(n.sha256).toBe(sha256(noteBody(round)));
  }
  for (const t of seen.tasks) expect(t).toMatch(/^Task \d+$/);
  expect(new Set(seen.tasks).size).toBe(seen.tasks.length);
  expect(contents.length % 2).toBe(0);
  let previous = -1;
  for (let k = 0; k < contents.length; k += 2) {
    const round = Number(/^question (\d+)$/.exec(contents[k]!)?.[1] ?? NaN);
    expect([contents[k], contents[k + 1]]).toEqual([`question ${round}`, `answer ${round}`]);
    expect(round).toBeGreaterThan(previous);
    previous = round;
  }
  expect(seen.history.map((m) => m.role)).toEqual(contents.map((_, k) => (k % 2 === 0 ? 'user' : 'assistant')));

  // The chain of this instance verifies, with no gap but the recorded ones for lines lost while the
  // database was away (nothing committed was lost or torn), and each call that ran unrecorded is named there.
  const instance = instanceId(data);
  const report = await verifyAuditDatabase(DatabaseUrl.parse(url), data, instance);
  const mine = report.chains.find((c) => c.instance === instance);
  const lostGaps = mine?.gaps.filter((g) => g.seen === 'lines-lost') ?? [];
  if (!report.ok && !(mine?.problem?.recorded && lostGaps.length === mine.gaps.length))
    throw new Error(`the audit chain does not verify:\n${formatAuditDatabaseReport(report, instance)}`);
  expect(report.problem).toBeUndefined();
  expect(mine).toMatchObject({ ok: lostGaps.length === 0, local: true });
  const lostRan = lostGaps.flatMap((g) => g.lost?.calls ?? []).filter((c) => c.outcome === 'ok');
  for (const a of acked.filter((x) => x.unrecorded)) expect(lostRan.map((c) => c.tool)).toContain(`vault_create_${a.ack}`);
  expect(mine!.entries).toBeGreaterThan(0);

  // Every acknowledged tool call has its own line (its title in the args, outcome ok): its line was
  // committed before the call returned, so the kill could not take it. The exception is a call that
  // returned saying its line could not be written (the database went away under it).
  const lines = (await chainLines(instance)).filter((l) => l.caller?.id === 'crash-writer' && l.outcome === 'ok');
  const titled = (tool: string) => new Set(lines.filter((l) => l.tool === tool).map((l) => l.args?.title));
  const noteLines = titled('vault_create_note');
  const taskLines = titled('vault_create_task');
  for (const i of recordedOf('note')) expect(noteLines).toContain(`Note ${i}`);
  for (const i of recordedOf('task')) expect(taskLines).toContain(`Task ${i}`);
  // A task in the database without its line would be a call that ran unrecorded without saying so.
  for (const t of seen.tasks.filter((x) => !unrecordedTasks.has(x))) expect(taskLines).toContain(t);
}

describe('kill -9 during writes, on PostgreSQL', () => {
  it(
    'keeps every acknowledged note, task and turn whole across SIGKILLs at three steps and a crash of PostgreSQL itself, shows nothing half-written, and the chain verifies with no gap but a recorded one naming each call that ran unrecorded',
    async () => {
      const dir = removeWhenDone(tempDir('memo-crash-pg-'));
      const root = path.join(dir, 'root');
      const data = path.join(dir, 'data');
      fs.mkdirSync(path.join(root, 'vault'), { recursive: true });
      fs.mkdirSync(data);

      let conversation = '-';
      let next = 0;
      const acked: Ack[] = [];
      // Killed right after a note (the task's commit under way), after a task (the turn's), after a
      // turn (the next note and its audit line).
      for (const kill of [
        { kind: 'note', round: 3 },
        { kind: 'task', round: 8 },
        { kind: 'turn', round: 13 },
      ] as const) {
        const w = startWriter('write', root, data, conversation, next);
        conversation = await w.conversation;
        await w.when((acks) => acks.some((a) => a.ack === kill.kind && a.i === kill.round));
        await w.kill();
        acked.push(...w.acks);
        next = Math.max(...w.acks.map((a) => a.i)) + 1;
        expect(w.fails).toEqual([]);
        expect(w.acks.filter((a) => a.unrecorded)).toEqual([]);
        await expectWholeAfterCrash(root, data, conversation, acked);
      }
      expect(acked.filter((a) => a.ack === 'turn').length).toBeGreaterThanOrEqual(12);

      // PostgreSQL stopped like a crash (pg_ctl -m immediate) while the writer runs, then started
      // again: the calls made while it is down fail, saying the database cannot be reached or used,
      // and the same kernel process writes again once it is back.
      const w = startWriter('endure', root, data, conversation, next);
      await w.conversation;
      await w.when((acks) => acks.filter((a) => a.ack === 'turn').length >= 2);
      const acksAtStop = w.acks.length;
      await pg.stop();
      // Down until every step (a note, a task, a turn) has failed at least once; started again even if that never comes.
      const { acksWhileDown, failsWhileDown } = await w
        .when((_, fails) => new Set(fails.map((f) => f.fail)).size === 3)
        .then(() => ({ acksWhileDown: w.acks.slice(acksAtStop), failsWhileDown: w.fails.length }))
        .finally(() => pg.start());
      const acksAtStart = w.acks.length;
      await w.when((acks) => acks.slice(acksAtStart).filter((a) => a.ack === 'turn').length >= 3);
      await w.kill();
      acked.push(...w.acks);

      const unrecorded = w.acks.filter((a) => a.unrecorded);
      console.log(
        `PostgreSQL crash under the writer: ${failsWhileDown} calls failed while it was down, ${acksWhileDown.length} acknowledged from the stop on ` +
          `(${unrecorded.map((a) => `${a.ack} ${a.i} unrecorded`).join(', ') || 'none unrecorded'}), ${w.acks.length - acksAtStart} after the start; e.g. ${w.fails
            .slice(0, 3)
            .map((f) => `${f.fail}: ${f.message.slice(0, 200)}`)
            .join(' | ')}`,
      );
      // Only the first call to find the database gone can run without its line (and says so, to the
      // caller and on stderr); from then on calls are refused until the database answers.
      expect(unrecorded.length).toBeLessThanOrEqual(1);
      for (const a of unrecorded) {
        expect(acksWhileDown).toContainEqual(a);
        expect(w.stderr()).toMatch(/the audit line of vault_create_\w+ \(call [^)]+\) could not be written/);
      }
      expect(w.stderr()).not.toContain(pg.password);
      // Each failure is clear: no password, no stack trace, and it says the database cannot be reached
      // or used, including the call whose connection was lost under a query (kernel/storage/postgres.ts
      // explains that too, instead of the driver's "Connection terminated unexpectedly").
      for (const f of w.fails) {
        expect(f.message).not.toContain(pg.password);
        expect(f.message).not.toMatch(/\n\s+at |\.ts:\d|\.js:\d/);
        expect(f.message).toMatch(/database .*cannot be (reached|used)/i);
      }
      // Nothing reported failed is visible as half-written, everything acknowledged before and after is there.
      await expectWholeAfterCrash(root, data, conversation, acked);
    },
    SPAWN_TIMEOUT_MS * 2,
  );
});
