/**
 * Per-provider cleaning of tool parameter schemas. What is sent for a tool is always exactly its
 * name, description and parameters (in each format's own field names): never another key, since
 * one stray bookkeeping field is enough for some providers to answer 400 invalid_request_error.
 */
import type { JsonSchema, ToolDefinition } from 'memo-kernel/pack';

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);

/** Picks exactly the three fields of a definition, whatever else the object carries at run time. */
export function pickDefinition(def: ToolDefinition): ToolDefinition {
  return { name: def.name, description: def.description, parameters: def.parameters };
}

function withoutSchemaKeyword(schema: JsonSchema): JsonSchema {
  if (!isObj(schema) || !('$schema' in schema)) return schema;
  const { $schema: _drop, ...rest } = schema;
  return rest;
}

/** OpenAI-compatible: the schema as declared, minus `$schema` (some servers reject the keyword). */
export function openAiParameters(schema: JsonSchema): JsonSchema {
  return withoutSchemaKeyword(schema);
}

/**
 * Anthropic: `input_schema` must be an object schema. `$schema` is dropped; a schema without a
 * type gets `type: "object"`; one of another type (pack manifests never declare one) becomes an
 * empty object schema.
 */
export function anthropicInputSchema(schema: JsonSchema): JsonSchema {
  const s = withoutSchemaKeyword(isObj(schema) ? schema : {});
  if (s.type === 'object') return s;
  if (s.type === undefined) return { type: 'object', ...s };
  return { type: 'object', properties: {} };
}

// ---------------------------------------------------------------------------------------------
// Gemini: function declarations take an OpenAPI 3.0 subset. The rules (each also in README.md):
//
//  1. Kept as they are: type, description, title, nullable, enum (strings), items, properties,
//     required, minItems/maxItems, minimum/maximum, minLength/maxLength, pattern,
//     minProperties/maxProperties, propertyOrdering, anyOf.
//  2. `$ref` is inlined from `$defs`/`definitions` (local references only); a recursive
//     reference is cut at its second appearance (an object described in words). `$defs`,
//     `definitions` and `$schema` are dropped.
//  3. `allOf` is merged into one schema (properties and required united); `oneOf` becomes `anyOf`.
//  4. A `{type: "null"}` branch of anyOf, or "null" in a type array, becomes `nullable: true`;
//     a type array of several other types becomes `anyOf` of one schema per type.
//  5. `const` becomes a one-value `enum` for strings; for other types it is described in words.
//  6. `enum` with non-string values is dropped and described in words ("one of: 1, 2").
//  7. `format`: only string `enum`/`date-time`, number `float`/`double`, integer `int32`/`int64`
//     are accepted; any other format is dropped and named in the description ("format: email").
//  8. `default` is dropped and named in the description ("default: 20"); `examples` is dropped.
//  9. Everything else is dropped: additionalProperties, patternProperties, propertyNames,
//     unevaluatedProperties, if/then/else, not, dependent*, exclusiveMinimum/Maximum,
//     multipleOf, uniqueItems, contains, prefixItems, readOnly/writeOnly, deprecated, $id, $comment.
// 10. Every schema gets a type: inferred from properties (object), items (array) or string
//     enum (string), otherwise `string` (a "{}" any-value schema). An array without `items`
//     gets `items: {type: "string"}`.
// 11. An empty `properties` is dropped, `required` keeps only names that are properties, and a
//     tool whose parameters have no properties is declared without `parameters` (Gemini answers
//     400 "properties: should be non-empty for OBJECT type").
// ---------------------------------------------------------------------------------------------

const GEMINI_KEEP = [
  'description',
  'title',
  'nullable',
  'minItems',
  'maxItems',
  'minimum',
  'maximum',
  'minLength',
  'maxLength',
  'pattern',
  'minProperties',
  'maxProperties',
  'propertyOrdering',
] as const;

const GEMINI_FORMATS: Record<string, string[]> = {
  string: ['enum', 'date-time'],
  number: ['float', 'double'],
  integer: ['int32', 'int64'],
};

const MAX_DEPTH = 24;

interface Ctx {
  root: Obj;
  /** References being expanded (a recursion guard). */
  expanding: string[];
  depth: number;
}

