import { createHash, randomUUID } from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { NodeStreamableHTTPServerTransport, toNodeHandler, type NodeIncomingMessageLike, type NodeMcpRequestHandler } from '@modelcontextprotocol/node';
import {
  classifyInboundRequest,
  createMcpHandler,
  DEFAULT_MAX_REQUEST_BODY_SIZE,
  ProtocolErrorCode,
  SUPPORTED_PROTOCOL_VERSIONS,
  type InboundHttpRequest,
  type McpHttpHandler,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { MemoError } from '../errors.js';
import { answerAndClose, jsonRpcIdOf, parseBoundedJson, readBody, tooDeepMessage } from '../util/bounded-json.js';
import type { Disposable } from '../disposable.js';
import type { Kernel } from '../kernel.js';
import type { Logger } from '../logger.js';
import { bearerToken, generateToken, hostAllowed, isLoopbackAddress, originAllowed, tokensEqual } from './auth.js';
import { changeFeeds, MemoMcpServer } from './mcp-server.js';
import { McpSession } from './mcp-session.js';
import { FoundTools } from './found-tools.js';
import type { McpProfile } from './mcp-profile.js';
import type { McpClient } from './client-tokens.js';

export const MCP_PATH = '/mcp';
export const ROTATE_PATH = '/mcp/rotate-token';
/** How long an idle keep-alive connection stays open (see start()). */
const KEEP_ALIVE_MS = 65_000;
export const HEALTH_PATH = '/healthz';
/** The header an agent-turn backend uses to present its single-turn write capability, per request. */
export const CAPABILITY_HEADER = 'x-memo-write-capability';
import { DEFAULT_IDLE_TIMEOUT_MS, DEFAULT_MAX_SESSIONS } from './defaults.js';
export { DEFAULT_IDLE_TIMEOUT_MS, DEFAULT_MAX_SESSIONS };

/** The OAuth endpoints a client tries when it has found no metadata: answered with the same hint. */
const OAUTH_PATHS = new Set(['/register', '/authorize', '/token', '/oauth/register', '/oauth/authorize', '/oauth/token']);
/** Every revision this endpoint serves: the stateless one, and those the SDK's session leg negotiates. */
const SPOKEN_VERSIONS: readonly string[] = ['2026-07-28', ...SUPPORTED_PROTOCOL_VERSIONS];
/** The JSON-RPC error code of a 401 (the server-defined range). */
const UNAUTHORIZED = -32001;
/** How many rotated-away tokens are recognised (by digest) to say they were rotated. */
const ROTATED_REMEMBERED = 16;

function tokenDigest(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('base64url');
}

const NO_OAUTH =
  'This server uses a static bearer token, not OAuth: there is no authorization server or client registration; configure the token as a header in the client. A desktop client can run memo serve --stdio instead, which needs no token.';

export interface McpHttpEndpointOptions {
  /** Interface to bind. Default `127.0.0.1`; anything not loopback needs `allowRemote`. */
  host?: string;
  /** Default 0: a random free port. */
  port?: number;
  /** Permit a non-loopback `host`. Off by default: see `McpHttpEndpoint`. */
  allowRemote?: boolean;
  /** A session with no request for this long (and no call running) is closed. Default 30 min. */
  idleTimeoutMs?: number;
  /**
   * At most this many sessions are open; a new one past it closes the longest-idle session (one not
   * running a call) to make room, and gets 503 only when every open session is running a call. Default 64.
   */
  maxSessions?: number;
  logger?: Logger;
  /**
   * Other routes served on the same port behind the same Host/Origin checks, before the bearer
   * token is asked for: memo serve mounts the packs' routes (`kernel.http`: the console pack's `/ui`,
   * which has its own login).
   */
  mounts?: HttpMount[];
  /**
   * Where the bearer token comes from, asked at construction and at every rotation. Default: a fresh
   * random one each time. Instances behind one proxy share one (`memo serve --token-file`).
   */
  token?: () => string;
  /** The tools served (default: every enabled tool); in tool-search mode, clients find the rest. */
  profile?: McpProfile;
  /**
   * Per-client tokens: the client a presented token names, if any (`memo serve token add`). Each is
   * accepted beside the endpoint's own token, served its profile, limited and audited as that client.
   */
  clients?: (presented: string) => McpClient | undefined;
}

/** Routes mounted beside `/mcp`: `owns` says which paths are its; `handle` answers them. */
export interface HttpMount {
  owns(pathname: string): boolean;
  handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void>;
  /** Called when the endpoint closes (end open streams); the endpoint's close waits for it. */
  close?(): void | Promise<void>;
}

/** Why a session ended, as a later request with its id is told. */
type EndReason = 'idle' | 'evicted' | 'token-rotated' | 'closed';

interface SessionEntry {
  id: string;
  session: McpSession;
  transport: NodeStreamableHTTPServerTransport;
  timer: NodeJS.Timeout;
  /** The client token it was opened with (its name), if any; refreshed from each request's token. */
  client: { current: McpClient | undefined };
}

/**
 * The header the endpoint sets on each stateless request it hands the SDK: which client token the
 * request presented (a key into the endpoint's own map). Whatever a client sends under this name is replaced.
 */
const CLIENT_HEADER = 'x-memo-client';
/** The header the endpoint sets on each POST it hands the SDK: a key to the request's hang-up signal. Replaced whatever a client sends. */
const REQUEST_HEADER = 'x-memo-request';

/** How many ended session ids are remembered, to tell a returning client why its session is gone. */
const ENDED_REMEMBERED = 1024;

function header(value: string | string[] | undefined): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  // A refused request's body is never read; drain it so the connection can be reused.
  res.req?.resume();
  if (res.headersSent) {
    res.end();
    return;
  }
  res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store', ...headers });
  res.end(JSON.stringify(body));
}

