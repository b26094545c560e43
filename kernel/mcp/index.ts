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
