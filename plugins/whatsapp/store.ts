/**
 * The local WhatsApp history, fed by Baileys' events and read by the tools. Synchronous
 * (better-sqlite3 under the pack's typeorm DataSource) so one consolidated batch of events from
 * Baileys' event buffer is one transaction: a crash mid-batch leaves the batch unapplied, and the
 * phone sends it again; a search never sees half a history chunk.
 *
 * Idempotence: every event finds its row by WhatsApp's own identity (chat JID; chat, message id and
 * direction), so a replay after a reconnect or restart changes nothing. A delete leaves a tombstone
 * (no text) so a replayed original cannot bring a deleted message back; an edit keeps its text
 * against a replayed original. Unread counts grow only when a new message is first stored.
 *
 * WhatsApp names a person by a phone-number JID or a hidden-number one (`@lid`); once the server
 * reveals which number a LID stands for, the LID's chat, messages and contact fold into the number's.
 */
import type { Database, Statement } from 'better-sqlite3';
import type { BaileysEventMap, Chat, Contact, WAMessage, WAMessageKey, WAMessageUpdate } from 'baileys';
import { contentOf, isProtocolOnly } from './message-content.js';
import { isChatJid, isGroupJid, isLidJid, isPnJid, normalizeJid } from './jid.js';

export type WhatsAppEvents = Partial<BaileysEventMap>;

/** Baileys' stub type for a deleted message (proto.WebMessageInfo.StubType.REVOKE). */
const STUB_REVOKE = 1;

export interface ChatInfo {
  jid: string;
  name: string | null;
  is_group: boolean;
  unread: number;
  last_at: number | null;
  archived: boolean;
}

export interface MessageInfo {
  seq: number;
  chat_jid: string;
  msg_id: string;
  from_me: boolean;
  sender_jid: string | null;
  push_name: string | null;
  ts: number;
  kind: string;
  text: string | null;
  edited: boolean;
  deleted: boolean;
}

export interface ContactInfo {
  jid: string;
  name: string | null;
  notify: string | null;
  verified_name: string | null;
}

export interface SearchFilters {
  match: string;
  chats?: readonly string[];
  senders?: readonly string[];
  fromMe?: boolean;
  after?: number;
  before?: number;
  limit: number;
}

export interface SearchRow extends MessageInfo {
  snippet: string;
  score: number;
}

export interface ApplyStats {
  inserted: number;
  updated: number;
  deleted: number;
}

const bool = (v: unknown): boolean => v === 1 || v === true;

function seconds(v: unknown): number {
  if (typeof v === 'number') return Math.floor(v);
  if (typeof v === 'string' && v) return Math.floor(Number(v)) || 0;
  if (v && typeof v === 'object') {
    const o = v as { toNumber?: () => number; low?: number };
    if (typeof o.toNumber === 'function') return o.toNumber();
    if (typeof o.low === 'number') return o.low >>> 0;
  }
  return 0;
}

const nonEmpty = (s: unknown): string | null => (typeof s === 'string' && s.trim() ? s.trim() : null);

function messageRow(r: Record<string, unknown>): MessageInfo {
  return {
    seq: r.seq as number,
    chat_jid: r.chat_jid as string,
    msg_id: r.msg_id as string,
    from_me: bool(r.from_me),
    sender_jid: (r.sender_jid as string | null) ?? null,
    push_name: (r.push_name as string | null) ?? null,
    ts: r.ts as number,
    kind: r.kind as string,
    text: (r.text as string | null) ?? null,
    edited: bool(r.edited),
    deleted: bool(r.deleted),
  };
}

function chatRow(r: Record<string, unknown>): ChatInfo {
  return {
    jid: r.jid as string,
    name: (r.name as string | null) ?? null,
    is_group: bool(r.is_group),
    unread: r.unread as number,
    last_at: (r.last_at as number | null) ?? null,
    archived: bool(r.archived),
  };
}

/** The most matches ranked by bm25; more are returned newest first (see search). */
const RANKED_MAX = 2000;

const MESSAGE_COLUMNS = 'm.seq, m.chat_jid, m.msg_id, m.from_me, m.sender_jid, m.push_name, m.ts, m.kind, m.text, m.edited, m.deleted';

