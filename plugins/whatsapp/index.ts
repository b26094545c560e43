/**
 * The built-in `whatsapp` pack: a linked WhatsApp device through Baileys (the multi-device
 * protocol, no browser), a local history fed by its events (SQLite + FTS5), three read tools and
 * whatsapp_send, which previews the resolved recipient and the exact text. `activate` contributes
 * `memo whatsapp link|status|unlink` and the connection service `memo serve` runs.
 */
import { defineTools, type Disposable, type PackApi } from 'memo-kernel/pack';
import { whatsappCommand } from './commands.js';
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

/** The connection `memo serve` keeps: started when a phone is linked, reconnecting until stopped. */
function connectionService(rt: WhatsAppRuntime): PackService {
  return {
    name: 'connection',
    async start(ctx) {
      if (!rt.linked()) {
        ctx.logger.info('whatsapp: no phone linked (memo whatsapp link); the connection is not started');
        return;
      }
      await rt.connect();
    },
    stop: () => rt.disconnect(),
  };
}

export function activate(api: PackApi): Disposable {
  const rt = register(api);
  api.commands.register(whatsappCommand(rt));
  api.services.register(connectionService(rt));
  return { dispose: () => void unregister(rt) };
}
