/**
 * Migrations of the schema `memo_kernel` (kernel-state-db.ts): the kernel's own settings when
 * MEMO_DATABASE_URL is set. PostgreSQL only (without the URL these stores are JSON files in the data
 * folder). One table per store, so two instances changing different rows never touch each other's:
 * a permission decision per (tool, scope, conversation), a pack per row, a provider per row; the few
 * single values (always-allow, the active provider, the rate limit) are typed rows of one key-value
 * table. `state_versions` holds one counter per store, bumped by every write in its transaction:
 * writers of one store take turns on that row, and readers know what they have seen.
 */
import type { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateKernelState1796500000000 implements MigrationInterface {
  async up(qr: QueryRunner): Promise<void> {
    await qr.query(`CREATE TABLE "state_versions" ("store" varchar(20) PRIMARY KEY, "version" bigint NOT NULL DEFAULT 0)`);
    await qr.query(`INSERT INTO "state_versions" ("store") VALUES ('permissions'), ('packs'), ('providers'), ('settings')`);
    await qr.query(
      `CREATE TABLE "file_imports" ("store" varchar(20) PRIMARY KEY, "instance" varchar(40) NOT NULL, "rows" integer NOT NULL, "at" timestamptz NOT NULL DEFAULT now())`,
    );
    await qr.query(
      `CREATE TABLE "permission_decisions" (` +
        `"tool" varchar(200) NOT NULL, "scope" varchar(20) NOT NULL CHECK ("scope" IN ('forever', 'until', 'conversation')), ` +
        `"conversation_id" varchar(200) NOT NULL DEFAULT '', "decision" varchar(10) NOT NULL CHECK ("decision" IN ('allow', 'deny')), ` +
        `"plugin" varchar(200), "given_at" varchar(40) NOT NULL, "expires_at" timestamptz, ` +
        `PRIMARY KEY ("tool", "scope", "conversation_id"), ` +
        `CHECK (("scope" = 'until') = ("expires_at" IS NOT NULL)), CHECK (("scope" = 'conversation') = ("conversation_id" <> '')))`,
    );
    await qr.query(`CREATE TABLE "pack_settings" ("pack_id" varchar(200) PRIMARY KEY, "enabled" boolean, "config" jsonb)`);
    // "secret": the stored key and header values, AES-256-GCM with data/kernel.key; never plaintext here.
    await qr.query(`CREATE TABLE "providers" ("name" varchar(200) PRIMARY KEY, "config" jsonb NOT NULL, "secret" text)`);
    await qr.query(
      `CREATE TABLE "kernel_values" ("store" varchar(20) NOT NULL, "key" varchar(100) NOT NULL, "value" jsonb NOT NULL, PRIMARY KEY ("store", "key"))`,
    );
  }

  async down(qr: QueryRunner): Promise<void> {
    for (const t of ['kernel_values', 'providers', 'pack_settings', 'permission_decisions', 'file_imports', 'state_versions'])
      await qr.query(`DROP TABLE "${t}"`);
  }
}

export const KERNEL_STATE_MIGRATIONS = [CreateKernelState1796500000000];
