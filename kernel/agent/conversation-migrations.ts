/**
 * Migrations of data/agent.sqlite, oldest first, or of the schema memo_agent when the conversations
 * live in PostgreSQL (MEMO_DATABASE_URL). Each runs in its own transaction (see
 * kernel/storage/migrations.ts). The SQLite statements are the ones existing files ran and stay as
 * they are; PostgreSQL gets its own where the SQL differs, under the same migration names, so both
 * record the same history. Dates are `timestamptz` there (an instant, whatever the server's or
 * the host's time zone). typeorm is only a type here: this file is imported with the entities.
 */
import type { MigrationInterface, QueryRunner } from 'typeorm';

const onPostgres = (qr: QueryRunner) => qr.connection.driver.options.type === 'postgres';

/**
 * The schema typeorm's `synchronize` made from conversation-entities.ts before there were
 * migrations, statement for statement. IF NOT EXISTS lets a file made that way be adopted as it is
 * (SQLite drops the clause from the stored schema, so both files end up with the same text).
 */
class CreateConversations1796064597881 implements MigrationInterface {
  async up(qr: QueryRunner): Promise<void> {
    if (onPostgres(qr)) {
      await qr.query(
        `CREATE TABLE "conversations" ("id" varchar(36) PRIMARY KEY NOT NULL, "title" varchar(200) NOT NULL, "provider" varchar(100), "model" varchar(200), "createdAt" timestamptz NOT NULL DEFAULT now(), "updatedAt" timestamptz NOT NULL DEFAULT now(), "deletedAt" timestamptz)`,
      );
      await qr.query(
        `CREATE TABLE "messages" ("id" varchar(36) PRIMARY KEY NOT NULL, "conversationId" varchar(36) NOT NULL, "seq" integer NOT NULL, "role" varchar(16) NOT NULL, "content" text NOT NULL, "toolCalls" text, "toolCallId" varchar(200), "name" varchar(100), "isError" boolean NOT NULL DEFAULT false, "createdAt" timestamptz NOT NULL DEFAULT now())`,
      );
      await qr.query(`CREATE UNIQUE INDEX "IDX_f0874fbc4bba5c9edc9ca528f8" ON "messages" ("conversationId", "seq")`);
      await qr.query(
        `CREATE TABLE "tool_activity" ("id" varchar(36) PRIMARY KEY NOT NULL, "conversationId" varchar(36) NOT NULL, "turnSeq" integer NOT NULL, "tool" varchar(100) NOT NULL, "args" text NOT NULL, "outcome" varchar(16) NOT NULL, "code" varchar(40), "summary" text NOT NULL, "durationMs" integer NOT NULL, "createdAt" timestamptz NOT NULL DEFAULT now())`,
      );
      await qr.query(`CREATE INDEX "IDX_fc8029874e647c7e18144852b8" ON "tool_activity" ("conversationId", "turnSeq")`);
      return;
    }
    await qr.query(
      `CREATE TABLE IF NOT EXISTS "conversations" ("id" varchar(36) PRIMARY KEY NOT NULL, "title" varchar(200) NOT NULL, "provider" varchar(100), "model" varchar(200), "createdAt" datetime NOT NULL DEFAULT (datetime('now')), "updatedAt" datetime NOT NULL DEFAULT (datetime('now')), "deletedAt" datetime)`,
    );
    await qr.query(
      `CREATE TABLE IF NOT EXISTS "messages" ("id" varchar(36) PRIMARY KEY NOT NULL, "conversationId" varchar(36) NOT NULL, "seq" integer NOT NULL, "role" varchar(16) NOT NULL, "content" text NOT NULL, "toolCalls" text, "toolCallId" varchar(200), "name" varchar(100), "isError" boolean NOT NULL DEFAULT (0), "createdAt" datetime NOT NULL DEFAULT (datetime('now')))`,
    );
    await qr.query(`CREATE UNIQUE INDEX IF NOT EXISTS "IDX_f0874fbc4bba5c9edc9ca528f8" ON "messages" ("conversationId", "seq") `);
    await qr.query(
      `CREATE TABLE IF NOT EXISTS "tool_activity" ("id" varchar(36) PRIMARY KEY NOT NULL, "conversationId" varchar(36) NOT NULL, "turnSeq" integer NOT NULL, "tool" varchar(100) NOT NULL, "args" text NOT NULL, "outcome" varchar(16) NOT NULL, "code" varchar(40), "summary" text NOT NULL, "durationMs" integer NOT NULL, "createdAt" datetime NOT NULL DEFAULT (datetime('now')))`,
    );
    await qr.query(`CREATE INDEX IF NOT EXISTS "IDX_fc8029874e647c7e18144852b8" ON "tool_activity" ("conversationId", "turnSeq") `);
  }