export class WhatsAppStore {
  private readonly s: Record<string, Statement>;
  private readonly lidCache = new Map<string, string>();

  constructor(readonly db: Database) {
    // The history is the phone's copy: commits need not wait for the disk (WAL keeps the file
    // consistent; a lost last batch is sent again by the phone on the next connection).
    db.pragma('synchronous = NORMAL');
    const p = (sql: string) => db.prepare(sql);
    this.s = {
      lidGet: p(`SELECT pn FROM wa_lid_map WHERE lid = ?`),
      lidPut: p(`INSERT INTO wa_lid_map (lid, pn) VALUES (?, ?) ON CONFLICT (lid) DO UPDATE SET pn = excluded.pn`),
      chatGet: p(`SELECT jid, name, is_group, unread, last_at, archived FROM wa_chats WHERE jid = ?`),
      chatEnsure: p(`INSERT INTO wa_chats (jid, name, is_group, unread, last_at, archived) VALUES (?, NULL, ?, 0, NULL, 0) ON CONFLICT (jid) DO NOTHING`),
      chatName: p(`UPDATE wa_chats SET name = ? WHERE jid = ?`),
      chatUnread: p(`UPDATE wa_chats SET unread = ? WHERE jid = ?`),
      chatUnreadAdd: p(`UPDATE wa_chats SET unread = unread + 1 WHERE jid = ?`),
      chatArchived: p(`UPDATE wa_chats SET archived = ? WHERE jid = ?`),
      chatLastAt: p(`UPDATE wa_chats SET last_at = ? WHERE jid = ? AND (last_at IS NULL OR last_at < ?)`),
      chatDelete: p(`DELETE FROM wa_chats WHERE jid = ?`),
      contactGet: p(`SELECT jid, name, notify, verified_name FROM wa_contacts WHERE jid = ?`),
      contactEnsure: p(`INSERT INTO wa_contacts (jid, name, notify, verified_name) VALUES (?, NULL, NULL, NULL) ON CONFLICT (jid) DO NOTHING`),
      contactSet: p(
        `UPDATE wa_contacts SET name = COALESCE(@name, name), notify = COALESCE(@notify, notify), verified_name = COALESCE(@verified_name, verified_name) WHERE jid = @jid`,
      ),
      contactDelete: p(`DELETE FROM wa_contacts WHERE jid = ?`),
      msgGet: p(`SELECT m.seq, m.text, m.deleted, m.edited FROM wa_messages m WHERE chat_jid = ? AND msg_id = ? AND from_me = ?`),
      msgInsert: p(`INSERT INTO wa_messages (chat_jid, msg_id, from_me, sender_jid, push_name, ts, kind, text, edited, deleted)
                    VALUES (@chat_jid, @msg_id, @from_me, @sender_jid, @push_name, @ts, @kind, @text, @edited, @deleted)`),
      msgText: p(`UPDATE wa_messages SET text = ?, kind = ?, edited = ?, deleted = ? WHERE seq = ?`),
      ftsInsert: p(`INSERT INTO wa_messages_fts (rowid, text) VALUES (?, ?)`),
      // External content: a row's old text must be given back to remove its words.
      ftsDelete: p(`INSERT INTO wa_messages_fts (wa_messages_fts, rowid, text) VALUES ('delete', ?, ?)`),
    };
  }

  // -------------------------------------------------------------------------------------------
  // Events in

