/** The public face of the kernel: what host apps and pack authors use. Nothing else is exported. */
export { createKernel, Kernel, type KernelOptions } from './kernel.js';
export { MemoError, isMemoError, ErrorCodes, type ErrorCode, type ToolErrorInfo } from './errors.js';
export type {
  Caller,
  CallerKind,
  Danger,
  Effect,
  JsonSchema,
  JsonValue,
  Preview,
  ProgressUpdate,
  ToolCallRequest,
  ToolContext,
  ToolImplementation,
  ToolResult,
  ToolSpec,
} from './tools/contract.js';
export type { PackDefinition, RegistryChange } from './tools/tool-registry.js';
export type { Prompter, PermissionRequest, PermissionAnswer } from './permissions/prompter.js';
export { DenyingPrompter, FixedAnswerPrompter, PermissionAnswers } from './permissions/prompter.js';
export { SystemClock, ManualClock, type Clock } from './clock.js';
export type { Logger } from './logger.js';
export type { Disposable } from './disposable.js';
export type { AuditEntry } from './audit/audit-log.js';
export { verifyAuditFile, type AuditVerifyReport, type AuditProblem, type RecordedGap } from './audit/audit-log.js';
export type { PackFolder, PackStatus } from './packs/pack-loader.js';
export type { PackState } from './packs/pack-manager.js';
export type { PackManifest } from './packs/manifest.js';
export { PathSandbox, SYSTEM_DIRS, isGitSegment, assertSameFile, type PathIntent, type ResolvedPath } from './sandbox/path-sandbox.js';
export { CommandJudge, BLOCK_RULES, ASK_RULES, FAIL_CLOSED_RULES, RULE_IDS, type CommandVerdict, type JudgeOptions } from './sandbox/command-judge.js';
export { runProcess, containmentInfo, type ContainmentInfo, type RunOptions, type RunResult } from './sandbox/process-runner.js';
export { assessCommand } from './sandbox/command-assessment.js';
export type { SkillFolder, SkillState } from './skills/skill-manager.js';
export type { Skill } from './skills/skill.js';
export { isSensitiveKey as isSensitiveName, maskText as maskSecrets } from './audit/masking.js';
export { findSecret, type SecretFinding } from './audit/secret-check.js';
export { environmentSecrets } from './audit/known-secrets.js';
export type { PackApi, PackActivate } from './packs/pack-api.js';
export {
  ProviderError,
  type ChatMessage,
  type ChatRequest,
  type ChatResponse,
  type ModelProvider,
  type ProviderConfig,
  type ProviderFactory,
  type ToolCallRequestPart,
  type ToolDefinition,
} from './agent/provider.js';
export { resolveApiKey } from './agent/provider-settings.js';
export { runTurn, MAX_ITERATIONS, type AgentEvent, type AgentStep, type StopReason, type TurnOptions, type TurnResult } from './agent/agent-loop.js';
export type { ConversationInfo, ToolActivity } from './agent/conversation-store.js';
export { isLocalProvider, type ProbeVerdict } from './agent/capability-probe.js';
