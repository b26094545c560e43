import type { ToolErrorInfo } from '../errors.js';
import type { Concern } from '../sandbox/command-assessment.js';
import type { Judge } from '../sandbox/command-judge.js';
import type { Sandbox } from '../sandbox/path-sandbox.js';

// What a tool sees of the sandbox layer (defined there, where it is implemented).
export type { Concern, Judge, Sandbox };

export type Danger = 'safe' | 'medium' | 'dangerous';
export type Effect = 'read' | 'write' | 'delete';
export type JsonSchema = Record<string, unknown>;
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** What a tool is, as declared in a pack's manifest: enough to list, validate, gate and rate-limit it. */
export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the arguments object. */
  parameters: JsonSchema;
  danger: Danger;
  effect: Effect;
  /** Overrides the kernel's default handler timeout (120 s). */
  timeoutMs?: number;
  /** Argument names (dotted paths allowed) masked in audit lines beyond the kernel's own rules. */
  sensitiveArgs?: string[];
  /** `always`: ask every time; no standing approval applies. */
  confirm?: 'always';
  /**
   * The person may edit the arguments before approving (text and field-shaped writes): the edited
   * call is validated, assessed and previewed again, and asked again, before it runs.
   */
  editable?: boolean;
  /** The tool reaches beyond this machine and its files (the web, a provider, messaging): MCP's `openWorldHint`. */
  openWorld?: boolean;
  /**
   * The restricted access modes that offer the tool: `vault` (Vault only), `web` (Web search only).
   * Computer access offers every enabled tool whatever this says. A pack manifest's own `modes` is
   * the default for its tools; a tool's `modes` (even `[]`) overrides it.
   */
  modes?: RestrictedMode[];
  /** Words a person may use for what the tool does, besides its name and description: tool search ranks on them. */
  keywords?: string[];
  /** Requests the tool serves, in a person's words ("what is on my calendar tomorrow"): tool search ranks on them. */
  examples?: string[];
}

/** The access modes narrower than Computer access, as tools and packs declare them. */
export const RESTRICTED_MODES = ['vault', 'web'] as const;
export type RestrictedMode = (typeof RESTRICTED_MODES)[number];
/** What a turn may use: Vault only, every enabled tool (Computer access), or web_search alone. */
export type AccessMode = 'vault' | 'computer' | 'web';

/** Who is calling. The pipeline is the same for all; only the caller rules differ. */
export type CallerKind = 'agent' | 'mcp' | 'cli' | 'routine' | 'host';

export interface Caller {
  kind: CallerKind;
  /** A label for audit lines (e.g. an MCP client name or a routine id). */
  id?: string;
  /** Session decisions (AllowSession) are scoped to this; defaults to the kernel's lifetime. */
  sessionId?: string;
  /**
   * The agent turn a call belongs to (a fresh id per turn of the agent loop), if any: what a turn
   * activated (a skill it read) lasts as long as this id is used.
   */
  turn?: string;
  /** The agent conversation a call belongs to, if any. */
  conversationId?: string;
  /** A write capability presented by an external MCP caller. */
  capability?: string;
  /**
   * The per-client token an MCP caller presented (`memo serve token add NAME`), by its name: a
   * credential, unlike the declared `id`, so the caller's rate budget is the token's.
   */
  token?: string;
  /**
   * The name an MCP client declares for itself (clientInfo.name, without a version): a label any
   * client can claim, not a credential. What `memo permissions external-writes --client` matches.
   */
  client?: string;
}

export interface ProgressUpdate {
  progress: number;
  total?: number;
  message?: string;
}

/** What a handler gets besides its (already validated) arguments. */
export interface ToolContext {
  /** Aborted on timeout, on the caller's cancellation, and at shutdown. Long work must watch it. */
  signal: AbortSignal;
  caller: Caller;
  callId: string;
  tool: string;
  plugin: string;
  /** The sandbox root every path argument is resolved against. */
  root: string;
  /** Resolves and opens paths inside the root; every pack that takes a path uses it. */
  sandbox: Sandbox;
  /** The command judge (the blacklist): every tool that runs a shell command asks it first. */
  judge: Judge;
  /** The pack's data folder (created on demand by the pack). */
  dataDir: string;
  /** The pack's settings, validated against its manifest's `config` schema. */
  config: Readonly<Record<string, unknown>>;
  progress(update: ProgressUpdate): void;
  /** The only tools this call's caller may use (a turn's access mode), if it is scoped; absent: every enabled tool. */
  scope?: readonly string[];
  /** The access mode of the turn this call belongs to (absent: not known, as for a person's CLI call or a host's). */
  mode?: AccessMode;
}

/**
 * What a person is shown before approving. Faces show, in this order: the kernel's facts (tool,
 * caller, danger, concern), the tool's `facts` (one line each, never cut), the body `text` (cut when
 * long), and last the `quoted` text, marked as written by the caller. Text the caller wrote (a
 * prompt, a message, a command) belongs in `quoted`, never in `facts` or beside them in `text`,
 * where a line break in it could pass for a line of the tool's own.
 */
