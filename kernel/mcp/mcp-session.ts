import { randomUUID } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, ListToolsRequestSchema, type JSONRPCRequest, type ServerNotification, type ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import { toDisposable, type Disposable } from '../disposable.js';
import type { Kernel } from '../kernel.js';
import type { Logger } from '../logger.js';
import type { Caller, ProgressUpdate } from '../tools/contract.js';
import { toCallToolResult, toMcpTool } from './mcp-tool-mapping.js';

export type McpRequestExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

export const MCP_SERVER_NAME = 'memo';
export const MCP_SERVER_VERSION = '0.1.0';
/** Client names are free text chosen by the client; they go into audit lines, so keep them short. */
const CLIENT_NAME_MAX = 64;

/**
 * One registry subscription per kernel, shared by all its sessions: sessions come and go by the
 * dozen, and each still gets (and on close drops) its own listener here, without stacking dozens
 * of listeners on the registry's emitter. Subscribed while at least one session listens.
 */
class ToolChangeFeed {
  private static readonly feeds = new WeakMap<Kernel, ToolChangeFeed>();
  private readonly listeners = new Set<() => void>();
  private upstream: Disposable | undefined;

  static of(kernel: Kernel): ToolChangeFeed {
    let feed = ToolChangeFeed.feeds.get(kernel);
    if (!feed) ToolChangeFeed.feeds.set(kernel, (feed = new ToolChangeFeed(kernel)));
    return feed;
  }

  private constructor(private readonly kernel: Kernel) {}

  subscribe(listener: () => void): Disposable {
    this.listeners.add(listener);
    this.upstream ??= this.kernel.registry.onChange(() => {
      for (const l of [...this.listeners]) l();
    });
    return toDisposable(() => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) {
        this.upstream?.dispose();
        this.upstream = undefined;
      }
    });
  }
}

export interface McpSessionOptions {
  /**
   * The write capability one call presents: per request over HTTP (a header), fixed over stdio
   * (the environment of the process). Only passed on; the pipeline decides what it is worth.
   */
  capability: (extra: McpRequestExtra) => string | undefined;
  logger?: Logger;
}

interface CallParams {
  name: string;
  arguments?: Record<string, unknown>;
  _meta?: { progressToken?: string | number };
}

/**
 * A JSON-RPC error the SDK sends as it is: it takes `code` and `message` from whatever is thrown
 * (an `McpError` would prefix the message with "MCP error <code>: ").
 */
function rpcFault(code: ErrorCode, message: string): Error {
  return Object.assign(new Error(message), { code });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The params of a `tools/call`, or an Invalid params error naming the one thing wrong. */
function callParams(request: JSONRPCRequest): CallParams {
  const bad = (message: string) => rpcFault(ErrorCode.InvalidParams, `Invalid tools/call: ${message}`);
  const params: unknown = request.params;
  if (!isRecord(params)) throw bad('params must be an object with the tool name.');
  const { name, arguments: args, _meta: meta } = params;
  if (typeof name !== 'string' || name === '') throw bad('params.name (the tool name, a string) is missing.');
  if (args !== undefined && !isRecord(args)) throw bad('params.arguments must be an object.');
  const out: CallParams = { name };
  if (args !== undefined) out.arguments = args;
  const token = isRecord(meta) ? meta.progressToken : undefined;
  if (typeof token === 'string' || typeof token === 'number') out._meta = { progressToken: token };
  return out;
}

/**
 * One client's MCP session: a low-level SDK `Server` whose only tools are the kernel's, listed from
 * the registry on every `tools/list` and called through `kernel.invoke` (the one pipeline: no second
 * validation or execution path). It forwards progress, passes the client's cancellation on as the
 * call's signal, and tells the client when the tool list changes. `close()` releases all of it.
 */
export class McpSession {
  readonly server: Server;
  /** Called once when the session ends, however it ends (client DELETE, idle timeout, close()). */
  onclose?: () => void;
  /** Called when a tool call ends: the end of a long call is activity, for an idle timeout. */
  onactivity?: () => void;
  private readonly fallbackSessionId = randomUUID();
  private readonly listener: Disposable;
  private inflight = 0;
  private ready = false;
  private closed = false;

  constructor(
    private readonly kernel: Kernel,
    private readonly options: McpSessionOptions,
  ) {
    this.server = new Server(
      { name: MCP_SERVER_NAME, version: MCP_SERVER_VERSION },
      {
        capabilities: { tools: { listChanged: true } },
        // A burst of pack reloads (a folder of saves) becomes one notification.
        debouncedNotificationMethods: ['notifications/tools/list_changed'],
      },
    );
    this.server.oninitialized = () => {
      this.ready = true;
    };
    this.server.onclose = () => this.release();
    this.server.onerror = (err) => this.options.logger?.info(`mcp session: ${err.message}`);
    this.server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: this.kernel.registry.list().map(toMcpTool) }));
    // tools/call is not registered through setRequestHandler: the SDK would parse it with zod first and
    // answer a malformed one with -32603 and a validation dump. Here it gets -32602 and one line.
    this.server.fallbackRequestHandler = async (request, extra) => {
      if (request.method !== 'tools/call') throw rpcFault(ErrorCode.MethodNotFound, 'Method not found');
      return this.call(callParams(request), extra);
    };
    this.listener = ToolChangeFeed.of(this.kernel).subscribe(() => {
      if (!this.ready || this.closed) return;
      this.server.sendToolListChanged().catch(() => {
        // The client has no notification stream open (or just went away): nothing to tell.
      });
    });
  }

  /** True while a tool call of this session is running (an idle timeout waits for it). */
  get busy(): boolean {
    return this.inflight > 0;
  }

  /** The client's name from `initialize`, as audit lines show it. */
  get clientName(): string {
    const name = this.server.getClientVersion()?.name;
    return typeof name === 'string' && name !== '' ? name.slice(0, CLIENT_NAME_MAX) : 'unknown-client';
  }

  connect(transport: Transport): Promise<void> {
    return this.server.connect(transport);
  }

  /** Ends the session: closes the transport (open streams end, running calls are aborted) and unsubscribes. */
  async close(): Promise<void> {
    if (this.closed) return;
    try {
      await this.server.close();
    } finally {
      this.release();
    }
  }

  private release(): void {
    if (this.closed) return;
    this.closed = true;
    this.listener.dispose();
    this.onclose?.();
  }

  private async call(params: CallParams, extra: McpRequestExtra) {
    const capability = this.options.capability(extra);
    const caller: Caller = { kind: 'mcp', id: this.clientName, sessionId: extra.sessionId ?? this.fallbackSessionId };
    if (capability !== undefined) caller.capability = capability;
    const progressToken = params._meta?.progressToken;
    const onProgress =
      progressToken === undefined
        ? undefined
        : (update: ProgressUpdate) => {
            const p: { progressToken: string | number; progress: number; total?: number; message?: string } = { progressToken, progress: update.progress };
            if (update.total !== undefined) p.total = update.total;
            if (update.message !== undefined) p.message = update.message;
            extra.sendNotification({ method: 'notifications/progress', params: p }).catch(() => {
              // The request's stream is gone (client cancelled or disconnected): progress has no reader.
            });
          };
    this.inflight++;
    try {
      // extra.signal aborts on the client's notifications/cancelled and when the session closes.
      const result = await this.kernel.invoke({
        tool: params.name,
        args: params.arguments ?? {},
        caller,
        signal: extra.signal,
        ...(onProgress ? { onProgress } : {}),
      });
      return toCallToolResult(result);
    } finally {
      this.inflight--;
      this.onactivity?.();
    }
  }
}
