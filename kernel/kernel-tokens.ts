/**
 * Every DI token the kernel's composition (kernel.ts) registers, gathered from where each is
 * defined, beside the interface it stands for: one Symbol with a same-named interface. The kernel
 * resolves each by its token, so `createKernel({ services: { auditSink: mySink } })` is the one
 * registration that replaces it everywhere. Services no host replaces are their own tokens (classes).
 * Only the composition imports this file; a service imports the tokens it needs from their homes.
 */
export { Clock } from './clock.js';
export { Logger } from './logger.js';
export { Prompter } from './permissions/prompter.js';
export { AuditSink } from './audit/audit-sink.js';
export { ConversationStore } from './agent/agent-services.js';
export { ProviderRegistry } from './providers/provider-services.js';
export { RateLimits } from './rate-limit/rate-limiter.js';
export { ApprovalWaitMs, PromptTimeoutMs, UnattendedApprovals } from './permissions/approval-broker.js';
export { PipelineOptions } from './tools/tool-pipeline.js';
export { KernelConfig } from './kernel-config.js';
