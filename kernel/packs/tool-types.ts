/**
 * TypeScript types for a pack's handler arguments, generated from its plugin.json (`memo plugins
 * types <dir>` writes `<dir>/tool-args.ts`; `npm run build` does it for the built-in packs). The
 * manifest stays the source of truth: the kernel validates every call against the same schemas
 * before a handler runs, so the types say what a handler is given.
 *
 * Covers the JSON Schema that manifests use: object (properties, required, additionalProperties),
 * string, number, integer, boolean, null, arrays (items, tuples), enum, const, oneOf/anyOf (a union;
 * branches that only add constraints are left out), allOf (an intersection), type lists, and
 * descriptions as doc comments. Anything else is `unknown`. The output is already in the project's
 * prettier style, so a generated file passes `prettier --check` as it is.
 *
 * This module imports nothing: the build script transpiles and runs it before the kernel is compiled.
 */

export const TOOL_ARGS_FILE = 'tool-args.ts';
export const TOOL_ARGS_HEADER = '// generated from plugin.json by memo plugins types; do not edit';

type Schema = Record<string, unknown>;

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function isSchema(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A string literal in prettier's `singleQuote` style (double quotes when that needs fewer escapes). */
function literal(value: unknown): string {
  if (typeof value !== 'string') return JSON.stringify(value) ?? 'undefined';
  const singles = (value.match(/'/g) ?? []).length;
  const doubles = (value.match(/"/g) ?? []).length;
  const quote = singles > doubles ? '"' : "'";
  const body = JSON.stringify(value).slice(1, -1).replace(/\\"/g, '"').replace(new RegExp(quote, 'g'), `\\${quote}`);
  return `${quote}${body}${quote}`;
}

function key(name: string): string {
  return IDENTIFIER.test(name) ? name : literal(name);
}

function docComment(description: unknown, indent: string): string[] {
  if (typeof description !== 'string' || description.trim() === '') return [];
  const lines = description
    .trim()
    .replace(/\*\//g, '*\\/')
    .split(/\r?\n/)
    .map((l) => l.trimEnd());
  if (lines.length === 1) return [`${indent}/** ${lines[0]} */`];
  return [`${indent}/**`, ...lines.map((l) => (l ? `${indent} * ${l}` : `${indent} *`)), `${indent} */`];
}

/** A branch of anyOf/oneOf that says what a value is (not only a constraint such as `required`). */
function describesType(s: unknown): boolean {
  return isSchema(s) && ['type', 'const', 'enum', 'properties', 'items', 'anyOf', 'oneOf', 'allOf', '$ref'].some((k) => k in s);
}

function union(parts: string[]): string {
  const unique = [...new Set(parts)];
  if (unique.includes('unknown')) return 'unknown';
  return unique.length ? unique.join(' | ') : 'never';
}

/** Wraps a union or intersection in parentheses where it becomes an array element. */
function element(type: string): string {
  return /^[\w$<>[\], ']+$/.test(type) && !type.includes(' | ') ? type : `(${type})`;
}

function objectType(s: Schema, indent: string): string {
  const props = isSchema(s.properties) ? s.properties : {};
  const required = new Set(Array.isArray(s.required) ? s.required.filter((r): r is string => typeof r === 'string') : []);
  const extra = s.additionalProperties;
  const names = Object.keys(props);
  if (names.length === 0) {
    if (extra === false) return 'Record<string, never>';
    return `Record<string, ${isSchema(extra) ? typeOf(extra, indent) : 'unknown'}>`;
  }
  const inner = `${indent}  `;
  const lines: string[] = ['{'];
  for (const name of names) {
    const sub = props[name];
    lines.push(...docComment(isSchema(sub) ? sub.description : undefined, inner));
    lines.push(`${inner}${key(name)}${required.has(name) ? '' : '?'}: ${typeOf(sub, inner)};`);
  }
  // Declared properties plus others of a given schema: an index signature every property fits.
  if (isSchema(extra)) lines.push(`${inner}[key: string]: unknown;`);
  lines.push(`${indent}}`);
  return lines.join('\n');
}

function typeOf(schema: unknown, indent: string): string {
  if (schema === false) return 'never';
  if (!isSchema(schema)) return 'unknown';
  if ('const' in schema) return literal(schema.const);
  if (Array.isArray(schema.enum)) return union(schema.enum.map(literal));
  for (const k of ['oneOf', 'anyOf'] as const) {
    const branches = schema[k];
    if (Array.isArray(branches) && branches.some(describesType)) return union(branches.map((b) => typeOf(b, indent)));
  }
  if (Array.isArray(schema.allOf) && schema.allOf.some(describesType)) {
    const parts = schema.allOf.filter(describesType).map((b) => typeOf(b, indent));
    const own = { ...schema };
    delete own.allOf;
    if (describesType(own)) parts.unshift(typeOf(own, indent));
    return parts.join(' & ');
  }
  const type = schema.type;
  if (Array.isArray(type)) return union(type.map((t: unknown) => typeOf({ ...schema, type: t }, indent)));
  switch (type) {
    case 'string':
      return 'string';
    case 'number':
    case 'integer':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
    case 'array': {
      const tuple = Array.isArray(schema.prefixItems) ? schema.prefixItems : Array.isArray(schema.items) ? schema.items : null;
      if (tuple) return `[${tuple.map((t) => typeOf(t, indent)).join(', ')}]`;
      return `${element(typeOf(schema.items, indent))}[]`;
    }
    case 'object':
      return objectType(schema, indent);
    case undefined:
      return isSchema(schema.properties) ? objectType(schema, indent) : 'unknown';
    default:
      return 'unknown';
  }
}

/** The text of `tool-args.ts` for a manifest: `export interface ToolArgs { <tool>: <its arguments>; ... }`. */
export function generateToolArgs(manifest: { tools?: Array<{ name: string; parameters?: unknown; description?: unknown }> }): string {
  const lines = [TOOL_ARGS_HEADER, '', '/** Each tool of this pack, by name: the arguments its handler is given (validated against plugin.json). */'];
  const tools = manifest.tools ?? [];
  if (tools.length === 0)
    lines.push('// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- a pack without tools', 'export interface ToolArgs {}');
  else {
    lines.push('export interface ToolArgs {');
    for (const tool of tools) lines.push(...docComment(tool.description, '  '), `  ${key(tool.name)}: ${typeOf(tool.parameters, '  ')};`);
    lines.push('}');
  }
  return lines.join('\n') + '\n';
}

/** True when `written` is what `generateToolArgs` makes of the manifest, whatever its whitespace. */
export function toolArgsCurrent(written: string, manifest: Parameters<typeof generateToolArgs>[0]): boolean {
  const squeeze = (t: string) => t.replace(/\s+/g, '');
  return squeeze(written) === squeeze(generateToolArgs(manifest));
}
