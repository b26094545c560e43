/**
 * Excalidraw's own `restoreElements` (what the editor runs on every file it opens), from
 * `@excalidraw/excalidraw` of the same snapshot as `@excalidraw/element`, loaded under jsdom. The
 * browser globals exist only while the editor's code runs, and are removed again (jest walks the
 * globals a test file leaves behind, and a jsdom window is a cycle it cannot walk).
 */
import { JSDOM } from 'jsdom';

type Restore = (elements: unknown[], local: null, opts?: Record<string, unknown>) => any[];
let restoreElements: Restore | null = null;

const NAMES = [
  'window',
  'document',
  'DOMParser',
  'XMLSerializer',
  'Node',
  'Element',
  'HTMLElement',
  'SVGElement',
  'HTMLCanvasElement',
  'Image',
  'location',
  'getComputedStyle',
  'requestAnimationFrame',
  'cancelAnimationFrame',
  'devicePixelRatio',
  'CustomEvent',
  'MutationObserver',
  'FontFace',
  'matchMedia',
];

async function withBrowser<T>(work: () => Promise<T> | T): Promise<T> {
  const dom = new JSDOM('<!doctype html><html><body></body></html>', { pretendToBeVisual: true, url: 'http://localhost/' });
  const g = globalThis as any;
  const w = dom.window as any;
  w.matchMedia = () => ({ matches: false, addListener() {}, removeListener() {}, addEventListener() {}, removeEventListener() {} });
  w.FontFace = class {
    constructor(
      readonly family: string,
      readonly source: unknown,
    ) {}
    load() {
      return Promise.resolve(this);
    }
  };
  Object.defineProperty(w.document, 'fonts', {
    value: { add() {}, check: () => true, load: () => Promise.resolve([]), ready: Promise.resolve(), addEventListener() {}, *[Symbol.iterator]() {} },
  });
  const added: string[] = [];
  for (const k of NAMES) {
    if (k in g) continue;
    Object.defineProperty(g, k, { value: k === 'window' ? w : w[k], configurable: true, writable: true });
    added.push(k);
  }
  try {
    return await work();
  } finally {
    for (const k of added) delete g[k];
    dom.window.close();
  }
}

/** The elements as the editor has them after opening the file. */
export async function restoreInNode(elements: unknown[]): Promise<any[]> {
  return withBrowser(async () => {
    restoreElements ??= ((await import('@excalidraw/excalidraw')) as any).restoreElements as Restore;
    return restoreElements(structuredClone(elements), null, { refreshDimensions: false, repairBindings: true });
  });
}
