import { Transform, Writable, type Readable, type TransformCallback } from 'node:stream';
import { DEFAULT_MAX_REQUEST_BODY_SIZE, type JSONRPCMessage } from '@modelcontextprotocol/server';
import { serveStdio, StdioServerTransport, type StdioServerHandle } from '@modelcontextprotocol/server/stdio';
import type { Disposable } from '../disposable.js';
import type { Kernel } from '../kernel.js';
import type { Logger } from '../logger.js';
import { jsonRpcIdOf, nestedDeeperThan, tooDeepMessage } from '../util/bounded-json.js';
import { MemoMcpServer } from './mcp-server.js';
import { FoundTools } from './found-tools.js';
import type { McpProfile } from './mcp-profile.js';

export { CAPABILITY_ENV, takeWriteCapabilityFromEnv } from './defaults.js';

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

/**
 * The longest message line read: the same limit as a request body over HTTP. Below the SDK's own
 * 10 MiB read buffer, which closes the whole connection when it fills.
 */
const MAX_LINE_BYTES = DEFAULT_MAX_REQUEST_BODY_SIZE;
const NEWLINE = 0x0a;

/**
 * What is wrong with a line as a JSON-RPC message, answered as the spec says (-32700 for a line that
 * is not JSON, -32600 for one that is not a single request, notification or response), or null. The
 * SDK would only log these on stderr, and the client would wait for its own timeout.
 */
function malformed(text: string): { id: string | number | null; message: string; code: number } | null {
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    return { id: null, code: -32700, message: 'Parse error: the line is not JSON. Send one JSON-RPC message per line.' };
  }
  if (Array.isArray(message))
    return {
      id: null,
      code: -32600,
      message: 'Invalid Request: batches (a JSON array of messages) are not supported since MCP 2025-06-18; send one message per line.',
    };
  if (typeof message !== 'object' || message === null) return { id: null, code: -32600, message: 'Invalid Request: a message is a JSON object.' };
  const m = message as Record<string, unknown>;
  const id = typeof m.id === 'string' || typeof m.id === 'number' ? m.id : null;
  if (m.jsonrpc !== '2.0') return { id, code: -32600, message: 'Invalid Request: "jsonrpc" must be "2.0".' };
  if (typeof m.method === 'string' && m.method !== '') return null;
  // A response to a request of the server's (it has an id, and a result or an error).
  if (m.method === undefined && id !== null && ('result' in m || 'error' in m)) return null;
  return { id, code: -32600, message: 'Invalid Request: the message has no "method" (a request needs "method" and "id"; a notification, "method").' };
}

/**
 * The client's lines on their way to the SDK's transport, each checked first. A line nested deeper
 * than MAX_JSON_DEPTH, or longer than MAX_LINE_BYTES, is answered here (-32600 naming the limit;
 * with the request's id when it can be read) and dropped, and so is one that is not a single JSON-RPC
 * message (-32700 or -32600: see malformed); blank lines are skipped. The connection goes on: the SDK would
 * hand a deep message to code that recurses over it, and close the connection on a long one.
 */
class CheckedLines extends Transform {
  /** The start of a line that spans chunks. */
  private parts: Buffer[] = [];
  private size = 0;
  /** Inside a line already refused for its length: dropped up to its newline. */
  private skipping = false;

  constructor(private readonly refuse: (id: string | number | null, message: string, code?: number) => void) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    let start = 0;
    for (let nl = chunk.indexOf(NEWLINE); nl !== -1; nl = chunk.indexOf(NEWLINE, start)) {
      this.endLine(chunk.subarray(start, nl + 1));
      start = nl + 1;
    }
    if (start < chunk.length) this.keep(chunk.subarray(start));
    done();
  }

  /** A line's last part, its newline included. */
  private endLine(end: Buffer): void {
    if (!this.keep(end)) {
      this.skipping = false;
      return;
    }
    // A line within one chunk passes on without a copy.
    const line = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts);
    this.parts = [];
    this.size = 0;
    if (nestedDeeperThan(line)) return this.refuse(jsonRpcIdOf(line.toString('utf8')), tooDeepMessage());
    const text = line.toString('utf8');
    // A blank line is no message: nothing to answer, nothing for the SDK to choke on.
    if (text.trim() === '') return;
    const wrong = malformed(text);
    if (wrong) this.refuse(wrong.id, wrong.message, wrong.code);
    else this.push(line);
  }

  /** Keeps a part of the current line; false once the line is refused for its length. */
  private keep(part: Buffer): boolean {
    if (this.skipping) return false;
    this.size += part.length;
    if (this.size > MAX_LINE_BYTES + 1) {
      this.parts = [];
      this.size = 0;
      this.skipping = true;
      this.refuse(null, `The message is over ${MAX_LINE_BYTES} bytes.`);
      return false;
    }
    this.parts.push(part);
    return true;
  }
}

export interface McpStdioOptions {
  stdin?: Readable;
  stdout?: Writable;
  /** The write capability every call of this process presents (see takeWriteCapabilityFromEnv). */
  capability?: string;
  /** The tools served (default: every enabled tool); in tool-search mode, the client finds the rest. */
  profile?: McpProfile;
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
  private readonly lines: CheckedLines;
  private readonly transport: StdioServerTransport;
  private readonly instances = new Set<MemoMcpServer>();
  /** The process's one client's found tools, in tool-search mode. */
  private readonly found = new FoundTools();
  private handle: StdioServerHandle | undefined;
  private unhook: Disposable | undefined;
  private ended!: () => void;
  private closing = false;

  constructor(
    private readonly kernel: Kernel,
    private readonly options: McpStdioOptions = {},
  ) {
    this.stdin = options.stdin ?? process.stdin;
    this.lines = new CheckedLines((id, message, code = -32600) => {
      const refusal = { jsonrpc: '2.0', id, error: { code, message } } as unknown as JSONRPCMessage;
      this.transport.send(refusal).catch(() => {
        // the client is gone: stdin ends next, and with it the connection
      });
    });
    this.transport = new StdioServerTransport(this.lines, options.stdout ?? process.stdout);
    this.closed = new Promise<void>((resolve) => {
      this.ended = resolve;
    });
  }

  start(): Promise<void> {
    // End the connection when the client hangs up.
    this.stdin.once('end', () => void this.close());
    this.stdin.once('close', () => void this.close());
    this.stdin.pipe(this.lines);
    // One lifecycle: the kernel's shutdown ends the connection first.
    this.unhook = this.kernel.onShutdown(() => this.close());
    const { capability, logger } = this.options;
    this.transport.onclose = () => void this.close();
    this.handle = serveStdio(
      (ctx) => {
        // One instance per connection (and one for a server/discover probe that a 2025 client drops).
        const server = new MemoMcpServer(this.kernel, {
          era: ctx.era,
          capability: () => capability,
          ...(this.options.profile ? { profile: this.options.profile, found: this.found } : {}),
          ...(logger ? { logger } : {}),
        });
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
      // As the SDK's transport does with stdin: stop reading, so the pipe does not hold the process open.
      this.stdin.unpipe(this.lines);
      if (this.stdin.listenerCount('data') === 0) this.stdin.pause();
      for (const s of this.instances) s.release();
      this.instances.clear();
      this.ended();
    }
  }
}
