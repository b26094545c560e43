import type { AccessMode, ToolSpec } from './contract.js';

/** Whether a turn in this access mode is offered the tool: Computer access offers every tool; Vault only and Web search only, those that name them. */
export function offeredIn(spec: Pick<ToolSpec, 'modes'>, mode: AccessMode): boolean {
  return mode === 'computer' || (spec.modes?.includes(mode) ?? false);
}
