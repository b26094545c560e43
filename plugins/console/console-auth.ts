import { createHash, randomBytes } from 'node:crypto';
import type { Clock } from 'memo-kernel/pack';

/** How long a console session lasts after its login (absolute, not sliding). */
export const DEFAULT_SESSION_TTL_MS = 12 * 60 * 60_000;

/** 256 bits, base64url: a login code and a session id are both unguessable. */
function secret(): string {
  return randomBytes(32).toString('base64url');
}

/** Sessions and codes are kept by their hash: a map lookup then leaks nothing about a stored value through timing. */
function digest(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('base64url');
}

/**
 * Who may use the console: a person who opened the link `memo serve` printed. The link carries a
 * one-time login code; exchanging it makes a session whose id lives only in an HttpOnly,
 * SameSite=Strict cookie. The MCP bearer token is never involved, so it never reaches a browser.
 *
 * - One code is valid at a time: `issueCode()` replaces the previous one (memo serve prints a new
 *   link on SIGHUP), and a code works once.
 * - A session ends at logout or `ttlMs` after its login, by the kernel's clock.
 * - Everything is in memory: a restart of memo serve ends every session.
 */
export class ConsoleAuth {
  private code: string | undefined;
  /** Session id digest → when it expires (epoch ms). */
  private readonly sessions = new Map<string, number>();

  constructor(
    private readonly clock: Pick<Clock, 'now'>,
    readonly ttlMs = DEFAULT_SESSION_TTL_MS,
  ) {}

  /** A new one-time login code; the previous one stops working. */
  issueCode(): string {
    const code = secret();
    this.code = digest(code);
    return code;
  }

  /** Exchanges a login code for a new session id, once; undefined for a used, replaced or wrong code. */
  login(code: string | undefined): { session: string; expires: number } | undefined {
    if (typeof code !== 'string' || this.code === undefined || digest(code) !== this.code) return undefined;
    this.code = undefined;
    const session = secret();
    const expires = this.clock.now() + this.ttlMs;
    this.prune();
    this.sessions.set(digest(session), expires);
    return { session, expires };
  }

  /** When `session` expires, or undefined when it is not a live session. */
  expiry(session: string | undefined): number | undefined {
    if (typeof session !== 'string' || session === '') return undefined;
    const key = digest(session);
    const expires = this.sessions.get(key);
    if (expires === undefined) return undefined;
    if (expires <= this.clock.now()) {
      this.sessions.delete(key);
      return undefined;
    }
    return expires;
  }

  logout(session: string | undefined): void {
    if (typeof session === 'string') this.sessions.delete(digest(session));
  }

  private prune(): void {
    const now = this.clock.now();
    for (const [key, expires] of this.sessions) if (expires <= now) this.sessions.delete(key);
  }
}

/** The value of cookie `name` in a Cookie header, or undefined. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (typeof header !== 'string') return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
