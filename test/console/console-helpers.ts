import * as http from 'node:http';
import { McpHttpEndpoint } from '../../kernel/mcp/mcp-http-server.js';
import { makeKernel, type Fixture } from '../helpers/kernel-fixture.js';
import { raw, type RawResponse } from '../mcp/mcp-helpers.js';
import type { KernelOptions } from '../../kernel/kernel.js';

export { raw, type RawResponse };

export interface ConsoleFixture {
  fx: Fixture;
  endpoint: McpHttpEndpoint;
  /** `http://127.0.0.1:<port>` */
  origin: string;
  /** A new one-time login link, as memo serve prints it (the previous one stops working). */
  link(): string;
  /** The cookie header of a fresh logged-in session. */
  login(): Promise<string>;
  close(): Promise<void>;
}

/**
 * A kernel with no face of its own (requests wait in the broker, refused at once while nobody
 * watches) with the built-in console pack loaded, served on loopback as memo serve serves it: the
 * packs' routes mounted on the MCP endpoint, which the console knows through the administration view.
 */
export async function consoleFixture(options: Partial<KernelOptions> & { dataDir?: string } = {}): Promise<ConsoleFixture> {
  const fx = makeKernel({ prompter: null, unattendedApprovals: 'refuse', ...options });
  const [state] = await fx.kernel.loadPacks(['console']);
  if (state?.status !== 'loaded') throw new Error(`the console pack did not load: ${state?.error}`);
  const endpoint = new McpHttpEndpoint(fx.kernel, { mounts: [fx.kernel.http] });
  await endpoint.start();
  fx.kernel.http.attach({
    url: () => endpoint.url,
    rotateToken: () => void endpoint.rotateToken(),
    agentAccess: () => ({ url: endpoint.url, token: endpoint.token }),
  });
  const origin = new URL(endpoint.url).origin;
  return {
    fx,
    endpoint,
    origin,
    link: () => fx.kernel.http.link('console')!,
    async login() {
      const res = await raw(fx.kernel.http.link('console')!);
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