  /** Applies one batch of Baileys events (as its event buffer's `process` hands them over) in one transaction. */
  apply(events: WhatsAppEvents): ApplyStats {
    const stats: ApplyStats = { inserted: 0, updated: 0, deleted: 0 };
    this.db.transaction(() => {
      // Who is who first, so the messages of this batch land in the right chats.
      const history = events['messaging-history.set'];
      if (events['lid-mapping.update']) this.mapLid(events['lid-mapping.update'].lid, events['lid-mapping.update'].pn);
      for (const m of history?.lidPnMappings ?? []) this.mapLid(m.lid, m.pn);
      for (const c of [...(history?.contacts ?? []), ...(events['contacts.upsert'] ?? []), ...(events['contacts.update'] ?? [])]) this.contact(c);
      for (const c of history?.chats ?? []) this.chat(c, true);
      for (const c of events['chats.upsert'] ?? []) this.chat(c, true);
      for (const c of events['chats.update'] ?? []) this.chat(c, false);
      for (const g of [...(events['groups.upsert'] ?? []), ...(events['groups.update'] ?? [])]) {
        const jid = normalizeJid(g.id);
        const subject = nonEmpty(g.subject);
        if (jid && isGroupJid(jid) && subject) {
          this.s.chatEnsure!.run(jid, 1);
          this.s.chatName!.run(subject, jid);
        }
      }
      for (const m of history?.messages ?? []) this.upsertMessage(m, false, stats);
      const upsert = events['messages.upsert'];
      for (const m of upsert?.messages ?? []) this.upsertMessage(m, upsert!.type === 'notify', stats);
      for (const u of events['messages.update'] ?? []) this.updateMessage(u, stats);
      const del = events['messages.delete'];
      if (del && 'keys' in del) for (const k of del.keys) this.deleteMessage(k, undefined, stats);
      else if (del && 'all' in del) this.clearChat(del.jid, stats);
      for (const jid of events['chats.delete'] ?? []) this.deleteChat(jid, stats);
    })();
    return stats;
  }

  /** The JID the store keeps a person under: the phone number's when the LID's is known. */
  canonical(jid: string | null | undefined): string | null {
    const n = normalizeJid(jid);
    if (!n || !isLidJid(n)) return n;
    const cached = this.lidCache.get(n);
    if (cached) return cached;
    const row = this.s.lidGet!.get(n) as { pn: string } | undefined;
    if (row) this.lidCache.set(n, row.pn);
    return row?.pn ?? n;
  }

  private mapLid(lidJid: string | null | undefined, pnJid: string | null | undefined): void {
    const lid = normalizeJid(lidJid);
    const pn = normalizeJid(pnJid);
    if (!lid || !pn || !isLidJid(lid) || !isPnJid(pn)) return;
    const known = this.s.lidGet!.get(lid) as { pn: string } | undefined;
    if (known?.pn === pn) return;
    this.s.lidPut!.run(lid, pn);
    this.lidCache.set(lid, pn);
    this.fold(lid, pn);
  }

  /** Moves everything kept under a LID to its phone number (a replay of a message kept under both keeps one). */
  private fold(lid: string, pn: string): void {
    const lidChat = this.s.chatGet!.get(lid) as Record<string, unknown> | undefined;
    if (lidChat) {
      this.s.chatEnsure!.run(pn, 0);
      const pnChat = chatRow(this.s.chatGet!.get(pn) as Record<string, unknown>);
      const from = chatRow(lidChat);
      const last = Math.max(pnChat.last_at ?? 0, from.last_at ?? 0) || null;
      this.db.prepare(`UPDATE wa_chats SET name = COALESCE(name, ?), unread = MAX(unread, ?), last_at = ? WHERE jid = ?`).run(from.name, from.unread, last, pn);
      this.db.prepare(`UPDATE OR IGNORE wa_messages SET chat_jid = ? WHERE chat_jid = ?`).run(pn, lid);
      // Copies the number's chat already had: drop the LID's duplicate (and its words).
      for (const dup of this.db.prepare(`SELECT seq, text FROM wa_messages WHERE chat_jid = ?`).all(lid) as Array<{ seq: number; text: string | null }>) {
        if (dup.text) this.s.ftsDelete!.run(dup.seq, dup.text);
        this.db.prepare(`DELETE FROM wa_messages WHERE seq = ?`).run(dup.seq);
      }
      this.s.chatDelete!.run(lid);
    }
    this.db.prepare(`UPDATE wa_messages SET sender_jid = ? WHERE sender_jid = ?`).run(pn, lid);
    const lidContact = this.s.contactGet!.get(lid) as ContactInfo | undefined;
    if (lidContact) {
      this.s.contactEnsure!.run(pn);
      this.s.contactSet!.run({ jid: pn, name: lidContact.name, notify: lidContact.notify, verified_name: lidContact.verified_name });
      this.s.contactDelete!.run(lid);
    }
  }

