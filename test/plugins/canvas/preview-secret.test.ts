/**
 * A known secret drawn on a canvas (an agent writes a key into a label) must not reach the person
 * asked, nor `memo approvals list --json`, the console or the control socket, through the drawing
 * preview's image: the SVG's text is plain text inside the base64 data: URL. The pipeline scrubs the
 * preview's text and, through scrubPreview (kernel/secrets/known-secrets.ts) in tool-pipeline.ts
 * previewOf, its image. Real pack, real renderer, a secret in the kernel's environment.
 */
import { KnownSecrets, scrubPreview } from '../../../kernel/secrets/known-secrets.js';
import type { Preview } from '../../../kernel/tools/contract.js';
import { canvasKernel, value, warmRenderer, type CanvasFixture } from './helpers.js';

const ENV_NAME = 'MEMO_TEST_CANVAS_API_KEY';
const SECRET = 'sk-live-4f9c2e7a1b8d3f60';
const SVG_PREFIX = 'data:image/svg+xml;base64,';

type ImagePreview = Preview & { image?: string };
const svgOf = (p: ImagePreview) => Buffer.from(p.image!.slice(SVG_PREFIX.length), 'base64').toString('utf8');

describe('a known secret drawn on a canvas, in the approval preview', () => {
  let fx: CanvasFixture;
  let asked: ImagePreview;
  beforeAll(async () => {
    process.env[ENV_NAME] = SECRET;
    fx = await canvasKernel();
    await warmRenderer(fx);
    const made = value(await fx.call('vault_create_canvas', { name: 'Keys' }));
    fx.prompter.asked.length = 0;
    value(
      await fx.call('vault_draw_on_canvas', {
        canvas: 'Keys',
        version: made.version,
        elements: [
          { type: 'rectangle', x: 0, y: 0, width: 900, height: 90, label: { text: SECRET } },
          { type: 'text', x: 0, y: 200, text: 'Quarterly plan' },
        ],
      }),
    );
    asked = fx.prompter.asked[0]!.preview as ImagePreview;
  });
  afterAll(async () => {
    delete process.env[ENV_NAME];
    await fx?.close();
  });

  it('has its text scrubbed', () => {
    expect(asked.text).toContain('Draws on Keys.excalidraw:');
    expect(asked.text).not.toContain(SECRET);
    expect(asked.text).toContain('[masked]');
  });

  // The rendered SVG draws the label: the pipeline's previewOf runs scrubPreview on the image too.
  it('has no known secret in its image, and keeps the rest of the picture', () => {
    expect(asked.image).toMatch(/^data:image\/svg\+xml;base64,[A-Za-z0-9+/]+={0,2}$/);
    const svg = svgOf(asked);
    expect(svg).not.toContain(SECRET);
    expect(svg).toContain('[masked]');
    expect(svg).toContain('Quarterly plan');
    expect(svg).toMatch(/^<\?xml version="1\.0" encoding="UTF-8"\?>\n<svg /);
  });

  it('scrubPreview leaves a scrubbed preview as it is', () => {
    const again = scrubPreview(asked, new KnownSecrets({ env: { [ENV_NAME]: SECRET } }));
    expect(again).toEqual(asked);
  });
});
