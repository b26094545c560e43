import type { Kernel } from '../kernel.js';
import { runTurn, type TurnOptions, type TurnResult } from './agent-loop.js';
import { fallbackTitle, generateTitle } from './conversation-title.js';

export interface ChatTurnOptions extends Omit<TurnOptions, 'history' | 'routine'> {
  /** Generate a title after the conversation's first exchange (default true). */
  titles?: boolean;
  /** Cancels a title request still running (a person leaving the chat); the turn's own signal does too. */
  titleSignal?: AbortSignal;
}

export interface ChatTurnResult extends TurnResult {
  /** The provider/model of the previous turn when this turn used another one. */
  switchedFrom?: { provider: string | null; model: string | null };
  /**
   * The generated title when this was the conversation's first exchange, null otherwise or when the
   * model gave none (the fallback title stays). Never awaited by the turn itself.
   */
  title: Promise<string | null> | null;
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
  const switched = !first && (info.provider !== provider || info.model !== opts.model);
  if (first || switched) await store.update(opts.conversationId, { provider, model: opts.model });

  const { titles, titleSignal, ...turn } = opts;
  const result = await runTurn(kernel, { ...turn, history });
  await store.appendTurn(opts.conversationId, result.messages, result.steps, {
    provider,
    model: opts.model,
    ...(result.compaction ? { compaction: result.compaction } : {}),
  });

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
  return { ...result, ...(switched ? { switchedFrom: { provider: info.provider, model: info.model } } : {}), title };
}
