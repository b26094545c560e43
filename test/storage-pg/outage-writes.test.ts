/**
 * PostgreSQL going away under a kernel while several vault planning writes are in flight, round
 * after round: every write the outage cuts off is the same clean refusal, whatever moment it hit
 * (waiting for the server's answer, or between two statements of its transaction, where typeorm has
 * already given the dead connection up), with nothing of the driver in the result or the audit
 * trail: no "Query runner already released", no bare "Connection terminated", no stack.
 *
 * Each round ends every server process serving the kernels as a fast shutdown, a failover or an
 * administrator does (pg_terminate_backend: each backend's FATAL "terminating connection due to
 * administrator command", which can arrive while a transaction is between statements, or in the
 * same read as the answer to its last one); in the crash rounds the server is also stopped like a
 * crash (`pg_ctl stop -m immediate`) at once and started again, so the writes that follow are
 * refused at connect (the second test; six rounds each). Three kernels, each on a database of its
 * own on one server, so three planning transactions run at once (one kernel's writes take turns:
 * the vault's queue and its planning lock); each has four callers writing in a loop. The cut comes from the writers' own progress
 * (after a number of writes in the round), never from a timer.
 */
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait.js';
import { vaultKernel, type VaultFixture } from '../plugins/vault/helpers.js';
import type { ToolResult } from '../../kernel/tools/contract.js';

const KERNELS = 3;
const CALLERS = 4;
/** Rounds per test: one test only ends the server's connections, the other also crash-stops it. */
const ROUNDS = 6;
/** Writes that succeed in a round before the cut (every caller is writing by then). */
const BEFORE_CUT = 2 * KERNELS * CALLERS;

/** What typeorm says of a connection it gave up. */
const TYPEORM_TEXT = /query runner|QueryFailedError|TypeORM/i;
/** pg's words for its own client state, which Memo's sentence puts plainly. */
const PG_TEXT = /Connection terminated|not queryable/i;
const STACK = /\n\s+at |\.ts:\d|\.js:\d/;

let server: TestPostgres;
beforeAll(async () => {
  server = await startPostgres();
}, 120_000);

const saved = process.env.MEMO_DATABASE_URL;
afterAll(() => {
  if (saved === undefined) delete process.env.MEMO_DATABASE_URL;
  else process.env.MEMO_DATABASE_URL = saved;
});

interface Failure {
  round: number;
  kernel: number;
  afterCut: boolean;
  code: string;
  message: string;
}

