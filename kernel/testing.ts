/**
 * Pack authors' test helper (`memo-kernel/testing`): a real kernel on temporary folders with the
 * given pack folders loaded, calls made through the one pipeline (schema check, permission gate,
 * audit), and permission questions answered the way the test says.
 *
 *   const t = await createTestKernel({ packs: [packDir], answer: 'allow-once' });
 *   const r = await t.call('say_hello', { name: 'Ada' });
 *   await t.close();
 *
 * @module memo-kernel/testing
 */
import './third-party-globals.js';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createKernel, type Kernel } from './kernel.js';
import type { Logger } from './logger.js';
import type { PackFolder } from './packs/pack-loader.js';
import type { PermissionAnswer, PermissionRequest, Prompter } from './permissions/prompter.js';
import type { RateLimitOptions } from './rate-limit/rate-limiter.js';
import type { Caller, ToolResult } from './tools/contract.js';

export { NO_RATE_LIMITS } from './rate-limit/rate-limiter.js';
export type { PermissionAnswer, PermissionRequest, RateLimitOptions, ToolResult };

export interface TestKernelOptions {
  /** Pack folders (each holds a plugin.json) to load. A pack that fails to load fails createTestKernel, with the reason. */
  packs: string[];
  /** How permission questions are answered: one answer for all, or a function of the question. Default `deny-once`. */
  answer?: PermissionAnswer | ((request: PermissionRequest) => PermissionAnswer | Promise<PermissionAnswer>);
  /** The sandbox root. Default: a new empty temporary folder (removed at close). */
  root?: string;
  /** Settings per pack id, as `memo plugins config` would store them (checked against the pack's `config` schema). */
  config?: Record<string, Record<string, unknown>>;
  /**
   * The rate limits, as `createKernel` takes them. Default: the kernel's own (30 calls a minute per
   * caller, and the same call repeated within 5 s refused with RATE_LIMITED); `NO_RATE_LIMITS` turns
   * them off for a test that makes many identical calls.
   */
  rateLimits?: Partial<RateLimitOptions>;
}

export interface TestKernel {
  kernel: Kernel;
  /** The sandbox root. */
  root: string;
  /** The kernel's data folder (temporary, removed at close). */
  dataDir: string;
  /** Every permission question asked so far. */
  asked: PermissionRequest[];
  /** Calls a tool through the pipeline, as the CLI would (`caller` overrides). Never throws for a tool's failure: see `ok`. */
  call(tool: string, args?: unknown, caller?: Caller): Promise<ToolResult>;
  /** Shuts the kernel down and removes the temporary folders. */
  close(): Promise<void>;
}

/** Warnings are kept (a failed load is reported through createTestKernel's error), not printed. */
class QuietLogger implements Logger {
  readonly warnings: string[] = [];
  info(): void {}
  warn(message: string): void {
    this.warnings.push(message);
  }
  error(message: string): void {
    this.warnings.push(message);
  }
}

export async function createTestKernel(options: TestKernelOptions): Promise<TestKernel> {
  const temp = fs.mkdtempSync(path.join(os.tmpdir(), 'memo-pack-test-'));
  const remove = () => fs.rmSync(temp, { recursive: true, force: true });
  const dataDir = path.join(temp, 'data');
  const root = options.root ? path.resolve(options.root) : path.join(temp, 'root');
  fs.mkdirSync(dataDir, { recursive: true });
  fs.mkdirSync(root, { recursive: true });
  if (options.config) {
    const packs = Object.fromEntries(Object.entries(options.config).map(([id, config]) => [id, { config }]));
    fs.writeFileSync(path.join(dataDir, 'packs.json'), JSON.stringify({ version: 1, packs }, null, 2));
  }
  const asked: PermissionRequest[] = [];
  const answer = options.answer ?? 'deny-once';
  const prompter: Prompter = {
    ask: async (request) => {
      asked.push(request);
      return typeof answer === 'function' ? answer(request) : answer;
    },
  };
  let kernel: Kernel;
  try {
    kernel = createKernel({ root, dataDir, prompter, logger: new QuietLogger(), ...(options.rateLimits ? { rateLimits: options.rateLimits } : {}) });
  } catch (err) {
    remove();
    throw err;
  }
  const close = async () => {
    await kernel.shutdown();
    remove();
  };
  // A folder per pack's parent, loading only that pack: its siblings stay out.
  const folders: PackFolder[] = options.packs.map((dir) => {
    const abs = path.resolve(dir);
    return { dir: path.dirname(abs), source: 'extra', only: [path.basename(abs)] };
  });
  try {
    const states = await kernel.loadPacks(folders);
    const missing = options.packs.filter((dir) => !states.some((s) => s.dir === path.resolve(dir)));
    const failed = states.filter((s) => s.status === 'failed').map((s) => `pack ${s.id} (${s.dir}) did not load: ${s.error}`);
    for (const dir of missing) failed.push(`${dir} is not a pack folder (it does not exist, or is not a folder)`);
    if (failed.length) throw new Error(failed.join('\n'));
  } catch (err) {
    await close();
    throw err;
  }
  return {
    kernel,
    root,
    dataDir,
    asked,
    call: (tool, args = {}, caller = { kind: 'cli' }) => kernel.invoke({ tool, args, caller }),
    close,
  };
}
