import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runTurn, type ChatMessage, type ChatRequest, type ChatResponse, type ModelProvider, type ToolDefinition } from '../kernel/index.js';
import { planBudget, TokenCounter } from '../kernel/agent/context-budget.js';
import { percentile } from './stats.js';
import { noopKernel } from './noop-kernel.js';

/** A model that answers instantly: call the no-op tool N times, then answer. */
class InstantModel implements ModelProvider {
  readonly name = 'instant';
  readonly kind = 'bench';
  private calls = 0;
  constructor(private readonly iterations: number) {}
  chat(req: ChatRequest): Promise<ChatResponse> {
    const n = req.messages.filter((m) => m.role === 'assistant').length;
    this.calls++;
    if (n + 1 >= this.iterations) return Promise.resolve({ content: 'done', toolCalls: [] });
    return Promise.resolve({ content: '', toolCalls: [{ id: `c${this.calls}`, name: 'noop', arguments: { n } }] });
  }
  contextWindow(): number {
    return 1_000_000;
  }
}

/**
 * Loop overhead per iteration, excluding model and tool time: an instant in-process model and a
 * no-op tool, so what is measured is the loop itself (budget, messages, pipeline, audit). The
 * baseline is the pipeline call alone, same run. Then: token-count time for a 100-message
 * conversation with 60 tool definitions (estimator, and the exact o200k tokenizer when the
 * providers pack is built).
 */
export async function benchAgent(turns = 200, iterations = 10): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memo-bench-agent-'));
  const kernel = noopKernel(dir, path.join(dir, 'data'), () => 'ok', true);
  const perIteration: number[] = [];
  for (let t = 0; t < turns + 20; t++) {
    const t0 = performance.now();
    const r = await runTurn(kernel, {
      provider: new InstantModel(iterations),
      model: 'bench',
      conversationId: `c${t}`,
      history: [],
      userMessage: 'go',
      scope: ['noop'],
    });
    const ms = performance.now() - t0;
    if (r.stopReason !== 'final') throw new Error(`bench turn stopped: ${r.stopReason} ${r.error ?? ''}`);
    if (t >= 20) perIteration.push((ms * 1000) / r.iterations);
  }
  const pipe: number[] = [];
  for (let i = 0; i < turns * iterations; i++) {
    const t0 = performance.now();
    await kernel.invoke({ tool: 'noop', args: { n: i }, caller: { kind: 'agent' } });
    pipe.push((performance.now() - t0) * 1000);
  }
  await kernel.shutdown();
  fs.rmSync(dir, { recursive: true, force: true });
  const it = [...perIteration].sort((a, b) => a - b);
  const pp = [...pipe].sort((a, b) => a - b);
  console.log(`\nAgent loop overhead, ${turns} turns x ${iterations} iterations, instant model, no-op tool`);
  console.log(`  per iteration (loop + pipeline):  p50 ${percentile(it, 50).toFixed(1)} us  p99 ${percentile(it, 99).toFixed(1)} us   (target < 2 ms)`);
  console.log(`  baseline, the pipeline call alone: p50 ${percentile(pp, 50).toFixed(1)} us`);

  // Token counting: 100 messages and 60 tool definitions, serialised as sent.
  const tools: ToolDefinition[] = Array.from({ length: 60 }, (_, i) => ({
    name: `tool_${i}`,
    description: `Tool number ${i}: does a specific thing with files, text or the network, and explains its arguments in a sentence or two.`,
    parameters: {
      type: 'object',
      properties: { path: { type: 'string', description: 'A path inside the root' }, limit: { type: 'integer', minimum: 1 } },
      required: ['path'],
    },
  }));
  const messages: ChatMessage[] = Array.from({ length: 100 }, (_, i) =>
    i % 2
      ? { role: 'assistant', content: `Answer ${i}: ${'lorem ipsum dolor sit amet '.repeat(20)}` }
      : { role: 'user', content: `Question ${i}: ${'what about this and that '.repeat(10)}` },
  );
  const estimating: ModelProvider = { name: 'e', kind: 'e', chat: () => Promise.resolve({ content: '', toolCalls: [] }), contextWindow: () => 1_000_000 };
  const time = (provider: ModelProvider, label: string) => {
    const counter = new TokenCounter(provider, 'gpt-4o');
    const samples: number[] = [];
    let tokens = 0;
    for (let i = 0; i < 50; i++) {
      const t0 = performance.now();
      const b = planBudget(counter, provider, 'gpt-4o', messages, tools);
      samples.push(performance.now() - t0);
      tokens = b.conversationTokens + b.toolTokens;
    }
    samples.sort((a, b) => a - b);
    console.log(`  ${label.padEnd(34)} ${percentile(samples, 50).toFixed(2)} ms for ${tokens} tokens`);
  };
  console.log('\nToken counting: 100 messages + 60 tool definitions, median of 50');
  time(estimating, 'estimate (chars / 3.5)');
  try {
    const { encode } = await import('gpt-tokenizer/encoding/o200k_base');
    const exact: ModelProvider = { ...estimating, countTokens: (text: string) => encode(text, { disallowedSpecial: new Set() }).length };
    time(exact, 'o200k_base tokenizer (gpt-tokenizer)');
  } catch (err) {
    console.log(`  exact tokenizer unavailable: ${(err as Error).message}`);
  }
}
