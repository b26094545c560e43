/**
 * JSON Schema compilation, once: one Ajv engine per process and one cache of compiled validators per
 * kernel (the ToolRegistry's `schemas`), keyed by the schema's canonical JSON, so a schema that
 * many tools, skills or settings share is compiled once, and a pack reloaded with the same schemas
 * compiles nothing.
 *
 * The engine keeps nothing between compilations (each schema is removed from Ajv once compiled): a
 * compiled validator stands alone, so what stays in memory is what the caches hold, and two kernels
 * in one process never see each other's `$id`s. Validators held by registered tools are pinned until
 * the tool goes away; the rest (settings, skill checks) sit in a small most-recently-used list.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import stringify from 'safe-stable-stringify';
import type { JsonSchema } from './contract.js';

// ajv-formats is CommonJS; under ESM its default export may arrive wrapped.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv) => Ajv;

let engine: Ajv | null = null;

/** The process's Ajv: built on first use (the draft-07 meta-schema it checks schemas with is compiled once). */
function sharedAjv(): Ajv {
  if (!engine) {
    // verbose: errors carry their schema, so a problem can list what is accepted.
    engine = new Ajv({ allErrors: true, strict: false, validateSchema: true, verbose: true });
    addFormats(engine);
  }
  return engine;
}

/** Compiles without caching (for the kernel's own schemas, compiled once at module level). */
export function compileSchema(schema: object): ValidateFunction {
  const ajv = sharedAjv();
  try {
    return ajv.compile(schema);
  } finally {
    ajv.removeSchema(schema);
  }
}

/**
 * A validator that checks its schema against the meta-schema now (throwing what is wrong) and
 * compiles it on its first call; `errors` mirrors the compiled one's after each call.
 */
function lazyValidator(schema: object): ValidateFunction {
  checkSchema(schema);
  let compiled: ValidateFunction | undefined;
  const validate = ((data: unknown) => {
    compiled ??= compileSchema(schema);
    const ok = compiled(data);
    validate.errors = compiled.errors ?? null;
    return ok;
  }) as ValidateFunction;
  validate.schema = schema;
  return validate;
}

/** Draft-07's simple types (its meta-schema's `simpleTypes`). */
const SIMPLE_TYPES = new Set(['array', 'boolean', 'integer', 'null', 'number', 'object', 'string']);
const isNumber = (v: unknown) => typeof v === 'number' && Number.isFinite(v);
const isCount = (v: unknown) => Number.isInteger(v) && (v as number) >= 0;
const isPrimitive = (v: unknown) => v === null || (typeof v !== 'object' && typeof v !== 'function');
const uniquePrimitives = (v: unknown[]) => v.every(isPrimitive) && new Set(v).size === v.length;

/** What the draft-07 meta-schema asks of each keyword this check reads; a node with any other keyword is Ajv's to judge. */
const KEYWORD_RULES: Record<string, (value: unknown, ajv: Ajv) => boolean> = {
  type: (v) =>
    typeof v === 'string'
      ? SIMPLE_TYPES.has(v)
      : Array.isArray(v) && v.length > 0 && v.every((t) => typeof t === 'string' && SIMPLE_TYPES.has(t)) && new Set(v).size === v.length,
  title: (v) => typeof v === 'string',
  description: (v) => typeof v === 'string',
  $comment: (v) => typeof v === 'string',
  format: (v) => typeof v === 'string',
  default: () => true,
  const: () => true,
  examples: (v) => Array.isArray(v),
  readOnly: (v) => typeof v === 'boolean',
  minimum: isNumber,
  maximum: isNumber,
  exclusiveMinimum: isNumber,
  exclusiveMaximum: isNumber,
  multipleOf: (v) => isNumber(v) && (v as number) > 0,
  minLength: isCount,
  maxLength: isCount,
  minItems: isCount,
  maxItems: isCount,
  minProperties: isCount,
  maxProperties: isCount,
  uniqueItems: (v) => typeof v === 'boolean',
  required: (v) => Array.isArray(v) && v.every((x) => typeof x === 'string') && new Set(v).size === v.length,
  enum: (v) => Array.isArray(v) && v.length > 0 && uniquePrimitives(v),
  // The same function the meta-schema's `format: "regex"` calls (ajv-formats'); none known: Ajv's to judge.
  pattern: (v, ajv) => typeof v === 'string' && typeof ajv.formats.regex === 'function' && (ajv.formats.regex as (s: string) => boolean)(v),
  properties: (v, ajv) => typeof v === 'object' && v !== null && !Array.isArray(v) && Object.values(v).every((sub) => plainSchema(sub, ajv)),
  additionalProperties: (v, ajv) => plainSchema(v, ajv),
  items: (v, ajv) => plainSchema(v, ajv),
  contains: (v, ajv) => plainSchema(v, ajv),
  propertyNames: (v, ajv) => plainSchema(v, ajv),
  not: (v, ajv) => plainSchema(v, ajv),
  anyOf: (v, ajv) => Array.isArray(v) && v.length > 0 && v.every((sub) => plainSchema(sub, ajv)),
  oneOf: (v, ajv) => Array.isArray(v) && v.length > 0 && v.every((sub) => plainSchema(sub, ajv)),
  allOf: (v, ajv) => Array.isArray(v) && v.length > 0 && v.every((sub) => plainSchema(sub, ajv)),
};

