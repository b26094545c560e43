import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { DataSource, Repository } from 'typeorm';
import { MemoError } from '../errors.js';
import type { DatabaseUrl } from '../storage/database-url.js';
import { openSqlite } from '../storage/sqlite.js';
import { checkSqliteFile, isSqliteDamage } from '../storage/sqlite-health.js';
import type { AgentStep } from '../packs/pack-agent.js';
import type { AccessMode, ItemRef } from '../tools/contract.js';
import { summaryMessage, type Compaction } from './compaction.js';
import { ConversationCipher } from '../secrets/conversation-cipher.js';
import type { ChatMessage } from '../providers/provider.js';

export interface ConversationInfo {
  id: string;
  title: string;
  provider: string | null;
  model: string | null;
  /** The access mode of its latest turn (a face picks it again when the conversation is reopened); null before the first. */
  mode?: AccessMode | null;
  createdAt: string;
  updatedAt: string;
  messages: number;
}

export interface ToolActivity {
  turnSeq: number;
  tool: string;
  args: Record<string, unknown>;
  outcome: 'ok' | 'error' | 'denied' | 'expired';
  code: string | null;
  summary: string;
  durationMs: number;
  /** A person edited the arguments before approving (`args` are then the edited ones). */
  edited?: { by: string; askedArgs: Record<string, unknown> };
  /** The items the result named (a record of links for the person, never replayed to the model). */
  items?: ItemRef[];
}

/** One stored message as the person sees it: who produced it, and where the summaries stand. */
export interface StoredMessage {
  seq: number;
  role: ChatMessage['role'];
  content: string;
  /** The provider and model that produced an assistant message; null for the others. */
  provider: string | null;
  model: string | null;
  /** A tool result's tool, an assistant message's called tools. */
  tools: string[];
  /** The model's reasoning for an assistant message, when the provider gave it. */
  reasoning: string | null;
}

export interface StoredSummary {
  throughSeq: number;
  content: string;
  provider: string | null;
  model: string | null;
  createdAt: string;
}

/** What else a turn stores with its messages. */
export interface TurnRecord {
  /** Who produced the turn's assistant messages (a switch mid-conversation is recorded per message). */
  provider?: string;
  model?: string;
  /** The turn summarised the leading messages of the history it was given. */
  compaction?: Compaction;
  /** The model's reasoning per message of the turn (index into its messages). */
  reasoning?: ReadonlyArray<{ message: number; text: string }>;
}

/** One hit of a search through the person's own conversations. */
export interface HistoryHit {
  conversationId: string;
  title: string;
  updatedAt: string;
  /** The matching message (null when only the title matched). */
  seq: number | null;
  role: ChatMessage['role'] | null;
  snippet: string;
}

/** What a check of the conversations' file found (ConversationStore.check), with one line for a person. */
export interface ConversationsHealth {
  /** absent: not made yet; damaged: every conversation operation is refused until it is restored or set aside; unchecked: it could not be read to check. */
  state: 'ok' | 'absent' | 'damaged' | 'unchecked';
  detail: string;
}

/**
 * What a person reads when the conversations' file is damaged: which file, what is wrong, what stops
 * and what does not, and what to do. Memo keeps no copy of the file, and never deletes or renames it.
 */
function damagedMessage(file: string, problem: string): string {
  const name = path.basename(file);
  return (
    `The conversations file ${file} ${problem}: chats and their history are off until it is put right; every other tool works. ` +
    `Memo keeps no backup of it and never deletes or renames it. Stop memo, move ${name}, ${name}-wal and ${name}-shm (those there) out of the data folder, ` +
    `then put ${name} back from your own backup (with agent.key beside it), or leave it out to start with no conversations: ` +
    `the conversations, messages and tool activity it held are then gone from Memo (the audit trail still has each tool call).`
  );
}

