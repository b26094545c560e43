/**
 * The built-in `canvas` pack: Excalidraw canvases (.excalidraw files in the vault folder) an agent
 * can read, draw on with real bindings, and edit safely (seed 003, "Canvas" and "Drawing"). It finds
 * the vault, notes and tasks through `vault.entities` and events through `calendar.events`, offered
 * by those packs through the kernel; it never imports them.
 */
import { defineTools, type Concern, type Disposable, type PackApi, type Preview } from 'memo-kernel/pack';
import { canvasCommand } from './commands.js';
import { register } from './runtime.js';
import type { ToolArgs } from './tool-args.js';

// Excalidraw's code loads on the first call that draws or renders, not when the pack loads.
const reads = () => import('./read-tools.js');
const writes = () => import('./write-tools.js');

type Writes = Awaited<ReturnType<typeof writes>>;
type WriteName = 'createCanvas' | 'addCanvasItem' | 'removeCanvasItem' | 'drawOnCanvas' | 'editCanvasElements';

/** A write tool whose code loads on first use: assess, preview and run delegate to write-tools.ts. */
function write<K extends WriteName>(name: K) {
  type A = Parameters<Writes[K]['run']>[0];
  type C = Parameters<Writes[K]['run']>[1];
  const get = async () =>
    (await writes())[name] as unknown as {
      assess(a: A, c: C): Promise<Concern | null>;
      preview(a: A, c: C): Promise<Preview>;
      run(a: A, c: C): Promise<unknown>;
    };
  return {
    assess: async (args: A, ctx: C) => (await get()).assess(args, ctx),
    preview: async (args: A, ctx: C) => (await get()).preview(args, ctx),
    run: async (args: A, ctx: C) => (await get()).run(args, ctx),
  };
}

export const tools = defineTools<ToolArgs>({
  vault_list_canvases: async (args, ctx) => (await reads()).listCanvases(args, ctx),
  vault_read_canvas: async (args, ctx) => (await reads()).readCanvas(args, ctx),
  vault_read_canvas_elements: async (args, ctx) => (await reads()).readCanvasElements(args, ctx),
  vault_render_canvas: async (args, ctx) => (await reads()).renderCanvas(args, ctx),
  vault_create_canvas: write('createCanvas'),
  vault_add_canvas_item: write('addCanvasItem'),
  vault_remove_canvas_item: write('removeCanvasItem'),
  vault_draw_on_canvas: write('drawOnCanvas'),
  vault_edit_canvas_elements: write('editCanvasElements'),
});

export function activate(api: PackApi): Disposable {
  const unregister = register(api);
  api.commands.register(canvasCommand);
  return { dispose: unregister };
}
