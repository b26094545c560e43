/**
 * The vault index's tables, as typeorm entities with the migration that makes them. The index is a
 * cache of the files (rebuildable with `memo vault reindex`), except for what only it holds: each
 * note's stable id and the tags' colour, icon, order and category.
 *
 * The planning tables (statuses, projects, tasks, inbox, settings) are entities here too but live in
 * a database of their own (PLANNING_ENTITIES, PLANNING_MIGRATIONS: vault-planning), which moves
 * into PostgreSQL with MEMO_DATABASE_URL; the index stays a per-instance SQLite file.
 *
 * Loaded on first use of the vault (typeorm costs half a second to import; most CLI commands never
 * touch the vault). The full-text table is FTS5, which typeorm has no entity for: the migration makes
 * it, and the index reads and writes it with SQL.
 */
import { Column, Entity, Index, PrimaryColumn, PrimaryGeneratedColumn, Unique, type MigrationInterface, type QueryRunner } from 'typeorm';
import { CREATE_FTS, FTS_TOKENIZER } from './vault-index.js';

@Entity('notes')
export class NoteRow {
  /** Row number, also the FTS5 rowid of the note's text. */
  @PrimaryGeneratedColumn({ type: 'integer' })
  seq!: number;

  /** Stable id: kept across renames and moves done through Memo, and renames found on disk by content hash. */
  @Index({ unique: true })
  @Column('varchar', { length: 32 })
  id!: string;

  /** Vault-relative, `/`-separated. */
  @Index({ unique: true })
  @Column('varchar')
  path!: string;

  /** Lower-case path, `.md` dropped for notes: what a `[[folder/Note]]` link is compared with. */
  @Column('varchar')
  path_key!: string;

  /** Lower-case last segment of path_key: what a `[[Note]]` link is compared with first. */
  @Index()
  @Column('varchar')
  name_key!: string;

  @Column('varchar')
  title!: string;

  @Index()
  @Column('varchar')
  title_key!: string;

  /** markdown, pdf, image, audio or video. */
  @Column('varchar', { length: 16 })
  file_type!: string;

  @Column('integer')
  size!: number;

  @Column('real')
  mtime!: number;

  @Index()
  @Column('varchar', { length: 80 })
  hash!: string;

  /** JSON, or null for a note without front matter (and for filed files). */
  @Column('text', { nullable: true })
  front_matter!: string | null;

  /** JSON array of the note's headings, in order. */
  @Column('text', { default: '[]' })
  headings!: string;

  /** JSON array of the front matter's aliases. */
  @Column('text', { default: '[]' })
  aliases!: string;
}

@Entity('note_aliases')
export class NoteAliasRow {
  @PrimaryColumn('integer')
  note_seq!: number;

  @Index()
  @PrimaryColumn('varchar')
  alias_key!: string;
}

@Entity('tag_categories')
export class TagCategoryRow {
  @PrimaryGeneratedColumn({ type: 'integer' })
  id!: number;

  @Column('varchar', { unique: true })
  name!: string;

  @Column('integer', { default: 0 })
  sort_order!: number;
}

@Entity('tags')
export class TagRow {
  /** Lower case, without `#`. */
  @PrimaryColumn('varchar')
  name!: string;

  @Column('varchar', { nullable: true })
  color!: string | null;

  @Column('varchar', { nullable: true })
  icon!: string | null;

  @Column('integer', { default: 0 })
  sort_order!: number;

  @Column('integer', { nullable: true })
  category_id!: number | null;
}

@Entity('note_tags')
export class NoteTagRow {
  @PrimaryColumn('integer')
  note_seq!: number;

  @Index()
  @PrimaryColumn('varchar')
  tag!: string;
}

@Entity('links')
export class LinkRow {
  @PrimaryGeneratedColumn({ type: 'integer' })
  id!: number;

  @Index()
  @Column('integer')
  source_seq!: number;

  /** The text inside the brackets, alias included. */
  @Column('varchar')
  raw!: string;

  /** The target without the alias (`Meeting#Decisions`). */
  @Column('varchar')
  target!: string;

  @Column('varchar', { nullable: true })
  alias!: string | null;

  @Column('boolean')
  embed!: boolean;

  @Column('integer')
  line!: number;

  /** Lower-case last segment of the whole target, and of the part before its first `#`: re-resolved when a note with that name comes or goes. */
  @Index()
  @Column('varchar')
  key_full!: string;

  @Index()
  @Column('varchar')
  key_note!: string;

  /** resolved, ambiguous or broken. */
  @Column('varchar', { length: 12 })
  status!: string;

