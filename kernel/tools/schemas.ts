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
  const ajv = sharedAjv();
  if (!ajv.validateSchema(schema)) throw new Error(`schema is invalid: ${ajv.errorsText(ajv.errors)}`);
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
