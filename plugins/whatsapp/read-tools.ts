/**
 * whatsapp_latest, whatsapp_messages and whatsapp_search: reads of the local history, which the
 * connection keeps current while `memo serve` runs. They answer from the history whether or not the
 * socket is up, and say so; with nothing linked and nothing kept they say how to link.
 */
import { MemoError, type ToolContext } from 'memo-kernel/pack';
import { isGroupJid, phoneOf } from './jid.js';
import { displayName, resolveRecipient, sendersMatching } from './recipients.js';
import { runtimeOf, type WhatsAppRuntime } from './runtime.js';
import { matchExpression } from './search-query.js';
import type { MessageInfo, WhatsAppStore } from './store.js';
import type { ToolArgs } from './tool-args.js';

export const NOT_LINKED =
  'WhatsApp is not linked here and there is no history yet. A person runs `memo whatsapp link` in a terminal (it shows a QR code to scan in WhatsApp > Linked devices, or a pairing code with --phone), then keeps `memo serve` running so messages arrive.';

/** The history, or NOT_FOUND saying how to link when there is neither a link nor any history. */
export async function readableHistory(rt: WhatsAppRuntime): Promise<WhatsAppStore> {
  const store = await rt.history();
  if (!rt.linked() && (await store.counts()).chats === 0) throw new MemoError('NOT_FOUND', NOT_LINKED);
  return store;
}

/** What the reader should know about how fresh the history is. */
export async function connectionNote(rt: WhatsAppRuntime): Promise<string> {
  const state = rt.connection?.state;
  if (state === 'open') return 'connected: the history is live';
  // Another instance sharing the database holds the connection: its events land in the same history.
  const owner = await rt.ownerElsewhere();
  if (owner) return `the connection is owned by the Memo instance ${owner.instance}: showing the shared history it keeps current`;
  if (!rt.linked()) return 'not linked: showing the history kept so far (memo whatsapp link links a phone)';
  if (rt.connection) return `not connected (${rt.connection.detail ?? state}): showing the local history`;
  return 'the connection runs in memo serve, not in this process: showing the local history as it was last synced';
}

export function isoOf(ts: number): string {
  return new Date(ts * 1000).toISOString();
}

/** Names for senders, looked up once per call. */
function senderNames(store: WhatsAppStore): (m: MessageInfo) => Promise<string> {
  const cache = new Map<string, string>();
  return async (m) => {
    if (m.from_me) return 'me';
    const jid = m.sender_jid;
    if (!jid) return m.push_name ?? 'unknown';
    let name = cache.get(jid);
    if (name === undefined) {
      name = (await displayName(store, jid)) ?? m.push_name ?? phoneOf(jid) ?? jid;
      cache.set(jid, name);
    }
    return name;
  };
}

async function chatLabel(store: WhatsAppStore, jid: string): Promise<string> {
  return (await displayName(store, jid)) ?? phoneOf(jid) ?? (isGroupJid(jid) ? 'unnamed group' : jid);
}

async function shown(m: MessageInfo, from: (m: MessageInfo) => Promise<string>) {
  return {
    id: m.msg_id,
    at: isoOf(m.ts),
    from: await from(m),
    from_me: m.from_me,
    kind: m.kind,
    text: m.deleted ? null : m.text,
    ...(m.edited ? { edited: true } : {}),
    ...(m.deleted ? { deleted: true } : {}),
  };
}

/** A date (its UTC midnight) or a date-time, as epoch seconds; VALIDATION naming the argument otherwise. */
export function secondsOf(value: string, name: string): number {
  const t = /^\d{4}-\d{2}-\d{2}$/.test(value) ? Date.parse(`${value}T00:00:00Z`) : Date.parse(value);
  if (Number.isNaN(t)) throw new MemoError('VALIDATION', `${name} "${value}" is not a date (2026-03-08) or a date-time (2026-03-08T09:00Z).`);
  return Math.floor(t / 1000);
}

