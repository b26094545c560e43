/**
 * The web console of `memo serve`: a page under `/ui` on the MCP endpoint's own port, behind its
 * Host/Origin checks (loopback only), where a person answers the approval broker's requests. The
 * console pack mounts it there (`api.http.mount`) and reaches the kernel only through the
 * administration view (`api.administration()`), which a built-in pack alone is granted.
 *
 * Security model:
 * - Login: the link memo serve prints carries a one-time code; `GET /ui/login?code=` exchanges it
 *   for a session id in an HttpOnly, SameSite=Strict cookie scoped to `/ui` and named after the
 *   port (two servers on one machine do not share sessions). The MCP bearer token is never used.
 * - CSRF: every request that is not GET/HEAD must carry an `Origin` equal to this server's own
 *   (`http://<Host>`), and a `Sec-Fetch-Site`, when sent, of `same-origin`; API bodies must be JSON
 *   (a cross-site form cannot send that without a preflight this server never grants).
 * - The page's script is the console's own files and Preact/htm from the package: a strict CSP
 *   (`script-src 'self'` plus the hash of the import map), no inline script, no CDN, no pack code.
 * - Arguments shown are the masked ones the broker holds; edited arguments are never echoed.
 *
 * The console is a face of the approval broker through the same API as `memo approvals`
 * (`onChange`, `pending`, `answer(id, reply, 'console')`): while a browser holds the event stream
 * open, the broker counts as attended, so requests from MCP clients, routines and pack services
 * wait for an answer instead of being refused.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import type * as http from 'node:http';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  answerAndClose,
  describeProvider,
  isMemoError,
  maskArgs,
  MASK,
  parseBoundedJson,
  readBody,
  tooDeepMessage,
  type ApprovalEvent,
  auditSearchQuery,
  type AuditRecord,
  type AuditSearchQuery,
  type Clock,
  type Disposable,
  type HttpHandler,
  type Logger,
  type PackAdministration,
  type PackApi,
  type PackSubcommand,
} from 'memo-kernel/pack';
import { consoleReply, consoleView, refusalStatus, type ConsoleApprovalView } from './approval-answers.js';
import { ConsoleAuth, cookieValue, DEFAULT_SESSION_TTL_MS } from './console-auth.js';
import { ConsoleChat } from './console-chat.js';
import { probeProvider, saveProvider, type ProviderAccess } from './console-providers.js';
import { ARTIFACT_HEADERS, readArtifact } from './artifact-view.js';
import { itemView } from './item-view.js';
import { StaticAssets, type StaticAsset } from './static-assets.js';
import { searchMentions } from './mention-search.js';
import { toolRows } from './tools-view.js';
import { listArgs, listRows, rowActionArgs } from './panel-lists.js';

export const CONSOLE_PATH = '/ui';
/** Largest request body the console reads (an edited note body fits comfortably). */
const MAX_BODY_BYTES = 1024 * 1024;
/** A comment line on every event stream this often, so proxies and the browser keep it open. */
const HEARTBEAT_MS = 20_000;
/**
 * How often the open event streams look for new audit entries. The kernel's audit sink has no
 * change feed (a host may supply its own sink), so the console reads its in-memory tail, only while
 * a page is open.
 */
const AUDIT_POLL_MS = 1000;
/** How often, while a page is open, the console asks the settings stores whether anything changed (watchSettings). */
const SETTINGS_POLL_MS = 1000;

/** An audit entry's identity across reads: its chain number when the sink keeps one, else its call id and time. */
function auditKey(e: AuditRecord): string {
  const seq = (e as { seq?: unknown }).seq;
  return typeof seq === 'number' ? `#${seq}` : `${e.id}|${e.ts}`;
}

/**
 * What the console uses of the vault pack's `vault.reminders` (declared here because packs never
 * import each other; plugins/vault/reminder-delivery.ts is the source): the reminders delivered and
 * not yet dismissed, each new one as it is delivered, and the dismissal.
 */
interface VaultReminders {
  subscribe(listener: (notice: ReminderNotice) => void): () => void;
  unseen(limit?: number): Promise<ReminderNotice[]>;
  dismiss(id: string): Promise<boolean>;
}

interface ReminderNotice {
  id: string;
  title: string;
  note: string | null;
  remind_at: string;
  delivered_at: string;
  late_minutes: number;
}

/** What the console works with besides the administration view: the pack API's own parts. */
export interface ConsoleServerOptions {
  logger: Logger;
  /** The kernel's clock (sessions expire by it, and their event streams end then). */
  clock: Clock;
  /** The stored provider configurations (the pack API's `providers.settings`). */
  providers: PackApi['providers']['settings'];
  /** Another pack's offer (the providers pack's `providers.configuration`). */
  lookup: PackApi['lookup'];
  /** How long a session lasts after login. Default 12 hours. */
  sessionTtlMs?: number;
}

const UI_DIR = fileURLToPath(new URL('./ui/', import.meta.url));

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/**
 * Preact and htm, and the markdown renderer (marked) and sanitiser (DOMPurify) of chat replies, as
 * the browser imports them: ES modules from the installed packages; nothing is fetched from elsewhere.
 */
function vendorFiles(): Record<string, string> {
  const require = createRequire(import.meta.url);
  const mjs = (id: string) => require.resolve(id).replace(/\.js$/, '.mjs');
  const beside = (pkg: string, file: string) => path.join(path.dirname(require.resolve(pkg)), file);
  return {
    'preact.mjs': mjs('preact'),
    'hooks.mjs': mjs('preact/hooks'),
    'htm.mjs': mjs('htm'),
    'htm-preact.mjs': mjs('htm/preact'),
    'marked.mjs': beside('marked', 'marked.esm.js'),
    'purify.mjs': beside('dompurify', 'purify.es.mjs'),
    // jsdiff's ES modules (the word diffs of an edit's review), each at its own path: they import one another.
    ...esmTree(path.join(path.dirname(path.dirname(require.resolve('diff'))), 'libesm'), 'diff'),
  };
}

/** Every .js file under `dir`, named `<prefix>/<path inside dir>`. */
function esmTree(dir: string, prefix: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.js')) continue;
    const file = path.join(entry.parentPath, entry.name);
    out[`${prefix}/${path.relative(dir, file).split(path.sep).join('/')}`] = file;
  }
  return out;
}

const IMPORT_MAP = JSON.stringify({
  imports: {
    preact: `${CONSOLE_PATH}/vendor/preact.mjs`,
    'preact/hooks': `${CONSOLE_PATH}/vendor/hooks.mjs`,
    htm: `${CONSOLE_PATH}/vendor/htm.mjs`,
    'htm/preact': `${CONSOLE_PATH}/vendor/htm-preact.mjs`,
    marked: `${CONSOLE_PATH}/vendor/marked.mjs`,
    dompurify: `${CONSOLE_PATH}/vendor/purify.mjs`,
    diff: `${CONSOLE_PATH}/vendor/diff/index.js`,
  },
});

