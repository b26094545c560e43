/** Two hosts (two kernels, one data folder, one clock): a long run is alive while its host beats, and a cancel from the other host stops it. */
import { ManualClock } from '../../../kernel/clock.js';
import { FRIDAY_NOON, hangsUntilAborted, routinesKernel, value, type RoutinesFixture } from './helpers.js';

const MIN = 60_000;

async function waitUntil(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (condition()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('the condition never held');
}

describe('two hosts on one data folder', () => {
  let a: RoutinesFixture;
  let b: RoutinesFixture;
  afterEach(async () => {
    await a?.close();
    await b?.close();
  });

  async function longRunOnA(): Promise<string> {
    const clock = new ManualClock(FRIDAY_NOON);
    a = await routinesKernel({ clock, script: (req) => hangsUntilAborted(req.signal) });
    b = await routinesKernel({ clock, dataDir: a.dataDir });
    // Only A's scheduler learns of it before it is due (B looks every minute; it is due in 15).
    const id = value(await a.call('create_routine', { name: 'Long', prompt: 'p', schedule: { kind: 'every', every: 15, unit: 'minutes' } })).id as string;
    for (let m = 1; m <= 15; m++) {
      clock.advance(MIN);
      await Promise.all([a.idle(), b.idle()]);
    }
    await waitUntil(() => a.runs(id).some((r) => r.status === 'running'));
    return id;
  }

  it('does not mark a run crashed while its host keeps beating, however long it takes', async () => {
    const id = await longRunOnA();
    // Ten minutes, a minute at a time: A beats every minute, B looks every minute.
    for (let m = 0; m < 10; m++) {
      a.clock.advance(MIN);
      await Promise.all([a.idle(), b.idle()]);
      // A's heartbeat for this minute is in its row before B looks again.
      await waitUntil(() => a.runs(id).find((r) => r.status === 'running')?.heartbeat_at === a.clock.now());
    }
    const runs = a.runs(id);
    expect(runs.filter((r) => r.status === 'crashed')).toEqual([]);
    expect(runs.filter((r) => r.status === 'running')).toHaveLength(1);
  });

  it('stops a run on one host at its next heartbeat when the routine is cancelled on the other', async () => {
    const id = await longRunOnA();
    expect(value(await b.call('cancel_routine', { id }))).toMatchObject({ status: 'cancelled', stopped_run: false });
    a.clock.advance(MIN);
    await waitUntil(() => a.runs(id).every((r) => r.status !== 'running'));
    await a.settle();
    expect(a.runs(id).filter((r) => r.status !== 'skipped')).toEqual([
      expect.objectContaining({ status: 'cancelled', error: 'Stopped: the routine was cancelled.' }),
    ]);
  });
});
