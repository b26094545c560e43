/**
 * Renders a scene with Excalidraw's own export (`exportToSvg` from `@excalidraw/utils`), run under
 * jsdom, and rasterises the SVG with resvg for PNG using the fonts Excalidraw ships in node_modules.
 * The browser globals the export needs exist only while one render runs (renders are queued one at a
 * time), so no other code in the process sees them. Nothing is downloaded: the export subsets and
 * inlines Excalidraw's fonts from the data: URLs its own bundle carries (fetch is held to data: URLs
 * while it runs), and resvg gets the .ttf files Excalidraw ships. The four packages are optional
 * (extras.ts): without them a render fails, before any work, with the message naming the command that
 * installs them.
 *
 * Every render runs in a worker thread (the kernel's heavy work, heavy-work.ts): jsdom's globals then
 * live in that worker only, the tool's timeout ends the render, and the kernel keeps serving while it
 * runs. resvg allocates its bitmap outside the JavaScript heap, where no worker limit reaches, so the
 * size is checked before it is asked: at most 16,384 pixels a side and 64 megapixels in all; a PNG
 * that would be larger is drawn at the largest scale that fits, and the result says so.
 */
import { MemoError, runHeavy } from 'memo-kernel/pack';
import { excalidraw, fontFiles, lineWidth, unrefLongTimers } from './excalidraw-node.js';
import { CANVAS_EXTRAS, importExtra, requireExtra } from './extras.js';
import { live, type SceneFile } from './scene.js';

export interface RenderOptions {
  format: 'svg' | 'png';
  scale?: number;
  padding?: number;
  background?: boolean;
}

export interface Rendered {
  format: 'svg' | 'png';
  width: number;
  height: number;
  data: Buffer;
  /** Set when a PNG was drawn smaller than asked, to stay within the pixel limits. */
  downscaled?: { askedScale: number; scale: number; reason: string };
}

/** A PNG's largest side and area (resvg's bitmap: 4 bytes a pixel, 256 MB at the area limit). */
export const MAX_PNG_SIDE = 16_384;
export const MAX_PNG_PIXELS = 64 * 1024 * 1024;

type ExportToSvg = (opts: {
  data: { elements: unknown[]; appState: Record<string, unknown>; files: Record<string, unknown> | null };
  config?: Record<string, unknown>;
}) => Promise<{ outerHTML: string }>;

/** A FontFace that loads nothing: the export registers one per font but reads the font data itself. */
class NoFontFace {
  status = 'loaded';
  constructor(
    readonly family: string,
    readonly source: unknown,
    descriptors: Record<string, unknown> = {},
  ) {
    Object.assign(this, descriptors);
  }
  load(): Promise<this> {
    return Promise.resolve(this);
  }
}

const GLOBALS = [
  'window',
  'document',
  'DOMParser',
  'XMLSerializer',
  'Node',
  'Element',
  'HTMLElement',
  'SVGElement',
  'devicePixelRatio',
  'FontFace',
  'Image',
] as const;

/** The few members of resvg's API used here (its own types come with the optional package). */
interface ResvgModule {
  Resvg: new (
    svg: string,
    options: { fitTo: { mode: 'zoom'; value: number }; font: { fontFiles: string[]; loadSystemFonts: boolean; defaultFontFamily: string } },
  ) => { render(): { width: number; height: number; asPng(): Buffer } };
}

const RENDERING = 'Rendering a canvas';

/** Every package a render needs is installed, or the error naming the command (before any work starts). */
function checkExtras(): void {
  for (const name of CANVAS_EXTRAS) requireExtra(name, RENDERING);
}

let queue: Promise<unknown> = Promise.resolve();

async function withDom<T>(work: (exportToSvg: ExportToSvg) => Promise<T>): Promise<T> {
  await excalidraw(); // navigator shim and the element code, loaded once
  const { JSDOM } = await importExtra<typeof import('jsdom')>('jsdom', RENDERING);
  const dom = new JSDOM('<!doctype html><html><head></head><body></body></html>', { pretendToBeVisual: true });
  const g = globalThis as Record<string, unknown>;
  const saved = new Map<string, PropertyDescriptor | undefined>();
  const win = dom.window as unknown as Record<string, unknown>;
  // The export's own copy of the element code measures text (frame names, labels) with a canvas,
  // which jsdom lacks: a 2D context that only measures, with the same fonts as everything else.
  const canvasProto = (win.HTMLCanvasElement as { prototype: Record<string, unknown> }).prototype;
  canvasProto.getContext = function () {
    return {
      font: '20px Excalifont',
      measureText(this: { font: string }, text: string) {
        return { width: lineWidth(text, this.font) };
      },
    };
  };
  for (const k of GLOBALS) {
    saved.set(k, Object.getOwnPropertyDescriptor(g, k));
    const value = k === 'window' ? dom.window : k === 'FontFace' ? NoFontFace : k === 'devicePixelRatio' ? 1 : win[k];
    Object.defineProperty(g, k, { value, configurable: true, writable: true });
  }
  const restoreTimers = unrefLongTimers();
  // The export reads its bundled fonts through fetch of data: URLs; anything else would be the network.
  const realFetch = globalThis.fetch;
  globalThis.fetch = (input: Parameters<typeof fetch>[0], init?: RequestInit) => {
    const url = input instanceof Request ? input.url : String(input);
    if (!url.startsWith('data:')) return Promise.reject(new MemoError('TOOL_FAILED', `Rendering does not download anything (asked for ${url.slice(0, 80)}).`));
    return realFetch(input, init);
  };
  try {
    const utils = await importExtra<{ exportToSvg: ExportToSvg }>('@excalidraw/utils', RENDERING);
    return await work(utils.exportToSvg);
  } finally {
    globalThis.fetch = realFetch;
    restoreTimers();
    for (const [k, d] of saved) {
      if (d) Object.defineProperty(g, k, d);
      else delete g[k];
    }
    dom.window.close();
  }
}

