import type { PackApi } from '../../../kernel/packs/pack-api.js';
import type { PackDefinition } from '../../../kernel/tools/tool-registry.js';
/**
 * WhatsApp's edge of the world, faked: a socket whose events go through Baileys' real event buffer
 * (makeEventBuffer) and Baileys' real message processing (processMessage: edits, deletes, history
 * sync notifications decoded from an inline HistorySync payload by processHistoryMessage), exactly
 * as Baileys' own socket feeds them after decrypting. Only the network is missing: `sendMessage`
 * records what would be transmitted and echoes it back the way Baileys does (an `append` upsert).
 */
import { randomBytes } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import {
  buildPairingQRData,
  bytesToCrockford,
  configureSuccessfulPairing,
  Curve,
  hmacSign,
  initAuthCreds,
  makeEventBuffer,
  proto,
  WA_ADV_ACCOUNT_SIG_PREFIX,
  type BaileysEventMap,
  type BinaryNode,
  type WAMessage,
} from 'baileys';
import processMessage from 'baileys/lib/Utils/process-message.js';
import type { SocketMaker, SocketOptions, WhatsAppSocket } from '../../../plugins/whatsapp/connection.js';

const silent = {
  level: 'silent',
  child() {
    return silent;
  },
  trace() {},
  debug() {},
  info() {},
  warn() {},
  error() {},
};

export const ME = '491700000001@s.whatsapp.net';
export const ME_LID = '90000000001@lid';

let counter = 0;
export const msgId = () => `3EB0${(++counter).toString(16).padStart(12, '0').toUpperCase()}`;

export class FakeSocket implements WhatsAppSocket {
  readonly ev = makeEventBuffer(silent);
  readonly sent: Array<{ jid: string; content: { text: string } }> = [];
  readonly pairingCodes: string[] = [];
  /** Numbers (digits) WhatsApp does not know, and numbers it knows under another JID. */
  readonly notOnWhatsApp = new Set<string>();
  readonly knownAs = new Map<string, string>();
  ended = false;
  loggedOut = false;
  user: { id: string; lid?: string; name?: string } | undefined;
  private pending = new Set<Promise<void>>();
  private readonly process_ = this.ev.process.bind(this.ev);

  constructor(readonly options: SocketOptions) {
    // The connection's handler is wrapped so a test can wait until every batch is applied.
    (this.ev as { process: WhatsAppSocket['ev']['process'] }).process = (handler) =>
      this.process_(async (events) => {
        const p = Promise.resolve(handler(events));
        this.pending.add(p);
        try {
          await p;
        } finally {
          this.pending.delete(p);
        }
      });
  }

  /** Releases buffered events and waits until the pack has applied them. */
  async settle(): Promise<void> {
    this.ev.flush();
    for (let i = 0; i < 5; i++) {
      await Promise.all([...this.pending]);
      await new Promise((r) => setImmediate(r));
    }
  }

  emit<E extends keyof BaileysEventMap>(event: E, data: BaileysEventMap[E]): void {
    this.ev.emit(event, data);
  }

  /** What Baileys' socket does with a QR ref from the server: its own buildPairingQRData over this device's keys. */
  showQr(ref = '2@Yx9ref'): string {
    const { creds } = this.options.auth;
    const qr = buildPairingQRData(
      ref,
      Buffer.from(creds.noiseKey.public).toString('base64'),
      Buffer.from(creds.signedIdentityKey.public).toString('base64'),
      creds.advSecretKey,
      this.options.browser,
    );
    this.emit('connection.update', { qr });
    return qr;
  }

  /**
   * The phone scans the QR: WhatsApp's pair-success stanza, signed as a phone signs it (an account key
   * over the device identity, an HMAC with this device's ADV secret), goes through Baileys' own
   * configureSuccessfulPairing; the credentials it returns are emitted as Baileys emits them, and the
   * server then asks for a restart (515), as it does after every pairing.
   */
  pair(options: { advSecret?: string } = {}): void {
    const number = ME.split('@')[0]!;
    const lid = ME_LID.split('@')[0]!;
    const { creds } = this.options.auth;
    const account = Curve.generateKeyPair();
    const deviceDetails = proto.ADVDeviceIdentity.encode({ rawId: 7, timestamp: 1767225600, keyIndex: 1 }).finish();
    const accountSignature = Curve.sign(account.private, Buffer.concat([WA_ADV_ACCOUNT_SIG_PREFIX, deviceDetails, creds.signedIdentityKey.public]));
    const details = proto.ADVSignedDeviceIdentity.encode({ details: deviceDetails, accountSignatureKey: account.public, accountSignature }).finish();
    const hmac = hmacSign(details, Buffer.from(options.advSecret ?? creds.advSecretKey, 'base64'));
    const stanza: BinaryNode = {
      tag: 'iq',
      attrs: { id: 'pair-1', from: 's.whatsapp.net', type: 'set' },
      content: [
        {
          tag: 'pair-success',
          attrs: {},
          content: [
            { tag: 'device-identity', attrs: { 'key-index': '1' }, content: proto.ADVSignedDeviceIdentityHMAC.encode({ details, hmac }).finish() },
            { tag: 'platform', attrs: { name: 'android' } },
            { tag: 'device', attrs: { jid: `${number}:7@s.whatsapp.net`, lid: `${lid}:7@lid` } },
          ],
        },
      ],
    };
    let update: Partial<typeof creds>;
    try {
      update = configureSuccessfulPairing(stanza, creds).creds;
    } catch (err) {
      // What Baileys' socket does when the check fails: it ends the connection with that error.
      this.emit('connection.update', { connection: 'close', lastDisconnect: { error: err as Error, date: new Date() } });
      return;
    }
    Object.assign(creds, update);
    this.emit('creds.update', update);
    this.emit('connection.update', { isNewLogin: true });
    this.close(515);
  }

