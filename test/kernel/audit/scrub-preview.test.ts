/**
 * scrubPreview: a tool's approval preview with the kernel's known secrets scrubbed from its text,
 * its facts and quoted text, and from its image (an SVG data: URL is decoded, scrubbed and encoded again; an image that cannot
 * be read is left out). The input is never changed.
 */
import { KnownSecrets, scrubPreview } from '../../../kernel/secrets/known-secrets.js';
import type { Preview } from '../../../kernel/tools/contract.js';

const SECRET = 'sk-live-4f9c2e7a1b8d3f60';
const known = new KnownSecrets({ env: {}, extra: () => [SECRET, 'tok&en<quoted>9f3a2c'] });

const svgOf = (body: string) => `<?xml version="1.0" encoding="UTF-8"?>\n<svg xmlns="http://www.w3.org/2000/svg">${body}</svg>`;
const b64Url = (svg: string) => `data:image/svg+xml;base64,${Buffer.from(svg, 'utf8').toString('base64')}`;
const decoded = (url: string) => Buffer.from(url.slice('data:image/svg+xml;base64,'.length), 'base64').toString('utf8');
type WithImage = Preview & { image?: string };

describe('scrubPreview', () => {
  it('scrubs its facts and its quoted text, labels too, and leaves out a part that is not text', () => {
    const preview = {
      kind: 'text',
      text: 'body',
      facts: [
        { label: 'key', value: `uses ${SECRET}` },
        { label: 'count', value: 3 },
      ],
      quoted: [{ label: `prompt ${SECRET}`, text: `send ${SECRET}`, from: 'the calendar' }, 'not a quote'],
    } as unknown as Preview;
    expect(scrubPreview(preview, known)).toEqual({
      kind: 'text',
      text: 'body',
      facts: [{ label: 'key', value: 'uses [masked]' }],
      quoted: [{ label: 'prompt [masked]', text: 'send [masked]', from: 'the calendar' }],
    });
    expect(preview.facts![0]!.value).toContain(SECRET);
  });

  it("scrubs a note edit's document (the body before and after, its title and path), and leaves out one that is not all text", () => {
    const document = { type: 'note', id: 'n1', title: `Keys ${SECRET}`, path: 'Keys.md', before: `old ${SECRET}`, after: `new ${SECRET}\n` };
    const preview = { kind: 'diff', text: 'diff', document } as Preview;
    expect(scrubPreview(preview, known).document).toEqual({
      type: 'note',
      id: 'n1',
      title: 'Keys [masked]',
      path: 'Keys.md',
      before: 'old [masked]',
      after: 'new [masked]\n',
    });
    expect(document.before).toContain(SECRET);
    const broken = { kind: 'diff', text: 'diff', document: { ...document, after: 42 } } as unknown as Preview;
    expect('document' in scrubPreview(broken, known)).toBe(false);
  });

  it('scrubs a secret drawn as SVG text inside a base64 data: URL, keeping the rest of the picture', () => {
    const preview: WithImage = {
      kind: 'text',
      text: `Draws on Plan: text "${SECRET}"`,
      image: b64Url(svgOf(`<text x="1" y="2">key ${SECRET}</text><text>Quarterly plan</text>`)),
    };
    const out = scrubPreview(preview, known);
    expect(out.text).toBe('Draws on Plan: text "[masked]"');
    expect(out.image).toMatch(/^data:image\/svg\+xml;base64,[A-Za-z0-9+/]+={0,2}$/);
    expect(decoded(out.image!)).toBe(svgOf('<text x="1" y="2">key [masked]</text><text>Quarterly plan</text>'));
    // The input is left as it was.
    expect(decoded(preview.image!)).toContain(SECRET);
  });

  it('scrubs a URL-encoded SVG data: URL the same way', () => {
    const image = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svgOf(`<text>${SECRET}</text>`))}`;
    const out = scrubPreview({ kind: 'text', text: 't', image }, known);
    expect(decodeURIComponent(out.image.slice('data:image/svg+xml;charset=utf-8,'.length))).toBe(svgOf('<text>[masked]</text>'));
  });

  it('leaves out an SVG whose secret shows only once its XML escapes are decoded, or across wrapped text lines', () => {
    const escaped = scrubPreview({ kind: 'text', text: 't', image: b64Url(svgOf('<text>tok&amp;en&lt;quoted&gt;9f3a2c</text>')) }, known);
    expect(escaped).toEqual({ kind: 'text', text: 't' });
    const wrapped = scrubPreview({ kind: 'text', text: 't', image: b64Url(svgOf('<text>sk-live-4f9c</text><text>2e7a1b8d3f60</text>')) }, known);
    expect(wrapped).toEqual({ kind: 'text', text: 't' });
  });

  it('leaves out an image it cannot read (a PNG, a link), and a non-string image', () => {
    const png = `data:image/png;base64,${Buffer.from('\x89PNG not readable').toString('base64')}`;
    for (const image of [png, 'https://example.com/a.svg', 42]) {
      expect(scrubPreview({ kind: 'text', text: 'plain', image } as unknown as WithImage, known)).toEqual({ kind: 'text', text: 'plain' });
    }
  });

  it('returns an image without secrets as it was, and a preview without an image with its text scrubbed', () => {
    const image = b64Url(svgOf('<text>Quarterly plan</text>'));
    expect(scrubPreview({ kind: 'text', text: 'a', image }, known).image).toBe(image);
    expect(scrubPreview({ kind: 'fields', text: `token: ${SECRET}` }, known)).toEqual({ kind: 'fields', text: 'token: [masked]' });
  });
});

describe('the pipeline and a preview without text', () => {
  it('scrubs a known secret from the facts of a preview that has no text at all before anyone is asked', async () => {
    const { makeKernel, tool } = await import('../../helpers/kernel-fixture.js');
    const fx = makeKernel({
      packs: [
        {
          id: 'facts-pack',
          version: '1.0.0',
          tools: [
            {
              spec: tool('facts_only', 'medium', 'write'),
              impl: {
                run: () => ({ ran: true }),
                preview: () => ({ kind: 'fields', facts: [{ label: 'token', value: `uses ${SECRET}` }] }) as unknown as Preview,
              },
            },
          ],
        },
      ],
    });
    try {
      fx.kernel.providerSettings.put({ name: 'hosted', kind: 'openai', model: 'm', apiKey: SECRET });
      fx.prompter.answer('deny-once');
      await fx.kernel.invoke({ tool: 'facts_only', args: {}, caller: { kind: 'agent' } });
      expect(fx.prompter.asked[0]!.preview).toMatchObject({ facts: [{ label: 'token', value: 'uses [masked]' }] });
    } finally {
      await fx.close();
    }
  });
});
