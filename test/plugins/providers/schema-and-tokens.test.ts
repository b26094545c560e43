import { countTokens as cl100k } from 'gpt-tokenizer/encoding/cl100k_base';
import { countTokens as o200k } from 'gpt-tokenizer/encoding/o200k_base';
import { geminiParameters, openAiParameters } from '../../../plugins/providers/schema.js';
import { bootKernel, type Booted } from './conversation.js';

describe('Gemini schema cleaning', () => {
  const schema = {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    additionalProperties: false,
    $defs: {
      Point: { type: 'object', properties: { x: { type: 'number' }, y: { type: 'number' } }, required: ['x', 'y'], additionalProperties: false },
      Node: { type: 'object', properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#/$defs/Node' } } } },
    },
    properties: {
      start: { $ref: '#/$defs/Point', description: 'Where to start' },
      tree: { $ref: '#/$defs/Node' },
      mode: { const: 'fast' },
      flag: { type: 'boolean', const: true },
      level: { type: 'integer', enum: [1, 2, 3] },
      email: { type: 'string', format: 'email', description: 'Reply-to address' },
      when: { type: 'string', format: 'date-time' },
      count: { type: 'integer', format: 'int32', minimum: 1, maximum: 50, default: 20, examples: [5] },
      note: { type: ['string', 'null'], maxLength: 200 },
      idOrName: { type: ['string', 'integer'] },
      maybe: { anyOf: [{ type: 'string', pattern: '^[a-z]+$' }, { type: 'null' }] },
      choice: { oneOf: [{ type: 'string' }, { type: 'number' }] },
      merged: { allOf: [{ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] }, { properties: { b: { type: 'integer' } } }] },
      tags: { type: 'array', uniqueItems: true },
      anything: {},
      meta: { type: 'object', additionalProperties: { type: 'string' }, propertyNames: { pattern: '^x-' } },
      color: { enum: ['red', 'green', null] },
      ignored: false,
    },
    required: ['start', 'ghost', 'ignored'],
  };

  it('converts or drops every keyword Gemini rejects', () => {
    expect(geminiParameters(schema)).toEqual({
      type: 'object',
      properties: {
        start: { type: 'object', description: 'Where to start', properties: { x: { type: 'number' }, y: { type: 'number' } }, required: ['x', 'y'] },
        tree: {
          type: 'object',
          properties: {
            name: { type: 'string' },
            children: { type: 'array', items: { type: 'object', description: '(a nested structure of the same shape as its parent)' } },
          },
        },
        mode: { type: 'string', enum: ['fast'] },
        flag: { type: 'boolean', description: '(must be true)' },
        level: { type: 'integer', description: '(one of: 1, 2, 3)' },
        email: { type: 'string', description: 'Reply-to address (format: email)' },
        when: { type: 'string', format: 'date-time' },
        count: { type: 'integer', format: 'int32', minimum: 1, maximum: 50, description: '(default: 20)' },
        note: { type: 'string', nullable: true, maxLength: 200 },
        idOrName: { anyOf: [{ type: 'string' }, { type: 'integer' }] },
        maybe: { type: 'string', pattern: '^[a-z]+$', nullable: true },
        choice: { anyOf: [{ type: 'string' }, { type: 'number' }] },
        merged: { type: 'object', properties: { a: { type: 'string' }, b: { type: 'integer' } }, required: ['a'] },
        tags: { type: 'array', items: { type: 'string' } },
        anything: { type: 'string' },
        meta: { type: 'object' },
        color: { type: 'string', enum: ['red', 'green'], nullable: true },
      },
      required: ['start'],
    });
  });

  it('leaves nothing of $schema, $ref, $defs, additionalProperties, default, examples, const or type arrays', () => {
    const text = JSON.stringify(geminiParameters(schema));
    for (const word of [
      '$schema',
      '$ref',
      '$defs',
      'additionalProperties',
      '"default"',
      'examples',
      '"const"',
      'uniqueItems',
      'propertyNames',
      '"oneOf"',
      '"allOf"',
      '"format":"email"',
    ]) {
      expect(text).not.toContain(word);
    }
    expect(text).not.toMatch(/"type":\[/);
  });

  it('describes an unresolvable reference in words, and declares no parameters for a schema without properties', () => {
    expect(geminiParameters({ type: 'object', properties: { p: { $ref: 'https://example.com/x.json' } } })).toEqual({
      type: 'object',
      properties: { p: { type: 'string', description: '(an unresolvable schema reference)' } },
    });
    expect(geminiParameters({ type: 'object', properties: {}, additionalProperties: false })).toBeUndefined();
    expect(geminiParameters({ type: 'object' })).toBeUndefined();
  });

  it('keeps the OpenAI schema as declared apart from $schema', () => {
    const { $schema: _s, ...rest } = schema;
    expect(openAiParameters(schema)).toEqual(rest);
  });
});

describe('token counting', () => {
  let booted: Booted;
  beforeAll(async () => {
    booted = await bootKernel();
  });
  afterAll(async () => booted.fx.close());
  const count = (text: string, model: string) => booted.create({ kind: 'openai-compatible', preset: 'openai', model }).countTokens!(text, model);

  it('counts with o200k_base for gpt-4o, gpt-4.1, o-series and gpt-5, and cl100k_base for gpt-4 and gpt-3.5', () => {
    const text = 'Grüße aus Köln — 東京の天気は? function add(a, b) { return a + b; }';
    expect(o200k(text)).not.toBe(cl100k(text));
    for (const m of ['gpt-4o', 'gpt-4o-mini', 'gpt-4.1', 'o3', 'o4-mini', 'gpt-5', 'openai/gpt-4o']) expect(count(text, m)).toBe(o200k(text));
    for (const m of ['gpt-4', 'gpt-4-turbo', 'gpt-3.5-turbo']) expect(count(text, m)).toBe(cl100k(text));
    expect(count('', 'gpt-4o')).toBe(0);
  });

  it('counts special-token text such as <|endoftext|> and <|im_end|> as plain text, never throwing', () => {
    const text = 'end of reply <|im_end|> then <|endoftext|> and <|im_start|>system';
    expect(() => o200k(text)).toThrow();
    const n = count(text, 'gpt-4o');
    expect(n).toBe(o200k(text, { disallowedSpecial: new Set() }));
    // As a special token <|endoftext|> would be 1 token; as the text it is, several.
    expect(o200k('<|endoftext|>', { allowedSpecial: 'all' })).toBe(1);
    expect(count('<|endoftext|>', 'gpt-4o')).toBeGreaterThan(1);
    expect(count('<|endoftext|>', 'gpt-4')).toBe(cl100k('<|endoftext|>', { disallowedSpecial: new Set() }));
  });

  it('leaves other models to the loop, which estimates 3.5 characters a token and corrects from reported usage', () => {
    for (const m of ['claude-sonnet-4-20250514', 'gemini-2.0-flash', 'llama-3.1-8b-instant', 'qwen2.5:7b'])
      expect(count('some text <|endoftext|>', m)).toBeUndefined();
  });
});
