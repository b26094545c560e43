/**
 * Which tool definitions a turn sends. Every tool its access mode allows, when their definitions
 * fit within a share of the model's window (default a quarter); otherwise a small set that does:
 * `find_tools` and the skills' two tools, then the tools tool search ranks highest for the person's
 * message, while they fit. The model asks `find_tools` for more; what it finds is sent from the next
 * model call of the turn on. A window the provider does not know sends everything, as before.
 */
import type { ToolDefinition } from '../providers/provider.js';
import { FIND_TOOLS } from './find-tools.js';
import type { TokenCounter } from './context-budget.js';

/** The share of the model's window all tool definitions may take before they are narrowed. */
export const DEFAULT_TOOL_SHARE = 0.25;
/** At most this many tools are offered for the message when narrowing (before find_tools adds any). */
export const RETRIEVED_MAX = 8;
/** Offered whenever the set is narrowed, if the mode allows them: the way to more tools, and the skills. */
const ALWAYS = [FIND_TOOLS, 'list_skills', 'read_skill'];

export interface ToolPlan {
  /** The names offered to the first model call, in the order sent. */
  offered: string[];
  /** True when not every allowed tool is sent (find_tools is then among the offered). */
  narrowed: boolean;
  /** Tokens all allowed definitions would take, and the most they may take. */
  allTokens: number;
  limitTokens: number | undefined;
}

/** Exactly what the provider receives of a tool: name, description and parameters. */
export function definitionOf(spec: { name: string; description: string; parameters: ToolDefinition['parameters'] }): ToolDefinition {
  return { name: spec.name, description: spec.description, parameters: spec.parameters };
}

/**
 * Plans a turn's tool set. `allowed` is every definition the turn's mode allows (find_tools
 * included when registered); `rank` orders candidate names for the message (tool search).
 */
export function planTools(options: {
  counter: TokenCounter;
  allowed: ToolDefinition[];
  window: number | undefined;
  share?: number;
  message: string;
  rank: (message: string, among: string[], limit: number) => string[];
}): ToolPlan {
  const { counter, allowed, window } = options;
  const share = options.share ?? DEFAULT_TOOL_SHARE;
  const withoutFinder = allowed.filter((d) => d.name !== FIND_TOOLS);
  const allTokens = withoutFinder.length ? counter.count(JSON.stringify(withoutFinder)) : 0;
  const limitTokens = window === undefined ? undefined : Math.floor(window * share);
  if (limitTokens === undefined || allTokens <= limitTokens || !allowed.some((d) => d.name === FIND_TOOLS))
    return { offered: withoutFinder.map((d) => d.name), narrowed: false, allTokens, limitTokens };

  const byName = new Map(allowed.map((d) => [d.name, d]));
  const offered: string[] = [];
  let used = 0;
  const tryAdd = (name: string): void => {
    const def = byName.get(name);
    if (!def || offered.includes(name)) return;
    const cost = counter.count(JSON.stringify(def));
    // find_tools always goes in: without it a narrowed turn could never reach the rest.
    if (name !== FIND_TOOLS && used + cost > limitTokens) return;
    offered.push(name);
    used += cost;
  };
  for (const name of ALWAYS) tryAdd(name);
  const candidates = withoutFinder.map((d) => d.name).filter((n) => !offered.includes(n));
  for (const name of options.rank(options.message, candidates, RETRIEVED_MAX)) tryAdd(name);
  return { offered, narrowed: true, allTokens, limitTokens };
}