  @Index()
  @Column('integer', { nullable: true })
  target_seq!: number | null;

  @Column('varchar', { nullable: true })
  heading!: string | null;
}

/** What the index was built for: the vault folder's real path (a different folder starts a fresh index). */
@Entity('vault_meta')
export class VaultMetaRow {
  @PrimaryColumn('varchar')
  key!: string;

  @Column('text')
  value!: string;
}

export class CreateVaultIndex1796200000000 implements MigrationInterface {
  async up(qr: QueryRunner): Promise<void> {
    await qr.query(`CREATE TABLE "notes" (
      "seq" integer PRIMARY KEY AUTOINCREMENT NOT NULL,
      "id" varchar(32) NOT NULL,
      "path" varchar NOT NULL,
      "path_key" varchar NOT NULL,
      "name_key" varchar NOT NULL,
      "title" varchar NOT NULL,
      "title_key" varchar NOT NULL,
      "file_type" varchar(16) NOT NULL,
      "size" integer NOT NULL,
      "mtime" real NOT NULL,
      "hash" varchar(80) NOT NULL,
      "front_matter" text,
      "headings" text NOT NULL DEFAULT ('[]'),
      "aliases" text NOT NULL DEFAULT ('[]'))`);
    await qr.query(`CREATE UNIQUE INDEX "IDX_notes_id" ON "notes" ("id")`);
    await qr.query(`CREATE UNIQUE INDEX "IDX_notes_path" ON "notes" ("path")`);
    await qr.query(`CREATE INDEX "IDX_notes_name_key" ON "notes" ("name_key")`);
    await qr.query(`CREATE INDEX "IDX_notes_title_key" ON "notes" ("title_key")`);
    await qr.query(`CREATE INDEX "IDX_notes_hash" ON "notes" ("hash")`);
    await qr.query(`CREATE TABLE "note_aliases" (
      "note_seq" integer NOT NULL REFERENCES "notes" ("seq") ON DELETE CASCADE,
      "alias_key" varchar NOT NULL,
      PRIMARY KEY ("note_seq", "alias_key"))`);
    await qr.query(`CREATE INDEX "IDX_note_aliases_key" ON "note_aliases" ("alias_key")`);
    await qr.query(`CREATE TABLE "tag_categories" (
      "id" integer PRIMARY KEY AUTOINCREMENT NOT NULL,
      "name" varchar NOT NULL UNIQUE,
      "sort_order" integer NOT NULL DEFAULT (0))`);
    await qr.query(`CREATE TABLE "tags" (
      "name" varchar PRIMARY KEY NOT NULL,
      "color" varchar,
      "icon" varchar,
      "sort_order" integer NOT NULL DEFAULT (0),
      "category_id" integer REFERENCES "tag_categories" ("id") ON DELETE SET NULL)`);
    await qr.query(`CREATE TABLE "note_tags" (
      "note_seq" integer NOT NULL REFERENCES "notes" ("seq") ON DELETE CASCADE,
      "tag" varchar NOT NULL,
      PRIMARY KEY ("note_seq", "tag"))`);
    await qr.query(`CREATE INDEX "IDX_note_tags_tag" ON "note_tags" ("tag")`);
    await qr.query(`CREATE TABLE "links" (
      "id" integer PRIMARY KEY AUTOINCREMENT NOT NULL,
      "source_seq" integer NOT NULL REFERENCES "notes" ("seq") ON DELETE CASCADE,
      "raw" varchar NOT NULL,
      "target" varchar NOT NULL,
      "alias" varchar,
      "embed" boolean NOT NULL,
      "line" integer NOT NULL,
      "key_full" varchar NOT NULL,
      "key_note" varchar NOT NULL,
      "status" varchar(12) NOT NULL,
      "target_seq" integer,
      "heading" varchar)`);
    await qr.query(`CREATE INDEX "IDX_links_source" ON "links" ("source_seq")`);
    await qr.query(`CREATE INDEX "IDX_links_target" ON "links" ("target_seq")`);
    await qr.query(`CREATE INDEX "IDX_links_key_full" ON "links" ("key_full")`);
    await qr.query(`CREATE INDEX "IDX_links_key_note" ON "links" ("key_note")`);
    await qr.query(`CREATE TABLE "vault_meta" ("key" varchar PRIMARY KEY NOT NULL, "value" text NOT NULL)`);
    await qr.query(`CREATE VIRTUAL TABLE "notes_fts" USING fts5(title, body, tokenize='${FTS_TOKENIZER}')`);
  }

