/**
 * whatsapp_send: a text to one chat, after the person saw who gets it and exactly what it says.
 *
 * Refused before anyone is asked (assess): nothing linked, the socket down, a name that fits
 * several chats or none (with the candidates), the pack's 10-a-minute limit. Asked every time while
 * the pack setting confirmEverySend is on (the default): a Concern, so no session or forever approval
 * covers a message to a person. The recipient the person approved is the one used: if the history
 * changed between the preview and the send so the words now mean another chat, nothing is sent.
 */
import { MemoError, type Concern, type Preview, type ToolContext } from 'memo-kernel/pack';
import { normalizeJid, phoneOf } from './jid.js';
import { displayName, resolveRecipient, type Recipient } from './recipients.js';
import { runtimeOf, SENDS_PER_MINUTE, type WhatsAppRuntime } from './runtime.js';
import { NOT_LINKED } from './read-tools.js';
import type { ToolArgs } from './tool-args.js';

type Args = ToolArgs['whatsapp_send'];

/** The recipient each call was previewed with, by call id (dropped when the call runs or after a while). */
const previewed = new Map<string, { chat_id: string; at: number }>();

async function connectionFor(rt: WhatsAppRuntime) {
  const conn = rt.connection;
  if (!conn || conn.state !== 'open') {
    // Several instances on one database: the one holding the lease sends; this one says which it is.
    const owner = await rt.ownerElsewhere();
    if (owner)
      throw new MemoError(
        'TOOL_FAILED',
        `WhatsApp's connection is owned by the Memo instance ${owner.instance}, not this one (${rt.api.instanceId}). Nothing was sent: send from ${owner.instance} (its MCP endpoint or console).`,
        { details: { owner: owner.instance, instance: rt.api.instanceId } },
      );
  }
  if (!rt.linked()) throw new MemoError('TOOL_FAILED', `${NOT_LINKED} Nothing was sent.`);
  if (!conn || conn.state !== 'open')
    throw new MemoError(
      'TOOL_FAILED',
      conn
        ? `WhatsApp is not connected right now (${conn.detail ?? conn.state}). Nothing was sent; try again once it reconnects.`
        : 'WhatsApp is linked, but the connection runs in `memo serve`, which is not running in this process. Start `memo serve` (or ask from a chat that runs there). Nothing was sent.',
    );
  return conn;
}

function checkRate(rt: WhatsAppRuntime): void {
  const wait = rt.limiter.waitSeconds();
  if (wait > 0)
    throw new MemoError('RATE_LIMITED', `At most ${SENDS_PER_MINUTE} WhatsApp messages a minute are sent. Nothing was sent; try again in ${wait} s.`, {
      details: { retryAfterSeconds: wait },
    });
}

async function recipientFor(rt: WhatsAppRuntime, to: string): Promise<Recipient> {
  return resolveRecipient(await rt.history(), to, 'send');
}

function label(r: Recipient): string {
  if (r.is_group) return `${r.name ?? 'an unnamed group'} (a group: everyone in it receives this)`;
  const number = r.number ?? 'number hidden by WhatsApp';
  return r.name ? `${r.name}, ${number}` : number;
}

export const sendTool = {
  async assess(args: Args, ctx: ToolContext): Promise<Concern | null> {
    const rt = runtimeOf(ctx);
    await connectionFor(rt);
    checkRate(rt);
    await recipientFor(rt, args.to);
    if (ctx.config.confirmEverySend === false) return null;
    return {
      verdict: 'ask',
      rule: 'whatsapp-send-confirm',
      reason: 'Every WhatsApp message is confirmed before it is sent (pack setting confirmEverySend, which an administrator can turn off).',
    };
  },

  async preview(args: Args, ctx: ToolContext): Promise<Preview> {
    const rt = runtimeOf(ctx);
    const r = await recipientFor(rt, args.to);
    const now = Date.now();
    for (const [id, p] of previewed) if (p.at < now - 10 * 60_000) previewed.delete(id);
    previewed.set(ctx.callId, { chat_id: r.chat_id, at: now });
    // The recipient as resolved, as facts; the message as the caller wrote it, quoted after them, so
    // a line break in it cannot print a "to:" line of its own.
    return {
      kind: 'text',
      text: `Sends the quoted message (${[...args.text].length} characters) to this chat, exactly as written.`,
      facts: [
        { label: 'to', value: label(r) },
        { label: 'chat', value: `${r.is_group ? 'group' : 'one person (not a group)'}; chat_id ${r.chat_id}` },
        ...(r.known ? [] : [{ label: 'note', value: 'this number is not in the WhatsApp history (no chat, no contact). It is used exactly as written.' }]),
        ...(r.matched === 'partial'
          ? [{ label: 'note', value: `"${args.to}" matched only part of this name. Check it is the right ${r.is_group ? 'group' : 'person'}.` }]
          : []),
      ],
      quoted: [{ label: 'message', text: args.text }],
    };
  },

  async run(args: Args, ctx: ToolContext) {
    const rt = runtimeOf(ctx);
    const conn = await connectionFor(rt);
    checkRate(rt);
    const r = await recipientFor(rt, args.to);
    const approved = previewed.get(ctx.callId);
    previewed.delete(ctx.callId);
    if (approved && approved.chat_id !== r.chat_id)
      throw new MemoError('CONFLICT', `"${args.to}" now means another chat than the one previewed (${approved.chat_id}). Nothing was sent; ask again.`);
    if (!r.known && !r.is_group) {
      // A number the history has never seen: ask WhatsApp first, and use it only as written.
      const found = await conn.lookup(r.chat_id);
      if (found && !found.exists) throw new MemoError('NOT_FOUND', `${r.number ?? r.chat_id} does not have WhatsApp (WhatsApp says so). Nothing was sent.`);
      const known = found?.jid ? normalizeJid(found.jid) : null;
      if (known && known !== r.chat_id)
        throw new MemoError(
          'CONFLICT',
          `WhatsApp knows ${r.number ?? r.chat_id} as ${phoneOf(known) ?? known}, not as written. Nothing was sent: send again to ${phoneOf(known) ?? known} if that is the person.`,
          { details: { named: r.chat_id, whatsapp: known } },
        );
    }
    const sent = await conn.send(r.chat_id, args.text);
    rt.limiter.record();
    const store = await rt.history();
    return {
      sent: true,
      to: { chat_id: r.chat_id, name: r.name ?? (await displayName(store, r.chat_id)), number: r.number, is_group: r.is_group },
      message_id: sent?.key?.id ?? null,
      characters: [...args.text].length,
    };
  },
};
