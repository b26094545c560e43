/**
 * Tool parameters for node-llama-cpp's function calling. A function call's arguments are generated
 * under a grammar built from a JSON schema subset (GbnfJsonSchema): object, array, string
 * (minLength/maxLength, format date-time/time/date), number, integer, boolean, null, const, enum,
 * oneOf and `#/$defs` references. The rules (each also in README.md):
 *
 *  1. `$ref` to `#/$defs/..`, `#/definitions/..` (or any local pointer) is inlined; a recursive
 *     reference becomes "any JSON value" at its second appearance.
 *  2. `allOf` is merged (properties and required united); `anyOf`/`oneOf` become `oneOf` (branches
 *     that only add constraints to a typed parent are ignored).
 *  3. The grammar writes every declared property, so an optional one (not in `required`) becomes
 *     `oneOf: [schema, null]`, and a null the model gives there is removed from the arguments
 *     (`dropOptionalNulls`) before the kernel validates them.
 *  4. `additionalProperties` is kept when it is a schema or true; an object schema without a
 *     `properties` keyword accepts any keys; otherwise only the declared keys are generated (so
 *     `properties: {}` means no arguments).
 *  5. Type arrays become `oneOf` per type (a plain list of scalar types stays a list); a schema
 *     without a type is inferred from properties (object) or items (array), else any JSON value.
 *  6. `const`/`enum` keep their scalar values (an enum of objects becomes any value).
 *  7. Dropped, since the grammar cannot hold them: pattern, other formats, minimum/maximum,
 *     multipleOf, uniqueItems, not, if/then/else, dependencies, patternProperties, default,
 *     examples. The kernel still validates the arguments against the full schema.
 */
import type { JsonSchema } from 'memo-kernel/pack';
import { resolvePointer } from './schema.js';

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);
const isScalar = (v: unknown) => v === null || ['string', 'number', 'boolean'].includes(typeof v);

const SCALAR_TYPES = ['string', 'number', 'integer', 'boolean', 'null'];
const STRING_FORMATS = ['date-time', 'time', 'date'];
const MAX_DEPTH = 24;

/** Any JSON value, as the grammar generator understands it. */
const anyValue = (description?: string): Obj => ({
  oneOf: [{ type: ['string', 'number', 'boolean', 'null'] }, { type: 'array' }, { type: 'object', additionalProperties: true }],
  ...(description ? { description } : {}),
});

interface Ctx {
  root: Obj;
  expanding: string[];
  depth: number;
}

/** Inlines a `$ref` (siblings win) and merges `allOf`; `undefined` for a reference being expanded. */
function resolveNode(node: Obj, ctx: Ctx): { node: Obj; ref?: string } | undefined {
  let s = node;
  let ref: string | undefined;
  if (typeof s.$ref === 'string') {
    ref = s.$ref;
    if (ctx.expanding.includes(ref)) return undefined;
    const { $ref: _r, ...siblings } = s;
    s = { ...(resolvePointer(ctx.root, ref) ?? {}), ...siblings };
  }
  if (Array.isArray(s.allOf)) {
    const { allOf, ...rest } = s;
    const out: Obj = { ...rest };
    for (const branch of allOf as unknown[]) {
      if (!isObj(branch)) continue;
      const b = resolveNode(branch, ctx)?.node ?? {};
      for (const [k, v] of Object.entries(b)) {
        if (k === 'properties' && isObj(v)) out.properties = { ...(isObj(out.properties) ? out.properties : {}), ...v };
        else if (k === 'required' && Array.isArray(v))
          out.required = [...new Set([...(Array.isArray(out.required) ? (out.required as unknown[]) : []), ...(v as unknown[])])];
        else if (!(k in out)) out[k] = v;
      }
    }
    s = out;
  }
  return ref ? { node: s, ref } : { node: s };
}

function convert(input: unknown, ctx: Ctx): Obj {
  if (!isObj(input) || ctx.depth > MAX_DEPTH) return anyValue();
  const resolved = resolveNode(input, ctx);
  if (!resolved) return anyValue('(recursive)');
  const s = resolved.node;
  const inner: Ctx = { root: ctx.root, expanding: resolved.ref ? [...ctx.expanding, resolved.ref] : ctx.expanding, depth: ctx.depth + 1 };
  const description = typeof s.description === 'string' && s.description ? s.description : undefined;
  const described = (o: Obj): Obj => (description && !('description' in o) ? { ...o, description } : o);

  if ('const' in s) return isScalar(s.const) ? described({ const: s.const }) : anyValue(description);
  if (Array.isArray(s.enum)) {
    const values = s.enum.filter(isScalar);
    return values.length ? described({ enum: values }) : anyValue(description);
  }
  const typed = s.type !== undefined || isObj(s.properties) || s.items !== undefined || s.prefixItems !== undefined;
  const branches = Array.isArray(s.anyOf) ? s.anyOf : Array.isArray(s.oneOf) ? s.oneOf : undefined;
  if (branches && !typed) {
    const converted = branches.map((b) => convert(b, inner));
    if (!converted.length) return anyValue(description);
    return converted.length === 1 ? described(converted[0]!) : described({ oneOf: converted });
  }

  let types: string[];
  if (typeof s.type === 'string') types = [s.type];
  else if (Array.isArray(s.type)) types = [...new Set(s.type.filter((t): t is string => typeof t === 'string'))];
  else if (isObj(s.properties) || s.additionalProperties !== undefined) types = ['object'];
  else if (s.items !== undefined || s.prefixItems !== undefined) types = ['array'];
  else return anyValue(description);
  if (!types.length) return anyValue(description);
  if (types.length > 1) {
    const plain = s.minLength === undefined && s.maxLength === undefined && s.format === undefined;
    if (plain && types.every((t) => SCALAR_TYPES.includes(t))) return described({ type: types });
    return described({ oneOf: types.map((t) => convertTyped(s, t, inner)) });
  }
  return described(convertTyped(s, types[0]!, inner)); // exactly one type here
}