  async down(qr: QueryRunner): Promise<void> {
    for (const t of ['notes_fts', 'vault_meta', 'links', 'note_tags', 'tags', 'tag_categories', 'note_aliases', 'notes']) await qr.query(`DROP TABLE "${t}"`);
  }
}

/**
 * The text is no longer copied into the FTS table (snippets are cut from the files): the table is
 * made contentless, and every note is marked as changed (no size, no hash) so the next open reads the files
 * again and fills it. Ids and tag settings stay.
 */
export class ContentlessVaultText1796300000000 implements MigrationInterface {
  async up(qr: QueryRunner): Promise<void> {
    await qr.query(`DROP TABLE "notes_fts"`);
    await qr.query(CREATE_FTS);
    await qr.query(`UPDATE "notes" SET "size" = -1, "hash" = ''`);
  }

  async down(qr: QueryRunner): Promise<void> {
    await qr.query(`DROP TABLE "notes_fts"`);
    await qr.query(`CREATE VIRTUAL TABLE "notes_fts" USING fts5(title, body, tokenize='${FTS_TOKENIZER}')`);
    await qr.query(`UPDATE "notes" SET "size" = -1, "hash" = ''`);
  }
}

// ---------------------------------------------------------------------------------------------
// Planning: statuses, projects, tasks (and the project link layer the desktop bridge fills). Unlike
// the index these rows are the truth, not a cache: reindex never touches them. Ids are the same kind
// of stable 16-hex id as notes'. Times are ISO 8601 text and booleans real booleans, so the same
// migration runs on PostgreSQL; `sort_order` is gapless per list (0..n-1), rewritten in one
// transaction by each reorder.

@Entity('planning_statuses')
export class StatusRow {
  @PrimaryColumn('varchar', { length: 32 })
  id!: string;

  @Column('varchar', { length: 200 })
  name!: string;

  @Column('varchar', { length: 32, nullable: true })
  color!: string | null;

  /** A task moved here counts as done (the board's last column). */
  @Column('boolean', { default: false })
  is_done!: boolean;

  @Column('integer')
  sort_order!: number;

  @Column('varchar', { length: 40 })
  created_at!: string;
}

@Entity('planning_projects')
export class ProjectRow {
  @PrimaryColumn('varchar', { length: 32 })
  id!: string;

  @Column('varchar', { length: 200 })
  name!: string;

  @Column('text', { nullable: true })
  description!: string | null;

  @Column('varchar', { length: 32, nullable: true })
  color!: string | null;

  @Column('varchar', { length: 64, nullable: true })
  icon!: string | null;

  /** A note id (the project's hub page), or null. */
  @Column('varchar', { length: 32, nullable: true })
  home_note_id!: string | null;

  @Column('varchar', { length: 40, nullable: true })
  archived_at!: string | null;

  @Column('integer')
  sort_order!: number;

  @Column('varchar', { length: 40 })
  created_at!: string;
}

@Entity('planning_tasks')
export class TaskRow {
  @PrimaryColumn('varchar', { length: 32 })
  id!: string;

  @Index()
  @Column('varchar', { length: 32, nullable: true })
  project_id!: string | null;

  @Index()
  @Column('varchar', { length: 32, nullable: true })
  status_id!: string | null;

  /** The task this one is a subtask of (one level: a subtask has no subtasks). */
  @Index()
  @Column('varchar', { length: 32, nullable: true })
  parent_id!: string | null;

  @Column('varchar', { length: 500 })
  title!: string;

  @Column('text', { nullable: true })
  description!: string | null;

  /** 0 none, 1 low, 2 medium, 3 high, 4 urgent. */
  @Column('integer', { default: 0 })
  priority!: number;

  /** YYYY-MM-DD, the day in `time_zone` (or floating when that is null). */
  @Column('varchar', { length: 10, nullable: true })
  due_date!: string | null;

  /** HH:MM, or null for an all-day due date. */
  @Column('varchar', { length: 5, nullable: true })
  due_time!: string | null;

  /** An IANA zone name. */
  @Column('varchar', { length: 64, nullable: true })
  time_zone!: string | null;

  /** An RFC 5545 RRULE body (FREQ=WEEKLY;BYDAY=MO), kept as given. */
  @Column('varchar', { length: 500, nullable: true })
  repeat_rule!: string | null;

  /** JSON array of lower-case tags. */
  @Column('text', { default: '[]' })
  tags!: string;

  @Column('varchar', { length: 40, nullable: true })
  completed_at!: string | null;

