/**
 * DI tokens for the services a host may replace: one Symbol with a same-named interface. The kernel
 * resolves each by its token, so `createKernel({ services: { auditSink: mySink } })` is the one
 * registration that replaces it everywhere. Services no host replaces are their own tokens (classes).
 */
import type { Clock as ClockShape } from './clock.js';
import type { Logger as LoggerShape } from './logger.js';
import type { Prompter as PrompterShape } from './permissions/prompter.js';
import type { AdminRecord, AuditFilter, AuditRecord } from './audit/audit-log.js';
import type { ConversationInfo, HistoryHit, StoredMessage, StoredSummary, ToolActivity, TurnRecord } from './agent/conversation-store.js';
import type { AgentStep } from './agent/agent-loop.js';
import type { ChatMessage, ModelProvider, ProviderConfig, ProviderFactory } from './providers/provider.js';
import type { Disposable } from './disposable.js';
import type { DatabaseUrl } from './storage/database-url.js';

export const Clock = Symbol('Clock');
export type Clock = ClockShape;

export const Logger = Symbol('Logger');
export type Logger = LoggerShape;

export const Prompter = Symbol('Prompter');
export type Prompter = PrompterShape;

/** Where every tool call's outcome goes (default: the hash-chained `data/agent-audit.jsonl`). */
export const AuditSink = Symbol('AuditSink');
export interface AuditSink {
  /** Records one outcome. Called once per call, denied and invalid ones included; must not throw for long. */
  append(record: AuditRecord): unknown;
  /** The most recent records, oldest first (for `memo audit`-like views and tests). */
  tail(filter?: AuditFilter): readonly AuditRecord[];
  /**
   * Optional change feed: `listener` hears the records this process appends, right after they are
   * written (the web console's live tail). Returns the function that stops it. A sink without one
   * is polled.
   */
  onAppend?(listener: (records: readonly AuditRecord[]) => void): () => void;
  /**
   * Optional: records that an agent turn was handed to an agent CLI, with the access it had (Vault
   * only, or Computer access: the CLI's own tools, which no audit line will show).
   */
  note?(event: { event: 'agent-access'; conversationId: string; backend: string; version?: string; access: 'vault' | 'computer' }): unknown;
  /**
   * Optional: records a person's change to the kernel's settings (`pack.disable`, `permission.allow`,
   * `token.rotate`, ...), before it is made; throws (or rejects) when the line cannot be written, and
   * the change is then not made. A sink without one records nothing of them.
   */
  admin?(record: AdminRecord): unknown;
  close(): void | Promise<void>;
}

/** The agent's conversations (default: `data/agent.sqlite`). Write capabilities ask it whether a conversation exists. */
export const ConversationStore = Symbol('ConversationStore');
export interface ConversationStore {
  create(init?: { title?: string; provider?: string | null; model?: string | null }): Promise<ConversationInfo>;
  info(id: string): Promise<ConversationInfo>;
  exists(id: string): Promise<boolean>;
  list(limit?: number): Promise<ConversationInfo[]>;
  update(id: string, fields: { title?: string; provider?: string | null; model?: string | null }): Promise<void>;
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
  /** Called with each deleted conversation's id (the kernel revokes its write capabilities). */
  setDeleteListener(listener: (id: string) => void): void;
  close(): Promise<void>;
}

/** Model wire formats packs contribute, and providers made from configurations. */
export const ProviderRegistry = Symbol('ProviderRegistry');
export interface ProviderRegistry {
  register(kind: string, factory: ProviderFactory, owner: string): Disposable;
  kinds(): string[];
  /** A provider for a configuration (`{ name, kind: 'openai-compatible', baseUrl, model, ... }`); NOT_FOUND for an unknown kind. */
  create(config: ProviderConfig, fetchImpl?: typeof fetch): ModelProvider;
}

/** `KernelOptions.rateLimits`, as given (the limiter fills in its defaults). */
export const RateLimits = Symbol('RateLimits');
/** How long a permission prompt waits for a face's answer (ms; 60 s, seed 000). */
export const PromptTimeoutMs = Symbol('PromptTimeoutMs');
/** How long a request waits in the approval broker when no face is attached (ms; 30 minutes, seed 003). */
export const ApprovalWaitMs = Symbol('ApprovalWaitMs');
/** What a permission request does when no face is attached and nobody watches the broker: `wait` or `refuse`. */
export const UnattendedApprovals = Symbol('UnattendedApprovals');
/** The pipeline's per-kernel settings (root, sandbox, judge, data folders, default timeout). */
export const PipelineOptions = Symbol('PipelineOptions');

/** The resolved, validated options of one kernel instance. */
export const KernelConfig = Symbol('KernelConfig');
export interface KernelConfig {
  root: string;
  dataDir: string;
  promptTimeoutMs: number;
  defaultToolTimeoutMs: number;
  /** The shared PostgreSQL database for pack databases and conversations, or null: SQLite files in dataDir. Prints with its password masked. */
  database: DatabaseUrl | null;
  /**
   * Where the OS sandbox cannot start: refuse commands (the default) or run them judged only. A
   * person's setting (`memo settings sandbox`), never a tool's.
   */
  sandboxFallback?: 'refuse' | 'judged';
}
