/**
 * Which tools take a standing answer (a stored allow, forever or until a moment), the same for every
 * face that stores one: `memo permissions allow`, the console's Tools and Permissions pages, a host's
 * `kernel.admin.allow`. A safe tool needs none (it runs without asking); a delete, or a tool declared
 * `confirm: always`, is asked every time, and the gate never takes a stored allow for it
 * (permission-gate.ts), so storing one is refused rather than kept to mislead. A deny is stored for
 * any tool.
 */
import type { ToolSpec } from '../tools/contract.js';
import type { RegisteredTool } from '../tools/tool-registry.js';

export type StandingAllow =
  /** A stored allow answers its calls. */
  | { kind: 'ok' }
  /** It runs without asking already: nothing to store. */
  | { kind: 'safe' }
  /** Asked every time: no stored allow answers it. `why` completes "it ...". */
  | { kind: 'asked-every-time'; why: string };

export function standingAllow(spec: Pick<ToolSpec, 'danger' | 'effect' | 'confirm'>): StandingAllow {
  if (spec.effect === 'delete') return { kind: 'asked-every-time', why: 'deletes' };
  if (spec.confirm === 'always') return { kind: 'asked-every-time', why: 'is declared confirm: always' };
  if (spec.danger === 'safe') return { kind: 'safe' };
  return { kind: 'ok' };
}

/** The sentence for a refused standing allow (CLI and console say the same). */
export function askedEveryTimeMessage(tool: string, why: string): string {
  return `${tool} cannot be allowed ahead of time: it ${why}, so it is asked every time (the approval rules take no standing answer for it)`;
}

/**
 * Whether the tool runs commands, judged by the command judge before anyone is asked: the shell
 * pack's `run_command` and a skill's command tools (every tool a skill adds runs its command
 * template). Only their calls can be a command the judge cannot vouch for, which is asked every time
 * whatever is stored, so only for them does a standing allow leave that to ask.
 */
export function runsCommands(tool: Pick<RegisteredTool, 'spec' | 'pack'>): boolean {
  if (tool.pack.source === 'skill') return true;
  return tool.pack.id === 'shell' && tool.pack.source === 'builtin' && tool.spec.name === 'run_command';
}
