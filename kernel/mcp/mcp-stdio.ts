import { Writable, type Readable } from 'node:stream';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Disposable } from '../disposable.js';
import type { Kernel } from '../kernel.js';
import type { Logger } from '../logger.js';
import { McpSession } from './mcp-session.js';

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
  const write = stdout.write.bind(stdout) as (chunk: unknown, encoding?: BufferEncoding, cb?: (err?: Error | null) => void) => boolean;
  stdout.write = process.stderr.write.bind(process.stderr);
  return new Writable({
    // Pass the transport's strings straight through: no re-encoding on the way to the pipe.
    decodeStrings: false,
    write(chunk: string | Buffer, encoding, callback) {
      write(chunk, encoding, callback);
    },
  });
}

export interface McpStdioOptions {
  stdin?: Readable;
  stdout?: Writable;
  /** The write capability every call of this process presents (see takeWriteCapabilityFromEnv). */
  capability?: string;
  logger?: Logger;
}

/**
 * The kernel's tools over MCP stdio: one session for the life of the process, the same session
 * code as the HTTP endpoint. Ends when stdin ends (the client went away) or on close().
 */
export class McpStdioServer {
  readonly session: McpSession;
  /** Resolves when the session has ended. */
  readonly closed: Promise<void>;
  private readonly stdin: Readable;
  private readonly transport: StdioServerTransport;

  private unhook: Disposable | undefined;

  constructor(
    private readonly kernel: Kernel,
    options: McpStdioOptions = {},
  ) {
    const capability = options.capability;
    this.stdin = options.stdin ?? process.stdin;
    this.transport = new StdioServerTransport(this.stdin, options.stdout ?? process.stdout);
    this.session = new McpSession(kernel, { capability: () => capability, ...(options.logger ? { logger: options.logger } : {}) });
    this.closed = new Promise<void>((resolve) => {
      this.session.onclose = resolve;
    });
  }

  async start(): Promise<void> {
    // The SDK's stdio transport does not notice the client hanging up; end the session when it does.
    this.stdin.once('end', () => void this.close());
    this.stdin.once('close', () => void this.close());
    // One lifecycle: the kernel's shutdown ends the session first.
    this.unhook = this.kernel.onShutdown(() => this.close());
    await this.session.connect(this.transport);
  }

  close(): Promise<void> {
    this.unhook?.dispose();
    return this.session.close();
  }
}