  private contact(c: Partial<Contact>): void {
    const id = normalizeJid(c.id);
    if (!id) return;
    // A contact names both of its ids when WhatsApp knows them.
    const lid = isLidJid(id) ? id : normalizeJid(c.lid);
    const pn = isPnJid(id) ? id : normalizeJid(c.phoneNumber);
    if (lid && pn) this.mapLid(lid, pn);
    const jid = this.canonical(id);
    if (!jid || !isChatJid(jid) || isGroupJid(jid)) return;
    const fields = { jid, name: nonEmpty(c.name), notify: nonEmpty(c.notify), verified_name: nonEmpty(c.verifiedName) };
    if (!fields.name && !fields.notify && !fields.verified_name && !this.s.contactGet!.get(jid)) {
      this.s.contactEnsure!.run(jid);
      return;
    }
    this.s.contactEnsure!.run(jid);
    this.s.contactSet!.run(fields);
  }

  /** A chat from history or an upsert (`absolute`: its unread count is the truth) or an update (only a read mark is taken). */
  private chat(c: Partial<Chat>, absolute: boolean): void {
    const id = normalizeJid(c.id);
    if (!id) return;
    const alt = c as { pnJid?: string | null; lidJid?: string | null };
    if (isLidJid(id) && alt.pnJid) this.mapLid(id, alt.pnJid);
    else if (isPnJid(id) && alt.lidJid) this.mapLid(alt.lidJid, id);
    const jid = this.canonical(id);
    if (!jid || !isChatJid(jid)) return;
    this.s.chatEnsure!.run(jid, isGroupJid(jid) ? 1 : 0);
    const name = nonEmpty(c.name) ?? nonEmpty((c as { displayName?: string }).displayName);
    if (name) this.s.chatName!.run(name, jid);
    const unread = typeof c.unreadCount === 'number' ? c.unreadCount : null;
    // Positive increments in updates are not taken: a new message counts itself once, when first stored.
    if (unread !== null && (absolute || unread <= 0)) this.s.chatUnread!.run(unread < 0 ? 1 : unread, jid);
    if (typeof c.archived === 'boolean') this.s.chatArchived!.run(c.archived ? 1 : 0, jid);
    const at = seconds(c.conversationTimestamp);
    if (at > 0) this.s.chatLastAt!.run(at, jid, at);
  }

  private keyOf(key: WAMessageKey): { chat: string; id: string; fromMe: number; sender: string | null } | null {
    const k = key;
    const remote = normalizeJid(k.remoteJid);
    if (!remote || !k.id) return null;
    // Baileys 7 carries the other form of each id beside it: learn the pair before choosing the key.
    const alt = normalizeJid(k.remoteJidAlt);
    if (alt && isLidJid(remote) && isPnJid(alt)) this.mapLid(remote, alt);
    else if (alt && isPnJid(remote) && isLidJid(alt)) this.mapLid(alt, remote);
    const participant = normalizeJid(k.participant);
    const participantAlt = normalizeJid(k.participantAlt);
    if (participant && participantAlt && isLidJid(participant) && isPnJid(participantAlt)) this.mapLid(participant, participantAlt);
    else if (participant && participantAlt && isPnJid(participant) && isLidJid(participantAlt)) this.mapLid(participantAlt, participant);
    const chat = this.canonical(remote)!;
    if (!isChatJid(chat)) return null;
    const fromMe = k.fromMe ? 1 : 0;
    const sender = fromMe ? null : isGroupJid(chat) ? this.canonical(participant) : chat;
    return { chat, id: k.id, fromMe, sender };
  }

