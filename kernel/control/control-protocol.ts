/**
 * The control protocol between `memo serve` and the CLI on the same data folder: newline-delimited
 * JSON over a Unix socket, one request per connection.
 *
 *   server -> {"v":1,"type":"hello","pid","data","root","packs","skills"}   as soon as a client connects
 *   client -> {"v":1,"op":"plugins.list"} | {"v":1,"op":"plugins.info","id"} | {"v":1,"op":"tools.list"}
 *           | {"v":1,"op":"tools.call","tool","args"}
 *   server -> {"v":1,"type":"progress","update"} | {"v":1,"type":"prompt","id","request"} | {"v":1,"type":"withdrawn","id"}   (tools.call only)
 *   client -> {"v":1,"type":"answer","id","answer"} | {"v":1,"type":"answer","id","refused"} | {"v":1,"type":"cancel"}            (tools.call only)
 *   server -> {"v":1,"type":"result","value"} or {"v":1,"type":"error","code","message"}, then closes.
 *             A request line the server cannot take: TOO_LARGE (over MAX_REQUEST_LINE_BYTES), TOO_DEEP (nested
 *             deeper than MAX_JSON_DEPTH, kernel/util/bounded-json.ts; checked before parsing), BAD_REQUEST (not a JSON object).
 *
 * Approvals (requests waiting in the kernel's approval broker; added within v1, so older CLIs are unaffected):
 *   client -> {"v":1,"op":"approvals.list"}                      -> result: ApprovalView[] (kernel-views.ts)
 *           | {"v":1,"op":"approvals.answer","id","answer"}       -> result: {"id","tool","reply"}, answered as `cli`
 *           | {"v":1,"op":"approvals.answer","id","edit":{...}}   (only a request whose tool is editable)
 *             errors: NOT_PENDING (unknown or settled id), AMBIGUOUS (a prefix of several), NOT_EDITABLE,
 *             ANSWER_NOT_OFFERED (not among the request's answers), NOT_ANSWERABLE (a memo tools call's own prompt),
 *             GONE (with a shared database: the instance it waits on is not answering; the console's 410)
 *           | {"v":1,"op":"approvals.watch"}
 *   server -> {"v":1,"type":"approvals","pending":[...]}, then per change
 *             {"v":1,"type":"approval","event":"asked","approval"} | {"v":1,"type":"approval","event":"settled","id","outcome",...}
 *             until the client closes; at shutdown {"v":1,"type":"error","code":"SERVER_STOPPING"}.
 *
 * The MCP token (`memo serve rotate-token`; added within v1):
 *   client -> {"v":1,"op":"serve.rotate-token"}   -> result: {"url","token","console"}: the new token and a new one-time
 *             web console link (null while the console pack is disabled or not loaded). The admin line `token.rotate` by `cli` is written first; errors: AUDIT_UNAVAILABLE (it
 *             could not be written: the token is unchanged), NO_TOKEN (memo serve --stdio, or an endpoint not yet listening).
 *
 * The web console's login link (`memo console link`; added within v1):
 *   client -> {"v":1,"op":"console.link"}   -> result: {"console"}: a new one-time login link, the MCP token untouched. The admin
 *             line `console.link` by `cli` is written first; errors: AUDIT_UNAVAILABLE, NO_CONSOLE (the console pack is off,
 *             or memo serve's endpoint does not listen yet).
 *
 * An MCP client over stdio (`memo serve --stdio` started beside memo serve, kernel/cli/stdio-front.ts; added within v1):
 *   client -> {"v":1,"op":"mcp.stdio","tools"?,"profile"?,"search"?,"capability"?}   (memo serve's profile options; the write capability of its environment)
 *   server -> {"v":1,"type":"upgraded","pid","profile"}, and from then on the connection carries MCP, one JSON-RPC message per
 *             line both ways, served by this kernel as an external MCP client (its own session, its requests in this
 *             server's approvals inbox); the client closing the connection withdraws what it was waiting on.
 *             errors: USAGE (a profile this server does not know, --tools with --profile).
 *
 * The hello names what the server serves (data folder, root, pack and skill folders) so a client can
 * tell whether going through it would change what its command means.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

export const CONTROL_PROTOCOL_VERSION = 1;
/** The longest request line a server reads (the CLI's arguments come from one command-line word, at most 128 KiB on Linux). */
export const MAX_REQUEST_LINE_BYTES = 1024 * 1024;
/** The longest line a client reads (a tool's result can be large: a whole file read). */
export const MAX_RESPONSE_LINE_BYTES = 64 * 1024 * 1024;
/**
 * sun_path holds 108 bytes with the terminating NUL. libuv cuts a longer path without a word and
 * binds (or connects to) the shortened one, so every path is checked against this first.
 */
export const MAX_SOCKET_PATH_BYTES = 107;

export interface ServerHello {
  v: number;
  type: 'hello';
  pid: number;
  /** The data folder, the sandbox root and the pack and skill folders, as real paths where they exist. */
  data: string;
  root: string;
  packs: string[];
  skills: string[];
}

/** The socket's usual place; a data folder whose path is too long for it gets a pointer file instead. */
export function socketPathIn(dataDir: string): string {
  return path.join(dataDir, 'control.sock');
}

/** Names a socket that lives outside the data folder (under the temp folder) because `control.sock` would be too long. */
export function pointerFileIn(dataDir: string): string {
  return path.join(dataDir, 'control-socket.json');
}

export function fitsSocketPath(p: string): boolean {
  return Buffer.byteLength(p) <= MAX_SOCKET_PATH_BYTES;
}

/** A folder's real path when it exists, its absolute path otherwise: both sides compare folders this way. */
export function realDir(dir: string): string {
  try {
    return fs.realpathSync(dir);
  } catch {
    return path.resolve(dir);
  }
}

/**
 * Splits a byte stream into lines and refuses any longer than `max` bytes (counted before the
 * newline arrives, so a peer cannot fill memory with one endless line).
 */
export class LineReader {
  private chunks: Buffer[] = [];
  private size = 0;
  private dead = false;

  constructor(
    private readonly max: number,
    private readonly onLine: (line: string) => void,
    private readonly onTooLong: () => void,
  ) {}

  push(data: Buffer): void {
    if (this.dead) return;
    let start = 0;
    for (let nl = data.indexOf(10, start); nl >= 0; nl = data.indexOf(10, start)) {
      if (!this.take(data.subarray(start, nl))) return;
      const line = Buffer.concat(this.chunks).toString('utf8');
      this.chunks = [];
      this.size = 0;
      this.onLine(line);
      if (this.dead) return;
      start = nl + 1;
    }
    this.take(data.subarray(start));
  }

  /** Ignores whatever arrives from now on (the request is answered; the connection is closing). */
  stop(): void {
    this.dead = true;
  }

  private take(part: Buffer): boolean {
    this.size += part.length;
    if (this.size > this.max) {
      this.chunks = [];
      this.dead = true;
      this.onTooLong();
      return false;
    }
    if (part.length > 0) this.chunks.push(part);
    return true;
  }
}

/** One message as a line. */
export function line(message: object): string {
  return JSON.stringify({ v: CONTROL_PROTOCOL_VERSION, ...message }) + '\n';
}
