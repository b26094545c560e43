/**
 * A drawing's approval preview carries the scene as it would look: an SVG rendered by the pack's
 * own renderer, as a data: URL beside the text (the web console shows it; a terminal reads the
 * text). Real pack, real renderer, real files.
 */
import { canvasKernel, value, warmRenderer, type CanvasFixture } from './helpers.js';

describe('the image in a canvas drawing preview', () => {
  let fx: CanvasFixture;
  afterAll(async () => fx?.close());

  it('renders the canvas with the new elements into the preview the person is asked with', async () => {
    fx = await canvasKernel();
    await warmRenderer(fx);
    const made = value(await fx.call('vault_create_canvas', { name: 'Sketch' }));
    fx.prompter.asked.length = 0;
    value(
      await fx.call('vault_draw_on_canvas', {
        canvas: 'Sketch',
        version: made.version,
        elements: [{ type: 'rectangle', x: 0, y: 0, width: 220, height: 90, label: { text: 'Quarterly plan' } }],
      }),
    );
    const preview = fx.prompter.asked[0]!.preview as { kind: string; text: string; image?: string };
    expect(preview.text).toContain('Draws on Sketch.excalidraw:');
    expect(preview.image).toMatch(/^data:image\/svg\+xml;base64,[A-Za-z0-9+/]+={0,2}$/);
    const svg = Buffer.from(preview.image!.slice('data:image/svg+xml;base64,'.length), 'base64').toString('utf8');
    expect(svg).toMatch(/^<\?xml version="1\.0" encoding="UTF-8"\?>\n<svg /);
    // The new element's label is drawn: the picture is of the scene after the change.
    expect(svg).toContain('Quarterly plan');
    expect(svg).not.toMatch(/<script/i);
  });
});