  private upsertMessage(m: WAMessage, notify: boolean, stats: ApplyStats): void {
    if (!m?.key) return;
    const key = this.keyOf(m.key);
    if (!key) return;
    const revoked = Number(m.messageStubType) === STUB_REVOKE;
    if (!revoked && (m.messageStubType || isProtocolOnly(m.message))) return;
    const existing = this.s.msgGet!.get(key.chat, key.id, key.fromMe) as { seq: number; text: string | null; deleted: number; edited: number } | undefined;
    // Baileys folds an edit that arrives in the same buffer into the message itself.
    const edited = !!(m.message as { editedMessage?: unknown } | null | undefined)?.editedMessage;
    const content = revoked ? { kind: 'other' as const, text: null } : contentOf(m.message);
    if (existing) {
      if (bool(existing.deleted)) return;
      if (revoked) return this.deleteMessage(m.key, undefined, stats);
      // A replayed original never undoes an edit; a later copy fills in text the first one lacked.
      if ((edited && content.text !== existing.text) || (!bool(existing.edited) && existing.text === null && content.text)) {
        this.setText(existing.seq, existing.text, content.kind, content.text, edited || bool(existing.edited));
        stats.updated++;
      }
      return;
    }
    const ts = seconds(m.messageTimestamp);
    this.s.chatEnsure!.run(key.chat, isGroupJid(key.chat) ? 1 : 0);
    const { lastInsertRowid } = this.s.msgInsert!.run({
      chat_jid: key.chat,
      msg_id: key.id,
      from_me: key.fromMe,
      sender_jid: key.sender,
      push_name: key.fromMe ? null : nonEmpty(m.pushName),
      ts,
      kind: content.kind,
      text: content.text,
      edited: edited ? 1 : 0,
      deleted: revoked ? 1 : 0,
    });
    if (content.text) this.s.ftsInsert!.run(lastInsertRowid, content.text);
    if (revoked) {
      stats.deleted++;
      return;
    }
    stats.inserted++;
    if (ts > 0) this.s.chatLastAt!.run(ts, key.chat, ts);
    if (notify && !key.fromMe) this.s.chatUnreadAdd!.run(key.chat);
    if (key.sender && !key.fromMe && nonEmpty(m.pushName) && !isGroupJid(key.sender)) {
      this.s.contactEnsure!.run(key.sender);
      this.db.prepare(`UPDATE wa_contacts SET notify = COALESCE(notify, ?) WHERE jid = ?`).run(nonEmpty(m.pushName), key.sender);
    }
  }

  private setText(seq: number, oldText: string | null, kind: string, text: string | null, edited: boolean, deleted = false): void {
    if (oldText) this.s.ftsDelete!.run(seq, oldText);
    this.s.msgText!.run(text, kind, edited ? 1 : 0, deleted ? 1 : 0, seq);
    if (text) this.s.ftsInsert!.run(seq, text);
  }

  private updateMessage(u: WAMessageUpdate, stats: ApplyStats): void {
    const update = u.update as Partial<WAMessage> & { message?: { editedMessage?: { message?: unknown } } | null };
    if (update.message === null || Number(update.messageStubType) === STUB_REVOKE) {
      this.deleteMessage(u.key, seconds(update.messageTimestamp), stats);
      return;
    }
    const edit = update.message?.editedMessage?.message;
    if (!edit) return;
    const key = this.keyOf(u.key);
    if (!key) return;
    const content = contentOf(edit);
    const existing = this.s.msgGet!.get(key.chat, key.id, key.fromMe) as { seq: number; text: string | null; deleted: number } | undefined;
    if (existing) {
      if (bool(existing.deleted) || existing.text === content.text) return;
      this.setText(existing.seq, existing.text, content.kind, content.text, true);
      stats.updated++;
      return;
    }
    // An edit of a message this history never had: kept as what it says now, at the edit's time.
    this.upsertMessage({ key: u.key, message: { editedMessage: { message: edit } }, messageTimestamp: update.messageTimestamp } as WAMessage, false, stats);
  }

  private deleteMessage(k: WAMessageKey, ts: number | undefined, stats: ApplyStats): void {
    const key = this.keyOf(k);
    if (!key) return;
    const existing = this.s.msgGet!.get(key.chat, key.id, key.fromMe) as { seq: number; text: string | null; deleted: number } | undefined;
    if (existing) {
      if (bool(existing.deleted)) return;
      this.setText(existing.seq, existing.text, 'other', null, false, true);
      stats.deleted++;
      return;
    }
    // A tombstone, so the original, if it is replayed later, stays deleted.
    this.s.msgInsert!.run({
      chat_jid: key.chat,
      msg_id: key.id,
      from_me: key.fromMe,
      sender_jid: key.sender,
      push_name: null,
      ts: ts ?? 0,
      kind: 'other',
      text: null,
      edited: 0,
      deleted: 1,
    });
    stats.deleted++;
  }

