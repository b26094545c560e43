/**
 * The pack author's entry (`memo-kernel/pack`): everything a tool pack's code may import from the
 * kernel, and nothing a host app needs. Packs import only this, never kernel internals and never
 * each other (they meet through `api.provide` / `api.lookup`).
 *
 * A pack loaded from any folder resolves `memo-kernel/pack` to the running kernel's own copy of this
 * module, so errors and classes are the kernel's, and a hot-reloaded pack never gets a second kernel.
 *
 * @module memo-kernel/pack
 */
import type { ToolContext, ToolImplementation, ToolRun, TypedToolImplementation } from './tools/contract.js';
import './third-party-globals.js';

export { MemoError, isMemoError, ErrorCodes, type ErrorCode, type ToolErrorInfo } from './errors.js';
export type {
  Caller,
  CallerKind,
  Concern,
  Danger,
  Effect,
  AccessMode,
  ItemRef,
  ItemType,
  Judge,
  JsonSchema,
  JsonValue,
  Preview,
  PreviewFact,
  PreviewQuote,
  ProgressUpdate,
  Sandbox,
  ToolAnswer,
  ToolAssess,
  ToolContext,
  ToolImplementation,
  ToolItems,
  ToolPreview,
  ToolRun,
  ToolSpec,
} from './tools/contract.js';
export { ITEM_TYPES } from './tools/contract.js';
export type { PathIntent, ResolvedPath, OpenForWriteOptions } from './sandbox/path-sandbox.js';
export { SYSTEM_DIRS, isGitSegment } from './sandbox/protected-paths.js';
export type { KernelArea } from './sandbox/kernel-state.js';
export type { CommandVerdict, JudgeOptions } from './sandbox/command-judge.js';
export { runProcess, runSummary, type RunOptions, type RunResult } from './sandbox/process-runner.js';
export { assessCommand, judgeCommand, type CommandJudgement } from './sandbox/command-assessment.js';
export { isSensitiveKey as isSensitiveName, maskText as maskSecrets } from './secrets/masking.js';
export { findSecret, type SecretFinding } from './secrets/secret-check.js';
export { environmentSecrets } from './secrets/known-secrets.js';
export type { Disposable } from './disposable.js';
export type { Logger } from './logger.js';
export type { PackApi, PackActivate } from './packs/pack-api.js';
export { lazyTool } from './packs/pack-api.js';
export { commandDone, commandFailed, commandGuarded } from './packs/pack-commands.js';
export type { Clock, ClockTimer } from './clock.js';
export type { AgentToolInfo, PackAgent, PinnedModel, RoutineTurnOptions } from './agent/routine-turn.js';
export type { AgentEvent, AgentStep, StopReason, TurnResult } from './agent/agent-loop.js';
export {
  ProviderError,
  isProviderError,
  type ChatMessage,
  type ChatRequest,
  type ChatResponse,
  type ModelProvider,
  type ProviderConfig,
  type ProviderFactory,
  type ToolCallRequestPart,
  type ToolDefinition,
} from './providers/provider.js';
export { resolveApiKey, describeProvider } from './providers/provider-settings.js';
export type { ProviderConfigurationService } from './providers/provider.js';
export { isLocalProvider, type ProbeVerdict } from './agent/capability-probe.js';
export type { PackSubcommand, PackCommand, PackCommandContext } from './packs/pack-commands.js';
export type { ConsolePanel, PanelAction, PanelColumn, PanelCommand, PanelList, PanelRefresh, PanelRowAction, RegisteredPanel } from './packs/console-panels.js';
export type { HttpHandler, PackHttpApi } from './packs/pack-http.js';

// ---------------------------------------------------------------------------------------------
// The administration view (`api.administration()`), for privileged built-in packs only (the web
// console): its types, and the pure helpers a person's face shows requests and records with.
import type { PackApi } from './packs/pack-api.js';
import type { PackAdministration } from './compose/pack-administration.js';
export type { PackAdministration, SandboxStatus } from './compose/pack-administration.js';

/** The administration view of a privileged built-in pack, typed (`api.administration()`; PERMISSION_DENIED for any other pack). */
export function administrationOf(api: Pick<PackApi, 'administration'>): PackAdministration {
  return api.administration() as PackAdministration;
}
export type { PackState } from './packs/pack-manager.js';
export type { BuiltinPackId } from './builtin-packs.js';
export type { AnswerResult, ApprovalEvent, PendingApproval } from './permissions/approval-broker.js';
export { isPermissionAnswer, type ApprovalReply, type PermissionAnswer } from './permissions/prompter.js';
export { standingAllow, type StandingAllow } from './permissions/standing-rules.js';
export type { StoredDecision } from './permissions/permission-store.js';
export { approvalView, type ApprovalView } from './control/kernel-views.js';
export type { AdminRecord, AuditRecord } from './audit/audit-record.js';
export type { AuditVerifyReport } from './audit/audit-verify.js';
export { auditSearchQuery, type AuditSearchPage, type AuditSearchQuery } from './audit/audit-search.js';
export type { AuditDatabaseReport } from './audit/pg-audit-read.js';
export type { ChatTurnOptions, ChatTurnResult } from './agent/chat-turn.js';
export type { AgentMode } from './agent/system-prompt.js';
export type { ConversationInfo, StoredMessage, ToolActivity } from './agent/conversation-store.js';

