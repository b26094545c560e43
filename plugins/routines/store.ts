/**
 * The routines and their runs in the pack's database, shared by every host on one data folder.
 * Writes that decide who runs what are single statements whose outcome says whether this host won:
 * the insert of a run row (the unique occurrence index), and conditional updates of a running row
 * by its owner only, so a host that was presumed dead cannot overwrite what another host recorded.
 */
import type { DataSource, Repository } from 'typeorm';
import { In, IsNull, LessThanOrEqual, Not } from 'typeorm';
import type { AccessMode, AgentStep } from 'memo-kernel/pack';
import { RoutineRow, RunRow, type RoutineStatus, type RunStatus, type RunTrigger } from './schema.js';
import type { Schedule } from './schedule.js';

/** A routine as the tools and the scheduler use it (JSON columns parsed). */
export interface Routine {
  id: string;
  name: string;
  prompt: string;
  schedule: Schedule;
  readBack: string;
  timeZone: string;
  anchor: number | null;
  provider: string;
  model: string;
  tools: string[];
  /** The access mode of the chat it was created in: each run is a turn in it. */
  mode: AccessMode;
  misfire: RoutineRow['misfire'];
  misfireGraceMinutes: number;
  status: RoutineStatus;
  nextRunAt: number | null;
  createdBy: string;
  createdAt: number;
  updatedAt: number;
}

export interface Run {
  id: string;
  routineId: string;
  scheduledFor: number;
  attempt: number;
  trigger: RunTrigger;
  status: RunStatus;
  owner: string | null;
  startedAt: number;
  endedAt: number | null;
  stopReason: string | null;
  answer: string | null;
  error: string | null;
  steps: AgentStep[];
  retryAt: number | null;
}

function toRoutine(r: RoutineRow): Routine {
  return {
    id: r.id,
    name: r.name,
    prompt: r.prompt,
    schedule: JSON.parse(r.schedule) as Schedule,
    readBack: r.read_back,
    timeZone: r.time_zone,
    anchor: r.anchor,
    provider: r.provider,
    model: r.model,
    tools: JSON.parse(r.tools) as string[],
    mode: r.mode,
    misfire: r.misfire,
    misfireGraceMinutes: r.misfire_grace_minutes,
    status: r.status,
    nextRunAt: r.next_run_at,
    createdBy: r.created_by,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

function toRun(r: RunRow): Run {
  return {
    id: r.id,
    routineId: r.routine_id,
    scheduledFor: r.scheduled_for,
    attempt: r.attempt,
    trigger: r.trigger,
    status: r.status,
    owner: r.owner,
    startedAt: r.started_at,
    endedAt: r.ended_at,
    stopReason: r.stop_reason,
    answer: r.answer,
    error: r.error,
    steps: JSON.parse(r.steps) as AgentStep[],
    retryAt: r.retry_at,
  };
}

/** A unique-index violation, from SQLite or PostgreSQL, however typeorm wrapped it. */
function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: unknown; driverError?: { code?: unknown } };
  const raw = e?.driverError?.code ?? e?.code;
  const code = typeof raw === 'string' ? raw : '';
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === '23505';
}

export type NewRoutine = Omit<Routine, 'updatedAt'>;

export interface RunClaim {
  id: string;
  routineId: string;
  scheduledFor: number;
  attempt: number;
  trigger: RunTrigger;
  owner: string;
  now: number;
}

export class RoutineStore {
  private readonly routines: Repository<RoutineRow>;
  private readonly runs: Repository<RunRow>;

  constructor(db: DataSource) {
    this.routines = db.getRepository(RoutineRow);
    this.runs = db.getRepository(RunRow);
  }

  async create(r: NewRoutine): Promise<Routine> {
    const row = this.routines.create({
      id: r.id,
      name: r.name,
      prompt: r.prompt,
      schedule: JSON.stringify(r.schedule),
      read_back: r.readBack,
      time_zone: r.timeZone,
      anchor: r.anchor,
      provider: r.provider,
      model: r.model,
      tools: JSON.stringify(r.tools),
      mode: r.mode,
      misfire: r.misfire,
      misfire_grace_minutes: r.misfireGraceMinutes,
      status: r.status,
      next_run_at: r.nextRunAt,
      created_by: r.createdBy,
      created_at: r.createdAt,
      updated_at: r.createdAt,
    });
    await this.routines.insert(row);
    return toRoutine(row);
  }

  async get(id: string): Promise<Routine | null> {
    const row = await this.routines.findOneBy({ id });
    return row ? toRoutine(row) : null;
  }

  async list(statuses?: RoutineStatus[]): Promise<Routine[]> {
    const rows = await this.routines.find({ where: statuses ? { status: In(statuses) } : {}, order: { created_at: 'ASC', name: 'ASC', id: 'ASC' } });
    return rows.map(toRoutine);
  }

  /** Active routines with an occurrence due at or before `at`. */
  async due(at: number): Promise<Routine[]> {
    const rows = await this.routines.find({ where: { status: 'active', next_run_at: LessThanOrEqual(at) }, order: { next_run_at: 'ASC' } });
    return rows.map(toRoutine);
  }

  /** The earliest next run of any active routine, or null. */
  async earliestNext(): Promise<number | null> {
    const row = await this.routines.findOne({ where: { status: 'active', next_run_at: Not(IsNull()) }, order: { next_run_at: 'ASC' } });
    return row?.next_run_at ?? null;
  }

