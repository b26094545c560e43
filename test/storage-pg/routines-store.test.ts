/**
 * The routines store on both backends: the writes that decide who runs what (the run insert that
 * the unique occurrence index lets through once, the conditional advance, updates by the owner only)
 * give the same answers on a SQLite file and on PostgreSQL, and on PostgreSQL they hold between two
 * instances racing for the same occurrence.
 */
import type { DataSource } from 'typeorm';
import { DatabaseUrl } from '../../kernel/storage/database-url.js';
import { openPackDatabase } from '../../kernel/storage/pack-database.js';
import { ENTITIES, MIGRATIONS } from '../../plugins/routines/schema.js';
import { RoutineStore, type NewRoutine } from '../../plugins/routines/store.js';
import { tempDir } from '../helpers/kernel-fixture.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';

let server: TestPostgres;
beforeAll(async () => {
  server = await startPostgres();
}, 120_000);

const opened: DataSource[] = [];
afterEach(async () => {
  for (const ds of opened.splice(0)) if (ds.isInitialized) await ds.destroy();
});

type Backend = 'sqlite' | 'postgres';
/** Opens the routines database as the pack does; `open()` again: another host on the same data. */
async function database(backend: Backend): Promise<{ open(): Promise<RoutineStore>; openRaw(migrations: typeof MIGRATIONS): Promise<DataSource> }> {
  const dir = tempDir();
  const url = backend === 'postgres' ? DatabaseUrl.parse(await server.database()) : null;
  const openRaw = async (migrations: typeof MIGRATIONS) => {
    const ds = await openPackDatabase(dir, { name: 'routines', entities: ENTITIES, migrations, portable: true }, url ? { url, packId: 'routines' } : undefined);
    opened.push(ds);
    return ds;
  };
  return {
    openRaw,
    async open() {
      return new RoutineStore(await openRaw(MIGRATIONS));
    },
  };
}

// Times past 2^31 ms, as every real epoch millisecond is: PostgreSQL's integer would overflow.
const T0 = Date.UTC(2026, 2, 27, 12, 0);
const MIN = 60_000;

function routine(id: string, next: number | null, extra: Partial<NewRoutine> = {}): NewRoutine {
  return {
    id,
    name: `Routine ${id}`,
    prompt: 'Do it.',
    schedule: { kind: 'every', every: 15, unit: 'minutes' },
    readBack: 'every 15 minutes',
    timeZone: 'UTC',
    anchor: T0,
    provider: 'scripted-one',
    model: 'model-a',
    tools: ['echo_safe'],
    mode: 'vault',
    misfire: 'skip',
    misfireGraceMinutes: 10,
    status: 'active',
    nextRunAt: next,
    createdBy: 'test',
    createdAt: T0,
    ...extra,
  };
}

const claim = (id: string, routineId: string, owner: string, attempt = 1) => ({
  id,
  routineId,
  scheduledFor: T0 + 15 * MIN,
  attempt,
  trigger: 'schedule' as const,
  owner,
  now: T0 + 15 * MIN,
});