  /** When it reminds (ISO 8601, UTC; reminder-delivery.ts), while it is neither completed nor archived. */
  @Column('varchar', { length: 40, nullable: true })
  remind_at!: string | null;

  @Column('varchar', { length: 40, nullable: true })
  archived_at!: string | null;

  /** Order among the tasks with the same project and parent. */
  @Column('integer')
  sort_order!: number;

  @Column('varchar', { length: 40 })
  created_at!: string;

  @Column('varchar', { length: 40 })
  updated_at!: string;
}

/** A note, filed file or calendar event a project holds (the hub's link layer). */
@Entity('planning_project_links')
export class ProjectLinkRow {
  @PrimaryColumn('varchar', { length: 32 })
  project_id!: string;

  /** note, file or calendar_event. */
  @PrimaryColumn('varchar', { length: 16 })
  item_type!: string;

  @PrimaryColumn('varchar', { length: 200 })
  item_id!: string;

  @Column('boolean', { default: false })
  pinned!: boolean;

  @Column('varchar', { length: 40 })
  created_at!: string;
}

/** Planning tables. Plain SQL that SQLite and PostgreSQL both accept (no AUTOINCREMENT, no SQLite-only types). */
export class CreatePlanning1796400000000 implements MigrationInterface {
  async up(qr: QueryRunner): Promise<void> {
    await qr.query(`CREATE TABLE "planning_statuses" (
      "id" varchar(32) PRIMARY KEY NOT NULL,
      "name" varchar(200) NOT NULL,
      "color" varchar(32),
      "is_done" boolean NOT NULL DEFAULT false,
      "sort_order" integer NOT NULL,
      "created_at" varchar(40) NOT NULL)`);
    await qr.query(`CREATE TABLE "planning_projects" (
      "id" varchar(32) PRIMARY KEY NOT NULL,
      "name" varchar(200) NOT NULL,
      "description" text,
      "color" varchar(32),
      "icon" varchar(64),
      "home_note_id" varchar(32),
      "archived_at" varchar(40),
      "sort_order" integer NOT NULL,
      "created_at" varchar(40) NOT NULL)`);
    await qr.query(`CREATE TABLE "planning_tasks" (
      "id" varchar(32) PRIMARY KEY NOT NULL,
      "project_id" varchar(32) REFERENCES "planning_projects" ("id") ON DELETE CASCADE,
      "status_id" varchar(32) REFERENCES "planning_statuses" ("id") ON DELETE SET NULL,
      "parent_id" varchar(32) REFERENCES "planning_tasks" ("id") ON DELETE CASCADE,
      "title" varchar(500) NOT NULL,
      "description" text,
      "priority" integer NOT NULL DEFAULT 0,
      "due_date" varchar(10),
      "due_time" varchar(5),
      "time_zone" varchar(64),
      "repeat_rule" varchar(500),
      "tags" text NOT NULL DEFAULT '[]',
      "completed_at" varchar(40),
      "archived_at" varchar(40),
      "sort_order" integer NOT NULL,
      "created_at" varchar(40) NOT NULL,
      "updated_at" varchar(40) NOT NULL)`);
    await qr.query(`CREATE INDEX "IDX_planning_tasks_project" ON "planning_tasks" ("project_id")`);
    await qr.query(`CREATE INDEX "IDX_planning_tasks_status" ON "planning_tasks" ("status_id")`);
    await qr.query(`CREATE INDEX "IDX_planning_tasks_parent" ON "planning_tasks" ("parent_id")`);
    await qr.query(`CREATE TABLE "planning_project_links" (
      "project_id" varchar(32) NOT NULL REFERENCES "planning_projects" ("id") ON DELETE CASCADE,
      "item_type" varchar(16) NOT NULL,
      "item_id" varchar(200) NOT NULL,
      "pinned" boolean NOT NULL DEFAULT false,
      "created_at" varchar(40) NOT NULL,
      PRIMARY KEY ("project_id", "item_type", "item_id"))`);
  }

  async down(qr: QueryRunner): Promise<void> {
    for (const t of ['planning_project_links', 'planning_tasks', 'planning_projects', 'planning_statuses']) await qr.query(`DROP TABLE "${t}"`);
  }
}

// ---------------------------------------------------------------------------------------------
// The inbox: things captured to sort later. Same conventions as the planning tables (16-hex ids, ISO
// text times, portable SQL), in a migration of its own so vaults made before it gain the table.

@Entity('inbox_items')
export class InboxItemRow {
  @PrimaryColumn('varchar', { length: 32 })
  id!: string;