/** The SVG Excalidraw's export makes of a scene. */
async function exportSvg(scene: SceneFile, options: RenderOptions): Promise<string> {
  const run = queue.then(() =>
    withDom(async (exportToSvg) => {
      const svg = await exportToSvg({
        data: {
          elements: live(scene.elements),
          appState: {
            ...scene.appState,
            exportBackground: options.background ?? true,
            viewBackgroundColor: typeof scene.appState.viewBackgroundColor === 'string' ? scene.appState.viewBackgroundColor : '#ffffff',
            exportWithDarkMode: false,
            exportEmbedScene: false,
          },
          files: scene.files,
        },
        // PNG: resvg draws text with the .ttf files, so the SVG need not carry the fonts.
        config: { padding: options.padding ?? 10, ...(options.format === 'png' ? { skipInliningFonts: true } : {}) },
      });
      return svg.outerHTML;
    }),
  );
  queue = run.catch(() => undefined);
  return run;
}

/**
 * Renders in a worker (see the module comment); `signal` (the tool's) ends it. Rejects with TIMEOUT or
 * CANCELLED when it is ended, VALIDATION for an empty canvas.
 */
export async function render(scene: SceneFile, options: RenderOptions, signal?: AbortSignal): Promise<Rendered> {
  if (!live(scene.elements).length) throw new MemoError('VALIDATION', 'The canvas is empty: there is nothing to render.');
  checkExtras();
  const r = await runHeavy<Omit<Rendered, 'data'> & { data: Uint8Array }>(
    new URL('./render.js', import.meta.url),
    'renderTask',
    { scene, options },
    { ...(signal ? { signal } : {}), what: 'Rendering the canvas' },
  );
  return { ...r, data: Buffer.from(r.data.buffer, r.data.byteOffset, r.data.byteLength) };
}

/** The largest scale, up to the one asked, at which a w x h drawing stays within the PNG limits. */
export function fittingScale(w: number, h: number, asked: number): number {
  if (!(w > 0) || !(h > 0)) return asked;
  const fit = Math.min(1, MAX_PNG_SIDE / (w * asked), MAX_PNG_SIDE / (h * asked), Math.sqrt(MAX_PNG_PIXELS / (w * asked * h * asked)));
  // Rounded down a little: resvg rounds the bitmap's sides up.
  return fit >= 1 ? asked : Math.floor(asked * fit * 10_000) / 10_000 - 0.0001;
}

/** The render itself, as the worker runs it. */
export async function renderTask(input: { scene: SceneFile; options: RenderOptions }): Promise<Rendered> {
  return renderHere(input.scene, input.options);
}

async function renderHere(scene: SceneFile, options: RenderOptions): Promise<Rendered> {
  if (!live(scene.elements).length) throw new MemoError('VALIDATION', 'The canvas is empty: there is nothing to render.');
  const svg = await exportSvg(scene, options);
  const size = /<svg[^>]*\swidth="([\d.]+)"[^>]*\sheight="([\d.]+)"/.exec(svg);
  const [w, h] = size ? [Number(size[1]), Number(size[2])] : [0, 0];
  if (options.format === 'svg') return { format: 'svg', width: w, height: h, data: Buffer.from('<?xml version="1.0" encoding="UTF-8"?>\n' + svg + '\n') };
  const asked = options.scale ?? 1;
  const scale = fittingScale(w, h, asked);
  const { Resvg } = await importExtra<ResvgModule>('@resvg/resvg-js', RENDERING);
  const resvg = new Resvg(svg, {
    fitTo: { mode: 'zoom', value: scale },
    font: { fontFiles: fontFiles(RENDERING), loadSystemFonts: false, defaultFontFamily: 'Excalifont' },
  });
  const png = resvg.render();
  const out: Rendered = { format: 'png', width: png.width, height: png.height, data: png.asPng() };
  if (scale !== asked)
    out.downscaled = {
      askedScale: asked,
      scale,
      reason: `At scale ${asked} the drawing (${Math.round(w)} x ${Math.round(h)} units) would be ${Math.ceil(w * asked)} x ${Math.ceil(h * asked)} pixels, over the limit of ${MAX_PNG_SIDE} pixels a side and ${MAX_PNG_PIXELS / 1024 / 1024} megapixels: it was drawn at scale ${scale}. Render as SVG for a drawing of any size.`,
    };
  return out;
}
