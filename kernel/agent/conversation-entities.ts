/**
 * Conversation storage entities. Portable column types only (varchar, text, integer, boolean,
 * simple-json, managed dates), so the same entities run on SQLite here and PostgreSQL elsewhere.
 */
import { Column, CreateDateColumn, DeleteDateColumn, Entity, Index, PrimaryColumn, UpdateDateColumn } from 'typeorm';

@Entity('conversations')
export class ConversationRow {
  @PrimaryColumn('varchar', { length: 36 })
  id!: string;

  /** Encrypted (see conversation-cipher.ts), hence text: a ciphertext is longer than the 200 characters a title may have. */
  @Column('text')
  title!: string;

  @Column('varchar', { length: 100, nullable: true })
  provider!: string | null;

  @Column('varchar', { length: 200, nullable: true })
  model!: string | null;

  @CreateDateColumn()
  createdAt!: Date;

  @UpdateDateColumn()
  updatedAt!: Date;

  @DeleteDateColumn({ nullable: true })
  deletedAt!: Date | null;

  /** The access mode of its latest turn (vault, computer, web); null before the first. Added by a migration. */
  @Column('varchar', { length: 16, nullable: true })
  mode!: string | null;
}

@Entity('messages')
@Index(['conversationId', 'seq'], { unique: true })
export class MessageRow {
  @PrimaryColumn('varchar', { length: 36 })
  id!: string;

  @Column('varchar', { length: 36 })
  conversationId!: string;

  @Column('integer')
  seq!: number;

  @Column('varchar', { length: 16 })
  role!: 'system' | 'user' | 'assistant' | 'tool';

  @Column('text')
  content!: string;

  /** An encrypted JSON array (a plain array in rows written before encryption). */
  @Column('simple-json', { nullable: true })
  toolCalls!: string | Array<{ id: string; name: string; arguments: Record<string, unknown> }> | null;

  @Column('varchar', { length: 200, nullable: true })
  toolCallId!: string | null;

  @Column('varchar', { length: 100, nullable: true })
  name!: string | null;

  @Column('boolean', { default: false })
  isError!: boolean;

  @CreateDateColumn()
  createdAt!: Date;

  // Added by a later migration (ALTER TABLE appends), hence after createdAt.
  /** The provider that produced an assistant message (null for the person's and the tools' messages). */
  @Column('varchar', { length: 100, nullable: true })
  provider!: string | null;

  @Column('varchar', { length: 200, nullable: true })
  model!: string | null;

  /** The model's reasoning for an assistant message, encrypted: shown, never replayed. */
  @Column('text', { nullable: true })
  reasoning!: string | null;
}

/** A record for the person of which tools a turn ran: never replayed to the model. */
@Entity('tool_activity')
@Index(['conversationId', 'turnSeq'])
export class ToolActivityRow {
  @PrimaryColumn('varchar', { length: 36 })
  id!: string;

  @Column('varchar', { length: 36 })
  conversationId!: string;

  /** The seq of the user message that started the turn. */
  @Column('integer')
  turnSeq!: number;

  @Column('varchar', { length: 100 })
  tool!: string;

  /** Identifying arguments, masked and shortened: an encrypted JSON object (a plain object in rows written before encryption). */
  @Column('simple-json')
  args!: string | Record<string, unknown>;

  @Column('varchar', { length: 16 })
  outcome!: 'ok' | 'error' | 'denied' | 'expired';

  @Column('varchar', { length: 40, nullable: true })
  code!: string | null;

  @Column('text')
  summary!: string;

  @Column('integer')
  durationMs!: number;

  @CreateDateColumn()
  createdAt!: Date;

  /** A person's edit before approving: encrypted JSON `{by, askedArgs}` (what the model asked for); null when none. Last: added by a migration. */
  @Column('text', { nullable: true })
  edited!: string | null;

  /** The items the result named: encrypted JSON ItemRef[] (type, id, title, icon), so a reopened reply still links them; null when none. Added by a migration. */
  @Column('text', { nullable: true })
  items!: string | null;
}

/**
 * A summary of a conversation's oldest messages (seed 003 compaction). The newest one stands in
 * for every message up to `throughSeq` when the history is replayed; older ones are kept as a record.
 */
@Entity('conversation_summaries')
@Index(['conversationId', 'throughSeq'])
export class SummaryRow {
  @PrimaryColumn('varchar', { length: 36 })
  id!: string;

  @Column('varchar', { length: 36 })
  conversationId!: string;

  /** The seq of the last message the summary replaces. */
  @Column('integer')
  throughSeq!: number;

  @Column('text')
  content!: string;

  @Column('varchar', { length: 100, nullable: true })
  provider!: string | null;

  @Column('varchar', { length: 200, nullable: true })
  model!: string | null;

  @CreateDateColumn()
  createdAt!: Date;
}