  @Column('varchar', { length: 500 })
  title!: string;

  @Column('text', { nullable: true })
  content!: string | null;

  @Column('varchar', { length: 2000, nullable: true })
  url!: string | null;

  /** JSON array of lower-case tags. */
  @Column('text', { default: '[]' })
  tags!: string;

  /** Hidden from the list until this time (ISO 8601, UTC). */
  @Column('varchar', { length: 40, nullable: true })
  snoozed_until!: string | null;

  @Column('varchar', { length: 40, nullable: true })
  archived_at!: string | null;

  @Index()
  @Column('varchar', { length: 40 })
  created_at!: string;

  @Column('varchar', { length: 40 })
  updated_at!: string;

  /** A reminder (inbox.convertToReminder): when the routines scheduler surfaces it (ISO 8601, UTC). */
  @Column('varchar', { length: 40, nullable: true })
  remind_at!: string | null;

  /** What the item became (`note:<id>`, `task:<id>`, `event:<id>`), once converted; the item is archived then. */
  @Column('varchar', { length: 300, nullable: true })
  converted_to!: string | null;
}

export class CreateInbox1796500000000 implements MigrationInterface {
  async up(qr: QueryRunner): Promise<void> {
    await qr.query(`CREATE TABLE "inbox_items" (
      "id" varchar(32) PRIMARY KEY NOT NULL,
      "title" varchar(500) NOT NULL,
      "content" text,
      "url" varchar(2000),
      "tags" text NOT NULL DEFAULT '[]',
      "snoozed_until" varchar(40),
      "archived_at" varchar(40),
      "created_at" varchar(40) NOT NULL,
      "updated_at" varchar(40) NOT NULL)`);
    await qr.query(`CREATE INDEX "IDX_inbox_items_created" ON "inbox_items" ("created_at")`);
  }

  async down(qr: QueryRunner): Promise<void> {
    await qr.query(`DROP TABLE "inbox_items"`);
  }
}

// ---------------------------------------------------------------------------------------------
// The desktop bridge's state: per-vault settings (feature switches, the inbox review), tasks' links
// to notes, and reminders and conversions on inbox items.

/** One per-vault setting: a JSON value under a key (`features`, `inbox`). */
@Entity('vault_settings')
export class VaultSettingRow {
  @PrimaryColumn('varchar', { length: 100 })
  key!: string;

  @Column('text')
  value!: string;
}

/** A note a task links to (the task's "links to notes"), by the note's stable id. */
@Entity('planning_task_notes')
export class TaskNoteRow {
  @PrimaryColumn('varchar', { length: 32 })
  task_id!: string;

  @PrimaryColumn('varchar', { length: 32 })
  note_id!: string;

  /** The link's place among the task's links (the order they were given in). */
  @Column('integer', { default: 0 })
  sort_order!: number;

  @Column('varchar', { length: 40 })
  created_at!: string;
}

export class CreateBridgeState1796600000000 implements MigrationInterface {
  async up(qr: QueryRunner): Promise<void> {
    await qr.query(`CREATE TABLE "vault_settings" ("key" varchar(100) PRIMARY KEY NOT NULL, "value" text NOT NULL)`);
    await qr.query(`CREATE TABLE "planning_task_notes" (
      "task_id" varchar(32) NOT NULL REFERENCES "planning_tasks" ("id") ON DELETE CASCADE,
      "note_id" varchar(32) NOT NULL,
      "sort_order" integer NOT NULL DEFAULT 0,
      "created_at" varchar(40) NOT NULL,
      PRIMARY KEY ("task_id", "note_id"))`);
    await qr.query(`CREATE INDEX "IDX_planning_task_notes_note" ON "planning_task_notes" ("note_id")`);
    await qr.query(`ALTER TABLE "inbox_items" ADD COLUMN "remind_at" varchar(40)`);
    await qr.query(`ALTER TABLE "inbox_items" ADD COLUMN "converted_to" varchar(300)`);
  }

  async down(qr: QueryRunner): Promise<void> {
    await qr.query(`ALTER TABLE "inbox_items" DROP COLUMN "converted_to"`);
    await qr.query(`ALTER TABLE "inbox_items" DROP COLUMN "remind_at"`);
    await qr.query(`DROP TABLE "planning_task_notes"`);
    await qr.query(`DROP TABLE "vault_settings"`);
  }
}

/** What only the index database (vault.sqlite, a per-instance file) holds. */
/**
 * The index on links' note part covers only the links where it differs from the whole target (a
 * `#heading` link): the rest are found by key_full, and a full build makes the smaller index in half
 * the time. Queries say `key_note <> key_full` as the index does (VaultIndex.reresolve).
 */
