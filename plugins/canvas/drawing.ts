/**
 * Changes to a scene, made with Excalidraw's own functions: skeletons become elements through
 * `convertToExcalidrawElements`, arrows are bound with `bindBindingElement` (the arrow's
 * start/endBinding and the shape's boundElements: both sides), endpoints are routed onto the shapes'
 * outlines by `updateBoundElements` (what the editor runs when a shape is dragged), frames take
 * children with `addElementsToFrame`, and fractional indices are repaired with `syncInvalidIndices`.
 * Our code only decides what to ask for and checks what an agent may not do.
 */
import { MemoError } from 'memo-kernel/pack';
import { excalidraw, withWindow, type Excalidraw, type ExScene } from './excalidraw-node.js';
import { cardOf, labelOf, live, newId, textOf, type CardRef, type El, type SceneFile } from './scene.js';

/** An end of an arrow: something drawn in the same call, or an element already on the canvas. */
type End = { ref: string } | { elementId: string };

/** One element as vault_draw_on_canvas takes it (Excalidraw's skeleton, in camelCase, plus ref/start/end/children). */
export interface Skeleton {
  type: string;
  ref?: string;
  start?: End;
  end?: End;
  children?: End[];
  [key: string]: unknown;
}

export interface DrawResult {
  elements: El[];
  refs: Record<string, string>;
  added: Array<{ id: string; type: string; ref?: string; text?: string; start?: string; end?: string; frame?: string }>;
}

const BINDABLE = new Set(['rectangle', 'ellipse', 'diamond', 'text', 'image', 'frame', 'magicframe', 'embeddable', 'iframe']);
const SHAPES_WITH_LABEL = new Set(['rectangle', 'ellipse', 'diamond', 'arrow']);

function invalid(message: string, details?: Record<string, unknown>): MemoError {
  return new MemoError('VALIDATION', message, details ? { details } : {});
}

const where = (i: number, s: Skeleton) => `elements[${i}] (${s.ref ? `ref "${s.ref}"` : s.type})`;

/** Turns `{ref}` / `{elementId}` into an element id, or explains what is wrong. */
function endId(end: End, refs: ReadonlyMap<string, string>, existing: ReadonlyMap<string, El>, at: string): string {
  if ('ref' in end) {
    const id = refs.get(end.ref);
    if (!id) throw invalid(`${at} points at ref "${end.ref}", which no element in this call has.`);
    return id;
  }
  const el = existing.get(end.elementId);
  if (!el) throw invalid(`${at} points at element "${end.elementId}", which is not on the canvas (vault_read_canvas_elements lists the ids).`);
  return el.id;
}

/** Builds the skeleton Excalidraw's converter takes (or, for the types it passes through raw, the whole element). */
function toExcalidraw(ex: Excalidraw & Record<string, unknown>, s: Skeleton, id: string, files: Record<string, unknown>, at: string): Record<string, unknown> {
  const { ref: _ref, start: _start, end: _end, children: _children, ...rest } = s;
  const type = s.type === 'embed' ? 'embeddable' : s.type;
  // Excalidraw's constructors take a position as given: without one an element would sit at NaN.
  const base: Record<string, unknown> = { x: 0, y: 0, ...rest, type, id };
  if (base.customData !== undefined)
    throw invalid(`${at}: customData is not accepted; cards (notes, tasks, events) go on a canvas through vault_add_canvas_item.`);
  if (type === 'text' && typeof base.text !== 'string') throw invalid(`${at}: a text element needs text.`);
  if (type === 'freedraw' && !Array.isArray(base.points)) throw invalid(`${at}: freedraw needs points.`);
  if (base.label !== undefined && !SHAPES_WITH_LABEL.has(type))
    throw invalid(`${at}: only rectangles, ellipses, diamonds and arrows take a label; use a text element.`);
  if (type === 'image') {
    const fileId = base.fileId;
    if (typeof fileId !== 'string' || !(fileId in files))
      throw invalid(`${at}: an image needs the fileId of a file already attached to this canvas (agents cannot upload images).`, {
        files: Object.keys(files),
      });
    return { status: 'saved', ...base };
  }
  if (Array.isArray(base.points) && (type === 'line' || type === 'arrow' || type === 'freedraw')) {
    // A linear element's box is its points' span (the converter sizes arrows so, but not lines).
    const points = base.points as Array<[number, number]>;
    const xs = points.map((p) => p[0]);
    const ys = points.map((p) => p[1]);
    Object.assign(base, { width: Math.max(...xs) - Math.min(...xs), height: Math.max(...ys) - Math.min(...ys) });
  }
  if (type === 'freedraw') {
    const make = ex.newFreeDrawElement as (o: Record<string, unknown>) => Record<string, unknown>;
    return make({ simulatePressure: true, ...base });
  }
  if (type === 'embeddable') {
    if (typeof base.link !== 'string') throw invalid(`${at}: an embed needs a link (the URL it shows).`);
    const make = ex.newEmbeddableElement as (o: Record<string, unknown>) => Record<string, unknown>;
    return make({ width: 400, height: 300, ...base });
  }
  return base;
}

