/**
 * The five writes. Each one: `assess` refuses before anyone is asked (feature off, vault missing,
 * a ref or element that does not exist, a card's text, an entity that does not exist); `preview`
 * shows what will be added, moved, restyled or deleted; `run` computes the change again from the file
 * as it is now, refuses if it changed since the caller's read or the preview, and writes atomically.
 */
import { mkdir } from 'node:fs/promises';
import * as path from 'node:path';
import { MemoError, type Concern, type Preview, type ToolContext } from 'memo-kernel/pack';
import { addCards, cardElements, draw, edit, removeElements, type Change, type Skeleton } from './drawing.js';
import {
  calendarService,
  canvasPath,
  canvasVault,
  checkVersion,
  loadCanvas,
  rememberPreview,
  saveCanvas,
  sizeWarning,
  type LoadedCanvas,
  type VaultEntities,
} from './runtime.js';
import { render } from './render.js';
import { cardOf, emptyScene, labelOf, live, textOf, type CardRef, type El, type SceneFile } from './scene.js';
import type { ToolArgs } from './tool-args.js';

type Args<K extends keyof ToolArgs> = ToolArgs[K];

/** The largest drawing a preview carries as an image (an SVG with its fonts subset in). */
const MAX_PREVIEW_IMAGE_BYTES = 512 * 1024;

/**
 * A preview with the scene as it would look, rendered by the pack's own renderer as an SVG data:
 * URL (the web console shows it as an image; a terminal shows the text). A drawing that cannot be
 * rendered, or is too large, gives the text alone: the image is a help, never a condition.
 */
async function withImage(preview: Preview, scene: SceneFile): Promise<Preview> {
  try {
    // A picture for the question, not a condition of it: 10 s at most, then the text alone.
    const r = await render(scene, { format: 'svg', padding: 16 }, AbortSignal.timeout(10_000));
    if (r.data.length > MAX_PREVIEW_IMAGE_BYTES) return preview;
    const shown: Preview & { image: string } = { ...preview, image: `data:image/svg+xml;base64,${r.data.toString('base64')}` };
    return shown;
  } catch {
    return preview;
  }
}

const quote = (s: string, max = 60) => JSON.stringify(s.length > max ? s.slice(0, max - 1) + '…' : s);

/** `rectangle "Start" (id)`: how an element is named in previews. */
function named(el: El, byId: ReadonlyMap<string, El>): string {
  const label = el.type === 'text' ? el : labelOf(el, byId);
  const card = cardOf(el);
  const what = card ? `card for ${card.type} ${card.id}` : el.type;
  return `${what}${label ? ' ' + quote(textOf(label)) : ''} (${el.id})`;
}

/** Loads the canvas a write works on and checks it is the one the caller read and the person saw. */
async function target(ctx: ToolContext, canvas: string, version: string | undefined): Promise<{ vault: VaultEntities; c: LoadedCanvas }> {
  const vault = await canvasVault(ctx);
  const c = await loadCanvas(ctx, vault, canvas, 'write');
  checkVersion(ctx, c, version);
  return { vault, c };
}

// ---------------------------------------------------------------------------------------------
// vault_create_canvas

async function newCanvasFile(ctx: ToolContext, name: string) {
  const vault = await canvasVault(ctx);
  const loc = await vault.location(ctx);
  const rel = canvasPath(name);
  const file = path.posix.join(loc.folder.split(path.sep).join('/'), rel);
  const resolved = await ctx.sandbox.resolve(file, 'write');
  if (resolved.exists) throw new MemoError('CONFLICT', `A canvas ${rel} already exists in the vault.`, { details: { canvas: rel } });
  return { rel, file, resolved };
}

export const createCanvas = {
  assess: async (args: Args<'vault_create_canvas'>, ctx: ToolContext): Promise<Concern | null> => {
    await newCanvasFile(ctx, args.name);
    return null;
  },
  preview: async (args: Args<'vault_create_canvas'>, ctx: ToolContext): Promise<Preview> => {
    const f = await newCanvasFile(ctx, args.name);
    return { kind: 'fields', text: `canvas: ${f.rel}\nfile: ${f.file}\ncontent: an empty Excalidraw scene` };
  },
  run: async (args: Args<'vault_create_canvas'>, ctx: ToolContext) => {
    const f = await newCanvasFile(ctx, args.name);
    await mkdir(path.dirname(f.resolved.real), { recursive: true });
    // Resolved again now that the folder exists, so the write goes where the sandbox checked.
    const resolved = await ctx.sandbox.resolve(f.file, 'write');
    const saved = await saveCanvas({ name: f.rel, resolved, version: 'absent' }, emptyScene());
    return { canvas: f.rel, path: f.file, version: saved.version };
  },
};

// ---------------------------------------------------------------------------------------------
// vault_add_canvas_item

/** One item of vault_add_canvas_item (validated against the manifest's schema before the handler runs). */
interface ItemArgs {
  type: 'note' | 'task' | 'event';
  id: string;
  x?: number;
  y?: number;
  backgroundColor?: string;
  strokeColor?: string;
}