export class PartialLinkNoteIndex1796700000000 implements MigrationInterface {
  async up(qr: QueryRunner): Promise<void> {
    await qr.query(`DROP INDEX IF EXISTS "IDX_links_key_note"`);
    await qr.query(`CREATE INDEX "IDX_links_key_note" ON "links" ("key_note") WHERE key_note <> key_full`);
  }

  async down(qr: QueryRunner): Promise<void> {
    await qr.query(`DROP INDEX IF EXISTS "IDX_links_key_note"`);
    await qr.query(`CREATE INDEX "IDX_links_key_note" ON "links" ("key_note")`);
  }
}

export const ENTITIES = [NoteRow, NoteAliasRow, TagCategoryRow, TagRow, NoteTagRow, LinkRow, VaultMetaRow];

/**
 * vault.sqlite's migrations. The planning ones stay listed: a vault.sqlite made before the planning
 * data moved records them (a database recording a migration the code does not know is refused), and
 * its planning tables are where the one-time copy (planning-copy.ts) reads from. They are kept, not
 * dropped: see planning-copy.ts.
 */
export const MIGRATIONS = [
  CreateVaultIndex1796200000000,
  ContentlessVaultText1796300000000,
  CreatePlanning1796400000000,
  CreateInbox1796500000000,
  CreateBridgeState1796600000000,
  PartialLinkNoteIndex1796700000000,
];

// ---------------------------------------------------------------------------------------------
// The planning database (vault-planning): the planning, inbox and settings tables above, in a
// database of their own that is portable, so with MEMO_DATABASE_URL it is a PostgreSQL schema every
// instance shares. planning_meta records the one-time copy from vault.sqlite.

/** Facts about the planning database itself: `copied_from` (the one-time copy from a vault.sqlite). */
@Entity('planning_meta')
export class PlanningMetaRow {
  @PrimaryColumn('varchar', { length: 100 })
  key!: string;

  @Column('text')
  value!: string;
}

/**
 * Every planning table at its current shape, in SQL both SQLite and PostgreSQL accept (no
 * AUTOINCREMENT, booleans as boolean with false/true, text times).
 */
export class CreatePlanningStore1797000000000 implements MigrationInterface {
  async up(qr: QueryRunner): Promise<void> {
    await new CreatePlanning1796400000000().up(qr);
    await qr.query(`CREATE TABLE "inbox_items" (
      "id" varchar(32) PRIMARY KEY NOT NULL,
      "title" varchar(500) NOT NULL,
      "content" text,
      "url" varchar(2000),
      "tags" text NOT NULL DEFAULT '[]',
      "snoozed_until" varchar(40),
      "archived_at" varchar(40),
      "created_at" varchar(40) NOT NULL,
      "updated_at" varchar(40) NOT NULL,
      "remind_at" varchar(40),
      "converted_to" varchar(300))`);
    await qr.query(`CREATE INDEX "IDX_inbox_items_created" ON "inbox_items" ("created_at")`);
    await qr.query(`CREATE TABLE "vault_settings" ("key" varchar(100) PRIMARY KEY NOT NULL, "value" text NOT NULL)`);
    await qr.query(`CREATE TABLE "planning_task_notes" (
      "task_id" varchar(32) NOT NULL REFERENCES "planning_tasks" ("id") ON DELETE CASCADE,
      "note_id" varchar(32) NOT NULL,
      "sort_order" integer NOT NULL DEFAULT 0,
      "created_at" varchar(40) NOT NULL,
      PRIMARY KEY ("task_id", "note_id"))`);
    await qr.query(`CREATE INDEX "IDX_planning_task_notes_note" ON "planning_task_notes" ("note_id")`);
    await qr.query(`CREATE TABLE "planning_meta" ("key" varchar(100) PRIMARY KEY NOT NULL, "value" text NOT NULL)`);
  }

  async down(qr: QueryRunner): Promise<void> {
    for (const t of ['planning_meta', 'planning_task_notes', 'vault_settings', 'inbox_items']) await qr.query(`DROP TABLE "${t}"`);
    await new CreatePlanning1796400000000().down(qr);
  }
}

// ---------------------------------------------------------------------------------------------
// The desktop domains the bridge adds (saved filters, bookmarks, folder views, reminders) and the
// reminders' delivery record. Same conventions as the planning tables: 16-hex ids, ISO 8601 UTC text
// times (toISOString, so text order is time order), gapless sort_order, SQL both databases accept.