/** Never writes a scene the editor could not place: every coordinate must be a number. */
function assertFinite(elements: readonly El[]): void {
  for (const e of elements) {
    const numbers = [e.x, e.y, e.width, e.height, ...(e.points ?? []).flat()];
    if (numbers.some((n) => typeof n !== 'number' || !Number.isFinite(n)))
      throw new MemoError('TOOL_FAILED', `Excalidraw produced a ${e.type} (${e.id}) without a finite position or size, so nothing was written.`);
  }
}

/** The centre of an element's bounds, where an arrow without coordinates starts or ends before it is routed. */
function centre(ex: Excalidraw, el: El, map: Map<string, El>): [number, number] {
  const [x1, y1, x2, y2] = ex.getElementBounds(el, map);
  return [(x1 + x2) / 2, (y1 + y2) / 2];
}

/** Adds skeletons to a scene. Nothing in `scene` is changed; the new element list is returned. */
export async function draw(scene: SceneFile, skeletons: readonly Skeleton[]): Promise<DrawResult> {
  const ex = await excalidraw();
  const existing = new Map(live(scene.elements).map((e) => [e.id, e]));
  const refs = new Map<string, string>();
  const ids = skeletons.map((s, i) => {
    const id = newId();
    if (s.ref !== undefined) {
      if (refs.has(s.ref)) throw invalid(`${where(i, s)}: ref "${s.ref}" is used twice in this call.`);
      refs.set(s.ref, id);
    }
    return id;
  });
  const kinds = new Map(skeletons.map((s, i) => [ids[i]!, s.type === 'embed' ? 'embeddable' : s.type]));

  // Check every end and child before anything is made.
  const plans = skeletons.map((s, i) => {
    const at = where(i, s);
    const start = s.start ? endId(s.start, refs, existing, `${at}.start`) : undefined;
    const end = s.end ? endId(s.end, refs, existing, `${at}.end`) : undefined;
    if ((start || end) && s.type !== 'arrow') throw invalid(`${at}: only arrows bind to shapes (start/end); a ${s.type} does not.`);
    for (const [which, id] of [
      ['start', start],
      ['end', end],
    ] as const) {
      if (!id) continue;
      const kind = existing.get(id)?.type ?? kinds.get(id);
      if (!kind || !BINDABLE.has(kind)) throw invalid(`${at}.${which}: an arrow cannot bind to a ${kind ?? 'missing element'}.`);
    }
    const children = (s.children ?? []).map((c) => endId(c, refs, existing, `${at}.children`));
    if (children.length && s.type !== 'frame') throw invalid(`${at}: only frames have children.`);
    return { start, end, children };
  });

  const prepared = skeletons.map((s, i) => {
    const sk = toExcalidraw(ex as Excalidraw & Record<string, unknown>, s, ids[i]!, scene.files, where(i, s));
    const p = plans[i]!;
    // New children go through the converter (it sizes a frame around them); existing ones are added after.
    if (s.type === 'frame') sk.children = p.children.filter((c) => !existing.has(c));
    return sk;
  });

  return withWindow(() => {
    const made = ex.convertToExcalidrawElements(prepared, { regenerateIds: false });
    const all = [...scene.elements.map((e) => ({ ...e })), ...made];
    const sc: ExScene = new ex.Scene(all);
    const map = sc.getNonDeletedElementsMap();
    const get = (id: string) => map.get(id)!;

    // Frames with children already on the canvas: Excalidraw's own membership change, then a size around them all.
    skeletons.forEach((s, i) => {
      const p = plans[i]!;
      const old = p.children.filter((c) => existing.has(c));
      if (s.type !== 'frame' || !old.length) return;
      const frame = get(ids[i]!);
      ex.addElementsToFrame(all, old.map(get), frame, { selectedElementIds: {} });
      if (s.x === undefined || s.y === undefined || s.width === undefined || s.height === undefined) {
        const members = live(all).filter((e) => e.frameId === frame.id);
        const [x1, y1, x2, y2] = ex.getCommonBounds(members);
        sc.mutateElement(frame, {
          x: (s.x as number | undefined) ?? x1 - 10,
          y: (s.y as number | undefined) ?? y1 - 10,
          width: (s.width as number | undefined) ?? x2 - x1 + 20,
          height: (s.height as number | undefined) ?? y2 - y1 + 20,
        });
      }
    });

    // Arrows: place unplaced ones from centre to centre, bind both ends on both sides, then let
    // Excalidraw route the endpoints onto the outlines.
    const touched = new Set<string>();
    skeletons.forEach((s, i) => {
      const p = plans[i]!;
      if (!p.start && !p.end) return;
      const arrow = get(ids[i]!);
      if (s.x === undefined && s.y === undefined && s.points === undefined) {
        const from = p.start ? centre(ex, get(p.start), map) : null;
        const to = p.end ? centre(ex, get(p.end), map) : null;
        const a = from ?? [to![0] - 200, to![1]];
        const b = to ?? [from![0] + 200, from![1]];
        sc.mutateElement(arrow, {
          x: a[0],
          y: a[1],
          points: [
            [0, 0],
            [b[0] - a[0], b[1] - a[1]],
          ] as Array<[number, number]>,
          width: Math.abs(b[0] - a[0]),
          height: Math.abs(b[1] - a[1]),
        });
      }
      if (p.start) ex.bindBindingElement(arrow, get(p.start), 'orbit', 'start', sc);
      if (p.end) ex.bindBindingElement(arrow, get(p.end), 'orbit', 'end', sc);
      for (const id of [p.start, p.end]) if (id) touched.add(id);
    });
    for (const id of touched) ex.updateBoundElements(get(id), sc);
    // An arrow's label was placed on the arrow as converted; put it back on the routed arrow.
    skeletons.forEach((s, i) => {
      const p = plans[i]!;
      const arrow = get(ids[i]!);
      const label = (p.start || p.end) && labelOf(arrow, map);
      if (label) ex.redrawTextBoundingBox(label, arrow, sc);
    });

    const elements = ex.syncInvalidIndices(sc.getElementsIncludingDeleted());
    assertFinite(elements);
    const byId = new Map(elements.map((e) => [e.id, e]));
    const added = skeletons.map((s, i) => {
      const el = byId.get(ids[i]!)!;
      const label = el.type === 'text' ? el : labelOf(el, byId);
      return {
        id: el.id,
        type: el.type,
        ...(s.ref !== undefined ? { ref: s.ref } : {}),
        ...(label ? { text: textOf(label) } : {}),
        ...(el.startBinding ? { start: el.startBinding.elementId } : {}),
        ...(el.endBinding ? { end: el.endBinding.elementId } : {}),
        ...(el.frameId ? { frame: el.frameId } : {}),
      };
    });
    return { elements, refs: Object.fromEntries(refs), added };
  });
}

