/**
 * Excalidraw's own `restoreElements` (what the editor runs on every file it opens), from
 * `@excalidraw/excalidraw` of the same snapshot as `@excalidraw/element`, loaded under jsdom. The
 * browser globals exist only while the editor's code runs, and are removed again (jest walks the
 * globals a test file leaves behind, and a jsdom window is a cycle it cannot walk).
 *
 * The editor (with mermaid and React under it, about 250 MB) is not in the default install: `node
 * scripts/install-extras.mjs canvas-editor` puts it in node_modules/.memo-extras (.ci/run does, before
 * npm test), where it is found through the canvas pack's own lookup.
 */
import { pathToFileURL } from 'node:url';
import { JSDOM } from 'jsdom';
import { locateExtra } from '../../../plugins/canvas/extras.js';

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

/** The editor's entry file, or the error that says how to install it. */
function editor(): string {
  const file = locateExtra('@excalidraw/excalidraw');
  if (file === null)
    throw new Error(
      "Excalidraw's editor (@excalidraw/excalidraw, the snapshot of @excalidraw/element) is not installed: these tests open files with its restoreElements. Run `node scripts/install-extras.mjs canvas-editor` (.ci/run does) and run them again.",
    );
  return file;
}

/** The elements as the editor has them after opening the file. */
export async function restoreInNode(elements: unknown[]): Promise<any[]> {
  return withBrowser(async () => {
    restoreElements ??= (await import(pathToFileURL(editor()).href)).restoreElements as Restore;
    return restoreElements(structuredClone(elements), null, { refreshDimensions: false, repairBindings: true });
  });
}
