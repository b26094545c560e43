/**
 * What a pack may ask of the agent (`api.agent`: routine turns, the tools a turn could call, the
 * model a routine pins) and the shapes of a turn it gets back: the contract the core's pack API
 * offers, which the agent layer implements (kernel/agent/routine-turn.ts, agent-loop.ts).
 */
import type { ChatMessage } from '../providers/provider.js';
import type { AccessMode, Caller, Danger, Effect, ItemRef, RestrictedMode } from '../tools/contract.js';

export type StopReason = 'final' | 'max_iterations' | 'permission_timeout' | 'approval_expired' | 'cancelled' | 'error';

/** One tool call of a turn, as the person sees it (and as it is stored: never replayed to the model). */
export interface AgentStep {
  iteration: number;
  callId: string;
  tool: string;
  /** Identifying arguments, masked and shortened: those that ran (a person's edit, when there was one). */
  args: Record<string, unknown>;
  /** `expired`: nobody answered its approval in 30 minutes (seed 003: not a refusal). */
  outcome: 'ok' | 'error' | 'denied' | 'expired';
  code?: string;
  summary: string;
  durationMs: number;
  /** A person edited the arguments before approving: who, and what the model asked for (masked and shortened). */
  edited?: { by: string; askedArgs: Record<string, unknown> };
  /** The items the result named (notes, tasks, events...): what a face links in the reply. */
  items?: ItemRef[];
}

export type AgentEvent =
  | { type: 'turn_start'; conversationId: string; capability: string | null; tools: string[] }
  | { type: 'model_call'; iteration: number; budget: number; toolTokens: number }
  /** The older history was summarised before this turn's next request (seed 003: said in the transcript). */
  | { type: 'compaction'; replaced: number; summaryTokens: number }
  | { type: 'compaction_failed'; reason: string }
  | { type: 'tool_start'; iteration: number; tool: string; args: Record<string, unknown> }
  | { type: 'tool_end'; step: AgentStep }
  | { type: 'turn_end'; stopReason: StopReason }
  /** A piece of the final answer as it arrives (streaming providers and CLI backends); the full answer still comes in the result. */
  | { type: 'text_delta'; text: string }
  /** The turn runs through an agent CLI (kernel/agent/cli-backends): which one, and with what access. */
  | { type: 'backend'; backend: string; label: string; version: string; access: 'vault' | 'computer' };

export interface TurnResult {
  stopReason: StopReason;
  /** The final reply (the last assistant text when the turn stopped early). */
  answer: string;
  /** A sentence for the person when the turn stopped on an error, a timeout or a cancel. */
  error?: string;
  steps: AgentStep[];
  /** The messages this turn added (user first): always valid to send again (every tool call has a result). */
  messages: ChatMessage[];
  iterations: number;
  usage: { inputTokens: number; outputTokens: number };
  /** The model's reasoning per assistant message (`message`: its index in `messages`): shown and stored, never replayed. */
  reasoning: Array<{ message: number; text: string }>;
  /** Set when the turn summarised the oldest history: the caller stores it with the turn. */
  compaction?: Compaction;
  /** Why a compaction that was tried failed (the turn went on uncompacted when it still fit). */
  compactionError?: string;
}

export interface Compaction {
  summary: string;
  /** How many leading messages of the turn's history the summary replaces (an earlier summary among them). */
  replaced: number;
}

export interface RoutineTurnOptions {
  /** The routine's id: the caller's id in audit lines and its rate-limit budget. */
  routineId: string;
  /** This run's id: its approvals (pre-approved or answered "for the session") end with it. */
  runId: string;
  /** A configured provider's name (data/providers.json), pinned when the routine was created. */
  provider: string;
  model: string;
  /** What the routine asks, as the user message of the turn. */
  prompt: string;
  systemPrompt?: string;
  /** The only tools this run may call (scoped mode). Absent: every enabled tool. */
  tools?: readonly string[];
  /**
   * The access mode the run is a turn in (the one the routine was created in): a tool the mode does not
   * offer does not exist for the run, even when `tools` names it. Absent: Computer access.
   */
  mode?: AccessMode;
  /**
   * Tools allowed without asking for this run: a standing approval, so a stored deny still wins, and
   * deletes, `confirm: always` tools and calls with a concern (a command the judge cannot vouch for)
   * are still put to a person through the approval broker (under `memo serve`, refused at once when
   * nobody watches approvals; with `unattendedApprovals: 'wait'`, held until answered or expired).
   */
  preApproved?: readonly string[];
  signal?: AbortSignal;
  onEvent?: (event: AgentEvent) => void;
  maxIterations?: number;
}

/** A tool an agent turn may call, as a routine's approval preview shows it. */
export interface AgentToolInfo {
  name: string;
  plugin: string;
  danger: Danger;
  effect: Effect;
  confirm?: 'always';
  /** True when no standing approval ever covers it (a delete or a `confirm: always` tool). */
  asksEveryTime: boolean;
  /** The restricted access modes that offer it (Computer access offers every tool). */
  modes: RestrictedMode[];
}

/** The provider and model a routine pins, and whose they are. */
export interface PinnedModel {
  provider: string;
  model: string;
  /** `conversation`: the ones the chat that asked for it uses; `active`: the active provider's (no chat, or a chat without one). */
  from: 'conversation' | 'active';
}

/** What a pack gets as `api.agent`: the active model, the tools, and routine turns. */
export interface PackAgent {
  /** The active provider's name and model now, or null when none is configured. */
  active(): { provider: string; model: string } | null;
  /**
   * The provider and model a routine asked for by this caller pins: those of the conversation the
   * call comes from (the chat the person asked in), else the active ones; null when there are none.
   * A conversation whose provider is not configured (any more) is refused (VALIDATION), never
   * swapped for the active provider unseen.
   */
  modelFor(caller: Caller): Promise<PinnedModel | null>;
  /** The enabled tools an agent turn could call now, by name. */
  tools(): AgentToolInfo[];
  /** Runs one agent turn as a routine; resolves with how it ended (never a write capability). */
  run(options: RoutineTurnOptions): Promise<TurnResult>;
}
