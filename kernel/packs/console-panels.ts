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
  /**
   * Lists the panel shows as tables: a read tool of the pack run when the panel is shown (and on
   * Refresh, or every `refreshSeconds`), its rows with the person's own buttons.
   */
  lists?: PanelList[];
}

/**
 * A table in a panel: `tool` (one of the pack's read tools) runs as the host caller `console` with
 * `args`, the dates of `dates` and what the person typed into `fields`; the rows are the result's
 * `rows` key (or the result itself, when it is a list), shown by `columns`. A row action calls one of
 * the pack's tools with arguments taken from the row (`from`: argument -> row key) under its fixed
 * `args`, asked like any call when it needs approval.
 */
export interface PanelList {
  id: string;
  title: string;
  tool: string;
  args?: { [key: string]: JsonValue };
  /** Arguments set to a date relative to today in the person's own time zone: days from today (0 today, 7 a week on), as YYYY-MM-DD. */
  dates?: { [key: string]: number };
  /** The arguments the person may type (a search box each; text and numbers). */
  fields?: string[];
  /** The result's key holding the rows; omitted, the result itself is the list. */
  rows?: string;
  columns: PanelColumn[];
  rowActions?: PanelRowAction[];
  /** Re-read every so many seconds while shown (5 to 3600). */
  refreshSeconds?: number;
  /** What the table says when there are no rows. */
  empty?: string;
}

export interface PanelColumn {
  /** The row's key (dots reach into objects: `next.at`). */
  key: string;
  label: string;
  /** The cell links to the view of a console item of this type (its id: the row's `itemId` key, else this value). */
  item?: 'note' | 'task' | 'inbox' | 'journal' | 'event' | 'project' | 'folder' | 'canvas';
  itemId?: string;
  /** A time: shown in the person's own zone. */
  time?: boolean;
}

export interface PanelRowAction {
  id: string;
  label: string;
  tool: string;
  /** The call's arguments taken from the row: argument name -> the row's key. */
  from: { [arg: string]: string };
  args?: { [key: string]: JsonValue };
}

export interface PanelAction {
  id: string;
  label: string;
  /** One of the pack's own tools. */
  tool: string;
  /** Fixed arguments; the person fills in the rest from the tool's schema. */
  args?: { [key: string]: JsonValue };
  refresh?: PanelRefresh;
}

/**
 * Once run, run again every `seconds` (5 to 3600) while its result is shown, until the result's
 * `until` key is true (a pairing QR that WhatsApp replaces, until the phone is linked).
 */
export interface PanelRefresh {
  seconds: number;
  until?: string;
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
  refresh?: PanelRefresh;
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
    p.push(...refreshProblems(a?.refresh, label));
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
    p.push(...refreshProblems(c?.refresh, label));
  }
  for (const l of panel.lists ?? []) p.push(...listProblems(l, ownTools, seen));
  return p;
}

function refreshProblems(r: PanelRefresh | undefined, label: string): string[] {
  if (r === undefined) return [];
  if (typeof r !== 'object' || r === null) return [`${label}: refresh must be {seconds, until?}`];
  const p: string[] = [];
  if (!(Number.isInteger(r.seconds) && r.seconds >= 5 && r.seconds <= 3600)) p.push(`${label}: refresh.seconds must be a whole number from 5 to 3600`);
  if (r.until !== undefined && (typeof r.until !== 'string' || !KEY.test(r.until))) p.push(`${label}: refresh.until must be a key of the result`);
  return p;
}

const KEY = /^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$/;
const ITEM_TYPES = new Set(['note', 'task', 'inbox', 'journal', 'event', 'project', 'folder', 'canvas']);

function listProblems(l: PanelList, ownTools: readonly string[], seen: Set<string>): string[] {
  const p: string[] = [];
  const label = `list "${String(l?.id)}"`;
  if (typeof l?.id !== 'string' || !ID.test(l.id)) p.push(`${label}: id must be kebab-case`);
  else if (seen.has(l.id)) p.push(`${label} is declared twice`);
  else seen.add(l.id);
  if (typeof l?.title !== 'string' || !l.title.trim()) p.push(`${label}: title is required`);
  if (typeof l?.tool !== 'string' || !ownTools.includes(l.tool))
    p.push(`${label}: tool "${String(l?.tool)}" is not one of the pack's tools (${ownTools.join(', ') || 'none'})`);
  if (l?.args !== undefined && (typeof l.args !== 'object' || l.args === null || Array.isArray(l.args) || !isPlainJson(l.args)))
    p.push(`${label}: args must be an object of plain JSON`);
  if (
    l?.dates !== undefined &&
    (typeof l.dates !== 'object' || l.dates === null || !Object.values(l.dates).every((d) => Number.isInteger(d) && Math.abs(d) <= 3660))
  )
    p.push(`${label}: dates must map argument names to whole numbers of days (at most 3660 either way)`);
  if (l?.fields !== undefined && (!Array.isArray(l.fields) || !l.fields.every((f) => typeof f === 'string')))
    p.push(`${label}: fields must be a list of names`);
  if (l?.rows !== undefined && (typeof l.rows !== 'string' || !KEY.test(l.rows))) p.push(`${label}: rows must be a key of the result`);
  if (!Array.isArray(l?.columns) || l.columns.length === 0) p.push(`${label}: columns must name at least one of the row's keys`);
  else
    for (const c of l.columns) {
      if (typeof c?.key !== 'string' || !KEY.test(c.key)) p.push(`${label}: a column's key must be a key of the row (dots for nested keys)`);
      if (typeof c?.label !== 'string' || !c.label.trim()) p.push(`${label}: column "${String(c?.key)}" needs a label`);
      if (c?.item !== undefined && !ITEM_TYPES.has(c.item)) p.push(`${label}: column "${String(c?.key)}": item must be one of ${[...ITEM_TYPES].join(', ')}`);
      if (c?.itemId !== undefined && (typeof c.itemId !== 'string' || !KEY.test(c.itemId)))
        p.push(`${label}: column "${String(c?.key)}": itemId must be a key of the row`);
    }
  const actions = new Set<string>();
  for (const a of l?.rowActions ?? []) {
    const what = `${label}, row action "${String(a?.id)}"`;
    if (typeof a?.id !== 'string' || !ID.test(a.id) || actions.has(a.id)) p.push(`${what}: id must be kebab-case and used once`);
    else actions.add(a.id);
    if (typeof a?.label !== 'string' || !a.label.trim()) p.push(`${what}: label is required`);
    if (typeof a?.tool !== 'string' || !ownTools.includes(a.tool)) p.push(`${what}: tool "${String(a?.tool)}" is not one of the pack's tools`);
    if (typeof a?.from !== 'object' || a.from === null || !Object.values(a.from).every((k) => typeof k === 'string' && KEY.test(k)))
      p.push(`${what}: from must map argument names to the row's keys`);
    if (a?.args !== undefined && (typeof a.args !== 'object' || a.args === null || Array.isArray(a.args) || !isPlainJson(a.args)))
      p.push(`${what}: args must be an object of plain JSON`);
  }
  if (l?.refreshSeconds !== undefined && !(Number.isInteger(l.refreshSeconds) && l.refreshSeconds >= 5 && l.refreshSeconds <= 3600))
    p.push(`${label}: refreshSeconds must be a whole number from 5 to 3600`);
  if (l?.empty !== undefined && typeof l.empty !== 'string') p.push(`${label}: empty must be text`);
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
