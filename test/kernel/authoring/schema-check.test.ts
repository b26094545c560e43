import * as fs from 'node:fs';
import * as path from 'node:path';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { compileSchema, isPlainSchema, SchemaCompiler } from '../../../kernel/tools/schemas.js';
import type { JsonSchema } from '../../../kernel/tools/contract.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv) => Ajv;

/** An Ajv set up as the kernel's, to compare with. */
function referenceAjv(): Ajv {
  const ajv = new Ajv({ allErrors: true, strict: false, validateSchema: true, verbose: true });
  addFormats(ajv);
  return ajv;
}

/** What registering a tool with these parameters says: nothing, or the refusal. */
function holdMessage(schema: unknown): string | null {
  try {
    new SchemaCompiler().hold(schema as JsonSchema).release();
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

/** What a call throws: nothing, or its message. */
function thrown(run: () => unknown): string | null {
  try {
    run();
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

describe('the parameters schema check at registration', () => {
  const ajv = referenceAjv();
  const ajvSays = (schema: unknown) => (ajv.validateSchema(schema as object) ? null : `schema is invalid: ${ajv.errorsText(ajv.errors)}`);

  it('accepts most built-in tool schemas by the quick walk, each one Ajv accepts too', () => {
    const schemas: unknown[] = [];
    for (const id of fs.readdirSync(path.join(ROOT, 'plugins'))) {
      const file = path.join(ROOT, 'plugins', id, 'plugin.json');
      if (!fs.existsSync(file)) continue;
      for (const t of (JSON.parse(fs.readFileSync(file, 'utf8')) as { tools?: Array<{ parameters: unknown }> }).tools ?? []) schemas.push(t.parameters);
    }
    expect(schemas.length).toBeGreaterThan(50);
    const plain = schemas.filter((s) => isPlainSchema(s));
    expect(plain.length / schemas.length).toBeGreaterThan(0.8);
    for (const s of plain) expect({ s, ajv: ajvSays(s) }).toEqual({ s, ajv: null });
  });

  it('refuses and accepts exactly what Ajv does, with the same words, on random schemas (fixed seed); a skill check throws what compiling does', () => {
    let seed = 7;
    const next = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const pick = <T>(xs: T[]): T => xs[next(xs.length)]!;
    const values: Record<string, unknown[]> = {
      type: ['string', 'object', 'integer', 'int', ['string', 'null'], ['string', 'string'], [], 3],
      description: ['d', 3, null],
      title: ['t', false],
      format: ['uri', 7],
      default: [1, 'x', null, { a: 1 }],
      const: [1, 'x'],
      examples: [[1], 'x'],
      readOnly: [true, 'yes'],
      minimum: [0, -2.5, '1', Infinity],
      maximum: [10, null],
      exclusiveMinimum: [0, true],
      exclusiveMaximum: [5, 'x'],
      multipleOf: [2, 0, -1, 0.5],
      minLength: [0, 1, -1, 1.5, '2'],
      maxLength: [10, -3],
      minItems: [0, 2.2],
      maxItems: [3, null],
      minProperties: [1, -1],
      maxProperties: [2, 'a'],
      uniqueItems: [true, 1],
      required: [['a'], ['a', 'a'], [1], 'a', []],
      enum: [['a', 'b'], ['a', 'a'], [], [1, '1'], [{ a: 1 }], 'a'],
      pattern: ['^a$', '(', '\\d+', 'a\\Z', '\\-x', 3],
      $ref: ['#/x'],
      writeOnly: [true],
      $defs: [{ x: { type: 'string' } }],
    };
    const nested = ['properties', 'additionalProperties', 'items', 'contains', 'propertyNames', 'not', 'anyOf', 'oneOf', 'allOf'];
    const schema = (depth: number): unknown => {
      if (depth > 0 && next(12) === 0) return pick([true, false, null, 'string', []]);
      const s: Record<string, unknown> = {};
      for (let k = next(4); k >= 0; k--) {
        if (depth < 2 && next(3) === 0) {
          const key = pick(nested);
          if (key === 'properties') s[key] = next(8) === 0 ? pick([[], 'x']) : { a: schema(depth + 1), b: schema(depth + 1) };
          else if (['anyOf', 'oneOf', 'allOf'].includes(key)) s[key] = next(8) === 0 ? [] : [schema(depth + 1), schema(depth + 1)];
          else s[key] = next(8) === 0 ? pick([[schema(depth + 1)], 1]) : schema(depth + 1);
        } else {
          const key = pick(Object.keys(values));
          s[key] = pick(values[key]!);
        }
      }
      return s;
    };
    let quick = 0;
    let refused = 0;
    for (let n = 0; n < 3000; n++) {
      const s = schema(0);
      const expected = ajvSays(s);
      if (isPlainSchema(s)) {
        quick++;
        expect({ s, ajv: expected }).toEqual({ s, ajv: null });
      }
      if (expected) refused++;
      expect({ s, message: holdMessage(s) }).toEqual({ s, message: expected });
      // A skill's check (compiling only when a walk cannot tell) throws exactly what compiling throws.
      expect({ s, check: thrown(() => new SchemaCompiler().check(s as JsonSchema)) }).toEqual({ s, check: thrown(() => compileSchema(s as object)) });
    }
    // Both paths and both answers are exercised.
    expect(quick).toBeGreaterThan(300);
    expect(refused).toBeGreaterThan(300);
  });
});