// ---------------------------------------------------------------------------------------------
// Edits

/** One change to an element already on the canvas. */
export interface Change {
  elementId: string;
  x?: number;
  y?: number;
  dx?: number;
  dy?: number;
  width?: number;
  height?: number;
  angle?: number;
  text?: string;
  delete?: boolean;
  [style: string]: unknown;
}

const STYLE_KEYS = [
  'strokeColor',
  'backgroundColor',
  'fillStyle',
  'strokeWidth',
  'strokeStyle',
  'roughness',
  'opacity',
  'roundness',
  'fontSize',
  'fontFamily',
  'textAlign',
  'verticalAlign',
  'startArrowhead',
  'endArrowhead',
  'name',
  'link',
  'locked',
] as const;

export interface EditResult {
  elements: El[];
  moved: Array<{ id: string; from: [number, number]; to: [number, number] }>;
  restyled: Array<{ id: string; fields: string[] }>;
  retexted: Array<{ id: string; from: string; to: string }>;
  resized: Array<{ id: string; from: [number, number]; to: [number, number] }>;
  deleted: Array<{ id: string; type: string; text?: string }>;
}

/** The element a card's text or bound label belongs to, when it is a card. */
function cardBehind(el: El, byId: ReadonlyMap<string, El>): CardRef | null {
  const container = el.containerId ? byId.get(el.containerId) : undefined;
  return cardOf(el) ?? (container ? cardOf(container) : null);
}