  /**
   * Moves a routine's next run on from `expected` to `next` (and its status with it); false when
   * another host moved it first, in which case this host leaves the occurrence alone.
   */
  async advance(id: string, expected: number, next: number | null, now: number, status?: RoutineStatus): Promise<boolean> {
    const r = await this.routines.update(
      { id, next_run_at: expected, status: 'active' },
      { next_run_at: next, updated_at: now, ...(status ? { status } : {}) },
    );
    return (r.affected ?? 0) > 0;
  }

  async setStatus(id: string, status: RoutineStatus, now: number, nextRunAt?: number | null): Promise<void> {
    await this.routines.update({ id }, { status, updated_at: now, ...(nextRunAt !== undefined ? { next_run_at: nextRunAt } : {}) });
  }

  /** Records a run as started by `owner`; false when another host already holds this occurrence and attempt. */
  async claim(c: RunClaim): Promise<boolean> {
    try {
      await this.runs.insert({
        id: c.id,
        routine_id: c.routineId,
        scheduled_for: c.scheduledFor,
        attempt: c.attempt,
        trigger: c.trigger,
        status: 'running',
        owner: c.owner,
        heartbeat_at: c.now,
        started_at: c.now,
        ended_at: null,
        stop_reason: null,
        answer: null,
        error: null,
        steps: '[]',
        retry_at: null,
      });
      return true;
    } catch (err) {
      if (isUniqueViolation(err)) return false;
      throw err;
    }
  }

  /** Records an occurrence that did not run (missed while no host ran, or its previous run still going); false if one was recorded already. */
  async skip(c: Omit<RunClaim, 'owner'>, why: string): Promise<boolean> {
    try {
      await this.runs.insert({
        id: c.id,
        routine_id: c.routineId,
        scheduled_for: c.scheduledFor,
        attempt: c.attempt,
        trigger: c.trigger,
        status: 'skipped',
        owner: null,
        heartbeat_at: null,
        started_at: c.now,
        ended_at: c.now,
        stop_reason: null,
        answer: null,
        error: why,
        steps: '[]',
        retry_at: null,
      });
      return true;
    } catch (err) {
      if (isUniqueViolation(err)) return false;
      throw err;
    }
  }

  async heartbeat(runId: string, owner: string, now: number): Promise<boolean> {
    const r = await this.runs.update({ id: runId, owner, status: 'running' }, { heartbeat_at: now });
    return (r.affected ?? 0) > 0;
  }

  /** Records how a run ended, if this owner still holds it (false: it was marked crashed meanwhile). */
  async finish(
    runId: string,
    owner: string,
    end: {
      status: RunStatus;
      endedAt: number;
      stopReason: string | null;
      answer: string | null;
      error: string | null;
      steps: AgentStep[];
      retryAt: number | null;
    },
  ): Promise<boolean> {
    const r = await this.runs.update(
      { id: runId, owner, status: 'running' },
      {
        status: end.status,
        ended_at: end.endedAt,
        stop_reason: end.stopReason,
        answer: end.answer,
        error: end.error,
        steps: JSON.stringify(end.steps),
        retry_at: end.retryAt,
      },
    );
    return (r.affected ?? 0) > 0;
  }

  /** Marks the running rows `isDead` picks as crashed (each only if it has not beaten since it was read); returns them. */
  async markCrashed(isDead: (run: { owner: string | null; heartbeatAt: number | null }) => boolean, now: number): Promise<Run[]> {
    const rows = await this.runs.find({ where: { status: 'running' } });
    const marked: Run[] = [];
    for (const row of rows) {
      if (!isDead({ owner: row.owner, heartbeatAt: row.heartbeat_at })) continue;
      const r = await this.runs.update(
        { id: row.id, status: 'running', ...(row.heartbeat_at !== null ? { heartbeat_at: row.heartbeat_at } : {}) },
        {
          status: 'crashed',
          ended_at: now,
          error: 'The run stopped with the process that ran it (Memo was stopped or crashed mid-run); it was found unfinished when a scheduler next started.',
        },
      );
      if ((r.affected ?? 0) > 0) marked.push(toRun({ ...row, status: 'crashed', ended_at: now }));
    }
    return marked;
  }

  /** Runs in progress for a routine whose host beat at or after `freshSince`. */
  async running(routineId: string, freshSince: number): Promise<Run[]> {
    const rows = await this.runs.find({ where: { routine_id: routineId, status: 'running' } });
    return rows.filter((r) => (r.heartbeat_at ?? 0) >= freshSince).map(toRun);
  }

  /** Failed runs whose retry is due by `now`, oldest first. */
  async dueRetries(now: number): Promise<Run[]> {
    const rows = await this.runs.find({ where: { status: 'failed', retry_at: LessThanOrEqual(now) }, order: { retry_at: 'ASC' } });
    return rows.map(toRun);
  }

  async earliestRetry(): Promise<number | null> {
    const row = await this.runs.findOne({ where: { status: 'failed', retry_at: Not(IsNull()) }, order: { retry_at: 'ASC' } });
    return row?.retry_at ?? null;
  }

  /** Takes a failed run's retry off the list (the retry was claimed, or its routine stopped); false if another host did first. */
  async clearRetry(runId: string): Promise<boolean> {
    const r = await this.runs.update({ id: runId, status: 'failed', retry_at: Not(IsNull()) }, { retry_at: null });
    return (r.affected ?? 0) > 0;
  }

  /** A routine's runs, newest first. */
  async history(routineId: string, limit = 20): Promise<Run[]> {
    const rows = await this.runs.find({ where: { routine_id: routineId }, order: { started_at: 'DESC', attempt: 'DESC' }, take: limit });
    return rows.map(toRun);
  }

  /** The latest run or skipped occurrence of a routine. */
  async lastRun(routineId: string): Promise<Run | null> {
    return (await this.history(routineId, 1))[0] ?? null;
  }
}
