/**
 * The linked device's connection: one Baileys socket at a time, its events applied to the store in
 * the batches Baileys' event buffer consolidates, its credentials saved as they change, and a
 * reconnect (with backoff) whenever the socket drops for any reason but a logout.
 *
 * The socket comes from a SocketMaker: Baileys' own makeWASocket normally; a host app (or a test)
 * may offer another under the shared token `whatsapp.socket` (a socket behind a proxy, or a fake
 * that records what would be sent). Whatever makes it, the events go through Baileys' event buffer.
 */
import type { AuthenticationState, BaileysEventMap, WAMessage, WAMessageKey } from 'baileys';
import type { Logger } from 'memo-kernel/pack';
import type { AuthStore } from './auth-store.js';
import type { WhatsAppStore } from './store.js';

/** The part of Baileys' socket this pack uses. */
export interface WhatsAppSocket {
  ev: {
    /** Baileys' event buffer: batches of consolidated events. Returns the unsubscribe function. */
    process(handler: (events: Partial<BaileysEventMap>) => void | Promise<void>): () => void;
  };
  user?: { id: string; lid?: string; name?: string } | undefined;
  sendMessage(jid: string, content: { text: string }): Promise<WAMessage | undefined>;
  requestPairingCode(phoneNumber: string): Promise<string>;
  /** Which of these numbers have WhatsApp, as the JIDs WhatsApp knows them by (Baileys' usync query). */
  onWhatsApp?(...phoneNumbers: string[]): Promise<Array<{ jid: string; exists: unknown }> | undefined>;
  logout(reason?: string): Promise<void>;
  end(error: Error | undefined): void;
}

export interface SocketOptions {
  auth: AuthenticationState;
  /** How the device presents itself to the phone (Baileys' browser description), also part of the pairing QR. */
  browser: [string, string, string];
  /** Baileys' pino-shaped logger (warnings only, as plain sentences). */
  logger: BaileysLogger;
  /** The text of a message this device sent, for Baileys' resend-on-retry. */
  getMessage(key: WAMessageKey): Promise<{ conversation: string } | undefined>;
}

export type SocketMaker = (options: SocketOptions) => WhatsAppSocket | Promise<WhatsAppSocket>;

export type ConnectionState = 'stopped' | 'connecting' | 'waiting-for-pairing' | 'open' | 'closed' | 'logged-out';

export interface BaileysLogger {
  level: string;
  child(obj: Record<string, unknown>): BaileysLogger;
  trace(obj: unknown, msg?: string): void;
  debug(obj: unknown, msg?: string): void;
  info(obj: unknown, msg?: string): void;
  warn(obj: unknown, msg?: string): void;
  error(obj: unknown, msg?: string): void;
}

/**
 * Baileys logs objects that can hold keys, message content and JIDs. Only its sentences reach
 * Memo's log, and only warnings and errors; the objects never do.
 */
export function quietLogger(logger: Logger): BaileysLogger {
  const say = (level: 'warn' | 'error') => (obj: unknown, msg?: string) => {
    const text = typeof obj === 'string' ? obj : msg;
    if (text) logger[level](`whatsapp: ${text.slice(0, 200)}`);
  };
  const self: BaileysLogger = {
    level: 'warn',
    child: () => self,
    trace: () => {},
    debug: () => {},
    info: () => {},
    warn: say('warn'),
    error: say('error'),
  };
  return self;
}

/** Baileys' DisconnectReason values this pack acts on. */
const LOGGED_OUT = 401;
const RESTART_REQUIRED = 515;
const CONNECTION_REPLACED = 440;
/** What the phone lists under Linked devices (Baileys' Browsers.ubuntu('Memo'), written out to avoid loading Baileys here). */
const BROWSER: [string, string, string] = ['Ubuntu', 'Memo', '22.04.4'];
/** Baileys' other DisconnectReason codes, in words for the person (a code alone says little). */
const REASONS: Record<number, string> = {
  408: 'WhatsApp could not be reached, or stopped answering',
  411: 'the multi-device protocol versions disagree',
  428: 'WhatsApp closed it',
  500: 'the session is broken',
  503: 'WhatsApp is unavailable',
  515: 'WhatsApp asked for a restart',
};

export interface ConnectionEvents {
  /** A pairing QR's text (a new one every ~20 s while unpaired). */
  qr?(qr: string): void;
  state?(state: ConnectionState, detail?: string): void;
  /** A history sync phase finished (Baileys' messaging-history.status). */
  historyDone?(): void;
}

export class WhatsAppConnection {
  private socket: WhatsAppSocket | null = null;
  private unsubscribe: (() => void) | null = null;
  private timer: NodeJS.Timeout | null = null;
  private attempts = 0;
  private stopped = false;
  private listeners = new Set<ConnectionEvents>();
  private _state: ConnectionState = 'stopped';
  private _detail: string | undefined;
  /** Applying one batch at a time keeps the store's transactions in the order Baileys emitted them. */
  private applying: Promise<void> = Promise.resolve();

  constructor(
    private readonly make: SocketMaker,
    private readonly auth: () => Promise<AuthStore>,
    private readonly store: () => Promise<WhatsAppStore>,
    private readonly logger: Logger,
    private readonly onLoggedOut: () => void,
  ) {}

  get state(): ConnectionState {
    return this._state;
  }

  /** Why the connection is not open, in a sentence (never a key or a message). */
  get detail(): string | undefined {
    return this._detail;
  }

  /** Stopped for good (stop(), a logout, or another session took over): it will not reconnect. */
  get finished(): boolean {
    return this.stopped;
  }