export async function edit(scene: SceneFile, changes: readonly Change[]): Promise<EditResult> {
  const ex = await excalidraw();
  const all = scene.elements.map((e) => ({ ...e }));
  const existing = new Map(live(all).map((e) => [e.id, e]));
  const seen = new Set<string>();
  for (const [i, c] of changes.entries()) {
    const el = existing.get(c.elementId);
    if (!el) throw invalid(`changes[${i}]: element "${c.elementId}" is not on the canvas (vault_read_canvas_elements lists the ids).`);
    if (seen.has(c.elementId)) throw invalid(`changes[${i}]: element "${c.elementId}" is changed twice in this call; put both changes in one entry.`);
    seen.add(c.elementId);
    const card = cardBehind(el, existing);
    if (c.text !== undefined && card)
      throw invalid(
        `changes[${i}]: "${c.elementId}" is the card of ${card.type} ${card.id}; its text is that ${card.type}'s title and lives there, so it is not rewritten here. Move or restyle the card, or change the ${card.type} itself.`,
        { card },
      );
    if (c.delete && card) throw invalid(`changes[${i}]: "${c.elementId}" is a card; take it off with vault_remove_canvas_item.`, { card });
    if (c.delete && Object.keys(c).some((k) => k !== 'elementId' && k !== 'delete'))
      throw invalid(`changes[${i}]: an element that is deleted takes no other change.`);
    if ((c.x !== undefined || c.y !== undefined) && (c.dx !== undefined || c.dy !== undefined))
      throw invalid(`changes[${i}]: give a position (x, y) or a move (dx, dy), not both.`);
    if (c.text !== undefined && el.type !== 'text' && !labelOf(el, existing) && !SHAPES_WITH_LABEL.has(el.type))
      throw invalid(`changes[${i}]: a ${el.type} has no text to change.`);
    if (
      el.containerId &&
      (c.x !== undefined || c.y !== undefined || c.dx !== undefined || c.dy !== undefined || c.width !== undefined || c.height !== undefined)
    )
      throw invalid(`changes[${i}]: "${c.elementId}" is the label of ${el.containerId}; move or resize the container instead.`);
    // An arrow bound at both ends is placed by its shapes, as in the editor: it follows them.
    if (el.startBinding && el.endBinding && (c.x !== undefined || c.y !== undefined || c.dx !== undefined || c.dy !== undefined))
      throw invalid(`changes[${i}]: arrow "${c.elementId}" is bound at both ends; move the shapes it joins and it follows them.`);
  }

  const result: EditResult = { elements: [], moved: [], restyled: [], retexted: [], resized: [], deleted: [] };
  return withWindow(() => {
    const sc = new ex.Scene(all);
    const map = sc.getNonDeletedElementsMap();
    const get = (id: string) => map.get(id)!;
    const changedShapes: El[] = [];

    for (const c of changes) {
      if (c.delete) continue;
      const el = get(c.elementId);
      const style: Record<string, unknown> = {};
      for (const k of STYLE_KEYS) if (c[k] !== undefined) style[k] = c[k];
      if (c.angle !== undefined) style.angle = c.angle;
      if (Object.keys(style).length) {
        sc.mutateElement(el, style);
        result.restyled.push({ id: el.id, fields: Object.keys(style) });
      }
      if (c.width !== undefined || c.height !== undefined) {
        const from: [number, number] = [el.width, el.height];
        sc.mutateElement(el, { width: c.width ?? el.width, height: c.height ?? el.height });
        result.resized.push({ id: el.id, from, to: [el.width, el.height] });
      }
      const nx = c.x ?? (c.dx !== undefined ? el.x + c.dx : el.x);
      const ny = c.y ?? (c.dy !== undefined ? el.y + c.dy : el.y);
      if (nx !== el.x || ny !== el.y) {
        const [ddx, ddy] = [nx - el.x, ny - el.y];
        result.moved.push({ id: el.id, from: [el.x, el.y], to: [nx, ny] });
        sc.mutateElement(el, { x: nx, y: ny });
        // A frame carries its children, as when it is dragged in the editor.
        if (el.type === 'frame' || el.type === 'magicframe')
          for (const child of live([...map.values()]).filter((e) => e.frameId === el.id && !e.containerId)) {
            sc.mutateElement(child, { x: child.x + ddx, y: child.y + ddy });
            changedShapes.push(child);
          }
      }
      if (c.text !== undefined) {
        const target = el.type === 'text' ? el : labelOf(el, map);
        if (target) {
          result.retexted.push({ id: el.id, from: textOf(target), to: c.text });
          sc.mutateElement(target, { text: c.text, originalText: c.text });
        } else {
          // A shape without a label gets one, made by the converter as a drawn label would be.
          const [label] = ex
            .convertToExcalidrawElements(
              [{ type: 'text', id: newId(), x: el.x, y: el.y, text: c.text, containerId: el.id, textAlign: 'center', verticalAlign: 'middle' }],
              {
                regenerateIds: false,
              },
            )
            .slice(-1);
          sc.mutateElement(el, { boundElements: [...(el.boundElements ?? []), { id: label!.id, type: 'text' }] });
          (sc as unknown as { insertElement(e: El): void }).insertElement(label!);
          result.retexted.push({ id: el.id, from: '', to: c.text });
        }
      }
      changedShapes.push(el);
    }
    // Labels re-measured and re-centred, then every arrow bound to a moved or resized shape follows it
    // (an arrow moved by one free end keeps its bound end on its shape).
    const now = sc.getNonDeletedElementsMap();
    for (const el of [...changedShapes]) {
      for (const b of [el.startBinding, el.endBinding]) {
        const shape = b ? now.get(b.elementId) : undefined;
        if (shape && !changedShapes.includes(shape)) changedShapes.push(shape);
      }
    }
    for (const el of changedShapes) {
      const current = now.get(el.id);
      if (!current) continue;
      if (current.type === 'text') ex.redrawTextBoundingBox(current, current.containerId ? (now.get(current.containerId) ?? null) : null, sc);
      const label = labelOf(current, now);
      if (label) ex.redrawTextBoundingBox(label, current, sc);
      ex.updateBoundElements(current, sc, { simultaneouslyUpdated: changedShapes });
    }

    // Deletes: an element goes with its label (and a frame with its children, as in the editor);
    // arrows bound to it are unbound and shapes forget deleted arrows.
    const doomed = new Map<string, El>();
    const doom = (el: El) => {
      if (doomed.has(el.id)) return;
      doomed.set(el.id, el);
      const label = labelOf(el, now);
      if (label) doom(label);
      if (el.type === 'frame' || el.type === 'magicframe') for (const child of live([...now.values()]).filter((e) => e.frameId === el.id)) doom(child);
    };
    for (const c of changes) if (c.delete) doom(get(c.elementId));
    if (doomed.size) {
      for (const el of doomed.values()) {
        sc.mutateElement(el, { isDeleted: true });
        if (!el.containerId)
          result.deleted.push({
            id: el.id,
            type: el.type,
            ...(labelOf(el, now) || el.type === 'text' ? { text: textOf(el.type === 'text' ? el : labelOf(el, now)!) } : {}),
          });
      }
      ex.fixBindingsAfterDeletion(live(sc.getElementsIncludingDeleted()), [...doomed.values()]);
    }
    result.elements = ex.syncInvalidIndices(live(sc.getElementsIncludingDeleted()));
    assertFinite(result.elements);
    return result;
  });
}

