import * as fs from 'node:fs';
import * as path from 'node:path';
import { canvasKernel, error, value, type CanvasFixture } from './helpers.js';
import { restoreInNode } from './restore.js';

const byId = (elements: any[]) => new Map(elements.map((e) => [e.id, e]));
const tip = (arrow: any) => [arrow.x + arrow.points.at(-1)[0], arrow.y + arrow.points.at(-1)[1]];

describe('editing a canvas: moves that arrows follow, restyles, retexts, deletes, and writes over a changed file refused', () => {
  let fx: CanvasFixture;
  let refs: Record<string, string>;
  beforeAll(async () => {
    fx = await canvasKernel();
    value(await fx.call('vault_create_canvas', { name: 'Plans/Board' }));
    refs = value(
      await fx.call('vault_draw_on_canvas', {
        canvas: 'Plans/Board',
        elements: [
          { type: 'rectangle', ref: 'a', x: 0, y: 0, width: 160, height: 80, label: { text: 'Idea' } },
          { type: 'rectangle', ref: 'b', x: 400, y: 0, width: 160, height: 80, label: { text: 'Plan' } },
          { type: 'arrow', ref: 'ab', start: { ref: 'a' }, end: { ref: 'b' } },
          { type: 'text', ref: 't', x: 0, y: 200, text: 'scratch' },
        ],
      }),
    ).refs;
  });
  afterAll(async () => fx.close());

  const scene = () => fx.scene('Plans/Board.excalidraw');

  it('moves a bound shape and the arrow follows it, in the file and after Excalidraw restores it', async () => {
    const before = byId(scene().elements);
    const oldTip = tip(before.get(refs.ab!));
    fx.prompter.asked.length = 0;
    const r = value(await fx.call('vault_edit_canvas_elements', { canvas: 'Board', changes: [{ elementId: refs.b, dy: 300 }] }));
    expect(r.moved).toEqual([refs.b]);
    expect(fx.prompter.asked[0]?.preview?.text).toContain(`move rectangle "Plan" (${refs.b}) from (400, 0) to (400, 300)`);
    expect(fx.prompter.asked[0]?.preview?.text).toContain('1 bound arrow follows.');
    const after = byId(scene().elements);
    const b = after.get(refs.b!);
    expect([b.x, b.y]).toEqual([400, 300]);
    // The label moved with its shape.
    const label = scene().elements.find((e: any) => e.containerId === refs.b);
    expect(label.y).toBeGreaterThan(300);
    const newTip = tip(after.get(refs.ab!));
    expect(newTip[1]).toBeGreaterThan(oldTip[1] + 200);
    expect(newTip[1]).toBeGreaterThanOrEqual(290);
    expect(newTip[0]).toBeGreaterThan(350);
    expect(after.get(refs.ab!).endBinding).toMatchObject({ elementId: refs.b });
    const restored = byId(await restoreInNode(scene().elements));
    expect(restored.get(refs.ab!).endBinding).toMatchObject({ elementId: refs.b });
    expect(tip(restored.get(refs.ab!))).toEqual(newTip);
  });

  it('restyles and retexts, re-measuring the label', async () => {
    value(
      await fx.call('vault_edit_canvas_elements', {
        canvas: 'Board',
        changes: [
          { elementId: refs.a, backgroundColor: '#ffc9c9', fillStyle: 'solid', strokeStyle: 'dashed', text: 'A much longer idea' },
          { elementId: refs.t, text: 'scratch\nsecond line', fontSize: 36 },
        ],
      }),
    );
    const els = scene().elements;
    const ids = byId(els);
    expect(ids.get(refs.a!)).toMatchObject({ backgroundColor: '#ffc9c9', fillStyle: 'solid', strokeStyle: 'dashed' });
    const label = els.find((e: any) => e.containerId === refs.a);
    expect(label).toMatchObject({ originalText: 'A much longer idea' });
    expect(ids.get(refs.t!)).toMatchObject({ text: 'scratch\nsecond line', fontSize: 36 });
    expect(ids.get(refs.t!).height).toBeGreaterThan(80);
  });

  it('refuses a write when the canvas changed since the version the caller read, and keeps the other change', async () => {
    const read = value(await fx.call('vault_read_canvas_elements', { canvas: 'Board' }));
    const file = path.join(fx.vault, 'Plans/Board.excalidraw');
    const theirs = JSON.parse(fs.readFileSync(file, 'utf8'));
    theirs.elements.find((e: any) => e.id === refs.t).strokeColor = '#2f9e44';
    fs.writeFileSync(file, JSON.stringify(theirs));
    fx.prompter.asked.length = 0;
    const e = error(await fx.call('vault_edit_canvas_elements', { canvas: 'Board', version: read.version, changes: [{ elementId: refs.a, dx: 10 }] }));
    expect(e.code).toBe('CONFLICT');
    expect(e.message).toContain('changed since it was read');
    expect(fx.prompter.asked).toHaveLength(0);
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toEqual(theirs);
    const e2 = error(await fx.call('vault_draw_on_canvas', { canvas: 'Board', version: read.version, elements: [{ type: 'rectangle', x: 0, y: 0 }] }));
    expect(e2.code).toBe('CONFLICT');
  });

  it('refuses a write when the canvas changed while the person was looking at the preview', async () => {
    const file = path.join(fx.vault, 'Plans/Board.excalidraw');
    const ask = fx.prompter.ask.bind(fx.prompter);
    fx.prompter.ask = (request, signal) => {
      const theirs = JSON.parse(fs.readFileSync(file, 'utf8'));
      theirs.appState.viewBackgroundColor = '#fff9db';
      fs.writeFileSync(file, JSON.stringify(theirs));
      return ask(request, signal);
    };
    try {
      const e = error(await fx.call('vault_draw_on_canvas', { canvas: 'Board', elements: [{ type: 'ellipse', x: 0, y: 500 }] }));
      expect(e).toMatchObject({ code: 'CONFLICT', message: expect.stringContaining('changed after the preview was shown') });
    } finally {
      fx.prompter.ask = ask;
    }
    expect(scene().appState.viewBackgroundColor).toBe('#fff9db');
    expect(scene().elements.some((e: any) => e.type === 'ellipse')).toBe(false);
  });

  it('deletes an element with its label, unbinds the arrow on both sides, and asks every time', async () => {
    value(await fx.call('vault_edit_canvas_elements', { canvas: 'Board', changes: [{ elementId: refs.t, dx: 1 }] }));
    fx.prompter.asked.length = 0;
    const r = value(await fx.call('vault_edit_canvas_elements', { canvas: 'Board', changes: [{ elementId: refs.b, delete: true }] }));
    expect(r.deleted).toEqual([refs.b]);
    expect(fx.prompter.asked).toHaveLength(1);
    expect(fx.prompter.asked[0]?.preview).toMatchObject({ kind: 'delete', text: expect.stringContaining(`delete rectangle "Plan" (${refs.b})`) });
    const els = scene().elements;
    expect(els.some((e: any) => e.id === refs.b || e.containerId === refs.b)).toBe(false);
    const arrow = byId(els).get(refs.ab!);
    expect(arrow.endBinding).toBeNull();
    expect(arrow.startBinding).toMatchObject({ elementId: refs.a });
    const restored = await restoreInNode(els);
    expect(restored.map((e: any) => e.id)).toEqual(els.map((e: any) => e.id));
  });

  it('refuses changes to an element that is not there, before anyone is asked', async () => {
    fx.prompter.asked.length = 0;
    const e = error(await fx.call('vault_edit_canvas_elements', { canvas: 'Board', changes: [{ elementId: 'nope', dx: 5 }] }));
    expect(e).toMatchObject({ code: 'VALIDATION', message: expect.stringContaining('"nope" is not on the canvas') });
    expect(fx.prompter.asked).toHaveLength(0);
  });

  it('writes atomically: no temp file is left beside the canvas', () => {
    expect(fs.readdirSync(path.join(fx.vault, 'Plans'))).toEqual(['Board.excalidraw']);
  });
});

