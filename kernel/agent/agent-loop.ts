import { randomUUID } from 'node:crypto';
import { maskArgs } from '../secrets/masking.js';
import { isMemoError } from '../errors.js';
import type { AgentKernel as Kernel } from './agent-kernel.js';
import type { Caller, ToolResult } from '../tools/contract.js';
import { chooseCut, COMPACT_AT, summarise, summaryMessage } from './compaction.js';
import type { AgentEvent, AgentStep, Compaction, StopReason, TurnResult } from '../packs/pack-agent.js';

export type { AgentEvent, AgentStep, StopReason, TurnResult };
import { measureRequest, planBudget, replyReserve, TokenCounter } from './context-budget.js';
import { isProviderError, type ChatMessage, type ModelProvider, type ToolCallRequestPart, type ToolDefinition } from '../providers/provider.js';
import type { AccessMode } from '../tools/contract.js';
import { offeredIn } from '../tools/access-modes.js';
import { FIND_TOOLS, type FoundTools } from './find-tools.js';
import { definitionOf, planTools } from './tool-budget.js';

export const MAX_ITERATIONS = 40;
export const AGENT_TEMPERATURE = 0.2;

export interface TurnOptions {
  provider: ModelProvider;
  model: string;
  conversationId: string;
  /** Earlier messages of the conversation (as sent to the model before). */
  history: ChatMessage[];
  userMessage: string;
  systemPrompt?: string;
  /** Scoped mode: only these tools exist for this turn (the web-search toggle is `['web_search']`). */
  scope?: readonly string[];
  /**
   * What the turn may use (default `computer`: every enabled tool): `vault` offers the tools whose
   * packs declare Vault only, `web` web_search alone. Within it, the definitions sent are narrowed to
   * a share of the model's window (tool-budget.ts) and find_tools reaches the rest.
   */
  mode?: AccessMode;
  /** The share of the model's window all tool definitions may take before they are narrowed (default 0.25). */
  toolShare?: number;
  /** False: chat without tools (a local model that failed the tool-calling probe). */
  toolsEnabled?: boolean;
  signal?: AbortSignal;
  sessionId?: string;
  maxIterations?: number;
  onEvent?: (event: AgentEvent) => void;
  /**
   * Runs the turn as a routine (caller kind `routine`, `id` the routine's, `sessionId` the run's)
   * instead of as the agent of a conversation: no write capability is minted (a routine never lends
   * outside MCP callers a write), and its calls use the routine's own rate-limit budget.
   */
  routine?: { id: string; sessionId: string };
  /** False: never compact the history (the request is refused when it does not fit, as before). */
  compact?: boolean;
  /**
   * Ask the provider to stream each reply, and pass its text on as `text_delta` events while it
   * arrives (memrynote streams replies: a deliberate change from seed 000's non-streaming loop).
   * Tool calls still run only once the whole reply is in, at the same temperature.
   */
  stream?: boolean;
  /** Reasoning effort, for models that have the setting (ignored by the others). */
  effort?: 'low' | 'medium' | 'high';
}

function shortArgs(args: unknown): Record<string, unknown> {
  const { masked } = maskArgs(args);
  const out: Record<string, unknown> = {};
  if (masked && typeof masked === 'object' && !Array.isArray(masked)) {
    for (const [k, v] of Object.entries(masked)) {
      if (typeof v === 'string') out[k] = v.length > 80 ? `${v.slice(0, 77)}…` : v;
      else if (typeof v === 'number' || typeof v === 'boolean' || v === null) out[k] = v;
      else out[k] = '…';
    }
  }
  return out;
}

function resultText(r: ToolResult): string {
  if (r.ok) return typeof r.value === 'string' ? r.value : JSON.stringify(r.value);
  return `Error ${r.error.code}: ${r.error.message}`;
}

/**
 * The agent loop of the seed: messages + the enabled tools' schemas -> model (non-streaming,
 * temperature 0.2) -> every returned tool call through the kernel's one pipeline -> results
 * appended -> again, until the model answers without tool calls, 40 iterations pass, a permission
 * prompt times out, the run is cancelled, or the provider fails.
 */
