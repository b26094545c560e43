/**
 * What the whatsapp pack offers other packs under `whatsapp.self`: a message to the person's own
 * number (WhatsApp's "message yourself" chat), for notifications the person opted into, such as the
 * vault's reminders. The recipient is never the caller's to choose: it is the linked account itself,
 * so nothing reaches another person this way. The pack's send limit (10 a minute) counts these too.
 * The caller records each message before it is sent (the vault's reminder history).
 */
import { MemoError } from 'memo-kernel/pack';
import { normalizeJid } from './jid.js';
import type { WhatsAppRuntime } from './runtime.js';

export interface WhatsAppSelf {
  /** Why a message to oneself cannot be sent now (null: it can). */
  unavailable(): Promise<string | null>;
  /** Sends `text` to the linked account's own chat; TOOL_FAILED or RATE_LIMITED saying why not. */
  send(text: string): Promise<{ message_id: string | null }>;
}

async function why(rt: WhatsAppRuntime): Promise<string | null> {
  if (!rt.linked()) return 'no phone is linked (memo whatsapp link)';
  const conn = rt.connection;
  if (!conn || conn.state !== 'open') {
    const owner = await rt.ownerElsewhere();
    if (owner) return `the WhatsApp connection is owned by the Memo instance ${owner.instance}`;
    return conn
      ? `WhatsApp is not connected right now (${conn.detail ?? conn.state})`
      : 'the WhatsApp connection runs in memo serve, which is not running here';
  }
  if (!normalizeJid(conn.account?.id)) return 'the linked account has no number yet';
  return null;
}

export function whatsappSelf(rt: WhatsAppRuntime): WhatsAppSelf {
  return {
    unavailable: () => why(rt),
    async send(text) {
      const problem = await why(rt);
      if (problem) throw new MemoError('TOOL_FAILED', `Nothing was sent to WhatsApp: ${problem}.`);
      const wait = rt.limiter.waitSeconds();
      if (wait > 0) throw new MemoError('RATE_LIMITED', `Nothing was sent to WhatsApp: the pack's limit of messages a minute is reached (again in ${wait} s).`);
      const conn = rt.connection!;
      const sent = await conn.send(normalizeJid(conn.account!.id)!, text);
      rt.limiter.record();
      return { message_id: sent?.key?.id ?? null };
    },
  };
}
