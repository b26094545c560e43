/**
 * Who a person means by "Alice", "+49 170 1234567" or a chat_id, among the chats and contacts the
 * history knows. A name that fits several is never guessed: the call is refused with the candidates.
 * A number is taken exactly as named (no partial match, no country code guessed), so a message can
 * only go to the number the call spelled out, or to a chat the call named.
 */
import { MemoError } from 'memo-kernel/pack';
import { isGroupJid, isLidJid, isPnJid, phoneDigits, phoneOf, PN_SERVER } from './jid.js';
import type { WhatsAppStore } from './store.js';

export interface Recipient {
  chat_id: string;
  /** The contact's or group's name as shown to the person, or null when WhatsApp gave none. */
  name: string | null;
  /** +digits, or null for groups and people known only by a hidden-number id (LID). */
  number: string | null;
  is_group: boolean;
  /** False: a number the history has never seen (no chat, no contact). */
  known: boolean;
  /** How the words matched: `id`, `number`, `name` (the whole name) or `partial` (part of one name only). */
  matched: 'id' | 'number' | 'name' | 'partial';
}

interface Entry {
  jid: string;
  is_group: boolean;
  /** Every name the history has for it (chat name, saved name, own name, verified business name). */
  names: string[];
}

/** Lower case, accents folded, spaces collapsed: `Zoë  Ünal` and `zoe unal` are the same name. */
export function foldName(s: string): string {
  // Turkish dotless ı has no decomposition: folded by hand, as people type it without the accent.
  return s.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase().replace(/ı/g, 'i').replace(/\s+/g, ' ').trim();
}

/** The name shown for a chat or person: a saved contact name first, then their own, then the chat's, then a message's push name. */
export async function displayName(store: WhatsAppStore, jid: string): Promise<string | null> {
  const chat = await store.chatOf(jid);
  if (isGroupJid(jid)) return chat?.name ?? null;
  const c = await store.contactOf(jid);
  return c?.name ?? c?.notify ?? c?.verified_name ?? chat?.name ?? (await store.pushNameOf(jid));
}

async function directory(store: WhatsAppStore): Promise<Map<string, Entry>> {
  const out = new Map<string, Entry>();
  const entry = (jid: string): Entry => {
    let e = out.get(jid);
    if (!e) out.set(jid, (e = { jid, is_group: isGroupJid(jid), names: [] }));
    return e;
  };
  const [chats, contacts] = await Promise.all([store.allChats(), store.allContacts()]);
  for (const c of chats) {
    const e = entry(c.jid);
    if (c.name) e.names.push(c.name);
  }
  for (const c of contacts) {
    const e = entry(c.jid);
    for (const n of [c.name, c.notify, c.verified_name]) if (n) e.names.push(n);
  }
  return out;
}

async function recipientOf(store: WhatsAppStore, jid: string, matched: Recipient['matched']): Promise<Recipient> {
  return { chat_id: jid, name: await displayName(store, jid), number: phoneOf(jid), is_group: isGroupJid(jid), known: true, matched };
}

const knownJid = async (store: WhatsAppStore, jid: string): Promise<boolean> => !!(await store.chatOf(jid)) || !!(await store.contactOf(jid));

async function candidates(store: WhatsAppStore, entries: Entry[]): Promise<Array<Omit<Recipient, 'known' | 'matched'>>> {
  const named = await Promise.all(
    entries.map(async (e) => ({ chat_id: e.jid, name: await displayName(store, e.jid), number: phoneOf(e.jid), is_group: e.is_group })),
  );
  return named.sort((a, b) => (a.name ?? '').localeCompare(b.name ?? '') || a.chat_id.localeCompare(b.chat_id)).slice(0, 10);
}

/**
 * Resolves a chat or person. `purpose: send` also accepts a number the history has never seen
 * (the person named it exactly); reads need a chat that exists. Throws NOT_FOUND (nothing fits) or
 * CONFLICT (several fit; details.candidates lists them), each saying what to do.
 */