  private clearChat(jid: string, stats: ApplyStats): void {
    const chat = this.canonical(jid);
    if (!chat) return;
    for (const row of this.db.prepare(`SELECT seq, text FROM wa_messages WHERE chat_jid = ? AND deleted = 0`).all(chat) as Array<{
      seq: number;
      text: string | null;
    }>) {
      this.setText(row.seq, row.text, 'other', null, false, true);
      stats.deleted++;
    }
  }

  private deleteChat(jid: string, stats: ApplyStats): void {
    const chat = this.canonical(jid);
    if (!chat) return;
    for (const row of this.db.prepare(`SELECT seq, text FROM wa_messages WHERE chat_jid = ?`).all(chat) as Array<{ seq: number; text: string | null }>) {
      if (row.text) this.s.ftsDelete!.run(row.seq, row.text);
      stats.deleted++;
    }
    this.db.prepare(`DELETE FROM wa_messages WHERE chat_jid = ?`).run(chat);
    this.s.chatDelete!.run(chat);
  }

  // -------------------------------------------------------------------------------------------
  // Reads

  counts(): { chats: number; messages: number; contacts: number } {
    const one = (sql: string) => (this.db.prepare(sql).get() as { n: number }).n;
    return {
      chats: one(`SELECT COUNT(*) AS n FROM wa_chats`),
      messages: one(`SELECT COUNT(*) AS n FROM wa_messages WHERE deleted = 0`),
      contacts: one(`SELECT COUNT(*) AS n FROM wa_contacts`),
    };
  }

  chatOf(jid: string): ChatInfo | null {
    const r = this.s.chatGet!.get(jid) as Record<string, unknown> | undefined;
    return r ? chatRow(r) : null;
  }

  contactOf(jid: string): ContactInfo | null {
    return (this.s.contactGet!.get(jid) as ContactInfo | undefined) ?? null;
  }

  allChats(): ChatInfo[] {
    return (this.db.prepare(`SELECT jid, name, is_group, unread, last_at, archived FROM wa_chats`).all() as Array<Record<string, unknown>>).map(chatRow);
  }

  allContacts(): ContactInfo[] {
    return this.db.prepare(`SELECT jid, name, notify, verified_name FROM wa_contacts`).all() as ContactInfo[];
  }

  /** The latest push name a person's messages carried (for people never saved as a contact). */
  pushNameOf(jid: string): string | null {
    const r = this.db.prepare(`SELECT push_name FROM wa_messages WHERE sender_jid = ? AND push_name IS NOT NULL ORDER BY ts DESC LIMIT 1`).get(jid) as
      { push_name: string } | undefined;
    return r?.push_name ?? null;
  }

  latestChats(limit: number, unreadOnly: boolean): ChatInfo[] {
    return (
      this.db
        .prepare(
          `SELECT jid, name, is_group, unread, last_at, archived FROM wa_chats ${unreadOnly ? 'WHERE unread > 0' : ''}
           ORDER BY COALESCE(last_at, 0) DESC, jid LIMIT ?`,
        )
        .all(limit) as Array<Record<string, unknown>>
    ).map(chatRow);
  }

  messageByKey(chatJid: string, id: string, fromMe: boolean): MessageInfo | null {
    const chat = this.canonical(chatJid);
    const r = chat
      ? (this.db
          .prepare(`SELECT ${MESSAGE_COLUMNS} FROM wa_messages m WHERE m.chat_jid = ? AND m.msg_id = ? AND m.from_me = ?`)
          .get(chat, id, fromMe ? 1 : 0) as Record<string, unknown> | undefined)
      : undefined;
    return r ? messageRow(r) : null;
  }

  lastMessage(chat: string): MessageInfo | null {
    const r = this.db
      .prepare(`SELECT ${MESSAGE_COLUMNS} FROM wa_messages m WHERE m.chat_jid = ? AND m.ts > 0 ORDER BY m.ts DESC, m.seq DESC LIMIT 1`)
      .get(chat) as Record<string, unknown> | undefined;
    return r ? messageRow(r) : null;
  }

