/**
 * The built-in `canvas` pack: Excalidraw canvases (.excalidraw files in the vault folder) an agent
 * can read, draw on with real bindings, and edit safely (seed 003, "Canvas" and "Drawing"). It finds
 * the vault, notes and tasks through `vault.entities` and events through `calendar.events`, offered
 * by those packs through the kernel; it never imports them.
 */
import { defineTools, type Concern, type Disposable, type ItemRef, type JsonValue, type PackApi, type Preview, type ToolContext } from 'memo-kernel/pack';
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

/** The canvases a result names (seed 003: linked items): a listing's canvases, or the one a read or a write was about. */
function canvasItems(value: JsonValue): ItemRef[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return [];
  const names = Array.isArray(value.canvases)
    ? value.canvases.map((c) => (typeof c === 'object' && c !== null && !Array.isArray(c) && !c.error ? c.name : null))
    : [value.canvas];
  return names.filter((n): n is string => typeof n === 'string' && n !== '').map((n) => ({ type: 'canvas', id: n, title: n.replace(/\.excalidraw$/, '') }));
}

const linked = <T extends object>(impl: T) => ({ ...impl, items: canvasItems });

export const tools = defineTools<ToolArgs>({
  vault_list_canvases: linked({ run: async (args: ToolArgs['vault_list_canvases'], ctx: ToolContext) => (await reads()).listCanvases(args, ctx) }),
  vault_read_canvas: linked({ run: async (args: ToolArgs['vault_read_canvas'], ctx: ToolContext) => (await reads()).readCanvas(args, ctx) }),
  vault_read_canvas_elements: linked({
    run: async (args: ToolArgs['vault_read_canvas_elements'], ctx: ToolContext) => (await reads()).readCanvasElements(args, ctx),
  }),
  vault_render_canvas: linked({ run: async (args: ToolArgs['vault_render_canvas'], ctx: ToolContext) => (await reads()).renderCanvas(args, ctx) }),
  vault_create_canvas: linked(write('createCanvas')),
  vault_add_canvas_item: linked(write('addCanvasItem')),
  vault_remove_canvas_item: linked(write('removeCanvasItem')),
  vault_draw_on_canvas: linked(write('drawOnCanvas')),
  vault_edit_canvas_elements: linked(write('editCanvasElements')),
});

export function activate(api: PackApi): Disposable {
  const unregister = register(api);
  api.commands.register(canvasCommand);
  return { dispose: unregister };
}
