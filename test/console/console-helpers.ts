import * as http from 'node:http';
import { ConsoleServer } from '../../kernel/console/console-server.js';
import { McpHttpEndpoint } from '../../kernel/mcp/mcp-http-server.js';
import { makeKernel, type Fixture } from '../helpers/kernel-fixture.js';
import { raw, type RawResponse } from '../mcp/mcp-helpers.js';
import type { KernelOptions } from '../../kernel/kernel.js';

export { raw, type RawResponse };

export interface ConsoleFixture {
  fx: Fixture;
  endpoint: McpHttpEndpoint;
  console: ConsoleServer;
  /** `http://127.0.0.1:<port>` */
  origin: string;
  /** The cookie header of a fresh logged-in session. */
  login(): Promise<string>;
  close(): Promise<void>;
}

/** A kernel with no face of its own (requests wait in the broker, refused at once while nobody watches), served with its console on loopback. */
export async function consoleFixture(options: Partial<KernelOptions> = {}): Promise<ConsoleFixture> {
  const fx = makeKernel({ prompter: null, unattendedApprovals: 'refuse', ...options });
  const webConsole = new ConsoleServer(fx.kernel, { clock: fx.clock, sessionTtlMs: 60 * 60_000 });
  const endpoint = new McpHttpEndpoint(fx.kernel, { mounts: [webConsole] });
  await endpoint.start();
  webConsole.attachEndpoint({ url: () => endpoint.url, rotateToken: () => void endpoint.rotateToken() });
  const origin = new URL(endpoint.url).origin;
  return {
    fx,
    endpoint,
    console: webConsole,
    origin,
    async login() {
      const res = await raw(webConsole.loginUrl(endpoint.url));
      if (res.status !== 303) throw new Error(`login failed: ${res.status} ${res.body}`);
      const set = res.headers['set-cookie']?.[0] ?? '';
      return set.split(';')[0]!;
    },
    async close() {
      await endpoint.close();
      await fx.close();
    },
  };
}

export interface EventStream {
  events: Array<{ event: string; data: any }>;
  status: Promise<number>;
  ended: Promise<void>;
  close(): void;
}

/** Opens the console's event stream and collects its events. */
export function openEvents(origin: string, cookie: string): EventStream {
  const events: Array<{ event: string; data: any }> = [];
  let setStatus!: (n: number) => void;
  let setEnded!: () => void;
  const status = new Promise<number>((r) => (setStatus = r));
  const ended = new Promise<void>((r) => (setEnded = r));
  const req = http.request(`${origin}/ui/api/events`, { headers: { Cookie: cookie, Accept: 'text/event-stream' } }, (res) => {
    setStatus(res.statusCode ?? 0);
    let buf = '';
    res.setEncoding('utf8');
    res.on('data', (d: string) => {
      buf += d;
      let sep: number;
      while ((sep = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, sep);
        buf = buf.slice(sep + 2);
        const event = /^event: (.*)$/m.exec(block)?.[1];
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (event && data) events.push({ event, data: JSON.parse(data) });
      }
    });
    res.on('end', () => setEnded());
    res.on('close', () => setEnded());
  });
  req.on('error', () => setEnded());
  req.end();
  return { events, status, ended, close: () => req.destroy() };
}

/** A POST from the console page itself: same Origin, JSON body, the session cookie. */
export function post(origin: string, path: string, cookie: string, body: unknown, headers: Record<string, string> = {}): Promise<RawResponse> {
  return raw(`${origin}${path}`, {
    method: 'POST',
    headers: { Cookie: cookie, Origin: origin, 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}
