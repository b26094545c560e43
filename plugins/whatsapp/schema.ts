/**
 * The WhatsApp pack's local history: chats, contacts, LID/phone-number pairs and messages, fed by
 * the connection's events (store.ts), plus an FTS5 index over message text. Every row is keyed by
 * what WhatsApp itself uses as identity (a chat's JID; a message's chat, id and direction), so an
 * event replayed after a reconnect or a restart finds its row instead of adding one.
 */
import { Column, Entity, Index, PrimaryColumn, PrimaryGeneratedColumn, type MigrationInterface, type QueryRunner } from 'typeorm';

@Entity('wa_chats')
export class ChatRow {
  /** The chat's JID: a phone number's (`<digits>@s.whatsapp.net`) when known, else `@lid`, or `@g.us` for a group. */
  @PrimaryColumn('varchar')
  jid!: string;

  @Column('varchar', { nullable: true })
  name!: string | null;

  @Column('boolean')
  is_group!: boolean;

  @Column('integer')
  unread!: number;

  /** Epoch seconds of the newest message kept (null: none yet). */
  @Index()
  @Column('integer', { nullable: true })
  last_at!: number | null;

  @Column('boolean')
  archived!: boolean;
}

@Entity('wa_contacts')
export class ContactRow {
  @PrimaryColumn('varchar')
  jid!: string;

  /** The name the person saved for this contact on their phone. */
  @Column('varchar', { nullable: true })
  name!: string | null;

  /** The name the contact gave themselves (WhatsApp's push name). */
  @Column('varchar', { nullable: true })
  notify!: string | null;

  @Column('varchar', { nullable: true })
  verified_name!: string | null;
}

/** WhatsApp's hidden-number ids (`@lid`) and the phone number each stands for, as the server revealed them. */
@Entity('wa_lid_map')
export class LidMapRow {
  @PrimaryColumn('varchar')
  lid!: string;

  @Index()
  @Column('varchar')
  pn!: string;
}

@Entity('wa_messages')
@Index('IDX_wa_messages_key', ['chat_jid', 'msg_id', 'from_me'], { unique: true })
@Index('IDX_wa_messages_chat_ts', ['chat_jid', 'ts'])
export class MessageRow {
  /** The FTS rowid. */
  @PrimaryGeneratedColumn('increment')
  seq!: number;

  @Column('varchar')
  chat_jid!: string;

  @Column('varchar')
  msg_id!: string;

  @Column('boolean')
  from_me!: boolean;

  /** Who wrote it (groups: the participant; chats: the other person); null for the person's own. */
  @Index()
  @Column('varchar', { nullable: true })
  sender_jid!: string | null;

  /** The sender's push name as the message carried it (a fallback when no contact name is known). */
  @Column('varchar', { nullable: true })
  push_name!: string | null;

  /** Epoch seconds. */
  @Index()
  @Column('integer')
  ts!: number;

  /** text, image, video, audio, document, sticker, location, contact, poll, other. */
  @Column('varchar')
  kind!: string;

  /** The text, caption or description; null once deleted or for media without one. Never media bytes. */
  @Column('text', { nullable: true })
  text!: string | null;

  @Column('boolean')
  edited!: boolean;

  @Column('boolean')
  deleted!: boolean;
}

export const ENTITIES = [ChatRow, ContactRow, LidMapRow, MessageRow];

/**
 * Porter stemming over unicode61 with accents folded (`café` finds `cafe`). External content: the
 * text lives once, in wa_messages, and snippet() reads it from there; store.ts keeps the two in step.
 * Prefix indexes for 2 and 3 characters: `ka*` over 100,000 messages costs 2 ms instead of 8.
 */
export const CREATE_FTS = `CREATE VIRTUAL TABLE wa_messages_fts USING fts5(text, content='wa_messages', content_rowid='seq', prefix='2 3', tokenize='porter unicode61 remove_diacritics 2')`;

export class CreateWhatsApp1796700000000 implements MigrationInterface {
  async up(qr: QueryRunner): Promise<void> {
    await qr.query(`CREATE TABLE "wa_chats" (
      "jid" varchar PRIMARY KEY NOT NULL,
      "name" varchar,
      "is_group" boolean NOT NULL,
      "unread" integer NOT NULL,
      "last_at" integer,
      "archived" boolean NOT NULL)`);
    await qr.query(`CREATE INDEX "IDX_wa_chats_last_at" ON "wa_chats" ("last_at")`);
    await qr.query(`CREATE TABLE "wa_contacts" (
      "jid" varchar PRIMARY KEY NOT NULL,
      "name" varchar,
      "notify" varchar,
      "verified_name" varchar)`);
    await qr.query(`CREATE TABLE "wa_lid_map" ("lid" varchar PRIMARY KEY NOT NULL, "pn" varchar NOT NULL)`);
    await qr.query(`CREATE INDEX "IDX_wa_lid_map_pn" ON "wa_lid_map" ("pn")`);
    await qr.query(`CREATE TABLE "wa_messages" (
      "seq" integer PRIMARY KEY AUTOINCREMENT NOT NULL,
      "chat_jid" varchar NOT NULL,
      "msg_id" varchar NOT NULL,
      "from_me" boolean NOT NULL,
      "sender_jid" varchar,
      "push_name" varchar,
      "ts" integer NOT NULL,
      "kind" varchar NOT NULL,
      "text" text,
      "edited" boolean NOT NULL,
      "deleted" boolean NOT NULL)`);
    await qr.query(`CREATE UNIQUE INDEX "IDX_wa_messages_key" ON "wa_messages" ("chat_jid", "msg_id", "from_me")`);
    await qr.query(`CREATE INDEX "IDX_wa_messages_chat_ts" ON "wa_messages" ("chat_jid", "ts")`);
    await qr.query(`CREATE INDEX "IDX_wa_messages_sender" ON "wa_messages" ("sender_jid")`);
    await qr.query(`CREATE INDEX "IDX_wa_messages_ts" ON "wa_messages" ("ts")`);
    await qr.query(CREATE_FTS);
  }

  async down(qr: QueryRunner): Promise<void> {
    for (const t of ['wa_messages_fts', 'wa_messages', 'wa_lid_map', 'wa_contacts', 'wa_chats']) await qr.query(`DROP TABLE "${t}"`);
  }
}

export const MIGRATIONS = [CreateWhatsApp1796700000000];