export async function latest(args: ToolArgs['whatsapp_latest'], ctx: ToolContext) {
  const rt = runtimeOf(ctx);
  const store = await readableHistory(rt);
  const from = senderNames(store);
  const chats = [];
  for (const c of await store.latestChats(args.limit ?? 20, args.unread_only ?? false)) {
    const last = await store.lastMessage(c.jid);
    chats.push({
      chat_id: c.jid,
      name: await chatLabel(store, c.jid),
      number: phoneOf(c.jid),
      is_group: c.is_group,
      unread: c.unread,
      ...(c.archived ? { archived: true } : {}),
      last_message: last
        ? { from: await from(last), at: isoOf(last.ts), kind: last.kind, text: last.deleted ? null : last.text, ...(last.deleted ? { deleted: true } : {}) }
        : null,
    });
  }
  return { chats, connection: await connectionNote(rt) };
}

export async function messages(args: ToolArgs['whatsapp_messages'], ctx: ToolContext) {
  const rt = runtimeOf(ctx);
  const store = await readableHistory(rt);
  const chat = await resolveRecipient(store, args.chat, 'read');
  const limit = args.limit ?? 30;
  let before: { ts: number; seq?: number } | undefined;
  if (args.before) {
    const cursor = /^(\d+):(\d+)$/.exec(args.before);
    before = cursor ? { ts: Number(cursor[1]), seq: Number(cursor[2]) } : { ts: secondsOf(args.before, 'before') };
  }
  const rows = await store.messages(chat.chat_id, limit + 1, before);
  const page = rows.slice(0, limit);
  const from = senderNames(store);
  const last = page[page.length - 1];
  return {
    chat: { chat_id: chat.chat_id, name: chat.name ?? (await chatLabel(store, chat.chat_id)), number: chat.number, is_group: chat.is_group },
    messages: await Promise.all(page.map((m) => shown(m, from))),
    ...(rows.length > limit && last ? { next_before: `${last.ts}:${last.seq}` } : {}),
    connection: await connectionNote(rt),
  };
}

export async function search(args: ToolArgs['whatsapp_search'], ctx: ToolContext) {
  const rt = runtimeOf(ctx);
  const store = await readableHistory(rt);
  const { match, terms, parts } = matchExpression(args.query);
  if (!match) throw new MemoError('VALIDATION', `"${args.query}" has no word to search for (letters or digits).`);
  const chats = args.chat ? [(await resolveRecipient(store, args.chat, 'read')).chat_id] : undefined;
  const me = args.sender !== undefined && /^(me|myself|i)$/i.test(args.sender.trim());
  const senders = args.sender !== undefined && !me ? await sendersMatching(store, args.sender) : undefined;
  const { order, rows } = await store.search({
    match,
    parts,
    ...(chats ? { chats } : {}),
    ...(senders ? { senders } : {}),
    ...(me ? { fromMe: true } : {}),
    ...(args.after ? { after: secondsOf(args.after, 'after') } : {}),
    ...(args.before ? { before: secondsOf(args.before, 'before') } : {}),
    limit: args.limit ?? 20,
  });
  const from = senderNames(store);
  return {
    terms,
    order: order === 'relevance' ? 'best match first' : 'newest first (too many matches to rank: add words or filters to narrow)',
    results: await Promise.all(
      rows.map(async (m) => ({
        chat_id: m.chat_jid,
        chat: await chatLabel(store, m.chat_jid),
        is_group: isGroupJid(m.chat_jid),
        id: m.msg_id,
        from: await from(m),
        at: isoOf(m.ts),
        snippet: m.snippet,
        ...(m.edited ? { edited: true } : {}),
      })),
    ),
    ...(senders && senders.length === 0 ? { note: `Nobody in the history is named "${args.sender}".` } : {}),
    connection: await connectionNote(rt),
  };
}
