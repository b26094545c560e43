/**
 * Linking a phone from the web console, inside `memo serve`. Linking is the person's act, never a
 * tool's: this is a subcommand the console's WhatsApp panel runs for the logged-in person (a panel
 * command, which no agent or MCP client can reach). The first run opens the connection here and
 * answers with the newest pairing QR as a PNG; each later run answers with the QR of that moment
 * (Baileys gives a new one every ~20 s). Once the phone pairs, the connection simply stays open:
 * it is the one `memo serve` keeps. Unpaired after 3 minutes, it is closed.
 */
import { commandDone as done, commandGuarded as guarded, MemoError, type PackApi } from 'memo-kernel/pack';
import { linkedAccount } from './auth-store.js';
import { normalizeJid, phoneOf } from './jid.js';
import type { WhatsAppRuntime } from './runtime.js';

type PackSubcommand = Parameters<PackApi['commands']['register']>[0]['subcommands'][number];

/** How long one run waits for the first QR. */
const QR_WAIT_MS = 30_000;
/** How long a console link stays open without a phone pairing. */
const LINK_WINDOW_MS = 180_000;

const SCAN = 'Scan with the phone: WhatsApp > Settings > Linked devices > Link a device. A new code comes every ~20 s: show the QR again if it stops working.';

function account(rt: WhatsAppRuntime): { number: string | null; name: string | null } | null {
  const me = linkedAccount(rt.dataDir);
  return me ? { number: phoneOf(normalizeJid(me.id)), name: me.name ?? null } : null;
}

export function consoleLinkSubcommand(rt: WhatsAppRuntime): PackSubcommand {
  let latest: string | null = null;
  let session: { timer: unknown; waiters: Set<() => void> } | null = null;
  const wake = () => {
    for (const w of session?.waiters ?? []) w();
  };
  const linkedAnswer = (ctx: Parameters<PackSubcommand['run']>[0]) => {
    const me = account(rt);
    return done(
      ctx,
      { linked: true, account: me, connection: rt.connection?.state ?? null },
      `Linked to WhatsApp as ${me?.name ?? ''} ${me?.number ?? ''}.`.replace(/ {2,}/g, ' '),
    );
  };
  return {
    name: 'console-qr',
    description:
      "the web console's link: open the connection here (in memo serve) and print the newest pairing QR as a PNG data URL; in a terminal, use memo whatsapp link",
    options: [{ flags: '--json', description: 'print JSON' }],
    run: (ctx) =>
      guarded(ctx, async () => {
        if (rt.linked()) return linkedAnswer(ctx);
        if (rt.linkingElsewhere()) throw new MemoError('CONFLICT', '`memo whatsapp link` is running in a terminal on this data folder: finish it there.');
        if (!session) {
          // On the kernel's clock, so a host (or a test) that moves time sees the window close.
          const clock = rt.api.clock;
          const s = { timer: clock.setTimeout(() => void end(), LINK_WINDOW_MS), waiters: new Set<() => void>() };
          session = s;
          latest = null;
          const end = async () => {
            clock.clearTimeout(s.timer);
            if (session === s) session = null;
            if (!rt.linked()) await rt.disconnect();
          };
          try {
            await rt.connect({
              qr: (qr) => {
                latest = qr;
                wake();
              },
              state: (state) => {
                if (state === 'open') {
                  // Paired: this connection is the one memo serve keeps from now on.
                  clock.clearTimeout(s.timer);
                  if (session === s) session = null;
                } else if (state === 'logged-out') void end();
              },
            });
          } catch (err) {
            await end();
            throw err;
          }
        }
        const waiting = session;
        if (!latest && waiting)
          await new Promise<void>((resolve) => {
            const stop = () => {
              clearTimeout(timer);
              waiting.waiters.delete(stop);
              ctx.signal.removeEventListener('abort', stop);
              resolve();
            };
            const timer = setTimeout(stop, QR_WAIT_MS);
            waiting.waiters.add(stop);
            ctx.signal.addEventListener('abort', stop, { once: true });
          });
        if (rt.linked()) return linkedAnswer(ctx);
        if (!latest) throw new MemoError('TOOL_FAILED', `WhatsApp offered no pairing QR within ${QR_WAIT_MS / 1000} s; try again.`);
        const { default: QRCode } = await import('qrcode');
        const qr = await QRCode.toDataURL(latest, { margin: 2, scale: 6 });
        return done(ctx, { linked: false, qr, instructions: SCAN }, SCAN);
      }),
  };
}
