import * as fs from 'node:fs';
import * as path from 'node:path';
import { compileSchema, plainlySatisfies } from '../../../kernel/tools/schemas.js';
import { resolveConfig } from '../../../kernel/packs/pack-settings.js';
import type { JsonSchema } from '../../../kernel/tools/contract.js';
import { MemoError } from '../../../kernel/errors.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');

/** Every built-in pack's settings schema. */
function builtinSettings(): Array<[string, JsonSchema]> {
  const out: Array<[string, JsonSchema]> = [];
  for (const id of fs.readdirSync(path.join(ROOT, 'plugins'))) {
    const file = path.join(ROOT, 'plugins', id, 'plugin.json');
    if (!fs.existsSync(file)) continue;
    const config = (JSON.parse(fs.readFileSync(file, 'utf8')) as { config?: JsonSchema }).config;
    if (config) out.push([id, config]);
  }
  return out;
}

describe('the plain settings check', () => {
  it('passes every built-in pack default settings without a compiled validator, as Ajv does', () => {
    const packs = builtinSettings();
    expect(packs.length).toBeGreaterThanOrEqual(5);
    for (const [id, schema] of packs) {
      const values = resolveConfig(id, schema, {});
      expect({ id, plain: plainlySatisfies(schema, values) }).toEqual({ id, plain: true });
      expect(compileSchema(schema)(values)).toBe(true);
    }
  });

  it('never says yes where Ajv says no, and says yes wherever Ajv does on plain schemas (randomised, fixed seed)', () => {
    let seed = 2024;
    const next = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const pick = <T>(xs: T[]): T => xs[next(xs.length)]!;
    const leaf = (): Record<string, unknown> => {
      const s: Record<string, unknown> = { type: pick(['string', 'integer', 'number', 'boolean', undefined]) };
      if (s.type === undefined) delete s.type;
      if (next(3) === 0) s.minimum = pick([-1, 0, 1, 5, 2.5]);
      if (next(3) === 0) s.maximum = pick([0, 3, 10, 100]);
      if (next(3) === 0) s.minLength = pick([0, 1, 3]);
      if (next(3) === 0) s.maxLength = pick([0, 2, 5, 100]);
      if (next(5) === 0) s.pattern = pick(['^https?://', '^[a-z]+$', '\\d', '^.$']);
      if (next(6) === 0) s.format = pick(['uri', 'email', 'date']);
      if (next(6) === 0) s.enum = pick([['a', 'b'], [1, 2, 'x'], [true]]);
      if (next(4) === 0) s.default = pick(['a', 1, true]);
      return s;
    };
    const schema = (depth: number): Record<string, unknown> => {
      if (depth > 1 || next(3) === 0) return leaf();
      const props: Record<string, unknown> = {};
      for (const name of ['a', 'b', 'c'].slice(0, 1 + next(3))) props[name] = schema(depth + 1);
      const s: Record<string, unknown> = { type: 'object', properties: props };
      if (next(2) === 0) s.additionalProperties = pick([false, true]);
      if (next(3) === 0) s.required = ['a'];
      return s;
    };
    const value = (depth: number): unknown => {
      const kind = next(depth > 1 ? 5 : 6);
      if (kind === 0) return pick(['', 'a', 'abc', 'https://example.org/x', 'http//x', 'ab😀', 'x@y.z', '2024-01-02', '1', 'b']);
      if (kind === 1) return pick([0, 1, 3, 5, 2.5, -1, 100, 101, 1e21]);
      if (kind === 2) return pick([true, false]);
      if (kind === 3) return null;
      if (kind === 4) return pick([[], ['a']]);
      const obj: Record<string, unknown> = {};
      for (const name of ['a', 'b', 'c', 'd'].slice(0, next(5))) obj[name] = value(depth + 1);
      return obj;
    };
    let yes = 0;
    for (let n = 0; n < 800; n++) {
      const s = schema(0);
      const validate = compileSchema(s);
      for (let k = 0; k < 4; k++) {
        const data = value(0);
        const plain = plainlySatisfies(s, data);
        const ajv = validate(data);
        // Without a format the plain check knows every keyword, so it must agree both ways.
        const known = !JSON.stringify(s).includes('"format":"email"') && !JSON.stringify(s).includes('"format":"date"');
        expect({ s, data, plain }).toEqual({ s, data, plain: known ? ajv : plain && ajv });
        if (plain) yes++;
      }
    }
    // The comparison is not empty: many random cases pass both.
    expect(yes).toBeGreaterThan(150);
  });

  it('checks an array of one item schema as Ajv does: type, item count and every item', () => {
    const schema = { type: 'object', properties: { d: { type: 'array', items: { type: 'string', pattern: '^[a-z.]+$' }, maxItems: 2 } } };
    expect(plainlySatisfies(schema as JsonSchema, { d: ['a.b', 'c'] })).toBe(true);
    expect(plainlySatisfies(schema as JsonSchema, { d: [] })).toBe(true);
    expect(plainlySatisfies(schema as JsonSchema, { d: ['a', 'b', 'c'] })).toBe(false);
    expect(plainlySatisfies(schema as JsonSchema, { d: ['A'] })).toBe(false);
    expect(plainlySatisfies(schema as JsonSchema, { d: 'a' })).toBe(false);
  });

  it.each([
    ['a schema Ajv refuses', { type: 'object', properties: { a: { type: 'string', minLength: -1 } } }, {}],
    ['a $ref', { type: 'object', properties: { a: { $ref: '#/definitions/x' } }, definitions: { x: { type: 'string' } } }, {}],
    ['a keyword outside the plain set', { type: 'object', properties: { a: { type: 'array', items: { type: 'string' }, uniqueItems: true } } }, { a: ['x'] }],
    ['a tuple of item schemas', { type: 'array', items: [{ type: 'string' }] }, ['x']],
    ['an unknown format', { type: 'string', format: 'no-such-format' }, 'x'],
    ['a pattern that is not a regular expression', { type: 'string', pattern: '(' }, 'x'],
    ['a property an object inherits', { type: 'object', properties: { toString: { type: 'string' } } }, {}],
    ['a type list', { type: ['string', 'null'] }, null],
  ])('leaves %s to Ajv', (_what, schema, data) => {
    expect(plainlySatisfies(schema as JsonSchema, data)).toBe(false);
  });

  it('reports invalid settings with the same message whichever check runs first', () => {
    const schema = { type: 'object', additionalProperties: false, properties: { n: { type: 'integer', minimum: 1, default: 5 } } } as JsonSchema;
    expect(() => resolveConfig('p', schema, { n: 0 })).toThrow('Invalid settings for pack "p": n must be >= 1.');
    expect(() => resolveConfig('p', schema, { m: 1 })).toThrow(/Invalid settings for pack "p": m is not an accepted field/);
    expect(resolveConfig('p', schema, {})).toEqual({ n: 5 });
  });

  /** The VALIDATION error resolveConfig throws for `values`. */
  function refusal(schema: JsonSchema, values: Record<string, unknown>): MemoError {
    try {
      resolveConfig('p', schema, values);
    } catch (err) {
      if (err instanceof MemoError) return err;
      throw err;
    }
    throw new Error('the settings were accepted');
  }

  it('says what is wrong with each setting by its key, an unknown key with the accepted ones, and never the value given', () => {
    const schema = {
      type: 'object',
      additionalProperties: false,
      required: ['server'],
      properties: {
        server: { type: 'string', pattern: '^[a-z.]+$' },
        timeoutMs: { type: 'integer', minimum: 1000 },
        mode: { enum: ['fast', 'safe'] },
        domains: { type: 'array', items: { type: 'string', maxLength: 5 } },
      },
    } as JsonSchema;
    const secret = 'sk-live-0123456789abcdef';
    const err = refusal(schema, { server: secret, timeoutMs: 10, mode: 'slow', domains: ['ok', 'much-too-long'], colour: 'red' });
    expect(err.code).toBe('VALIDATION');
    expect(err.details?.fields).toEqual({
      server: 'must match pattern "^[a-z.]+$"',
      timeoutMs: 'must be >= 1000',
      mode: 'must be one of fast, safe',
      domains: 'domains.1 must NOT have more than 5 characters',
      colour: 'is not an accepted field (accepted: server, timeoutMs, mode, domains)',
    });
    expect(JSON.stringify({ message: err.message, details: err.details })).not.toContain(secret);
    expect(refusal(schema, {}).details?.fields).toEqual({ server: 'is required' });
  });
});
