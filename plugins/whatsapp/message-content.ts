/**
 * What a WhatsApp message says, for the history: its kind and its text (a caption, a file name, a
 * place, a poll's question). Media bytes are never kept, nor their keys or URLs. The message shapes
 * are Baileys' `proto.IMessage` (plain objects after decoding), read here without loading Baileys.
 */

import type { proto } from 'baileys';

type Msg = proto.IMessage;

export interface MessageContent {
  kind: 'text' | 'image' | 'video' | 'audio' | 'document' | 'sticker' | 'location' | 'contact' | 'poll' | 'event' | 'other';
  text: string | null;
}

/** Envelopes that hold the real content one level down (Baileys' normalizeMessageContent unwraps the same). */
const WRAPPERS = [
  'ephemeralMessage',
  'viewOnceMessage',
  'viewOnceMessageV2',
  'viewOnceMessageV2Extension',
  'documentWithCaptionMessage',
  'editedMessage',
  'associatedChildMessage',
  'groupStatusMessage',
  'groupStatusMessageV2',
  'lottieStickerMessage',
  'botInvokeMessage',
];

/** The content inside any envelopes. */
export function unwrap(message: Msg | null | undefined): Msg | null {
  let m = message ?? null;
  for (let i = 0; m && i < 5; i++) {
    const inner = WRAPPERS.map((w) => (m![w as keyof Msg] as { message?: Msg | null } | null | undefined)?.message).find((x) => x);
    if (!inner) break;
    m = inner;
  }
  return m;
}

/** Protocol-level messages (edits, deletes, key shares, history notices) and reactions are events about messages, not messages. */
export function isProtocolOnly(message: Msg | null | undefined): boolean {
  const m = unwrap(message);
  if (!m) return true;
  const keys = Object.keys(m).filter((k) => m[k as keyof Msg] !== null && m[k as keyof Msg] !== undefined && k !== 'messageContextInfo');
  if (!keys.length) return true;
  return keys.every(
    (k) =>
      k === 'protocolMessage' ||
      k === 'reactionMessage' ||
      k === 'senderKeyDistributionMessage' ||
      k === 'pollUpdateMessage' ||
      k === 'encReactionMessage' ||
      k === 'keepInChatMessage' ||
      k === 'pinInChatMessage',
  );
}

const joined = (...parts: Array<string | null | undefined>): string | null => {
  const t = parts.filter((p) => typeof p === 'string' && p.trim()).join(' — ');
  return t || null;
};

export function contentOf(message: Msg | null | undefined): MessageContent {
  const m = unwrap(message);
  if (!m) return { kind: 'other', text: null };
  if (typeof m.conversation === 'string' && m.conversation) return { kind: 'text', text: m.conversation };
  if (m.extendedTextMessage) return { kind: 'text', text: joined(m.extendedTextMessage.text) };
  if (m.imageMessage) return { kind: 'image', text: joined(m.imageMessage.caption) };
  if (m.videoMessage) return { kind: 'video', text: joined(m.videoMessage.caption) };
  if (m.ptvMessage) return { kind: 'video', text: joined(m.ptvMessage.caption) };
  if (m.audioMessage) return { kind: 'audio', text: null };
  if (m.documentMessage) return { kind: 'document', text: joined(m.documentMessage.fileName ?? m.documentMessage.title, m.documentMessage.caption) };
  if (m.stickerMessage) return { kind: 'sticker', text: null };
  if (m.locationMessage) return { kind: 'location', text: joined(m.locationMessage.name, m.locationMessage.address) };
  if (m.liveLocationMessage) return { kind: 'location', text: joined(m.liveLocationMessage.caption) };
  if (m.contactMessage) return { kind: 'contact', text: joined(m.contactMessage.displayName) };
  if (m.contactsArrayMessage) return { kind: 'contact', text: joined(m.contactsArrayMessage.displayName) };
  const poll = m.pollCreationMessage ?? m.pollCreationMessageV2 ?? m.pollCreationMessageV3;
  if (poll) return { kind: 'poll', text: joined(poll.name, ...(poll.options ?? []).map((o) => o.optionName)) };
  if (m.eventMessage) return { kind: 'event', text: joined(m.eventMessage.name, m.eventMessage.description) };
  if (m.buttonsResponseMessage) return { kind: 'text', text: joined(m.buttonsResponseMessage.selectedDisplayText) };
  if (m.listResponseMessage) return { kind: 'text', text: joined(m.listResponseMessage.title) };
  return { kind: 'other', text: null };
}
