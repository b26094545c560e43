/**
 * The agent's replaceable services: the DI token and interface of the conversation store (a host may
 * bring its own; the kernel's is kernel/agent/conversation-store.ts on SQLite or PostgreSQL).
 */
import type { AccessMode } from '../tools/contract.js';
import type { ConversationInfo, ConversationsHealth, HistoryHit, StoredMessage, StoredSummary, ToolActivity, TurnRecord } from './conversation-store.js';
import type { AgentStep } from '../packs/pack-agent.js';
import type { ChatMessage } from '../providers/provider.js';

/** The agent's conversations (default: `data/agent.sqlite`). Write capabilities ask it whether a conversation exists. */
export const ConversationStore = Symbol('ConversationStore');
export interface ConversationStore {
  create(init?: { title?: string; provider?: string | null; model?: string | null }): Promise<ConversationInfo>;
  info(id: string): Promise<ConversationInfo>;
  exists(id: string): Promise<boolean>;
  list(limit?: number): Promise<ConversationInfo[]>;
  update(id: string, fields: { title?: string; provider?: string | null; model?: string | null; mode?: AccessMode | null }): Promise<void>;
  delete(id: string): Promise<boolean>;
  history(id: string): Promise<ChatMessage[]>;
  /** `record`: who produced the turn's replies, and the summary when the turn compacted its history. */
  appendTurn(id: string, messages: ChatMessage[], steps: AgentStep[], record?: TurnRecord): Promise<void>;
  /** Every stored message (summarised ones too) with the provider and model that produced it. Optional for host stores. */
  messages?(id: string): Promise<StoredMessage[]>;
  /** The compaction summaries, oldest first. Optional for host stores. */
  summaries?(id: string): Promise<StoredSummary[]>;
  /** Searches titles and messages (decrypted by the store). Optional for host stores. */
  search?(query: string, limit?: number): Promise<HistoryHit[]>;
  /** Re-encrypts every stored value with a new key. Optional for host stores. */
  rotateKey?(): Promise<{ keyId: string; values: number }>;
  activity(id: string): Promise<ToolActivity[]>;
  /**
   * Is the stored data whole? memo serve says at start what a damaged store stops, and memo doctor
   * reports it. Optional for host stores.
   */
  check?(): Promise<ConversationsHealth>;
  /** Called with each deleted conversation's id (the kernel revokes its write capabilities). */
  setDeleteListener(listener: (id: string) => void): void;
  close(): Promise<void>;
}
