import type { AgentKernel as Kernel } from './agent-kernel.js';
import { runTurn, type TurnOptions, type TurnResult } from './agent-loop.js';
import { isCliBackendProvider, runCliTurn } from './cli-backends/cli-turn.js';
import { summarise, type Compaction } from './compaction.js';
import { TokenCounter } from './context-budget.js';
import type { ModelProvider } from '../providers/provider.js';
import type { ItemRef } from '../tools/contract.js';
import { withAttachments, type Attachment } from './chat-attachments.js';
import { resolveMentions, type ResolvedMentions } from './chat-mentions.js';
import { fallbackTitle, generateTitle } from './conversation-title.js';

export interface ChatTurnOptions extends Omit<TurnOptions, 'history' | 'routine'> {
  /** Generate a title after the conversation's first exchange (default true). */
  titles?: boolean;
  /** Cancels a title request still running (a person leaving the chat); the turn's own signal does too. */
  titleSignal?: AbortSignal;
  /** Files read through the sandbox (chat-attachments.ts), sent after the message and stored with it. */
  attachments?: readonly Attachment[];
  /** Resolve vault `@mentions` when the vault pack is loaded (default true). */
  mentions?: boolean;
  /** Items the person picked in a face's `@mention` picker: sent as references with the message (their `@Title` is not looked up again). */
  mentioned?: readonly ItemRef[];
}

export interface ChatTurnResult extends TurnResult {
  /** The model a CLI backend reported running (its own default when none was asked for). */
  model?: string;
  /** The provider/model of the previous turn when this turn used another one. */
  switchedFrom?: { provider: string | null; model: string | null };
  /**
   * The generated title when this was the conversation's first exchange, null otherwise or when the
   * model gave none (the fallback title stays). Never awaited by the turn itself.
   */
  title: Promise<string | null> | null;
  /** The `@mentions` resolved to vault references, and those that were not (with why). */
  mentions: Pick<ResolvedMentions, 'references' | 'unresolved'>;
}

/**
 * One turn of a stored conversation: its history (the newest summary in place of what it
 * replaced) goes to the loop, and the turn comes back to the store with who produced it and any
 * compaction. After the first exchange a title is asked for in the background (seed 003: naming
 * a conversation never holds up its turn).
 */
export async function runChatTurn(kernel: Kernel, opts: ChatTurnOptions): Promise<ChatTurnResult> {
  const store = kernel.conversations;
  const info = await store.info(opts.conversationId);
  const history = await store.history(opts.conversationId);
  const provider = opts.provider.name;
  const first = info.messages === 0;
  if (first) await store.update(opts.conversationId, { title: fallbackTitle(opts.userMessage) });
  // A CLI backend asked for no particular model ('') uses its own default: only the provider counts.
  const switched = !first && (info.provider !== provider || (opts.model !== '' && info.model !== opts.model));
  if (first || switched) await store.update(opts.conversationId, { provider, model: opts.model });
  // The turn's access mode, so a face reopens the conversation in it (a host's store may not keep one).
  if (opts.mode && info.mode !== undefined && info.mode !== opts.mode) await store.update(opts.conversationId, { mode: opts.mode });

  const { titles, titleSignal, attachments, mentions: resolve, mentioned, ...turn } = opts;
  const mentions =
    resolve === false
      ? { message: opts.userMessage, references: [], unresolved: [] }
      : await resolveMentions(kernel, opts.userMessage, opts.signal, mentioned ?? []);
  const userMessage = withAttachments(mentions.message, attachments ?? []);
  // A CLI backend runs its own loop; Memo's tools reach it over MCP with this turn's capability.
  const result: TurnResult & { model?: string } = isCliBackendProvider(opts.provider)
    ? await runCliTurn(kernel, {
        provider: opts.provider,
        model: opts.model,
        conversationId: opts.conversationId,
        history,
        userMessage,
        ...(opts.systemPrompt ? { systemPrompt: opts.systemPrompt } : {}),
        ...(opts.signal ? { signal: opts.signal } : {}),
        ...(opts.onEvent ? { onEvent: opts.onEvent } : {}),
        ...(opts.effort ? { effort: opts.effort } : {}),
        ...(opts.mode ? { mode: opts.mode } : {}),
      })
    : await runTurn(kernel, { ...turn, userMessage, history });
  await store.appendTurn(opts.conversationId, result.messages, result.steps, {
    provider,
    // The model as the backend reported it, when it did.
    model: result.model || opts.model,
    reasoning: result.reasoning,
    ...(result.compaction ? { compaction: result.compaction } : {}),
  });

  if (result.model && result.model !== opts.model) await store.update(opts.conversationId, { provider, model: result.model });

  let title: Promise<string | null> | null = null;
  if (first && titles !== false && result.stopReason === 'final' && result.answer) {
    const signals = [titleSignal, opts.signal].filter((s): s is AbortSignal => s !== undefined);
    title = generateTitle(
      opts.provider,
      opts.model,
      opts.userMessage,
      result.answer,
      signals.length ? AbortSignal.any(signals) : new AbortController().signal,
    ).then(async (t) => {
      if (t === null) return null;
      // The conversation may have been deleted (or the store closed) meanwhile: the title is
      // a nicety, never an error.
      try {
        await store.update(opts.conversationId, { title: t });
        return t;
      } catch {
        return null;
      }
    });
  }
  return {
    ...result,
    ...(switched ? { switchedFrom: { provider: info.provider, model: info.model } } : {}),
    title,
    mentions: { references: mentions.references, unresolved: mentions.unresolved },
  };
}

/**
 * `/compact`: summarises the conversation now, all but its last exchange (kept verbatim, cut at a
 * turn boundary), and stores the summary like an automatic compaction. Null when there is nothing
 * before the last exchange to summarise. Throws an Error saying why when the model fails.
 */
export async function compactConversation(
  kernel: Kernel,
  opts: { provider: ModelProvider; model: string; conversationId: string; signal?: AbortSignal },
): Promise<Compaction | null> {
  const store = kernel.conversations;
  const history = await store.history(opts.conversationId);
  let cut = -1;
  for (let i = history.length - 1; i > 0; i--) {
    if (history[i]!.role === 'user') {
      cut = i;
      break;
    }
  }
  // A lone summary (already compacted, nothing since) is not summarised again.
  if (cut <= 0 || (cut === 1 && history[0]!.role === 'system')) return null;
  const window = opts.provider.contextWindow(opts.model) ?? 128_000;
  const summary = await summarise(
    opts.provider,
    opts.model,
    new TokenCounter(opts.provider, opts.model),
    history.slice(0, cut),
    window,
    Math.max(128, Math.min(2_000, Math.floor(window / 10))),
    opts.signal ?? new AbortController().signal,
  );
  const compaction = { summary, replaced: cut };
  await store.appendTurn(opts.conversationId, [], [], { provider: opts.provider.name, model: opts.model, compaction });
  return compaction;
}
