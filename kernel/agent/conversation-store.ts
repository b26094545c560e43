import { randomUUID } from 'node:crypto';
import type { DataSource, Repository } from 'typeorm';
import { MemoError } from '../errors.js';
import { openSqlite } from '../storage/sqlite.js';
import type { AgentStep } from './agent-loop.js';
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
    return { conv: this.ds.getRepository(e.ConversationRow), msg: this.ds.getRepository(e.MessageRow), act: this.ds.getRepository(e.ToolActivityRow) };
  }

  /** Loaded on first use, with typeorm itself (see openSqlite). */
  private async open(): Promise<DataSource> {
    const [entities, { CONVERSATION_MIGRATIONS }] = await Promise.all([import('./conversation-entities.js'), import('./conversation-migrations.js')]);
    this.entities = entities;
    return openSqlite(this.file, {
      entities: [entities.ConversationRow, entities.MessageRow, entities.ToolActivityRow],
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

  /** The messages to send the model again (tool activity is not among them). */
  async history(id: string): Promise<ChatMessage[]> {
    const { msg } = await this.repos();
    const rows = await msg.find({ where: { conversationId: id }, order: { seq: 'ASC' } });
    return rows.map((r): ChatMessage => {
      switch (r.role) {
        case 'assistant':
          return { role: 'assistant', content: r.content, ...(r.toolCalls?.length ? { toolCalls: r.toolCalls } : {}) };
        case 'tool':
          return { role: 'tool', toolCallId: r.toolCallId ?? '', name: r.name ?? '', content: r.content, ...(r.isError ? { isError: true } : {}) };
        default:
          return { role: r.role, content: r.content };
      }
    });
  }

  /** Appends one turn: its messages (every tool call has its result) and the finished tool steps. */
  async appendTurn(id: string, messages: ChatMessage[], steps: AgentStep[]): Promise<void> {
    if (!(await this.exists(id))) throw new MemoError('NOT_FOUND', `There is no conversation ${id}.`);
    const { msg, act } = await this.repos();
    await this.ds!.transaction(async (m) => {
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
