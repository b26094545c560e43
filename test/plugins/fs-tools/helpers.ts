import * as fs from 'node:fs';
import * as path from 'node:path';
import { makeKernel, type Fixture } from '../../helpers/kernel-fixture.js';
import type { ToolResult } from '../../../kernel/tools/contract.js';

export const PLUGINS = path.resolve('plugins');

export interface FsFixture extends Fixture {
  /** One call through the pipeline, as the agent would make it. */
  call(tool: string, args: Record<string, unknown>, onProgress?: (u: unknown) => void): Promise<ToolResult>;
  /** Absolute path inside the root. */
  at(rel: string): string;
}

/**
 * A real kernel with no code packs, the built-in packs loaded from `plugins/` (fs-tools among
 * them), and a prompter that allows once unless a test queues other answers.
 */
export async function fsKernel(options: Parameters<typeof makeKernel>[0] = {}): Promise<FsFixture> {
  const fx = makeKernel({ packs: [], ...options });
  const statuses = await fx.kernel.loadPacks([{ dir: PLUGINS, source: 'builtin' }]);
  const mine = statuses.find((s) => s.id === 'fs-tools');
  if (mine?.status !== 'loaded') throw new Error(`fs-tools did not load: ${mine?.error ?? 'not found'}`);
  fx.prompter.setFallback('allow-once');
  return Object.assign(fx, {
    call: (tool: string, args: Record<string, unknown>, onProgress?: (u: unknown) => void) =>
      fx.kernel.invoke({ tool, args, caller: { kind: 'agent' }, ...(onProgress ? { onProgress } : {}) }),
    at: (rel: string) => path.join(fx.root, rel),
  });
}

export function value(r: ToolResult): any {
  if (!r.ok) throw new Error(`expected success, got ${r.error.code}: ${r.error.message}`);
  return r.value;
}

export function error(r: ToolResult): { code: string; message: string } {
  if (r.ok) throw new Error(`expected an error, got ${JSON.stringify(r.value).slice(0, 300)}`);
  return r.error;
}

export function write(root: string, rel: string, content: string | Buffer): string {
  const p = path.join(root, rel);
  fs.mkdirSync(path.dirname(p), { recursive: true });
  fs.writeFileSync(p, content);
  return p;
}

/** Names in a folder that look like this pack's temporary files. */
export function tempFiles(dir: string): string[] {
  return fs.readdirSync(dir).filter((n) => n.endsWith('.tmp') && n.includes('.memo-'));
}
