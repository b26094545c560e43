/**
 * The routines pack's tables: the routines the person approved, and every run (or skipped
 * occurrence) of them. The unique (routine, scheduled time, attempt) index of `routine_runs` is the
 * occurrence lock: the host whose insert lands runs it, so two hosts on one data folder never run the
 * same occurrence twice. Times are epoch milliseconds in `bigint` columns (PostgreSQL's `integer` is
 * 32-bit); PostgreSQL returns them as strings, so they are read through `millis`.
 */
import { Column, Entity, Index, PrimaryColumn, type MigrationInterface, type QueryRunner, type ValueTransformer } from 'typeorm';
import type { AccessMode } from 'memo-kernel/pack';

const millis: ValueTransformer = {
  to: (v: number | null | undefined) => v,
  from: (v: string | number | null) => (v === null || v === undefined ? null : Number(v)),
};

export type RoutineStatus = 'active' | 'paused' | 'done' | 'cancelled';
export type MisfirePolicy = 'skip' | 'run_once' | 'run_once_if_recent';
export type RunStatus = 'running' | 'ok' | 'failed' | 'cancelled' | 'crashed' | 'skipped';
export type RunTrigger = 'schedule' | 'misfire' | 'retry' | 'manual';

@Entity('routines')
export class RoutineRow {
  @PrimaryColumn('varchar')
  id!: string;

  @Column('varchar')
  name!: string;

  /** What each run asks the model. */
  @Column('text')
  prompt!: string;

  /** The checked Schedule, as JSON. */
  @Column('text')
  schedule!: string;

  /** The schedule in words, as the person approved it. */
  @Column('varchar')
  read_back!: string;

  @Column('varchar')
  time_zone!: string;

  /** A one-off's time, or an interval schedule's first run. */
  @Column('bigint', { nullable: true, transformer: millis })
  anchor!: number | null;

  /** The provider and model pinned when the routine was approved. */
  @Column('varchar')
  provider!: string;

  @Column('varchar')
  model!: string;

  /** The tools its runs may use, as a JSON array; those a standing approval can cover are pre-approved. */
  @Column('text')
  tools!: string;

  /** The access mode of the chat it was created in (vault, computer, web): its runs are turns in that mode. */
  @Column('varchar', { default: 'computer' })
  mode!: AccessMode;

  @Column('varchar')
  misfire!: MisfirePolicy;

  @Column('integer')
  misfire_grace_minutes!: number;

  @Index('IDX_routines_status')
  @Column('varchar')
  status!: RoutineStatus;

  /** The next occurrence not yet handled (run, skipped or missed); null when there is none. */
  @Column('bigint', { nullable: true, transformer: millis })
  next_run_at!: number | null;

  @Column('varchar')
  created_by!: string;

  @Column('bigint', { transformer: millis })
  created_at!: number;

  @Column('bigint', { transformer: millis })
  updated_at!: number;
}

@Entity('routine_runs')
@Index('routine_runs_occurrence', ['routine_id', 'scheduled_for', 'attempt'], { unique: true })
export class RunRow {
  @PrimaryColumn('varchar')
  id!: string;

  @Index('IDX_routine_runs_routine')
  @Column('varchar')
  routine_id!: string;

  /** The occurrence this run belongs to (a manual run: when it was asked for). */
  @Column('bigint', { transformer: millis })
  scheduled_for!: number;

  /** 1 for the first try; 2 and 3 for the retries after 1 and 5 minutes. */
  @Column('integer')
  attempt!: number;

  @Column('varchar')
  trigger!: RunTrigger;

  @Index('IDX_routine_runs_status')
  @Column('varchar')
  status!: RunStatus;

  /** The host process running it (pid and a random part); its heartbeat says it is alive. */
  @Column('varchar', { nullable: true })
  owner!: string | null;

  @Column('bigint', { nullable: true, transformer: millis })
  heartbeat_at!: number | null;

  @Column('bigint', { transformer: millis })
  started_at!: number;

  @Column('bigint', { nullable: true, transformer: millis })
  ended_at!: number | null;

  /** The agent loop's stop reason (final, error, cancelled, ...). */
  @Column('varchar', { nullable: true })
  stop_reason!: string | null;

  @Column('text', { nullable: true })
  answer!: string | null;

  /** Why it failed or was skipped, for the person. */
  @Column('text', { nullable: true })
  error!: string | null;

  /** The tool steps, as JSON (masked and shortened by the agent loop). */
  @Column('text')
  steps!: string;

  /** When the next attempt is due, for a failed run that will be retried. */
  @Column('bigint', { nullable: true, transformer: millis })
  retry_at!: number | null;
}

export const ENTITIES = [RoutineRow, RunRow];

export class CreateRoutines1796700000000 implements MigrationInterface {
  async up(qr: QueryRunner): Promise<void> {
    await qr.query(`CREATE TABLE "routines" (
      "id" varchar PRIMARY KEY NOT NULL,
      "name" varchar NOT NULL,
      "prompt" text NOT NULL,
      "schedule" text NOT NULL,
      "read_back" varchar NOT NULL,
      "time_zone" varchar NOT NULL,
      "anchor" bigint,
      "provider" varchar NOT NULL,
      "model" varchar NOT NULL,
      "tools" text NOT NULL,
      "misfire" varchar NOT NULL,
      "misfire_grace_minutes" integer NOT NULL,
      "status" varchar NOT NULL,
      "next_run_at" bigint,
      "created_by" varchar NOT NULL,
      "created_at" bigint NOT NULL,
      "updated_at" bigint NOT NULL)`);
    await qr.query(`CREATE INDEX "IDX_routines_status" ON "routines" ("status")`);
    await qr.query(`CREATE TABLE "routine_runs" (
      "id" varchar PRIMARY KEY NOT NULL,
      "routine_id" varchar NOT NULL REFERENCES "routines" ("id") ON DELETE CASCADE,
      "scheduled_for" bigint NOT NULL,
      "attempt" integer NOT NULL,
      "trigger" varchar NOT NULL,
      "status" varchar NOT NULL,
      "owner" varchar,
      "heartbeat_at" bigint,
      "started_at" bigint NOT NULL,
      "ended_at" bigint,
      "stop_reason" varchar,
      "answer" text,
      "error" text,
      "steps" text NOT NULL,
      "retry_at" bigint)`);
    await qr.query(`CREATE UNIQUE INDEX "routine_runs_occurrence" ON "routine_runs" ("routine_id", "scheduled_for", "attempt")`);
    await qr.query(`CREATE INDEX "IDX_routine_runs_routine" ON "routine_runs" ("routine_id")`);
    await qr.query(`CREATE INDEX "IDX_routine_runs_status" ON "routine_runs" ("status")`);
  }

  async down(qr: QueryRunner): Promise<void> {
    await qr.query(`DROP TABLE "routine_runs"`);
    await qr.query(`DROP TABLE "routines"`);
  }
}

/**
 * Routines record the access mode they were created in. Those made before modes existed ran with every
 * enabled tool their list named, which is Computer access.
 */
export class AddRoutineMode1796800000000 implements MigrationInterface {
  async up(qr: QueryRunner): Promise<void> {
    await qr.query(`ALTER TABLE "routines" ADD COLUMN "mode" varchar NOT NULL DEFAULT 'computer'`);
  }

  async down(qr: QueryRunner): Promise<void> {
    await qr.query(`ALTER TABLE "routines" DROP COLUMN "mode"`);
  }
}

export const MIGRATIONS = [CreateRoutines1796700000000, AddRoutineMode1796800000000];
