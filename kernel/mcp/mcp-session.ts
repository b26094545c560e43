import type { ServerContext, Transport } from '@modelcontextprotocol/server';
import type { Kernel } from '../kernel.js';
import type { Logger } from '../logger.js';
import type { FoundTools } from './found-tools.js';
import type { McpProfile } from './mcp-profile.js';
import type { McpClient } from './client-tokens.js';
import { MemoMcpServer } from './mcp-server.js';

export interface McpSessionOptions {
  /** The write capability one call presents (see McpServerOptions.capability). */
  capability: (ctx: ServerContext) => string | undefined;
  /** The tools the endpoint serves, and where found tools are kept (see McpServerOptions). */
  profile?: McpProfile;
  found?: FoundTools;
  /** The named client of the session's requests (a per-client token), read on each request. */
  client?: () => McpClient | undefined;
  /** Aborted when the HTTP request a call came on is closed by the client before its answer. */
  requestSignal?: (ctx: ServerContext) => AbortSignal | undefined;
  logger?: Logger;
}

/**
 * One client's 2025-11-25 MCP session: a server instance of its own (tools, skills as prompts and
 * resources) connected to the session's transport for the life of the session. It tells the client
 * when the tool list or the skills change. `close()` releases all of it.
 */
export class McpSession {
  readonly server: MemoMcpServer;
  /** Called once when the session ends, however it ends (client DELETE, idle timeout, close()). */
  onclose?: () => void;
  private transport: Transport | undefined;
  private closed = false;

  constructor(kernel: Kernel, options: McpSessionOptions) {
    this.server = new MemoMcpServer(kernel, {
      era: 'legacy',
      capability: options.capability,
      sessionId: () => this.transport?.sessionId,
      ...(options.profile ? { profile: options.profile } : {}),
      ...(options.found ? { found: options.found } : {}),
      ...(options.client ? { client: options.client } : {}),
      ...(options.requestSignal ? { requestSignal: options.requestSignal } : {}),
      ...(options.logger ? { logger: options.logger } : {}),
    });
    this.server.mcp.server.onclose = () => this.release();
  }

  /** Called when a tool call ends: the end of a long call is activity, for an idle timeout. */
  set onactivity(listener: (() => void) | undefined) {
    this.server.onactivity = listener;
  }

  /** True while a tool call of this session is running (an idle timeout waits for it). */
  get busy(): boolean {
    return this.server.busy;
  }

  /** The client's name from `initialize`, as audit lines show it. */
  get clientName(): string {
    return this.server.clientName;
  }

  connect(transport: Transport): Promise<void> {
    this.transport = transport;
    return this.server.mcp.connect(transport);
  }

  /** Ends the session: closes the transport (open streams end, running calls are aborted) and unsubscribes. */
  async close(): Promise<void> {
    if (this.closed) return;
    try {
      await this.server.mcp.close();
    } finally {
      this.release();
    }
  }

  private release(): void {
    if (this.closed) return;
    this.closed = true;
    this.server.release();
    this.onclose?.();
  }
}