export async function runTurn(kernel: Kernel, opts: TurnOptions): Promise<TurnResult> {
  const signal = opts.signal ?? new AbortController().signal;
  const max = opts.maxIterations ?? MAX_ITERATIONS;
  const counter = new TokenCounter(opts.provider, opts.model);
  const mode = opts.mode ?? 'computer';
  const tools =
    opts.toolsEnabled === false ? [] : kernel.registry.list().filter((t) => (!opts.scope || opts.scope.includes(t.spec.name)) && offeredIn(t.spec, mode));
  // Exactly name, description and parameters: no kernel bookkeeping field reaches the provider.
  const allowed = new Map(tools.map((t) => [t.spec.name, definitionOf(t.spec)]));
  // The pipeline refuses anything outside the turn's mode, whether or not its definition was sent.
  const scope = opts.toolsEnabled === false ? [] : opts.scope || mode !== 'computer' ? [...allowed.keys()] : undefined;
  const plan = planTools({
    counter,
    allowed: [...allowed.values()],
    window: opts.provider.contextWindow(opts.model),
    ...(opts.toolShare !== undefined ? { share: opts.toolShare } : {}),
    message: opts.userMessage,
    rank: (message, among, limit) => kernel.toolSearch.search(message, { among, limit }).map((h) => h.name),
  });
  const offered = new Set(plan.offered);
  let defs: ToolDefinition[] = [...offered].map((name) => allowed.get(name)!); // offered ⊆ allowed
  /** What find_tools found joins the definitions sent from the next model call on. */
  const addFound = (value: unknown): void => {
    for (const t of (value as Partial<FoundTools> | undefined)?.tools ?? []) if (allowed.has(t.name)) offered.add(t.name);
    defs = [...offered].map((name) => allowed.get(name)!);
  };

  const added: ChatMessage[] = [{ role: 'user', content: opts.userMessage }];
  const system: ChatMessage[] = opts.systemPrompt ? [{ role: 'system', content: opts.systemPrompt }] : [];
  let history = opts.history;
  let compaction: Compaction | undefined;
  let compactionError: string | undefined;
  let compactionTried = opts.compact === false;
  const steps: AgentStep[] = [];
  const reasoning: Array<{ message: number; text: string }> = [];
  const usage = { inputTokens: 0, outputTokens: 0 };
  let answer = '';
  let iteration = 0;

  // A write capability for this turn only: what the turn spawns (a CLI backend on the MCP
  // endpoint) may write; it dies with the turn.
  // A turn of a conversation that is not stored (a host keeping its own history) gets none, and
  // neither does a routine's run.
  const turn = randomUUID();
  const capability = opts.routine
    ? null
    : await kernel.capabilities.mint(opts.conversationId, turn, mode).catch((err: unknown) => {
        if (isMemoError(err) && err.code === 'NOT_FOUND') return null;
        throw err;
      });
  const caller: Caller = opts.routine
    ? { kind: 'routine', id: opts.routine.id, sessionId: opts.routine.sessionId, turn }
    : { kind: 'agent', conversationId: opts.conversationId, turn, ...(opts.sessionId ? { sessionId: opts.sessionId } : {}) };
  const emit = (e: AgentEvent) => opts.onEvent?.(e);
  const finish = (stopReason: StopReason, error?: string): TurnResult => {
    emit({ type: 'turn_end', stopReason });
    return {
      stopReason,
      answer,
      ...(error ? { error } : {}),
      steps,
      messages: added,
      reasoning,
      iterations: iteration,
      usage,
      ...(compaction ? { compaction } : {}),
      ...(compactionError ? { compactionError } : {}),
    };
  };

  /**
   * Summarises the oldest history once per turn when the request grows past COMPACT_AT of the
   * window. Only the stored history is summarised: this turn's own messages (the person's new
   * message first) always go verbatim. A failure is kept to explain a refusal, never thrown.
   */
  const maybeCompact = async (): Promise<void> => {
    const window = opts.provider.contextWindow(opts.model);
    if (compactionTried || window === undefined || history.length === 0) return;
    const reserve = replyReserve(window);
    const whole = measureRequest(counter, [...system, ...history, ...added], defs);
    if (whole.conversationTokens + whole.toolTokens + reserve <= window * COMPACT_AT) return;
    // Tool definitions that alone overflow cannot be helped by a summary: planBudget says so.
    if (whole.toolTokens + reserve >= window) return;
    compactionTried = true;
    const fixed = measureRequest(counter, [...system, ...added], defs);
    const maxSummary = Math.max(128, Math.min(2_000, Math.floor(window / 10)));
    const cut = chooseCut(counter, history, fixed.conversationTokens + fixed.toolTokens + reserve, maxSummary, window)!; // history is not empty
    try {
      const summary = await summarise(opts.provider, opts.model, counter, history.slice(0, cut), window, maxSummary, signal);
      history = [summaryMessage(summary), ...history.slice(cut)];
      compaction = { summary, replaced: cut };
      emit({ type: 'compaction', replaced: cut, summaryTokens: counter.count(summary) });
    } catch (err) {
      compactionError = (err as Error).message;
      emit({ type: 'compaction_failed', reason: compactionError });
    }
  };

  /** Gives every call of an assistant message that has no result yet a synthetic one, so the history stays valid. */
  const closePending = (calls: ToolCallRequestPart[], from: number, why: string) => {
    for (const call of calls.slice(from)) added.push({ role: 'tool', toolCallId: call.id, name: call.name, content: why, isError: true });
  };

  try {
    emit({ type: 'turn_start', conversationId: opts.conversationId, capability, tools: defs.map((d) => d.name) });
    while (iteration < max) {
      if (signal.aborted) return finish('cancelled', 'The turn was stopped.');
      iteration++;
      await maybeCompact();
      if (signal.aborted) return finish('cancelled', 'The turn was stopped.');
      const messages = [...system, ...history, ...added];
      let plan;
      try {
        plan = planBudget(counter, opts.provider, opts.model, messages, defs);
      } catch (err) {
        const why = (err as Error).message;
        return finish('error', compactionError ? `${why} Compacting the earlier conversation failed: ${compactionError}.` : why);
      }
      emit({ type: 'model_call', iteration, budget: plan.budget, toolTokens: plan.toolTokens });
      let reply;
      try {
        reply = await opts.provider.chat({
          model: opts.model,
          messages,
          tools: defs,
          temperature: AGENT_TEMPERATURE,
          contextTokens: plan.budget,
          signal,
          ...(opts.effort ? { effort: opts.effort } : {}),
          // Streamed transport only: the reply is complete before any tool runs, so the loop is the same.
          ...(opts.stream ? { onText: (text: string) => emit({ type: 'text_delta', text }) } : {}),
        });
      } catch (err) {
        if (signal.aborted) return finish('cancelled', 'The turn was stopped.');
        const message = isProviderError(err) ? err.message : `The model call failed: ${(err as Error)?.message ?? String(err)}`;
        return finish('error', message);
      }
      if (reply.usage) {
        usage.inputTokens += reply.usage.inputTokens;
        usage.outputTokens += reply.usage.outputTokens;
        counter.observe(plan.conversationTokens + plan.toolTokens, reply.usage.inputTokens);
      }
      answer = reply.content;
      const calls = reply.toolCalls;
      // The reasoning is kept beside the message, never in it: no later request carries it.
      if (reply.reasoning) reasoning.push({ message: added.length, text: reply.reasoning });
      added.push({ role: 'assistant', content: reply.content, ...(calls.length ? { toolCalls: calls } : {}) });
      if (calls.length === 0) return finish('final');

      for (let i = 0; i < calls.length; i++) {
        const call = calls[i]!; // i < calls.length
        if (signal.aborted) {
          closePending(calls, i, 'Not run: the turn was stopped.');
          return finish('cancelled', 'The turn was stopped.');
        }
        const args = shortArgs(call.arguments);
        emit({ type: 'tool_start', iteration, tool: call.name, args });
        // Arguments that were not JSON still go through the pipeline, so the refusal is audited.
        const result = await kernel.invoke(
          {
            tool: call.name,
            args: call.parseError ? `unparseable arguments: ${call.parseError}` : call.arguments,
            // A copy per call: the pipeline may annotate its caller.
            caller: { ...caller },
            signal,
          },
          { ...(scope ? { scope } : {}), mode },
        );
        const code = result.ok ? undefined : result.error.code;
        const denied = code === 'PERMISSION_DENIED' || code === 'PERMISSION_TIMEOUT';
        const step: AgentStep = {
          iteration,
          callId: result.callId,
          tool: call.name,
          // The arguments that ran: a person's edit, when there was one, with what the model asked for beside them.
          args: result.edited ? shortArgs(result.edited.args) : args,
          ...(result.edited ? { edited: { by: result.edited.by, askedArgs: args } } : {}),
          outcome: result.ok ? 'ok' : denied ? 'denied' : code === 'APPROVAL_EXPIRED' ? 'expired' : 'error',
          ...(code ? { code } : {}),
          summary: result.ok ? result.summary : result.error.message,
          durationMs: Math.round(result.durationMs),
          ...(result.ok && result.items ? { items: result.items } : {}),
        };
        steps.push(step);
        emit({ type: 'tool_end', step });
        let content = resultText(result);
        // The model is told its call ran as a person edited it, so it does not take the result for its own arguments'.
        if (result.edited) content = `The person edited the arguments before approving; the call ran with ${JSON.stringify(result.edited.args)}.\n${content}`;
        if (call.parseError && !result.ok) content = `Error INVALID_ARGS: the arguments were not valid JSON (${call.parseError}); send a JSON object.`;
        added.push({ role: 'tool', toolCallId: call.id, name: call.name, content, ...(result.ok ? {} : { isError: true }) });
        if (call.name === FIND_TOOLS && result.ok) addFound(result.value);

        if (code === 'PERMISSION_TIMEOUT') {
          closePending(calls, i + 1, 'Not run: the turn stopped because a permission prompt went unanswered.');
          return finish('permission_timeout', result.ok ? undefined : result.error.message);
        }
        if (code === 'APPROVAL_EXPIRED') {
          // The model is told the request timed out, not that the person refused it.
          closePending(calls, i + 1, 'Not run: the turn stopped because an approval request expired unanswered.');
          return finish('approval_expired', result.ok ? undefined : result.error.message);
        }
        if (code === 'CANCELLED' && signal.aborted) {
          closePending(calls, i + 1, 'Not run: the turn was stopped.');
          return finish('cancelled', 'The turn was stopped.');
        }
      }
    }
    return finish('max_iterations', `The turn stopped after ${max} iterations without a final answer.`);
  } finally {
    if (capability) kernel.capabilities.revoke(capability);
    // The skills this turn read restrict nothing any more.
    kernel.skills.endTurn(turn);
  }
}
