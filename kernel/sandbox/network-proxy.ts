/**
 * The only way out of a sandboxed command's network namespace: an HTTP proxy (CONNECT for HTTPS and
 * anything tunnelled, absolute-form requests for plain HTTP) listening on a unix socket that the
 * sandbox's bridge (sandbox-bridge.mjs) reaches from `127.0.0.1:3128` inside.
 *
 * It resolves each name itself and connects to the address it checked (no second lookup a DNS
 * rebinding could change), and refuses every address that is not public unicast: loopback (the
 * kernel's own MCP, console and control endpoints), link-local (cloud metadata at 169.254.169.254),
 * private and carrier-grade NAT ranges, unique-local and multicast IPv6, and IPv4 hidden in IPv6
 * (mapped, NAT64). When the grant names domains, every other name is refused too (`*.example.com`
 * covers the subdomains, not example.com itself).
 *
 * It also carries fixed forwards the kernel sets up itself (an agent CLI's MCP endpoint on the
 * kernel's loopback): each is a socket of its own, bridged to one port inside, and goes nowhere else.
 */
import * as dns from 'node:dns';
import * as http from 'node:http';
import * as net from 'node:net';
import * as path from 'node:path';
import type { Duplex } from 'node:stream';
import { isPublicAddress } from '../util/public-address.js';
import { listen } from '../util/listen.js';

export interface NetworkGrant {
  /** `any`: every public address; otherwise only these names (exact, or `*.suffix` for subdomains). */
  domains: 'any' | string[];
}

export interface NetworkProxy {
  /** The proxy's unix socket (bridged to 127.0.0.1:3128 inside). */
  proxySocket: string;
  /** One socket for each fixed forward. */
  forwardSockets: { port: number; socket: string }[];
  /** Names the proxy let through, and the ones it refused (with why), for the call's result. */
  readonly contacted: ReadonlySet<string>;
  readonly refused: ReadonlyMap<string, string>;
  close(): Promise<void>;
}

function normalHost(host: string): string {
  return host
    .trim()
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '');
}

/** Whether a grant covers a name. */
export function grantCovers(grant: NetworkGrant, host: string): boolean {
  if (grant.domains === 'any') return true;
  const h = normalHost(host);
  return grant.domains.some((d) => {
    const want = normalHost(d);
    if (want.startsWith('*.')) return h.endsWith(want.slice(1)) && h.length > want.length - 1;
    return h === want;
  });
}

/** Resolves a name and refuses it unless every address is public: returns the address to connect to. */
async function checkedAddress(grant: NetworkGrant, host: string): Promise<string> {
  const h = normalHost(host);
  if (h === '') throw new Error('no host was named');
  if (!grantCovers(grant, h)) throw new Error(`${h} is not among the domains this command was allowed (${(grant.domains as string[]).join(', ')})`);
  const addresses = net.isIP(h) ? [{ address: h }] : await dns.promises.lookup(h, { all: true, verbatim: true });
  if (addresses.length === 0) throw new Error(`${h} has no address`);
  const bad = addresses.find((a) => !isPublicAddress(a.address));
  // One private answer refuses the name: a name that can point inside is not a name to follow.
  if (bad)
    throw new Error(
      `${h} resolves to ${bad.address}, which is not a public address (loopback, link-local and private networks are never reachable from a command)`,
    );
  return addresses[0]!.address;
}

function splitHostPort(target: string, defaultPort: number): { host: string; port: number } | null {
  const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(target) ?? /^([^:]+)(?::(\d+))?$/.exec(target);
  if (!m) return null;
  const port = m[2] === undefined ? defaultPort : Number(m[2]);
  if (!Number.isInteger(port) || port < 1 || port > 65535) return null;
  return { host: m[1]!, port };
}

