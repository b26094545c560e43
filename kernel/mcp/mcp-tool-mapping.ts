import type { CallToolResult, Tool, ToolAnnotations } from '@modelcontextprotocol/server';
import type { ToolResult } from '../tools/contract.js';
import type { RegisteredTool } from '../tools/tool-registry.js';

/**
 * MCP tool annotations, derived from the manifest's `danger`, `effect` and `openWorld` (hints for the
 * client's UI; the kernel enforces its own rules whatever a client makes of them). A tool is
 * open-world only when its declaration says so (it reaches the web, a model provider, messaging);
 * everything else works on the sandbox root and the kernel's own data, a closed world.
 */
export function toolAnnotations(tool: RegisteredTool): ToolAnnotations {
  const { effect, danger, openWorld } = tool.spec;
  return {
    readOnlyHint: effect === 'read',
    destructiveHint: effect === 'delete' || (effect === 'write' && danger === 'dangerous'),
    idempotentHint: effect === 'read',
    openWorldHint: openWorld === true,
  };
}

/** Keywords that describe a value whatever its type: they stay beside `anyOf` when a type list is split. */
const ANNOTATION_KEYWORDS = new Set(['description', 'title', 'default', 'examples', 'deprecated', 'readOnly', 'writeOnly', '$comment']);

/**
 * A JSON Schema with every nullable type list (`"type": ["string", "null"]`) written as `anyOf` of
 * one schema per type, the portable form strict clients accept (the Inspector's strict mode warned
 * 26 times on the vault's tools). The type's own keywords (maxLength, enum, items, ...) go with its
 * branch; the annotations stay outside; an `enum` loses its `null`, which the null branch admits.
 * Everything else is copied as it is; the manifest itself, which the pipeline validates against, is
 * unchanged (both forms accept the same values).
 */
export function portableSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(portableSchema);
  if (!isPlainObject(schema)) return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema))
    out[key] = key === 'enum' || key === 'const' || key === 'default' || key === 'examples' ? value : portableSchema(value);
  const types = out.type;
  if (!Array.isArray(types) || !types.includes('null') || types.length < 2) return out;
  const outside: Record<string, unknown> = {};
  const inside: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(out)) {
    if (key === 'type') continue;
    if (ANNOTATION_KEYWORDS.has(key)) outside[key] = value;
    else inside[key] = key === 'enum' && Array.isArray(value) ? value.filter((v) => v !== null) : value;
  }
  const branches = (types as unknown[]).filter((t) => t !== 'null').map((t) => ({ type: t, ...inside }));
  return { ...outside, anyOf: [...branches, { type: 'null' }] };
}

/** Each tool's input schema as served, made once per registered parameters object. */
const served = new WeakMap<object, Tool['inputSchema']>();

/** A registered tool as `tools/list` announces it: its own JSON Schema, nullable types written portably. */
export function toMcpTool(tool: RegisteredTool): Tool {
  const parameters = tool.spec.parameters as object;
  let inputSchema = served.get(parameters);
  if (!inputSchema) {
    inputSchema = portableSchema(parameters) as Tool['inputSchema'];
    served.set(parameters, inputSchema);
  }
  return {
    name: tool.spec.name,
    description: tool.spec.description,
    inputSchema,
    annotations: toolAnnotations(tool),
  };
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A pipeline outcome as a `tools/call` result. Every outcome of the pipeline, refusals included
 * (UNKNOWN_TOOL, INVALID_ARGS, PERMISSION_DENIED, RATE_LIMITED, ...), is a result: the pipeline
 * audited it, and the model must see it to adjust. Failures are `isError: true` with the text
 * `CODE: message` and `structuredContent: { code, message }`. Only protocol faults (a malformed
 * request, an unknown method) are JSON-RPC errors, and the SDK produces those itself.
 */
export function toCallToolResult(result: ToolResult): CallToolResult {
  if (!result.ok) {
    const { code, message } = result.error;
    return { isError: true, content: [{ type: 'text', text: `${code}: ${message}` }], structuredContent: { code, message } };
  }
  const value = result.value;
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  const out: CallToolResult = { content: [{ type: 'text', text }] };
  if (isPlainObject(value)) out.structuredContent = value;
  return out;
}