/** Each item checked against the pack that owns it; the card's text is the entity's title. */
async function resolveItems(ctx: ToolContext, vault: VaultEntities, items: readonly ItemArgs[]) {
  const out = [];
  for (const [i, it] of items.entries()) {
    let found: { id: string; title: string } | null;
    if (it.type === 'event') found = await calendarService(ctx).getEvent(ctx, it.id);
    else found = await vault.find(ctx, it.type, it.id);
    if (!found)
      throw new MemoError('NOT_FOUND', `items[${i}]: there is no ${it.type} "${it.id}", so no card was made.`, { details: { type: it.type, id: it.id } });
    out.push({ ...it, id: found.id, title: found.title || '(untitled)' });
  }
  return out;
}

async function planAdd(args: Args<'vault_add_canvas_item'>, ctx: ToolContext) {
  const { vault, c } = await target(ctx, args.canvas, args.version);
  const items = await resolveItems(ctx, vault, args.items as ItemArgs[]);
  const r = await addCards(c.scene, items);
  return { c, items, r };
}

export const addCanvasItem = {
  assess: async (args: Args<'vault_add_canvas_item'>, ctx: ToolContext): Promise<Concern | null> => {
    await planAdd(args, ctx);
    return null;
  },
  preview: async (args: Args<'vault_add_canvas_item'>, ctx: ToolContext): Promise<Preview> => {
    const { c, r } = await planAdd(args, ctx);
    rememberPreview(ctx, c);
    return { kind: 'text', text: [`Adds to ${c.name}:`, ...r.added.map((a) => `+ card for ${a.type} ${a.id} ${quote(a.title)}`)].join('\n') };
  },
  run: async (args: Args<'vault_add_canvas_item'>, ctx: ToolContext) => {
    const { c, r } = await planAdd(args, ctx);
    const saved = await saveCanvas(c, { ...c.scene, elements: r.elements });
    return { canvas: c.name, version: saved.version, added: r.added, ...sizeWarning(saved.bytes) };
  },
};

// ---------------------------------------------------------------------------------------------
// vault_remove_canvas_item

async function planRemove(args: Args<'vault_remove_canvas_item'>, ctx: ToolContext) {
  const { vault, c } = await target(ctx, args.canvas, args.version);
  let cards: El[];
  if (args.elementId !== undefined) {
    const el = live(c.scene.elements).find((e) => e.id === args.elementId);
    if (!el) throw new MemoError('NOT_FOUND', `There is no element "${args.elementId}" on ${c.name}.`);
    if (!cardOf(el)) throw new MemoError('VALIDATION', `"${args.elementId}" is not a card; delete drawn elements with vault_edit_canvas_elements.`);
    cards = [el];
  } else if (args.type !== undefined && args.id !== undefined) {
    const type = args.type;
    cards = cardElements(c.scene, { type, id: args.id });
    if (!cards.length && type !== 'event') {
      // A note may be named by path or title, a task by title: the card stores the id.
      const found = await vault.find(ctx, type, args.id);
      if (found) cards = cardElements(c.scene, { type, id: found.id });
    }
    if (!cards.length) throw new MemoError('NOT_FOUND', `There is no card for ${type} "${args.id}" on ${c.name}.`);
  } else throw new MemoError('VALIDATION', 'Say which card: type and id, or elementId.');
  const byId = new Map(live(c.scene.elements).map((e) => [e.id, e]));
  const arrows = cards.flatMap((e) => (e.boundElements ?? []).filter((b) => b.type === 'arrow').map((b) => b.id));
  return { c, cards, byId, arrows };
}

export const removeCanvasItem = {
  assess: async (args: Args<'vault_remove_canvas_item'>, ctx: ToolContext): Promise<Concern | null> => {
    await planRemove(args, ctx);
    return null;
  },
  preview: async (args: Args<'vault_remove_canvas_item'>, ctx: ToolContext): Promise<Preview> => {
    const { c, cards, byId, arrows } = await planRemove(args, ctx);
    rememberPreview(ctx, c);
    const lines = [`Takes off ${c.name}:`, ...cards.map((e) => `- ${named(e, byId)}`)];
    lines.push(`The ${cards.map((e) => cardOf(e)!.type).join(', ')} itself is not touched.`);
    if (arrows.length) lines.push(`${arrows.length} arrow${arrows.length === 1 ? '' : 's'} bound to it stay${arrows.length === 1 ? 's' : ''}, unbound.`);
    return { kind: 'delete', text: lines.join('\n') };
  },
  run: async (args: Args<'vault_remove_canvas_item'>, ctx: ToolContext) => {
    const { c, cards } = await planRemove(args, ctx);
    const elements = await removeElements(
      c.scene,
      cards.map((e) => e.id),
    );
    const saved = await saveCanvas(c, { ...c.scene, elements });
    return { canvas: c.name, version: saved.version, removed: cards.map((e) => ({ ...(cardOf(e) as CardRef), elementId: e.id })) };
  },
};

// ---------------------------------------------------------------------------------------------
// vault_draw_on_canvas

async function planDraw(args: Args<'vault_draw_on_canvas'>, ctx: ToolContext) {
  const { c } = await target(ctx, args.canvas, args.version);
  return { c, r: await draw(c.scene, args.elements as Skeleton[]) };
}