  async down(qr: QueryRunner): Promise<void> {
    await qr.query(`DROP INDEX IF EXISTS "IDX_fc8029874e647c7e18144852b8"`);
    await qr.query(`DROP TABLE IF EXISTS "tool_activity"`);
    await qr.query(`DROP INDEX IF EXISTS "IDX_f0874fbc4bba5c9edc9ca528f8"`);
    await qr.query(`DROP TABLE IF EXISTS "messages"`);
    await qr.query(`DROP TABLE IF EXISTS "conversations"`);
  }
}

/** Per-message provider and model (a switch mid-conversation is recorded), and compaction summaries. */
class AddSummariesAndMessageModel1796500000000 implements MigrationInterface {
  async up(qr: QueryRunner): Promise<void> {
    await qr.query(`ALTER TABLE "messages" ADD COLUMN "provider" varchar(100)`);
    await qr.query(`ALTER TABLE "messages" ADD COLUMN "model" varchar(200)`);
    const now = onPostgres(qr) ? `timestamptz NOT NULL DEFAULT now()` : `datetime NOT NULL DEFAULT (datetime('now'))`;
    await qr.query(
      `CREATE TABLE "conversation_summaries" ("id" varchar(36) PRIMARY KEY NOT NULL, "conversationId" varchar(36) NOT NULL, "throughSeq" integer NOT NULL, "content" text NOT NULL, "provider" varchar(100), "model" varchar(200), "createdAt" ${now})`,
    );
    await qr.query(`CREATE INDEX "IDX_3ab6c8b8a75553f4a33701a0e2" ON "conversation_summaries" ("conversationId", "throughSeq") `);
  }

  async down(qr: QueryRunner): Promise<void> {
    await qr.query(`DROP INDEX IF EXISTS "IDX_3ab6c8b8a75553f4a33701a0e2"`);
    await qr.query(`DROP TABLE IF EXISTS "conversation_summaries"`);
    await qr.query(`ALTER TABLE "messages" DROP COLUMN "model"`);
    await qr.query(`ALTER TABLE "messages" DROP COLUMN "provider"`);
  }
}

/**
 * Titles become text: they are stored encrypted, and a ciphertext is longer than 200 characters.
 * SQLite cannot alter a column, so the table is rebuilt the way typeorm does it (PostgreSQL alters
 * it in place). The content itself is encrypted by the store when it opens the file (a migration has no key).
 */
class TitleAsText1796600000000 implements MigrationInterface {
  async up(qr: QueryRunner): Promise<void> {
    if (onPostgres(qr)) {
      await qr.query(`ALTER TABLE "conversations" ALTER COLUMN "title" TYPE text`);
      return;
    }
    await qr.query(
      `CREATE TABLE "temporary_conversations" ("id" varchar(36) PRIMARY KEY NOT NULL, "title" text NOT NULL, "provider" varchar(100), "model" varchar(200), "createdAt" datetime NOT NULL DEFAULT (datetime('now')), "updatedAt" datetime NOT NULL DEFAULT (datetime('now')), "deletedAt" datetime)`,
    );
    await qr.query(
      `INSERT INTO "temporary_conversations"("id", "title", "provider", "model", "createdAt", "updatedAt", "deletedAt") SELECT "id", "title", "provider", "model", "createdAt", "updatedAt", "deletedAt" FROM "conversations"`,
    );
    await qr.query(`DROP TABLE "conversations"`);
    await qr.query(`ALTER TABLE "temporary_conversations" RENAME TO "conversations"`);
  }

