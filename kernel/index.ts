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
