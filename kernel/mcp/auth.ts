import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { isLoopback } from '../util/is-loopback.js';

/** Bytes of randomness in an endpoint token (256 bits), encoded base64url (43 characters). */
export const TOKEN_BYTES = 32;

/** A fresh bearer token. Held only in memory by whoever calls this; never written anywhere. */
export function generateToken(): string {
  return randomBytes(TOKEN_BYTES).toString('base64url');
}

/**
 * Compares a presented token with the expected one in constant time. Both sides are hashed first,
 * so neither the content nor the length of the expected token leaks through timing.
 */
export function tokensEqual(presented: string | undefined, expected: string): boolean {
  if (typeof presented !== 'string') return false;
  const a = createHash('sha256').update(presented, 'utf8').digest();
  const b = createHash('sha256').update(expected, 'utf8').digest();
  return timingSafeEqual(a, b);
}

/** The token of an `Authorization: Bearer <token>` header (scheme case-insensitive), or undefined. */
export function bearerToken(header: string | string[] | undefined): string | undefined {
  if (typeof header !== 'string') return undefined;
  const m = /^Bearer[ \t]+([^\s]+)[ \t]*$/i.exec(header);
  return m ? m[1] : undefined;
}

/** True for names and addresses that stay on this machine: localhost, 127.0.0.0/8, ::1 (the kernel's one loopback check). */
export function isLoopbackAddress(host: string): boolean {
  return isLoopback(host);
}

/** The hostname of a Host header value (`name`, `name:port`, `[v6]`, `[v6]:port`), lowercased. */
export function hostOfHeader(value: string): string | null {
  const v = value.trim().toLowerCase();
  if (v === '') return null;
  if (v.startsWith('[')) {
    const end = v.indexOf(']');
    if (end < 0) return null;
    const rest = v.slice(end + 1);
    if (rest !== '' && !/^:\d{1,5}$/.test(rest)) return null;
    return v.slice(0, end + 1);
  }
  const parts = v.split(':');
  if (parts.length > 2) return null;
  const [host = '', port] = parts; // split always returns one element
  if (port !== undefined && !/^\d{1,5}$/.test(port)) return null;
  return host;
}

/**
 * DNS-rebinding protection, Host side: a browser tricked into calling us through an attacker's
 * domain sends that domain as Host. Only loopback names pass (the port is ignored), plus any names
 * the endpoint was told about explicitly (the bind address of an `--allow-remote` endpoint).
 */
export function hostAllowed(header: string | string[] | undefined, extra: ReadonlySet<string> = new Set()): boolean {
  if (typeof header !== 'string') return false;
  const host = hostOfHeader(header);
  if (host === null) return false;
  return isLoopback(host) || extra.has(host);
}

/**
 * DNS-rebinding protection, Origin side: clients that are not browsers send no Origin and pass;
 * a page in a browser always sends one, and only a loopback page (http/https) may call us.
 * `Origin: null` (sandboxed frames, file://) is refused.
 */
export function originAllowed(header: string | string[] | undefined, extra: ReadonlySet<string> = new Set()): boolean {
  if (header === undefined) return true;
  if (typeof header !== 'string') return false;
  let url: URL;
  try {
    url = new URL(header);
  } catch {
    return false;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
  // The origin as written: a URL parser turns `http://127.1` into 127.0.0.1, the loopback check does not.
  return isLoopback(header) || extra.has(url.hostname.toLowerCase());
}