export const drawOnCanvas = {
  assess: async (args: Args<'vault_draw_on_canvas'>, ctx: ToolContext): Promise<Concern | null> => {
    await planDraw(args, ctx);
    return null;
  },
  preview: async (args: Args<'vault_draw_on_canvas'>, ctx: ToolContext): Promise<Preview> => {
    const { c, r } = await planDraw(args, ctx);
    rememberPreview(ctx, c);
    // A frame's name is where a person reads which frame it is.
    const frameName = (id: string) => (r.elements.find((e) => e.id === id) as { name?: unknown } | undefined)?.name;
    const name = (id: string) => {
      const a = r.added.find((x) => x.id === id);
      const fn = frameName(id);
      if (a) return a.ref ? `ref ${a.ref}` : typeof fn === 'string' && fn ? `${a.type} ${quote(fn)}` : a.type;
      const el = c.scene.elements.find((e) => e.id === id);
      return el ? named(el, new Map(c.scene.elements.map((e) => [e.id, e]))) : id;
    };
    const lines = r.added.map((a) => {
      const fn = frameName(a.id);
      const label = a.text ?? (typeof fn === 'string' && fn ? fn : undefined);
      let line = `+ ${a.type}${a.ref ? ` [${a.ref}]` : ''}${label ? ' ' + quote(label) : ''}`;
      if (a.start || a.end) line += ` from ${a.start ? name(a.start) : '(free)'} to ${a.end ? name(a.end) : '(free)'}`;
      if (a.frame) line += ` in frame ${name(a.frame)}`;
      return line;
    });
    return withImage({ kind: 'text', text: [`Draws on ${c.name}:`, ...lines].join('\n') }, { ...c.scene, elements: r.elements });
  },
  run: async (args: Args<'vault_draw_on_canvas'>, ctx: ToolContext) => {
    const { c, r } = await planDraw(args, ctx);
    const saved = await saveCanvas(c, { ...c.scene, elements: r.elements });
    return { canvas: c.name, version: saved.version, refs: r.refs, added: r.added, ...sizeWarning(saved.bytes) };
  },
};

// ---------------------------------------------------------------------------------------------
// vault_edit_canvas_elements

async function planEdit(args: Args<'vault_edit_canvas_elements'>, ctx: ToolContext) {
  const { c } = await target(ctx, args.canvas, args.version);
  return { c, r: await edit(c.scene, args.changes as Change[]) };
}

export const editCanvasElements = {
  assess: async (args: Args<'vault_edit_canvas_elements'>, ctx: ToolContext): Promise<Concern | null> => {
    const { r } = await planEdit(args, ctx);
    // A delete is asked every time, like every delete, even though the tool is a write.
    if (r.deleted.length)
      return { verdict: 'ask', rule: 'canvas-delete', reason: `This deletes ${r.deleted.length} element${r.deleted.length === 1 ? '' : 's'} from the canvas.` };
    return null;
  },
  preview: async (args: Args<'vault_edit_canvas_elements'>, ctx: ToolContext): Promise<Preview> => {
    const { c, r } = await planEdit(args, ctx);
    rememberPreview(ctx, c);
    const byId = new Map(live(c.scene.elements).map((e) => [e.id, e]));
    const el = (id: string) => (byId.get(id) ? named(byId.get(id)!, byId) : id);
    const pt = (p: [number, number]) => `(${Math.round(p[0])}, ${Math.round(p[1])})`;
    const lines = [
      ...r.moved.map((m) => `move ${el(m.id)} from ${pt(m.from)} to ${pt(m.to)}`),
      ...r.resized.map((m) => `resize ${el(m.id)} from ${pt(m.from)} to ${pt(m.to)}`),
      ...r.restyled.map((m) => `restyle ${el(m.id)}: ${m.fields.join(', ')}`),
      ...r.retexted.map((m) => `retext ${el(m.id)}: ${quote(m.from)} -> ${quote(m.to)}`),
      ...r.deleted.map((d) => `delete ${el(d.id)}`),
    ];
    const follow = new Set([...r.moved, ...r.resized].flatMap((m) => (byId.get(m.id)?.boundElements ?? []).filter((b) => b.type === 'arrow').map((b) => b.id)));
    if (follow.size) lines.push(`${follow.size} bound arrow${follow.size === 1 ? '' : 's'} follow${follow.size === 1 ? 's' : ''}.`);
    return { kind: r.deleted.length ? 'delete' : 'text', text: [`Changes on ${c.name}:`, ...lines].join('\n') };
  },
  run: async (args: Args<'vault_edit_canvas_elements'>, ctx: ToolContext) => {
    const { c, r } = await planEdit(args, ctx);
    const saved = await saveCanvas(c, { ...c.scene, elements: r.elements });
    return {
      canvas: c.name,
      version: saved.version,
      moved: r.moved.map((m) => m.id),
      resized: r.resized.map((m) => m.id),
      restyled: r.restyled.map((m) => m.id),
      retexted: r.retexted.map((m) => m.id),
      deleted: r.deleted.map((d) => d.id),
    };
  },
};
