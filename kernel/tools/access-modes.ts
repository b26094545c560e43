import type { AccessMode, RestrictedMode, ToolSpec } from './contract.js';

/**
 * A tool's effective restricted modes: its own `modes` when it declares them (even `[]`), else its
 * pack's default, else none (Computer access only). The registry applies this once, when a pack is
 * registered, so a registered tool's `spec.modes` is already the effective list.
 */
export function effectiveModes(spec: Pick<ToolSpec, 'modes'>, packModes: readonly RestrictedMode[] | undefined): RestrictedMode[] | undefined {
  const modes = spec.modes ?? packModes;
  return modes === undefined ? undefined : [...modes];
}

/** Whether a turn in this access mode is offered the tool: Computer access offers every tool; Vault only and Web search only, those that name them. */
export function offeredIn(spec: Pick<ToolSpec, 'modes'>, mode: AccessMode): boolean {
  return mode === 'computer' || (spec.modes?.includes(mode) ?? false);
}
