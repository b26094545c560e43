import { randomUUID } from 'node:crypto';
import type { DataSource, Repository } from 'typeorm';
import { MemoError } from '../errors.js';
import { openSqlite } from '../storage/sqlite.js';
import type { AgentStep } from './agent-loop.js';
import { summaryMessage, type Compaction } from './compaction.js';
import type { ChatMessage } from './provider.js';

export interface ConversationInfo {
  id: string;
  title: string;
  provider: string | null;
  model: string | null;
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
}

type Entities = typeof import('./conversation-entities.js');

/** Conversations, their messages and each turn's tool activity, in `data/agent.sqlite`. */
export class ConversationStore {
  private ds: DataSource | null = null;
  /** The one opening in flight: calls that arrive together share it (migrations run once). */
  private opening: Promise<DataSource> | null = null;
  private entities: Entities | null = null;
  private onDelete: (id: string) => void = () => {};

  constructor(readonly file: string) {}

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

  /** Loaded on first use, with typeorm itself (see openSqlite). */
  private async open(): Promise<DataSource> {
    const [entities, { CONVERSATION_MIGRATIONS }] = await Promise.all([import('./conversation-entities.js'), import('./conversation-migrations.js')]);
    this.entities = entities;
    return openSqlite(this.file, {
      entities: [entities.ConversationRow, entities.MessageRow, entities.ToolActivityRow, entities.SummaryRow],
      migrations: CONVERSATION_MIGRATIONS,
    });
  }

  async create(init: { title?: string; provider?: string | null; model?: string | null } = {}): Promise<ConversationInfo> {
    const { conv } = await this.repos();
    const row = conv.create({
      id: randomUUID(),
      title: (init.title ?? 'New conversation').slice(0, 200),
      provider: init.provider ?? null,
      model: init.model ?? null,
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
      title: row.title,
      provider: row.provider,
      model: row.model,
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
    const rows = await conv.find({ order: { updatedAt: 'DESC' }, take: limit });
    return Promise.all(rows.map((r) => this.info(r.id)));
  }

  async update(id: string, fields: { title?: string; provider?: string | null; model?: string | null }): Promise<void> {
    const { conv } = await this.repos();
    await conv.update({ id }, fields);
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
      switch (r.role) {
        case 'assistant':
          return { role: 'assistant', content: r.content, ...(r.toolCalls?.length ? { toolCalls: r.toolCalls } : {}) };
        case 'tool':
          return { role: 'tool', toolCallId: r.toolCallId ?? '', name: r.name ?? '', content: r.content, ...(r.isError ? { isError: true } : {}) };
        default:
          return { role: r.role, content: r.content };
      }
    });
    return summary ? [summaryMessage(summary.content), ...replayed] : replayed;
  }

  /** Every stored message, summarised or not, with the provider and model that produced it. */
  async messages(id: string): Promise<StoredMessage[]> {
    const { msg } = await this.repos();
    const rows = await msg.find({ where: { conversationId: id }, order: { seq: 'ASC' } });
    return rows.map((r) => ({
      seq: r.seq,
      role: r.role,
      content: r.content,
      provider: r.provider,
      model: r.model,
      tools: r.role === 'tool' ? [r.name ?? ''] : (r.toolCalls ?? []).map((c) => c.name),
    }));
  }

  /** Every summary of the conversation, oldest first. */
  async summaries(id: string): Promise<StoredSummary[]> {
    const { sum } = await this.repos();
    const rows = await sum.find({ where: { conversationId: id }, order: { throughSeq: 'ASC', createdAt: 'ASC' } });
    return rows.map((r) => ({ throughSeq: r.throughSeq, content: r.content, provider: r.provider, model: r.model, createdAt: r.createdAt.toISOString() }));
  }

  /**
   * Appends one turn: its messages (every tool call has its result), the finished tool steps, and
   * the summary when the turn compacted its history, all in one transaction.
   */
  async appendTurn(id: string, messages: ChatMessage[], steps: AgentStep[], record: TurnRecord = {}): Promise<void> {
    if (!(await this.exists(id))) throw new MemoError('NOT_FOUND', `There is no conversation ${id}.`);
    const { msg, act } = await this.repos();
    await this.ds!.transaction(async (m) => {
      if (record.compaction) await this.storeSummary(m.getRepository(this.entities!.SummaryRow), m.getRepository(this.entities!.MessageRow), id, record);
      const last = await m.getRepository(this.entities!.MessageRow).maximum('seq', { conversationId: id });
      let seq = (last ?? 0) + 1;
      const turnSeq = seq;
      for (const message of messages) {
        await m.getRepository(this.entities!.MessageRow).save(
          msg.create({
            id: randomUUID(),
            conversationId: id,
            seq: seq++,
            role: message.role,
            content: message.content,
            toolCalls:
              message.role === 'assistant' && message.toolCalls?.length
                ? message.toolCalls.map(({ id, name, arguments: a }) => ({ id, name, arguments: a }))
                : null,
            toolCallId: message.role === 'tool' ? message.toolCallId : null,
            name: message.role === 'tool' ? message.name : null,
            isError: message.role === 'tool' ? Boolean(message.isError) : false,
            provider: message.role === 'assistant' ? (record.provider ?? null) : null,
            model: message.role === 'assistant' ? (record.model ?? null) : null,
          }),
        );
      }
      for (const step of steps) {
        await m.getRepository(this.entities!.ToolActivityRow).save(
          act.create({
            id: randomUUID(),
            conversationId: id,
            turnSeq,
            tool: step.tool,
            args: step.args,
            outcome: step.outcome,
            code: step.code ?? null,
            summary: step.summary.slice(0, 500),
            durationMs: step.durationMs,
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
    await sums.save(
      sums.create({ id: randomUUID(), conversationId: id, throughSeq, content: summary, provider: record.provider ?? null, model: record.model ?? null }),
    );
  }

  async activity(id: string): Promise<ToolActivity[]> {
    const { act } = await this.repos();
    const rows = await act.find({ where: { conversationId: id }, order: { createdAt: 'ASC' } });
    return rows.map((r) => ({
      turnSeq: r.turnSeq,
      tool: r.tool,
      args: r.args,
      outcome: r.outcome,
      code: r.code,
      summary: r.summary,
      durationMs: r.durationMs,
    }));
  }

  async close(): Promise<void> {
    const opening = this.opening;
    this.opening = null;
    this.ds = null;
    // An opening still in flight is waited for, so its file is not left open.
    const ds = await opening?.catch(() => null);
    await ds?.destroy();
  }
}
