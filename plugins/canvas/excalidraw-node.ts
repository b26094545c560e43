/**
 * Excalidraw's own element code (`@excalidraw/element`) running in Node: the few shims it needs,
 * kept in this one module. Elements, bindings, bound text and frames are made by Excalidraw's
 * functions, never by a geometry model of ours, so a file opens in the editor exactly as if it had
 * been drawn there.
 *
 * The shims:
 * - `navigator` (Node 21+ has one; Node 20 does not): read once when the module loads (platform sniffing).
 * - `window`: touched by a debug check inside Scene; it is defined only while Excalidraw code runs
 *   synchronously (`withWindow`) so no other code in the process ever sees a browser global.
 * - long timers: every Scene starts a throttled (60 s) fractional-index check, whose timer would keep
 *   a finished CLI command or test run alive for a minute; such timers started by Excalidraw's code
 *   are unref'd (they still fire if the process is alive anyway).
 * - text metrics: the editor measures text with a canvas; here glyph advances come from the same
 *   fonts Excalidraw ships (the .ttf files in `@excalidraw/utils`' assets, read with fontkit), so a
 *   label's box has the size the editor would give it. Nothing is downloaded. Both are optional
 *   packages (extras.ts): without them the element code still loads and draws shapes, and the first
 *   text to measure fails with the message naming the install command.
 */
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { requireExtra } from './extras.js';
import type { El } from './scene.js';

/** Bounds as Excalidraw gives them: [minX, minY, maxX, maxY]. */
export type Bounds = [number, number, number, number];

/** A Scene of Excalidraw's: the element store its binding and frame functions work on. */
export interface ExScene {
  getNonDeletedElementsMap(): Map<string, El>;
  getElementsIncludingDeleted(): readonly El[];
  mutateElement(element: El, updates: Partial<El>): El;
}

/**
 * The functions of `@excalidraw/element` this pack calls, typed over our loose element shape (the
 * library's own types are written for the browser: DOM types this Node project does not load).
 */
export interface Excalidraw {
  convertToExcalidrawElements(skeletons: Array<Record<string, unknown>>, opts: { regenerateIds: boolean }): El[];
  Scene: new (elements: readonly El[]) => ExScene;
  bindBindingElement(arrow: El, target: El, mode: 'orbit' | 'inside', startOrEnd: 'start' | 'end', scene: ExScene): void;
  updateBoundElements(changed: El, scene: ExScene, options?: { simultaneouslyUpdated?: readonly El[] }): void;
  fixBindingsAfterDeletion(sceneElements: readonly El[], deleted: readonly El[]): void;
  getElementBounds(element: El, elementsMap: Map<string, El>): Bounds;
  getCommonBounds(elements: readonly El[]): Bounds;
  addElementsToFrame(allElements: readonly El[], toAdd: readonly El[], frame: El, appState: Record<string, unknown>): readonly El[];
  syncInvalidIndices(elements: readonly El[]): El[];
  redrawTextBoundingBox(text: El, container: El | null, scene: ExScene): void;
  isBindableElement(element: El | null | undefined): boolean;
  setCustomTextMetricsProvider(provider: { getLineWidth(text: string, font: string): number }): void;
}

/** The font files Excalidraw ships, by the family name its font strings use. */
const FONT_FILES: Readonly<Record<string, string>> = {
  Excalifont: 'Excalifont.ttf',
  Virgil: 'Virgil.ttf',
  Cascadia: 'Cascadia Code.ttf',
  'Comic Shanns': 'Comic Shanns Regular.ttf',
  'Liberation Sans': 'Liberation Sans.ttf',
  Helvetica: 'Liberation Sans.ttf',
  'Lilita One': 'Lilita One.ttf',
  Nunito: 'Nunito ExtraLight Medium.ttf',
};

const MEASURING = 'Measuring text on a canvas (labels, cards, text elements)';

