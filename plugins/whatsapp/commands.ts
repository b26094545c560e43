/**
 * `memo whatsapp link|status|unlink`, for people. Linking is the person's act, not a tool's: no
 * agent can link a phone or read the pairing QR. `link` runs a connection in this process until the
 * phone has paired (the QR codes come from Baileys' own connection.update events; with --phone, a
 * pairing code from Baileys' requestPairingCode), lets the first history sync arrive, then stops:
 * `memo serve` keeps the connection afterwards.
 */
import { commandDone as done, commandGuarded as guarded, MemoError, type PackApi } from 'memo-kernel/pack';
import { linkedAccount } from './auth-store.js';
import type { ConnectionState, WhatsAppConnection } from './connection.js';
import { phoneDigits, phoneOf, normalizeJid } from './jid.js';
import type { WhatsAppRuntime } from './runtime.js';

type PackCommand = Parameters<PackApi['commands']['register']>[0];
type Ctx = Parameters<PackCommand['subcommands'][number]['run']>[0];

/** The QR as terminal art (Baileys gives the text; qrcode draws it), small enough for an 80-column terminal. */
export async function qrForTerminal(qr: string): Promise<string> {
  const { default: QRCode } = await import('qrcode');
  return QRCode.toString(qr, { type: 'terminal', small: true });
}

function accountText(dataDir: string): { number: string | null; name: string | null } | null {
  const me = linkedAccount(dataDir);
  return me ? { number: phoneOf(normalizeJid(me.id)), name: me.name ?? null } : null;
}

function seconds(value: unknown, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new MemoError('VALIDATION', `${name} must be a number of seconds.`);
  return n;
}

const SCAN = 'Scan with the phone: WhatsApp > Settings > Linked devices > Link a device. (A new code appears every ~20 s.)';

async function link(rt: WhatsAppRuntime, ctx: Ctx): Promise<number> {
  if (rt.linked()) {
    const me = accountText(rt.dataDir);
    throw new MemoError(
      'CONFLICT',
      `WhatsApp is already linked here (${me?.name ?? ''} ${me?.number ?? ''}). Run \`memo whatsapp unlink\` first to link another phone.`,
    );
  }
  const phone = typeof ctx.options.phone === 'string' ? phoneDigits(ctx.options.phone) : null;
  if (rt.linkingElsewhere()) throw new MemoError('CONFLICT', 'Another `memo whatsapp link` is running on this data folder; finish or stop it first.');
  if (ctx.options.phone !== undefined && !phone)
    throw new MemoError('VALIDATION', '--phone needs the phone number with its country code, e.g. --phone "+49 170 1234567".');
  const timeoutMs = seconds(ctx.options.timeout, 180, '--timeout') * 1000;
  const historyMs = seconds(ctx.options.historyWait, 60, '--history-wait') * 1000;
  const json = !!ctx.options.json;
  // On the audit trail before anything is asked of WhatsApp: a person links a phone (the number masked to its last digits).
  await ctx.record({ action: 'whatsapp.link', ...(phone ? { change: { phone: `…${phone.slice(-4)}` } } : {}) });
  // Lines go out in the order things happened, though drawing a QR takes a moment.
  let printing = Promise.resolve();
  const say = (line: unknown) => {
    const next = printing.then(async () => ctx.print(await line));
    printing = next.catch(() => undefined);
  };
  let codeAsked = false;
  let lastProblem: string | undefined;
  let conn: WhatsAppConnection | null = null;
  let finish: (r: { state: ConnectionState; detail?: string }) => void = () => {};
  const paired = new Promise<{ state: ConnectionState; detail?: string }>((resolve) => {
    // Whichever way the wait ends without a phone, the last connection problem is named with it.
    const last = () => (lastProblem ? ` (last: ${lastProblem.replace(/\.$/, '')})` : '');
    const timer = setTimeout(() => finish({ state: 'closed', detail: `No phone paired within ${timeoutMs / 1000} s${last()}.` }), timeoutMs);
    finish = (r) => {
      clearTimeout(timer);
      resolve(r);
    };
    ctx.signal.addEventListener('abort', () => finish({ state: 'stopped', detail: `Stopped before a phone paired${last()}.` }), { once: true });
  });
  const onQr = (qr: string) => {
    if (phone) {
      // The socket is ready for pairing once it offers a QR: ask for a code instead, once.
      const c = rt.connection;
      if (codeAsked || !c) return;
      codeAsked = true;
      void c.requestPairingCode(phone).then(
        (code) => {
          const shown = code.length === 8 ? `${code.slice(0, 4)}-${code.slice(4)}` : code;
          say(
            json
              ? { event: 'pairing-code', code: shown }
              : `Pairing code for +${phone}: ${shown}\nOn the phone: WhatsApp > Settings > Linked devices > Link a device > Link with phone number instead, then enter the code.`,
          );
        },
        (err: unknown) => finish({ state: 'closed', detail: `WhatsApp refused the pairing code request: ${(err as Error)?.message ?? String(err)}` }),
      );
      return;
    }
    say(json ? { event: 'qr', qr } : qrForTerminal(qr).then((art) => `${art}\n${SCAN}`));
  };
  const unmark = rt.markLinking();
  try {
    conn = await rt.connect({
      qr: onQr,
      state: (state, detail) => {
        if (state === 'open' || state === 'logged-out' || (state === 'closed' && detail?.includes('took over')))
          finish({ state, ...(detail ? { detail } : {}) });
        else if (state === 'closed' && detail) {
          // Unreachable servers and dropped sockets are retried; say so rather than wait in silence.
          lastProblem = detail;
          say(json ? { event: 'connection', state, detail } : detail);
        }
      },
    });
    const outcome = await paired;
    if (outcome.state !== 'open')
      throw new MemoError('TOOL_FAILED', `${outcome.detail ?? 'The phone did not pair.'} Nothing was linked; run \`memo whatsapp link\` again.`);
    const me = accountText(rt.dataDir);
    say(
      json ? { event: 'linked', ...me } : `Linked to WhatsApp as ${me?.name ?? ''} ${me?.number ?? ''}. Receiving the recent history…`.replace(/ {2,}/g, ' '),
    );
    // The phone sends the recent history right after pairing: wait for it (or a quiet spell) before stopping.
    if (historyMs > 0)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(finish, historyMs);
        timer.unref();
        const off = conn!.on({ historyDone: finish });
        ctx.signal.addEventListener('abort', finish, { once: true });
        function finish() {
          clearTimeout(timer);
          off();
          resolve();
        }
      });
    await conn.settled();
    await printing;
    const counts = await (await rt.history()).counts();
    return done(
      ctx,
      { linked: true, ...me, history: counts },
      `History so far: ${counts.chats} chats, ${counts.messages} messages. Keep \`memo serve\` running to receive new messages.`,
    );
  } finally {
    finish({ state: 'stopped' });
    await rt.disconnect();
    unmark();
  }
}

