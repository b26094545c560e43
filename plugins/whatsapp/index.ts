/**
 * The built-in `whatsapp` pack: a linked WhatsApp device through Baileys (the multi-device
 * protocol, no browser), a history fed by its events (SQLite + FTS5, or PostgreSQL + tsvector when
 * MEMO_DATABASE_URL is set, with one owner instance of the connection at a time), three read tools and
 * whatsapp_send, which previews the resolved recipient and the exact text. `activate` contributes
 * `memo whatsapp link|status|unlink`, the web console's link panel (console-link.ts) and the
 * connection service `memo serve` runs.
 */
import { defineTools, type Disposable, type PackApi } from 'memo-kernel/pack';
import { whatsappCommand } from './commands.js';
import { consoleLinkSubcommand } from './console-link.js';
import { register, unregister, type WhatsAppRuntime } from './runtime.js';
import type { ToolArgs } from './tool-args.js';

// The tools' code (typeorm, and Baileys for the send path) loads on the first call.
const reads = () => import('./read-tools.js');
const send = async () => (await import('./send-tool.js')).sendTool;

export const tools = defineTools<ToolArgs>({
  whatsapp_latest: async (args, ctx) => (await reads()).latest(args, ctx),
  whatsapp_messages: async (args, ctx) => (await reads()).messages(args, ctx),
  whatsapp_search: async (args, ctx) => (await reads()).search(args, ctx),
  whatsapp_send: {
    assess: async (args, ctx) => (await send()).assess(args, ctx),
    preview: async (args, ctx) => (await send()).preview(args, ctx),
    run: async (args, ctx) => (await send()).run(args, ctx),
  },
});

type PackService = Parameters<PackApi['services']['register']>[0];

/** How often `memo serve` looks for a phone linked meanwhile by `memo whatsapp link` (a file check). */
const LINK_POLL_MS = 3000;

/**
 * The connection `memo serve` keeps: started when a phone is linked, reconnecting until stopped. It
 * also looks every few seconds for a phone linked meanwhile (by `memo whatsapp link` in another
 * terminal, which it lets finish first), linked again after the phone dropped this device, or a
 * start that failed, so the server never needs a restart for any of these.
 *
 * With the history in PostgreSQL (several instances), only the instance holding the owner lease
 * (lease.ts) connects: each tick takes or renews it (every third of its length), an instance that
 * finds it held by another leaves the connection to that one, an owner that cannot renew in time
 * stops its socket, and a clean stop gives the lease up so another linked instance takes over at once.
 */
function connectionService(rt: WhatsAppRuntime): PackService {
  let timer: NodeJS.Timeout | null = null;
  let busy = false;
  /** When this instance last confirmed it holds the lease (Date.now()). */
  let confirmed = 0;
  return {
    name: 'connection',
    async start(ctx) {
      const every = Math.min(LINK_POLL_MS, Math.floor(rt.leaseMs() / 3));
      const stopSocket = async (why: string) => {
        if (!rt.connection) return;
        ctx.logger.warn(`whatsapp: ${why}; this instance stops its connection`);
        await rt.disconnect();
      };
      const tick = async () => {
        if (busy || ctx.signal.aborted || !rt.linked() || rt.linkingElsewhere()) return;
        busy = true;
        try {
          const lease = await rt.lease();
          if (lease) {
            let owned: boolean;
            try {
              owned = await lease.claim();
            } catch (err) {
              // The database is unreachable: keep the socket only while the last renewal still covers it.
              if (Date.now() - confirmed > rt.leaseMs() - every) await stopSocket('the owner lease could not be renewed in time');
              throw err;
            }
            if (!owned) {
              await stopSocket(`the instance ${(await lease.holder())?.instance ?? 'another'} took over the connection's lease`);
              return;
            }
            confirmed = Date.now();
          }
          // A connection another session took over stays stopped: taking it back would only start a tug of war.
          if (rt.connection && rt.connection.state !== 'logged-out') return;
          await rt.connect();
        } finally {
          busy = false;
        }
      };
      if (!rt.linked()) ctx.logger.info('whatsapp: no phone linked yet (memo whatsapp link); the connection starts once one is');
      await tick().catch((err: unknown) => ctx.logger.warn(`whatsapp: could not start the connection: ${(err as Error)?.message ?? String(err)}`));
      timer = setInterval(() => {
        tick().catch((err: unknown) => ctx.logger.warn(`whatsapp: could not start the connection: ${(err as Error)?.message ?? String(err)}`));
      }, every);
      timer.unref();
    },
    stop: async () => {
      if (timer) clearInterval(timer);
      timer = null;
      await rt.disconnect();
      // Given up on a clean stop, so another instance need not wait for it to run out.
      await rt.openLease?.release().catch(() => undefined);
    },
  };
}

export function activate(api: PackApi): Disposable {
  const rt = register(api);
  const command = whatsappCommand(rt);
  command.subcommands.push(consoleLinkSubcommand(rt));
  api.commands.register(command);
  // The web console's panel: linking is the person's act, so it is a panel command, never a tool.
  api.panels.register({
    id: 'link',
    title: 'WhatsApp link',
    description: 'Link this Memo to a phone as a WhatsApp linked device: show the pairing QR and scan it with the phone.',
    commands: [{ id: 'qr', label: 'Show the pairing QR', command: 'whatsapp console-qr' }],
  });
  api.services.register(connectionService(rt));
  return { dispose: () => void unregister(rt) };
}
