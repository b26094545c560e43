import { inspect } from 'node:util';
import { MASK } from '../secrets/masking.js';
import { MemoError } from '../errors.js';

/** The SSL modes understood, as libpq names them. `require` encrypts without checking the certificate, as libpq does. */
const SSL_MODES = ['disable', 'require', 'verify-ca', 'verify-full'] as const;
type SslMode = (typeof SSL_MODES)[number];

/** What typeorm's postgres driver is given: the parts, never the URL, so nothing has to parse the password twice. */
export interface PostgresConnection {
  host: string;
  port: number;
  username: string;
  password: string;
  database: string;
  ssl: boolean | { rejectUnauthorized: boolean };
}

/**
 * A PostgreSQL connection URL (`MEMO_DATABASE_URL`, or the kernel option `databaseUrl`). The password
 * is kept in a private field: printing, logging or JSON-encoding the object, or an error that names
 * it, shows `display` (`postgres://memo:[masked]@db:5432/memo`, the mark every masked secret carries), and `scrub` takes the password out of a
 * driver's message before it travels on. Accepted: `postgres://` or `postgresql://`, user, password,
 * host (or `?host=/socket/folder`), port (default 5432), database (default: the user name), and
 * `?sslmode=disable|require|verify-ca|verify-full`; anything else is refused, so a setting that would
 * be silently ignored is caught at start.
 */
export class DatabaseUrl {
  readonly #password: string;
  readonly host: string;
  readonly port: number;
  readonly user: string;
  readonly database: string;
  readonly sslMode: SslMode;
  /** The URL with its password masked: what may be shown. */
  readonly display: string;

  private constructor(parts: { host: string; port: number; user: string; password: string; database: string; sslMode: SslMode }) {
    this.#password = parts.password;
    this.host = parts.host;
    this.port = parts.port;
    this.user = parts.user;
    this.database = parts.database;
    this.sslMode = parts.sslMode;
    const auth = `${encodeURIComponent(parts.user)}${parts.password ? `:${MASK}` : ''}@`;
    const db = encodeURIComponent(parts.database);
    const host = parts.host.includes(':') ? `[${parts.host}]` : parts.host;
    this.display = parts.host.startsWith('/')
      ? `postgres://${auth}/${db}?host=${encodeURIComponent(parts.host)}`
      : `postgres://${auth}${host}:${parts.port}/${db}`;
  }

  /** Parses `text`; a bad URL is a VALIDATION error that never repeats the value (it may hold a password). */
  static parse(text: string, source = 'MEMO_DATABASE_URL'): DatabaseUrl {
    const bad = (why: string) =>
      new MemoError('VALIDATION', `${source} is not a usable PostgreSQL URL: ${why}. (The value is not shown: it may hold a password.)`);
    let u: URL;
    try {
      u = new URL(text.trim());
    } catch {
      throw bad('it does not parse as a URL; the form is postgres://USER:PASSWORD@HOST:PORT/DATABASE (percent-encode special characters in the password)');
    }
    if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') throw bad(`its scheme is "${u.protocol.replace(/:$/, '')}", not postgres or postgresql`);
    let user: string;
    let password: string;
    let database: string;
    try {
      user = decodeURIComponent(u.username);
      password = decodeURIComponent(u.password);
      database = decodeURIComponent(u.pathname.replace(/^\//, ''));
    } catch {
      throw bad('a percent-encoded part of it does not decode');
    }
    if (!user) throw bad('it names no user (postgres://USER:PASSWORD@HOST/DATABASE)');
    if (database.includes('/')) throw bad('its database name contains "/"');
    let host = u.hostname.replace(/^\[(.*)\]$/, '$1');
    let sslMode: SslMode = 'disable';
    for (const [key, value] of u.searchParams) {
      if (key === 'host') host = value;
      else if (key === 'sslmode') {
        if (!(SSL_MODES as readonly string[]).includes(value)) throw bad(`sslmode "${value}" is not one of ${SSL_MODES.join(', ')}`);
        sslMode = value as SslMode;
      } else throw bad(`the parameter "${key}" is not supported (supported: host, sslmode)`);
    }
    if (!host) throw bad('it names no host');
    const port = u.port ? Number(u.port) : 5432;
    return new DatabaseUrl({ host, port, user, password, database: database || user, sslMode });
  }

  /** The connection parts for the driver: the one place the password leaves this object. */
  connection(): PostgresConnection {
    return {
      host: this.host,
      port: this.port,
      username: this.user,
      password: this.#password,
      database: this.database,
      ssl: this.sslMode === 'disable' ? false : { rejectUnauthorized: this.sslMode !== 'require' },
    };
  }

  /** The same parts as node-postgres's own `Client` takes them (`user`, not typeorm's `username`), for a connection outside a store's pool. */
  clientOptions(): { host: string; port: number; user: string; password: string; database: string; ssl: PostgresConnection['ssl'] } {
    const c = this.connection();
    return { host: c.host, port: c.port, user: c.username, password: c.password, database: c.database, ssl: c.ssl };
  }

  /** `text` with the password (as written and percent-encoded) replaced by [masked]. */
  scrub(text: string): string {
    if (!this.#password) return text;
    let out = text;
    for (const form of new Set([this.#password, encodeURIComponent(this.#password)])) out = out.split(form).join(MASK);
    return out;
  }

  toString(): string {
    return this.display;
  }

  toJSON(): string {
    return this.display;
  }

  [inspect.custom](): string {
    return `DatabaseUrl(${this.display})`;
  }
}

/** The shared database a setting selects: a URL, or null (unset or blank) for SQLite files in the data folder. */
export function databaseFromSetting(value: string | undefined, source = 'MEMO_DATABASE_URL'): DatabaseUrl | null {
  if (value === undefined || value.trim() === '') return null;
  return DatabaseUrl.parse(value, source);
}
