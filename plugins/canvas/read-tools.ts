/**
 * The three reads, for the seed's two questions: "what is on this canvas" (vault_read_canvas: the
 * entities and the text, no geometry, capped) and "where is everything" (vault_read_canvas_elements:
 * ids, positions, bindings; the read to use before drawing). Both return the canvas' version, which a
 * following write passes back so it is refused if the canvas changed in between.
 */
import type { ToolContext } from 'memo-kernel/pack';
import { canvasVault, listCanvasFiles, loadCanvas, optionalCalendar, sizeWarning, type VaultEntities } from './runtime.js';
import { cardOf, describe, labelOf, live, textOf, type CardRef, type El } from './scene.js';
import type { ToolArgs } from './tool-args.js';

export async function listCanvases(_args: ToolArgs['vault_list_canvases'], ctx: ToolContext) {
  const vault = await canvasVault(ctx);
  const loc = await vault.location(ctx);
  const canvases = [];
  for (const name of await listCanvasFiles(ctx, loc)) {
    try {
      const c = await loadCanvas(ctx, vault, name, 'read');
      const els = live(c.scene.elements);
      canvases.push({ name: c.name, items: els.filter((e) => cardOf(e)).length, elements: els.filter((e) => !e.containerId).length, version: c.version });
    } catch (err) {
      canvases.push({ name, error: (err as Error).message });
    }
  }
  return { vault: loc.folder, canvases };
}

/**
 * The entity's title now, from the pack that owns it: a card's text is the title when it was put on
 * the canvas, and the note may have been renamed since. `missing` when it no longer exists; undefined
 * when its pack cannot say (not loaded), and the card's text stands.
 */
async function currentTitle(ctx: ToolContext, vault: VaultEntities, card: CardRef): Promise<string | null | undefined> {
  try {
    if (card.type === 'event') {
      const events = optionalCalendar(ctx);
      if (!events) return undefined;
      return (await events.getEvent(ctx, card.id))?.title ?? null;
    }
    return (await vault.find(ctx, card.type, card.id))?.title ?? null;
  } catch {
    return undefined;
  }
}

export async function readCanvas(args: ToolArgs['vault_read_canvas'], ctx: ToolContext) {
  const vault = await canvasVault(ctx);
  const c = await loadCanvas(ctx, vault, args.canvas, 'read');
  const els = live(c.scene.elements);
  const byId = new Map(els.map((e) => [e.id, e]));
  const items = [];
  const cardTexts = new Set<string>();
  for (const e of els) {
    const card = cardOf(e);
    if (!card) continue;
    const label = labelOf(e, byId);
    if (label) cardTexts.add(label.id);
    const now = await currentTitle(ctx, vault, card);
    items.push({ ...card, title: now ?? (label ? textOf(label) : ''), elementId: e.id, ...(now === null ? { missing: true } : {}) });
  }
  // Free text and labels, in drawing order, until the cap; frame names are text too.
  const limit = args.maxTextChars ?? 4000;
  let used = 0;
  let truncated = false;
  const texts: Array<{ text: string; on?: string; frame?: string }> = [];
  const push = (text: string, extra: { on?: string; frame?: string }) => {
    if (!text.trim()) return;
    if (used + text.length > limit) {
      truncated = true;
      const room = limit - used;
      if (room > 20) texts.push({ text: text.slice(0, room) + '…', ...extra });
      used = limit;
      return;
    }
    used += text.length;
    texts.push({ text, ...extra });
  };
  for (const e of els) {
    if (truncated) break;
    if (e.type === 'frame' && e.name) push(e.name, { frame: e.id });
    if (e.type !== 'text' || cardTexts.has(e.id)) continue;
    const container: El | undefined = e.containerId ? byId.get(e.containerId) : undefined;
    push(textOf(e), container ? { on: container.type } : {});
  }
  return { canvas: c.name, version: c.version, items, texts, texts_truncated: truncated, ...sizeWarning(c.bytes) };
}

export async function readCanvasElements(args: ToolArgs['vault_read_canvas_elements'], ctx: ToolContext) {
  const c = await loadCanvas(ctx, await canvasVault(ctx), args.canvas, 'read');
  const els = live(c.scene.elements);
  const byId = new Map(els.map((e) => [e.id, e]));
  // A label is shown on its shape (text + labelId), not as an element of its own.
  let shown = els.filter((e) => !(e.type === 'text' && e.containerId && byId.has(e.containerId)));
  if (args.ids) {
    const want = new Set(args.ids);
    shown = els.filter((e) => want.has(e.id));
  }
  const limit = args.limit ?? 500;
  return {
    canvas: c.name,
    version: c.version,
    elements: shown.slice(0, limit).map((e) => describe(e, byId)),
    truncated: shown.length > limit,
    files: Object.keys(c.scene.files),
    ...sizeWarning(c.bytes),
  };
}

export async function renderCanvas(args: ToolArgs['vault_render_canvas'], ctx: ToolContext) {
  const c = await loadCanvas(ctx, await canvasVault(ctx), args.canvas, 'read');
  const { render } = await import('./render.js');
  const format = args.format ?? 'svg';
  const r = await render(
    c.scene,
    {
      format,
      ...(args.scale !== undefined ? { scale: args.scale } : {}),
      ...(args.padding !== undefined ? { padding: args.padding } : {}),
      ...(args.background !== undefined ? { background: args.background } : {}),
    },
    ctx.signal,
  );
  return {
    canvas: c.name,
    version: c.version,
    format,
    width: r.width,
    height: r.height,
    bytes: r.data.length,
    ...(r.downscaled ? { downscaled: r.downscaled } : {}),
    data: format === 'svg' ? r.data.toString('utf8') : r.data.toString('base64'),
  };
}
