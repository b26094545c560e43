/**
 * The host app's entry (`memo-kernel`): create a kernel, pick its packs, replace its services, call
 * tools, run agent turns, shut it down. Pack code imports `memo-kernel/pack` instead; the MCP
 * endpoints are `memo-kernel/mcp` (they load the MCP SDK, which most hosts never need).
 *
 * @module memo-kernel
 */
import './third-party-globals.js';
export {
  createKernel,
  Kernel,
  BUILTIN_PACKS_DIR,
  BUILTIN_SKILLS_DIR,
  builtinPackIds,
  type KernelOptions,
  type KernelServices,
  type ServiceOverride,
} from './kernel.js';
export { BUILTIN_PACK_IDS, type BuiltinPackId } from './builtin-packs.js';
export type { KernelConfig } from './kernel-config.js';
export { MemoError, isMemoError, ErrorCodes, type ErrorCode, type ToolErrorInfo } from './errors.js';
export type {
  Caller,
  CallerKind,
  Concern,
  Danger,
  Effect,
  JsonSchema,
  JsonValue,
  Preview,
  PreviewFact,
  PreviewQuote,
  ProgressUpdate,
  ToolCallRequest,
  ToolContext,
  ToolImplementation,
  ToolResult,
  ToolSpec,
} from './tools/contract.js';
export type { InvokeOptions } from './tools/tool-pipeline.js';
export type { PackDefinition, PackSource, RegistryChange, RegisteredPack, RegisteredTool } from './tools/tool-registry.js';
export type { Prompter, PermissionRequest, PermissionAnswer } from './permissions/prompter.js';
export { DenyingPrompter, FixedAnswerPrompter, PermissionAnswers } from './permissions/prompter.js';
// How every face lays out a permission request (kernel facts first, the body, then the caller's text quoted): for a host's own dialog.
export { approvalDisplay, displayLines, visibleLine, type ApprovalDisplay, type DisplayLinesOptions } from './control/preview-format.js';
export type { RateLimitOptions } from './rate-limit/rate-limiter.js';
export { SystemClock, ManualClock, type Clock } from './clock.js';
export type { Logger } from './logger.js';
export type { Disposable } from './disposable.js';
export type { AuditEntry, AuditRecord, AuditFilter } from './audit/audit-record.js';
export type { AuditSink } from './audit/audit-sink.js';
export type { ConversationStore } from './agent/agent-services.js';
export type { ProviderRegistry } from './providers/provider-services.js';
export { verifyAuditFile, type AuditVerifyReport, type AuditProblem, type RecordedGap } from './audit/audit-verify.js';
export type { PackFolder, PackStatus } from './packs/pack-loader.js';
export type { PackState } from './packs/pack-manager.js';
export type { PackManifest } from './packs/manifest.js';
export type { PackApi, PackActivate } from './packs/pack-api.js';
export type { AgentToolInfo, PackAgent, PinnedModel, RoutineTurnOptions } from './agent/routine-turn.js';
export type { PackCommand, PackSubcommand, PackCommandContext } from './packs/pack-commands.js';
export type { PackService, ServiceContext, ServiceStatus, ServiceState } from './packs/pack-services.js';
export type { ConsolePanel, PanelAction, RegisteredPanel } from './packs/console-panels.js';
export type { SkillFolder, SkillState } from './skills/skill-manager.js';
export type { Skill } from './skills/skill.js';
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
export { runTurn, MAX_ITERATIONS, type AgentEvent, type AgentStep, type StopReason, type TurnOptions, type TurnResult } from './agent/agent-loop.js';
export type { ConversationInfo, ConversationsHealth, ToolActivity } from './agent/conversation-store.js';
export { isLocalProvider, type ProbeVerdict } from './agent/capability-probe.js';

// Types the exported signatures above name (a kernel property, a service method's argument or
// result, an option): exported so a host or pack can name them, and so the API pages document them.
export type { AgentKernel } from './agent/agent-kernel.js';
export type { CapabilityProbe } from './agent/capability-probe.js';
export type { HistoryHit, StoredSummary, TurnRecord } from './agent/conversation-store.js';
export type { ToolSearch } from './agent/tool-search.js';
export type { AuditHead } from './audit/audit-chain.js';
export type { AuditProblemKind, LostLines } from './audit/audit-verify.js';
export type { AdminActions } from './compose/admin-actions.js';
export type { ApprovalShown, DisplayFact, DisplayQuote } from './control/preview-format.js';
export type { ErrorDetails, MemoErrorInit } from './errors.js';
export type { ConsolePanels } from './packs/console-panels.js';
export type { HostContext } from './packs/host-context.js';
export type { Compaction } from './packs/pack-agent.js';
export type { PackCommands } from './packs/pack-commands.js';
export type { PackHttp } from './packs/pack-http.js';
export type { PackManager } from './packs/pack-manager.js';
export type { Problem } from './packs/pack-problems.js';
export type { PackServices } from './packs/pack-services.js';
export type { SharedServices } from './packs/shared-services.js';
export type { ApprovalBroker } from './permissions/approval-broker.js';
export type { PermissionGate } from './permissions/permission-gate.js';
export type { PermissionStore } from './permissions/permission-store.js';
export type { WriteCapabilities } from './permissions/write-capabilities.js';
export type { ProviderSettings } from './providers/provider-settings.js';
export type { RateLimiter } from './rate-limit/rate-limiter.js';
export type { CommandJudge } from './sandbox/command-judge.js';
export type { KernelState } from './sandbox/kernel-state.js';
export type { Allowance } from './skills/allowance.js';
export type { TemplateToken } from './skills/command-template.js';
export type { SkillManager } from './skills/skill-manager.js';
export type { SkillToolDecl } from './skills/skill.js';
export type { SettingsStore } from './state/kernel-state-settings.js';
export type { DatabaseUrl } from './storage/database-url.js';
export type { PackDatabaseOptions } from './storage/pack-database.js';
export type { EditedCall, PreviewDocument } from './tools/contract.js';
export type { CallGuard } from './tools/tool-pipeline.js';
export type { ToolRegistry } from './tools/tool-registry.js';
export type { ToolHit } from './agent/tool-search.js';
export type { RegisteredCommand } from './packs/pack-commands.js';
export type { HttpServerInfo } from './packs/pack-http.js';
export type { BrokerOutcome } from './permissions/approval-broker.js';
export type { GateCall, GateOutcome } from './permissions/permission-gate.js';
export type { ApprovalFace } from './permissions/prompter.js';
export type { CapabilityCall } from './permissions/write-capabilities.js';
export type { LinkStats } from './sandbox/kernel-state.js';
export type { CommandPattern } from './skills/allowance.js';
export type { RateLimitSetting, SandboxSetting, Settings } from './state/shapes.js';
export type { PostgresConnection } from './storage/database-url.js';
export type { EntityClass, MigrationClass } from './storage/migrations.js';
export type { SchemaCompiler } from './tools/schemas.js';
export type { McpProfileSetting, McpTokenSetting } from './util/mcp-settings.js';
export type { UnrecordedAnswer } from './permissions/approval-broker.js';
export type { GateDecision, RevisedCall } from './permissions/permission-gate.js';
export type { HeldSchema } from './tools/schemas.js';
