import { canvasKernel, error, value, type CanvasFixture } from './helpers.js';
import { restoreInNode } from './restore.js';

const flowchart = [
  { type: 'rectangle', ref: 'a', x: 0, y: 0, width: 200, height: 80, label: { text: 'Start' }, backgroundColor: '#a5d8ff', fillStyle: 'solid' },
  { type: 'diamond', ref: 'b', x: 320, y: -20, width: 200, height: 120, label: { text: 'Check?' } },
  { type: 'ellipse', ref: 'c', x: 640, y: 0, width: 200, height: 80, label: { text: 'Done' } },
  { type: 'arrow', ref: 'ab', start: { ref: 'a' }, end: { ref: 'b' } },
  { type: 'arrow', ref: 'bc', start: { ref: 'b' }, end: { ref: 'c' }, label: { text: 'yes' } },
  { type: 'frame', ref: 'f', name: 'Flow', children: [{ ref: 'a' }, { ref: 'b' }, { ref: 'c' }] },
];

const byId = (elements: any[]) => new Map(elements.map((e) => [e.id, e]));
const arrowIds = (el: any) => (el.boundElements ?? []).filter((b: any) => b.type === 'arrow').map((b: any) => b.id);
/** The scene position of an arrow's last point. */
const tip = (arrow: any) => [arrow.x + arrow.points.at(-1)[0], arrow.y + arrow.points.at(-1)[1]];

