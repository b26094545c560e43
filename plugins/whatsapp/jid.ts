/**
 * WhatsApp ids (JIDs) as the store keeps them. Written here rather than imported from Baileys so the
 * read tools never load the protocol library (a second of imports) just to compare two strings.
 */

export const PN_SERVER = 's.whatsapp.net';

/** `491701234567:12@s.whatsapp.net` (one device of a user) and `...@c.us` become the user's `491701234567@s.whatsapp.net`. */
export function normalizeJid(jid: string | null | undefined): string | null {
  if (!jid) return null;
  const at = jid.indexOf('@');
  if (at < 0) return null;
  let user = jid.slice(0, at);
  let server = jid.slice(at + 1).toLowerCase();
  if (server === 'c.us') server = PN_SERVER;
  const colon = user.indexOf(':');
  if (colon >= 0) user = user.slice(0, colon);
  // hosted accounts (`@hosted`, `@hosted.lid`) are the same users as their plain forms for a person reading history
  if (server === 'hosted') server = PN_SERVER;
  if (server === 'hosted.lid') server = 'lid';
  const underscore = user.indexOf('_');
  if (underscore >= 0 && (server === PN_SERVER || server === 'lid')) user = user.slice(0, underscore);
  return user ? `${user}@${server}` : null;
}

export const isGroupJid = (jid: string): boolean => jid.endsWith('@g.us');
export const isLidJid = (jid: string): boolean => jid.endsWith('@lid');
export const isPnJid = (jid: string): boolean => jid.endsWith(`@${PN_SERVER}`);
/** Chats a person reads: one-to-one and groups (not status updates, broadcast lists or newsletters). */
export const isChatJid = (jid: string): boolean => isPnJid(jid) || isLidJid(jid) || isGroupJid(jid);

/** The phone number of a `@s.whatsapp.net` JID as a person writes it (`+491701234567`), else null. */
export function phoneOf(jid: string | null): string | null {
  return jid && isPnJid(jid) ? `+${jid.slice(0, jid.indexOf('@'))}` : null;
}

/**
 * A phone number as written by a person (`+90 555 123 45 67`, `(030) 1234-567`, `0049...`) as its
 * digits, or null when it is not one: only digits, spaces, dots, dashes, parentheses and one leading
 * `+`, 7 to 15 digits (E.164's longest). No country code is guessed: what was named is what is used.
 */
export function phoneDigits(text: string): string | null {
  const t = text.trim();
  if (!/^\+?[\d\s().-]+$/.test(t)) return null;
  let digits = t.replace(/\D/g, '');
  if (!t.startsWith('+') && digits.startsWith('00')) digits = digits.slice(2);
  return digits.length >= 7 && digits.length <= 15 ? digits : null;
}