/** A search kept under a name: the same filters as vault_search_notes. */
@Entity('saved_filters')
export class SavedFilterRow {
  @PrimaryColumn('varchar', { length: 32 })
  id!: string;

  @Column('varchar', { length: 200 })
  name!: string;

  /** The search words ('' lists by last change, as an empty vault_search_notes query does). */
  @Column('varchar', { length: 2000, default: '' })
  query!: string;

  /** Vault-relative folder, or null for the whole vault. */
  @Column('varchar', { length: 1000, nullable: true })
  folder!: string | null;

  /** JSON array of lower-case tags (every one must be on a note). */
  @Column('text', { default: '[]' })
  tags!: string;

  /** JSON array of file types (markdown, pdf, image, audio, video); empty for all. */
  @Column('text', { default: '[]' })
  file_types!: string;

  @Column('integer')
  sort_order!: number;

  @Column('varchar', { length: 40 })
  created_at!: string;

  @Column('varchar', { length: 40 })
  updated_at!: string;
}

/** A bookmarked item: a note or filed file, a task, a project (by stable id), or a web address. */
@Entity('bookmarks')
export class BookmarkRow {
  @PrimaryColumn('varchar', { length: 32 })
  id!: string;

  /** note, file, task, project or url. */
  @Column('varchar', { length: 20 })
  item_type!: string;

  /** The item's stable id, or the address for a url. */
  @Column('varchar', { length: 2000 })
  item_id!: string;

  /** The name shown: the person's own, else the item's title when it was bookmarked. */
  @Column('varchar', { length: 500, nullable: true })
  title!: string | null;

  @Column('integer')
  sort_order!: number;

  @Column('varchar', { length: 40 })
  created_at!: string;
}

/** How a folder is shown; a folder without a row is shown the default way. */
@Entity('folder_views')
export class FolderViewRow {
  /** Vault-relative folder, '' for the vault's top. */
  @PrimaryColumn('varchar', { length: 1000 })
  folder!: string;

  /** list, cards or table. */
  @Column('varchar', { length: 20 })
  view!: string;

  /** title, modified or created. */
  @Column('varchar', { length: 20 })
  sort_by!: string;

  /** asc or desc. */
  @Column('varchar', { length: 4 })
  sort_direction!: string;

  @Column('boolean', { default: false })
  show_subfolders!: boolean;

  @Column('varchar', { length: 40 })
  updated_at!: string;
}

/** A reminder of its own (reminders.create), optionally about an item (a task, a note, a project, an inbox item). */
@Entity('reminders')
export class ReminderRow {
  @PrimaryColumn('varchar', { length: 32 })
  id!: string;

  @Column('varchar', { length: 500 })
  title!: string;

  @Column('text', { nullable: true })
  note!: string | null;

  /** When it reminds (ISO 8601, UTC). Changing it makes it remind again at the new time. */
  @Index()
  @Column('varchar', { length: 40 })
  remind_at!: string;

  /** task, note, project or inbox: what it is about (null: about nothing else). */
  @Column('varchar', { length: 20, nullable: true })
  item_type!: string | null;

  @Column('varchar', { length: 32, nullable: true })
  item_id!: string | null;

  @Column('varchar', { length: 40 })
  created_at!: string;

  @Column('varchar', { length: 40 })
  updated_at!: string;
}

/**
 * One reminder's delivery, recorded before anything is sent: the row is the lock (unique per source
 * item and time, so two instances, or a restart, deliver it once) and the history the person reads.
 */
@Entity('reminder_deliveries')
@Unique('UQ_reminder_deliveries_due', ['source', 'source_id', 'remind_at'])
export class ReminderDeliveryRow {
  @PrimaryColumn('varchar', { length: 32 })
  id!: string;

  /** reminder (the reminders table), task or inbox (a task's or an inbox item's remind_at). */
  @Column('varchar', { length: 20 })
  source!: string;

  @Column('varchar', { length: 32 })
  source_id!: string;

  /** The time it was due (the source's remind_at then). */
  @Column('varchar', { length: 40 })
  remind_at!: string;

  @Column('varchar', { length: 500 })
  title!: string;

  /** delivering, delivered, partly (a channel failed) or skipped (its task was done first). */
  @Column('varchar', { length: 20 })
  status!: string;

  /** JSON array: one entry per channel, `{channel, outcome, detail?}`. */
  @Column('text', { default: '[]' })
  channels!: string;

  /** When this instance took it (≥ remind_at; later when Memo was not running at the time). */
  @Index()
  @Column('varchar', { length: 40 })
  delivered_at!: string;

