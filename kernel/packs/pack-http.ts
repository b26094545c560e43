import type * as http from 'node:http';
import { toDisposable, type Disposable } from '../disposable.js';
import { MemoError } from '../errors.js';

/**
 * What a pack mounts under a path prefix of the host's HTTP server (`api.http.mount`): memo serve
 * serves it on the MCP endpoint's port, behind the same Host/Origin checks as `/mcp`.
 */
export interface HttpHandler {
  /**
   * Answers a request for the prefix or a path below it. The server has already refused a request
   * whose Host or Origin is not allowed (DNS rebinding); who may use the routes is the handler's own
   * business: the MCP bearer token is never asked for here, and never handed to a pack.
   */
  handle(req: http.IncomingMessage, res: http.ServerResponse): void | Promise<void>;
  /**
   * Ends what it holds open (event streams, running work): its pack was disabled, it unloads or
   * reloads, or the server closes. Requests may come again once the pack is enabled again.
   */
  close?(): void | Promise<void>;
  /**
   * A link for the person at the server's terminal (the console's one-time login link), made new
   * each time it is asked, given the server's origin (`http://127.0.0.1:PORT`): memo serve prints the
   * console pack's at start and after each token rotation.
   */
  link?(origin: string): string;
}

/** The HTTP server that serves the mounts (memo serve's MCP endpoint) as the kernel knows it: its token only through agentAccess, for the agent CLIs it runs. */
export interface HttpServerInfo {
  /** The MCP endpoint's URL, `http://127.0.0.1:PORT/mcp`. */
  url(): string;
  /** Replaces the MCP bearer token; the host shows the new one where it showed the old (memo serve's terminal). */
  rotateToken(): void;
  /**
   * The endpoint's URL and its bearer token, read at each call (a rotated token is picked up), for
   * the agent CLIs this kernel runs as a console's backends: they call Memo's tools back through it.
   * Only the kernel reads it (never a pack: PackHttpApi does not offer it).
   */
  agentAccess?(): { url: string; token: string };
}

/** What a pack's `activate(api)` gets as `api.http`. */
export interface PackHttpApi {
  /**
   * Serves `handler` under `prefix` (one path segment, `/ui`) while the pack is enabled: a disabled
   * pack's prefix answers 404 saying so. Released (and `close`d) when the pack unloads or reloads.
   * CONFLICT when another pack has the prefix; `/mcp`, `/healthz` are the server's own.
   */
  mount(prefix: string, handler: HttpHandler): Disposable;
}

interface Mount {
  pack: string;
  prefix: string;
  handler: HttpHandler;
}

/** One path segment: `/ui`, `/calendar-feed`. */
const PREFIX = /^\/[a-z0-9][a-z0-9-]{0,62}$/;
/** The endpoint's own paths (kernel/mcp/mcp-http-server.ts), which no pack may take. */
const RESERVED = new Set(['/mcp', '/healthz']);

function quietly(work: () => void | Promise<void>): Promise<void> {
  try {
    return Promise.resolve(work()).catch(() => {});
  } catch {
    return Promise.resolve();
  }
}

/**
 * The HTTP routes packs contribute, served by a host's HTTP server as one mount (memo serve passes
 * it to McpHttpEndpoint's `mounts`). A route follows its pack: served while the pack is enabled,
 * closed when it is disabled (a disabled pack's prefix answers 404 saying so), gone when it unloads.
 */
export class PackHttp {
  private readonly mounts = new Map<string, Mount>();
  private server: HttpServerInfo | undefined;

  constructor(
    private readonly packs: {
      isEnabled(pack: string): boolean;
      onChange(listener: (change: { kind: string; pack: string }) => void): Disposable;
    },
  ) {
    // A disabled pack's open streams end now (an open console page must not keep counting as someone
    // watching the approvals once the console is off).
    packs.onChange((change) => {
      if (change.kind !== 'disabled') return;
      for (const m of this.mounts.values()) if (m.pack === change.pack) void quietly(() => m.handler.close?.());
    });
  }