export function whatsappCommand(rt: WhatsAppRuntime): PackCommand {
  return {
    name: 'whatsapp',
    description: 'WhatsApp: link a phone (QR or pairing code), show the link and history, unlink',
    subcommands: [
      {
        name: 'link',
        description: 'link this Memo to a phone as a WhatsApp linked device: shows a QR to scan, or with --phone a pairing code',
        options: [
          { flags: '--phone <number>', description: 'get an 8-character pairing code for this number (with country code) instead of a QR' },
          { flags: '--timeout <seconds>', description: 'give up when no phone has paired after this long (default 180)' },
          { flags: '--history-wait <seconds>', description: 'after pairing, wait this long at most for the first history sync (default 60)' },
          { flags: '--json', description: 'print JSON lines (the QR as text, not art)' },
        ],
        run: (ctx) => guarded(ctx, () => link(rt, ctx)),
      },
      {
        name: 'status',
        description: 'whether a phone is linked, the connection in this process, and the size of the local history',
        options: [{ flags: '--json', description: 'print JSON' }],
        run: (ctx) =>
          guarded(ctx, async () => {
            const me = rt.linked() ? accountText(rt.dataDir) : null;
            const counts = await (await rt.history()).counts();
            const connection = rt.connection ? { state: rt.connection.state, ...(rt.connection.detail ? { detail: rt.connection.detail } : {}) } : null;
            const text = [
              me ? `Linked as ${me.name ?? '(no name)'} ${me.number ?? ''}`.trim() : 'Not linked (memo whatsapp link links a phone).',
              connection
                ? `Connection: ${connection.state}${connection.detail ? ` (${connection.detail})` : ''}`
                : 'Connection: runs in memo serve (not in this process).',
              `History: ${counts.chats} chats, ${counts.messages} messages, ${counts.contacts} contacts.`,
            ].join('\n');
            return done(ctx, { linked: !!me, account: me, connection, history: counts }, text);
          }),
      },
      {
        name: 'unlink',
        description: 'unlink this device: logs out of WhatsApp (when it can reach it) and deletes the stored credentials; the local history stays',
        options: [{ flags: '--json', description: 'print JSON' }],
        run: (ctx) =>
          guarded(ctx, async () => {
            if (!rt.linked()) throw new MemoError('NOT_FOUND', 'No phone is linked here.');
            await ctx.record({ action: 'whatsapp.unlink' });
            let loggedOut = false;
            // Tell WhatsApp to drop the device when the connection is up (here, or opened briefly for this).
            const conn = rt.connection ?? (await rt.connect());
            if (conn.state !== 'open')
              await new Promise<void>((resolve) => {
                const timer = setTimeout(finish, 15_000);
                const off = conn.on({ state: (s) => (s === 'open' || s === 'logged-out' ? finish() : undefined) });
                function finish() {
                  clearTimeout(timer);
                  off();
                  resolve();
                }
              });
            if (conn.state === 'open') {
              await conn.logout();
              loggedOut = true;
            }
            await rt.disconnect();
            rt.forgetCredentials();
            return done(
              ctx,
              { unlinked: true, loggedOut },
              loggedOut
                ? 'Unlinked: WhatsApp dropped this device and its credentials are deleted. The local history stays.'
                : 'Deleted the stored credentials. WhatsApp could not be reached to drop the device: remove it on the phone (Linked devices). The local history stays.',
            );
          }),
      },
    ],
  };
}