  /** When a person dismissed it in the console (null: still shown). */
  @Column('varchar', { length: 40, nullable: true })
  seen_at!: string | null;

  /** The instance that delivered it. */
  @Column('varchar', { length: 200 })
  instance!: string;
}

export class CreateDesktopDomains1797100000000 implements MigrationInterface {
  async up(qr: QueryRunner): Promise<void> {
    await qr.query(`CREATE TABLE "saved_filters" (
      "id" varchar(32) PRIMARY KEY NOT NULL,
      "name" varchar(200) NOT NULL,
      "query" varchar(2000) NOT NULL DEFAULT '',
      "folder" varchar(1000),
      "tags" text NOT NULL DEFAULT '[]',
      "file_types" text NOT NULL DEFAULT '[]',
      "sort_order" integer NOT NULL,
      "created_at" varchar(40) NOT NULL,
      "updated_at" varchar(40) NOT NULL)`);
    await qr.query(`CREATE TABLE "bookmarks" (
      "id" varchar(32) PRIMARY KEY NOT NULL,
      "item_type" varchar(20) NOT NULL,
      "item_id" varchar(2000) NOT NULL,
      "title" varchar(500),
      "sort_order" integer NOT NULL,
      "created_at" varchar(40) NOT NULL)`);
    await qr.query(`CREATE TABLE "folder_views" (
      "folder" varchar(1000) PRIMARY KEY NOT NULL,
      "view" varchar(20) NOT NULL,
      "sort_by" varchar(20) NOT NULL,
      "sort_direction" varchar(4) NOT NULL,
      "show_subfolders" boolean NOT NULL DEFAULT false,
      "updated_at" varchar(40) NOT NULL)`);
    await qr.query(`CREATE TABLE "reminders" (
      "id" varchar(32) PRIMARY KEY NOT NULL,
      "title" varchar(500) NOT NULL,
      "note" text,
      "remind_at" varchar(40) NOT NULL,
      "item_type" varchar(20),
      "item_id" varchar(32),
      "created_at" varchar(40) NOT NULL,
      "updated_at" varchar(40) NOT NULL)`);
    await qr.query(`CREATE INDEX "IDX_reminders_remind_at" ON "reminders" ("remind_at")`);
    await qr.query(`CREATE TABLE "reminder_deliveries" (
      "id" varchar(32) PRIMARY KEY NOT NULL,
      "source" varchar(20) NOT NULL,
      "source_id" varchar(32) NOT NULL,
      "remind_at" varchar(40) NOT NULL,
      "title" varchar(500) NOT NULL,
      "status" varchar(20) NOT NULL,
      "channels" text NOT NULL DEFAULT '[]',
      "delivered_at" varchar(40) NOT NULL,
      "seen_at" varchar(40),
      "instance" varchar(200) NOT NULL,
      CONSTRAINT "UQ_reminder_deliveries_due" UNIQUE ("source", "source_id", "remind_at"))`);
    await qr.query(`CREATE INDEX "IDX_reminder_deliveries_delivered_at" ON "reminder_deliveries" ("delivered_at")`);
    await qr.query(`CREATE INDEX "IDX_inbox_items_remind_at" ON "inbox_items" ("remind_at")`);
    await qr.query(`ALTER TABLE "planning_tasks" ADD COLUMN "remind_at" varchar(40)`);
    await qr.query(`CREATE INDEX "IDX_planning_tasks_remind_at" ON "planning_tasks" ("remind_at")`);
  }

  async down(qr: QueryRunner): Promise<void> {
    await qr.query(`DROP INDEX "IDX_planning_tasks_remind_at"`);
    await qr.query(`ALTER TABLE "planning_tasks" DROP COLUMN "remind_at"`);
    await qr.query(`DROP INDEX "IDX_inbox_items_remind_at"`);
    for (const t of ['reminder_deliveries', 'reminders', 'folder_views', 'bookmarks', 'saved_filters']) await qr.query(`DROP TABLE "${t}"`);
  }
}

export const PLANNING_ENTITIES = [
  StatusRow,
  ProjectRow,
  TaskRow,
  ProjectLinkRow,
  InboxItemRow,
  VaultSettingRow,
  TaskNoteRow,
  PlanningMetaRow,
  SavedFilterRow,
  BookmarkRow,
  FolderViewRow,
  ReminderRow,
  ReminderDeliveryRow,
];

export const PLANNING_MIGRATIONS = [CreatePlanningStore1797000000000, CreateDesktopDomains1797100000000];