  mount(pack: string, prefix: string, handler: HttpHandler): Disposable {
    if (typeof prefix !== 'string' || !PREFIX.test(prefix) || RESERVED.has(prefix))
      throw new MemoError(
        'VALIDATION',
        `Pack "${pack}" cannot mount "${String(prefix)}": a prefix is one lowercase path segment (/ui), not /mcp or /healthz.`,
        {
          plugin: pack,
        },
      );
    if (typeof handler?.handle !== 'function')
      throw new MemoError('VALIDATION', `Pack "${pack}" mounts ${prefix} without a handle function.`, { plugin: pack });
    const taken = this.mounts.get(prefix);
    if (taken) throw new MemoError('CONFLICT', `Pack "${pack}" cannot mount ${prefix}: pack "${taken.pack}" serves it.`, { plugin: pack });
    const entry: Mount = { pack, prefix, handler };
    this.mounts.set(prefix, entry);
    return toDisposable(() => {
      if (this.mounts.get(prefix) !== entry) return;
      this.mounts.delete(prefix);
      void quietly(() => handler.close?.());
    });
  }

  /** Tells the mounts which server serves them (memo serve's MCP endpoint); disposing says it is gone. */
  attach(server: HttpServerInfo): Disposable {
    this.server = server;
    return toDisposable(() => {
      if (this.server === server) this.server = undefined;
    });
  }

  /** The server that serves the mounts, while one does. */
  get endpoint(): HttpServerInfo | undefined {
    return this.server;
  }

  /** Whether `link(pack)` would make a link now (without making one: a link may be a one-time login code). */
  offersLink(pack: string): boolean {
    if (!this.server || !this.packs.isEnabled(pack)) return false;
    for (const m of this.mounts.values()) if (m.pack === pack && m.handler.link) return true;
    return false;
  }

  /** The link `pack`'s mount offers (its `link`), while the pack is enabled and a server serves it; else undefined. */
  link(pack: string): string | undefined {
    const server = this.server;
    if (!server || !this.packs.isEnabled(pack)) return undefined;
    for (const m of this.mounts.values()) if (m.pack === pack && m.handler.link) return m.handler.link(new URL(server.url()).origin);
    return undefined;
  }

  private find(pathname: string): Mount | undefined {
    const segment = /^\/[^/]*/.exec(pathname)?.[0] ?? '';
    return this.mounts.get(segment);
  }

  /** True for the paths a mounted pack owns (its prefix and below), enabled or not. */
  owns(pathname: string): boolean {
    return this.find(pathname) !== undefined;
  }

  /** Answers a request for a mounted prefix: its pack's handler, or 404 saying the pack is disabled. */
  async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const mount = this.find(new URL(req.url ?? '/', 'http://localhost').pathname);
    if (!mount) return refuse(req, res, 'Nothing is served here.');
    if (!this.packs.isEnabled(mount.pack))
      return refuse(
        req,
        res,
        `The ${mount.pack} pack is disabled, so nothing is served at ${mount.prefix}. Turn it back on with: memo plugins enable ${mount.pack}`,
      );
    await mount.handler.handle(req, res);
  }

  /** Closes every mount's open work (the server is closing, or the kernel shuts down). */
  async close(): Promise<void> {
    await Promise.all([...this.mounts.values()].map((m) => quietly(() => m.handler.close?.())));
  }
}

/** A 404 with `message`: a short page for a browser, JSON for anything else. */
function refuse(req: http.IncomingMessage, res: http.ServerResponse, message: string): void {
  req.resume();
  const html = /\btext\/html\b/.test(req.headers.accept ?? '');
  const escaped = message.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const body = html
    ? `<!doctype html><html lang="en"><meta charset="utf-8"><title>Not served</title><p>${escaped}</p></html>`
    : JSON.stringify({ error: 'NOT_FOUND', message });
  res.writeHead(404, {
    'Content-Type': html ? 'text/html; charset=utf-8' : 'application/json',
    'Cache-Control': 'no-store',
    'Content-Security-Policy': "default-src 'none'",
    'X-Content-Type-Options': 'nosniff',
  });
  res.end(body);
}