function securityHeaders(importMapHash: string): Record<string, string> {
  return {
    'Content-Security-Policy': `default-src 'none'; script-src 'self' '${importMapHash}'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'`,
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'X-Frame-Options': 'DENY',
    'Cross-Origin-Opener-Policy': 'same-origin',
    'Cross-Origin-Resource-Policy': 'same-origin',
  };
}

function send(res: http.ServerResponse, status: number, body: string | Buffer, headers: Record<string, string>): void {
  res.req?.resume();
  if (res.headersSent) {
    res.end();
    return;
  }
  res.writeHead(status, headers);
  res.end(body);
}

/**
 * A request's JSON body within bounds: at most MAX_BODY_BYTES (413), nested at most MAX_JSON_DEPTH
 * levels (400 naming the limit), JSON (400). An empty body is `{}`.
 */
async function readJson(req: http.IncomingMessage): Promise<{ value: unknown } | { error: string; status: number }> {
  const raw = await readBody(req, MAX_BODY_BYTES).catch(() => undefined);
  // The page went away mid-body: the answer goes nowhere (a destroyed socket takes no writes).
  if (raw === undefined) return { error: 'The request body did not arrive whole.', status: 400 };
  if (raw === 'too-large') return { error: `The request body is over ${MAX_BODY_BYTES} bytes.`, status: 413 };
  if (raw.length === 0) return { value: {} };
  const parsed = parseBoundedJson(raw);
  if ('value' in parsed) return parsed;
  return { error: parsed.error === 'too-deep' ? tooDeepMessage('The request body') : 'The request body is not JSON.', status: 400 };
}

/**
 * A refusal's problems by field, as the settings form shows them beside each one (`fields: {timeoutMs:
 * "must be >= 1000"}`; kernel/packs/pack-settings.ts words them from the schema, never the value given).
 */
function fieldProblems(details: Record<string, unknown> | undefined): { fields?: Record<string, string> } {
  const fields = details?.fields;
  if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) return {};
  return { fields: Object.fromEntries(Object.entries(fields).filter((e): e is [string, string] => typeof e[1] === 'string')) };
}

/** Whether every %-escape in `route` decodes (decodeURIComponent would throw URIError otherwise). */
function wellEscaped(route: string): boolean {
  try {
    decodeURIComponent(route);
    return true;
  } catch {
    return false;
  }
}

/** A broker event as the console's stream carries it: a settled edit says `edit`, never the edited arguments (they are not masked). */
/** bin/memo of this installation: the nearest `bin/memo` above this file (source or dist/), when there is one. */
function memoBin(): string | undefined {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const bin = path.join(dir, 'bin', 'memo');
    if (fs.existsSync(bin)) return bin;
    dir = path.dirname(dir);
  }
  return undefined;
}

/** How a desktop client starts memo over stdio: node and bin/memo by absolute path, or `memo` when no bin/memo is found. */
function stdioCommand(args: string[]): { command: string; args: string[] } {
  const bin = memoBin();
  return bin ? { command: process.execPath, args: [bin, ...args] } : { command: 'memo', args };
}

function eventData(event: ApprovalEvent): { name: string; data: unknown } {
  if (event.kind === 'asked') return { name: 'asked', data: consoleView(event.approval) };
  if (event.outcome === 'answered')
    return { name: 'settled', data: { id: event.id, outcome: 'answered', by: event.by, reply: typeof event.reply === 'string' ? event.reply : 'edit' } };
  return { name: 'settled', data: { id: event.id, outcome: event.outcome, ...(event.reason ? { reason: event.reason } : {}) } };
}

export class ConsoleServer implements HttpHandler {
  readonly auth: ConsoleAuth;
  /** The page's files, read at the first request (a CLI command that loads the pack never serves it). */
  private assetCache: StaticAssets | undefined;
  private readonly headers: Record<string, string>;
  /** Open event streams: the session each belongs to, and how to end it. */
  private readonly streams = new Map<() => void, string>();
  private readonly auditListeners = new Set<(entries: AuditRecord[]) => void>();
  private readonly settingsListeners = new Set<(changed: string[]) => void>();
  private settingsTimer: NodeJS.Timeout | undefined;
  private settingsSeen: Record<string, string> = {};
  private auditTimer: NodeJS.Timeout | undefined;
  private auditSeen = new Set<string>();
  private readonly clock: Clock;
  private readonly providerAccess: ProviderAccess;
  /** Chat with the agent: conversations and their running turns. */
  readonly chat: ConsoleChat;
  private chatWatch: Disposable | undefined;

  constructor(
    private readonly admin: PackAdministration,
    private readonly options: ConsoleServerOptions,
  ) {
    this.clock = options.clock;
    this.auth = new ConsoleAuth(this.clock, options.sessionTtlMs ?? DEFAULT_SESSION_TTL_MS);
    this.chat = new ConsoleChat(admin, options.providers, options.logger, () => this.clock.now());
    this.providerAccess = { admin, settings: options.providers, lookup: options.lookup };
    const hash = `sha256-${createHash('sha256').update(IMPORT_MAP, 'utf8').digest('base64')}`;
    this.headers = securityHeaders(hash);
  }

  private get assets(): StaticAssets {
    if (this.assetCache) return this.assetCache;
    const assets = new Map<string, StaticAsset>();
    const html = fs.readFileSync(path.join(UI_DIR, 'index.html'), 'utf8').replace('<!--IMPORT_MAP-->', `<script type="importmap">${IMPORT_MAP}</script>`);
    assets.set('/', { body: Buffer.from(html), type: TYPES['.html']! });
    for (const name of fs.readdirSync(UI_DIR)) {
      const ext = path.extname(name);
      if (name === 'index.html' || !TYPES[ext]) continue;
      assets.set(`/${name}`, { body: fs.readFileSync(path.join(UI_DIR, name)), type: TYPES[ext] });
    }
    for (const [name, file] of Object.entries(vendorFiles())) assets.set(`/vendor/${name}`, { body: fs.readFileSync(file), type: TYPES['.mjs']! });
    return (this.assetCache = new StaticAssets(assets));
  }

  /** The link to print: the console's address with a new one-time login code (the previous code stops working). */
  loginUrl(endpointUrl: string): string {
    const url = new URL(`${CONSOLE_PATH}/login`, endpointUrl);
    url.searchParams.set('code', this.auth.issueCode());
    return url.toString();
  }

  /** The link memo serve prints (api.http's `link`): a new one-time login link. */
  link(origin: string): string {
    return this.loginUrl(origin);
  }

  /**
   * Ends every open event stream (a page no longer counts as someone watching the approvals) and
   * stops running chat turns, waiting until each is stored: the endpoint is closing, or the pack was
   * disabled or unloads. Sessions stay (in memory): once enabled again, a page logged in before works on.
   */
  async close(): Promise<void> {
    for (const end of [...this.streams.keys()]) end();
    clearInterval(this.auditTimer);
    clearInterval(this.settingsTimer);
    await this.chat.close();
  }

