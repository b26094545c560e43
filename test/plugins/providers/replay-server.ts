import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';

/** One request as the server received it (header names lower case). */
export interface Received {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  raw: string;
  body: any;
}

export type Reply =
  | { status: number; headers?: Record<string, string>; body?: unknown }
  /** Never answers (until the server closes). */
  | { hang: true }
  /** Drops the connection without an answer (a network error for the client). */
  | { destroy: true };

export interface Exchange {
  source: string;
  request?: { path: string; body: any };
  response: { status: number; headers?: Record<string, string>; body: unknown };
}

const FIXTURES = path.resolve('test/fixtures/providers');

export function fixture(name: string): Exchange {
  return JSON.parse(fs.readFileSync(path.join(FIXTURES, name), 'utf8')) as Exchange;
}

export function fixtureText(name: string): string {
  return fs.readFileSync(path.join(FIXTURES, name), 'utf8');
}

/** A fixture's recorded reply, ready to queue. */
export function recorded(name: string): Reply {
  const { status, headers, body } = fixture(name).response;
  return { status, ...(headers ? { headers } : {}), body };
}

/**
 * A local HTTP server on 127.0.0.1 (random port) that answers from a queue of recorded replies
 * and keeps every request it received.
 */
export class ReplayServer {
  readonly received: Received[] = [];
  private readonly queue: Reply[] = [];
  private readonly waiters: Array<{ n: number; resolve: () => void }> = [];
  private constructor(
    private readonly server: http.Server,
    readonly url: string,
  ) {}

  static async start(): Promise<ReplayServer> {
    // `self` is only read by requests, which come after start() has returned it.
    const server = http.createServer((req, res) => self.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const self = new ReplayServer(server, `http://127.0.0.1:${port}`);
    return self;
  }

  /** The request received at `index` (0-based); throws, naming how many arrived, when there is none. */
  request(index: number): Received {
    const r = this.received[index];
    if (r === undefined) throw new Error(`request #${index} was not received (${this.received.length} arrived)`);
    return r;
  }

  reply(...replies: Reply[]): this {
    this.queue.push(...replies);
    return this;
  }

  reset(): void {
    this.received.length = 0;
    this.queue.length = 0;
  }

  /** Resolves once `n` requests have arrived. */
  waitFor(n: number): Promise<void> {
    if (this.received.length >= n) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ n, resolve }));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        body = JSON.parse(raw);
      } catch {
        body = raw;
      }
      this.received.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, raw, body });
      for (const w of this.waiters.filter((w) => this.received.length >= w.n)) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        w.resolve();
      }
      const next = this.queue.shift() ?? { status: 500, body: { error: { message: 'replay server: no reply queued' } } };
      if ('hang' in next) return;
      if ('destroy' in next) return void req.socket.destroy();
      const text = typeof next.body === 'string' ? next.body : JSON.stringify(next.body ?? {});
      res.writeHead(next.status, { 'content-type': 'application/json', ...(next.headers ?? {}) });
      res.end(text);
    });
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