/** Follows a local JSON pointer (`#/$defs/x`) inside a schema; undefined when it leads nowhere. */
export function resolvePointer(root: Obj, ref: string): Obj | undefined {
  if (ref === '#') return root;
  if (!ref.startsWith('#/')) return undefined;
  let node: unknown = root;
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isObj(node)) return undefined;
    node = node[key];
  }
  return isObj(node) ? node : undefined;
}

function note(out: Obj, text: string): void {
  const d = typeof out.description === 'string' && out.description.trim() ? out.description.trim() : '';
  out.description = d ? `${d} (${text})` : `(${text})`;
}

function short(v: unknown): string {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

/** Merges allOf branches into their parent (properties and required united; first value wins otherwise). */
function mergeAllOf(s: Obj, ctx: Ctx): Obj {
  const { allOf, ...rest } = s;
  if (!Array.isArray(allOf)) return s;
  const out: Obj = { ...rest };
  for (const branch of allOf) {
    let b: unknown = branch;
    if (isObj(b) && typeof b.$ref === 'string' && !ctx.expanding.includes(b.$ref)) {
      const { $ref, ...siblings } = b;
      b = { ...(resolvePointer(ctx.root, $ref) ?? {}), ...siblings };
    }
    if (!isObj(b)) continue;
    for (const [k, v] of Object.entries(b)) {
      if (k === '$ref') continue;
      if (k === 'properties' && isObj(v)) out.properties = { ...(isObj(out.properties) ? out.properties : {}), ...v };
      else if (k === 'required' && Array.isArray(v))
        out.required = [...new Set([...(Array.isArray(out.required) ? (out.required as unknown[]) : []), ...(v as unknown[])])];
      else if (!(k in out)) out[k] = v;
    }
  }
  return out;
}

function cleanNode(input: unknown, ctx: Ctx): Obj | null {
  if (input === false) return null;
  if (!isObj(input)) return { type: 'string' };
  if (ctx.depth > MAX_DEPTH) return { type: 'object', description: '(nested too deeply to describe)' };

  // $ref: inline the target (the referring schema's own keywords win), with a recursion guard.
  if (typeof input.$ref === 'string') {
    const { $ref, ...siblings } = input;
    const target = resolvePointer(ctx.root, $ref);
    if (!target || ctx.expanding.includes($ref)) {
      const out: Obj = { type: target ? 'object' : 'string' };
      const d = siblings.description ?? target?.description;
      if (typeof d === 'string') out.description = d;
      note(out, target ? 'a nested structure of the same shape as its parent' : 'an unresolvable schema reference');
      return out;
    }
    return cleanNode({ ...target, ...siblings }, { ...ctx, depth: ctx.depth + 1, expanding: [...ctx.expanding, $ref] });
  }
  let s: Obj = input;
  const inner: Ctx = { ...ctx, depth: ctx.depth + 1 };
  s = mergeAllOf(s, inner);

  const out: Obj = {};
  for (const k of GEMINI_KEEP) {
    const v = s[k];
    if (v === undefined) continue;
    if (k === 'description' || k === 'title' || k === 'pattern') {
      if (typeof v === 'string') out[k] = v;
    } else if (k === 'nullable') {
      if (typeof v === 'boolean') out[k] = v;
    } else if (k === 'propertyOrdering') {
      if (Array.isArray(v)) out[k] = v.filter((x) => typeof x === 'string');
    } else if (typeof v === 'number') out[k] = v;
  }

  // Types: arrays and null become nullable / anyOf.
  let type: string | undefined;
  let typeBranches: string[] = [];
  if (Array.isArray(s.type)) {
    const types = s.type.filter((t): t is string => typeof t === 'string');
    if (types.includes('null')) out.nullable = true;
    typeBranches = types.filter((t) => t !== 'null');
    if (typeBranches.length === 1) type = typeBranches[0];
    else if (typeBranches.length === 0) type = 'string';
  } else if (typeof s.type === 'string') {
    if (s.type === 'null') {
      out.nullable = true;
      type = 'string';
      note(out, 'always null');
    } else type = s.type;
  }

  // anyOf / oneOf.
  const alternatives = Array.isArray(s.anyOf) ? s.anyOf : Array.isArray(s.oneOf) ? s.oneOf : undefined;
  if (alternatives) {
    const cleaned: Obj[] = [];
    for (const alt of alternatives) {
      if (isObj(alt) && alt.type === 'null' && Object.keys(alt).length === 1) {
        out.nullable = true;
        continue;
      }
      const c = cleanNode(alt, inner);
      if (c) cleaned.push(c);
    }
    if (cleaned.length === 1) {
      // One real branch: it is the schema (the parent's annotations win).
      const only = cleaned[0]!;
      for (const [k, v] of Object.entries(only)) {
        if (k === 'description' && typeof out.description === 'string') continue;
        if (!(k in out)) out[k] = v;
      }
      return finish(out, s);
    }
    if (cleaned.length > 1) out.anyOf = cleaned;
  }
  if (typeBranches.length > 1) {
    out.anyOf = typeBranches.map((t) => (t === 'array' ? { type: t, items: { type: 'string' } } : { type: t }));
    return finish(out, s);
  }

  // Infer a missing type.
  if (!type && !out.anyOf) {
    if (isObj(s.properties)) type = 'object';
    else if (s.items !== undefined) type = 'array';
    else if (Array.isArray(s.enum) && s.enum.every((v) => typeof v === 'string' || v === null)) type = 'string';
    else if (typeof s.const === 'string') type = 'string';
    else if (typeof s.const === 'number') type = Number.isInteger(s.const) ? 'integer' : 'number';
    else if (typeof s.const === 'boolean') type = 'boolean';
    else type = 'string';
  }
  if (type) out.type = type;

  // const / enum.
  if (s.const !== undefined) {
    if (typeof s.const === 'string' && (type === 'string' || type === undefined)) out.enum = [s.const];
    else note(out, `must be ${short(s.const)}`);
  }
  if (Array.isArray(s.enum)) {
    const values = s.enum.filter((v) => v !== null);
    if (values.length < s.enum.length) out.nullable = true;
    if (values.length && values.every((v) => typeof v === 'string') && type === 'string') out.enum = values;
    else if (values.length) note(out, `one of: ${values.map(short).join(', ')}`);
  }

  // format.
  if (typeof s.format === 'string') {
    if (type && (GEMINI_FORMATS[type] ?? []).includes(s.format)) out.format = s.format;
    else note(out, `format: ${s.format}`);
  }
  if (s.default !== undefined) note(out, `default: ${short(s.default)}`);

  // Children.
  if (type === 'object' && isObj(s.properties)) {
    const props: Obj = {};
    for (const [name, child] of Object.entries(s.properties)) {
      const c = cleanNode(child, inner);
      if (c) props[name] = c;
    }
    if (Object.keys(props).length) out.properties = props;
  }
  if (type === 'array') {
    let items: Obj | null;
    if (Array.isArray(s.items)) {
      const each = s.items.map((i) => cleanNode(i, inner)).filter((x): x is Obj => !!x);
      items = each.length === 0 ? { type: 'string' } : each.length === 1 ? each[0]! : { anyOf: each };
    } else items = s.items === undefined ? { type: 'string' } : cleanNode(s.items, inner);
    out.items = items ?? { type: 'string' };
  }
  return finish(out, s);
}

function finish(out: Obj, s: Obj): Obj {
  if (Array.isArray(s.required) && isObj(out.properties)) {
    const names = Object.keys(out.properties);
    const required = [...new Set(s.required.filter((r): r is string => typeof r === 'string' && names.includes(r)))];
    if (required.length) out.required = required;
  }
  if (isObj(out.properties) && Array.isArray(out.propertyOrdering)) {
    const names = Object.keys(out.properties);
    out.propertyOrdering = (out.propertyOrdering as string[]).filter((n) => names.includes(n));
  } else delete out.propertyOrdering;
  return out;
}

/** A tool's parameters as Gemini accepts them; undefined when the tool takes no parameters. */
export function geminiParameters(schema: JsonSchema): Obj | undefined {
  const root = isObj(schema) ? schema : {};
  const out = cleanNode(root, { root, expanding: [], depth: 0 });
  if (!out || out.type !== 'object' || !isObj(out.properties)) return undefined;
  return out;
}