/** Changes whenever the file or its write-ahead log does: a verdict on the file holds until then. */
function stampOf(file: string): string {
  const of = (f: string) => {
    try {
      const st = fs.statSync(f);
      return `${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch {
      return '-';
    }
  };
  return `${of(file)}|${of(`${file}-wal`)}`;
}

type Entities = typeof import('./conversation-entities.js');

type ToolCallsColumn = Array<{ id: string; name: string; arguments: Record<string, unknown> }>;

/** Associated data of each encrypted field: the row and the column it belongs to. */
/** The PostgreSQL schema of the conversations (pack schemas all start with pack_). */
const CONVERSATION_SCHEMA = 'memo_agent';

const at = {
  title: (id: string) => `conversation/${id}/title`,
  content: (id: string) => `message/${id}/content`,
  toolCalls: (id: string) => `message/${id}/toolCalls`,
  args: (id: string) => `activity/${id}/args`,
  stepSummary: (id: string) => `activity/${id}/summary`,
  stepEdited: (id: string) => `activity/${id}/edited`,
  stepItems: (id: string) => `activity/${id}/items`,
  summary: (id: string) => `summary/${id}/content`,
  reasoning: (id: string) => `message/${id}/reasoning`,
};

/**
 * Conversations, their messages and each turn's tool activity, in `data/agent.sqlite`. Everything
 * a person or a model wrote (titles, messages, tool calls and their arguments, step summaries,
 * compaction summaries) is encrypted at rest with the key in `data/agent.key` (conversation-cipher.ts);
 * ids, roles, tool names, outcomes, model names and times stay readable for the queries.
 */
export class ConversationStore {
  private ds: DataSource | null = null;
  private cipher: ConversationCipher | null = null;
  /** The one opening in flight: calls that arrive together share it (migrations run once). */
  private opening: Promise<DataSource> | null = null;
  private entities: Entities | null = null;
  private onDelete: (id: string) => void = () => {};
  /** The last check of the file and the file's stamp then: the verdict holds until the file changes. */
  private checked: { stamp: string; health: ConversationsHealth } | null = null;

  /**
   * `keyFile`: the conversation key, `agent.key` beside the database unless told otherwise.
   * `database`: a shared PostgreSQL database (MEMO_DATABASE_URL), used instead of `file`: the
   * conversations live in its schema `memo_agent`; the key stays a file, and every instance that
   * shares the database needs the same one.
   */
  constructor(
    readonly file: string,
    readonly keyFile: string = path.join(path.dirname(file), 'agent.key'),
    private readonly database: DatabaseUrl | null = null,
  ) {}

  /** Where the conversations are, for messages: the file, or the database (password masked) and schema. */
  private get where(): string {
    return this.database ? `${this.database.display} (schema "${CONVERSATION_SCHEMA}")` : this.file;
  }

  private get c(): ConversationCipher {
    return this.cipher!; // set by open(), before any repository is handed out
  }

  /** Told when a conversation is deleted (its write capabilities must die with it). */
  setDeleteListener(fn: (id: string) => void): void {
    this.onDelete = fn;
  }

  private async repos(): Promise<{
    conv: Repository<InstanceType<Entities['ConversationRow']>>;
    msg: Repository<InstanceType<Entities['MessageRow']>>;
    act: Repository<InstanceType<Entities['ToolActivityRow']>>;
    sum: Repository<InstanceType<Entities['SummaryRow']>>;
  }> {
    if (!this.ds) {
      const opening = (this.opening ??= this.open());
      try {
        this.ds = await opening;
      } catch (err) {
        if (this.opening === opening) this.opening = null;
        throw err;
      }
    }
    const e = this.entities!;
    return {
      conv: this.ds.getRepository(e.ConversationRow),
      msg: this.ds.getRepository(e.MessageRow),
      act: this.ds.getRepository(e.ToolActivityRow),
      sum: this.ds.getRepository(e.SummaryRow),
    };
  }

  /**
   * Is the file whole (storage/sqlite-health.ts: its header, its write-ahead log, SQLite's
   * quick_check)? memo serve and memo doctor ask at start, and the store asks before it opens the
   * file; the verdict holds until the file changes. Nothing here changes the file. On PostgreSQL
   * there is no file to check: the database server keeps its own.
   */
  async check(): Promise<ConversationsHealth> {
    if (this.database) return { state: 'ok', detail: `kept in ${this.where}` };
    const stamp = stampOf(this.file);
    if (this.checked?.stamp === stamp) return this.checked.health;
    // The key is made just after the file's tables: with it there, an empty file was emptied, not new.
    const found = await checkSqliteFile(this.file, fs.existsSync(this.keyFile) ? { heldData: `${path.basename(this.keyFile)} beside it` } : {});
    const health: ConversationsHealth =
      found.state === 'ok'
        ? { state: 'ok', detail: `${this.file} is whole (${(found.bytes / 1e6).toFixed(1)} MB, checked in ${found.ms} ms)` }
        : found.state === 'absent'
          ? { state: 'absent', detail: `${this.file} is not made yet: the first chat makes it` }
          : found.state === 'damaged'
            ? { state: 'damaged', detail: damagedMessage(this.file, found.problem) }
            : { state: 'unchecked', detail: `The conversations file ${this.file} could not be checked (${found.reason}); chats will still try to open it.` };
    this.checked = { stamp, health };
    return health;
  }

  /** A failure that shows the file damaged becomes the damage message, and the verdict until the file changes. */
  private damaged(err: unknown): unknown {
    if (this.database) return err;
    let detail: string;
    if (this.checked?.health.state === 'damaged') detail = this.checked.health.detail;
    else if (isSqliteDamage(err)) {
      const cause = (err as { cause?: { message?: string } }).cause?.message ?? (err as Error).message;
      detail = damagedMessage(this.file, `is damaged (SQLite: ${cause})`);
      this.checked = { stamp: stampOf(this.file), health: { state: 'damaged', detail } };
    } else return err;
    return new MemoError('CONFLICT', detail, { details: { file: this.file, damaged: true }, ...(err ? { cause: err } : {}) });
  }

  /** Loaded on first use, with typeorm itself (see openSqlite). A damaged file is refused untouched. */
  private async open(): Promise<DataSource> {
    if (!this.database && (await this.check()).state === 'damaged') throw this.damaged(null);
    const [entities, { CONVERSATION_MIGRATIONS }] = await Promise.all([import('./conversation-entities.js'), import('./conversation-migrations.js')]);
    this.entities = entities;
    const store = {
      entities: [entities.ConversationRow, entities.MessageRow, entities.ToolActivityRow, entities.SummaryRow],
      migrations: CONVERSATION_MIGRATIONS,
    };
    let ds: DataSource;
    try {
      ds = this.database
        ? await (await import('../storage/postgres.js')).openPostgres(this.database, CONVERSATION_SCHEMA, store)
        : await openSqlite(this.file, store);
    } catch (err) {
      throw this.damaged(err);
    }
    try {
      this.cipher = await this.openCipher(ds);
      if ((await this.encryptAll(ds, 'legacy')) > 0) await this.compactFile(ds);
    } catch (err) {
      await ds.destroy().catch(() => {});
      throw this.damaged(err);
    }
    return ds;
  }

  /**
   * The key, made on first use. A missing key for a file that holds encrypted rows is an error, never
   * a new key: a new key would make the old rows unreadable for good and hide why.
   */
  private async openCipher(ds: DataSource): Promise<ConversationCipher> {
    const loaded = ConversationCipher.load(this.keyFile);
    if (loaded) return loaded;
    const encrypted = await ds.query<unknown[]>(
      `SELECT 1 FROM "conversations" WHERE "title" LIKE 'enc1:%' UNION ALL SELECT 1 FROM "messages" WHERE "content" LIKE 'enc1:%' LIMIT 1`,
    );
    if (encrypted.length > 0) {
      throw new MemoError(
        'CONFLICT',
        `The conversation key ${this.keyFile} is missing: the conversations in ${this.where} are encrypted with it and cannot be read. Put the key file back from a backup, or ${this.database ? 'drop that schema' : `move ${this.file} away`} to start with no conversations.`,
      );
    }
    return ConversationCipher.create(this.keyFile);
  }

  /**
   * Encrypts with the current key every value that is not already: `legacy` touches plaintext rows
   * only (a file from before encryption), `all` rewrites every value (a key rotation). Returns the
   * number of values written. One transaction: a crash leaves the file as it was.
   */
  private async encryptAll(ds: DataSource, which: 'legacy' | 'all'): Promise<number> {
    const c = this.c;
    const need = (v: string | null) => v !== null && (which === 'all' || !ConversationCipher.isEncrypted(v));
    let written = 0;
    // The dialect's placeholders: ? on SQLite, $1, $2... on PostgreSQL.
    const p = (i: number) => ds.driver.createParameter('p', i);
    await ds.transaction(async (m) => {
      const seal = (value: string, context: string) => c.encrypt(c.decrypt(value, context), context);
      for (const r of await m.query<Array<{ id: string; title: string }>>(`SELECT "id", "title" FROM "conversations"`)) {
        if (!need(r.title)) continue;
        await m.query(`UPDATE "conversations" SET "title" = ${p(0)} WHERE "id" = ${p(1)}`, [seal(r.title, at.title(r.id)), r.id]);
        written++;
      }
      for (const r of await m.query<
        Array<{
          id: string;
          content: string;
          toolCalls: string | null;
          reasoning: string | null;
        }>
      >(`SELECT "id", "content", "toolCalls", "reasoning" FROM "messages"`)) {
        // toolCalls is simple-json: an encrypted value is stored as a JSON string, a legacy one as an array.
        const calls = r.toolCalls === null ? null : (JSON.parse(r.toolCalls) as unknown);
        const callsText = calls === null ? null : typeof calls === 'string' ? calls : JSON.stringify(calls);
        if (!need(r.content) && !need(callsText) && !need(r.reasoning)) continue;
        await m.query(`UPDATE "messages" SET "content" = ${p(0)}, "toolCalls" = ${p(1)}, "reasoning" = ${p(2)} WHERE "id" = ${p(3)}`, [
          need(r.content) ? seal(r.content, at.content(r.id)) : r.content,
          callsText === null ? null : JSON.stringify(need(callsText) ? seal(callsText, at.toolCalls(r.id)) : callsText),
          r.reasoning !== null && need(r.reasoning) ? seal(r.reasoning, at.reasoning(r.id)) : r.reasoning,
          r.id,
        ]);
        written++;
      }
      for (const r of await m.query<Array<{ id: string; args: string; summary: string; edited: string | null; items: string | null }>>(
        `SELECT "id", "args", "summary", "edited", "items" FROM "tool_activity"`,
      )) {
        const args = JSON.parse(r.args) as unknown;
        const argsText = typeof args === 'string' ? args : JSON.stringify(args);
        if (!need(argsText) && !need(r.summary) && !need(r.edited) && !need(r.items)) continue;
        // Every encrypted column is sealed again: one left under the old key could not be read after a rotation.
        await m.query(`UPDATE "tool_activity" SET "args" = ${p(0)}, "summary" = ${p(1)}, "edited" = ${p(2)}, "items" = ${p(3)} WHERE "id" = ${p(4)}`, [
          JSON.stringify(need(argsText) ? seal(argsText, at.args(r.id)) : argsText),
          need(r.summary) ? seal(r.summary, at.stepSummary(r.id)) : r.summary,
          r.edited !== null && need(r.edited) ? seal(r.edited, at.stepEdited(r.id)) : r.edited,
          r.items !== null && need(r.items) ? seal(r.items, at.stepItems(r.id)) : r.items,
          r.id,
        ]);
        written++;
      }
      for (const r of await m.query<Array<{ id: string; content: string }>>(`SELECT "id", "content" FROM "conversation_summaries"`)) {
        if (!need(r.content)) continue;
        await m.query(`UPDATE "conversation_summaries" SET "content" = ${p(0)} WHERE "id" = ${p(1)}`, [seal(r.content, at.summary(r.id)), r.id]);
        written++;
      }
    });
    return written;
  }

  /**
   * Rewrites the file so pages that held the old values (plaintext, or an old key's) are gone, the WAL
   * too. On PostgreSQL, VACUUM FULL rewrites the tables into new files and deletes the old ones; the
   * server's write-ahead log and its backups are the administrator's, and keep old values until they
   * are recycled.
   */
  private async compactFile(ds: DataSource): Promise<void> {
    if (this.database) {
      await ds.query(`VACUUM FULL "conversations", "messages", "tool_activity", "conversation_summaries"`);
      return;
    }
    await ds.query(`VACUUM`);
    await ds.query(`PRAGMA wal_checkpoint(TRUNCATE)`);
  }

  /**
   * A new key: every value is re-encrypted with it in one transaction, then the old keys are
   * dropped and the file rewritten. A crash midway leaves both keys in the key file, so every row
   * stays readable and the next rotation finishes the job.
   */
  async rotateKey(): Promise<{ keyId: string; values: number }> {
    await this.repos();
    const keyId = this.c.beginRotation();
    const values = await this.encryptAll(this.ds!, 'all');
    this.c.finishRotation();
    await this.compactFile(this.ds!);
    return { keyId, values };
  }

  private title(row: { id: string; title: string }): string {
    return this.c.decrypt(row.title, at.title(row.id));
  }

  private toolCalls(row: { id: string; toolCalls: string | ToolCallsColumn | null }): ToolCallsColumn | null {
    if (row.toolCalls === null || Array.isArray(row.toolCalls)) return row.toolCalls;
    return JSON.parse(this.c.decrypt(row.toolCalls, at.toolCalls(row.id))) as ToolCallsColumn;
  }

  async create(init: { title?: string; provider?: string | null; model?: string | null } = {}): Promise<ConversationInfo> {
    const { conv } = await this.repos();
    const id = randomUUID();
    // Instants to the millisecond (the column default is to the second on SQLite): the history's order needs them.
    const now = new Date();
    const row = conv.create({
      id,
      title: this.c.encrypt((init.title ?? 'New conversation').slice(0, 200), at.title(id)),
      provider: init.provider ?? null,
      model: init.model ?? null,
      createdAt: now,
      updatedAt: now,
    });
    await conv.save(row);
    return this.info(row.id);
  }

  async info(id: string): Promise<ConversationInfo> {
    const { conv, msg } = await this.repos();
    const row = await conv.findOne({ where: { id } });
    if (!row) throw new MemoError('NOT_FOUND', `There is no conversation ${id}.`);
    const messages = await msg.count({ where: { conversationId: id } });
    return {
      id: row.id,
      title: this.title(row),
      provider: row.provider,
      model: row.model,
      mode: (row.mode as AccessMode | null) ?? null,
      createdAt: row.createdAt.toISOString(),
      updatedAt: row.updatedAt.toISOString(),
      messages,
    };
  }

  async exists(id: string): Promise<boolean> {
    const { conv } = await this.repos();
    return (await conv.count({ where: { id } })) > 0;
  }

  async list(limit = 20): Promise<ConversationInfo[]> {
    const { conv } = await this.repos();
    // Newest activity first; conversations touched in the same instant keep one order on every read.
    const rows = await conv.find({ order: { updatedAt: 'DESC', createdAt: 'DESC', id: 'ASC' }, take: limit });
    return Promise.all(rows.map((r) => this.info(r.id)));
  }

  async update(id: string, fields: { title?: string; provider?: string | null; model?: string | null; mode?: AccessMode | null }): Promise<void> {
    const { conv } = await this.repos();
    const { title, ...rest } = fields;
    // A turn's provider, model or mode is activity (the conversation moves up the history); a new title alone is not.
    const activity = Object.values(rest).some((v) => v !== undefined);
    await conv.update(
      { id },
      {
        ...rest,
        ...(title !== undefined ? { title: this.c.encrypt(title.slice(0, 200), at.title(id)) } : {}),
        updatedAt: activity ? new Date() : () => '"updatedAt"',
      },
    );
  }

  /** Soft-deletes a conversation: it is gone from every listing, and its write capabilities die. */
  async delete(id: string): Promise<boolean> {
    const { conv } = await this.repos();
    const res = await conv.softDelete({ id });
    if (res.affected) this.onDelete(id);
    return Boolean(res.affected);
  }

  /** The newest summary, if the conversation was ever compacted. */
  private async latestSummary(id: string): Promise<InstanceType<Entities['SummaryRow']> | null> {
    const { sum } = await this.repos();
    return sum.findOne({ where: { conversationId: id }, order: { throughSeq: 'DESC', createdAt: 'DESC' } });
  }

  /**
   * The messages to send the model again (tool activity is not among them): the newest summary in
   * place of the messages it replaced, then every later message.
   */
  async history(id: string): Promise<ChatMessage[]> {
    const { msg } = await this.repos();
    const summary = await this.latestSummary(id);
    // A query builder, not MoreThan: typeorm is loaded on first use only (see open()).
    const rows = await msg
      .createQueryBuilder('m')
      .where('m.conversationId = :id AND m.seq > :after', { id, after: summary?.throughSeq ?? 0 })
      .orderBy('m.seq', 'ASC')
      .getMany();
    const replayed = rows.map((r): ChatMessage => {
      const content = this.c.decrypt(r.content, at.content(r.id));
      switch (r.role) {
        case 'assistant': {
          const calls = this.toolCalls(r);
          return { role: 'assistant', content, ...(calls?.length ? { toolCalls: calls } : {}) };
        }
        case 'tool':
          return { role: 'tool', toolCallId: r.toolCallId ?? '', name: r.name ?? '', content, ...(r.isError ? { isError: true } : {}) };
        default:
          return { role: r.role, content };
      }
    });
    return summary ? [summaryMessage(this.c.decrypt(summary.content, at.summary(summary.id))), ...replayed] : replayed;
  }

  /** Every stored message, summarised or not, with the provider and model that produced it. */
  async messages(id: string): Promise<StoredMessage[]> {
    const { msg } = await this.repos();
    const rows = await msg.find({ where: { conversationId: id }, order: { seq: 'ASC' } });
    return rows.map((r) => ({
      seq: r.seq,
      role: r.role,
      content: this.c.decrypt(r.content, at.content(r.id)),
      provider: r.provider,
      model: r.model,
      tools: r.role === 'tool' ? [r.name ?? ''] : (this.toolCalls(r) ?? []).map((c) => c.name),
      reasoning: r.reasoning === null ? null : this.c.decrypt(r.reasoning, at.reasoning(r.id)),
    }));
  }

  /** Every summary of the conversation, oldest first. */
  async summaries(id: string): Promise<StoredSummary[]> {
    const { sum } = await this.repos();
    const rows = await sum.find({ where: { conversationId: id }, order: { throughSeq: 'ASC', createdAt: 'ASC' } });
    return rows.map((r) => ({
      throughSeq: r.throughSeq,
      content: this.c.decrypt(r.content, at.summary(r.id)),
      provider: r.provider,
      model: r.model,
      createdAt: r.createdAt.toISOString(),
    }));
  }

  /**
   * Appends one turn: its messages (every tool call has its result), the finished tool steps, and
   * the summary when the turn compacted its history, all in one transaction.
   */
  async appendTurn(id: string, messages: ChatMessage[], steps: AgentStep[], record: TurnRecord = {}): Promise<void> {
    if (!(await this.exists(id))) throw new MemoError('NOT_FOUND', `There is no conversation ${id}.`);
    const { msg, act } = await this.repos();
    await this.ds!.transaction(async (m) => {
      // Instances sharing a PostgreSQL database append to one conversation in turn: the row lock
      // holds the next one until this commit, so both never take the same seq. (SQLite has one writer.)
      if (this.database) await m.query(`SELECT 1 FROM "conversations" WHERE "id" = $1 FOR UPDATE`, [id]);
      if (record.compaction) await this.storeSummary(m.getRepository(this.entities!.SummaryRow), m.getRepository(this.entities!.MessageRow), id, record);
      const last = await m.getRepository(this.entities!.MessageRow).maximum('seq', { conversationId: id });
      let seq = (last ?? 0) + 1;
      const turnSeq = seq;
      for (const [index, message] of messages.entries()) {
        const thought = record.reasoning?.find((r) => r.message === index)?.text;
        const rowId = randomUUID();
        const calls =
          message.role === 'assistant' && message.toolCalls?.length
            ? message.toolCalls.map(({ id, name, arguments: a }) => ({ id, name, arguments: a }))
            : null;
        await m.getRepository(this.entities!.MessageRow).save(
          msg.create({
            id: rowId,
            conversationId: id,
            seq: seq++,
            role: message.role,
            content: this.c.encrypt(message.content, at.content(rowId)),
            toolCalls: calls ? this.c.encrypt(JSON.stringify(calls), at.toolCalls(rowId)) : null,
            toolCallId: message.role === 'tool' ? message.toolCallId : null,
            name: message.role === 'tool' ? message.name : null,
            isError: message.role === 'tool' ? Boolean(message.isError) : false,
            provider: message.role === 'assistant' ? (record.provider ?? null) : null,
            model: message.role === 'assistant' ? (record.model ?? null) : null,
            reasoning: message.role === 'assistant' && thought ? this.c.encrypt(thought, at.reasoning(rowId)) : null,
          }),
        );
      }
      for (const step of steps) {
        const rowId = randomUUID();
        await m.getRepository(this.entities!.ToolActivityRow).save(
          act.create({
            id: rowId,
            conversationId: id,
            turnSeq,
            tool: step.tool,
            args: this.c.encrypt(JSON.stringify(step.args), at.args(rowId)),
            outcome: step.outcome,
            code: step.code ?? null,
            summary: this.c.encrypt(step.summary.slice(0, 500), at.stepSummary(rowId)),
            durationMs: step.durationMs,
            edited: step.edited ? this.c.encrypt(JSON.stringify(step.edited), at.stepEdited(rowId)) : null,
            items: step.items?.length ? this.c.encrypt(JSON.stringify(step.items), at.stepItems(rowId)) : null,
          }),
        );
      }
      await m.getRepository(this.entities!.ConversationRow).update({ id }, { updatedAt: new Date() });
    });
  }

  /**
   * Maps "the first `replaced` messages of the history the turn was given" back to stored rows:
   * that history was the newest summary (if any) followed by the rows after it.
   */
  private async storeSummary(
    sums: Repository<InstanceType<Entities['SummaryRow']>>,
    msgs: Repository<InstanceType<Entities['MessageRow']>>,
    id: string,
    record: TurnRecord,
  ): Promise<void> {
    const { summary, replaced } = record.compaction!;
    const previous = await sums.findOne({ where: { conversationId: id }, order: { throughSeq: 'DESC', createdAt: 'DESC' } });
    const rowsReplaced = replaced - (previous ? 1 : 0);
    let throughSeq = previous?.throughSeq ?? 0;
    if (rowsReplaced > 0) {
      const rows = await msgs
        .createQueryBuilder('m')
        .select('m.seq')
        .where('m.conversationId = :id AND m.seq > :after', { id, after: throughSeq })
        .orderBy('m.seq', 'ASC')
        .limit(rowsReplaced)
        .getMany();
      throughSeq = rows.at(-1)?.seq ?? throughSeq;
    }
    const rowId = randomUUID();
    await sums.save(
      sums.create({
        id: rowId,
        conversationId: id,
        throughSeq,
        content: this.c.encrypt(summary, at.summary(rowId)),
        provider: record.provider ?? null,
        model: record.model ?? null,
      }),
    );
  }

  async activity(id: string): Promise<ToolActivity[]> {
    const { act } = await this.repos();
    const rows = await act.find({ where: { conversationId: id }, order: { createdAt: 'ASC' } });
    return rows.map((r) => ({
      turnSeq: r.turnSeq,
      tool: r.tool,
      args: typeof r.args === 'string' ? (JSON.parse(this.c.decrypt(r.args, at.args(r.id))) as Record<string, unknown>) : r.args,
      outcome: r.outcome,
      code: r.code,
      summary: this.c.decrypt(r.summary, at.stepSummary(r.id)),
      durationMs: r.durationMs,
      ...(r.edited ? { edited: JSON.parse(this.c.decrypt(r.edited, at.stepEdited(r.id))) as NonNullable<ToolActivity['edited']> } : {}),
      ...(r.items ? { items: JSON.parse(this.c.decrypt(r.items, at.stepItems(r.id))) as ItemRef[] } : {}),
    }));
  }

  /**
   * Searches the person's own conversations (titles and what was said, not tool output): the
   * content is encrypted, so it is decrypted here and matched in memory, newest conversation first.
   */
  async search(query: string, limit = 20): Promise<HistoryHit[]> {
    const { conv, msg } = await this.repos();
    const needle = query.trim().toLowerCase();
    if (!needle) return [];
    const hits: HistoryHit[] = [];
    const snippet = (text: string) => {
      const i = text.toLowerCase().indexOf(needle);
      const from = Math.max(0, i - 40);
      return `${from > 0 ? '…' : ''}${text.slice(from, i + needle.length + 60).replace(/\s+/g, ' ')}${i + needle.length + 60 < text.length ? '…' : ''}`;
    };
    for (const c of await conv.find({ order: { updatedAt: 'DESC' } })) {
      const title = this.title(c);
      const base = { conversationId: c.id, title, updatedAt: c.updatedAt.toISOString() };
      let found = false;
      for (const r of await msg.find({ where: { conversationId: c.id }, order: { seq: 'ASC' } })) {
        if (r.role !== 'user' && r.role !== 'assistant') continue;
        const text = this.c.decrypt(r.content, at.content(r.id));
        if (!text.toLowerCase().includes(needle)) continue;
        hits.push({ ...base, seq: r.seq, role: r.role, snippet: snippet(text) });
        found = true;
        if (hits.length >= limit) return hits;
      }
      if (!found && title.toLowerCase().includes(needle)) {
        hits.push({ ...base, seq: null, role: null, snippet: title });
        if (hits.length >= limit) return hits;
      }
    }
    return hits;
  }

  async close(): Promise<void> {
    const opening = this.opening;
    this.opening = null;
    this.ds = null;
    this.cipher = null;
    // An opening still in flight is waited for, so its file is not left open.
    const ds = await opening?.catch(() => null);
    await ds?.destroy();
  }
}