/** A duration for people: `150 ms`, `45 s`, `30 min`. */
function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 120_000) return `${Math.round(ms / 1000)} s`;
  return `${Math.round(ms / 60_000)} min`;
}

/** The write capability a request presents in its header (both revisions). */
function capabilityOf(ctx: ServerContext): string | undefined {
  return ctx.http?.req?.headers.get(CAPABILITY_HEADER) || undefined;
}

/**
 * Which revision a session-less POST speaks: the SDK's classifier, the one `isLegacyRequest` runs on
 * a parsed body, fed straight from Node's headers. `isLegacyRequest` wants a web `Request`, and
 * building one cost about 45 us per stateless call (toNodeHandler builds its own for the modern
 * leg anyway).
 */
function isLegacy(req: http.IncomingMessage, body: unknown): boolean {
  const value = (name: string) => {
    const v = req.headers[name];
    return typeof v === 'string' ? v : undefined;
  };
  const request: InboundHttpRequest = { httpMethod: (req.method ?? 'POST').toUpperCase(), body };
  const version = value('mcp-protocol-version');
  const method = value('mcp-method');
  const name = value('mcp-name');
  if (version !== undefined) request.protocolVersionHeader = version;
  if (method !== undefined) request.mcpMethodHeader = method;
  if (name !== undefined) request.mcpNameHeader = name;
  return classifyInboundRequest(request).kind === 'legacy';
}

function rpcError(
  res: http.ServerResponse,
  status: number,
  code: number,
  message: string,
  headers: Record<string, string> = {},
  id: string | number | null = null,
): void {
  sendJson(res, status, { jsonrpc: '2.0', error: { code, message }, id }, headers);
}

/**
 * A POST's JSON-RPC body, read within bounds, or undefined once refused: past the SDK's body limit
 * `413` (the upload is drained, not cut: see answerAndClose), nested deeper than MAX_JSON_DEPTH
 * `400` with -32600 naming the limit, not JSON `400` with -32700. A refusal is no tool call: not audited.
 */
