import { MemoError } from '../errors.js';
import type { ChatMessage, ModelProvider, ToolDefinition } from '../providers/provider.js';

export const CONTEXT_HEADROOM = 32_000;
export const CONTEXT_FLOOR = 64_000;
/** What a reply needs at least, so a request that leaves less than this is refused up front. */
export const MIN_REPLY_TOKENS = 1_024;

/**
 * Counts tokens of what is actually sent. A provider with a real tokenizer counts exactly; others
 * are estimated (about 3.5 characters a token) and the estimate is corrected by the ratio between
 * what the provider reported as input tokens and what was estimated for that request.
 */
export class TokenCounter {
  private correction = 1;

  constructor(
    private readonly provider: ModelProvider,
    private readonly model: string,
  ) {}

  count(text: string): number {
    const exact = this.provider.countTokens?.(text, this.model);
    if (exact !== undefined) return exact;
    return Math.ceil((text.length / 3.5) * this.correction);
  }

  get exact(): boolean {
    return this.provider.countTokens?.('a', this.model) !== undefined;
  }

  /** Learns from the provider's own count of the last request. */
  observe(estimated: number, reported: number): void {
    if (this.exact || estimated <= 0 || reported <= 0) return;
    const ratio = (reported / estimated) * this.correction;
    // Smooth, and keep within sane bounds so one odd answer cannot derail the budget.
    this.correction = Math.min(3, Math.max(0.3, this.correction * 0.5 + ratio * 0.5));
  }
}

export interface Budget {
  conversationTokens: number;
  toolTokens: number;
  toolCount: number;
  /** The context size this turn asks for: conversation + 32K headroom, never below 64K, capped by the window. */
  budget: number;
  window: number | undefined;
}

function k(n: number): string {
  return n >= 1000 ? `${(n / 1000).toFixed(1)}K` : String(n);
}

/** Room for the reply: 1K tokens, or a quarter of a small model's window. */
export function replyReserve(window: number | undefined): number {
  return window === undefined ? MIN_REPLY_TOKENS : Math.min(MIN_REPLY_TOKENS, Math.floor(window / 4));
}

/** Tokens of exactly what the provider receives: the definitions as sent, and each message. */
export function measureRequest(counter: TokenCounter, messages: ChatMessage[], tools: ToolDefinition[]): { conversationTokens: number; toolTokens: number } {
  const toolTokens = tools.length ? counter.count(JSON.stringify(tools)) : 0;
  let conversationTokens = 0;
  for (const m of messages)
    conversationTokens += counter.count(m.content) + 4 + ('toolCalls' in m && m.toolCalls ? counter.count(JSON.stringify(m.toolCalls)) : 0);
  return { conversationTokens, toolTokens };
}

/** Sizes a request and refuses, before sending, one that cannot fit the model's window. */
export function planBudget(counter: TokenCounter, provider: ModelProvider, model: string, messages: ChatMessage[], tools: ToolDefinition[]): Budget {
  const { conversationTokens, toolTokens } = measureRequest(counter, messages, tools);
  const window = provider.contextWindow(model);
  const needed = conversationTokens + toolTokens;
  const wanted = Math.max(CONTEXT_FLOOR, needed + CONTEXT_HEADROOM);
  const budget = window === undefined ? wanted : Math.min(window, wanted);
  const reserve = replyReserve(window);
  if (window !== undefined && needed + reserve > window) {
    const defs = `${tools.length} tool definition${tools.length === 1 ? ' needs' : 's need'} ${k(toolTokens)} tokens`;
    const message =
      tools.length > 0 && toolTokens + reserve > window
        ? `${defs}; this model's window is ${k(window)}: disable packs or pick a larger model.`
        : `This conversation needs ${k(conversationTokens)} tokens${tools.length ? ` and the ${defs}` : ''}; this model's window is ${k(window)}: start a new conversation or pick a larger model.`;
    throw new MemoError('VALIDATION', message, { details: { conversationTokens, toolTokens, window } });
  }
  return { conversationTokens, toolTokens, toolCount: tools.length, budget, window };
}
