import { canvasKernel, error, value, type CanvasFixture } from './helpers.js';
import { restoreInNode } from './restore.js';

// A 1x1 PNG, attached to the canvas as the editor stores files.
const PIXEL = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

describe('the other element kinds: images, embeds, lines, freedraw, elbow arrows', () => {
  let fx: CanvasFixture;
  beforeAll(async () => {
    fx = await canvasKernel({
      files: {
        'Pics.excalidraw': JSON.stringify({
          type: 'excalidraw',
          version: 2,
          source: 'https://excalidraw.com',
          elements: [],
          appState: { viewBackgroundColor: '#ffffff' },
          files: { f1: { id: 'f1', mimeType: 'image/png', dataURL: PIXEL, created: 1 } },
        }),
      },
    });
  });
  afterAll(async () => fx.close());

  it('places an image whose file is already attached, and every kind keeps its fields through restoreElements', async () => {
    const r = value(
      await fx.call('vault_draw_on_canvas', {
        canvas: 'Pics',
        elements: [
          { type: 'image', ref: 'img', fileId: 'f1', x: 0, y: 0, width: 64, height: 64 },
          { type: 'embed', ref: 'web', link: 'https://www.youtube.com/watch?v=dQw4w9WgXcQ', x: 100, y: 0 },
          {
            type: 'line',
            ref: 'ln',
            x: 0,
            y: 200,
            points: [
              [0, 0],
              [80, 40],
              [160, 0],
            ],
            strokeColor: '#e03131',
            strokeWidth: 4,
          },
          {
            type: 'freedraw',
            ref: 'fd',
            x: 0,
            y: 300,
            points: [
              [0, 0],
              [10, 10],
              [30, 5],
            ],
          },
          { type: 'rectangle', ref: 'r1', x: 600, y: 0, width: 100, height: 60 },
          { type: 'rectangle', ref: 'r2', x: 800, y: 200, width: 100, height: 60 },
          { type: 'arrow', ref: 'el', elbowed: true, start: { ref: 'r1' }, end: { ref: 'r2' } },
        ],
      }),
    );
    const elements = fx.scene('Pics.excalidraw').elements;
    const get = (ref: string) => elements.find((e: any) => e.id === r.refs[ref]);
    expect(get('img')).toMatchObject({ type: 'image', fileId: 'f1', status: 'saved', width: 64, height: 64 });
    expect(get('web')).toMatchObject({ type: 'embeddable', link: 'https://www.youtube.com/watch?v=dQw4w9WgXcQ', width: 400, height: 300 });
    expect(get('ln')).toMatchObject({ type: 'line', strokeColor: '#e03131', strokeWidth: 4, width: 160, height: 40 });
    expect(get('fd')).toMatchObject({ type: 'freedraw', width: 30, height: 10, simulatePressure: true });
    expect(get('el')).toMatchObject({ type: 'arrow', elbowed: true, startBinding: { elementId: r.refs.r1 }, endBinding: { elementId: r.refs.r2 } });
    expect(fx.scene('Pics.excalidraw').files.f1.dataURL).toBe(PIXEL);
    const restored = await restoreInNode(elements);
    expect(restored.map((e: any) => [e.id, e.type])).toEqual(elements.map((e: any) => [e.id, e.type]));
    expect(restored.find((e: any) => e.id === r.refs.el).endBinding).toMatchObject({ elementId: r.refs.r2 });
    const svg = value(await fx.call('vault_render_canvas', { canvas: 'Pics' })).data;
    expect(svg).toContain('<image');
  });

  it('refuses bindings an arrow cannot have and children only a frame has', async () => {
    const r = value(await fx.call('vault_read_canvas_elements', { canvas: 'Pics' }));
    const line = r.elements.find((e: any) => e.type === 'line');
    const e1 = error(await fx.call('vault_draw_on_canvas', { canvas: 'Pics', elements: [{ type: 'arrow', start: { elementId: line.id } }] }));
    expect(e1.message).toContain('cannot bind to a line');
    const e2 = error(await fx.call('vault_draw_on_canvas', { canvas: 'Pics', elements: [{ type: 'line', start: { elementId: line.id } }] }));
    expect(e2.message).toContain('only arrows bind');
    const e3 = error(await fx.call('vault_draw_on_canvas', { canvas: 'Pics', elements: [{ type: 'rectangle', children: [{ elementId: line.id }] }] }));
    expect(e3.message).toContain('only frames have children');
    const e4 = error(
      await fx.call('vault_draw_on_canvas', {
        canvas: 'Pics',
        elements: [
          { type: 'rectangle', ref: 'x' },
          { type: 'ellipse', ref: 'x' },
        ],
      }),
    );
    expect(e4.message).toContain('ref "x" is used twice');
  });

  it('puts shapes already on the canvas (with their labels) into a new frame sized around them', async () => {
    const made = value(
      await fx.call('vault_draw_on_canvas', {
        canvas: 'Pics',
        elements: [
          { type: 'rectangle', ref: 'p', x: 0, y: 1000, width: 100, height: 50, label: { text: 'one' } },
          { type: 'ellipse', ref: 'q', x: 300, y: 1100, width: 100, height: 50 },
        ],
      }),
    );
    const fr = value(
      await fx.call('vault_draw_on_canvas', {
        canvas: 'Pics',
        elements: [{ type: 'frame', ref: 'g', name: 'Group', children: [{ elementId: made.refs.p }, { elementId: made.refs.q }] }],
      }),
    ).refs.g;
    const els = fx.scene('Pics.excalidraw').elements;
    const get = (id: string) => els.find((e: any) => e.id === id);
    expect(get(made.refs.p).frameId).toBe(fr);
    expect(get(made.refs.q).frameId).toBe(fr);
    expect(els.find((e: any) => e.containerId === made.refs.p).frameId).toBe(fr);
    expect(get(fr)).toMatchObject({ x: -10, y: 990, width: 420, height: 170 });
  });

  it('moves a frame with its children', async () => {
    const made = value(
      await fx.call('vault_draw_on_canvas', {
        canvas: 'Pics',
        elements: [
          { type: 'rectangle', ref: 'k', x: 0, y: 600, width: 100, height: 50, label: { text: 'kid' } },
          { type: 'frame', ref: 'fr', name: 'Box', children: [{ ref: 'k' }] },
        ],
      }),
    );
    value(await fx.call('vault_edit_canvas_elements', { canvas: 'Pics', changes: [{ elementId: made.refs.fr, dx: 500 }] }));
    const els = fx.scene('Pics.excalidraw').elements;
    expect(els.find((e: any) => e.id === made.refs.k)).toMatchObject({ x: 500, y: 600, frameId: made.refs.fr });
    expect(els.find((e: any) => e.containerId === made.refs.k).x).toBeGreaterThan(500);
  });
});

