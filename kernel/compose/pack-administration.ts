/**
 * The kernel's administration view: what a person's own face (the web console) needs beyond the
 * ordinary contribution points. Privileged: `api.administration()` hands it only to a built-in pack
 * whose plugin.json declares `"privileges": ["administration"]` (pack-privileges.ts); a pack from
 * any other folder gets PERMISSION_DENIED, so a third-party pack cannot answer approvals, change
 * permissions, packs or providers, read conversations or rotate the MCP token through it.
 *
 * Every change goes on the audit trail first as an admin line by the pack (`by: <pack id>`, so the
 * console's are `by console`), and is not made when the line cannot be written (kernel.admin).
 * Watches and subscriptions end when the pack unloads or reloads.
 */
import type { AdminRecord, AuditRecord } from '../audit/audit-record.js';
import type { AuditSearchPage, AuditSearchQuery } from '../audit/audit-search.js';
import type { AuditVerifyReport } from '../audit/audit-verify.js';
import type { AuditDatabaseReport } from '../audit/pg-audit-read.js';
import type { ProbeVerdict } from '../agent/capability-probe.js';
import type { ChatTurnOptions, ChatTurnResult } from '../agent/chat-turn.js';
import type { ModelProvider, ProviderConfig } from '../providers/provider.js';
import type { AgentMode } from '../agent/system-prompt.js';
import type { Disposable } from '../disposable.js';
import type { AnswerResult, ApprovalEvent, PendingApproval } from '../permissions/approval-broker.js';
import type { ExternalWritesSetting, StoredDecision } from '../permissions/permission-store.js';
import type { ApprovalReply } from '../permissions/prompter.js';
import type { SkillState } from '../skills/skill-manager.js';
import type { ConversationStore } from '../agent/agent-services.js';
import type { ToolResult, ToolSpec } from '../tools/contract.js';
import type { RegisteredPanel } from '../packs/console-panels.js';
import type { PackSubcommand } from '../packs/pack-commands.js';
import type { PackState } from '../packs/pack-manager.js';

/** The OS sandbox under commands, as `memo doctor` and `memo serve` describe it. */
export interface SandboxStatus {
  available: boolean;
  /** What commands do where it cannot start (`memo settings sandbox`). */
  fallback: 'refuse' | 'judged';
  processLimit: string;
  /** The sentence memo serve prints at start. */
  line: string;
}

/** An agent CLI as a face lists it: found with its version, or not found and why. */
export interface AgentCliDetection {
  id: string;
  label: string;
  /** The provider name its turns are stored under (`claude-cli`). */
  provider: string;
  found: boolean;
  version?: string;
  reason?: string;
}