describe('drawing a flowchart with refs, bound arrows and a frame', () => {
  let fx: CanvasFixture;
  let refs: Record<string, string>;
  beforeAll(async () => {
    fx = await canvasKernel();
    const made = value(await fx.call('vault_create_canvas', { name: 'Flow' }));
    refs = value(await fx.call('vault_draw_on_canvas', { canvas: 'Flow', version: made.version, elements: flowchart })).refs;
  });
  afterAll(async () => fx.close());

  it('creates an Excalidraw file (type excalidraw, version 2) in the vault folder', () => {
    const scene = fx.scene('Flow.excalidraw');
    expect(scene).toMatchObject({ type: 'excalidraw', version: 2, appState: expect.any(Object), files: {} });
  });

  it('maps every ref to the id it became', () => {
    expect(Object.keys(refs).sort()).toEqual(['a', 'ab', 'b', 'bc', 'c', 'f']);
    const ids = byId(fx.scene('Flow.excalidraw').elements);
    expect(ids.get(refs.a!)).toMatchObject({ type: 'rectangle', backgroundColor: '#a5d8ff' });
    expect(ids.get(refs.b!)).toMatchObject({ type: 'diamond' });
    expect(ids.get(refs.f!)).toMatchObject({ type: 'frame', name: 'Flow' });
  });

  it('binds each arrow on both sides: the arrow names its shapes and the shapes list the arrow', () => {
    const ids = byId(fx.scene('Flow.excalidraw').elements);
    const ab = ids.get(refs.ab!);
    const bc = ids.get(refs.bc!);
    expect(ab.startBinding).toMatchObject({ elementId: refs.a });
    expect(ab.endBinding).toMatchObject({ elementId: refs.b });
    expect(bc.startBinding).toMatchObject({ elementId: refs.b });
    expect(bc.endBinding).toMatchObject({ elementId: refs.c });
    expect(arrowIds(ids.get(refs.a!))).toEqual([refs.ab]);
    expect(arrowIds(ids.get(refs.b!)).sort()).toEqual([refs.ab, refs.bc].sort());
    expect(arrowIds(ids.get(refs.c!))).toEqual([refs.bc]);
  });

  it('routes the arrows from outline to outline, not through the shapes', () => {
    const ids = byId(fx.scene('Flow.excalidraw').elements);
    const ab = ids.get(refs.ab!);
    expect(ab.x).toBeGreaterThanOrEqual(200);
    expect(ab.x).toBeLessThan(215);
    expect(tip(ab)[0]).toBeGreaterThan(300);
    expect(tip(ab)[0]).toBeLessThanOrEqual(320);
  });

  it('puts labels inside their shapes and on the arrow as bound text', () => {
    const elements = fx.scene('Flow.excalidraw').elements;
    const ids = byId(elements);
    const label = elements.find((e: any) => e.type === 'text' && e.containerId === refs.a);
    expect(label).toMatchObject({ text: 'Start', originalText: 'Start', verticalAlign: 'middle', textAlign: 'center' });
    expect(ids.get(refs.a!).boundElements).toContainEqual({ type: 'text', id: label.id });
    expect(label.x).toBeGreaterThan(0);
    expect(label.x + label.width).toBeLessThan(200);
    // The arrow's label sits on the routed arrow, between the diamond (ends at 520) and the ellipse (starts at 640).
    const yes = elements.find((e: any) => e.type === 'text' && e.containerId === refs.bc);
    expect(yes).toMatchObject({ text: 'yes' });
    expect(yes.x).toBeGreaterThan(520);
    expect(yes.x + yes.width).toBeLessThan(640);
    expect(yes.y + yes.height / 2).toBeCloseTo(40, 0);
    for (const e of elements) for (const n of [e.x, e.y, e.width, e.height]) expect(Number.isFinite(n)).toBe(true);
  });

  it('makes the shapes and their labels members of the frame, sized around them', () => {
    const elements = fx.scene('Flow.excalidraw').elements;
    for (const r of ['a', 'b', 'c']) {
      expect(byId(elements).get(refs[r]!).frameId).toBe(refs.f);
      expect(elements.find((e: any) => e.containerId === refs[r]).frameId).toBe(refs.f);
    }
    const frame = byId(elements).get(refs.f!);
    expect(frame.x).toBeLessThanOrEqual(0);
    expect(frame.y).toBeLessThanOrEqual(-20);
    expect(frame.x + frame.width).toBeGreaterThanOrEqual(840);
  });

  it("fills every field the editor requires, and Excalidraw's own restoreElements keeps every element and binding", async () => {
    const elements = fx.scene('Flow.excalidraw').elements;
    for (const e of elements) {
      for (const k of [
        'id',
        'type',
        'x',
        'y',
        'width',
        'height',
        'angle',
        'strokeColor',
        'backgroundColor',
        'fillStyle',
        'strokeWidth',
        'strokeStyle',
        'roughness',
        'opacity',
        'groupIds',
        'frameId',
        'index',
        'roundness',
        'seed',
        'version',
        'versionNonce',
        'isDeleted',
        'boundElements',
        'updated',
        'link',
        'locked',
      ])
        expect(e).toHaveProperty(k);
    }
    const restored = await restoreInNode(elements);
    expect(restored.map((e: any) => e.id)).toEqual(elements.map((e: any) => e.id));
    const r = byId(restored);
    expect(r.get(refs.ab!).startBinding).toMatchObject({ elementId: refs.a });
    expect(r.get(refs.ab!).endBinding).toMatchObject({ elementId: refs.b });
    expect(arrowIds(r.get(refs.b!)).sort()).toEqual([refs.ab, refs.bc].sort());
    expect(r.get(refs.a!).frameId).toBe(refs.f);
    expect(r.get(refs.ab!).points).toEqual(byId(elements).get(refs.ab!).points);
  });

  it('binds an arrow to shapes already on the canvas by elementId, and adds existing shapes to a new frame', async () => {
    const before = value(await fx.call('vault_read_canvas_elements', { canvas: 'Flow' }));
    const r = value(
      await fx.call('vault_draw_on_canvas', {
        canvas: 'Flow',
        version: before.version,
        elements: [
          { type: 'text', ref: 'note', x: 0, y: 300, text: 'Reviewed\nby Ada', fontSize: 28, strokeColor: '#e03131' },
          { type: 'arrow', start: { elementId: refs.c }, end: { ref: 'note' }, strokeStyle: 'dashed' },
          { type: 'frame', name: 'Later', children: [{ ref: 'note' }] },
        ],
      }),
    );
    const ids = byId(fx.scene('Flow.excalidraw').elements);
    const arrow = ids.get(r.added[1].id);
    expect(arrow).toMatchObject({ startBinding: { elementId: refs.c }, endBinding: { elementId: r.refs.note }, strokeStyle: 'dashed' });
    expect(arrowIds(ids.get(refs.c!))).toContain(arrow.id);
    expect(arrowIds(ids.get(r.refs.note))).toContain(arrow.id);
    expect(ids.get(r.refs.note)).toMatchObject({ text: 'Reviewed\nby Ada', fontSize: 28, frameId: r.added[2].id });
    expect(ids.get(r.refs.note).height).toBeGreaterThan(60); // two lines of 28 px
  });

  it('places an element given without coordinates at the origin, never at NaN', async () => {
    const r = value(await fx.call('vault_draw_on_canvas', { canvas: 'Flow', elements: [{ type: 'rectangle' }, { type: 'arrow' }] }));
    const ids = byId(fx.scene('Flow.excalidraw').elements);
    expect(ids.get(r.added[0].id)).toMatchObject({ x: 0, y: 0 });
    // The converter nudges a free arrow by half a unit, as the editor does.
    expect(Math.abs(ids.get(r.added[1].id).x)).toBeLessThanOrEqual(0.5);
    expect(Math.abs(ids.get(r.added[1].id).y)).toBeLessThanOrEqual(0.5);
  });

  it('refuses a ref nobody has, an unknown elementId and an image without an attached file, before anyone is asked', async () => {
    fx.prompter.asked.length = 0;
    const e1 = error(
      await fx.call('vault_draw_on_canvas', { canvas: 'Flow', elements: [{ type: 'arrow', start: { ref: 'nope' }, end: { elementId: refs.a } }] }),
    );
    expect(e1).toMatchObject({ code: 'VALIDATION', message: expect.stringContaining('ref "nope"') });
    const e2 = error(await fx.call('vault_draw_on_canvas', { canvas: 'Flow', elements: [{ type: 'arrow', start: { elementId: 'missing' } }] }));
    expect(e2.message).toContain('"missing", which is not on the canvas');
    const e3 = error(await fx.call('vault_draw_on_canvas', { canvas: 'Flow', elements: [{ type: 'image', fileId: 'f1', x: 0, y: 0 }] }));
    expect(e3.message).toContain('fileId of a file already attached');
    expect(fx.prompter.asked).toHaveLength(0);
  });

  it('reads back what is where, with bindings, for the next call to build on', async () => {
    const r = value(await fx.call('vault_read_canvas_elements', { canvas: 'Flow' }));
    const a = r.elements.find((e: any) => e.id === refs.a);
    expect(a).toMatchObject({
      type: 'rectangle',
      x: 0,
      y: 0,
      width: 200,
      height: 80,
      text: 'Start',
      backgroundColor: '#a5d8ff',
      frameId: refs.f,
      arrows: [refs.ab],
    });
    expect(r.elements.find((e: any) => e.id === refs.ab)).toMatchObject({ type: 'arrow', start: refs.a, end: refs.b });
    // Labels are shown on their shapes, not as elements of their own.
    expect(r.elements.some((e: any) => e.containerId === refs.a)).toBe(false);
    expect(r.version).toMatch(/^[0-9a-f]{16}$/);
  });

  it('previews what will be drawn, naming refs and bindings', async () => {
    fx.prompter.asked.length = 0;
    value(
      await fx.call('vault_draw_on_canvas', {
        canvas: 'Flow',
        elements: [
          { type: 'ellipse', ref: 'x', x: 900, y: 0, label: { text: 'Extra' } },
          { type: 'arrow', start: { elementId: refs.c }, end: { ref: 'x' } },
        ],
      }),
    );
    const text = fx.prompter.asked[0]?.preview?.text ?? '';
    expect(text).toContain('Draws on Flow.excalidraw:');
    expect(text).toContain('+ ellipse [x] "Extra"');
    expect(text).toContain('+ arrow from ellipse "Done"');
    expect(text).toContain('to ref x');
  });

  it('names a frame without a ref by its name in the preview, for itself and its children', async () => {
    fx.prompter.asked.length = 0;
    value(
      await fx.call('vault_draw_on_canvas', {
        canvas: 'Flow',
        elements: [
          { type: 'rectangle', x: 0, y: 600, width: 100, height: 50, label: { text: 'Later' } },
          { type: 'frame', name: 'Parking lot', children: [{ elementId: refs.c }] },
        ],
      }),
    );
    const text = fx.prompter.asked[0]?.preview?.text ?? '';
    expect(text).toContain('+ frame "Parking lot"');
  });
});
