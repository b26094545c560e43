/**
 * A stand-in for html.duckduckgo.com on 127.0.0.1 (random port): answers each request with the
 * next scripted reply (then the fallback), and records what it received.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';

export const FIXTURES = path.resolve('test/fixtures/ddg');

export function fixture(name: string): string {
  return fs.readFileSync(path.join(FIXTURES, name), 'utf8');
}

export interface Received {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  form: URLSearchParams;
}

export type Reply = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/** A page (a fixture file name, or HTML given as `{ html }`) with a status and headers. */
export function page(source: string | { html: string }, status = 200, headers: Record<string, string> = {}): Reply {
  const html = typeof source === 'string' ? fixture(source) : source.html;
  return (_req, res) => {
    res.writeHead(status, { 'Content-Type': 'text/html; charset=UTF-8', ...headers });
    res.end(html);
  };
}

/** An HTTP status with a short body. */
export function status(code: number, headers: Record<string, string> = {}, body = `<html><body><h1>${code}</h1></body></html>`): Reply {
  return (_req, res) => {
    res.writeHead(code, { 'Content-Type': 'text/html', ...headers });
    res.end(body);
  };
}

/** Resets the TCP connection (RST) without answering. */
export const reset: Reply = (req) => {
  req.socket.resetAndDestroy();
};

/** Sends the headers and the start of the page, then closes the connection. */
export const cutOff: Reply = (req, res) => {
  res.writeHead(200, { 'Content-Type': 'text/html; charset=UTF-8', 'Content-Length': '50000' });
  res.write(fixture('results.html').slice(0, 2000));
  setTimeout(() => req.socket.destroy(), 20);
};

/** Never answers (the connection stays open until the client gives up or the server closes). */
export const hang: Reply = () => {};

/** Sends the headers and a little of the page, then nothing more. */
export const stall: Reply = (_req, res) => {
  res.writeHead(200, { 'Content-Type': 'text/html; charset=UTF-8' });
  res.write('<!DOCTYPE html><html><head><title>slow at DuckDuckGo</title></head><body>');
};

export class DdgServer {
  readonly received: Received[] = [];
  /** Connections closed by the client (or reset), counted as they happen. */
  closedByClient = 0;
  private readonly queue: Reply[] = [];
  private fallback: Reply = page('results.html');
  private waiters: Array<() => void> = [];

  private constructor(
    private readonly server: http.Server,
    readonly url: string,
  ) {}

  static async start(): Promise<DdgServer> {
    // `self` is only read by requests, which come after start() has returned it.
    const server = http.createServer((req, res) => self.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const self = new DdgServer(server, `http://127.0.0.1:${port}/html/`);
    return self;
  }

  /** The request received at `index` (0-based); throws, naming how many arrived, when there is none. */
  request(index: number): Received {
    const r = this.received[index];
    if (r === undefined) throw new Error(`request #${index} was not received (${this.received.length} arrived)`);
    return r;
  }

  /** Queues replies for the next requests, in order. */
  reply(...replies: Reply[]): this {
    this.queue.push(...replies);
    return this;
  }

  /** The reply for every request once the queue is empty. */
  otherwise(reply: Reply): this {
    this.fallback = reply;
    return this;
  }

  /** Resolves once `n` requests have arrived. */
  async requests(n: number): Promise<void> {
    while (this.received.length < n) await new Promise<void>((r) => this.waiters.push(r));
  }

  /** Resolves once `n` connections were closed by the client. */
  async clientClosed(n: number): Promise<void> {
    while (this.closedByClient < n) await new Promise<void>((r) => this.waiters.push(r));
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private wake(): void {
    const w = this.waiters.splice(0);
    for (const f of w) f();
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      this.received.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body, form: new URLSearchParams(body) });
      res.on('close', () => {
        if (!res.writableFinished) {
          this.closedByClient++;
          this.wake();
        }
      });
      const reply = this.queue.shift() ?? this.fallback;
      reply(req, res);
      this.wake();
    });
  }
}

/** A port nothing listens on (a server was there a moment ago). */
export async function closedPort(): Promise<number> {
  const s = http.createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** A result page in DuckDuckGo's markup (the same block shape as the fixtures) for generated results. */
export function ddgPage(results: Array<{ url: string; title: string; snippet: string }>): string {
  const blocks = results
    .map(
      (r) => `
            <div class="result results_links results_links_deep web-result ">
          <div class="links_main links_deep result__body">
          <h2 class="result__title">
            <a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=${encodeURIComponent(r.url)}&amp;rut=0">${esc(r.title)}</a>
          </h2>
                  <a class="result__snippet" href="//duckduckgo.com/l/?uddg=${encodeURIComponent(r.url)}&amp;rut=0">${esc(r.snippet)}</a>
            <div class="clear"></div>
          </div>
        </div>`,
    )
    .join('\n');
  return `<!DOCTYPE html><html><head><title>generated at DuckDuckGo</title></head><body class="body--html">
  <div class="serp__results"><div id="links" class="results">${blocks}
  </div></div></body></html>`;
}