  async down(qr: QueryRunner): Promise<void> {
    if (onPostgres(qr)) {
      await qr.query(`ALTER TABLE "conversations" ALTER COLUMN "title" TYPE varchar(200) USING substr("title", 1, 200)`);
      return;
    }
    await qr.query(
      `CREATE TABLE "temporary_conversations" ("id" varchar(36) PRIMARY KEY NOT NULL, "title" varchar(200) NOT NULL, "provider" varchar(100), "model" varchar(200), "createdAt" datetime NOT NULL DEFAULT (datetime('now')), "updatedAt" datetime NOT NULL DEFAULT (datetime('now')), "deletedAt" datetime)`,
    );
    await qr.query(
      `INSERT INTO "temporary_conversations"("id", "title", "provider", "model", "createdAt", "updatedAt", "deletedAt") SELECT "id", substr("title", 1, 200), "provider", "model", "createdAt", "updatedAt", "deletedAt" FROM "conversations"`,
    );
    await qr.query(`DROP TABLE "conversations"`);
    await qr.query(`ALTER TABLE "temporary_conversations" RENAME TO "conversations"`);
  }
}

/** The model's reasoning beside an assistant message (encrypted by the store). */
class AddMessageReasoning1796700000000 implements MigrationInterface {
  async up(qr: QueryRunner): Promise<void> {
    await qr.query(`ALTER TABLE "messages" ADD COLUMN "reasoning" text`);
  }

  async down(qr: QueryRunner): Promise<void> {
    await qr.query(`ALTER TABLE "messages" DROP COLUMN "reasoning"`);
  }
}

/** A person's edit of a step's arguments beside the step (encrypted by the store). */
class AddActivityEdit1796800000000 implements MigrationInterface {
  async up(qr: QueryRunner): Promise<void> {
    await qr.query(`ALTER TABLE "tool_activity" ADD COLUMN "edited" text`);
  }

  async down(qr: QueryRunner): Promise<void> {
    await qr.query(`ALTER TABLE "tool_activity" DROP COLUMN "edited"`);
  }
}

/** The items a step's result named (notes, tasks, events...), beside the step (encrypted by the store). */
class AddActivityItems1797200000000 implements MigrationInterface {
  async up(qr: QueryRunner): Promise<void> {
    await qr.query(`ALTER TABLE "tool_activity" ADD COLUMN "items" text`);
  }

  async down(qr: QueryRunner): Promise<void> {
    await qr.query(`ALTER TABLE "tool_activity" DROP COLUMN "items"`);
  }
}

/** The access mode of a conversation's latest turn, so a face reopens it in that mode. */
class AddConversationMode1797300000000 implements MigrationInterface {
  async up(qr: QueryRunner): Promise<void> {
    await qr.query(`ALTER TABLE "conversations" ADD COLUMN "mode" varchar(16)`);
  }

  async down(qr: QueryRunner): Promise<void> {
    await qr.query(`ALTER TABLE "conversations" DROP COLUMN "mode"`);
  }
}

/** Every migration of agent.sqlite, in order. */
export const CONVERSATION_MIGRATIONS = [
  CreateConversations1796064597881,
  AddSummariesAndMessageModel1796500000000,
  TitleAsText1796600000000,
  AddMessageReasoning1796700000000,
  AddActivityEdit1796800000000,
  AddActivityItems1797200000000,
  AddConversationMode1797300000000,
];