  get account(): { id: string; lid?: string; name?: string } | null {
    return this.socket?.user ?? null;
  }

  on(events: ConnectionEvents): () => void {
    this.listeners.add(events);
    return () => this.listeners.delete(events);
  }

  async start(): Promise<void> {
    this.stopped = false;
    await this.open();
  }

  /** Sends a text; the caller has resolved and previewed the recipient. */
  async send(jid: string, text: string): Promise<WAMessage | undefined> {
    if (this._state !== 'open' || !this.socket) throw new Error('not connected');
    return this.socket.sendMessage(jid, { text });
  }

  /**
   * Whether WhatsApp knows a phone number's JID, and as which JID (it can differ from the number as
   * written, e.g. a mobile prefix WhatsApp drops); null when this socket cannot ask.
   */
  async lookup(jid: string): Promise<{ exists: boolean; jid: string | null } | null> {
    if (this._state !== 'open' || !this.socket?.onWhatsApp) return null;
    const found = (await this.socket.onWhatsApp(jid)) ?? [];
    const hit = found.find((r) => !!r.exists);
    return hit ? { exists: true, jid: hit.jid } : { exists: false, jid: null };
  }

  async requestPairingCode(digits: string): Promise<string> {
    if (!this.socket) throw new Error('not connected');
    return this.socket.requestPairingCode(digits);
  }

  /** Tells WhatsApp to drop this linked device, then stops. */
  async logout(): Promise<void> {
    const s = this.socket;
    this.stopped = true;
    if (s && this._state === 'open') await s.logout('Unlinked from Memo').catch(() => {});
    await this.stop();
  }

  /** Waits for the batches already handed over to be applied. */
  settled(): Promise<void> {
    return this.applying;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.close();
    await this.applying;
    this.setState('stopped');
  }

  private setState(state: ConnectionState, detail?: string): void {
    this._state = state;
    this._detail = detail;
    for (const l of this.listeners) l.state?.(state, detail);
  }

  private close(): void {
    const s = this.socket;
    this.unsubscribe?.();
    this.unsubscribe = null;
    this.socket = null;
    try {
      s?.end(undefined);
    } catch {
      // already closed
    }
  }

  private async open(): Promise<void> {
    this.close();
    this.setState('connecting');
    const auth = await this.auth();
    const store = await this.store();
    const socket = await this.make({
      auth: auth.state,
      browser: BROWSER,
      logger: quietLogger(this.logger),
      getMessage: async (key) => {
        const row = key.remoteJid && key.id && key.fromMe ? await store.messageByKey(key.remoteJid, key.id, true) : null;
        return row?.text ? { conversation: row.text } : undefined;
      },
    });
    if (this.stopped) {
      socket.end(undefined);
      return;
    }
    this.socket = socket;
    this.unsubscribe = socket.ev.process((events) => {
      // Handled in order, each batch after the one before; a failure is logged, never thrown into Baileys.
      const work = this.applying.then(() => this.handle(socket, events, auth, store));
      this.applying = work.catch((err: unknown) => this.logger.warn(`whatsapp: could not apply events: ${(err as Error)?.message ?? String(err)}`));
      return this.applying;
    });
  }

  private async handle(socket: WhatsAppSocket, events: Partial<BaileysEventMap>, auth: AuthStore, store: WhatsAppStore): Promise<void> {
    if (events['creds.update']) await auth.saveCreds();
    await store.apply(events);
    if (events['messaging-history.status']) for (const l of this.listeners) l.historyDone?.();
    const update = events['connection.update'];
    if (!update || socket !== this.socket) return;
    if (update.qr) {
      this.setState('waiting-for-pairing');
      for (const l of this.listeners) l.qr?.(update.qr);
    }
    if (update.connection === 'open') {
      this.attempts = 0;
      this.setState('open');
    }
    if (update.connection === 'close') {
      const code = (update.lastDisconnect?.error as { output?: { statusCode?: number } } | undefined)?.output?.statusCode;
      this.close();
      if (code === LOGGED_OUT) {
        this.stopped = true;
        this.onLoggedOut();
        this.setState('logged-out', 'The phone unlinked this device (or WhatsApp logged it out). Run `memo whatsapp link` to link it again.');
        return;
      }
      if (code === CONNECTION_REPLACED) {
        this.stopped = true;
        this.setState('closed', 'Another Memo (or another session of this device) took over the connection; this one stopped.');
        return;
      }
      if (this.stopped) return;
      // 515 after pairing: WhatsApp wants a fresh socket with the new credentials, at once.
      this.reconnect(
        code === RESTART_REQUIRED ? 0 : undefined,
        `The connection dropped (${REASONS[code ?? 0] ?? 'no reason given'}${code ? `, ${code}` : ''})`,
      );
    }
  }

  /** Opens a new socket after `delay` (default: backing off from 1 s to 60 s), and again if that fails. */
  private reconnect(delay: number | undefined, why: string): void {
    const wait = delay ?? Math.min(60_000, 1000 * 2 ** Math.min(this.attempts, 6));
    this.attempts++;
    this.setState('closed', `${why}; reconnecting in ${Math.round(wait / 1000)} s.`);
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.stopped) return;
      this.open().catch((err: unknown) => {
        const message = (err as Error)?.message ?? String(err);
        this.logger.warn(`whatsapp: reconnecting failed: ${message}`);
        if (!this.stopped) this.reconnect(undefined, `Reconnecting failed (${message})`);
      });
    }, wait);
    this.timer.unref();
  }
}