describe.each<Backend>(['sqlite', 'postgres'])('the routines store on %s', (backend) => {
  it('keeps routines with their times, JSON fields and access mode, and finds the due ones in order', async () => {
    const store = await (await database(backend)).open();
    await store.create(routine('b', T0 + 30 * MIN));
    await store.create(routine('a', T0 + 15 * MIN));
    await store.create(routine('p', T0, { status: 'paused' }));
    expect(await store.get('a')).toMatchObject({
      id: 'a',
      anchor: T0,
      nextRunAt: T0 + 15 * MIN,
      tools: ['echo_safe'],
      mode: 'vault',
      schedule: { kind: 'every', every: 15 },
      createdAt: T0,
    });
    expect((await store.get('p'))?.mode).toBe('vault');
    expect((await store.due(T0 + 15 * MIN)).map((r) => r.id)).toEqual(['a']);
    expect((await store.due(T0 + 60 * MIN)).map((r) => r.id)).toEqual(['a', 'b']);
    expect(await store.earliestNext()).toBe(T0 + 15 * MIN);
    expect((await store.list(['paused'])).map((r) => r.id)).toEqual(['p']);
  });

  it('reads a routine made before routines had a mode as Computer access, the mode its runs had', async () => {
    const data = await database(backend);
    const old = await data.openRaw(MIGRATIONS.slice(0, 1));
    await old.query(
      `INSERT INTO "routines" ("id", "name", "prompt", "schedule", "read_back", "time_zone", "anchor", "provider", "model", "tools", "misfire", "misfire_grace_minutes", "status", "next_run_at", "created_by", "created_at", "updated_at")
       VALUES ('old', 'Old', 'Do it.', '{"kind":"every","every":15,"unit":"minutes"}', 'every 15 minutes', 'UTC', ${T0}, 'p', 'm', '["run_command"]', 'skip', 10, 'active', ${T0}, 'test', ${T0}, ${T0})`,
    );
    await old.destroy();
    const store = await data.open();
    expect(await store.get('old')).toMatchObject({ id: 'old', tools: ['run_command'], mode: 'computer' });
    await store.create(routine('new', T0));
    expect((await store.get('new'))?.mode).toBe('vault');
  });

  it('advances a routine only from the time it expected: the second host to try learns it lost', async () => {
    const data = await database(backend);
    const one = await data.open();
    const two = await data.open();
    await one.create(routine('r', T0 + 15 * MIN));
    expect(await one.advance('r', T0 + 15 * MIN, T0 + 30 * MIN, T0)).toBe(true);
    expect(await two.advance('r', T0 + 15 * MIN, T0 + 30 * MIN, T0)).toBe(false);
    expect((await two.get('r'))?.nextRunAt).toBe(T0 + 30 * MIN);
  });

  it('lets one claim of an occurrence through, and a skip of it only when nothing was recorded', async () => {
    const data = await database(backend);
    const one = await data.open();
    const two = await data.open();
    await one.create(routine('r', T0 + 15 * MIN));
    expect(await one.claim(claim('run-1', 'r', 'host-one'))).toBe(true);
    expect(await two.claim(claim('run-2', 'r', 'host-two'))).toBe(false);
    expect(await two.skip({ id: 'run-3', routineId: 'r', scheduledFor: T0 + 15 * MIN, attempt: 1, trigger: 'schedule', now: T0 }, 'missed')).toBe(false);
    // A retry is another attempt of the same occurrence: its own claim.
    expect(await two.claim(claim('run-4', 'r', 'host-two', 2))).toBe(true);
    expect((await one.history('r')).map((r) => [r.id, r.owner, r.attempt])).toEqual([
      ['run-4', 'host-two', 2],
      ['run-1', 'host-one', 1],
    ]);
  });

  it('records the end of a run for its owner only, and marks a dead host’s run crashed once', async () => {
    const data = await database(backend);
    const store = await data.open();
    await store.create(routine('r', T0 + 15 * MIN));
    await store.claim(claim('run-1', 'r', 'host-one'));
    await store.claim({ ...claim('run-2', 'r', 'host-dead'), scheduledFor: T0 + 30 * MIN, now: T0 + 30 * MIN });
    const end = { status: 'ok' as const, endedAt: T0 + 16 * MIN, stopReason: 'final', answer: 'done', error: null, steps: [], retryAt: null };
    expect(await store.finish('run-1', 'host-other', end)).toBe(false);
    expect(await store.heartbeat('run-1', 'host-one', T0 + 16 * MIN)).toBe(true);
    expect(await store.finish('run-1', 'host-one', end)).toBe(true);
    const crashed = await store.markCrashed((r) => r.owner === 'host-dead', T0 + 40 * MIN);
    expect(crashed.map((r) => r.id)).toEqual(['run-2']);
    expect(await store.markCrashed((r) => r.owner === 'host-dead', T0 + 41 * MIN)).toEqual([]);
    expect((await store.lastRun('r'))?.status).toBe('crashed');
    expect((await store.history('r')).find((r) => r.id === 'run-1')).toMatchObject({ status: 'ok', answer: 'done', endedAt: T0 + 16 * MIN });
  });

  it('lists due retries and takes each off once', async () => {
    const data = await database(backend);
    const store = await data.open();
    await store.create(routine('r', T0 + 15 * MIN));
    await store.claim(claim('run-1', 'r', 'host-one'));
    await store.finish('run-1', 'host-one', {
      status: 'failed',
      endedAt: T0 + 16 * MIN,
      stopReason: 'error',
      answer: null,
      error: 'model down',
      steps: [],
      retryAt: T0 + 17 * MIN,
    });
    expect(await store.earliestRetry()).toBe(T0 + 17 * MIN);
    expect(await store.dueRetries(T0 + 16 * MIN)).toEqual([]);
    expect((await store.dueRetries(T0 + 17 * MIN)).map((r) => r.id)).toEqual(['run-1']);
    expect(await store.clearRetry('run-1')).toBe(true);
    expect(await store.clearRetry('run-1')).toBe(false);
  });
});

describe('the routines store on PostgreSQL, two instances racing', () => {
  it('lets exactly one of many simultaneous claims of one occurrence through', async () => {
    const data = await database('postgres');
    const hosts = await Promise.all([data.open(), data.open(), data.open()]);
    await hosts[0].create(routine('r', T0 + 15 * MIN));
    const outcomes = await Promise.all(Array.from({ length: 12 }, (_, i) => hosts[i % 3]!.claim(claim(`run-${i}`, 'r', `host-${i % 3}`))));
    expect(outcomes.filter(Boolean)).toHaveLength(1);
    expect(await hosts[1].history('r')).toHaveLength(1);
  });

  it('lets exactly one of many simultaneous advances of one routine through', async () => {
    const data = await database('postgres');
    const hosts = await Promise.all([data.open(), data.open()]);
    await hosts[0].create(routine('r', T0 + 15 * MIN));
    const outcomes = await Promise.all(Array.from({ length: 10 }, (_, i) => hosts[i % 2]!.advance('r', T0 + 15 * MIN, T0 + 30 * MIN, T0)));
    expect(outcomes.filter(Boolean)).toHaveLength(1);
  });
});
