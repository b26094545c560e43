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
import { whatsappSelf } from './note-to-self.js';
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
 * (lease.ts) connects: each tick takes or renews it (every third of its length, each claim bounded by
 * that much), and an instance that finds it held by another leaves the connection to that one. A
 * renewal counts from when it was sent (the database starts the lease no earlier), and a timer of its
 * own, apart from the ticks, stops the socket a sixth of the lease before the last confirmed one could
 * run out, so an owner cut off from the database (its claims hanging or failing) has stopped before
 * any other instance can take the lease over. A clean stop gives the lease up so another linked
 * instance takes over at once.
 */
function connectionService(rt: WhatsAppRuntime): PackService {
  let timer: NodeJS.Timeout | null = null;
  let busy = false;
  /** Until when (Date.now()) this instance may keep a socket: the last confirmed lease, less the margin. */
  let holdUntil = 0;
  /** Stops the socket at holdUntil, whatever the ticks and claims are doing. */
  let expiry: NodeJS.Timeout | null = null;
  const disarm = () => {
    if (expiry) clearTimeout(expiry);
    expiry = null;
  };
  return {
    name: 'connection',
    async start(ctx) {
      const ttl = rt.leaseMs();
      const every = Math.min(LINK_POLL_MS, Math.floor(ttl / 3));
      const margin = Math.floor(ttl / 6);
      const warn = (err: unknown) => ctx.logger.warn(`whatsapp: could not start the connection: ${(err as Error)?.message ?? String(err)}`);
      const stopSocket = async (why: string) => {
        if (!rt.connection) return;
        ctx.logger.warn(`whatsapp: ${why}; this instance stops its connection`);
        await rt.disconnect();
      };
      const arm = () => {
        disarm();
        expiry = setTimeout(
          () => {
            expiry = null;
            stopSocket('the owner lease could not be renewed before it could run out').catch(warn);
          },
          Math.max(0, holdUntil - Date.now()),
        );
        expiry.unref();
      };
      const tick = async () => {
        if (busy || ctx.signal.aborted || !rt.linked() || rt.linkingElsewhere()) return;
        busy = true;
        try {
          const lease = await rt.lease();
          if (lease) {
            // A claim that fails or hangs past `every` throws; the expiry timer stops the socket in time.
            const claim = await lease.claim(Math.floor(ttl / 3));
            if (!claim.owned) {
              holdUntil = 0;
              disarm();
              await stopSocket("another instance holds the connection's lease");
              return;
            }
            holdUntil = Math.max(holdUntil, claim.sentAt + ttl - margin);
            arm();
            // Confirmed too late to be worth a socket: the next tick renews it first.
            if (Date.now() >= holdUntil) return;
          }
          // A connection another session took over stays stopped: taking it back would only start a tug of war.
          if (rt.connection && rt.connection.state !== 'logged-out') return;
          await rt.connect();
        } finally {
          busy = false;
        }
      };
      if (!rt.linked()) ctx.logger.info('whatsapp: no phone linked yet (memo whatsapp link); the connection starts once one is');
      await tick().catch(warn);
      timer = setInterval(() => void tick().catch(warn), every);
      timer.unref();
    },
    stop: async () => {
      if (timer) clearInterval(timer);
      timer = null;
      disarm();
      holdUntil = 0;
      await rt.disconnect();
      // Given up on a clean stop, so another instance need not wait for it to run out.
      await rt.openLease?.release(Math.floor(rt.leaseMs() / 3)).catch(() => undefined);
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
    commands: [{ id: 'qr', label: 'Show the pairing QR', command: 'whatsapp console-qr', refresh: { seconds: 15, until: 'linked' } }],
  });
  api.panels.register({
    id: 'chats',
    title: 'WhatsApp chats',
    description: 'The latest chats in the history this Memo keeps (as whatsapp_latest reads them); empty until a phone is linked.',
    lists: [
      {
        id: 'latest',
        title: 'Latest chats',
        tool: 'whatsapp_latest',
        args: { limit: 50 },
        rows: 'chats',
        columns: [
          { key: 'name', label: 'Chat' },
          { key: 'number', label: 'Number' },
          { key: 'unread', label: 'Unread' },
          { key: 'last_message.at', label: 'Last message', time: true },
          { key: 'last_message.text', label: 'Text' },
        ],
        refreshSeconds: 30,
        empty: 'No chats yet: link a phone above, and its history arrives here.',
      },
    ],
  });
  api.services.register(connectionService(rt));
  // Messages to the person's own number, for notifications they opted into (the vault's reminders).
  api.provide('whatsapp.self', whatsappSelf(rt));
  return { dispose: () => void unregister(rt) };
}