async function outageRounds(stop: boolean): Promise<{ refusalsRecorded: number }> {
  const databases: string[] = [];
  const kernels: VaultFixture[] = [];
  for (let k = 0; k < KERNELS; k++) {
    const url = await server.database();
    databases.push(new URL(url).pathname.slice(1));
    process.env.MEMO_DATABASE_URL = url;
    kernels.push(await vaultKernel());
  }
  for (const [k, fx] of kernels.entries()) expect((await fx.call('vault_create_task', { title: `warm ${k}` })).ok).toBe(true);

  const failures: Failure[] = [];
  let written = 0;
  for (let round = 1; round <= ROUNDS; round++) {
    const cut = async () => {
      await server.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ANY($1) AND pid <> pg_backend_pid()`, [databases]);
      if (stop) await server.stop();
    };
    let succeeded = 0;
    let cutting = null as Promise<void> | null;
    let failedSinceCut = 0;
    let back = false;
    let over = false;
    /** The callers that wrote again once the server was back. */
    const again = new Set<string>();
    const writer = async (k: number, fx: VaultFixture, c: number) => {
      for (let n = 0; !over; n++) {
        const startedBack = back;
        const r: ToolResult = await fx.call('vault_create_task', { title: `r${round} k${k} c${c} n${n}` });
        if (r.ok) {
          written++;
          if (++succeeded >= BEFORE_CUT && !cutting) cutting = cut();
          if (startedBack) again.add(`${k}/${c}`);
          continue;
        }
        if (cutting) failedSinceCut++;
        failures.push({ round, kernel: k, afterCut: cutting !== null, code: r.error.code, message: r.error.message });
        // A refusal can come back without any I/O (the audit trail's guard): let the rest of the loop run.
        await new Promise((resolve) => setImmediate(resolve));
      }
    };
    const writers = Promise.all(kernels.flatMap((fx, k) => Array.from({ length: CALLERS }, (_, c) => writer(k, fx, c))));
    try {
      await waitFor(() => cutting !== null, { what: `${BEFORE_CUT} writes in round ${round}` });
      await cutting;
      // The writes in flight lost their connections at the cut; once one refusal is in, the server comes back.
      await waitFor(() => failedSinceCut > 0, { what: `a refusal in round ${round}` });
      if (stop) await server.start();
      back = true;
      // Every caller writes again (each kernel reconnects by itself; the audit trail probes every 2 s).
      await waitFor(() => again.size === KERNELS * CALLERS, {
        what: () => `every caller to write again after round ${round} (${again.size} did)`,
        intervalMs: 50,
      });
    } finally {
      over = true;
      await writers;
    }
  }

  const database = `postgres://memo:\\[masked\\]@127\\.0\\.0\\.1:${server.port}/t\\d+`;
  /** The pack's refusal: the database cannot be reached (refused at connect, or lost under the write), and Memo reconnects by itself. */
  const planning = new RegExp(
    `^vault_create_task failed: The database ${database} \\(schema "pack_vault__vault_planning"\\) cannot be reached` +
      `( \\([^)]*\\); calls|: the connection was lost during a query \\([^)]*\\); a write under way may or may not have been saved\\. Calls)` +
      ` that need it fail until it answers again, and Memo reconnects by itself\\.$`,
  );
  /** The audit trail's refusal before a call runs, while its lines cannot be written (its reason in plain words, as the stores'). */
  const audit = new RegExp(
    `^The audit trail's database ${database} cannot be used \\([^)]*\\), so this call could not be recorded: calls are refused until it answers again \\(Memo reconnects by itself\\)\\.$`,
  );
  const kinds = new Map<string, number>();
  for (const f of failures) {
    const kind = `${f.code}: ${f.message
      .replace(/postgres:\/\/\S+/g, 'URL')
      .replace(/\d+/g, 'N')
      .slice(0, 170)}`;
    kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
  }
  const leaked = failures.filter((f) => TYPEORM_TEXT.test(f.message));
  console.log(
    `${ROUNDS} rounds${stop ? ' (each a crash stop)' : ''}, ${written} writes answered, ${failures.length} refused:\n` +
      [...kinds].map(([kind, n]) => `  ${n} x ${kind}`).join('\n') +
      `\ntypeorm's words in ${leaked.length} results, in rounds ${[...new Set(leaked.map((f) => f.round))].join(', ') || 'none'}`,
  );

  // Writes failed only from the cut on, in every round.
  expect(failures.filter((f) => !f.afterCut)).toEqual([]);
  expect(new Set(failures.map((f) => f.round)).size).toBe(ROUNDS);
  const unclean = failures.filter(
    (f) =>
      TYPEORM_TEXT.test(f.message) ||
      STACK.test(f.message) ||
      f.message.includes(server.password) ||
      PG_TEXT.test(f.message) ||
      !(f.code === 'TOOL_FAILED' ? planning.test(f.message) : f.code === 'PERMISSION_DENIED' && audit.test(f.message)),
  );
  expect(unclean).toEqual([]);

  // Nor in the audit trail: the lines of the calls it could record (mostly those of the rounds the server stayed up).
  const lines: string[] = [];
  for (const datname of databases) lines.push(...(await server.query<{ line: string }>(`SELECT line FROM memo_audit.entry`, [], datname)).map((r) => r.line));
  const refusalsRecorded = lines.filter((l) => l.includes('cannot be reached')).length;
  console.log(`${lines.length} audit lines, ${refusalsRecorded} of them a refused write`);
  expect(lines.filter((l) => TYPEORM_TEXT.test(l) || PG_TEXT.test(l) || STACK.test(l) || l.includes(server.password))).toEqual([]);
  for (const fx of kernels) await fx.close();
  return { refusalsRecorded };
}

describe('PostgreSQL going away under concurrent writes', () => {
  it('fails every write whose connection is ended under it with the same clean refusal, whatever moment it hit, and records the refusals', async () => {
    const { refusalsRecorded } = await outageRounds(false);
    expect(refusalsRecorded).toBeGreaterThan(0);
  }, 240_000);

  it('fails the writes cut off by a crash stop, and those refused at connect until the server is back, with the same clean refusal', async () => {
    await outageRounds(true);
  }, 240_000);
});
