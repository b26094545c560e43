import { Writable, type Readable } from 'node:stream';
import { serveStdio, StdioServerTransport, type StdioServerHandle } from '@modelcontextprotocol/server/stdio';
import type { Disposable } from '../disposable.js';
import type { Kernel } from '../kernel.js';
import type { Logger } from '../logger.js';
import { MemoMcpServer } from './mcp-server.js';

/** The environment variable an agent-turn backend uses to hand `memo serve --stdio` its write capability. */
export const CAPABILITY_ENV = 'MEMO_WRITE_CAPABILITY';

/**
 * Reads the write capability from the environment once and deletes it there, so nothing the kernel
 * spawns later (a shell command, a skill's tool) inherits it.
 */
export function takeWriteCapabilityFromEnv(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const value = env[CAPABILITY_ENV];
  delete env[CAPABILITY_ENV];
  return value ? value : undefined;
}

/**
 * Reserves stdout for the protocol: returns a stream that writes to the real stdout, and sends
 * everything else written to `process.stdout` (a pack's console.log, a stray print) to stderr,
 * where it cannot corrupt the JSON-RPC stream.
 */
export function reserveStdoutForProtocol(): Writable {
  const stdout = process.stdout;
  const write = stdout.write.bind(stdout) as (chunk: unknown, encoding?: BufferEncoding) => boolean;
  stdout.write = process.stderr.write.bind(process.stderr);
  const protocol = new Writable({
    // Pass the transport's strings straight through: no re-encoding on the way to the pipe.
    decodeStrings: false,
    // One buffer, stdout's own: a chunk stdout took without asking to wait is done at once (this
    // stream holds nothing back and adds no second round of backpressure); otherwise done on drain.
    highWaterMark: 1 << 20,
    write(chunk: string | Buffer, encoding, callback) {
      if (write(chunk, encoding)) callback();
      else stdout.once('drain', () => callback());
    },
  });
  stdout.once('error', (err: Error) => protocol.destroy(err));
  // Every response in flight may wait for drain at once (16 calls on one pipe): not a leak.
  protocol.setMaxListeners(0);
  return protocol;
}

export interface McpStdioOptions {
  stdin?: Readable;
  stdout?: Writable;
  /** The write capability every call of this process presents (see takeWriteCapabilityFromEnv). */
  capability?: string;
  logger?: Logger;
}

/**
 * The kernel's tools over MCP stdio, in both revisions: a client that opens with `initialize` gets
 * a 2025-11-25 session for the life of the process; a 2026-07-28 client sends self-contained
 * requests (`server/discover`, `_meta` on each). The same server definition as the HTTP endpoint.
 * Ends when stdin ends (the client went away) or on close().
 */
export class McpStdioServer {
  /** Resolves when the connection has ended. */
  readonly closed: Promise<void>;
  private readonly stdin: Readable;
  private readonly transport: StdioServerTransport;
  private readonly instances = new Set<MemoMcpServer>();
  private handle: StdioServerHandle | undefined;
  private unhook: Disposable | undefined;
  private ended!: () => void;
  private closing = false;

  constructor(
    private readonly kernel: Kernel,
    private readonly options: McpStdioOptions = {},
  ) {
    this.stdin = options.stdin ?? process.stdin;
    this.transport = new StdioServerTransport(this.stdin, options.stdout ?? process.stdout);
    this.closed = new Promise<void>((resolve) => {
      this.ended = resolve;
    });
  }

  start(): Promise<void> {
    // End the connection when the client hangs up.
    this.stdin.once('end', () => void this.close());
    this.stdin.once('close', () => void this.close());
    // One lifecycle: the kernel's shutdown ends the connection first.
    this.unhook = this.kernel.onShutdown(() => this.close());
    const { capability, logger } = this.options;
    this.transport.onclose = () => void this.close();
    this.handle = serveStdio(
      (ctx) => {
        // One instance per connection (and one for a server/discover probe that a 2025 client drops).
        const server = new MemoMcpServer(this.kernel, { era: ctx.era, capability: () => capability, ...(logger ? { logger } : {}) });
        this.instances.add(server);
        server.mcp.server.onclose = () => {
          server.release();
          this.instances.delete(server);
        };
        return server.mcp;
      },
      { transport: this.transport, onerror: (err) => logger?.info(`mcp stdio: ${err.message}`) },
    );
    return Promise.resolve();
  }

  async close(): Promise<void> {
    if (this.closing) return this.closed;
    this.closing = true;
    this.unhook?.dispose();
    try {
      await this.handle?.close();
    } finally {
      for (const s of this.instances) s.release();
      this.instances.clear();
      this.ended();
    }
  }
}
