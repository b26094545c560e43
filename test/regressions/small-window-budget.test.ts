import { planBudget, TokenCounter } from '../../kernel/agent/context-budget.js';
import type { ModelProvider } from '../../kernel/providers/provider.js';

// A local GGUF model with a 1024-token window was refused for a one-word message: the budget
// always reserved 1024 tokens for the reply, more than the whole window minus the prompt.
describe('regression: small context windows', () => {
  const provider = (window: number): ModelProvider => ({
    name: 'p',
    kind: 'k',
    chat: () => Promise.resolve({ content: '', toolCalls: [] }),
    contextWindow: () => window,
  });

  it('accepts a short conversation in a 1024-token window', () => {
    const p = provider(1024);
    const b = planBudget(new TokenCounter(p, 'm'), p, 'm', [{ role: 'user', content: 'hello' }], []);
    expect(b.budget).toBe(1024);
  });

  it('still refuses one that leaves less than a quarter of the window, without talking about tools it does not have', () => {
    const p = provider(1024);
    expect(() => planBudget(new TokenCounter(p, 'm'), p, 'm', [{ role: 'user', content: 'x'.repeat(3000) }], [])).toThrow(
      /^This conversation needs [\d.]+K? tokens; this model's window is 1\.0K: start a new conversation or pick a larger model\.$/,
    );
  });
});