/** True only when `node` is certainly a valid draft-07 schema built of the keywords above; false: ask Ajv. */
function plainSchema(node: unknown, ajv: Ajv): boolean {
  if (typeof node === 'boolean') return true;
  if (typeof node !== 'object' || node === null || Array.isArray(node)) return false;
  for (const [key, value] of Object.entries(node)) {
    const rule = Object.hasOwn(KEYWORD_RULES, key) ? KEYWORD_RULES[key] : undefined;
    if (!rule || !rule(value, ajv)) return false;
  }
  return true;
}

/** Whether the quick walk alone accepts `schema` as a valid draft-07 schema (false: Ajv's meta-schema check decides). */
export function isPlainSchema(schema: unknown): boolean {
  return plainSchema(schema, sharedAjv());
}

/**
 * Checks a schema against the meta-schema, throwing what is wrong. A schema built only of the common
 * keywords, each plainly well-formed, is accepted by a quick walk (a start registers about a hundred
 * tools); anything else is checked, and every refusal worded, by Ajv's meta-schema validator as before.
 */
function checkSchema(schema: object): void {
  const ajv = sharedAjv();
  if (plainSchema(schema, ajv)) return;
  if (!ajv.validateSchema(schema)) throw new Error(`schema is invalid: ${ajv.errorsText(ajv.errors)}`);
}

/** The keywords `plainlySatisfies` reads; a schema with any other keyword is left to Ajv. */
const PLAIN_KEYWORDS = new Set([
  'type',
  'properties',
  'additionalProperties',
  'required',
  'enum',
  'minimum',
  'maximum',
  'minLength',
  'maxLength',
  'pattern',
  'format',
  'items',
  'minItems',
  'maxItems',
  'default',
  'description',
  'title',
]);

/** Whether `data` satisfies `node` (a schema in the plain subset); throws Unsure outside it. */
function plainCheck(node: unknown, data: unknown, ajv: Ajv): boolean {
  if (typeof node !== 'object' || node === null || Array.isArray(node)) throw new PlainUnsure();
  const s = node as Record<string, unknown>;
  for (const key of Object.keys(s)) if (!PLAIN_KEYWORDS.has(key)) throw new PlainUnsure();
  if (typeof data === 'number' && !Number.isFinite(data)) throw new PlainUnsure();
  const isObject = typeof data === 'object' && data !== null && !Array.isArray(data);
  switch (s.type) {
    case undefined:
      break;
    case 'object':
      if (!isObject) return false;
      break;
    case 'string':
    case 'boolean':
      if (typeof data !== s.type) return false;
      break;
    case 'number':
      if (typeof data !== 'number') return false;
      break;
    case 'integer':
      if (!Number.isInteger(data)) return false;
      break;
    case 'array':
      if (!Array.isArray(data)) return false;
      break;
    default:
      throw new PlainUnsure();
  }
  if (Array.isArray(data)) {
    // One schema for every item (a tuple form is Ajv's to say).
    if (s.items !== undefined && (typeof s.items !== 'object' || s.items === null || Array.isArray(s.items))) throw new PlainUnsure();
    if (typeof s.minItems === 'number' && data.length < s.minItems) return false;
    if (typeof s.maxItems === 'number' && data.length > s.maxItems) return false;
    if (s.items !== undefined) for (const item of data) if (!plainCheck(s.items, item, ajv)) return false;
  }
  if (s.enum !== undefined) {
    const values = s.enum as unknown[];
    if (!values.every((v) => v === null || typeof v !== 'object')) throw new PlainUnsure();
    if (!values.includes(data)) return false;
  }
  if (typeof data === 'number') {
    if (typeof s.minimum === 'number' && data < s.minimum) return false;
    if (typeof s.maximum === 'number' && data > s.maximum) return false;
  }
  if (typeof data === 'string') {
    // Ajv counts code points (a surrogate pair is one), as spreading a string does.
    if (s.minLength !== undefined || s.maxLength !== undefined) {
      const length = [...data].length;
      if (typeof s.minLength === 'number' && length < s.minLength) return false;
      if (typeof s.maxLength === 'number' && length > s.maxLength) return false;
    }
    if (typeof s.pattern === 'string') {
      let re: RegExp;
      try {
        re = new RegExp(s.pattern, 'u');
      } catch {
        throw new PlainUnsure();
      }
      if (!re.test(data)) return false;
    }
    if (s.format !== undefined) {
      // The very function Ajv's compiled code would call for this format (ajv-formats'); unknown: Ajv's to say.
      const format = typeof s.format === 'string' && Object.hasOwn(ajv.formats, s.format) ? ajv.formats[s.format] : undefined;
      if (typeof format !== 'function') throw new PlainUnsure();
      if (!(format as (value: string) => boolean)(data)) return false;
    }
  } else if (s.format !== undefined && typeof s.format !== 'string') throw new PlainUnsure();
  if (isObject) {
    const obj = data as Record<string, unknown>;
    const props = (s.properties ?? {}) as Record<string, unknown>;
    // Names an object inherits read differently by property access (Ajv's) and by own keys: Ajv's to say.
    const names = [...Object.keys(props), ...((s.required as string[] | undefined) ?? [])];
    if (names.some((name) => name in Object.prototype || name === '__proto__')) throw new PlainUnsure();
    for (const name of (s.required as string[] | undefined) ?? []) if (obj[name] === undefined) return false;
    for (const [name, sub] of Object.entries(props)) if (obj[name] !== undefined && !plainCheck(sub, obj[name], ajv)) return false;
    if (s.additionalProperties === false) {
      for (const key in obj) if (!Object.hasOwn(props, key)) return false;
    } else if (s.additionalProperties !== undefined && s.additionalProperties !== true) throw new PlainUnsure();
  }
  return true;
}

