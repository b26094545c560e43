/**
 * A web page's title, for inbox.captureLink and tasks.captureUrlToProject: http(s) only, 5 s for the
 * whole fetch, at most 2 MiB read, at most 5 redirects (each http or https again). Never throws for
 * the page's fault: `title` is null and `problem` says why; a cancelled call is CANCELLED.
 *
 * The page is fetched from the public web only. Loopback, private, link-local and other non-public
 * addresses are refused at connect time (the address a name resolves to is checked in the socket's
 * own lookup, so a name cannot be re-pointed between the check and the connection), for every hop
 * of a redirect: an agent cannot use the bridge to reach services on this machine or its network.
 * The pack setting `fetch_private_addresses` lifts that for a person who wants intranet pages.
 */
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { TextDecoder } from 'node:util';
import { isPublicAddress, MemoError, withDeadline } from 'memo-kernel/pack';

const FETCH_DEADLINE_MS = 5000;
const FETCH_MAX_BYTES = 2 * 1024 * 1024;
const MAX_REDIRECTS = 5;
export const TITLE_MAX = 300;

/** True for an address outside the public internet (the kernel's check, shared with the sandbox's network proxy). */
export function isNotPublic(address: string): boolean {
  return !isPublicAddress(address);
}

class NotPublicError extends Error {}

/** dns.lookup with every resolved address checked: one that is not public fails the connection. */
const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, '', 4);
    const bad = addresses.find((a) => isNotPublic(a.address));
    if (bad) return callback(new NotPublicError(`${hostname} resolves to ${bad.address}, which is not a public address`), '', 4);
    if (options.all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, addresses);
    const first = addresses[0];
    if (!first) return callback(new Error(`${hostname} has no address`), '', 4);
    callback(null, first.address, first.family);
  });
};

interface Answer {
  status: number;
  location: string | null;
  type: string;
  body: Buffer | null;
}

/** One GET, no redirect followed; the body is read (up to the cap) only for an HTML answer. */
function get(url: URL, signal: AbortSignal, allowPrivate: boolean): Promise<Answer> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  // A literal address never goes through a lookup: check it here.
  if (!allowPrivate && isIP(host) && isNotPublic(host)) return Promise.reject(new NotPublicError(`${host} is not a public address`));
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.get(
      url,
      {
        signal,
        headers: { accept: 'text/html,application/xhtml+xml', 'user-agent': 'Memo (page title)' },
        ...(allowPrivate ? {} : { lookup: publicOnlyLookup }),
      },
      (res) => {
        const status = res.statusCode ?? 0;
        const type = String(res.headers['content-type'] ?? '').toLowerCase();
        const location = typeof res.headers.location === 'string' ? res.headers.location : null;
        const html = status >= 200 && status < 300 && (type.includes('text/html') || type.includes('application/xhtml'));
        if (!html) {
          res.destroy();
          return resolve({ status, location, type, body: null });
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          chunks.push(c);
          size += c.length;
          // A title sits at the top: past the cap the rest is not needed (and not read).
          if (size >= FETCH_MAX_BYTES) res.destroy();
        });
        const done = () => resolve({ status, location, type, body: Buffer.concat(chunks).subarray(0, FETCH_MAX_BYTES) });
        res.on('end', done);
        res.on('close', done);
        res.on('error', (err) => (size >= FETCH_MAX_BYTES ? done() : reject(err)));
      },
    );
    req.on('error', reject);
  });
}

function decode(body: Buffer, type: string): string {
  const charset = /charset=([\w-]+)/i.exec(type)?.[1] ?? 'utf-8';
  try {
    return new TextDecoder(charset).decode(body);
  } catch {
    return new TextDecoder('utf-8').decode(body);
  }
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', ndash: '–', mdash: '—', hellip: '…' };

function decodeEntities(s: string): string {
  return s.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, e: string) => {
    if (e[0] === '#') {
      const n = e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
      return Number.isFinite(n) && n > 0 && n <= 0x10ffff ? String.fromCodePoint(n) : whole;
    }
    return ENTITIES[e.toLowerCase()] ?? whole;
  });
}

/** The page's title: its <title>, else its og:title; entities decoded, white space folded. */
function titleIn(html: string): string | null {
  const clean = (t: string | undefined) => {
    const s = t === undefined ? '' : decodeEntities(t).replace(/\s+/g, ' ').trim();
    return s ? s.slice(0, TITLE_MAX) : null;
  };
  const title = clean(/<title\b[^>]*>([\s\S]*?)<\/title\s*>/i.exec(html)?.[1]);
  if (title) return title;
  for (const m of html.matchAll(/<meta\b[^>]*>/gi)) {
    const tag = m[0];
    if (!/\b(?:property|name)\s*=\s*["']?og:title["'\s/>]/i.test(tag)) continue;
    const content = /\bcontent\s*=\s*(?:"([^"]*)"|'([^']*)')/i.exec(tag);
    const t = clean(content?.[1] ?? content?.[2]);
    if (t) return t;
  }
  return null;
}

export async function fetchPageTitle(
  url: string,
  signal: AbortSignal,
  options: { allowPrivate: boolean },
): Promise<{ title: string | null; final_url: string; problem?: string }> {
  const deadline = withDeadline(signal, FETCH_DEADLINE_MS);
  let current = url;
  try {
    for (let hop = 0; ; hop++) {
      const res = await get(new URL(current), deadline.signal, options.allowPrivate);
      if (res.status >= 300 && res.status < 400 && res.location) {
        if (hop >= MAX_REDIRECTS) return { title: null, final_url: current, problem: `more than ${MAX_REDIRECTS} redirects` };
        const next = new URL(res.location, current);
        if (next.protocol !== 'http:' && next.protocol !== 'https:')
          return { title: null, final_url: current, problem: `it redirects to a ${next.protocol} address` };
        current = next.href;
        continue;
      }
      if (res.status < 200 || res.status >= 300) return { title: null, final_url: current, problem: `the server answered HTTP ${res.status}` };
      if (!res.body) return { title: null, final_url: current, problem: `it is not a web page (${res.type || 'no content type'})` };
      const title = titleIn(decode(res.body, res.type));
      return title ? { title, final_url: current } : { title: null, final_url: current, problem: 'the page has no title' };
    }
  } catch (err) {
    if (deadline.cause === 'cancelled') throw new MemoError('CANCELLED', 'The call was cancelled while the page was being fetched.');
    if (deadline.cause === 'timeout') return { title: null, final_url: current, problem: `no answer within ${FETCH_DEADLINE_MS / 1000} s` };
    if (err instanceof NotPublicError)
      return {
        title: null,
        final_url: current,
        problem: `${err.message}: pages on this machine or a private network are not fetched (the vault setting fetch_private_addresses allows them)`,
      };
    return { title: null, final_url: current, problem: `it could not be reached (${(err as Error).message})` };
  } finally {
    deadline.dispose();
  }
}
