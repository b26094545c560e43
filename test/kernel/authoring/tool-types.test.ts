import * as fs from 'node:fs';
import * as path from 'node:path';
import { generateToolArgs, TOOL_ARGS_HEADER } from '../../../kernel/packs/tool-types.js';

describe('handler argument types generated from plugin.json', () => {
  it('turns the JSON Schema that manifests use into one ToolArgs interface', () => {
    const text = generateToolArgs({
      tools: [
        {
          name: 'read_notes',
          description: 'Reads notes.',
          parameters: {
            type: 'object',
            required: ['path', 'mode'],
            additionalProperties: false,
            properties: {
              path: { type: 'string', description: 'Where.' },
              mode: { enum: ['fast', "it's slow"] },
              limit: { type: 'integer' },
              tags: { type: 'array', items: { type: 'string' } },
              pair: { type: 'array', items: [{ type: 'number' }, { type: 'boolean' }] },
              either: { anyOf: [{ type: 'string' }, { type: 'null' }] },
              kind: { const: 'note' },
              'odd-key': { type: ['string', 'number'] },
              meta: { type: 'object', additionalProperties: { type: 'string' } },
            },
          },
        },
        { name: 'nothing', parameters: { type: 'object', properties: {}, additionalProperties: false } },
      ],
    });
    expect(text.startsWith(`${TOOL_ARGS_HEADER}\n`)).toBe(true);
    expect(text).toContain(
      [
        '  /** Reads notes. */',
        '  read_notes: {',
        '    /** Where. */',
        '    path: string;',
        `    mode: 'fast' | "it's slow";`,
        '    limit?: number;',
        '    tags?: string[];',
        '    pair?: [number, boolean];',
        '    either?: string | null;',
        `    kind?: 'note';`,
        `    'odd-key'?: string | number;`,
        '    meta?: Record<string, string>;',
        '  };',
        '  nothing: Record<string, never>;',
      ].join('\n'),
    );
  });

  it('matches what the built-in packs have committed (npm run build regenerates them)', () => {
    const packs = fs.readdirSync('plugins').filter((id) => fs.existsSync(path.join('plugins', id, 'tool-args.ts')));
    expect(packs).toEqual(expect.arrayContaining(['fs-tools', 'shell']));
    for (const id of packs) {
      const manifest = JSON.parse(fs.readFileSync(path.join('plugins', id, 'plugin.json'), 'utf8'));
      expect(fs.readFileSync(path.join('plugins', id, 'tool-args.ts'), 'utf8')).toBe(generateToolArgs(manifest));
    }
  });
});