function convertTyped(s: Obj, type: string, ctx: Ctx): Obj {
  switch (type) {
    case 'object': {
      const properties: Obj = {};
      const required = new Set(Array.isArray(s.required) ? s.required.filter((r): r is string => typeof r === 'string') : []);
      const props = isObj(s.properties) ? Object.entries(s.properties) : [];
      for (const [name, schema] of props) {
        const value = convert(schema, ctx);
        properties[name] = required.has(name) ? value : { oneOf: [value, { type: 'null' }] };
      }
      const out: Obj = { type: 'object', properties };
      if (isObj(s.additionalProperties)) out.additionalProperties = convert(s.additionalProperties, ctx);
      else if (s.additionalProperties === true || (s.additionalProperties === undefined && !isObj(s.properties))) out.additionalProperties = true;
      return out;
    }
    case 'array': {
      const out: Obj = { type: 'array' };
      if (isObj(s.items)) out.items = convert(s.items, ctx);
      const tuple = Array.isArray(s.prefixItems) ? s.prefixItems : Array.isArray(s.items) ? s.items : undefined;
      if (tuple) out.prefixItems = tuple.map((t) => convert(t, ctx));
      if (typeof s.minItems === 'number' && s.minItems > 0) out.minItems = Math.floor(s.minItems);
      if (typeof s.maxItems === 'number' && s.maxItems >= 0) out.maxItems = Math.floor(s.maxItems);
      return out;
    }
    case 'string': {
      if (typeof s.format === 'string' && STRING_FORMATS.includes(s.format)) return { type: 'string', format: s.format };
      const out: Obj = { type: 'string' };
      if (typeof s.minLength === 'number' && s.minLength > 0) out.minLength = Math.floor(s.minLength);
      if (typeof s.maxLength === 'number' && s.maxLength >= 0) out.maxLength = Math.floor(s.maxLength);
      return out;
    }
    case 'number':
    case 'integer':
    case 'boolean':
    case 'null':
      return { type };
    default:
      return anyValue();
  }
}

/**
 * The `params` of a node-llama-cpp function for a tool's parameters: an object schema, or
 * undefined for a tool without parameters (the model then calls it with none).
 */
export function gbnfParameters(parameters: JsonSchema): Obj | undefined {
  const root = isObj(parameters) ? parameters : {};
  const converted = convert(root, { root, expanding: [], depth: 0 });
  if (converted.type !== 'object') return { type: 'object', additionalProperties: true };
  const props = isObj(converted.properties) ? Object.keys(converted.properties) : [];
  if (!props.length && converted.additionalProperties === undefined) return undefined;
  if (!props.length) delete converted.properties;
  return converted;
}

/**
 * Removes the nulls the grammar made the model write for optional properties it did not want to
 * give (rule 3), following the tool's own schema. Returns a new value.
 */
export function dropOptionalNulls(value: unknown, schema: JsonSchema): unknown {
  const root = isObj(schema) ? schema : {};
  const walk = (v: unknown, node: unknown, ctx: Ctx): unknown => {
    if (!isObj(node) || ctx.depth > MAX_DEPTH) return v;
    // The value is finite, so a recursive schema is followed as deep as the value goes.
    const s = resolveNode(node, ctx)!.node;
    const inner: Ctx = { root, expanding: [], depth: ctx.depth + 1 };
    if (Array.isArray(v)) return isObj(s.items) ? v.map((item) => walk(item, s.items, inner)) : v;
    if (!isObj(v)) return v;
    const props = isObj(s.properties) ? s.properties : {};
    const required = new Set(Array.isArray(s.required) ? s.required : []);
    const out: Obj = {};
    for (const [k, item] of Object.entries(v)) {
      if (item === null && k in props && !required.has(k)) continue;
      out[k] = k in props ? walk(item, props[k], inner) : item;
    }
    return out;
  };
  return walk(value, root, { root, expanding: [], depth: 0 });
}
