/**
 * The routines pack with its database in PostgreSQL (schema pack_routines__routines): its tool suite
 * as it is (it also runs on SQLite in test/plugins/routines), a scheduled run end to end, and two
 * instances (two kernels, two data folders, one database, one clock) running a due occurrence once.
 * The pack's other suites read routines.sqlite directly, so they stay SQLite-only; the store they
 * exercise runs on both backends in routines-store.test.ts.
 */
import { ManualClock } from '../../kernel/clock.js';
import { DatabaseUrl } from '../../kernel/storage/database-url.js';
import { openPackDatabase } from '../../kernel/storage/pack-database.js';
import { ENTITIES, MIGRATIONS } from '../../plugins/routines/schema.js';
import { RoutineStore } from '../../plugins/routines/store.js';
import { tempDir } from '../helpers/kernel-fixture.js';
import { reply } from '../helpers/scripted-provider.js';
import { FRIDAY_NOON, routinesKernel, value, type RoutinesFixture } from '../plugins/routines/helpers.js';
import { onPostgres } from './on-postgres.js';
import '../plugins/routines/tools.test.js';

const pg = onPostgres(['pack_routines__routines']);
const MIN = 60_000;

/** The runs as another instance reads them: through the store, on the same database. */
async function runsIn(url: string, routineId: string) {
  const ds = await openPackDatabase(
    tempDir(),
    { name: 'routines', entities: ENTITIES, migrations: MIGRATIONS, portable: true },
    { url: DatabaseUrl.parse(url), packId: 'routines' },
  );
  try {
    return await new RoutineStore(ds).history(routineId, 100);
  } finally {
    await ds.destroy();
  }
}

describe('routines on PostgreSQL', () => {
  const kernels: RoutinesFixture[] = [];
  afterEach(async () => {
    for (const k of kernels.splice(0)) await k.close();
  });

  it('runs a routine when it is due and records the run in the shared database', async () => {
    const fx = await routinesKernel({ script: () => reply('Reported.') });
    kernels.push(fx);
    const id = value(await fx.call('create_routine', { name: 'Report', prompt: 'Report.', schedule: { kind: 'every', every: 15, unit: 'minutes' } }))
      .id as string;
    await fx.advanceTo(FRIDAY_NOON + 15 * MIN);
    const runs = await runsIn(pg.url(), id);
    expect(runs).toEqual([expect.objectContaining({ scheduledFor: FRIDAY_NOON + 15 * MIN, attempt: 1, status: 'ok', answer: 'Reported.' })]);
    expect(value(await fx.call('list_routines', {})).routines[0]).toMatchObject({ last_result: { status: 'ok', answer: 'Reported.' } });
  });

  it('runs each occurrence once when two instances with their own data folders share the database', async () => {
    const clock = new ManualClock(FRIDAY_NOON);
    const a = await routinesKernel({ clock, script: () => reply('from a') });
    const b = await routinesKernel({ clock, script: () => reply('from b') });
    kernels.push(a, b);
    expect(a.dataDir).not.toBe(b.dataDir);
    const id = value(await a.call('create_routine', { name: 'Shared', prompt: 'p', schedule: { kind: 'every', every: 15, unit: 'minutes' } })).id as string;
    // B learns of the routine from the database, not from A.
    expect(value(await b.call('list_routines', {})).routines.map((r: { id: string }) => r.id)).toEqual([id]);
    for (let m = 1; m <= 45; m++) {
      clock.advance(MIN);
      await Promise.all([a.settle(), b.settle()]);
    }
    const runs = await runsIn(pg.url(), id);
    expect(runs.map((r) => [r.scheduledFor, r.attempt, r.status]).sort()).toEqual([
      [FRIDAY_NOON + 15 * MIN, 1, 'ok'],
      [FRIDAY_NOON + 30 * MIN, 1, 'ok'],
      [FRIDAY_NOON + 45 * MIN, 1, 'ok'],
    ]);
    // Each run was one model turn, on one of the two instances.
    expect(a.providers.length + b.providers.length).toBe(3);
  });
});