  /**
   * Tells `listener` which of the settings the admin pages show changed: `permissions` (stored
   * decisions, always-allow, external writes), `packs` (status, enabled, settings, tools) and
   * `providers`, made here, by `memo permissions|plugins|provider` in another process, or on another
   * instance. The stores re-read their files (or hear the database) when asked, so one timer asks
   * them every SETTINGS_POLL_MS while a page is open and compares what they say.
   */
  private watchSettings(listener: (changed: string[]) => void): () => void {
    if (this.settingsListeners.size === 0) {
      this.settingsSeen = this.settingsPrint();
      this.settingsTimer = setInterval(() => {
        const now = this.settingsPrint();
        const changed = Object.keys(now).filter((k) => now[k] !== this.settingsSeen[k]);
        this.settingsSeen = now;
        if (changed.length) for (const l of this.settingsListeners) l(changed);
      }, SETTINGS_POLL_MS);
      this.settingsTimer.unref();
    }
    this.settingsListeners.add(listener);
    return () => {
      this.settingsListeners.delete(listener);
      if (this.settingsListeners.size === 0) clearInterval(this.settingsTimer);
    };
  }

  /** A hash of each group of settings as the stores say now. */
  private settingsPrint(): Record<string, string> {
    const hash = (v: unknown) => createHash('sha256').update(JSON.stringify(v)).digest('base64url');
    const p = this.admin.permissions;
    const providers = this.options.providers;
    return {
      permissions: hash([p.list(), p.alwaysAllow, p.externalWrites, p.problem]),
      packs: hash(this.admin.packs.list().map((x) => [x.id, x.status, x.enabled, x.error, x.reloadError, this.admin.packs.config(x.id), x.manifest?.version])),
      providers: hash([providers.list(), providers.active()?.name]),
    };
  }

  /** Tells `listener` of every audit entry appended from now on, while it is subscribed. */
  private watchAudit(listener: (entries: AuditRecord[]) => void): () => void {
    // The kernel's audit log says when it writes: its entries are passed on as they are written.
    const feed = this.admin.audit.onAppend;
    if (feed) {
      const watch = feed((records) => listener([...records]));
      return () => watch.dispose();
    }
    // A host's own sink without a change feed is polled.
    if (this.auditListeners.size === 0) {
      this.auditSeen = new Set(this.admin.audit.tail(200).map(auditKey));
      this.auditTimer = setInterval(() => {
        const recent = this.admin.audit.tail(200);
        const fresh = recent.filter((e) => !this.auditSeen.has(auditKey(e)));
        this.auditSeen = new Set(recent.map(auditKey));
        if (fresh.length) for (const l of this.auditListeners) l(fresh);
      }, AUDIT_POLL_MS);
      this.auditTimer.unref();
    }
    this.auditListeners.add(listener);
    return () => {
      this.auditListeners.delete(listener);
      if (this.auditListeners.size === 0) clearInterval(this.auditTimer);
    };
  }

  /**
   * A request as the page shows it: the broker's view plus how long it still waits by the kernel's
   * clock (the page counts down from that, so a browser whose clock differs still shows the truth).
   */
  private withCountdown(view: ConsoleApprovalView): ConsoleApprovalView & { expiresInMs: number } {
    return { ...view, expiresInMs: Math.max(0, Date.parse(view.expiresAt) - this.clock.now()) };
  }

  /** Every waiting request: this instance's and, with a shared database, the other instances' (listed with theirs). */
  private pendingViews(): Array<ConsoleApprovalView & { expiresInMs: number }> {
    return this.admin.approvals.pending().map((p) => this.withCountdown(consoleView(p)));
  }