export interface PackAdministration {
  /** The approval broker, as `memo approvals` sees it. While a watch is held the broker counts as attended. */
  readonly approvals: {
    /** Every waiting request: this instance's and, with a shared database, the other instances'. */
    pending(): PendingApproval[];
    /** With a shared database: reads the other instances' requests first. */
    sync(): Promise<void>;
    onChange(listener: (event: ApprovalEvent) => void): Disposable;
    /** Answers as this pack (`by` its id); the first answer from any face, on any instance, counts. */
    answer(id: string, reply: ApprovalReply): Promise<AnswerResult>;
  };
  readonly audit: {
    /** The newest entries the kernel keeps in memory (1000), oldest first. */
    tail(limit?: number): readonly AuditRecord[];
    /**
     * A page of the whole trail (the file, or every instance's chain in the shared database), newest
     * first, with how many lines match; a host's sink without `search` pages what `tail` keeps.
     */
    search(q: AuditSearchQuery): Promise<AuditSearchPage>;
    /** Every line `q` selects, oldest first, as written (an export); a slow reader is waited for. */
    lines(q: AuditSearchQuery, fn: (raw: string) => void | Promise<void>): Promise<void>;
    /** Tells `listener` of entries as they are written; undefined when the host's sink has no change feed (poll `tail`). */
    readonly onAppend: ((listener: (records: readonly AuditRecord[]) => void) => Disposable) | undefined;
    /** `memo audit verify`: the data folder's trail, or every instance's chain in the shared database. */
    verify(): Promise<AuditVerifyReport | AuditDatabaseReport>;
  };
  /** A person's changes, made as `memo plugins|permissions|provider` make them, each recorded first `by` this pack. */
  readonly changes: {
    /** An admin line for a change made elsewhere (the MCP token's rotation, a pack command's change). */
    record(change: Omit<AdminRecord, 'by'>): Promise<void>;
    setPackEnabled(id: string, enabled: boolean): Promise<void>;
    configurePack(id: string, changes: Record<string, unknown>): Promise<Readonly<Record<string, unknown>>>;
    /** A standing allow with `memo permissions allow`'s limits (VALIDATION for a safe tool and one asked every time); `minutes`: for that long. */
    allow(tool: string, minutes?: number): Promise<void>;
    /** A stored deny until revoked. */
    deny(tool: string): Promise<void>;
    revoke(tool: string): Promise<boolean>;
    setAlwaysAllow(on: boolean): Promise<void>;
    /** External MCP clients' writes asked in the inbox: on or off for every client (`client` omitted) or one declared name. */
    setExternalWrites(on: boolean, client?: string): Promise<ExternalWritesSetting>;
    putProvider(config: ProviderConfig): Promise<void>;
    useProvider(name: string): Promise<void>;
    removeProvider(name: string): Promise<boolean>;
  };
  readonly packs: {
    list(): PackState[];
    get(id: string): PackState | undefined;
    /** A loaded pack's settings in force. */
    config(id: string): Readonly<Record<string, unknown>> | undefined;
  };
  /** The tools of enabled packs (declarations only). */
  tools(): Array<{ spec: Readonly<ToolSpec>; pack: string }>;
  readonly skills: { list(): SkillState[] };
  readonly panels: { list(): RegisteredPanel[]; get(pack: string, id: string): RegisteredPanel | undefined };
  /** `group sub`, a subcommand of a command group `pack` itself registered, or undefined. */
  subcommand(pack: string, command: string): PackSubcommand | undefined;
  readonly permissions: {
    /** Stored decisions in force at `now` (all when omitted). */
    list(now?: number): StoredDecision[];
    readonly alwaysAllow: boolean;
    /** Whether external MCP clients may ask for writes: for all, or for these declared client names. */
    readonly externalWrites: ExternalWritesSetting;
    /** Why permissions.json could not be read, or null. */
    readonly problem: string | null;
  };
  readonly providers: {
    create(config: ProviderConfig): ModelProvider;
    /** Whether a model can call tools (cached 10 minutes unless `force`). */
    probe(provider: ModelProvider, config: ProviderConfig, model: string, options?: { force?: boolean; signal?: AbortSignal }): Promise<ProbeVerdict>;
  };
  /** The agent's conversations (encrypted store of memo chat). */
  readonly conversations: ConversationStore;
  /** One turn of a stored conversation, as memo chat runs it (same loop, store and pipeline). */
  chatTurn(options: ChatTurnOptions): Promise<ChatTurnResult>;
  /**
   * The agent CLIs (claude, codex, agy) as backends of a face's turns: which are installed (each
   * with its version, or why not), and one as the provider of a turn, whose MCP calls come back
   * through the endpoint memo serve runs (NO_ENDPOINT when none is served).
   */
  readonly agentClis: {
    detect(): Promise<AgentCliDetection[]>;
    /** NOT_FOUND for an unknown id. `access`: Vault only, or Computer access (its own file, shell and web tools too). */
    provider(id: string, access: 'vault' | 'computer'): ModelProvider;
  };
  /** memo chat's system prompt for `mode`. */
  systemPrompt(mode: AgentMode): string;
  /** Calls a tool through the pipeline as the host caller named after this pack (`{kind: 'host', id: <pack id>}`). */
  invoke(tool: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<ToolResult>;
  sandbox(): Promise<SandboxStatus>;
  /** The sandbox root and the data folder (for the client snippets memo serve prints). */
  readonly place: { root: string; dataDir: string };
  /** The HTTP server that serves the packs' mounts (memo serve's MCP endpoint), while one does: its URL and token rotation, never the token. */
  endpoint(): { url: string; rotateToken(): void } | undefined;
}