function refuse(socket: Duplex, status: string, why: string): void {
  const body = `memo sandbox: ${why}\n`;
  socket.end(`HTTP/1.1 ${status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}

export async function startNetworkProxy(opts: {
  socketDir: string;
  grant: NetworkGrant | null;
  forward: { port: number; to: { host: string; port: number } }[];
}): Promise<NetworkProxy> {
  const contacted = new Set<string>();
  const refused = new Map<string, string>();
  const servers: net.Server[] = [];
  const sockets = new Set<net.Socket | Duplex>();
  const track = <S extends net.Socket | Duplex>(s: S): S => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
    s.on('error', () => undefined);
    return s;
  };
  const grant: NetworkGrant = opts.grant ?? { domains: [] };
  const proxySocket = path.join(opts.socketDir, 'proxy.sock');

  const server = http.createServer((req, res) => {
    // Plain HTTP in absolute form: http://host[:port]/path.
    let url: URL;
    try {
      url = new URL(req.url ?? '');
    } catch {
      res.writeHead(400, { 'Content-Type': 'text/plain' }).end('memo sandbox: only proxy requests (absolute URLs or CONNECT) are served\n');
      return;
    }
    if (url.protocol !== 'http:') {
      res.writeHead(400, { 'Content-Type': 'text/plain' }).end(`memo sandbox: ${url.protocol} is not proxied (use CONNECT)\n`);
      return;
    }
    const host = url.hostname;
    checkedAddress(grant, host).then(
      (address) => {
        contacted.add(normalHost(host));
        const headers = { ...req.headers };
        for (const h of ['proxy-connection', 'proxy-authorization', 'connection', 'keep-alive']) delete headers[h];
        const upstream = http.request(
          {
            host: address,
            port: Number(url.port || 80),
            method: req.method,
            path: `${url.pathname}${url.search}`,
            headers: { ...headers, connection: 'close' },
          },
          (up) => {
            res.writeHead(up.statusCode ?? 502, up.headers);
            up.pipe(res);
          },
        );
        upstream.on('error', (err) => {
          if (!res.headersSent) res.writeHead(502, { 'Content-Type': 'text/plain' });
          res.end(`memo sandbox: ${host}: ${err.message}\n`);
        });
        req.pipe(upstream);
      },
      (err: Error) => {
        refused.set(normalHost(host), err.message);
        res.writeHead(403, { 'Content-Type': 'text/plain' }).end(`memo sandbox: ${err.message}\n`);
      },
    );
  });
  server.on('connection', (s) => track(s));
  server.on('connect', (req: http.IncomingMessage, client: Duplex, head: Buffer) => {
    track(client);
    const target = splitHostPort(req.url ?? '', 443);
    if (!target) return refuse(client, '400 Bad Request', `"${req.url}" is not host:port`);
    checkedAddress(grant, target.host).then(
      (address) => {
        contacted.add(normalHost(target.host));
        const upstream = track(net.connect({ host: address, port: target.port }));
        upstream.once('connect', () => {
          client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
          if (head.length > 0) upstream.write(head);
          upstream.pipe(client);
          client.pipe(upstream);
        });
        upstream.once('error', (err) => {
          if (!client.writableEnded) refuse(client, '502 Bad Gateway', `${target.host}: ${err.message}`);
        });
        client.once('close', () => upstream.destroy());
      },
      (err: Error) => {
        refused.set(normalHost(target.host), err.message);
        refuse(client, '403 Forbidden', err.message);
      },
    );
  });
  servers.push(server);
  if (opts.grant) await listen(server, proxySocket);

  const forwardSockets: { port: number; socket: string }[] = [];
  for (const f of opts.forward) {
    const socket = path.join(opts.socketDir, `forward-${f.port}.sock`);
    const fwd = net.createServer((client) => {
      track(client);
      const upstream = track(net.connect(f.to));
      client.pipe(upstream);
      upstream.pipe(client);
      upstream.once('close', () => client.destroy());
      client.once('close', () => upstream.destroy());
    });
    servers.push(fwd);
    await listen(fwd, socket);
    forwardSockets.push({ port: f.port, socket });
  }

  return {
    proxySocket,
    forwardSockets,
    contacted,
    refused,
    close: async () => {
      for (const s of sockets) s.destroy();
      await Promise.all(servers.map((s) => new Promise<void>((r) => (s.listening ? s.close(() => r()) : r()))));
    },
  };
}