  /** Answers one request under `/ui`; the endpoint has already checked Host and Origin are loopback. */
  async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const sub = url.pathname.slice(CONSOLE_PATH.length) || '';
    const method = req.method ?? 'GET';
    const reading = method === 'GET' || method === 'HEAD';
    if (!reading) {
      const refusal = this.crossSite(req);
      if (refusal) return this.json(res, 403, { error: 'CROSS_ORIGIN', message: refusal });
    }
    if (sub === '') return send(res, 308, '', { Location: `${CONSOLE_PATH}/`, ...this.headers });
    if (sub === '/login') {
      if (!reading) return this.json(res, 405, { error: 'METHOD_NOT_ALLOWED', message: 'Open the login link in the browser.' }, { Allow: 'GET' });
      return this.login(req, res, url.searchParams.get('code') ?? undefined);
    }
    if (sub === '/logout') {
      if (method !== 'POST') return this.json(res, 405, { error: 'METHOD_NOT_ALLOWED', message: 'Log out with POST.' }, { Allow: 'POST' });
      const session = this.sessionOf(req);
      this.auth.logout(session);
      // Its event streams end now: a logged-out page stops counting as someone watching the approvals.
      for (const [end, of] of [...this.streams]) if (of === session) end();
      return this.json(res, 200, { ok: true }, { 'Set-Cookie': this.cookie(req, '', 0) });
    }
    if (sub.startsWith('/api/')) {
      const session = this.sessionOf(req);
      const expires = this.auth.expiry(session);
      if (expires === undefined) {
        return this.json(res, 401, {
          error: 'UNAUTHENTICATED',
          message: 'Not logged in, or the session ended. Open the console link memo serve printed (it works once; kill -HUP the server for a new one).',
        });
      }
      const route = sub.slice('/api'.length);
      // Every id in a route is %-decoded: a malformed escape is the caller's mistake, said as such.
      if (!wellEscaped(route)) return this.json(res, 400, { error: 'VALIDATION', message: `The address ${CONSOLE_PATH}${sub} has a malformed %-escape.` });
      // A damaged conversations file (agent.sqlite) refuses the chat's routes with its message, which
      // memo serve said once at start: the page shows it, and the server's log does not repeat it.
      return this.api(req, res, route, method, session!, expires, url).catch((err: unknown) => {
        if (isMemoError(err) && err.details?.damaged === true) return this.json(res, 503, { error: 'CONVERSATIONS_DAMAGED', message: err.message });
        throw err;
      });
    }
    // The page itself is not stored (it is where a login lands); the files it loads are revalidated by ETag.
    if (reading && this.assets.serve(req, res, sub, this.headers, sub === '/' ? 'no-store' : 'no-cache')) return;
    return this.json(res, reading ? 404 : 405, { error: 'NOT_FOUND', message: `Nothing at ${CONSOLE_PATH}${sub}.` });
  }

  /** Why a state-changing request is refused as cross-site, or null when it comes from this console's own page. */
  private crossSite(req: http.IncomingMessage): string | null {
    const origin = req.headers.origin;
    const host = req.headers.host;
    if (typeof origin !== 'string' || typeof host !== 'string' || origin.toLowerCase() !== `http://${host.toLowerCase()}`)
      return 'A request that changes something must come from the console page itself (its Origin must be this server).';
    const site = req.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin') return 'A request that changes something must come from the console page itself (same-origin).';
    return null;
  }

  private cookieName(req: http.IncomingMessage): string {
    return `memo_console_${req.socket.localPort ?? 0}`;
  }

  private sessionOf(req: http.IncomingMessage): string | undefined {
    return cookieValue(req.headers.cookie, this.cookieName(req));
  }

  private cookie(req: http.IncomingMessage, value: string, maxAgeSeconds: number): string {
    return `${this.cookieName(req)}=${value}; Path=${CONSOLE_PATH}; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}`;
  }

  private login(req: http.IncomingMessage, res: http.ServerResponse, code: string | undefined): void {
    const made = this.auth.login(code);
    if (!made) {
      const page =
        '<!doctype html><html lang="en"><meta charset="utf-8"><title>Memo console: link not valid</title><link rel="stylesheet" href="/ui/style.css">' +
        '<main class="login-refused"><h1>This console link does not work</h1><p>Each link works once, and only while the <code>memo serve</code> that printed it runs. ' +
        'Use the newest link it printed, or get a new one with <code>kill -HUP &lt;pid&gt;</code>.</p></main></html>';
      return send(res, 403, page, { 'Content-Type': TYPES['.html']!, 'Cache-Control': 'no-store', ...this.headers });
    }
    const seconds = Math.max(1, Math.floor((made.expires - this.clock.now()) / 1000));
    this.options.logger?.info('console: a browser logged in');
    // 303 to the page: the code leaves the address bar (and the history) at once.
    return send(res, 303, '', {
      Location: `${CONSOLE_PATH}/`,
      'Set-Cookie': this.cookie(req, made.session, seconds),
      'Cache-Control': 'no-store',
      ...this.headers,
    });
  }

  /** The vault pack's reminders, while it is loaded. */
  private reminders(): VaultReminders | undefined {
    return this.options.lookup<VaultReminders>('vault.reminders');
  }

  /**
   * The lines a search selects, as a JSONL download, oldest first and exactly as written (each keeps
   * its chain fields). A slow reader is waited for; a reader that leaves stops the read, and a read
   * that fails midway ends the download as failed (never as a file that looks whole).
   */
  private async exportAudit(res: http.ServerResponse, q: AuditSearchQuery): Promise<void> {
    const day = new Date(this.clock.now()).toISOString().slice(0, 10);
    res.writeHead(200, {
      'Content-Type': 'application/x-ndjson; charset=utf-8',
      'Content-Disposition': `attachment; filename="memo-audit-${day}.jsonl"`,
      'Cache-Control': 'no-store',
      ...this.headers,
    });
    const gone = new Promise<void>((resolve) => res.once('close', resolve));
    try {
      await this.admin.audit.lines(q, (raw) => {
        if (res.destroyed) throw new Error('the reader left');
        if (res.write(`${raw}\n`)) return undefined;
        return Promise.race([new Promise<void>((resolve) => res.once('drain', resolve)), gone]);
      });
      res.end();
    } catch (err) {
      if (!res.destroyed) this.options.logger?.warn(`console: the audit export stopped: ${(err as Error).message}`);
      res.destroy();
    }
  }

  private json(res: http.ServerResponse, status: number, body: unknown, extra: Record<string, string> = {}): void {
    send(res, status, JSON.stringify(body), { 'Content-Type': 'application/json', 'Cache-Control': 'no-store', ...this.headers, ...extra });
  }

  /** A body readJson refused. Past the size limit the rest of the upload is drained before the connection closes (answerAndClose). */
  private refuseBody(res: http.ServerResponse, refused: { error: string; status: number }): void {
    const body = { error: 'BAD_REQUEST', message: refused.error };
    if (refused.status !== 413) return this.json(res, refused.status, body);
    answerAndClose(res, 413, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store', ...this.headers }, JSON.stringify(body));
  }

  /**
   * Answers a settings change once it is stored: at once for the data folder's files; with a shared
   * database, once committed there. A change the database refused has been undone, and the person is
   * told so (503) rather than shown a success.
   */
  /** Answers once `saved` resolves: `body` (or what the function makes of it, after); a refusal with its code. */
  private async committed(res: http.ServerResponse, saved: Promise<unknown>, status: number, body: unknown): Promise<void> {
    try {
      await saved;
    } catch (err) {
      // A person's change whose audit line could not be written was not made (kernel.admin).
      if (isMemoError(err) && err.details?.decision === 'deny:audit-unavailable')
        return this.json(res, 503, { error: 'AUDIT_UNAVAILABLE', message: err.message });
      if (isMemoError(err) && (err.code === 'VALIDATION' || err.code === 'NOT_FOUND' || err.code === 'INVALID_ARGS'))
        return this.json(res, err.code === 'NOT_FOUND' ? 404 : 400, { error: err.code, message: err.message, ...fieldProblems(err.details) });
      return this.json(res, 503, { error: 'UNAVAILABLE', message: `The change was not saved, and is undone: ${(err as Error)?.message ?? String(err)}` });
    }
    return this.json(res, status, typeof body === 'function' ? await (body as () => unknown)() : body);
  }

  /** Packs as the console lists them: status, load errors, tools, and settings with secrets masked (write-only). */
  private packViews() {
    return this.admin.packs.list().map((p) => ({
      id: p.id,
      name: p.manifest?.name ?? p.id,
      version: p.manifest?.version ?? null,
      description: p.manifest?.description ?? null,
      source: p.source,
      status: p.status,
      enabled: p.enabled,
      ...(p.error ? { error: p.error } : {}),
      ...(p.reloadError ? { reloadError: p.reloadError } : {}),
      tools: (p.manifest?.tools ?? []).map((t) => ({ name: t.name, danger: t.danger, effect: t.effect })),
      configSchema: p.manifest?.config ?? null,
      config: p.status === 'loaded' ? (maskArgs(this.admin.packs.config(p.id) ?? {}).masked as Record<string, unknown>) : null,
    }));
  }

  /** The MCP endpoint for the page: the URL and client snippets with a placeholder where the token goes. */
  private mcpView() {
    const endpoint = this.admin.endpoint();
    if (!endpoint) return { url: null, snippets: [] };
    const url = endpoint.url;
    const { root, dataDir } = this.admin.place;
    const token = '<TOKEN printed by memo serve>';
    const snippets = [
      {
        id: 'stdio',
        title: 'Desktop clients (Claude Desktop, Cursor): memo over stdio, no token',
        // Absolute node and bin/memo, as memo serve prints it: desktop apps start servers without the shell's PATH.
        text: JSON.stringify({ mcpServers: { memo: stdioCommand(['serve', '--stdio', '--root', root, '--data', dataDir]) } }, null, 2),
      },
      {
        id: 'http',
        title: 'HTTP clients (Cursor, Claude Code; VS Code under "servers")',
        text: JSON.stringify({ mcpServers: { memo: { type: 'http', url, headers: { Authorization: `Bearer ${token}` } } } }, null, 2),
      },
      {
        id: 'remote',
        title: 'Stdio-only clients through mcp-remote',
        text: JSON.stringify(
          {
            mcpServers: {
              memo: { command: 'npx', args: ['-y', 'mcp-remote', url, '--header', 'Authorization:${MEMO_AUTH}'], env: { MEMO_AUTH: `Bearer ${token}` } },
            },
          },
          null,
          2,
        ),
      },
    ];
    return { url, snippets };
  }

  /** The packs' console panels (data only), each action and command with the schema of the arguments a person fills in. */
  private panelViews() {
    const tools = this.admin.tools();
    return this.admin.panels.list().map((panel) => ({
      ...panel,
      actions: (panel.actions ?? []).map((a) => {
        const spec = tools.find((t) => t.spec.name === a.tool)?.spec;
        return { ...a, available: spec !== undefined, parameters: spec?.parameters ?? null, danger: spec?.danger ?? null };
      }),
      commands: (panel.commands ?? []).map((c) => {
        const sub = this.admin.subcommand(panel.pack, c.command);
        // Its positional arguments as a form (all text, as on a command line).
        const asked = (sub?.arguments ?? []).filter((a) => !c.fields || c.fields.includes(a.name));
        const parameters = sub && {
          type: 'object',
          properties: Object.fromEntries(asked.map((a) => [a.name, { type: 'string', ...(a.description ? { description: a.description } : {}) }])),
          required: asked.filter((a) => a.required).map((a) => a.name),
        };
        return { ...c, available: sub !== undefined, parameters: parameters ?? null, description: sub?.description ?? null };
      }),
      lists: (panel.lists ?? []).map((l) => {
        const spec = tools.find((t) => t.spec.name === l.tool)?.spec;
        const props = (spec?.parameters as { properties?: Record<string, unknown> } | undefined)?.properties ?? {};
        // The search boxes: the declared fields, with their schema.
        const parameters = { type: 'object', properties: Object.fromEntries((l.fields ?? []).filter((f) => f in props).map((f) => [f, props[f]])) };
        return { ...l, available: spec !== undefined, parameters };
      }),
    }));
  }

  /**
   * A panel's person command: the pack's own CLI subcommand, run for the logged-in person as the
   * terminal would run it (its output as JSON; the tools it calls go through the pipeline as the
   * host caller `console`). Not a tool: no agent or MCP client can reach it.
   */
  private async runCommand(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    pack: string,
    command: { command: string; args?: Record<string, string>; fields?: string[] },
    given: Record<string, unknown>,
  ): Promise<void> {
    const sub: PackSubcommand | undefined = this.admin.subcommand(pack, command.command);
    if (!sub) return this.json(res, 404, { error: 'NOT_FOUND', message: `Pack ${pack} has no command "memo ${command.command}".` });
    const args: Record<string, string> = {};
    for (const [k, v] of Object.entries(given)) {
      if (!(sub.arguments ?? []).some((a) => a.name === k) || (command.fields && !command.fields.includes(k)))
        return this.json(res, 400, { error: 'BAD_REQUEST', message: `memo ${command.command} takes no "${k}" here.` });
      if (typeof v !== 'string') return this.json(res, 400, { error: 'BAD_REQUEST', message: `"${k}" must be text.` });
      if (v !== '') args[k] = v;
    }
    Object.assign(args, command.args ?? {});
    const stop = new AbortController();
    res.on('close', () => stop.abort(new Error('the console page went away')));
    const printed: unknown[] = [];
    let code: number;
    try {
      const exit = await sub.run({
        args,
        options: { json: true },
        signal: stop.signal,
        invoke: (tool, a) => this.admin.invoke(tool, a, stop.signal),
        print: (v) => printed.push(v),
        record: (change) => this.admin.changes.record(change),
      });
      code = typeof exit === 'number' ? exit : 0;
    } catch (err) {
      const e = err as { code?: unknown; message?: unknown };
      code = 1;
      printed.push({ ok: false, error: { code: typeof e.code === 'string' ? e.code : 'TOOL_FAILED', message: String(e.message ?? err) } });
    }
    this.options.logger?.info(`console: ran memo ${command.command} (exit ${code})`);
    // A command's JSON output is {ok, result} or {ok: false, error}: answered in a tool result's shape.
    const last = printed.at(-1) as { ok?: unknown; result?: unknown; error?: { code?: unknown; message?: unknown } } | undefined;
    if (code !== 0) {
      const error =
        last?.ok === false && last.error ? last.error : { code: 'COMMAND_FAILED', message: `memo ${command.command} ended with exit code ${code}.` };
      return this.json(res, 200, { ok: false, error: { code: String(error.code), message: String(error.message) } });
    }
    const value = printed.length === 1 && last?.ok === true ? last.result : printed;
    return this.json(res, 200, { ok: true, summary: `memo ${command.command}`, value });
  }

  /**
   * A panel action: a call of the pack's own tool through the pipeline, as the host caller
   * `console`, with the person's arguments under the action's fixed ones. A call that needs approval
   * is asked like any other (this console's inbox shows it) and this request waits for its outcome.
   */
  private async runAction(req: http.IncomingMessage, res: http.ServerResponse, pack: string, panelId: string, actionId: string): Promise<void> {
    const body = await readJson(req);
    if ('error' in body) return this.refuseBody(res, body);
    const panel = this.admin.panels.get(pack, panelId);
    const action = panel?.actions?.find((a) => a.id === actionId);
    const command = panel?.commands?.find((c) => c.id === actionId);
    if (!action && !command) return this.json(res, 404, { error: 'NOT_FOUND', message: `No action ${actionId} in panel ${panelId} of pack ${pack}.` });
    const given = (body.value as { args?: unknown }).args ?? {};
    if (typeof given !== 'object' || given === null || Array.isArray(given))
      return this.json(res, 400, { error: 'BAD_REQUEST', message: '"args" must be a JSON object.' });
    if (!action) return this.runCommand(req, res, pack, command!, given as Record<string, unknown>);
    const stop = new AbortController();
    // A page that goes away cancels its action (and withdraws its approval request).
    res.on('close', () => stop.abort(new Error('the console page went away')));
    const result = await this.admin.invoke(action.tool, { ...given, ...(action.args ?? {}) }, stop.signal);
    return this.json(res, 200, result);
  }

  /**
   * A panel's list: its read tool run as the host caller `console` (the rows the page shows), or,
   * with `rowAction`, one of the row's actions with its arguments taken from the row. Both go through
   * the pipeline; an action that needs approval is asked like any call.
   */
  private async runList(req: http.IncomingMessage, res: http.ServerResponse, pack: string, panelId: string, listId: string, rowAction?: string): Promise<void> {
    const body = await readJson(req);
    if ('error' in body) return this.refuseBody(res, body);
    const list = this.admin.panels.get(pack, panelId)?.lists?.find((l) => l.id === listId);
    if (!list) return this.json(res, 404, { error: 'NOT_FOUND', message: `No list ${listId} in panel ${panelId} of pack ${pack}.` });
    const stop = new AbortController();
    res.on('close', () => stop.abort(new Error('the console page went away')));
    if (rowAction !== undefined) {
      const action = list.rowActions?.find((a) => a.id === rowAction);
      if (!action) return this.json(res, 404, { error: 'NOT_FOUND', message: `The list ${listId} has no action ${rowAction}.` });
      const call = rowActionArgs(action, (body.value as { row?: unknown }).row);
      if ('problem' in call) return this.json(res, 400, { error: 'BAD_REQUEST', message: call.problem });
      return this.json(res, 200, await this.admin.invoke(action.tool, call.args, stop.signal));
    }
    const spec = this.admin.tools().find((t) => t.spec.name === list.tool)?.spec;
    if (!spec) return this.json(res, 409, { error: 'UNAVAILABLE', message: `${list.tool} is not available (its pack is disabled?).` });
    // A list is read when the page is shown: never a call that would ask the person.
    if (spec.effect !== 'read' || spec.danger !== 'safe')
      return this.json(res, 409, { error: 'NOT_A_READ', message: `${list.tool} is not a safe read, so the list does not run it by itself.` });
    const call = listArgs(list, spec, body.value);
    if ('problem' in call) return this.json(res, 400, { error: 'BAD_REQUEST', message: call.problem });
    const result = await this.admin.invoke(list.tool, call.args, stop.signal);
    if (!result.ok) return this.json(res, 200, { ok: false, error: result.error });
    const rows = listRows(list, result.value);
    if (!rows)
      return this.json(res, 200, {
        ok: false,
        error: { code: 'TOOL_FAILED', message: `${list.tool} gave no list${list.rows ? ` under "${list.rows}"` : ''}.` },
      });
    return this.json(res, 200, { ok: true, ...rows });
  }

  private async packChange(req: http.IncomingMessage, res: http.ServerResponse, id: string, change: 'enable' | 'disable' | 'config'): Promise<void> {
    const body = await readJson(req);
    if ('error' in body) return this.refuseBody(res, body);
    const state = this.admin.packs.get(id);
    if (!state) return this.json(res, 404, { error: 'NOT_FOUND', message: `No pack ${id}.` });
    if (change !== 'config') {
      this.options.logger?.info(`console: ${change}d the pack ${id}`);
      return this.committed(res, this.admin.changes.setPackEnabled(id, change === 'enable'), 200, { id, enabled: change === 'enable' });
    }
    const changes = (body.value as { changes?: unknown }).changes;
    if (typeof changes !== 'object' || changes === null || Array.isArray(changes))
      return this.json(res, 400, { error: 'BAD_REQUEST', message: 'Send {"changes": {...}}: the settings to change.' });
    // A masked value sent back unchanged is not a new secret: it is left as it is.
    const real = Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== MASK));
    // Settings that break the pack's schema: a coded error saying which (committed answers 400 with its code).
    const config = this.admin.changes.configurePack(id, real);
    return this.committed(res, config, 200, async () => ({ id, config: maskArgs(await config).masked }));
  }

  private async api(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    route: string,
    method: string,
    session: string,
    expires: number,
    url: URL,
  ): Promise<void> {
    if (method !== 'GET' && method !== 'HEAD' && !/^application\/json\b/i.test(req.headers['content-type'] ?? ''))
      return this.json(res, 415, { error: 'BAD_REQUEST', message: 'Send JSON (Content-Type: application/json).' });
    if (route === '/session' && method === 'GET') return this.json(res, 200, { expiresAt: new Date(expires).toISOString() });
    if (route === '/approvals' && method === 'GET') {
      // With a shared database, the other instances' requests are read before the list is given.
      await this.admin.approvals.sync();
      return this.json(res, 200, this.pendingViews());
    }
    if (route === '/events' && method === 'GET') return this.events(req, res, session);
    if (route === '/reminders' && method === 'GET') {
      const reminders = this.reminders();
      return this.json(res, 200, { available: reminders !== undefined, reminders: reminders ? await reminders.unseen() : [] });
    }
    const reminder = /^\/reminders\/([^/]+)\/dismiss$/.exec(route);
    if (reminder && method === 'POST') {
      const reminders = this.reminders();
      if (!reminders) return this.json(res, 404, { error: 'NOT_FOUND', message: 'The vault pack is not loaded: there are no reminders.' });
      const id = decodeURIComponent(reminder[1]!);
      if (!(await reminders.dismiss(id))) return this.json(res, 404, { error: 'NOT_FOUND', message: 'No such reminder is shown (dismissed already?).' });
      return this.json(res, 200, { id, dismissed: true });
    }
    const answer = /^\/approvals\/([^/]+)$/.exec(route);
    if (answer && method === 'POST') return this.answer(req, res, decodeURIComponent(answer[1]!));
    if ((route === '/audit' || route === '/audit/export') && method === 'GET') {
      const q = auditSearchQuery(url.searchParams);
      if ('problem' in q) return this.json(res, 400, { error: 'BAD_REQUEST', message: `${q.problem}.` });
      if (route === '/audit') return this.json(res, 200, await this.admin.audit.search(q));
      return this.exportAudit(res, q);
    }
    if (route === '/audit/verify' && method === 'POST') return this.json(res, 200, await this.admin.audit.verify());
    if (route === '/packs' && method === 'GET') return this.json(res, 200, this.packViews());
    const pack = /^\/packs\/([^/]+)\/(enable|disable|config)$/.exec(route);
    if (pack && method === 'POST') return this.packChange(req, res, decodeURIComponent(pack[1]!), pack[2] as 'enable' | 'disable' | 'config');
    if (route === '/mcp' && method === 'GET') return this.json(res, 200, this.mcpView());
    if (route === '/sandbox' && method === 'GET') return this.json(res, 200, await this.admin.sandbox());
    if (route === '/mcp/rotate-token' && method === 'POST') {
      const endpoint = this.admin.endpoint();
      if (!endpoint) return this.json(res, 404, { error: 'NOT_FOUND', message: 'No MCP endpoint is attached to this console.' });
      try {
        await this.admin.changes.record({ action: 'token.rotate' });
      } catch (err) {
        return this.json(res, 503, { error: 'AUDIT_UNAVAILABLE', message: (err as Error).message });
      }
      endpoint.rotateToken();
      this.options.logger?.info('console: the MCP token was rotated');
      return this.json(res, 200, {
        rotated: true,
        message: 'The MCP token was rotated: the old one stops working now. The new one is printed where memo serve runs (it never comes to this page).',
      });
    }
    if (route === '/providers' && method === 'GET') {
      const settings = this.options.providers;
      const active = settings.active()?.name;
      // describeProvider masks stored keys and header values: a key is written, never read back.
      // The form is the providers pack's own configure_provider schema (its kinds and presets); none when the pack is off.
      const form = this.admin.tools().find((t) => t.spec.name === 'configure_provider')?.spec.parameters ?? null;
      return this.json(res, 200, { providers: settings.list().map((p) => describeProvider(p, active)), active: active ?? null, form });
    }
    if (route === '/providers' && method === 'POST') {
      const body = await readJson(req);
      if ('error' in body) return this.refuseBody(res, body);
      const r = await saveProvider(this.providerAccess, body.value);
      if ('code' in r) return this.json(res, r.status, { error: r.code, message: r.message });
      this.options.logger?.info(`console: ${r.created ? 'added' : 'updated'} the provider ${String(r.provider.name)}`);
      return this.committed(res, this.options.providers.saved(), r.created ? 201 : 200, r);
    }
    const provider = /^\/providers\/([^/]+)\/(probe|remove)$/.exec(route);
    if (provider && method === 'POST') {
      const name = decodeURIComponent(provider[1]!);
      const body = await readJson(req);
      if ('error' in body) return this.refuseBody(res, body);
      if (provider[2] === 'remove') {
        if (!this.options.providers.get(name)) return this.json(res, 404, { error: 'NOT_FOUND', message: `There is no provider "${name}".` });
        this.options.logger?.info(`console: removed the provider ${name}`);
        return this.committed(res, this.admin.changes.removeProvider(name), 200, () => ({
          removed: name,
          active: this.options.providers.active()?.name ?? null,
        }));
      }
      const stop = new AbortController();
      res.on('close', () => stop.abort(new Error('the console page went away')));
      const r = await probeProvider(this.providerAccess, name, (body.value as { model?: unknown } | null)?.model, stop.signal);
      if ('code' in r) return this.json(res, r.status, { error: r.code, message: r.message });
      return this.json(res, 200, r);
    }
    const use = /^\/providers\/([^/]+)\/use$/.exec(route);
    if (use && method === 'POST') {
      const name = decodeURIComponent(use[1]!);
      if (!this.options.providers.get(name)) return this.json(res, 404, { error: 'NOT_FOUND', message: `There is no provider "${name}".` });
      this.options.logger?.info(`console: the active provider is now ${name}`);
      return this.committed(res, this.admin.changes.useProvider(name), 200, { active: name });
    }
    if (route === '/skills' && method === 'GET')
      return this.json(
        res,
        200,
        this.admin.skills.list().map((k) => ({
          name: k.name,
          source: k.source,
          status: k.status,
          description: k.skill?.description ?? null,
          tools: (k.skill?.tools ?? []).map((t) => t.name),
          ...(k.error ? { error: k.error } : {}),
          ...(k.reloadError ? { reloadError: k.reloadError } : {}),
        })),
      );
    if (route === '/permissions/always-allow' && method === 'POST') {
      const body = await readJson(req);
      if ('error' in body) return this.refuseBody(res, body);
      const on = body as { value?: { on?: unknown } };
      if (typeof on.value?.on !== 'boolean') return this.json(res, 400, { error: 'BAD_REQUEST', message: 'Send {"on": true} or {"on": false}.' });
      // A person's choice, made here as with `memo permissions always-allow`; no tool can reach this.
      this.options.logger?.info(`console: global always-allow turned ${on.value.on ? 'on' : 'off'}`);
      return this.committed(res, this.admin.changes.setAlwaysAllow(on.value.on), 200, { alwaysAllow: on.value.on });
    }
    if (route === '/permissions/external-writes' && method === 'POST') {
      const body = await readJson(req);
      if ('error' in body) return this.refuseBody(res, body);
      const value = (body as { value?: { on?: unknown; client?: unknown } }).value;
      const client = value?.client;
      if (typeof value?.on !== 'boolean' || (client !== undefined && typeof client !== 'string'))
        return this.json(res, 400, {
          error: 'BAD_REQUEST',
          message: 'Send {"on": true} or {"on": false}, with "client": a client name of 1 to 64 characters for one client only.',
        });
      // A person's choice, made here as with `memo permissions external-writes`; no tool can reach this.
      this.options.logger?.info(
        `console: external writes turned ${value.on ? 'on' : 'off'} for ${client === undefined ? 'every external client' : 'one client name'}`,
      );
      const changed = this.admin.changes.setExternalWrites(value.on, client);
      return this.committed(res, changed, 200, async () => ({ externalWrites: await changed }));
    }
    if (route.startsWith('/chat')) return this.chatApi(req, res, route.slice('/chat'.length), method);
    if (route === '/artifact' && method === 'GET') {
      const stop = new AbortController();
      res.on('close', () => stop.abort(new Error('the console page went away')));
      const found = await readArtifact(this.admin, url.searchParams.get('note') ?? '', url.searchParams.get('name') ?? '', stop.signal);
      if ('html' in found) return send(res, 200, found.html, ARTIFACT_HEADERS);
      return this.json(res, found.status, { error: found.code, message: found.message });
    }
    if (route === '/mentions' && method === 'GET') {
      const stop = new AbortController();
      res.on('close', () => stop.abort(new Error('the console page went away')));
      return this.json(res, 200, await searchMentions(this.admin, url.searchParams.get('q') ?? '', this.clock.now(), stop.signal));
    }
    const item = /^\/items\/([^/]+)\/(.+)$/.exec(route);
    if (item && method === 'GET') {
      const stop = new AbortController();
      res.on('close', () => stop.abort(new Error('the console page went away')));
      const view = await itemView(this.admin, decodeURIComponent(item[1]!), decodeURIComponent(item[2]!), this.clock.now(), stop.signal);
      return 'status' in view ? this.json(res, view.status, { error: view.code, message: view.message }) : this.json(res, 200, view);
    }
    if (route === '/panels' && method === 'GET') return this.json(res, 200, this.panelViews());
    const list = /^\/panels\/([^/]+)\/([^/]+)\/lists\/([^/]+)(?:\/actions\/([^/]+))?$/.exec(route);
    if (list && method === 'POST')
      return this.runList(req, res, ...(list.slice(1).map((p) => (p === undefined ? p : decodeURIComponent(p))) as [string, string, string, string?]));
    const action = /^\/panels\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(route);
    if (action && method === 'POST') return this.runAction(req, res, ...(action.slice(1).map(decodeURIComponent) as [string, string, string]));
    if (route === '/permissions' && method === 'GET')
      return this.json(res, 200, {
        decisions: this.admin.permissions.list(this.clock.now()),
        alwaysAllow: this.admin.permissions.alwaysAllow,
        externalWrites: this.admin.permissions.externalWrites,
        problem: this.admin.permissions.problem,
      });
    if (route === '/tools' && method === 'GET')
      return this.json(res, 200, {
        tools: toolRows(this.admin.tools(), this.admin.permissions.list(this.clock.now()), this.admin.permissions.alwaysAllow),
        alwaysAllow: this.admin.permissions.alwaysAllow,
      });
    if (route === '/permissions' && method === 'POST') {
      const body = await readJson(req);
      if ('error' in body) return this.refuseBody(res, body);
      const rule = (body as { value?: { tool?: unknown; decision?: unknown; minutes?: unknown } }).value;
      if (
        typeof rule?.tool !== 'string' ||
        (rule.decision !== 'allow' && rule.decision !== 'deny') ||
        (rule.minutes !== undefined && typeof rule.minutes !== 'number')
      )
        return this.json(res, 400, {
          error: 'BAD_REQUEST',
          message: 'Send {"tool": "<name>", "decision": "allow" or "deny"}, with "minutes": a whole number to allow for that long only.',
        });
      // A person's rule, made here as with `memo permissions allow|deny` and with its limits; no tool can reach this.
      const { tool, decision, minutes } = rule as { tool: string; decision: 'allow' | 'deny'; minutes?: number };
      this.options.logger?.info(`console: stored ${decision} for ${tool}`);
      const saved = decision === 'allow' ? this.admin.changes.allow(tool, minutes) : this.admin.changes.deny(tool);
      return this.committed(res, saved, 201, () => ({
        tool,
        decision,
        decisions: this.admin.permissions.list(this.clock.now()).filter((d) => d.tool === tool),
      }));
    }
    const revoke = /^\/permissions\/([^/]+)\/revoke$/.exec(route);
    if (revoke && method === 'POST') {
      const tool = decodeURIComponent(revoke[1]!);
      if (!this.admin.permissions.list().some((d) => d.tool === tool))
        return this.json(res, 404, { error: 'NOT_FOUND', message: `No stored decision for ${tool}.` });
      this.options.logger?.info(`console: revoked the stored decisions for ${tool}`);
      return this.committed(res, this.admin.changes.revoke(tool), 200, { revoked: tool });
    }
    return this.json(res, 404, { error: 'NOT_FOUND', message: `No ${method} ${CONSOLE_PATH}/api${route}.` });
  }

  /**
   * Chat: `GET /options`, `GET|POST /conversations`, `GET|DELETE /conversations/:id`,
   * `POST /conversations/:id/turns` (starts a turn; its progress comes over the event stream as
   * `chat` events) and `POST /turns/:id/stop`.
   */
  private async chatApi(req: http.IncomingMessage, res: http.ServerResponse, route: string, method: string): Promise<void> {
    const refuse = (r: { status: number; code: string; message: string }) => this.json(res, r.status, { error: r.code, message: r.message });
    if (route === '/options' && method === 'GET') return this.json(res, 200, await this.chat.options());
    if (route === '/conversations' && method === 'GET') return this.json(res, 200, await this.chat.conversations());
    if (route === '/conversations' && method === 'POST') {
      const body = await readJson(req);
      if ('error' in body) return this.refuseBody(res, body);
      return this.json(res, 201, await this.chat.create());
    }
    const conv = /^\/conversations\/([^/]+)(\/turns)?$/.exec(route);
    if (conv && !conv[2] && method === 'GET') {
      const t = await this.chat.transcript(decodeURIComponent(conv[1]!));
      return t ? this.json(res, 200, t) : refuse({ status: 404, code: 'NOT_FOUND', message: 'There is no such conversation.' });
    }
    if (conv && !conv[2] && method === 'DELETE') {
      const refusal = await this.chat.remove(decodeURIComponent(conv[1]!));
      return refusal ? refuse(refusal) : this.json(res, 200, { deleted: true });
    }
    if (conv && conv[2] && method === 'POST') {
      const body = await readJson(req);
      if ('error' in body) return this.refuseBody(res, body);
      const value = typeof body.value === 'object' && body.value !== null && !Array.isArray(body.value) ? body.value : {};
      const r = await this.chat.start(decodeURIComponent(conv[1]!), value);
      return 'code' in r ? refuse(r) : this.json(res, 202, r);
    }
    const stop = /^\/turns\/([^/]+)\/stop$/.exec(route);
    if (stop && method === 'POST') {
      if (!this.chat.stop(decodeURIComponent(stop[1]!))) return refuse({ status: 404, code: 'NOT_RUNNING', message: 'That turn is not running.' });
      return this.json(res, 202, { stopping: true });
    }
    return this.json(res, 404, { error: 'NOT_FOUND', message: `No ${method} ${CONSOLE_PATH}/api/chat${route}.` });
  }

  private async answer(req: http.IncomingMessage, res: http.ServerResponse, id: string): Promise<void> {
    const body = await readJson(req);
    if ('error' in body) return this.refuseBody(res, body);
    const view = this.pendingViews().find((v) => v.id === id);
    const gone = { error: 'NOT_PENDING', message: 'This request is no longer waiting: it was answered, expired or cancelled.' };
    if (!view) return this.json(res, 404, gone);
    if (view.gone)
      return this.json(res, 410, {
        error: 'GONE',
        message: `The instance ${view.instance ?? ''} that asked this is not answering (stopped, or cut off from the database), so it cannot be answered now; if that instance comes back, the request waits again and can be answered then.`,
      });
    if (!view.answerable)
      return this.json(res, 409, {
        error: 'NOT_ANSWERABLE',
        message: `${view.tool} was asked by a memo tools call at its own terminal; it can be answered only there.`,
      });
    // The revision the page showed: a request edited since (elsewhere) is a new one to look at, not the one answered.
    const shown = (body.value as { revision?: unknown } | null)?.revision;
    if (shown !== undefined && shown !== view.revision)
      return this.json(res, 409, {
        error: 'REVISION_CHANGED',
        message: `This ${view.tool} request was edited since it was shown (now revision ${view.revision}): nothing was answered. Look at it again.`,
      });
    const reply = consoleReply(body.value, view);
    if ('code' in reply) return this.json(res, 400, { error: reply.code, message: reply.message });
    // With a shared database, two people may answer on two instances at once: exactly one answer counts.
    const given = await this.admin.approvals.answer(id, reply.reply);
    if (!given.ok) return this.json(res, refusalStatus(given.code), { error: given.code, message: given.message });
    return this.json(res, 200, { id, tool: view.tool, reply: typeof reply.reply === 'string' ? reply.reply : 'edit' });
  }

  /**
   * Server-sent events: `pending` (every waiting request) first, then `asked` and `settled` as the
   * broker reports them, the audit tail, the chat, and `reminder` for each reminder the vault
   * delivers. The stream ends when the session does (logout or expiry).
   */
  private events(req: http.IncomingMessage, res: http.ServerResponse, session: string): void {
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      'X-Accel-Buffering': 'no',
      ...this.headers,
    });
    const write = (name: string, data: unknown) => {
      if (this.auth.expiry(session) === undefined) return end();
      res.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
    };
    const heartbeat = setInterval(() => {
      if (this.auth.expiry(session) === undefined) return end();
      res.write(': keep-alive\n\n');
    }, HEARTBEAT_MS);
    heartbeat.unref();
    // At the session's expiry the stream ends, and with it this console's watch of the broker.
    const expires = this.auth.expiry(session) ?? this.clock.now();
    const expiry = this.clock.setTimeout(() => end(), Math.max(0, expires - this.clock.now()));
    const unwatchAudit = this.watchAudit((entries) => write('audit', entries));
    const unwatchSettings = this.watchSettings((changed) => write('settings', { changed }));
    const unwatchChat = this.chat.subscribe((data, name) => write(name, data));
    // Each reminder as the vault delivers it (the page shows it, and a system notification when the tab is hidden).
    const unwatchReminders = this.reminders()?.subscribe((notice) => write('reminder', notice)) ?? (() => undefined);
    const end = () => {
      clearInterval(heartbeat);
      unwatchAudit();
      unwatchSettings();
      unwatchChat();
      unwatchReminders();
      this.clock.clearTimeout(expiry);
      listening.dispose();
      this.streams.delete(end);
      if (this.streams.size === 0) {
        this.chatWatch?.dispose();
        this.chatWatch = undefined;
      }
      if (!res.writableEnded) res.end();
    };
    this.streams.set(end, session);
    // One watch of the broker for the chat while any page is open (the streams' own watches already make it attended).
    this.chatWatch ??= this.admin.approvals.onChange((event) => this.chat.noteApproval(event));
    req.on('close', end);
    const listening: Disposable = this.admin.approvals.onChange((event) => {
      const { name, data } = eventData(event);
      write(name, name === 'asked' ? this.withCountdown(data as ConsoleApprovalView) : data);
    });
    write('pending', this.pendingViews());
  }
}