async function readMessage(req: http.IncomingMessage, res: http.ServerResponse): Promise<{ body: unknown } | undefined> {
  // A client gone mid-body is nobody to answer, and no fault of the server's.
  const raw = await readBody(req, DEFAULT_MAX_REQUEST_BODY_SIZE).catch(() => undefined);
  if (raw === undefined) return void res.destroy();
  if (raw === 'too-large') {
    const refusal = { jsonrpc: '2.0', error: { code: -32600, message: `The request body is over ${DEFAULT_MAX_REQUEST_BODY_SIZE} bytes.` }, id: null };
    answerAndClose(res, 413, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' }, JSON.stringify(refusal));
    return undefined;
  }
  const parsed = parseBoundedJson(raw);
  if ('value' in parsed) return { body: parsed.value };
  if (parsed.error === 'too-deep') rpcError(res, 400, -32600, tooDeepMessage(), {}, jsonRpcIdOf(raw.toString('utf8')));
  else rpcError(res, 400, -32700, 'Parse error: the request body is not JSON.');
  return undefined;
}

/**
 * The kernel's tools over MCP Streamable HTTP at `http://127.0.0.1:<port>/mcp`.
 *
 * - Every request to `/mcp` (not only `initialize`) needs `Authorization: Bearer <token>`. The token
 *   is random per endpoint (32 bytes, base64url), lives only in this object's memory, is compared in
 *   constant time, and is replaced by `rotateToken()` (or an authenticated `POST /mcp/rotate-token`):
 *   the old one stops working at once, and every session it admitted is closed.
 * - DNS-rebinding protection: a Host that is not loopback, or an Origin present and not loopback,
 *   gets 403 on every path. The endpoint binds to loopback only unless `allowRemote` is set, because
 *   the token is the only thing between the network and the read tools, and it travels in clear text.
 *   With `allowRemote`, the bind address also passes (a wildcard bind waives the Host check).
 * - Each client session gets its own SDK `Server` and transport (`Mcp-Session-Id`), so clients
 *   never wait on each other; sessions close after an idle timeout and are capped: a new session
 *   past the cap closes the longest-idle one (clients such as the Inspector and mcp-remote leave
 *   sessions open). A request with the id of a session that ended gets 404 and a JSON-RPC error
 *   saying why (idle, evicted, token rotated), so the client initialises a new one.
 * - `GET /healthz` answers `{"ok":true}` without auth, for supervisors.
 * - A server error (EMFILE while accepting, a malformed client request) is logged; the endpoint
 *   keeps listening on the same URL with the same token.
 */
export class McpHttpEndpoint {
  private currentToken: string;
  /** Digests of tokens rotated away (never the tokens), with when: a client still sending one is told it was rotated. */
  private readonly rotated = new Map<string, number>();
  /** The client token of each stateless request in flight, under the key stamped in its CLIENT_HEADER. */
  private readonly requestClients = new Map<string, McpClient>();
  /** Each POST in flight's hang-up signal, under the key stamped in its REQUEST_HEADER. */
  private readonly requestSignals = new Map<string, AbortSignal>();
  /** Open sessions, least recently active first (a request moves its session to the end). */
  private readonly sessions = new Map<string, SessionEntry>();
  /** Ids of sessions that ended, oldest first, with the reason (bounded: see ENDED_REMEMBERED). */
  private readonly ended = new Map<string, EndReason>();
  /** Sessions being initialised: counted against the cap before they have an id. */
  private pending = 0;
  private server: http.Server | undefined;
  private address: AddressInfo | undefined;
  private closing = false;
  private readonly host: string;
  private readonly extraHosts: ReadonlySet<string>;
  private readonly anyHost: boolean;
  private unhook: Disposable | undefined;
  private readonly idleTimeoutMs: number;
  private readonly maxSessions: number;
  /** The 2026-07-28 leg: one server instance per request, from the same definition as the sessions. */
  private readonly modern: McpHttpHandler;
  private readonly modernNode: NodeMcpRequestHandler;
  private changes: Disposable[] = [];
  /** Each client's found tools, in tool-search mode: sessions and stateless clients alike. */
  readonly found = new FoundTools();
  private readonly served: { profile?: McpProfile; found?: FoundTools };

  constructor(
    private readonly kernel: Kernel,
    private readonly options: McpHttpEndpointOptions = {},
  ) {
    this.currentToken = (options.token ?? generateToken)();
    this.host = options.host ?? '127.0.0.1';
    if (!isLoopbackAddress(this.host) && !options.allowRemote) {
      throw new MemoError(
        'VALIDATION',
        `Refusing to serve MCP on ${this.host}: the endpoint binds to loopback only, because anyone who can reach it and holds the token can read through every read tool, and over plain HTTP the token travels in clear text. Bind to 127.0.0.1, or pass --allow-remote if you have protected the network path yourself.`,
      );
    }
    // With allowRemote, the bind address itself is also an acceptable Host/Origin. A wildcard bind
    // (0.0.0.0, ::) has no single name, so the Host check is waived there; the Origin check (which
    // is what stops a rebound browser page) and the token still apply.
    const bind = this.host.toLowerCase().replace(/^\[(.*)\]$/, '$1');
    this.anyHost = options.allowRemote === true && (bind === '0.0.0.0' || bind === '::');
    const named = options.allowRemote && !this.anyHost && !isLoopbackAddress(bind);
    this.extraHosts = new Set(named ? [bind.includes(':') ? `[${bind}]` : bind] : []);
    // Timers cannot wait longer than 2^31-1 ms (Node would fire them at once instead).
    this.idleTimeoutMs = Math.min(options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS, 2 ** 31 - 1);
    this.maxSessions = options.maxSessions ?? DEFAULT_MAX_SESSIONS;
    if (!(this.idleTimeoutMs > 0)) throw new MemoError('VALIDATION', 'The MCP session idle timeout must be positive.');
    if (!Number.isInteger(this.maxSessions) || this.maxSessions < 1)
      throw new MemoError('VALIDATION', 'The MCP session cap must be a whole number of at least 1.');
    const onerror = (err: Error) => this.options.logger?.info(`mcp endpoint: ${err.message}`);
    const served = { ...(options.profile ? { profile: options.profile } : {}), found: this.found };
    this.served = served;
    this.modern = createMcpHandler(
      () =>
        new MemoMcpServer(kernel, {
          era: 'modern',
          capability: capabilityOf,
          client: (ctx) => this.requestClients.get(ctx.http?.req?.headers.get(CLIENT_HEADER) ?? ''),
          requestSignal: (ctx) => this.requestSignals.get(ctx.http?.req?.headers.get(REQUEST_HEADER) ?? ''),
          ...served,
          // A stateless client hears on its listen stream; every listener re-lists and gets its own tools.
          onFound: () => this.modern.notify.toolsChanged(),
          ...(options.logger ? { logger: options.logger } : {}),
        }).mcp,
      { legacy: 'reject', onerror },
    );
    this.modernNode = toNodeHandler(this.modern, { onerror });
  }

  /** The current bearer token. Shown to the person who started the endpoint; never logged. */
  get token(): string {
    return this.currentToken;
  }

  /** `http://<host>:<port>/mcp` once started. */
  get url(): string {
    if (!this.address) throw new Error('The MCP endpoint has not been started.');
    // A wildcard bind is reachable on loopback too; that is the address to show.
    const address = this.address.address === '0.0.0.0' ? '127.0.0.1' : this.address.address === '::' ? '::1' : this.address.address;
    const host = address.includes(':') ? `[${address}]` : address;
    return `http://${host}:${this.address.port}${MCP_PATH}`;
  }

  get sessionCount(): number {
    return this.sessions.size;
  }

  /** Starts listening; resolves with the URL. Rejects if the port cannot be bound. */
  async start(): Promise<string> {
    if (this.server) return this.url;
    const server = http.createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        this.options.logger?.error(`mcp endpoint: request failed: ${(err as Error)?.message ?? String(err)}`);
        if (!res.headersSent) rpcError(res, 500, -32603, 'Internal error');
        else res.end();
      });
    });
    // An idle keep-alive socket is closed by the server after this long. Node's default (5 s) races
    // clients that reuse a socket just as the server closes it ("fetch failed", ECONNRESET), more so
    // on a busy machine where a client's own idle timer fires late; a loopback socket is cheap to keep.
    server.keepAliveTimeout = KEEP_ALIVE_MS;
    server.headersTimeout = KEEP_ALIVE_MS + 1000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.port ?? 0, this.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    // Running out of file handles makes accept() fail; Node reports it as a server 'error'. Log it
    // and keep listening: clients reconnect to the same URL with the same token.
    server.on('error', (err: NodeJS.ErrnoException) => {
      this.options.logger?.error(`mcp endpoint: server error (${err.code ?? 'unknown'}): ${err.message}; still listening on ${this.url}`);
    });
    server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
      // A client that hangs up mid-request is not malformed and is not waiting for a 400: a reset, or
      // an end inside a message (a fetch stops uploading once it has read a 413, see answerAndClose).
      if (err.code === 'ECONNRESET') return void socket.destroy();
      if (err.code === 'HPE_INVALID_EOF_STATE') return void socket.end();
      this.options.logger?.warn(`mcp endpoint: dropped a malformed client connection (${err.code ?? err.message})`);
      if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
      else socket.destroy();
    });
    this.server = server;
    this.address = server.address() as AddressInfo;
    // One lifecycle: the kernel's shutdown closes the endpoint first (sessions end before their kernel).
    this.unhook = this.kernel.onShutdown(() => this.close());
    // 2025-11-25 sessions hear of changes from their own instance; 2026-07-28 clients on their
    // subscriptions/listen streams, published here.
    const feeds = changeFeeds(this.kernel);
    this.changes = [
      feeds.tools.subscribe(() => this.modern.notify.toolsChanged()),
      feeds.skills.subscribe(() => {
        this.modern.notify.promptsChanged();
        this.modern.notify.resourcesChanged();
      }),
    ];
    return this.url;
  }

  /**
   * Replaces the token. The old one is refused from the next request on, and every session it
   * admitted is closed (their open streams end), so a leaked token buys nothing after rotation.
   */
  rotateToken(): string {
    this.rotated.set(tokenDigest(this.currentToken), Date.now());
    if (this.rotated.size > ROTATED_REMEMBERED) this.rotated.delete(this.rotated.keys().next().value as string);
    this.currentToken = (this.options.token ?? generateToken)();
    for (const entry of [...this.sessions.values()]) this.end(entry, 'token-rotated');
    return this.currentToken;
  }

  /** Stops listening, closes every session (running calls are aborted) and every connection. */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    this.unhook?.dispose();
    for (const c of this.changes) c.dispose();
    const mounts = (this.options.mounts ?? []).map((m) => m.close?.());
    const server = this.server;
    const closed = server ? new Promise<void>((resolve) => server.close(() => resolve())) : Promise.resolve();
    await Promise.allSettled([...mounts, ...[...this.sessions.values()].map((e) => e.session.close()), this.modern.close()]);
    server?.closeAllConnections();
    await closed;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (!(this.anyHost || hostAllowed(req.headers.host, this.extraHosts)) || !originAllowed(req.headers.origin, this.extraHosts)) {
      return sendJson(res, 403, { error: 'forbidden', message: 'Requests must come from this machine (loopback Host, no foreign Origin).' });
    }
    const pathname = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (pathname === HEALTH_PATH) {
      if (req.method !== 'GET' && req.method !== 'HEAD') return sendJson(res, 405, { error: 'method not allowed' }, { Allow: 'GET, HEAD' });
      return sendJson(res, 200, { ok: true });
    }
    const mount = this.options.mounts?.find((m) => m.owns(pathname));
    if (mount) return mount.handle(req, res);
    // OAuth-capable clients look for authorization-server metadata after a 401 and, finding some,
    // start a login flow. There is none: say so plainly (the WWW-Authenticate header names no
    // resource_metadata either).
    // Clients that find none go on to the usual OAuth endpoints anyway (mcp-remote, the Inspector):
    // those get the same answer, with the OAuth error field a client shows.
    if (pathname.startsWith('/.well-known/oauth-') || pathname.startsWith('/.well-known/openid-configuration') || OAUTH_PATHS.has(pathname)) {
      return sendJson(res, 404, { error: 'not found', error_description: NO_OAUTH, message: NO_OAUTH });
    }
    if (pathname !== MCP_PATH && pathname !== ROTATE_PATH) return sendJson(res, 404, { error: 'not found' });
    const presentedToken = bearerToken(req.headers.authorization);
    // The endpoint's own token, or a client's own (looked up now: one removed a moment ago is refused).
    const client = presentedToken !== undefined && !tokensEqual(presentedToken, this.currentToken) ? this.options.clients?.(presentedToken) : undefined;
    if (!client && !tokensEqual(presentedToken, this.currentToken)) {
      const presented = req.headers.authorization !== undefined;
      res.setHeader('WWW-Authenticate', presented ? 'Bearer realm="memo", error="invalid_token"' : 'Bearer realm="memo"');
      const rotatedAt = presentedToken === undefined ? undefined : this.rotatedAway(presentedToken);
      const what =
        rotatedAt !== undefined
          ? `The bearer token was rotated at ${new Date(rotatedAt).toISOString()} (memo serve rotate-token, SIGHUP, the web console or POST /mcp/rotate-token) and no longer works. Use the new one, which \`memo serve\` printed where it runs (or memo serve rotate-token prints another)`
          : presented
            ? 'The bearer token is wrong (or from an earlier run). Send Authorization: Bearer <token> with the token `memo serve` printed when it started; it changes every time memo serve restarts'
            : 'The bearer token is missing. Send Authorization: Bearer <token> with the token `memo serve` printed when it started; it changes every time memo serve restarts';
      // JSON-RPC shaped, so a client that shows only a JSON-RPC error's message shows this one.
      return rpcError(res, 401, UNAUTHORIZED, `${what}. ${NO_OAUTH}`);
    }
    if (this.closing) return rpcError(res, 503, -32000, 'The MCP endpoint is shutting down.');
    if (pathname === ROTATE_PATH) {
      if (req.method !== 'POST') return sendJson(res, 405, { error: 'method not allowed' }, { Allow: 'POST' });
      if (client)
        return sendJson(res, 403, {
          error: 'forbidden',
          message: `The client token ${client.name} cannot rotate the endpoint's token; memo serve token remove ${client.name} and add it again to replace it.`,
        });
      // On the audit trail first (by whoever held the token); a rotation whose line cannot be written is not made.
      try {
        await this.kernel.admin.record({ action: 'token.rotate', by: 'mcp-http' });
      } catch (err) {
        return sendJson(res, 503, { error: 'audit unavailable', message: (err as Error).message });
      }
      return sendJson(res, 200, { token: this.rotateToken() });
    }

    // A revision this server does not speak is named, whatever else the request lacks.
    const version = header(req.headers['mcp-protocol-version']);
    if (version !== undefined && !SPOKEN_VERSIONS.includes(version))
      return rpcError(
        res,
        400,
        ProtocolErrorCode.UnsupportedProtocolVersion,
        `Unsupported MCP-Protocol-Version "${version.slice(0, 40)}": this server speaks ${SPOKEN_VERSIONS.join(', ')}.`,
      );
    const sessionId = header(req.headers['mcp-session-id']);
    const entry = sessionId === undefined ? undefined : this.sessions.get(sessionId);
    if (sessionId !== undefined && !entry) return rpcError(res, 404, -32001, this.endedMessage(sessionId));
    // A session stays with the token that opened it: another token (or the endpoint's own) cannot use it.
    if (entry && entry.client.current?.name !== client?.name)
      return rpcError(res, 403, -32001, 'This session was opened with another token; initialize a session of your own.');
    if (entry) {
      entry.client.current = client;
      this.touch(entry);
    }
    if (req.method !== 'POST') {
      if (entry) return entry.transport.handleRequest(req, res);
      return rpcError(res, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
    }
    // Every POST body, a session's too, is read here within bounds and handed to the SDK parsed.
    const message = await readMessage(req, res);
    if (!message) return;
    const { body } = message;
    // Batching left MCP in 2025-06-18: refused the same way in a session and without one.
    if (Array.isArray(body))
      return rpcError(
        res,
        400,
        -32600,
        'Invalid Request: batches (a JSON array of messages) are not supported since MCP 2025-06-18; send one message per request.',
      );
    this.withdrawOnHangUp(req, res);
    if (entry) return entry.transport.handleRequest(req, res, body);
    // Which revision: a 2026-07-28 request carries the per-request `_meta` envelope; anything else
    // (an `initialize`, a 2025 client) is served the 2025-11-25 way, with a session.
    if (!isLegacy(req, body)) {
      const key = client ? randomUUID() : '';
      req.headers[CLIENT_HEADER] = key;
      if (client) {
        this.requestClients.set(key, client);
        res.once('close', () => this.requestClients.delete(key));
      }
      return this.modernNode(req as NodeIncomingMessageLike, res, body);
    }
    if (this.sessions.size + this.pending >= this.maxSessions && !this.evictIdlest()) {
      return rpcError(res, 503, -32000, `Too many MCP sessions (${this.maxSessions}), each running a call; retry when one finishes.`, { 'Retry-After': '5' });
    }
    return this.open(req, res, body, client);
  }

  /** A 2025-11-25 POST without a session: a new session, if it is an `initialize` (the transport checks). */
  private async open(req: http.IncomingMessage, res: http.ServerResponse, body: unknown, client: McpClient | undefined): Promise<void> {
    this.pending++;
    let counted = true;
    const uncount = () => {
      if (counted) this.pending--;
      counted = false;
    };
    const holder: SessionEntry['client'] = { current: client };
    const session = new McpSession(this.kernel, {
      capability: capabilityOf,
      ...this.served,
      client: () => holder.current,
      requestSignal: (ctx) => this.requestSignals.get(ctx.http?.req?.headers.get(REQUEST_HEADER) ?? ''),
      ...(this.options.logger ? { logger: this.options.logger } : {}),
    });
    let entry: SessionEntry | undefined;
    const transport = new NodeStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        uncount();
        const timer = setTimeout(() => this.expire(id), this.idleTimeoutMs);
        timer.unref();
        entry = { id, session, transport, timer, client: holder };
        this.sessions.set(id, entry);
        session.onactivity = () => entry && this.touch(entry);
      },
    });
    session.onclose = () => {
      uncount();
      if (!entry) return;
      // Closed by the client (DELETE) or by the transport; the endpoint's own closes went through end().
      if (this.sessions.get(entry.id) === entry) this.forget(entry, 'closed');
    };
    await session.connect(transport);
    try {
      await transport.handleRequest(req, res, body);
    } finally {
      uncount();
      // Not an initialize (the transport answered 400): nothing to keep.
      if (transport.sessionId === undefined) await session.close();
    }
  }

  private expire(id: string): void {
    const entry = this.sessions.get(id);
    if (!entry) return;
    // A long call is not idleness: look again after another period.
    if (entry.session.busy) {
      entry.timer.refresh();
      return;
    }
    this.options.logger?.info(`mcp endpoint: closed the idle session of ${entry.session.clientName} after ${duration(this.idleTimeoutMs)}`);
    this.end(entry, 'idle');
  }

  /** Activity on a session: its idle timer starts again and it becomes the most recently active. */
  private touch(entry: SessionEntry): void {
    if (this.sessions.get(entry.id) !== entry) return;
    entry.timer.refresh();
    this.sessions.delete(entry.id);
    this.sessions.set(entry.id, entry);
  }

  /**
   * A POST whose client hangs up before its answer is written takes its calls with it: a call waiting
   * for a person's approval is withdrawn from the inbox, a running one is aborted. There is no event
   * store, so an answer to a closed stream could never reach the client; and no answer given later may
   * run a call whose caller has left. (A client that means to cancel also sends notifications/cancelled.)
   */
  private withdrawOnHangUp(req: http.IncomingMessage, res: http.ServerResponse): void {
    const key = randomUUID();
    const controller = new AbortController();
    req.headers[REQUEST_HEADER] = key;
    this.requestSignals.set(key, controller.signal);
    res.once('close', () => {
      this.requestSignals.delete(key);
      if (!res.writableFinished) controller.abort(new Error('the MCP client closed the request before its answer'));
    });
  }

  /** When `token` stopped working by a rotation of this endpoint, if it did (the current token is never in the map). */
  private rotatedAway(token: string): number | undefined {
    return this.rotated.get(tokenDigest(token));
  }

  /** Closes the longest-idle session not running a call, to make room; false if every one is busy. */
  private evictIdlest(): boolean {
    for (const entry of this.sessions.values()) {
      if (entry.session.busy) continue;
      this.options.logger?.info(
        `mcp endpoint: closed the longest-idle session (${entry.session.clientName}) to admit a new one: ${this.maxSessions} sessions is the cap`,
      );
      this.end(entry, 'evicted');
      return true;
    }
    return false;
  }

  /** Closes a session on the endpoint's own account: from now on its id gets 404 with `reason`. */
  private end(entry: SessionEntry, reason: EndReason): void {
    this.forget(entry, reason);
    void entry.session.close();
  }

  private forget(entry: SessionEntry, reason: EndReason): void {
    clearTimeout(entry.timer);
    this.sessions.delete(entry.id);
    this.ended.set(entry.id, reason);
    if (this.ended.size > ENDED_REMEMBERED) this.ended.delete(this.ended.keys().next().value as string);
  }

  /** The 404 message for a session id that is not open: why it ended, if this endpoint remembers it. */
  private endedMessage(id: string): string {
    const why = {
      idle: `it was idle for ${duration(this.idleTimeoutMs)}`,
      evicted: `it was the longest-idle session when a new one needed a place (the cap is ${this.maxSessions})`,
      'token-rotated': 'the token was rotated',
      closed: 'it was closed',
    } satisfies Record<EndReason, string>;
    const reason = this.ended.get(id);
    return reason === undefined
      ? 'Session not found: this server has no session with that id (it may have restarted). Initialize a new session.'
      : `Session ended (${reason}): ${why[reason]}. Initialize a new session.`;
  }
}

/**
 * A loopback MCP endpoint of `kernel` for an agent CLI to call back (kernel/agent/cli-backends):
 * started now, closed with the kernel; its token is read at each turn, so a rotation is followed.
 */
export async function loopbackEndpoint(kernel: Kernel): Promise<{ url: string; readonly token: string }> {
  const endpoint = new McpHttpEndpoint(kernel);
  const url = await endpoint.start();
  return {
    url,
    get token() {
      return endpoint.token;
    },
  };
}
