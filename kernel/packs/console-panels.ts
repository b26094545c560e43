import { toDisposable, type Disposable } from '../disposable.js';
import { MemoError } from '../errors.js';
import type { JsonValue } from '../tools/contract.js';

/**
 * A pack's panel in the web console, as data only: the console renders it and runs its actions as
 * tool calls through the pipeline, and its person's commands as the pack's CLI subcommands. No
 * pack JavaScript is ever served to the browser.
 */
export interface ConsolePanel {
  /** kebab-case, unique within the pack. */
  id: string;
  title: string;
  description?: string;
  /** Show the pack's settings form (from the manifest's `config` schema). */
  settings?: boolean;
  actions?: PanelAction[];
  /**
   * A person's own acts, run as the pack's CLI subcommands rather than tools: answers the agent
   * must never be able to give itself (consent to read a calendar, linking a phone). The console
   * runs them for the logged-in person as `memo <group> <sub>` would run at the terminal; no agent
   * or MCP client can reach them, since they are not tools.
   */
  commands?: PanelCommand[];
}

export interface PanelAction {
  id: string;
  label: string;
  /** One of the pack's own tools. */
  tool: string;
  /** Fixed arguments; the person fills in the rest from the tool's schema. */
  args?: { [key: string]: JsonValue };
}

export interface PanelCommand {
  id: string;
  label: string;
  /** `group sub` (`calendar consent`): a subcommand of a command group this pack registers (checked when it runs). */
  command: string;
  /** Fixed positional arguments by name; the person fills in the rest. */
  args?: { [key: string]: string };
  /** The arguments the person fills in (default: every one not fixed); `[]` for none. */
  fields?: string[];
}

export interface RegisteredPanel extends ConsolePanel {
  pack: string;
}

const ID = /^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$/;
const COMMAND = /^[a-z][a-z0-9]*(?:-[a-z0-9]+)* [a-z][a-z0-9]*(?:-[a-z0-9]+)*$/;

export class ConsolePanels {
  private readonly panels = new Map<string, RegisteredPanel>();

  /** `ownTools` names the pack's tools: an action may only call those. */
  register(pack: string, panel: ConsolePanel, ownTools: readonly string[]): Disposable {
    const problems = panelProblems(panel, ownTools);
    if (problems.length)
      throw new MemoError('VALIDATION', `Panel "${String(panel?.id)}" of pack "${pack}" is invalid: ${problems.join('; ')}.`, { plugin: pack });
    const key = `${pack}/${panel.id}`;
    if (this.panels.has(key)) throw new MemoError('CONFLICT', `Pack "${pack}" registers the panel "${panel.id}" twice.`, { plugin: pack });
    // A copy: later changes to the pack's object do not change what the console shows.
    const entry = JSON.parse(JSON.stringify({ ...panel, pack })) as RegisteredPanel;
    this.panels.set(key, entry);
    return toDisposable(() => {
      if (this.panels.get(key) === entry) this.panels.delete(key);
    });
  }

  list(): RegisteredPanel[] {
    return [...this.panels.values()].sort((a, b) => `${a.pack}/${a.id}`.localeCompare(`${b.pack}/${b.id}`));
  }

  get(pack: string, id: string): RegisteredPanel | undefined {
    return this.panels.get(`${pack}/${id}`);
  }
}

function panelProblems(panel: ConsolePanel, ownTools: readonly string[]): string[] {
  if (!panel || typeof panel !== 'object') return ['it must be an object'];
  const p: string[] = [];
  if (typeof panel.id !== 'string' || !ID.test(panel.id)) p.push('id must be kebab-case');
  if (typeof panel.title !== 'string' || !panel.title.trim()) p.push('title is required');
  if (panel.settings !== undefined && typeof panel.settings !== 'boolean') p.push('settings must be true or false');
  const seen = new Set<string>();
  for (const a of panel.actions ?? []) {
    const label = `action "${String(a?.id)}"`;
    if (typeof a?.id !== 'string' || !ID.test(a.id)) p.push(`${label}: id must be kebab-case`);
    else if (seen.has(a.id)) p.push(`${label} is declared twice`);
    else seen.add(a.id);
    if (typeof a?.label !== 'string' || !a.label.trim()) p.push(`${label}: label is required`);
    if (typeof a?.tool !== 'string' || !ownTools.includes(a.tool))
      p.push(`${label}: tool "${String(a?.tool)}" is not one of the pack's tools (${ownTools.join(', ') || 'none'})`);
    if (a?.args !== undefined && (typeof a.args !== 'object' || Array.isArray(a.args) || a.args === null)) p.push(`${label}: args must be an object`);
    else if (a?.args !== undefined && !isPlainJson(a.args)) p.push(`${label}: args must be plain JSON`);
  }
  for (const c of panel.commands ?? []) {
    const label = `command "${String(c?.id)}"`;
    if (typeof c?.id !== 'string' || !ID.test(c.id)) p.push(`${label}: id must be kebab-case`);
    else if (seen.has(c.id)) p.push(`${label} is declared twice`);
    else seen.add(c.id);
    if (typeof c?.label !== 'string' || !c.label.trim()) p.push(`${label}: label is required`);
    if (typeof c?.command !== 'string' || !COMMAND.test(c.command)) p.push(`${label}: command must be "group subcommand" (kebab-case words)`);
    if (
      c?.args !== undefined &&
      (typeof c.args !== 'object' || c.args === null || Array.isArray(c.args) || !Object.values(c.args).every((v) => typeof v === 'string'))
    )
      p.push(`${label}: args must be an object of strings`);
    if (c?.fields !== undefined && (!Array.isArray(c.fields) || !c.fields.every((f) => typeof f === 'string')))
      p.push(`${label}: fields must be a list of names`);
  }
  return p;
}

function isPlainJson(v: unknown): boolean {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return true;
  if (typeof v === 'number') return Number.isFinite(v);
  if (Array.isArray(v)) return v.every(isPlainJson);
  if (typeof v === 'object')
    return Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null ? Object.values(v).every(isPlainJson) : false;
  return false;
}