export interface Preview {
  kind: 'diff' | 'fields' | 'delete' | 'command' | 'text';
  /** The body: a unified diff, `field: before -> after` lines, what a delete loses. May be empty when `facts` say it all. */
  text: string;
  /** What the tool vouches for about this call (a routine's schedule, its model, its grants): one line each, its line breaks shown as marks. */
  facts?: PreviewFact[];
  /** Free text the caller wrote (a routine's prompt, a message's body), shown after everything else as quoted data. */
  quoted?: PreviewQuote[];
  /**
   * An edit of a note's or journal entry's body: the whole body now and as the call would leave it,
   * so a face can review the change in the note itself (seed 003), word by word. `text` still
   * carries the diff for faces that show text.
   */
  document?: PreviewDocument;
}

export interface PreviewDocument {
  type: 'note' | 'journal';
  /** The note's id (a journal entry's date). */
  id: string;
  title: string;
  path: string;
  before: string;
  after: string;
}

export interface PreviewFact {
  label: string;
  value: string;
}

export interface PreviewQuote {
  /** What the text is (`prompt each run sends`). */
  label: string;
  text: string;
  /** Who wrote it when not the caller of this call (`the calendar`); faces name the caller otherwise (the model, an MCP client). */
  from?: string;
}

export type ToolRun = (args: Record<string, unknown>, ctx: ToolContext) => unknown;
export type ToolPreview = (args: Record<string, unknown>, ctx: ToolContext) => Preview | Promise<Preview>;
/**
 * A tool's own answer to a call it will not run: nobody is asked, the handler does not run, and the
 * caller gets `value` as the call's result (the audit line's decision is `answered`). For a failure
 * the tool's callers expect in its result rather than as an error (the desktop bridge's
 * `{"success": false, "error": ...}`), so nobody is asked to approve a call that cannot run. Never
 * for a change: assess runs before any approval.
 */
export interface ToolAnswer {
  verdict: 'answer';
  value: { [key: string]: JsonValue };
}

/**
 * Runs before the gate: throws to refuse the call outright (e.g. COMMAND_BLOCKED, so nobody is
 * asked about a command that could never run), returns a Concern to force a question, a ToolAnswer
 * to answer the call without running it, or null.
 */
export type ToolAssess = (args: Record<string, unknown>, ctx: ToolContext) => Concern | ToolAnswer | null | Promise<Concern | ToolAnswer | null>;

/** The kinds of item a person can open from a chat reply (seed 003: linked items and citation chips). */
export const ITEM_TYPES = ['note', 'task', 'inbox', 'journal', 'event', 'project', 'folder', 'canvas'] as const;
export type ItemType = (typeof ITEM_TYPES)[number];

/**
 * An item a call's result names, so a face can link it: the type, the id the pack finds it by (a
 * journal entry's date, a folder's path), its title, and its own icon when it has one (an emoji).
 */
export interface ItemRef {
  type: ItemType;
  id: string;
  title: string;
  icon?: string;
}

/** The items a result names (at most ITEM_LIMIT are kept): the pack's knowledge of its own results' shapes. */
export type ToolItems = (value: JsonValue, args: Record<string, unknown>, ctx: ToolContext) => ItemRef[];

/** A pack's code for one tool: a function, or an object with `run` and optional `preview`, `assess` and `items`. */
export type ToolImplementation = ToolRun | { run: ToolRun; preview?: ToolPreview; assess?: ToolAssess; items?: ToolItems };

/** One call, as any caller (agent loop, MCP, CLI, routine) asks for it. */
export interface ToolCallRequest {
  tool: string;
  args: unknown;
  caller: Caller;
  signal?: AbortSignal;
  onProgress?: (update: ProgressUpdate) => void;
}

/** A call whose arguments a person edited before approving: who, and the arguments that ran (masked). */
export interface EditedCall {
  by: string;
  args: unknown;
}

export type ToolResult =
  | { ok: true; callId: string; tool: string; value: JsonValue; summary: string; durationMs: number; edited?: EditedCall; items?: ItemRef[] }
  | { ok: false; callId: string; tool: string; error: ToolErrorInfo; durationMs: number; edited?: EditedCall };

/** One tool's code with its arguments typed (`A` comes from the types generated from plugin.json). */
export type TypedToolImplementation<A> =
  | ((args: A, ctx: ToolContext) => unknown)
  | {
      run: (args: A, ctx: ToolContext) => unknown;
      preview?: (args: A, ctx: ToolContext) => Preview | Promise<Preview>;
      assess?: (args: A, ctx: ToolContext) => Concern | ToolAnswer | null | Promise<Concern | ToolAnswer | null>;
      items?: (value: JsonValue, args: A, ctx: ToolContext) => ItemRef[];
    };
