/**
 * The console's Tools page: every enabled tool with its pack, danger and effect, and the rule in
 * force for it, worked out as the permission gate would answer a call (permission-gate.ts): a stored
 * deny refuses, a delete or a `confirm: always` tool is asked every time, a safe tool runs, a stored
 * allow answers, else it is asked (always-allow then covering the agent's own turns and routines).
 */
import { standingAllow, type StoredDecision, type ToolSpec } from 'memo-kernel/pack';

export type RuleKind = 'denied' | 'asked-every-time' | 'runs' | 'allowed' | 'asked';

export interface ToolRow {
  name: string;
  pack: string;
  description: string;
  danger: ToolSpec['danger'];
  effect: ToolSpec['effect'];
  /** The rule in force and the sentence the page shows for it. */
  rule: RuleKind;
  ruleText: string;
  /** A standing allow can be stored for it (medium or dangerous, no delete, no confirm: always). */
  canAllow: boolean;
  /** It has stored decisions (Revoke removes them). */
  stored: boolean;
  /** External MCP clients may call it without a person (reads); writes need their permission. */
  mcpRead: boolean;
}

export function ruleOf(
  spec: Pick<ToolSpec, 'danger' | 'effect' | 'confirm'>,
  decisions: readonly StoredDecision[],
  alwaysAllow: boolean,
): { rule: RuleKind; ruleText: string } {
  const deny = decisions.find((d) => d.decision === 'deny' && d.scope !== 'conversation');
  if (deny) return { rule: 'denied', ruleText: 'Denied for every caller until revoked' };
  const standing = standingAllow(spec);
  if (standing.kind === 'asked-every-time') return { rule: 'asked-every-time', ruleText: `Asked every time: it ${standing.why}` };
  if (standing.kind === 'safe') return { rule: 'runs', ruleText: 'Runs without asking (safe)' };
  const allow = decisions.find((d) => d.decision === 'allow' && d.scope !== 'conversation');
  if (allow)
    return {
      rule: 'allowed',
      ruleText: allow.scope === 'until' && allow.expiresAt ? `Allowed for every caller until ${allow.expiresAt}` : 'Allowed for every caller until revoked',
    };
  return { rule: 'asked', ruleText: alwaysAllow ? 'Asked; always-allow answers the agent and routines' : 'Asked each time' };
}

export function toolRows(
  tools: ReadonlyArray<{ spec: Readonly<ToolSpec>; pack: string }>,
  decisions: readonly StoredDecision[],
  alwaysAllow: boolean,
): ToolRow[] {
  return tools
    .map(({ spec, pack }) => {
      const own = decisions.filter((d) => d.tool === spec.name);
      return {
        name: spec.name,
        pack,
        description: spec.description,
        danger: spec.danger,
        effect: spec.effect,
        ...ruleOf(spec, own, alwaysAllow),
        canAllow: standingAllow(spec).kind === 'ok',
        stored: own.length > 0,
        mcpRead: spec.effect === 'read',
      };
    })
    .sort((a, b) => a.pack.localeCompare(b.pack) || a.name.localeCompare(b.name));
}