export async function resolveRecipient(store: WhatsAppStore, input: string, purpose: 'read' | 'send'): Promise<Recipient> {
  const text = input.trim();
  if (text.includes('@')) {
    const jid = await store.canonical(text);
    if (jid && (await knownJid(store, jid))) return recipientOf(store, jid, 'id');
    if (jid && isPnJid(jid) && purpose === 'send') return { chat_id: jid, name: null, number: phoneOf(jid), is_group: false, known: false, matched: 'id' };
    throw new MemoError('NOT_FOUND', `No WhatsApp chat has the id "${text}". whatsapp_latest lists the chats with their chat_id.`);
  }
  const digits = phoneDigits(text);
  if (digits) {
    const jid = `${digits}@${PN_SERVER}`;
    if (await knownJid(store, jid)) return recipientOf(store, jid, 'number');
    if (purpose === 'send') return { chat_id: jid, name: null, number: `+${digits}`, is_group: false, known: false, matched: 'number' };
    throw new MemoError(
      'NOT_FOUND',
      `There is no WhatsApp chat with +${digits} in the history. Give the number with its country code, or a name from whatsapp_latest.`,
    );
  }
  const wanted = foldName(text);
  const all = [...(await directory(store)).values()];
  const exact = all.filter((e) => e.names.some((n) => foldName(n) === wanted));
  const pick = async (found: Entry[], how: 'name' | 'partial'): Promise<Recipient | null> => {
    if (found.length === 1) return recipientOf(store, found[0]!.jid, how);
    if (found.length > 1) {
      const listed = await candidates(store, found);
      throw new MemoError(
        'CONFLICT',
        `"${text}" fits ${found.length} WhatsApp chats (${listed
          .map((c) => `${c.name ?? c.chat_id}${c.number ? ` ${c.number}` : c.is_group ? ' (group)' : ''}`)
          .join('; ')}). Nothing was ${purpose === 'send' ? 'sent' : 'read'}: name one exactly, by its number or chat_id.`,
        { details: { candidates: listed } },
      );
    }
    return null;
  };
  const byName = await pick(exact, 'name');
  if (byName) return byName;
  // Every word the person gave is a whole word of one name ("ali" finds "Ali Yılmaz" before "Alice"),
  // else starts one ("ali" then finds "Alice", never "Natalie").
  const words = wanted.split(' ');
  const wordsOf = (n: string) => foldName(n).split(/[\s\-_.,()]+/);
  const whole = all.filter((e) => e.names.some((n) => words.every((w) => wordsOf(n).includes(w))));
  const partial = whole.length ? whole : all.filter((e) => e.names.some((n) => words.every((w) => wordsOf(n).some((nw) => nw.startsWith(w)))));
  const byPart = await pick(partial, 'partial');
  if (byPart) return byPart;
  throw new MemoError(
    'NOT_FOUND',
    `No WhatsApp chat or contact is named "${text}". whatsapp_latest lists the chats; a phone number with its country code works too${purpose === 'send' ? '' : ' once that chat has messages'}.`,
  );
}

/** The people (never groups) a name or number can mean, for a search's sender filter: all that fit, since a filter may be broad. */
export async function sendersMatching(store: WhatsAppStore, input: string): Promise<string[]> {
  const text = input.trim();
  if (text.includes('@')) return [await store.canonical(text)].filter((j): j is string => !!j && !isGroupJid(j));
  const digits = phoneDigits(text);
  if (digits) return [`${digits}@${PN_SERVER}`];
  const wanted = foldName(text).split(' ');
  return [...(await directory(store)).values()]
    .filter((e) => !e.is_group && (isPnJid(e.jid) || isLidJid(e.jid)))
    .filter((e) =>
      e.names.some((n) => {
        const nameWords = foldName(n).split(/[\s\-_.,()]+/);
        return wanted.every((w) => nameWords.some((nw) => nw.startsWith(w)));
      }),
    )
    .map((e) => e.jid);
}
