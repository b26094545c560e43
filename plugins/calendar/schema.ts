/**
 * The calendar pack's tables: the local calendar (the pack owns these events; each row is one
 * event's iCalendar text, the truth, with its title and revision beside it), and the caches of
 * subscribed calendars and CalDAV accounts, so external events can be read offline. The same
 * entities and migration run on a SQLite file and on the pack's schema in PostgreSQL
 * (MEMO_DATABASE_URL). Epoch milliseconds need 64 bits: SQLite's `integer` has them, PostgreSQL's is
 * 32-bit, so there they are `bigint`, which the driver returns as strings (read through `millis`).
 */
import { Column, Entity, Index, PrimaryColumn, type MigrationInterface, type QueryRunner, type ValueTransformer } from 'typeorm';

const millis: ValueTransformer = {
  to: (v: number | null | undefined) => v,
  from: (v: string | number | null) => (v === null || v === undefined ? null : Number(v)),
};

@Entity('local_events')
export class LocalEventRow {
  @PrimaryColumn('varchar')
  uid!: string;

  /** A VCALENDAR holding this event's VEVENT (and its overrides). */
  @Column('text')
  ics!: string;

  @Column('varchar')
  title!: string;

  /** Bumped on every change: the ETag of a local event, for conflict checks. */
  @Column('integer')
  revision!: number;

  @Column('varchar')
  created_at!: string;

  @Column('varchar')
  updated_at!: string;
}

/** The last good copy of a subscribed calendar, with what the server said about it. */
@Entity('feed_cache')
export class FeedCacheRow {
  @PrimaryColumn('varchar')
  source_id!: string;

  /** The URL this copy came from (a source whose URL changed starts afresh). */
  @Column('text')
  url!: string;

  @Column('varchar', { nullable: true })
  etag!: string | null;

  @Column('varchar', { nullable: true })
  last_modified!: string | null;

  @Column('text')
  body!: string;

  /** When the server last answered (200 or 304), in epoch ms. */
  @Column('bigint', { transformer: millis })
  checked_at!: number;
}

@Entity('caldav_calendars')
export class CaldavCalendarRow {
  @PrimaryColumn('text')
  url!: string;

  @Index()
  @Column('varchar')
  source_id!: string;

  @Column('varchar')
  name!: string;

  @Column('varchar', { nullable: true })
  ctag!: string | null;

  @Column('bigint', { transformer: millis })
  checked_at!: number;
}

@Entity('caldav_objects')
export class CaldavObjectRow {
  @PrimaryColumn('text')
  url!: string;

  @Index()
  @Column('varchar')
  source_id!: string;

  @Column('text')
  calendar_url!: string;

  @Index()
  @Column('varchar')
  uid!: string;

  @Column('varchar', { nullable: true })
  etag!: string | null;

  @Column('text')
  ics!: string;
}

export const ENTITIES = [LocalEventRow, FeedCacheRow, CaldavCalendarRow, CaldavObjectRow];

export class CreateCalendar1796300000000 implements MigrationInterface {
  async up(qr: QueryRunner): Promise<void> {
    // The SQLite files that ran this said `integer` (64-bit there); PostgreSQL needs `bigint` for the same values.
    const millisType = qr.connection.driver.options.type === 'postgres' ? 'bigint' : 'integer';
    await qr.query(`CREATE TABLE "local_events" (
      "uid" varchar PRIMARY KEY NOT NULL,
      "ics" text NOT NULL,
      "title" varchar NOT NULL,
      "revision" integer NOT NULL,
      "created_at" varchar NOT NULL,
      "updated_at" varchar NOT NULL)`);
    await qr.query(`CREATE TABLE "feed_cache" (
      "source_id" varchar PRIMARY KEY NOT NULL,
      "url" text NOT NULL,
      "etag" varchar,
      "last_modified" varchar,
      "body" text NOT NULL,
      "checked_at" ${millisType} NOT NULL)`);
    await qr.query(`CREATE TABLE "caldav_calendars" (
      "url" text PRIMARY KEY NOT NULL,
      "source_id" varchar NOT NULL,
      "name" varchar NOT NULL,
      "ctag" varchar,
      "checked_at" ${millisType} NOT NULL)`);
    await qr.query(`CREATE INDEX "IDX_caldav_calendars_source" ON "caldav_calendars" ("source_id")`);
    await qr.query(`CREATE TABLE "caldav_objects" (
      "url" text PRIMARY KEY NOT NULL,
      "source_id" varchar NOT NULL,
      "calendar_url" text NOT NULL,
      "uid" varchar NOT NULL,
      "etag" varchar,
      "ics" text NOT NULL)`);
    await qr.query(`CREATE INDEX "IDX_caldav_objects_source" ON "caldav_objects" ("source_id")`);
    await qr.query(`CREATE INDEX "IDX_caldav_objects_uid" ON "caldav_objects" ("uid")`);
  }

  async down(qr: QueryRunner): Promise<void> {
    for (const t of ['caldav_objects', 'caldav_calendars', 'feed_cache', 'local_events']) await qr.query(`DROP TABLE "${t}"`);
  }
}

export const MIGRATIONS = [CreateCalendar1796300000000];
