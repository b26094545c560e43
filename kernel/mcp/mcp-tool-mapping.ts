import type { CallToolResult, Tool, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type { ToolResult } from '../tools/contract.js';
import type { RegisteredTool } from '../tools/tool-registry.js';

/**
 * Packs whose tools reach beyond this machine and its files (the web, messaging, calendars, model
 * providers). Their tools, and any tool named `web_*`, are announced with `openWorldHint: true`;
 * everything else works on the sandbox root and the kernel's own data, a closed world.
 */
export const OPEN_WORLD_PACKS: ReadonlySet<string> = new Set(['web-search', 'whatsapp', 'calendar', 'providers']);

/**
 * MCP tool annotations, derived from the manifest's `danger` and `effect` (hints for the client's
 * UI; the kernel enforces its own rules whatever a client makes of them).
 */
export function toolAnnotations(tool: RegisteredTool): ToolAnnotations {
  const { effect, danger, name } = tool.spec;
  return {
    readOnlyHint: effect === 'read',
    destructiveHint: effect === 'delete' || (effect === 'write' && danger === 'dangerous'),
    idempotentHint: effect === 'read',
    openWorldHint: OPEN_WORLD_PACKS.has(tool.pack.id) || name.startsWith('web_'),
  };
}

/** A registered tool as `tools/list` announces it: its own JSON Schema is the input schema. */
export function toMcpTool(tool: RegisteredTool): Tool {
  return {
    name: tool.spec.name,
    description: tool.spec.description,
    inputSchema: tool.spec.parameters as Tool['inputSchema'],
    annotations: toolAnnotations(tool),
  };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
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
