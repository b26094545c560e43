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

/** A registered tool as `tools/list` announces it: its own JSON Schema is the input schema. */
export function toMcpTool(tool: RegisteredTool): Tool {
  return {
    name: tool.spec.name,
    description: tool.spec.description,
    inputSchema: tool.spec.parameters as Tool['inputSchema'],
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