/** Elements that are a card for `ref`, or that card's label. */
export function cardElements(scene: SceneFile, ref: CardRef): El[] {
  const byId = new Map(live(scene.elements).map((e) => [e.id, e]));
  return [...byId.values()].filter((e) => {
    const c = cardOf(e);
    return c && c.type === ref.type && c.id === ref.id;
  });
}

/** The scene without these elements (and their labels); arrows bound to them are unbound. */
export async function removeElements(scene: SceneFile, ids: readonly string[]): Promise<El[]> {
  const ex = await excalidraw();
  const all = scene.elements.map((e) => ({ ...e }));
  return withWindow(() => {
    const sc = new ex.Scene(all);
    const map = sc.getNonDeletedElementsMap();
    const doomed: El[] = [];
    for (const id of ids) {
      const el = map.get(id);
      if (!el) continue;
      doomed.push(el);
      const label = labelOf(el, map);
      if (label) doomed.push(label);
    }
    for (const el of doomed) sc.mutateElement(el, { isDeleted: true });
    ex.fixBindingsAfterDeletion(live(sc.getElementsIncludingDeleted()), doomed);
    return ex.syncInvalidIndices(live(sc.getElementsIncludingDeleted()));
  });
}

/** The size of a card and the place the next one goes: below everything on the canvas, left to right. */
export const CARD = { width: 260, height: 90, gap: 40 };