class PlainUnsure extends Error {}

/**
 * True only when `data` certainly satisfies `schema` and Ajv would compile `schema`: a valid schema
 * (checked against the meta-schema) built only of plain keywords (object, string, number, integer and
 * boolean types, arrays of one item schema, properties, required, additionalProperties true/false, primitive enums, bounds,
 * lengths, a pattern, a format Ajv knows). False means "ask Ajv", never "invalid": a settings check
 * that passes costs no compilation, and one that fails is compiled and reported by Ajv as before.
 */
export function plainlySatisfies(schema: JsonSchema, data: unknown): boolean {
  const ajv = sharedAjv();
  if (!plainSchema(schema, ajv) && !ajv.validateSchema(schema)) return false;
  try {
    return plainCheck(schema, data, ajv);
  } catch (err) {
    if (err instanceof PlainUnsure) return false;
    throw err;
  }
}

interface Entry {
  validate: ValidateFunction;
  holders: number;
}

/** A validator pinned for as long as its holder lives; `release()` once (later calls do nothing). */
export interface HeldSchema {
  validate: ValidateFunction;
  release(): void;
}

/** How many compiled validators nobody holds are kept for reuse. */
const IDLE_KEPT = 64;

export class SchemaCompiler {
  private readonly entries = new Map<string, Entry>();
  /** Keys of entries nobody holds, oldest first. */
  private readonly idle = new Set<string>();

  /** Number of compiled validators in memory (held and idle). */
  get size(): number {
    return this.entries.size;
  }

  /** A validator for a passing use (settings, a check): cached, and dropped when too many others are newer. Throws if the schema cannot be compiled. */
  compile(schema: JsonSchema): ValidateFunction {
    const key = stringify(schema) ?? 'undefined';
    const entry = this.entry(key, schema);
    if (entry.holders === 0) this.touchIdle(key);
    return entry.validate;
  }

  /**
   * Throws what compiling `schema` would throw, compiling it only when a quick walk cannot tell: a
   * schema of the plain keywords with no `pattern` (Ajv compiles it with the `u` flag, which the
   * meta-schema does not check) and no `format` (an unknown one fails) compiles whenever it is valid.
   * A word of either name anywhere in the schema (a property called "pattern") means compile.
   */
  check(schema: JsonSchema): void {
    if (isPlainSchema(schema) && !/"(?:pattern|format)":/.test(JSON.stringify(schema))) return;
    this.compile(schema);
  }

