/**
 * The MCP server's public face, apart from kernel/index.ts: it loads the MCP SDK (about 0.3 s), which
 * packs and most CLI commands never need.
 *
 * @module memo-kernel/mcp
 */
import '../third-party-globals.js';
export { McpHttpEndpoint, loopbackEndpoint, type McpHttpEndpointOptions, CAPABILITY_HEADER as MCP_CAPABILITY_HEADER } from './mcp-http-server.js';
export { McpSession, type McpSessionOptions } from './mcp-session.js';
export { McpStdioServer, type McpStdioOptions, takeWriteCapabilityFromEnv, CAPABILITY_ENV as MCP_CAPABILITY_ENV } from './mcp-stdio.js';
export { toolAnnotations as mcpToolAnnotations } from './mcp-tool-mapping.js';

// Types the exported signatures above name (a kernel property, a service method's argument or
// result, an option): exported so a host or pack can name them, and so the API pages document them.
export type { McpClient } from './client-tokens.js';
export type { FoundTools } from './found-tools.js';
export type { HttpMount } from './mcp-http-server.js';
export type { McpProfile } from './mcp-profile.js';
export type { MemoMcpServer } from './mcp-server.js';