  /** A socket on linked credentials comes up (after the restart that follows pairing, or on a reconnect). */
  open(): void {
    const me = this.options.auth.creds.me;
    if (!me) throw new Error('open() needs linked credentials: pair() first');
    this.user = me;
    this.emit('connection.update', { connection: 'open' });
  }

  close(statusCode: number): void {
    this.emit('connection.update', {
      connection: 'close',
      lastDisconnect: { error: Object.assign(new Error('closed'), { output: { statusCode } }), date: new Date() },
    });
  }

  /** A message arrives, as Baileys' upsertMessage hands it on after decryption (buffered, with processMessage). */
  async receive(msg: WAMessage, type: 'notify' | 'append' = 'notify'): Promise<void> {
    const upsert = this.ev.createBufferedFunction(async (m: WAMessage) => {
      this.ev.emit('messages.upsert', { messages: [m], type });
      if (m.pushName && !m.key.fromMe) this.ev.emit('contacts.update', [{ id: m.key.participant || m.key.remoteJid!, notify: m.pushName }]);
      await processMessage(m, {
        shouldProcessHistoryMsg: true,
        placeholderResendCache: undefined,
        ev: this.ev,
        creds: { ...initAuthCreds(), me: { id: ME, name: 'Deniz' } },
        signalRepository: {
          lidMapping: { storeLIDPNMappings: () => Promise.resolve(), getLIDForPN: () => Promise.resolve(null), getPNForLID: () => Promise.resolve(null) },
        } as never,
        keyStore: { get: () => Promise.resolve({}), set: () => Promise.resolve() } as never,
        logger: silent,
        options: {},
        getMessage: () => Promise.resolve(undefined),
      } as never);
    });
    await upsert(msg);
    await this.settle();
  }

  /** A history sync chunk from the phone: a HistorySync proto, deflated inline into a HISTORY_SYNC_NOTIFICATION, as the phone sends the first one. */
  async historySync(sync: proto.IHistorySync, chunkOrder = 1): Promise<void> {
    const payload = deflateSync(proto.HistorySync.encode(proto.HistorySync.fromObject(sync)).finish());
    await this.receive({
      key: { remoteJid: ME, fromMe: true, id: msgId() },
      messageTimestamp: 1767225600,
      message: {
        protocolMessage: {
          type: proto.Message.ProtocolMessage.Type.HISTORY_SYNC_NOTIFICATION,
          historySyncNotification: {
            syncType: sync.syncType ?? proto.HistorySync.HistorySyncType.RECENT,
            chunkOrder,
            progress: sync.progress ?? 100,
            initialHistBootstrapInlinePayload: payload,
          },
        },
      },
    });
  }

  sendMessage(jid: string, content: { text: string }): Promise<WAMessage> {
    this.sent.push({ jid, content });
    const msg = {
      key: { remoteJid: jid, fromMe: true, id: msgId() },
      message: { extendedTextMessage: { text: content.text } },
      messageTimestamp: Math.floor(Date.now() / 1000),
    } as WAMessage;
    // Baileys emits what it sent as an `append` upsert (emitOwnEvents).
    this.ev.emit('messages.upsert', { messages: [msg], type: 'append' });
    return Promise.resolve(msg);
  }

  onWhatsApp(...jids: string[]): Promise<Array<{ jid: string; exists: boolean }>> {
    // Like Baileys: only the numbers WhatsApp has come back, each as the JID WhatsApp uses.
    const digits = jids.map((j) => j.split('@')[0]!.replace('+', ''));
    return Promise.resolve(digits.filter((d) => !this.notOnWhatsApp.has(d)).map((d) => ({ jid: this.knownAs.get(d) ?? `${d}@s.whatsapp.net`, exists: true })));
  }

  requestPairingCode(phone: string): Promise<string> {
    // As Baileys' requestPairingCode: a code from its own Crockford encoding of 5 random bytes, recorded
    // with the number it pairs as in the credentials before it is sent to the server.
    const code = bytesToCrockford(randomBytes(5));
    this.options.auth.creds.pairingCode = code;
    this.options.auth.creds.me = { id: `${phone}@s.whatsapp.net`, name: '~' };
    this.emit('creds.update', this.options.auth.creds);
    this.pairingCodes.push(phone);
    return Promise.resolve(code);
  }

  logout(): Promise<void> {
    this.loggedOut = true;
    this.close(401);
    return Promise.resolve();
  }

  end(): void {
    this.ended = true;
  }
}

/** A socket maker that hands out FakeSockets and keeps them, newest last. */
export function fakeMaker(): { make: SocketMaker; sockets: FakeSocket[]; last(): FakeSocket; failNext(n: number): void } {
  const sockets: FakeSocket[] = [];
  let failures = 0;
  return {
    sockets,
    failNext: (n) => (failures = n),
    make: (options) => {
      if (failures > 0) {
        failures--;
        throw new Error('the socket could not be made');
      }
      const s = new FakeSocket(options);
      sockets.push(s);
      return s;
    },
    last() {
      const s = sockets[sockets.length - 1];
      if (!s) throw new Error('no socket was made');
      return s;
    },
  };
}

/**
 * A host pack that offers `servers`' fake socket to the WhatsApp pack (WhatsApp's servers are the
 * edge of the world; Baileys' QR and pairing run for real): for kernels made with `packs: [...]`.
 */
export function fakeWhatsAppHost(servers: ReturnType<typeof fakeMaker>): PackDefinition {
  return {
    id: 'fake-whatsapp-host',
    version: '1.0.0',
    tools: [],
    activate: (api: PackApi) => api.provide('whatsapp.socket', servers.make),
  };
}
