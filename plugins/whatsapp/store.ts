/**
 * The local WhatsApp history, fed by Baileys' events and read by the tools, on SQLite (a file in the
 * pack's data folder, FTS5 search) or PostgreSQL (the pack's schema in the shared database, tsvector
 * search): one history, two engines (store-engines.ts). The logic is written once, as generators that
 * yield their statements (Steps): the SQLite engine runs them synchronously inside one better-sqlite3
 * transaction, the PostgreSQL one awaits each inside one database transaction, so one consolidated
 * batch of events from Baileys' event buffer is one transaction on either: a crash mid-batch leaves
 * the batch unapplied, and the phone sends it again; a search never sees half a history chunk.
 *
 * Idempotence: every event finds its row by WhatsApp's own identity (chat JID; chat, message id and
 * direction), so a replay after a reconnect or restart changes nothing. A delete leaves a tombstone
 * (no text) so a replayed original cannot bring a deleted message back; an edit keeps its text
 * against a replayed original. Unread counts grow only when a new message is first stored.
 *
 * WhatsApp names a person by a phone-number JID or a hidden-number one (`@lid`); once the server
 * reveals which number a LID stands for, the LID's chat, messages and contact fold into the number's.
 */
import type { BaileysEventMap, Chat, Contact, WAMessage, WAMessageKey, WAMessageUpdate } from 'baileys';
import { contentOf, isProtocolOnly } from './message-content.js';
import { isChatJid, isGroupJid, isLidJid, isPnJid, normalizeJid } from './jid.js';
import type { QueryPart } from './search-query.js';
import { wordsOf } from './text-index.js';

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
  /** The FTS5 expression (SQLite). */
  match: string;
  /** The same terms, for the tsquery and snippets (PostgreSQL). */
  parts: readonly QueryPart[];
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

export function messageRow(r: Record<string, unknown>): MessageInfo {
  return {
    seq: Number(r.seq),
    chat_jid: r.chat_jid as string,
    msg_id: r.msg_id as string,
    from_me: bool(r.from_me),
    sender_jid: (r.sender_jid as string | null) ?? null,
    push_name: (r.push_name as string | null) ?? null,
    ts: Number(r.ts),
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
    unread: Number(r.unread),
    last_at: r.last_at === null || r.last_at === undefined ? null : Number(r.last_at),
    archived: bool(r.archived),
  };
}

/** The most matches ranked (bm25 on SQLite, ts_rank on PostgreSQL); more are returned newest first (see search). */
export const RANKED_MAX = 2000;

/** One statement for the engine to run: `?` placeholders, 0/1 for booleans (both engines take them). */
export interface Op {
  kind: 'get' | 'all' | 'run';
  sql: string;
  params: unknown[];
}

/** Store logic: yields its statements, is handed each one's result (a row, the rows, or nothing), returns T. */
export type Steps<T> = Generator<Op, T, unknown>;

const get = (sql: string, ...params: unknown[]): Op => ({ kind: 'get', sql, params });
const all = (sql: string, ...params: unknown[]): Op => ({ kind: 'all', sql, params });
const run = (sql: string, ...params: unknown[]): Op => ({ kind: 'run', sql, params });

/** What runs the steps: SQLite or PostgreSQL (store-engines.ts). */
export interface StoreEngine {
  readonly dialect: 'sqlite' | 'postgres';
  /** Steps that only read, outside a transaction. */
  read<T>(steps: Steps<T>): Promise<T>;
  /** Steps in one transaction, one batch after the other. */
  write<T>(steps: Steps<T>): Promise<T>;
  /** Full-text search (each engine its own; see WhatsAppStore.search). */
  search(where: string[], params: unknown[], f: SearchFilters): Promise<{ order: 'relevance' | 'newest'; rows: SearchRow[] }>;
}

export const MESSAGE_COLUMNS = 'm.seq, m.chat_jid, m.msg_id, m.from_me, m.sender_jid, m.push_name, m.ts, m.kind, m.text, m.edited, m.deleted';
const CHAT_COLUMNS = 'jid, name, is_group, unread, last_at, archived';