describe('editing arrows and unlabelled shapes', () => {
  let fx: CanvasFixture;
  beforeAll(async () => {
    fx = await canvasKernel();
  });
  afterAll(async () => fx.close());

  it('gives a shape without a label one, bound and centred, and keeps an arrow bound at both ends where its shapes put it', async () => {
    value(await fx.call('vault_create_canvas', { name: 'A' }));
    const { refs } = value(
      await fx.call('vault_draw_on_canvas', {
        canvas: 'A',
        elements: [
          { type: 'ellipse', ref: 'e', x: 0, y: 0, width: 200, height: 100 },
          { type: 'rectangle', ref: 'r', x: 400, y: 0, width: 200, height: 100 },
          { type: 'arrow', ref: 'a', start: { ref: 'e' }, end: { ref: 'r' } },
        ],
      }),
    );
    value(await fx.call('vault_edit_canvas_elements', { canvas: 'A', changes: [{ elementId: refs.e, text: 'Hello' }] }));
    const els = fx.scene('A.excalidraw').elements;
    const label = els.find((x: any) => x.containerId === refs.e);
    expect(label).toMatchObject({ type: 'text', text: 'Hello', textAlign: 'center', verticalAlign: 'middle' });
    expect(byId(els).get(refs.e).boundElements).toContainEqual({ id: label.id, type: 'text' });
    expect(label.x + label.width / 2).toBeCloseTo(100, 0);
    expect(label.y + label.height / 2).toBeCloseTo(50, 0);
    const e = error(await fx.call('vault_edit_canvas_elements', { canvas: 'A', changes: [{ elementId: refs.a, dx: 50 }] }));
    expect(e.message).toContain('is bound at both ends');
  });
});