/** The folder of Excalidraw's bundled fonts inside node_modules (the `@excalidraw/utils` extra). */
export function fontDir(purpose = MEASURING): string {
  return path.join(path.dirname(requireExtra('@excalidraw/utils', purpose)), 'assets');
}

/** Every bundled font file (for the PNG renderer, which must not look for system fonts). */
export function fontFiles(purpose?: string): string[] {
  const dir = fontDir(purpose);
  return [...new Set(Object.values(FONT_FILES))].map((f) => path.join(dir, f));
}

interface Measurer {
  unitsPerEm: number;
  layout(text: string): { advanceWidth: number };
}

interface Fontkit {
  openSync(file: string): unknown;
}

const fonts = new Map<string, Measurer>();
let fontkit: Fontkit | null = null;

/** fontkit (an extra), loaded with the first text measured: its CommonJS build, so measuring stays synchronous. */
function loadFontkit(): Fontkit {
  if (!fontkit) {
    const fk = createRequire(import.meta.url)(requireExtra('fontkit', MEASURING)) as { default?: Fontkit } & Partial<Fontkit>;
    fontkit = (fk.default ?? fk) as Fontkit;
  }
  return fontkit;
}

function measurer(family: string): Measurer {
  const file = FONT_FILES[family] ?? FONT_FILES.Excalifont!;
  let m = fonts.get(file);
  if (!m) {
    const dir = fontDir();
    m = loadFontkit().openSync(path.join(dir, file)) as Measurer;
    fonts.set(file, m);
  }
  return m;
}

/** Width of one line of text in a CSS font string such as `20px Excalifont, Xiaolai, sans-serif`. */
export function lineWidth(text: string, font: string): number {
  const match = /([\d.]+)px\s+([^,]+)/.exec(font);
  const size = match ? Number(match[1]) : 20;
  const family = match ? match[2]!.trim().replace(/^["']|["']$/g, '') : 'Excalifont';
  const m = measurer(family);
  return (m.layout(text).advanceWidth / m.unitsPerEm) * size;
}

let loading: Promise<Excalidraw> | null = null;

/** `@excalidraw/element`, loaded once with its shims in place. */
export function excalidraw(): Promise<Excalidraw> {
  loading ??= (async () => {
    const g = globalThis as { navigator?: unknown };
    // What Node 21+ provides; the element code reads platform and userAgent when it loads.
    g.navigator ??= { platform: process.platform, userAgent: `Node.js/${process.versions.node}`, language: 'en-US' };
    const ex = (await import('@excalidraw/element')) as unknown as Excalidraw;
    ex.setCustomTextMetricsProvider({ getLineWidth: lineWidth });
    return ex;
  })();
  loading.catch(() => (loading = null));
  return loading;
}

const LONG_TIMER_MS = 10_000;

/**
 * Until the returned function is called, timers of 10 s or more that Excalidraw's code starts (told by
 * the caller's stack) do not keep the process alive; every other timer is left as it is.
 */
export function unrefLongTimers(): () => void {
  const original = globalThis.setTimeout;
  const patched = (...args: Parameters<typeof setTimeout>) => {
    const timer = original(...args);
    if ((args[1] ?? 0) >= LONG_TIMER_MS && /[\\/]@excalidraw[\\/]/.test(new Error().stack ?? '')) timer.unref();
    return timer;
  };
  globalThis.setTimeout = Object.assign(patched, original) as typeof setTimeout;
  return () => {
    globalThis.setTimeout = original;
  };
}

/** Runs synchronous Excalidraw code with a bare `window` defined (removed again) and its long timers unref'd. */
export function withWindow<T>(fn: () => T): T {
  const g = globalThis as { window?: unknown };
  const restore = unrefLongTimers();
  const defined = g.window === undefined;
  if (defined) g.window = {};
  try {
    return fn();
  } finally {
    if (defined) delete g.window;
    restore();
  }
}
