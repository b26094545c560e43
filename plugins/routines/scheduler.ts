/**
 * The scheduler `memo serve` (or a host's `kernel.start()`) runs: on the kernel's clock, it finds
 * the routines whose next occurrence is due, decides what to do with missed ones (the routine's
 * misfire policy), and runs each occurrence as one agent turn with caller kind `routine`.
 *
 * Never silently miss, never double-run:
 * - The occurrence lock is a row: each occurrence (routine, time, attempt) is recorded once, as a
 *   run or as skipped, by whichever host's insert lands (a unique index). A host that loses the
 *   insert leaves the occurrence alone. A routine's next run moves on only from the value the host
 *   read, so two hosts never both advance it.
 * - One run at a time per routine: an occurrence that comes while the previous run still goes (here
 *   or on another host) is recorded as skipped, with why.
 * - A running run beats a heartbeat into its row every minute; a run whose host stopped beating
 *   (or whose process on this machine is gone) is marked crashed when a scheduler next starts or
 *   looks, never left "running".
 * - A run that failed (the model call or the run itself) is retried twice, after 1 and 5 minutes;
 *   the retry is a row too, so it survives a restart and runs once.
 * - Missed occurrences (the host was down, or the machine slept) follow the routine's policy:
 *   `skip`, `run_once` (the latest missed time, once), or `run_once_if_recent` (the default: once
 *   if the latest missed time is less than `misfire_grace_minutes`, default 60, old). Whatever is
 *   not run is recorded as skipped, so the history shows it.
 */
import { randomUUID } from 'node:crypto';
import * as os from 'node:os';
import type { ClockTimer, TurnResult } from 'memo-kernel/pack';
import type { PackApi } from 'memo-kernel/pack';

/** What the scheduler uses of the pack's runtime (runtime.ts): the store, the time, and the kernel's clock, logger and agent. */
export interface SchedulerHost {
  store(): Promise<RoutineStore>;
  now(): number;
  readonly api: Pick<PackApi, 'clock' | 'logger' | 'agent'>;
}
import { formatInstant, nextRunAfter, runsBetween } from './schedule.js';
import type { RunStatus, RunTrigger } from './schema.js';
import type { Routine, RoutineStore, Run } from './store.js';

/** An occurrence this late is a misfire, not a run on time (a timer fires a little late; a host that was down, much later). */
export const ON_TIME_MS = 60_000;
export const HEARTBEAT_MS = 60_000;
/** A running row whose heartbeat is this old belongs to a host that is gone. */
export const STALE_MS = 3 * HEARTBEAT_MS;
/** The scheduler looks at the database at least this often: routines another host created or changed. */
export const POLL_MS = 60_000;
/** How soon the scheduler looks again at something due that had to wait (a retry behind a run in progress). */
const BUSY_RECHECK_MS = 5_000;
/** When a failed attempt is retried: after 1 minute, then after 5. */
export const RETRY_DELAYS_MS = [60_000, 5 * 60_000];

export const SYSTEM_PROMPT =
  'You are running a scheduled routine the user set up in Memo. Nobody is watching right now: do what the routine asks with the tools you have, and end with a short report of what you did and found. If a tool is refused, say so in the report rather than trying something else.';

