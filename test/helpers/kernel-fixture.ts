import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createKernel, type Kernel, type KernelOptions } from '../../kernel/kernel.js';
import { ManualClock } from '../../kernel/clock.js';
import { MemoryLogger } from '../../kernel/logger.js';
import type { ApprovalReply, PermissionAnswer, PermissionRequest, Prompter } from '../../kernel/permissions/prompter.js';
import type { PackDefinition } from '../../kernel/tools/tool-registry.js';
import type { ToolSpec } from '../../kernel/tools/contract.js';
import { atTeardown, removeWhenDone } from './cleanup.js';

/** A new folder under the system temp folder, removed when the test file ends (see cleanup.ts). */
export function tempDir(prefix = 'memo-test-'): string {
  return removeWhenDone(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
}

/** A prompter that answers from a queue (or a function) and records what it was asked. */
export class ScriptedPrompter implements Prompter {
  readonly asked: PermissionRequest[] = [];
  private queue: Array<ApprovalReply | 'never'> = [];
  constructor(private fallback: PermissionAnswer | 'never' = 'deny-once') {}
  answer(...answers: Array<ApprovalReply | 'never'>): this {
    this.queue.push(...answers);
    return this;
  }
  setFallback(a: PermissionAnswer | 'never'): void {
    this.fallback = a;
  }
  ask(request: PermissionRequest, signal: AbortSignal): Promise<ApprovalReply> {
    this.asked.push(request);
    const a = this.queue.length ? this.queue.shift()! : this.fallback;
    if (a === 'never') {
      return new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('prompt withdrawn')), { once: true }));
    }
    return Promise.resolve(a);
  }
}

export function tool(name: string, danger: ToolSpec['danger'], effect: ToolSpec['effect'] = 'read', extra: Partial<ToolSpec> = {}): ToolSpec {
  return {
    name,
    description: `${name} for tests`,
    parameters: { type: 'object', properties: { text: { type: 'string' }, n: { type: 'integer', minimum: 0 } }, additionalProperties: false },
    danger,
    effect,
    ...extra,
  };
}

/** A pack with one tool per danger/effect combination; each echoes its arguments. */
export function echoPack(id = 'echo-pack'): PackDefinition {
  const echo = (args: Record<string, unknown>) => ({ echoed: args });
  return {
    id,
    version: '1.0.0',
    tools: [
      { spec: tool('echo_safe', 'safe'), impl: echo },
      { spec: tool('echo_medium', 'medium', 'write'), impl: echo },
      { spec: tool('echo_dangerous', 'dangerous', 'write'), impl: echo },
      { spec: tool('echo_delete', 'dangerous', 'delete'), impl: echo },
      { spec: tool('echo_confirm', 'medium', 'write', { confirm: 'always' }), impl: echo },
    ],
  };
}

export interface Fixture {
  kernel: Kernel;
  clock: ManualClock;
  prompter: ScriptedPrompter;
  logger: MemoryLogger;
  root: string;
  dataDir: string;
  restart(extra?: Partial<KernelOptions>): Promise<Fixture>;
  close(): Promise<void>;
}

export function makeKernel(options: Partial<KernelOptions> & { dataDir?: string; root?: string } = {}): Fixture {
  const root = options.root ?? tempDir('memo-root-');
  const dataDir = options.dataDir ?? path.join(tempDir('memo-data-'), 'data');
  const clock = (options.clock as ManualClock | undefined) ?? new ManualClock();
  // `prompter: null` makes a kernel with no face (requests wait in the broker); fx.prompter is then never asked.
  const noFace = options.prompter === null;
  const prompter = (options.prompter as ScriptedPrompter | null | undefined) ?? new ScriptedPrompter();
  const logger = new MemoryLogger();
  const kernel = createKernel({
    packs: [echoPack()],
    rateLimits: { maxCalls: 0, duplicateCooldownMs: 0 },
    ...options,
    root,
    dataDir,
    clock,
    prompter: noFace ? null : prompter,
    logger,
  });
  const fx: Fixture = {
    kernel,
    clock,
    prompter,
    logger,
    root,
    dataDir,
    async restart(extra = {}) {
      await kernel.shutdown();
      return makeKernel({ ...options, root, dataDir, clock, prompter: noFace ? null : prompter, ...extra });
    },
    close: () => kernel.shutdown(),
  };
  // A kernel a test leaves open is shut down before its folders are removed (shutdown is
  // idempotent). Held weakly: a file that makes hundreds of kernels does not keep them all alive.
  const ref = new WeakRef(kernel);
  atTeardown(() => ref.deref()?.shutdown());
  return fx;
}

/** Lets promise callbacks run (the fake clock does not wait for them). */
export async function flush(times = 5): Promise<void> {
  for (let i = 0; i < times; i++) await new Promise((r) => setImmediate(r));
}
