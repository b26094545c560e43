import * as fs from 'node:fs';
import * as path from 'node:path';
import { makeKernel, type Fixture } from '../../helpers/kernel-fixture.js';
import type { ToolResult } from '../../../kernel/tools/contract.js';

export const PLUGINS = path.resolve('plugins');

export interface CanvasFixture extends Fixture {
  /** The vault folder (root/vault). */
  vault: string;
  call(tool: string, args: Record<string, unknown>): Promise<ToolResult>;
  put(rel: string, content: string): string;
  read(rel: string): string;
  /** A canvas file parsed. */
  scene(rel: string): { type: string; version: number; elements: any[]; appState: any; files: any };
}

/**
 * A real kernel with the vault and canvas packs (and the calendar, when asked) loaded from `plugins/`, a vault folder `vault/` in a
 * temp root, and a prompter that allows once unless a test queues other answers.
 */
export async function canvasKernel(options: { files?: Record<string, string>; calendar?: boolean } = {}): Promise<CanvasFixture> {
  const fx = makeKernel({ packs: [] });
  const only = ['vault', 'canvas', ...(options.calendar ? ['calendar'] : [])];
  const statuses = await fx.kernel.loadPacks([{ dir: PLUGINS, source: 'builtin', only }]);
  for (const id of only) {
    const s = statuses.find((x) => x.id === id);
    if (s?.status !== 'loaded') throw new Error(`${id} did not load: ${s?.error ?? 'not found'}`);
  }
  fx.kernel.packs.setConfig('vault', { watch: false });
  if (options.calendar) fx.kernel.packs.setConfig('calendar', { timeZone: 'UTC' });
  fx.prompter.setFallback('allow-once');
  const vault = path.join(fx.root, 'vault');
  fs.mkdirSync(vault);
  const put = (rel: string, content: string) => {
    const p = path.join(vault, rel);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, content);
    return p;
  };
  for (const [rel, content] of Object.entries(options.files ?? {})) put(rel, content);
  const read = (rel: string) => fs.readFileSync(path.join(vault, rel), 'utf8');
  return Object.assign(fx, {
    vault,
    put,
    read,
    scene: (rel: string) => JSON.parse(read(rel)),
    call: (tool: string, args: Record<string, unknown>) => fx.kernel.invoke({ tool, args, caller: { kind: 'agent' } }),
  });
}

export function value(r: ToolResult): any {
  if (!r.ok) throw new Error(`expected success, got ${r.error.code}: ${r.error.message}`);
  return r.value;
}

export function error(r: ToolResult): { code: string; message: string; details?: any } {
  if (r.ok) throw new Error(`expected an error, got ${JSON.stringify(r.value).slice(0, 300)}`);
  return r.error;
}

/**
 * Loads Excalidraw's renderer with a render of a throwaway canvas (`Warm`). A drawing's approval
 * preview renders within 10 s or carries the text alone, by design; the first render also loads the
 * renderer, which a busy machine can take longer over. Tests of the preview's image call this first,
 * so they check the image, not the machine's speed. Clears what the prompter was asked.
 */
export async function warmRenderer(fx: CanvasFixture): Promise<void> {
  const warm = value(await fx.call('vault_create_canvas', { name: 'Warm' }));
  value(await fx.call('vault_draw_on_canvas', { canvas: 'Warm', version: warm.version, elements: [{ type: 'ellipse', x: 0, y: 0, width: 10, height: 10 }] }));
  value(await fx.call('vault_render_canvas', { canvas: 'Warm', format: 'svg' }));
  fx.prompter.asked.length = 0;
}
