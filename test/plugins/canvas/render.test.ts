import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { requireFreshBuild } from '../../helpers/dist.js';
import { canvasKernel, error, value, type CanvasFixture } from './helpers.js';
import { PNG } from './png.js';

const BIN = path.resolve('bin/memo');

describe("rendering a canvas with Excalidraw's own export", () => {
  let fx: CanvasFixture;
  beforeAll(async () => {
    fx = await canvasKernel();
    value(await fx.call('vault_create_canvas', { name: 'Flow' }));
    value(
      await fx.call('vault_draw_on_canvas', {
        canvas: 'Flow',
        elements: [
          {
            type: 'rectangle',
            ref: 'a',
            x: 0,
            y: 0,
            width: 200,
            height: 100,
            backgroundColor: '#ff0000',
            fillStyle: 'solid',
            roughness: 0,
            label: { text: 'Start' },
          },
          { type: 'ellipse', ref: 'b', x: 400, y: 0, width: 200, height: 100, backgroundColor: '#0000ff', fillStyle: 'solid', roughness: 0 },
          { type: 'arrow', start: { ref: 'a' }, end: { ref: 'b' } },
        ],
      }),
    );
  });
  afterAll(async () => fx.close());

  it('makes an SVG of the scene: its size is the drawing plus padding, with the shapes, fills and text', async () => {
    const r = value(await fx.call('vault_render_canvas', { canvas: 'Flow', format: 'svg' }));
    expect(r).toMatchObject({ format: 'svg', width: 620, height: 120 });
    expect(r.data).toContain('<svg');
    expect(r.data).toContain('svg-source:excalidraw');
    expect(r.data).toContain('fill="#ff0000"');
    expect(r.data).toContain('fill="#0000ff"');
    expect(r.data).toContain('>Start</text>');
    // Excalidraw's font, subset and inlined from its own bundle: the SVG looks the same anywhere.
    expect(r.data).toContain('@font-face { font-family: Excalifont; src: url(data:font/woff2;base64,');
    expect(r.data).not.toMatch(/https?:\/\/(?!www\.w3\.org)/);
  });

  it('makes a PNG whose size and colours match the drawing', async () => {
    const r = value(await fx.call('vault_render_canvas', { canvas: 'Flow', format: 'png', scale: 2 }));
    expect([r.width, r.height]).toEqual([1240, 240]);
    const png = PNG.decode(Buffer.from(r.data, 'base64'));
    expect([png.width, png.height]).toEqual([1240, 240]);
    // Inside the red rectangle (left), inside the blue ellipse (right), the white background in a corner.
    expect(png.pixel(60, 60)).toEqual([255, 0, 0, 255]);
    expect(png.pixel(1020, 120)).toEqual([0, 0, 255, 255]);
    expect(png.pixel(4, 4)).toEqual([255, 255, 255, 255]);
    // The label is drawn: dark pixels where the text sits in the middle of the rectangle.
    let dark = 0;
    for (let x = 150; x < 290; x++) for (let y = 100; y < 140; y++) if (png.pixel(x, y)[0]! < 100) dark++;
    expect(dark).toBeGreaterThan(50);
  });

  it('refuses an empty canvas with a clear message', async () => {
    value(await fx.call('vault_create_canvas', { name: 'Empty' }));
    expect(error(await fx.call('vault_render_canvas', { canvas: 'Empty' }))).toMatchObject({ code: 'VALIDATION', message: expect.stringContaining('empty') });
  });
});

describe('memo canvas render', () => {
  beforeAll(requireFreshBuild);

  it('writes a PNG and an SVG of a canvas through the CLI', async () => {
    const fx = await canvasKernel();
    value(await fx.call('vault_create_canvas', { name: 'Flow' }));
    value(
      await fx.call('vault_draw_on_canvas', {
        canvas: 'Flow',
        elements: [{ type: 'diamond', x: 0, y: 0, width: 100, height: 100, backgroundColor: '#40c057', fillStyle: 'solid' }],
      }),
    );
    await fx.close();
    const memo = (args: string[]) => spawnSync(process.execPath, [BIN, '--root', fx.root, '--data', fx.dataDir, ...args], { encoding: 'utf8', cwd: fx.root });
    const png = path.join(fx.root, 'out.png');
    const r1 = memo(['canvas', 'render', 'Flow', '--png', '--out', png, '--json']);
    expect(r1.status).toBe(0);
    expect(JSON.parse(r1.stdout)).toMatchObject({ ok: true, result: { canvas: 'Flow.excalidraw', format: 'png', width: 120, height: 120 } });
    expect(PNG.decode(fs.readFileSync(png)).width).toBe(120);
    const r2 = memo(['canvas', 'render', 'Flow', '--svg']);
    expect(r2.stdout).toContain('Flow.excalidraw -> Flow.svg');
    expect(fs.readFileSync(path.join(fx.root, 'Flow.svg'), 'utf8')).toContain('fill="#40c057"');
    const r3 = memo(['canvas', 'render', 'Nope', '--png']);
    expect(r3.status).toBe(1);
    expect(r3.stdout).toContain('NOT_FOUND: There is no canvas "Nope"');
  });
});