  /**
   * A validator kept until `release()` (a registered tool's parameters). Throws if the schema is not
   * a valid JSON Schema. The validator is compiled on its first call, not here: a start with a
   * hundred tools compiles only those that get called (what cannot be caught before compiling, such
   * as a `$ref` to nowhere, throws on that first call).
   */
  hold(schema: JsonSchema): HeldSchema {
    const key = stringify(schema) ?? 'undefined';
    const entry = this.entry(key, schema, true);
    entry.holders++;
    this.idle.delete(key);
    let released = false;
    return {
      validate: entry.validate,
      release: () => {
        if (released) return;
        released = true;
        entry.holders--;
        if (entry.holders === 0 && this.entries.get(key) === entry) this.touchIdle(key);
      },
    };
  }

  private entry(key: string, schema: JsonSchema, lazy = false): Entry {
    let entry = this.entries.get(key);
    if (!entry) {
      entry = { validate: lazy ? lazyValidator(schema) : compileSchema(schema), holders: 0 };
      this.entries.set(key, entry);
    }
    return entry;
  }

  private touchIdle(key: string): void {
    this.idle.delete(key);
    this.idle.add(key);
    while (this.idle.size > IDLE_KEPT) {
      const oldest = this.idle.values().next().value as string;
      this.idle.delete(oldest);
      this.entries.delete(oldest);
    }
  }
}

/**
 * Fills in the schema's `default`s where a value is missing, as Ajv's `useDefaults` does (in
 * `properties`, array `items` and `allOf`, never inside `anyOf`/`oneOf`), so one engine serves both
 * argument checks (which must not change the arguments) and settings (which get their defaults).
 */
export function applyDefaults(schema: unknown, data: unknown): void {
  if (typeof schema !== 'object' || schema === null || typeof data !== 'object' || data === null) return;
  const s = schema as { properties?: Record<string, unknown>; items?: unknown; allOf?: unknown[] };
  if (!Array.isArray(data) && s.properties && typeof s.properties === 'object') {
    const obj = data as Record<string, unknown>;
    for (const [key, sub] of Object.entries(s.properties)) {
      if (obj[key] === undefined && typeof sub === 'object' && sub !== null && 'default' in sub) obj[key] = structuredClone(sub.default);
      applyDefaults(sub, obj[key]);
    }
  }
  if (Array.isArray(data) && s.items && typeof s.items === 'object' && !Array.isArray(s.items)) for (const item of data) applyDefaults(s.items, item);
  for (const sub of Array.isArray(s.allOf) ? s.allOf : []) applyDefaults(sub, data);
}

/** One schema problem, located: `path` is the JSON pointer of the bad value, `field` its dotted name. */
export interface SchemaProblem {
  path: string;
  field: string;
  message: string;
}

function shownValue(value: unknown): string {
  const text = value === undefined ? 'nothing' : (JSON.stringify(value) ?? typeof value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

function valueAt(data: unknown, pointer: string): unknown {
  let at = data;
  for (const raw of pointer.split('/').slice(1)) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (typeof at !== 'object' || at === null) return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return at;
}

/**
 * Ajv's errors as sentences a person can act on: the field, what is wrong, the value found and what
 * is allowed (the enum's values, the pattern, the type, the accepted field names). Needs Ajv's
 * `parentSchema` (`verbose`) only for the accepted field names; works without it.
 */
export function schemaProblems(errors: ErrorObject[] | null | undefined, data: unknown): SchemaProblem[] {
  const out: SchemaProblem[] = [];
  const seen = new Set<string>();
  for (const e of errors ?? []) {
    let pointer = e.instancePath;
    const params = e.params as Record<string, unknown>;
    if (e.keyword === 'required') pointer = `${pointer}/${String(params.missingProperty)}`;
    if (e.keyword === 'additionalProperties') pointer = `${pointer}/${String(params.additionalProperty)}`;
    const field = pointer.slice(1).replace(/\//g, '.');
    const got = shownValue(valueAt(data, pointer));
    let message: string;
    switch (e.keyword) {
      case 'required':
        message = 'is required';
        break;
      case 'additionalProperties': {
        const accepted = Object.keys((e.parentSchema as { properties?: object } | undefined)?.properties ?? {});
        message = `is not an accepted field${accepted.length ? ` (accepted: ${accepted.join(', ')})` : ''}`;
        break;
      }
      case 'enum':
        message = `must be one of ${(params.allowedValues as unknown[]).map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(', ')} (got ${got})`;
        break;
      case 'const':
        message = `must be ${JSON.stringify(params.allowedValue)} (got ${got})`;
        break;
      case 'pattern':
        message = `must match pattern ${String(params.pattern)} (got ${got})`;
        break;
      case 'type':
        message = `must be ${String(params.type)} (got ${got})`;
        break;
      default:
        message = `${e.message ?? 'is invalid'} (got ${got})`;
    }
    const key = `${pointer} ${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ path: pointer, field, message });
  }
  return out;
}