/** Statements both engines run as written (booleans as TRUE/FALSE or 0/1 parameters, counts cast to INTEGER). */
const S = {
  lidGet: `SELECT pn FROM wa_lid_map WHERE lid = ?`,
  lidPut: `INSERT INTO wa_lid_map (lid, pn) VALUES (?, ?) ON CONFLICT (lid) DO UPDATE SET pn = excluded.pn`,
  chatGet: `SELECT ${CHAT_COLUMNS} FROM wa_chats WHERE jid = ?`,
  chatEnsure: `INSERT INTO wa_chats (jid, name, is_group, unread, last_at, archived) VALUES (?, NULL, ?, 0, NULL, FALSE) ON CONFLICT (jid) DO NOTHING`,
  chatName: `UPDATE wa_chats SET name = ? WHERE jid = ?`,
  chatUnread: `UPDATE wa_chats SET unread = ? WHERE jid = ?`,
  chatUnreadAdd: `UPDATE wa_chats SET unread = unread + 1 WHERE jid = ?`,
  chatArchived: `UPDATE wa_chats SET archived = ? WHERE jid = ?`,
  chatLastAt: `UPDATE wa_chats SET last_at = ? WHERE jid = ? AND (last_at IS NULL OR last_at < ?)`,
  chatDelete: `DELETE FROM wa_chats WHERE jid = ?`,
  contactGet: `SELECT jid, name, notify, verified_name FROM wa_contacts WHERE jid = ?`,
  contactEnsure: `INSERT INTO wa_contacts (jid, name, notify, verified_name) VALUES (?, NULL, NULL, NULL) ON CONFLICT (jid) DO NOTHING`,
  contactSet: `UPDATE wa_contacts SET name = COALESCE(?, name), notify = COALESCE(?, notify), verified_name = COALESCE(?, verified_name) WHERE jid = ?`,
  contactDelete: `DELETE FROM wa_contacts WHERE jid = ?`,
  msgGet: `SELECT m.seq, m.text, m.deleted, m.edited FROM wa_messages m WHERE chat_jid = ? AND msg_id = ? AND from_me = ?`,
  msgText: `UPDATE wa_messages SET text = ?, kind = ?, edited = ?, deleted = ? WHERE seq = ?`,
  // A LID's messages move to the number's chat, but for those the number's chat already has (UPDATE OR IGNORE, portably).
  msgMoveChat: `UPDATE wa_messages SET chat_jid = ? WHERE chat_jid = ? AND NOT EXISTS
                (SELECT 1 FROM wa_messages o WHERE o.chat_jid = ? AND o.msg_id = wa_messages.msg_id AND o.from_me = wa_messages.from_me)`,
} as const;