/** This process, as an owner of runs: the machine, the pid (so a restart here can tell its predecessor is gone) and a random part. */
function hostId(): string {
  return `${os.hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
}

/** True when an owner id names a process on this machine that no longer exists. */
function ownerIsGone(owner: string | null): boolean {
  if (!owner) return false;
  const [host, pid] = owner.split(':');
  if (host !== os.hostname() || !pid || !/^\d+$/.test(pid)) return false;
  try {
    process.kill(Number(pid), 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

interface Active {
  runId: string;
  controller: AbortController;
  done: Promise<void>;
}

export class Scheduler {
  readonly owner = hostId();
  private timer: ClockTimer | null = null;
  private ticking: Promise<void> | null = null;
  private again = false;
  private started = false;
  /** Runs of this host, by routine id. */
  private readonly active = new Map<string, Active>();

  constructor(private readonly rt: SchedulerHost) {}

  get isRunning(): boolean {
    return this.started;
  }

  /** Starts scheduling: marks what died with an earlier process, then handles what is due. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    const store = await this.rt.store();
    await this.sweepCrashed(store, true);
    await this.kick();
  }

  /** Stops scheduling; runs in progress are stopped and recorded as cancelled. */
  async stop(): Promise<void> {
    this.started = false;
    if (this.timer) this.rt.api.clock.clearTimeout(this.timer);
    this.timer = null;
    // A look in flight may still start a run: wait for it, then stop every run, until none is left.
    while (this.ticking || this.active.size) {
      await this.ticking?.catch(() => undefined);
      for (const a of this.active.values()) a.controller.abort(new Error('Memo stopped while the routine ran'));
      await Promise.allSettled([...this.active.values()].map((a) => a.done));
    }
  }

  /** Looks at the routines now (after a change), and resolves when that look (and the timer it sets) is done. */
  kick(): Promise<void> {
    if (!this.started) return Promise.resolve();
    if (this.ticking) {
      this.again = true;
      return this.ticking;
    }
    this.ticking = (async () => {
      do {
        this.again = false;
        try {
          await this.tick();
        } catch (err) {
          this.rt.api.logger.warn(`routines: the scheduler could not look at the routines: ${(err as Error)?.message ?? String(err)}`);
        }
      } while (this.again && this.started);
      try {
        await this.arm();
      } catch (err) {
        this.rt.api.logger.warn(`routines: the scheduler could not set its timer: ${(err as Error)?.message ?? String(err)}`);
      }
    })().finally(() => {
      this.ticking = null;
      if (this.again && this.started) void this.kick();
    });
    return this.ticking;
  }

  /** Stops the run in progress on this host for a routine (cancel_routine). */
  stopRun(routineId: string, why: string): boolean {
    const a = this.active.get(routineId);
    if (!a) return false;
    a.controller.abort(new Error(why));
    return true;
  }

  /** Whether this host is running the routine now. */
  runningHere(routineId: string): boolean {
    return this.active.has(routineId);
  }

  /** Waits until the scheduler is not looking at the routines (its runs may go on). */
  async idle(): Promise<void> {
    while (this.ticking) await this.ticking.catch(() => undefined);
  }

  /** Waits for this host's runs in progress to end (tests, run-now). */
  async settled(): Promise<void> {
    while (this.ticking || this.active.size) await Promise.allSettled([this.ticking, ...[...this.active.values()].map((a) => a.done)]);
  }

  /** Runs a routine now, outside its schedule (memo routines run-now); its schedule is unchanged. */
  async runNow(routine: Routine, signal?: AbortSignal): Promise<{ started: boolean; runId?: string; reason?: string }> {
    const store = await this.rt.store();
    const now = this.rt.now();
    if (await this.busy(store, routine.id, now)) return { started: false, reason: 'its previous run is still going' };
    const runId = randomUUID();
    if (!(await store.claim({ id: runId, routineId: routine.id, scheduledFor: now, attempt: 1, trigger: 'manual', owner: this.owner, now })))
      return { started: false, reason: 'another run was started at the same moment' };
    this.execute(store, routine, runId, 1, signal);
    return { started: true, runId };
  }

  /** Sets the one timer: the earliest next run or retry, and at most POLL_MS away (routines another host changed). */
  private async arm(): Promise<void> {
    if (this.timer) this.rt.api.clock.clearTimeout(this.timer);
    this.timer = null;
    if (!this.started) return;
    const store = await this.rt.store();
    const now = this.rt.now();
    const at = Math.min(...[await store.earliestNext(), await store.earliestRetry(), now + POLL_MS].filter((t): t is number => t !== null));
    if (!this.started) return;
    // Still due after a look: a retry waiting for the routine's run in progress. Look again soon, not in a tight loop.
    const delay = at <= now ? BUSY_RECHECK_MS : at - now;
    this.timer = this.rt.api.clock.setTimeout(() => {
      this.timer = null;
      void this.kick();
    }, delay);
  }

  private async tick(): Promise<void> {
    const store = await this.rt.store();
    await this.sweepCrashed(store, false);
    const now = this.rt.now();
    for (const routine of await store.due(now)) {
      if (!this.started) return;
      try {
        await this.handleDue(store, routine, now);
      } catch (err) {
        this.rt.api.logger.warn(`routines: ${routine.id} (${routine.name}): ${(err as Error)?.message ?? String(err)}`);
      }
    }
    for (const failed of await store.dueRetries(now)) {
      if (!this.started) return;
      await this.handleRetry(store, failed, now);
    }
  }

  /**
   * Marks runs whose host is gone as crashed: no heartbeat for STALE_MS, or (at start) a process on
   * this machine that no longer exists. This host's own runs are alive by definition.
   */
  private async sweepCrashed(store: RoutineStore, atStart: boolean): Promise<void> {
    const now = this.rt.now();
    const marked = await store.markCrashed(
      (run) => run.owner !== this.owner && ((run.heartbeatAt ?? 0) < now - STALE_MS || (atStart && ownerIsGone(run.owner))),
      now,
    );
    for (const run of marked) this.rt.api.logger.warn(`routines: a run of ${run.routineId} died with the process that ran it; marked crashed`);
  }

  /** Is a run of this routine in progress, here or on another live host? */
  private async busy(store: RoutineStore, routineId: string, now: number): Promise<boolean> {
    return this.active.has(routineId) || (await store.running(routineId, now - STALE_MS)).length > 0;
  }

  private async handleDue(store: RoutineStore, routine: Routine, now: number): Promise<void> {
    const due = routine.nextRunAt!; // due() returns routines with a next run
    const { latest, count } = runsBetween(routine.schedule, routine.anchor, due - 1, now);
    const next = nextRunAfter(routine.schedule, routine.anchor, now);
    const moveOn = () => store.advance(routine.id, due, next, now, next === null ? 'done' : undefined);
    if (latest === null) {
      // Nothing due after all (the schedule changed under it): just move on.
      await moveOn();
      return;
    }
    const zone = routine.timeZone;
    const late = now - latest > ON_TIME_MS;
    let run = !late;
    let why = '';
    if (late) {
      const age = now - latest;
      const missed =
        count === 1
          ? `${formatInstant(latest, zone)} was missed`
          : `${count} run times from ${formatInstant(due, zone)} to ${formatInstant(latest, zone)} were missed`;
      if (routine.misfire === 'skip') why = `${missed} while Memo was not running; the routine skips missed runs.`;
      else if (routine.misfire === 'run_once_if_recent' && age >= routine.misfireGraceMinutes * 60_000)
        why = `${missed} while Memo was not running, more than ${routine.misfireGraceMinutes} minutes ago, so it was not run late.`;
      else run = true;
    }
    const trigger: RunTrigger = late ? 'misfire' : 'schedule';
    // Earlier run times that were missed and are not run, recorded once, before the latest.
    if (run && count > 1 && due !== latest)
      await store.skip(
        { id: randomUUID(), routineId: routine.id, scheduledFor: due, attempt: 1, trigger: 'misfire', now },
        `${count - 1} earlier run time(s) from ${formatInstant(due, zone)} were missed while Memo was not running; only the latest, ${formatInstant(latest, zone)}, was run.`,
      );
    if (run && (await this.busy(store, routine.id, now))) {
      run = false;
      why = `The run of ${formatInstant(latest, zone)} was skipped: the previous run was still going.`;
    }
    if (!run) {
      await store.skip({ id: randomUUID(), routineId: routine.id, scheduledFor: latest, attempt: 1, trigger, now }, why);
      await moveOn();
      return;
    }
    if (!this.started) return;
    const runId = randomUUID();
    const claimed = await store.claim({ id: runId, routineId: routine.id, scheduledFor: latest, attempt: 1, trigger, owner: this.owner, now });
    // Moved on whether or not this host won the occurrence: the winner may have died before moving it.
    await moveOn();
    if (claimed) this.execute(store, routine, runId, 1);
  }

  private async handleRetry(store: RoutineStore, failed: Run, now: number): Promise<void> {
    const routine = await store.get(failed.routineId);
    if (!routine || routine.status === 'cancelled' || routine.status === 'paused') {
      await store.clearRetry(failed.id);
      return;
    }
    // One run at a time: the retry waits for the run in progress (the next look picks it up).
    if (!this.started || (await this.busy(store, routine.id, now))) return;
    const runId = randomUUID();
    const claimed = await store.claim({
      id: runId,
      routineId: routine.id,
      scheduledFor: failed.scheduledFor,
      attempt: failed.attempt + 1,
      trigger: 'retry',
      owner: this.owner,
      now,
    });
    await store.clearRetry(failed.id);
    if (claimed) this.execute(store, routine, runId, failed.attempt + 1);
  }

  /** Runs one claimed occurrence in the background, beating its heartbeat, and records how it ended. */
  private execute(store: RoutineStore, routine: Routine, runId: string, attempt: number, signal?: AbortSignal): void {
    const controller = new AbortController();
    signal?.addEventListener('abort', () => controller.abort(new Error('the person stopped it')), { once: true });
    const clock = this.rt.api.clock;
    let beat: ClockTimer | null = null;
    const heartbeat = () => {
      beat = clock.setTimeout(() => {
        beat = null;
        void (async () => {
          const still = await store.heartbeat(runId, this.owner, this.rt.now());
          // Cancelled meanwhile (by another host's cancel_routine): stop the run. A pause lets it finish.
          const current = await store.get(routine.id);
          if (!current || current.status === 'cancelled') controller.abort(new Error(`the routine was ${current ? 'cancelled' : 'removed'}`));
          if (still && !controller.signal.aborted) heartbeat();
        })().catch(() => {
          if (!controller.signal.aborted) heartbeat();
        });
      }, HEARTBEAT_MS);
    };
    heartbeat();
    const done = (async () => {
      let result: TurnResult | null = null;
      let failure: string | null = null;
      try {
        result = await this.rt.api.agent.run({
          routineId: routine.id,
          runId,
          provider: routine.provider,
          model: routine.model,
          prompt: routine.prompt,
          systemPrompt: SYSTEM_PROMPT,
          tools: routine.tools,
          mode: routine.mode,
          preApproved: routine.tools,
          signal: controller.signal,
        });
      } catch (err) {
        failure = (err as Error)?.message ?? String(err);
      } finally {
        if (beat) clock.clearTimeout(beat);
      }
      const now = this.rt.now();
      const status: RunStatus = failure ? 'failed' : result!.stopReason === 'final' ? 'ok' : result!.stopReason === 'cancelled' ? 'cancelled' : 'failed';
      // Retried: a failure of the run itself or of the model call. Not: a refusal nobody answered, a stop.
      const retryable = failure !== null || result?.stopReason === 'error';
      const retryAt = retryable && attempt <= RETRY_DELAYS_MS.length ? now + RETRY_DELAYS_MS[attempt - 1]! : null;
      const why = controller.signal.reason instanceof Error ? controller.signal.reason.message : null;
      await store.finish(runId, this.owner, {
        status,
        endedAt: now,
        stopReason: result?.stopReason ?? 'error',
        answer: result?.answer || null,
        error: failure ?? (status === 'cancelled' && why ? `Stopped: ${why}.` : (result?.error ?? null)),
        steps: result?.steps ?? [],
        retryAt,
      });
    })()
      .catch((err: unknown) =>
        this.rt.api.logger.warn(`routines: the run ${runId} of ${routine.id} could not be recorded: ${(err as Error)?.message ?? String(err)}`),
      )
      .finally(() => {
        if (this.active.get(routine.id)?.runId === runId) this.active.delete(routine.id);
        // A retry to time, or a next run that waited for this one.
        void this.kick();
      });
    this.active.set(routine.id, { runId, controller, done });
  }
}