describe('canvases that are not there or not canvases', () => {
  let fx: CanvasFixture;
  beforeAll(async () => {
    fx = await canvasKernel({ files: { 'Broken.excalidraw': '{"type": "something-else"}', 'Deep/Same.excalidraw': '', 'Other/Same.excalidraw': '' } });
  });
  afterAll(async () => fx.close());

  it('names the canvases there are when one is not found, asks for the path when a name is ambiguous, and says a file is not a canvas', async () => {
    value(await fx.call('vault_create_canvas', { name: 'Real' }));
    const e1 = error(await fx.call('vault_read_canvas', { canvas: 'Nope' }));
    expect(e1).toMatchObject({ code: 'NOT_FOUND', message: expect.stringContaining('Real.excalidraw') });
    const e2 = error(await fx.call('vault_read_canvas', { canvas: 'Same' }));
    expect(e2.message).toContain('names 2 canvases');
    const e3 = error(await fx.call('vault_read_canvas', { canvas: 'Broken' }));
    expect(e3).toMatchObject({ code: 'VALIDATION', message: expect.stringContaining('is not an Excalidraw canvas') });
    const e4 = error(await fx.call('vault_create_canvas', { name: 'Real' }));
    expect(e4.code).toBe('CONFLICT');
    const e5 = error(await fx.call('vault_create_canvas', { name: '../outside' }));
    expect(e5.code).toBe('VALIDATION');
    const list = value(await fx.call('vault_list_canvases', {})).canvases;
    expect(list.find((c: any) => c.name === 'Broken.excalidraw').error).toContain('not an Excalidraw canvas');
  });
});