/** The statements that differ: the insert (PostgreSQL writes the words with the row), and keeping the words in step. */
const DIALECT = {
  sqlite: {
    dialect: 'sqlite' as const,
    // No RETURNING: better-sqlite3's run() gives the rowid, and RETURNING halved the history's insert rate.
    msgInsert: `INSERT INTO wa_messages (chat_jid, msg_id, from_me, sender_jid, push_name, ts, kind, text, edited, deleted)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ftsInsert: `INSERT INTO wa_messages_fts (rowid, text) VALUES (?, ?)`,
    // External content: a row's old text must be given back to remove its words.
    ftsDelete: `INSERT INTO wa_messages_fts (wa_messages_fts, rowid, text) VALUES ('delete', ?, ?)`,
  },
  postgres: {
    dialect: 'postgres' as const,
    msgInsert: `INSERT INTO wa_messages (chat_jid, msg_id, from_me, sender_jid, push_name, ts, kind, text, edited, deleted, words, word_count)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, CAST(? AS tsvector), ?) RETURNING seq`,
    words: `UPDATE wa_messages SET words = CAST(? AS tsvector), word_count = ? WHERE seq = ?`,
  },
};

/** The events apply() reads. */
const STORED_EVENTS = [
  'messaging-history.set',
  'lid-mapping.update',
  'contacts.upsert',
  'contacts.update',
  'chats.upsert',
  'chats.update',
  'chats.delete',
  'groups.upsert',
  'groups.update',
  'messages.upsert',
  'messages.update',
  'messages.delete',
] as const satisfies ReadonlyArray<keyof WhatsAppEvents>;

export class WhatsAppStore {
  private readonly lidCache = new Map<string, string>();
  private readonly sql: (typeof DIALECT)['sqlite'] | (typeof DIALECT)['postgres'];

  constructor(readonly engine: StoreEngine) {
    this.sql = DIALECT[engine.dialect];
  }

  /** Applies one batch of Baileys events (as its event buffer's `process` hands them over) in one transaction. */
  apply(events: WhatsAppEvents): Promise<ApplyStats> {
    // Most batches of a quiet connection are only its own state (connection.update, creds.update): no transaction for them.
    if (!STORED_EVENTS.some((e) => events[e] !== undefined)) return Promise.resolve({ inserted: 0, updated: 0, deleted: 0 });
    return this.engine.write(this.applySteps(events));
  }

  /** The JID the store keeps a person under: the phone number's when the LID's is known. */
  canonical(jid: string | null | undefined): Promise<string | null> {
    const n = normalizeJid(jid);
    if (!n || !isLidJid(n)) return Promise.resolve(n);
    return this.engine.read(this.canon(n));
  }

  /** The extra insert parameters PostgreSQL takes: the text's words and their number. */
  private words(text: string | null): unknown[] {
    if (this.sql.dialect !== 'postgres') return [];
    const w = wordsOf(text);
    return [w.vector, w.count];
  }

  /** Keeps a message's indexed words in step with its text. */
  private *index(seq: number, oldText: string | null, text: string | null): Steps<void> {
    if (this.sql.dialect === 'postgres') {
      const w = wordsOf(text);
      yield run(this.sql.words, w.vector, w.count, seq);
      return;
    }
    if (oldText) yield run(this.sql.ftsDelete, seq, oldText);
    if (text) yield run(this.sql.ftsInsert, seq, text);
  }

  // -------------------------------------------------------------------------------------------
  // Events in

  /** Applies one batch of Baileys events (as its event buffer's `process` hands them over) in one transaction. */
  private *applySteps(events: WhatsAppEvents): Steps<ApplyStats> {
    const stats: ApplyStats = { inserted: 0, updated: 0, deleted: 0 };
    {
      // Who is who first, so the messages of this batch land in the right chats.
      const history = events['messaging-history.set'];
      if (events['lid-mapping.update']) yield* this.mapLid(events['lid-mapping.update'].lid, events['lid-mapping.update'].pn);
      for (const m of history?.lidPnMappings ?? []) yield* this.mapLid(m.lid, m.pn);
      for (const c of [...(history?.contacts ?? []), ...(events['contacts.upsert'] ?? []), ...(events['contacts.update'] ?? [])]) yield* this.contact(c);
      for (const c of history?.chats ?? []) yield* this.chat(c, true);
      for (const c of events['chats.upsert'] ?? []) yield* this.chat(c, true);
      for (const c of events['chats.update'] ?? []) yield* this.chat(c, false);
      for (const g of [...(events['groups.upsert'] ?? []), ...(events['groups.update'] ?? [])]) {
        const jid = normalizeJid(g.id);
        const subject = nonEmpty(g.subject);
        if (jid && isGroupJid(jid) && subject) {
          yield run(S.chatEnsure, jid, 1);
          yield run(S.chatName, subject, jid);
        }
      }
      for (const m of history?.messages ?? []) yield* this.upsertMessage(m, false, stats);
      const upsert = events['messages.upsert'];
      for (const m of upsert?.messages ?? []) yield* this.upsertMessage(m, upsert!.type === 'notify', stats);
      for (const u of events['messages.update'] ?? []) yield* this.updateMessage(u, stats);
      const del = events['messages.delete'];
      if (del && 'keys' in del) for (const k of del.keys) yield* this.deleteMessage(k, undefined, stats);
      else if (del && 'all' in del) yield* this.clearChat(del.jid, stats);
      for (const jid of events['chats.delete'] ?? []) yield* this.deleteChat(jid, stats);
    }
    return stats;
  }

  /** The JID the store keeps a person under: the phone number's when the LID's is known. */
  private *canon(jid: string | null | undefined): Steps<string | null> {
    const n = normalizeJid(jid);
    if (!n || !isLidJid(n)) return n;
    const cached = this.lidCache.get(n);
    if (cached) return cached;
    const row = (yield get(S.lidGet, n)) as { pn: string } | undefined;
    if (row) this.lidCache.set(n, row.pn);
    return row?.pn ?? n;
  }

  private *mapLid(lidJid: string | null | undefined, pnJid: string | null | undefined): Steps<void> {
    const lid = normalizeJid(lidJid);
    const pn = normalizeJid(pnJid);
    if (!lid || !pn || !isLidJid(lid) || !isPnJid(pn)) return;
    const known = (yield get(S.lidGet, lid)) as { pn: string } | undefined;
    if (known?.pn === pn) return;
    yield run(S.lidPut, lid, pn);
    this.lidCache.set(lid, pn);
    yield* this.fold(lid, pn);
  }

  /** Moves everything kept under a LID to its phone number (a replay of a message kept under both keeps one). */
  private *fold(lid: string, pn: string): Steps<void> {
    const lidChat = (yield get(S.chatGet, lid)) as Record<string, unknown> | undefined;
    if (lidChat) {
      yield run(S.chatEnsure, pn, 0);
      const pnChat = chatRow((yield get(S.chatGet, pn)) as Record<string, unknown>);
      const from = chatRow(lidChat);
      const last = Math.max(pnChat.last_at ?? 0, from.last_at ?? 0) || null;
      yield run(
        `UPDATE wa_chats SET name = COALESCE(name, ?), unread = CASE WHEN unread > ? THEN unread ELSE ? END, last_at = ? WHERE jid = ?`,
        from.name,
        from.unread,
        from.unread,
        last,
        pn,
      );
      yield run(S.msgMoveChat, pn, lid, pn);
      // Copies the number's chat already had: drop the LID's duplicate (and its words).
      for (const dup of (yield all(`SELECT seq, text FROM wa_messages WHERE chat_jid = ?`, lid)) as Array<{ seq: number; text: string | null }>) {
        yield* this.index(dup.seq, dup.text, null);
        yield run(`DELETE FROM wa_messages WHERE seq = ?`, dup.seq);
      }
      yield run(S.chatDelete, lid);
    }
    yield run(`UPDATE wa_messages SET sender_jid = ? WHERE sender_jid = ?`, pn, lid);
    const lidContact = (yield get(S.contactGet, lid)) as ContactInfo | undefined;
    if (lidContact) {
      yield run(S.contactEnsure, pn);
      yield run(S.contactSet, lidContact.name, lidContact.notify, lidContact.verified_name, pn);
      yield run(S.contactDelete, lid);
    }
  }

  private *contact(c: Partial<Contact>): Steps<void> {
    const id = normalizeJid(c.id);
    if (!id) return;
    // A contact names both of its ids when WhatsApp knows them.
    const lid = isLidJid(id) ? id : normalizeJid(c.lid);
    const pn = isPnJid(id) ? id : normalizeJid(c.phoneNumber);
    if (lid && pn) yield* this.mapLid(lid, pn);
    const jid = yield* this.canon(id);
    if (!jid || !isChatJid(jid) || isGroupJid(jid)) return;
    const fields = { jid, name: nonEmpty(c.name), notify: nonEmpty(c.notify), verified_name: nonEmpty(c.verifiedName) };
    if (!fields.name && !fields.notify && !fields.verified_name && !(yield get(S.contactGet, jid))) {
      yield run(S.contactEnsure, jid);
      return;
    }
    yield run(S.contactEnsure, jid);
    yield run(S.contactSet, fields.name, fields.notify, fields.verified_name, jid);
  }

  /** A chat from history or an upsert (`absolute`: its unread count is the truth) or an update (only a read mark is taken). */
  private *chat(c: Partial<Chat>, absolute: boolean): Steps<void> {
    const id = normalizeJid(c.id);
    if (!id) return;
    const alt = c as { pnJid?: string | null; lidJid?: string | null };
    if (isLidJid(id) && alt.pnJid) yield* this.mapLid(id, alt.pnJid);
    else if (isPnJid(id) && alt.lidJid) yield* this.mapLid(alt.lidJid, id);
    const jid = yield* this.canon(id);
    if (!jid || !isChatJid(jid)) return;
    yield run(S.chatEnsure, jid, isGroupJid(jid) ? 1 : 0);
    const name = nonEmpty(c.name) ?? nonEmpty((c as { displayName?: string }).displayName);
    if (name) yield run(S.chatName, name, jid);
    const unread = typeof c.unreadCount === 'number' ? c.unreadCount : null;
    // Positive increments in updates are not taken: a new message counts itself once, when first stored.
    if (unread !== null && (absolute || unread <= 0)) yield run(S.chatUnread, unread < 0 ? 1 : unread, jid);
    if (typeof c.archived === 'boolean') yield run(S.chatArchived, c.archived ? 1 : 0, jid);
    const at = seconds(c.conversationTimestamp);
    if (at > 0) yield run(S.chatLastAt, at, jid, at);
  }

  private *keyOf(key: WAMessageKey): Steps<{ chat: string; id: string; fromMe: number; sender: string | null } | null> {
    const k = key;
    const remote = normalizeJid(k.remoteJid);
    if (!remote || !k.id) return null;
    // Baileys 7 carries the other form of each id beside it: learn the pair before choosing the key.
    const alt = normalizeJid(k.remoteJidAlt);
    if (alt && isLidJid(remote) && isPnJid(alt)) yield* this.mapLid(remote, alt);
    else if (alt && isPnJid(remote) && isLidJid(alt)) yield* this.mapLid(alt, remote);
    const participant = normalizeJid(k.participant);
    const participantAlt = normalizeJid(k.participantAlt);
    if (participant && participantAlt && isLidJid(participant) && isPnJid(participantAlt)) yield* this.mapLid(participant, participantAlt);
    else if (participant && participantAlt && isPnJid(participant) && isLidJid(participantAlt)) yield* this.mapLid(participantAlt, participant);
    const chat = (yield* this.canon(remote))!;
    if (!isChatJid(chat)) return null;
    const fromMe = k.fromMe ? 1 : 0;
    const sender = fromMe ? null : isGroupJid(chat) ? yield* this.canon(participant) : chat;
    return { chat, id: k.id, fromMe, sender };
  }

  private *upsertMessage(m: WAMessage, notify: boolean, stats: ApplyStats): Steps<void> {
    if (!m?.key) return;
    const key = yield* this.keyOf(m.key);
    if (!key) return;
    const revoked = Number(m.messageStubType) === STUB_REVOKE;
    if (!revoked && (m.messageStubType || isProtocolOnly(m.message))) return;
    const existing = (yield get(S.msgGet, key.chat, key.id, key.fromMe)) as { seq: number; text: string | null; deleted: number; edited: number } | undefined;
    // Baileys folds an edit that arrives in the same buffer into the message itself.
    const edited = !!(m.message as { editedMessage?: unknown } | null | undefined)?.editedMessage;
    const content = revoked ? { kind: 'other' as const, text: null } : contentOf(m.message);
    if (existing) {
      if (bool(existing.deleted)) return;
      if (revoked) return yield* this.deleteMessage(m.key, undefined, stats);
      // A replayed original never undoes an edit; a later copy fills in text the first one lacked.
      if ((edited && content.text !== existing.text) || (!bool(existing.edited) && existing.text === null && content.text)) {
        yield* this.setText(existing.seq, existing.text, content.kind, content.text, edited || bool(existing.edited));
        stats.updated++;
      }
      return;
    }
    const ts = seconds(m.messageTimestamp);
    yield run(S.chatEnsure, key.chat, isGroupJid(key.chat) ? 1 : 0);
    const sqlite = this.sql.dialect === 'sqlite';
    const inserted = (yield (sqlite ? run : get)(
      this.sql.msgInsert,
      key.chat,
      key.id,
      key.fromMe,
      key.sender,
      key.fromMe ? null : nonEmpty(m.pushName),
      ts,
      content.kind,
      content.text,
      edited ? 1 : 0,
      revoked ? 1 : 0,
      ...this.words(content.text),
    )) as { seq?: number; lastInsertRowid?: number | bigint };
    if (sqlite && content.text) yield* this.index(Number(inserted.lastInsertRowid), null, content.text);
    if (revoked) {
      stats.deleted++;
      return;
    }
    stats.inserted++;
    if (ts > 0) yield run(S.chatLastAt, ts, key.chat, ts);
    if (notify && !key.fromMe) yield run(S.chatUnreadAdd, key.chat);
    if (key.sender && !key.fromMe && nonEmpty(m.pushName) && !isGroupJid(key.sender)) {
      yield run(S.contactEnsure, key.sender);
      yield run(`UPDATE wa_contacts SET notify = COALESCE(notify, ?) WHERE jid = ?`, nonEmpty(m.pushName), key.sender);
    }
  }

  private *setText(seq: number, oldText: string | null, kind: string, text: string | null, edited: boolean, deleted = false): Steps<void> {
    yield run(S.msgText, text, kind, edited ? 1 : 0, deleted ? 1 : 0, seq);
    yield* this.index(seq, oldText, text);
  }

  private *updateMessage(u: WAMessageUpdate, stats: ApplyStats): Steps<void> {
    const update = u.update as Partial<WAMessage> & { message?: { editedMessage?: { message?: unknown } } | null };
    if (update.message === null || Number(update.messageStubType) === STUB_REVOKE) {
      yield* this.deleteMessage(u.key, seconds(update.messageTimestamp), stats);
      return;
    }
    const edit = update.message?.editedMessage?.message;
    if (!edit) return;
    const key = yield* this.keyOf(u.key);
    if (!key) return;
    const content = contentOf(edit);
    const existing = (yield get(S.msgGet, key.chat, key.id, key.fromMe)) as { seq: number; text: string | null; deleted: number } | undefined;
    if (existing) {
      if (bool(existing.deleted) || existing.text === content.text) return;
      yield* this.setText(existing.seq, existing.text, content.kind, content.text, true);
      stats.updated++;
      return;
    }
    // An edit of a message this history never had: kept as what it says now, at the edit's time.
    yield* this.upsertMessage(
      { key: u.key, message: { editedMessage: { message: edit } }, messageTimestamp: update.messageTimestamp } as WAMessage,
      false,
      stats,
    );
  }

  private *deleteMessage(k: WAMessageKey, ts: number | undefined, stats: ApplyStats): Steps<void> {
    const key = yield* this.keyOf(k);
    if (!key) return;
    const existing = (yield get(S.msgGet, key.chat, key.id, key.fromMe)) as { seq: number; text: string | null; deleted: number } | undefined;
    if (existing) {
      if (bool(existing.deleted)) return;
      yield* this.setText(existing.seq, existing.text, 'other', null, false, true);
      stats.deleted++;
      return;
    }
    // A tombstone, so the original, if it is replayed later, stays deleted.
    yield run(this.sql.msgInsert, key.chat, key.id, key.fromMe, key.sender, null, ts ?? 0, 'other', null, 0, 1, ...this.words(null));
    stats.deleted++;
  }

  private *clearChat(jid: string, stats: ApplyStats): Steps<void> {
    const chat = yield* this.canon(jid);
    if (!chat) return;
    for (const row of (yield all(`SELECT seq, text FROM wa_messages WHERE chat_jid = ? AND deleted = FALSE`, chat)) as Array<{
      seq: number;
      text: string | null;
    }>) {
      yield* this.setText(row.seq, row.text, 'other', null, false, true);
      stats.deleted++;
    }
  }

  private *deleteChat(jid: string, stats: ApplyStats): Steps<void> {
    const chat = yield* this.canon(jid);
    if (!chat) return;
    for (const row of (yield all(`SELECT seq, text FROM wa_messages WHERE chat_jid = ?`, chat)) as Array<{ seq: number; text: string | null }>) {
      yield* this.index(row.seq, row.text, null);
      stats.deleted++;
    }
    yield run(`DELETE FROM wa_messages WHERE chat_jid = ?`, chat);
    yield run(S.chatDelete, chat);
  }

  // -------------------------------------------------------------------------------------------
  // Reads

  counts(): Promise<{ chats: number; messages: number; contacts: number }> {
    return this.engine.read(
      (function* () {
        const one = function* (sql: string): Steps<number> {
          return Number(((yield get(sql)) as { n: number | string }).n);
        };
        return {
          chats: yield* one(`SELECT CAST(COUNT(*) AS INTEGER) AS n FROM wa_chats`),
          messages: yield* one(`SELECT CAST(COUNT(*) AS INTEGER) AS n FROM wa_messages WHERE deleted = FALSE`),
          contacts: yield* one(`SELECT CAST(COUNT(*) AS INTEGER) AS n FROM wa_contacts`),
        };
      })(),
    );
  }

  private async one<R>(sql: string, ...params: unknown[]): Promise<R | undefined> {
    return this.engine.read(
      (function* () {
        return (yield get(sql, ...params)) as R | undefined;
      })(),
    );
  }

  private async many<R>(sql: string, ...params: unknown[]): Promise<R[]> {
    return this.engine.read(
      (function* () {
        return (yield all(sql, ...params)) as R[];
      })(),
    );
  }

  async chatOf(jid: string): Promise<ChatInfo | null> {
    const r = await this.one<Record<string, unknown>>(S.chatGet, jid);
    return r ? chatRow(r) : null;
  }

  async contactOf(jid: string): Promise<ContactInfo | null> {
    return (await this.one<ContactInfo>(S.contactGet, jid)) ?? null;
  }

  async allChats(): Promise<ChatInfo[]> {
    return (await this.many<Record<string, unknown>>(`SELECT ${CHAT_COLUMNS} FROM wa_chats`)).map(chatRow);
  }

  allContacts(): Promise<ContactInfo[]> {
    return this.many<ContactInfo>(`SELECT jid, name, notify, verified_name FROM wa_contacts`);
  }

  /** The latest push name a person's messages carried (for people never saved as a contact). */
  async pushNameOf(jid: string): Promise<string | null> {
    const r = await this.one<{ push_name: string }>(
      `SELECT push_name FROM wa_messages WHERE sender_jid = ? AND push_name IS NOT NULL ORDER BY ts DESC, seq DESC LIMIT 1`,
      jid,
    );
    return r?.push_name ?? null;
  }

  async latestChats(limit: number, unreadOnly: boolean): Promise<ChatInfo[]> {
    const sql = `SELECT ${CHAT_COLUMNS} FROM wa_chats ${unreadOnly ? 'WHERE unread > 0' : ''} ORDER BY COALESCE(last_at, 0) DESC, jid LIMIT ?`;
    return (await this.many<Record<string, unknown>>(sql, limit)).map(chatRow);
  }

  async messageByKey(chatJid: string, id: string, fromMe: boolean): Promise<MessageInfo | null> {
    const chat = await this.canonical(chatJid);
    const r = chat
      ? await this.one<Record<string, unknown>>(
          `SELECT ${MESSAGE_COLUMNS} FROM wa_messages m WHERE m.chat_jid = ? AND m.msg_id = ? AND m.from_me = ?`,
          chat,
          id,
          fromMe ? 1 : 0,
        )
      : undefined;
    return r ? messageRow(r) : null;
  }

  async lastMessage(chat: string): Promise<MessageInfo | null> {
    const r = await this.one<Record<string, unknown>>(
      `SELECT ${MESSAGE_COLUMNS} FROM wa_messages m WHERE m.chat_jid = ? AND m.ts > 0 ORDER BY m.ts DESC, m.seq DESC LIMIT 1`,
      chat,
    );
    return r ? messageRow(r) : null;
  }

  /** One chat's messages, newest first, older than (ts, seq) when given. Tombstones without a time are left out. */
  async messages(chat: string, limit: number, before?: { ts: number; seq?: number }): Promise<MessageInfo[]> {
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
    return (await this.many<Record<string, unknown>>(sql, ...params, limit)).map(messageRow);
  }

  /**
   * Full-text search: FTS5 on SQLite, the tsvector column on PostgreSQL (store-engines.ts), with the
   * same filters. Up to RANKED_MAX matches are ranked (best first, then newest); beyond that the
   * newest matches come first (see the engines for why).
   */
  search(f: SearchFilters): Promise<{ order: 'relevance' | 'newest'; rows: SearchRow[] }> {
    const where = ['m.deleted = FALSE'];
    const params: unknown[] = [];
    if (f.chats) {
      where.push(`m.chat_jid IN (${f.chats.map(() => '?').join(', ') || 'NULL'})`);
      params.push(...f.chats);
    }
    if (f.fromMe) where.push('m.from_me = TRUE');
    else if (f.senders) {
      where.push(`m.sender_jid IN (${f.senders.map(() => '?').join(', ') || 'NULL'})`, 'm.from_me = FALSE');
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
    return this.engine.search(where, params, f);
  }
}
