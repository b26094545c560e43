import { isIP } from 'node:net';

/**
 * True for a host that stays on this machine: `localhost`, 127.0.0.0/8 (dotted quad only), `::1`
 * (bracketed or not, in any spelling `node:net` accepts) and IPv4-mapped loopback
 * (`::ffff:127.0.0.1`). Accepts a bare host, a `host:port`, a bracketed `[v6]:port` or a URL.
 *
 * Look-alikes are refused: `127.0.0.1.evil.com` and `localhost.evil.com` are names anyone can point
 * anywhere, and the short or hexadecimal IPv4 forms (`127.1`, `0x7f.0.0.1`, `2130706433`) are refused
 * too, although a URL parser would turn them into 127.x: a caller checking a configured address should
 * see it written the ordinary way, and a check that refuses them can never be talked into more.
 * `localhost.` (the fully-qualified spelling) is refused for the same reason.
 */
export function isLoopback(hostOrUrl: string): boolean {
  const host = hostOf(hostOrUrl.trim());
  if (host === null) return false;
  if (host === 'localhost') return true;
  const kind = isIP(host);
  if (kind === 4) return host.startsWith('127.');
  if (kind !== 6) return false;
  const words = expandV6(host);
  if (words === null) return false;
  // ::1
  if (words.slice(0, 7).every((w) => w === 0) && words[7] === 1) return true;
  // ::ffff:127.x.y.z (IPv4-mapped): the first byte of the IPv4 half is 127.
  return words.slice(0, 5).every((w) => w === 0) && words[5] === 0xffff && words[6]! >> 8 === 127; // words has 8 entries
}

/** The host part of a URL, `host:port`, `[v6]:port` or bare host, lower-cased and unbracketed; null if none. */
function hostOf(value: string): string | null {
  if (value === '') return null;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      return null;
    }
    const host = url.hostname.toLowerCase();
    if (host.startsWith('[')) return host.slice(1, -1);
    // WHATWG URL rewrites `127.1` and `0x7f.1` to 127.0.0.1: only a host written as the parser reads it passes.
    const written = /^[a-z][a-z0-9+.-]*:\/\/(?:[^@/\\?#]*@)?([^:/\\?#]*)/i.exec(value)?.[1]?.toLowerCase();
    return written === host ? host : null;
  }
  const v = value.toLowerCase();
  if (v.startsWith('[')) {
    const end = v.indexOf(']');
    if (end < 0) return null;
    const rest = v.slice(end + 1);
    if (rest !== '' && !/^:\d{1,5}$/.test(rest)) return null;
    return v.slice(1, end);
  }
  // A bare IPv6 address has several colons; one colon is host:port.
  if (v.split(':').length === 2) {
    const [host = '', port = ''] = v.split(':');
    return /^\d{1,5}$/.test(port) ? host : null;
  }
  return v;
}

/** The eight 16-bit words of an IPv6 address (`isIP` already said it is one), or null. */
function expandV6(address: string): number[] | null {
  let text = address.split('%')[0]!; // split always returns one element; a zone id is not part of the address
  // A trailing dotted quad stands for the last two words.
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (quad) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const part = (s: string | undefined) => (s ? s.split(':').map((w) => Number.parseInt(w, 16)) : []);
  const head = part(halves[0]);
  const tail = part(halves[1]);
  const fill = halves.length === 2 ? 8 - head.length - tail.length : 0;
  const words = [...head, ...new Array<number>(Math.max(0, fill)).fill(0), ...tail];
  return words.length === 8 && words.every((w) => Number.isInteger(w) && w >= 0 && w <= 0xffff) ? words : null;
}