  /** One chat's messages, newest first, older than (ts, seq) when given. Tombstones without a time are left out. */
  messages(chat: string, limit: number, before?: { ts: number; seq?: number }): MessageInfo[] {
    const where = ['m.chat_jid = ?', 'm.ts > 0'];
    const params: unknown[] = [chat];
    if (before) {
      if (before.seq !== undefined) {
        where.push('(m.ts < ? OR (m.ts = ? AND m.seq < ?))');
        params.push(before.ts, before.ts, before.seq);
      } else {
        where.push('m.ts < ?');
        params.push(before.ts);
      }
    }
    const sql = `SELECT ${MESSAGE_COLUMNS} FROM wa_messages m WHERE ${where.join(' AND ')} ORDER BY m.ts DESC, m.seq DESC LIMIT ?`;
    return (this.db.prepare(sql).all(...params, limit) as Array<Record<string, unknown>>).map(messageRow);
  }

  /**
   * Full-text search (an FTS5 MATCH expression). Up to RANKED_MAX matches are ranked by bm25 (best
   * first, then newest). Beyond that, ranking costs more than the goal of 10 ms (bm25 over 15,000
   * matches of a common word is 14 ms) and says little (a word that common fits everything about
   * equally), so the newest matches come first, found by walking the time index backwards.
   */
  search(f: SearchFilters): { order: 'relevance' | 'newest'; rows: SearchRow[] } {
    const where = ['m.deleted = 0'];
    const params: unknown[] = [];
    if (f.chats) {
      where.push(`m.chat_jid IN (${f.chats.map(() => '?').join(', ') || 'NULL'})`);
      params.push(...f.chats);
    }
    if (f.fromMe) where.push('m.from_me = 1');
    else if (f.senders) {
      where.push(`m.sender_jid IN (${f.senders.map(() => '?').join(', ') || 'NULL'})`, 'm.from_me = 0');
      params.push(...f.senders);
    }
    if (f.after !== undefined) {
      where.push('m.ts >= ?');
      params.push(f.after);
    }
    if (f.before !== undefined) {
      where.push('m.ts < ?');
      params.push(f.before);
    }
    const matches = (this.db.prepare(`SELECT count(*) AS n FROM wa_messages_fts WHERE wa_messages_fts MATCH ?`).get(f.match) as { n: number }).n;
    if (matches <= RANKED_MAX) {
      const sql = `SELECT ${MESSAGE_COLUMNS}, snippet(wa_messages_fts, 0, '[', ']', '…', 16) AS snippet, wa_messages_fts.rank AS score
                   FROM wa_messages_fts JOIN wa_messages m ON m.seq = wa_messages_fts.rowid
                   WHERE wa_messages_fts MATCH ? AND ${where.join(' AND ')} ORDER BY wa_messages_fts.rank, m.ts DESC LIMIT ?`;
      const rows = this.db.prepare(sql).all(f.match, ...params, f.limit) as Array<Record<string, unknown>>;
      return { order: 'relevance', rows: rows.map((r) => ({ ...messageRow(r), snippet: r.snippet as string, score: r.score as number })) };
    }
    // One chat: walk that chat's messages by time; one sender: let SQLite pick; else the whole time index.
    const index = f.chats?.length === 1 ? 'INDEXED BY IDX_wa_messages_chat_ts' : f.senders || f.fromMe ? '' : 'INDEXED BY IDX_wa_messages_ts';
    const sql = `SELECT ${MESSAGE_COLUMNS} FROM wa_messages m ${index}
                 WHERE m.seq IN (SELECT rowid FROM wa_messages_fts WHERE wa_messages_fts MATCH ?) AND ${where.join(' AND ')}
                 ORDER BY m.ts DESC, m.seq DESC LIMIT ?`;
    const rows = (this.db.prepare(sql).all(f.match, ...params, f.limit) as Array<Record<string, unknown>>).map(messageRow);
    // FTS5 ignores `rowid = ?` bound as a REAL, which is how better-sqlite3 binds a JS number: cast it.
    const snippet = this.db.prepare(
      `SELECT snippet(wa_messages_fts, 0, '[', ']', '…', 16) AS s FROM wa_messages_fts WHERE wa_messages_fts MATCH ? AND rowid = CAST(? AS INTEGER)`,
    );
    return {
      order: 'newest',
      rows: rows.map((m) => ({ ...m, snippet: (snippet.get(f.match, m.seq) as { s: string } | undefined)?.s ?? m.text ?? '', score: 0 })),
    };
  }
}
