/**
 * The `.excalidraw` file format (type `excalidraw`, version 2: what the editor saves and opens) and
 * what this pack reads out of a scene: cards, free text, and an element's agent-facing summary.
 */
import { randomBytes } from 'node:crypto';
import { MemoError } from 'memo-kernel/pack';

/** One Excalidraw element, loosely typed: the editor owns the format; we read the fields we need. */
export interface El {
  id: string;
  type: string;
  x: number;
  y: number;
  width: number;
  height: number;
  angle?: number;
  isDeleted?: boolean;
  text?: string;
  originalText?: string;
  containerId?: string | null;
  frameId?: string | null;
  boundElements?: Array<{ id: string; type: string }> | null;
  startBinding?: { elementId: string } | null;
  endBinding?: { elementId: string } | null;
  customData?: Record<string, unknown>;
  strokeColor?: string;
  backgroundColor?: string;
  name?: string | null;
  fileId?: string | null;
  link?: string | null;
  points?: Array<[number, number]>;
  [key: string]: unknown;
}

export interface SceneFile {
  type: 'excalidraw';
  version: number;
  source: string;
  elements: El[];
  appState: Record<string, unknown>;
  files: Record<string, unknown>;
}

export const EXTENSION = '.excalidraw';

export type EntityType = 'note' | 'task' | 'event';

/** The entity a card stands for: kept in the card's customData, which the canvas' entity refs are rebuilt from. */
export interface CardRef {
  type: EntityType;
  id: string;
}

export function emptyScene(): SceneFile {
  return {
    type: 'excalidraw',
    version: 2,
    source: 'memo',
    elements: [],
    appState: { gridSize: 20, gridStep: 5, gridModeEnabled: false, viewBackgroundColor: '#ffffff' },
    files: {},
  };
}

export function parseScene(text: string, shown: string): SceneFile {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw new MemoError('VALIDATION', `${shown} is not valid JSON, so it is not an Excalidraw canvas Memo can read.`);
  }
  const d = data as Partial<SceneFile> | null;
  if (!d || typeof d !== 'object' || d.type !== 'excalidraw' || !Array.isArray(d.elements)) {
    throw new MemoError('VALIDATION', `${shown} is not an Excalidraw canvas (its JSON has no "type": "excalidraw" with an elements list).`);
  }
  return {
    type: 'excalidraw',
    version: typeof d.version === 'number' ? d.version : 2,
    source: typeof d.source === 'string' ? d.source : 'memo',
    elements: d.elements,
    appState: d.appState && typeof d.appState === 'object' ? d.appState : {},
    files: d.files && typeof d.files === 'object' ? d.files : {},
  };
}

export function serializeScene(scene: SceneFile): string {
  return JSON.stringify({ ...scene, elements: scene.elements.filter((e) => !e.isDeleted) }, null, 2) + '\n';
}

/** An id like the editor's own (nanoid's alphabet, 21 characters). */
export function newId(): string {
  return randomBytes(16).toString('base64url').slice(0, 21);
}

export const live = (elements: readonly El[]): El[] => elements.filter((e) => !e.isDeleted);

export function cardOf(el: El): CardRef | null {
  const memo = el.customData?.memo as Partial<CardRef> | undefined;
  if (!memo || typeof memo !== 'object') return null;
  if ((memo.type === 'note' || memo.type === 'task' || memo.type === 'event') && typeof memo.id === 'string') return { type: memo.type, id: memo.id };
  return null;
}

/** The text bound inside a container (a shape's or an arrow's label), if any. */
export function labelOf(el: El, byId: ReadonlyMap<string, El>): El | null {
  for (const b of el.boundElements ?? []) {
    if (b.type !== 'text') continue;
    const t = byId.get(b.id);
    if (t && !t.isDeleted) return t;
  }
  return null;
}

export function textOf(el: El): string {
  return typeof el.originalText === 'string' ? el.originalText : typeof el.text === 'string' ? el.text : '';
}

const round = (n: number) => Math.round(n * 100) / 100;

/** What vault_read_canvas_elements shows of one element: where it is and what it says, not how it is drawn. */
export function describe(el: El, byId: ReadonlyMap<string, El>): Record<string, unknown> {
  const out: Record<string, unknown> = { id: el.id, type: el.type, x: round(el.x), y: round(el.y), width: round(el.width), height: round(el.height) };
  if (el.angle) out.angle = round(el.angle);
  const card = cardOf(el);
  if (card) out.card = card;
  if (el.type === 'text') out.text = textOf(el);
  else {
    const label = labelOf(el, byId);
    if (label) {
      out.text = textOf(label);
      out.labelId = label.id;
    }
  }
  if (el.strokeColor) out.strokeColor = el.strokeColor;
  if (el.backgroundColor && el.backgroundColor !== 'transparent') out.backgroundColor = el.backgroundColor;
  if (el.type === 'arrow' || el.type === 'line') {
    if (el.points) out.points = el.points.map(([x, y]) => [round(x), round(y)]);
    if (el.startBinding) out.start = el.startBinding.elementId;
    if (el.endBinding) out.end = el.endBinding.elementId;
  }
  const arrows = (el.boundElements ?? []).filter((b) => b.type === 'arrow').map((b) => b.id);
  if (arrows.length) out.arrows = arrows;
  if (el.frameId) out.frameId = el.frameId;
  if (el.containerId) out.containerId = el.containerId;
  if (el.type === 'frame' || el.type === 'magicframe') out.name = el.name ?? null;
  if (el.type === 'image') out.fileId = el.fileId ?? null;
  if (el.link) out.link = el.link;
  return out;
}
