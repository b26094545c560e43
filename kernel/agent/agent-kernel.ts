/**
 * What the agent layer uses of a kernel: its one invocation pipeline and the core services a turn
 * needs (the registry, the gate and write capabilities, the stored providers, the conversations, the
 * skills a turn follows, the audit trail). Defined here, in the agent layer, so the agent depends on
 * the core and not on the composition that builds it (kernel.ts, whose Kernel is one).
 */
import type { AuditSink } from '../audit/audit-sink.js';
import type { KernelConfig } from '../kernel-config.js';
import type { SharedServices } from '../packs/shared-services.js';
import type { PermissionGate } from '../permissions/permission-gate.js';
import type { WriteCapabilities } from '../permissions/write-capabilities.js';
import type { ProviderSettings } from '../providers/provider-settings.js';
import type { ProviderRegistry } from '../providers/provider-services.js';
import type { CommandJudge } from '../sandbox/command-judge.js';
import type { KernelState } from '../sandbox/kernel-state.js';
import type { SkillManager } from '../skills/skill-manager.js';
import type { ToolCallRequest, ToolResult } from '../tools/contract.js';
import type { InvokeOptions } from '../tools/tool-pipeline.js';
import type { ToolRegistry } from '../tools/tool-registry.js';
import type { ToolSearch } from './tool-search.js';
import type { ConversationStore } from './agent-services.js';
import type { CapabilityProbe } from './capability-probe.js';

export interface AgentKernel {
  readonly config: KernelConfig;
  readonly state: KernelState;
  readonly registry: ToolRegistry;
  readonly gate: PermissionGate;
  readonly capabilities: WriteCapabilities;
  readonly judge: CommandJudge;
  readonly skills: SkillManager;
  readonly toolSearch: ToolSearch;
  readonly shared: SharedServices;
  readonly audit: AuditSink;
  readonly providers: ProviderRegistry;
  readonly providerSettings: ProviderSettings;
  readonly conversations: ConversationStore;
  readonly probe: CapabilityProbe;
  invoke(request: ToolCallRequest, options?: InvokeOptions): Promise<ToolResult>;
}