export async function addCards(
  scene: SceneFile,
  cards: ReadonlyArray<CardRef & { title: string; x?: number; y?: number; backgroundColor?: string; strokeColor?: string }>,
): Promise<{ elements: El[]; added: Array<CardRef & { title: string; elementId: string }> }> {
  const ex = await excalidraw();
  const present = live(scene.elements);
  let [x0, y0] = [0, 0];
  if (present.length) {
    const [x1, , , y2] = ex.getCommonBounds(present);
    [x0, y0] = [x1, y2 + CARD.gap * 2];
  }
  const skeletons = cards.map((c, i) => ({
    type: 'rectangle',
    id: newId(),
    x: c.x ?? x0 + i * (CARD.width + CARD.gap),
    y: c.y ?? y0,
    width: CARD.width,
    height: CARD.height,
    backgroundColor: c.backgroundColor ?? (c.type === 'note' ? '#e7f5ff' : c.type === 'task' ? '#fff9db' : '#ebfbee'),
    strokeColor: c.strokeColor ?? '#1e1e1e',
    fillStyle: 'solid',
    roundness: { type: 3 },
    customData: { memo: { type: c.type, id: c.id } },
    label: { text: c.title },
  }));
  return withWindow(() => {
    const made = ex.convertToExcalidrawElements(skeletons, { regenerateIds: false });
    const elements = ex.syncInvalidIndices([...scene.elements.map((e) => ({ ...e })), ...made]);
    return { elements, added: cards.map((c, i) => ({ type: c.type, id: c.id, title: c.title, elementId: skeletons[i]!.id })) };
  });
}