export type { TypedToolImplementation } from './tools/contract.js';

/**
 * Pairs each declared tool with its typed handler. `Args` maps tool names to argument types; it is
 * generated from plugin.json (`memo plugins types <dir>`), which stays the source of truth: the
 * kernel validates every call against the manifest's schema before the handler runs, so the types
 * describe what the handler is given. At run time this is the identity.
 */
export function defineTools<Args>(tools: { [K in keyof Args]: TypedToolImplementation<Args[K]> }): Record<keyof Args & string, ToolImplementation> {
  // The kernel validated the arguments against the same schema the types were generated from.
  return tools as unknown as Record<keyof Args & string, ToolImplementation>;
}

/** A typed `run` alone, for packs that build their handlers one at a time. */
export function defineTool<A>(run: (args: A, ctx: ToolContext) => unknown): ToolRun {
  return run as unknown as ToolRun;
}

// ---------------------------------------------------------------------------------------------
// Primitives the kernel writes once and packs share (STYLE.md: no pack adds its own copy of a
// deadline, JSON file store, atomic write, retry loop or loopback check).
export { withDeadline, type Deadline, type DeadlineCause } from './util/with-deadline.js';
export { JsonFileStore, type JsonFileStoreOptions } from './util/json-file-store.js';
export {
  writeFileAtomic,
  writeFileAtomicAsync,
  atomicTempWriter,
  removeTempLeftover,
  type AtomicWriteOptions,
  type AtomicWriteSteps,
} from './util/atomic-file.js';
export {
  fetchWithRetry,
  retryAfterMs,
  retryableStatus,
  DEFAULT_RETRY_POLICY,
  type FetchRetryOptions,
  type RetryPolicy,
  type AttemptOutcome,
  type AttemptVerdict,
  type GiveUp,
} from './util/fetch-with-retry.js';
export { isLoopback } from './util/is-loopback.js';
/** Masks values under secret-looking names and secret-shaped values (what audit lines and approval views show); MASK is what replaces them. */
export { maskArgs, MASK, type MaskedArgs } from './secrets/masking.js';
/** An HTTP request's body within a size limit, JSON parsed within a nesting limit, and a refusal that drains the upload first (api.http handlers). */
export { readBody, parseBoundedJson, tooDeepMessage, answerAndClose, MAX_JSON_DEPTH, type BoundedParse } from './util/bounded-json.js';
/** Whether an address is on the public internet (not loopback, link-local, private, or IPv4 hidden in IPv6). */
export { isPublicAddress } from './util/public-address.js';
/** Heavy and CPU-bound work in a worker thread, under a deadline and a heap limit (see heavy-work.ts). */
export { runHeavy, HEAVY_TRANSFER, type HeavyOptions } from './util/heavy-work.js';
/** Whether an error is SQLite reporting a damaged file (SQLITE_CORRUPT*, SQLITE_NOTADB), through wrappers such as typeorm's. */
export { isSqliteDamage } from './storage/sqlite-health.js';

// Types the exported signatures above name (a kernel property, a service method's argument or
// result, an option): exported so a host or pack can name them, and so the API pages document them.
export type { Attachment } from './agent/chat-attachments.js';
export type { ResolvedMentions } from './agent/chat-mentions.js';
export type { AuditLine } from './audit/audit-record.js';
export type { AuditKindFilter, AuditOutcomeFilter } from './audit/audit-search.js';
export type { ChainReport } from './audit/pg-audit-read.js';
export type { AgentCliDetection } from './compose/pack-administration.js';
export type { CommandOutput } from './packs/pack-commands.js';
export type { AssessOptions } from './sandbox/command-assessment.js';
export type { AreaReach } from './sandbox/kernel-state.js';
export type { NetworkGrant } from './sandbox/network-proxy.js';
export type { SandboxRequest } from './sandbox/os-sandbox.js';
export type { ContainmentChoice } from './sandbox/process-containment.js';
export type { DecisionScope, ExternalWritesSetting } from './state/shapes.js';
export type { ClaimResult } from './storage/pg-shared-approvals.js';
export type { MentionReference } from './agent/chat-mentions.js';
export type { AuditEvent } from './audit/audit-record.js';
export type { ContainmentMode } from './sandbox/process-containment.js';
export type { GapSeen } from './audit/audit-record.js';
