import { proto } from 'baileys';
import { error, linkedKernel, textMessage, value, whatsappKernel } from './helpers.js';
import { msgId } from './fake-socket.js';

const ALICE = '491701111111@s.whatsapp.net';
const BORA = '491702222222@s.whatsapp.net';
const BORA_LID = '180000000000002@lid';
const FAMILY = '120363000000000001@g.us';
const T0 = 1767268800; // 2026-01-01T12:00:00Z

const HistoryType = proto.HistorySync.HistorySyncType;

function historyMessage(chat: string, id: string, text: string, ts: number, extra: { fromMe?: boolean; participant?: string; pushName?: string } = {}) {
  return {
    message: {
      key: { remoteJid: chat, fromMe: extra.fromMe ?? false, id, ...(extra.participant ? { participant: extra.participant } : {}) },
      message: { conversation: text },
      messageTimestamp: ts,
      ...(extra.pushName ? { pushName: extra.pushName } : {}),
    },
  };
}

const chunkOne: proto.IHistorySync = {
  syncType: HistoryType.INITIAL_BOOTSTRAP,
  conversations: [
    {
      id: ALICE,
      name: 'Alice Weber',
      unreadCount: 2,
      conversationTimestamp: T0 + 100,
      messages: [historyMessage(ALICE, 'A2', 'see you at the lake', T0 + 100), historyMessage(ALICE, 'A1', 'shall we swim tomorrow?', T0, { fromMe: true })],
    },
    {
      id: FAMILY,
      name: 'Family',
      unreadCount: 0,
      conversationTimestamp: T0 + 50,
      messages: [historyMessage(FAMILY, 'F1', 'dinner is at eight', T0 + 50, { participant: BORA, pushName: 'Bora' })],
    },
  ],
  pushnames: [{ id: BORA, pushname: 'Bora' }],
};

const chunkTwo: proto.IHistorySync = {
  syncType: HistoryType.RECENT,
  conversations: [
    {
      id: ALICE,
      messages: [historyMessage(ALICE, 'A0', 'the lake is warm this week', T0 - 3600)],
    },
  ],
};

describe('whatsapp history from Baileys events', () => {
  test('a history sync chunk fills the chats with their last messages and unread counts', async () => {
    const { fx, sock } = await linkedKernel();
    await sock.historySync(chunkOne);
    const latest = value(await fx.call('whatsapp_latest', {}));
    expect(latest.chats.map((c: { chat_id: string }) => c.chat_id)).toEqual([ALICE, FAMILY]);
    expect(latest.chats[0]).toEqual(
      expect.objectContaining({
        name: 'Alice Weber',
        number: '+491701111111',
        is_group: false,
        unread: 2,
        last_message: expect.objectContaining({ from: 'Alice Weber', text: 'see you at the lake', at: '2026-01-01T12:01:40.000Z' }),
      }),
    );
    expect(latest.chats[1]).toEqual(
      expect.objectContaining({ name: 'Family', is_group: true, number: null, last_message: expect.objectContaining({ from: 'Bora' }) }),
    );
    expect(latest.connection).toMatch(/^connected/);
  });

  test('a replayed chunk and a duplicate message change nothing', async () => {
    const { fx, sock } = await linkedKernel();
    await sock.historySync(chunkOne);
    const before = value(await fx.call('whatsapp_messages', { chat: ALICE }));
    await sock.historySync(chunkOne, 2);
    await sock.receive(textMessage(ALICE, 'see you at the lake', { id: 'A2', ts: T0 + 100 }), 'append');
    const after = value(await fx.call('whatsapp_messages', { chat: ALICE }));
    expect(after.messages).toEqual(before.messages);
    expect(after.messages.map((m: { text: string }) => m.text)).toEqual(['see you at the lake', 'shall we swim tomorrow?']);
    expect(value(await fx.call('whatsapp_search', { query: 'lake' })).results).toHaveLength(1);
  });

  test('messages come newest first with sender names, and page back with next_before', async () => {
    const { fx, sock } = await linkedKernel();
    await sock.historySync(chunkOne);
    await sock.historySync(chunkTwo, 2);
    const first = value(await fx.call('whatsapp_messages', { chat: 'Alice Weber', limit: 2 }));
    expect(first.chat).toEqual({ chat_id: ALICE, name: 'Alice Weber', number: '+491701111111', is_group: false });
    expect(first.messages.map((m: { id: string; from: string }) => `${m.id} ${m.from}`)).toEqual(['A2 Alice Weber', 'A1 me']);
    expect(first.next_before).toEqual(expect.any(String));
    const second = value(await fx.call('whatsapp_messages', { chat: 'Alice Weber', limit: 2, before: first.next_before }));
    expect(second.messages.map((m: { id: string }) => m.id)).toEqual(['A0']);
    expect(second.next_before).toBeUndefined();
    const byDate = value(await fx.call('whatsapp_messages', { chat: ALICE, before: '2026-01-01T11:30:00Z' }));
    expect(byDate.messages.map((m: { id: string }) => m.id)).toEqual(['A0']);
  });

  test('a new message counts as unread once, even when replayed; a read mark clears the count', async () => {
    const { fx, sock } = await linkedKernel();
    await sock.historySync(chunkOne);
    const msg = textMessage(ALICE, 'are you coming?', { ts: T0 + 200, pushName: 'Alice' });
    await sock.receive(msg);
    await sock.receive(msg);
    const unread = async () => value(await fx.call('whatsapp_latest', {})).chats.find((c: { chat_id: string }) => c.chat_id === ALICE).unread;
    expect(await unread()).toBe(3);
    sock.emit('chats.update', [{ id: ALICE, unreadCount: 0 }]);
    await sock.settle();
    expect(await unread()).toBe(0);
    const unreadOnly = value(await fx.call('whatsapp_latest', { unread_only: true }));
    expect(unreadOnly.chats).toEqual([]);
  });

  test('an edit replaces the text, in the list and in search; a replayed original does not undo it', async () => {
    const { fx, sock } = await linkedKernel();
    const original = textMessage(ALICE, 'meet at the station', { id: 'E1', ts: T0 + 300 });
    await sock.receive(original);
    // What the sender's phone sends for an edit; Baileys' processMessage turns it into messages.update.
    await sock.receive({
      key: { remoteJid: ALICE, fromMe: false, id: msgId() },
      messageTimestamp: T0 + 360,
      message: {
        protocolMessage: {
          type: proto.Message.ProtocolMessage.Type.MESSAGE_EDIT,
          key: { remoteJid: ALICE, fromMe: false, id: 'E1' },
          editedMessage: { conversation: 'meet at the harbour' },
          timestampMs: (T0 + 360) * 1000,
        },
      },
    });
    await sock.receive(original);
    const list = value(await fx.call('whatsapp_messages', { chat: ALICE }));
    expect(list.messages).toEqual([expect.objectContaining({ id: 'E1', text: 'meet at the harbour', edited: true, at: '2026-01-01T12:05:00.000Z' })]);
    expect(value(await fx.call('whatsapp_search', { query: 'harbour' })).results).toEqual([expect.objectContaining({ id: 'E1', edited: true })]);
    expect(value(await fx.call('whatsapp_search', { query: 'station' })).results).toEqual([]);
  });

  test('a deleted message keeps its place without its text and stays deleted when replayed', async () => {
    const { fx, sock } = await linkedKernel();
    const original = textMessage(ALICE, 'my door code is 4711', { id: 'D1', ts: T0 + 400 });
    await sock.receive(original);
    await sock.receive({
      key: { remoteJid: ALICE, fromMe: false, id: msgId() },
      messageTimestamp: T0 + 460,
      message: { protocolMessage: { type: proto.Message.ProtocolMessage.Type.REVOKE, key: { remoteJid: ALICE, fromMe: false, id: 'D1' } } },
    });
    await sock.receive(original);
    const list = value(await fx.call('whatsapp_messages', { chat: ALICE }));
    expect(list.messages).toEqual([expect.objectContaining({ id: 'D1', text: null, deleted: true })]);
    expect(value(await fx.call('whatsapp_search', { query: 'door code' })).results).toEqual([]);
    // messages.delete (a chat cleared on the phone) works the same way.
    await sock.receive(textMessage(ALICE, 'another secret', { id: 'D2', ts: T0 + 500 }));
    sock.emit('messages.delete', { keys: [{ remoteJid: ALICE, fromMe: false, id: 'D2' }] });
    await sock.settle();
    expect(value(await fx.call('whatsapp_search', { query: 'secret' })).results).toEqual([]);
  });

  test('a deletion that arrives before its message leaves a tombstone the message cannot revive', async () => {
    const { fx, sock } = await linkedKernel();
    await sock.receive(textMessage(ALICE, 'hello', { id: 'H1', ts: T0 }));
    sock.emit('messages.update', [{ key: { remoteJid: ALICE, fromMe: false, id: 'LATE' }, update: { message: null, messageStubType: 1 } }]);
    await sock.settle();
    await sock.receive(textMessage(ALICE, 'this was unsent', { id: 'LATE', ts: T0 + 10 }));
    expect(value(await fx.call('whatsapp_search', { query: 'unsent' })).results).toEqual([]);
  });

  test('a chat known by its LID folds into the phone number once WhatsApp reveals it', async () => {
    const { fx, sock } = await linkedKernel();
    await sock.receive(textMessage(BORA_LID, 'hi, it is Bora', { id: 'L1', ts: T0, pushName: 'Bora' }));
    let latest = value(await fx.call('whatsapp_latest', {}));
    expect(latest.chats).toEqual([expect.objectContaining({ chat_id: BORA_LID, name: 'Bora', number: null, unread: 1 })]);
    sock.emit('lid-mapping.update', { lid: BORA_LID, pn: BORA });
    await sock.settle();
    await sock.receive(textMessage(BORA, 'my number works too', { id: 'L2', ts: T0 + 60 }));
    latest = value(await fx.call('whatsapp_latest', {}));
    expect(latest.chats).toEqual([expect.objectContaining({ chat_id: BORA, name: 'Bora', number: '+491702222222', unread: 2 })]);
    const list = value(await fx.call('whatsapp_messages', { chat: '+49 170 2222222' }));
    expect(list.messages.map((m: { id: string; from: string }) => `${m.id} ${m.from}`)).toEqual(['L2 Bora', 'L1 Bora']);
    // The LID still finds the chat.
    expect(value(await fx.call('whatsapp_messages', { chat: BORA_LID })).chat.chat_id).toBe(BORA);
  });

  test('history sync LID mappings and the alternate ids on message keys join the same person', async () => {
    const { fx, sock } = await linkedKernel();
    await sock.historySync({
      syncType: HistoryType.INITIAL_BOOTSTRAP,
      conversations: [{ id: BORA_LID, name: 'Bora Demir', messages: [historyMessage(BORA_LID, 'M1', 'from the history', T0)] }],
      phoneNumberToLidMappings: [{ pnJid: BORA, lidJid: BORA_LID }],
    });
    await sock.receive(textMessage(BORA, 'live message', { id: 'M2', ts: T0 + 10, remoteJidAlt: BORA_LID }));
    const latest = value(await fx.call('whatsapp_latest', {}));
    expect(latest.chats).toEqual([expect.objectContaining({ chat_id: BORA, name: 'Bora Demir' })]);
    expect(value(await fx.call('whatsapp_messages', { chat: 'Bora Demir' })).messages.map((m: { id: string }) => m.id)).toEqual(['M2', 'M1']);
  });

  test('group messages name each sender: the saved contact name first, else their own', async () => {
    const { fx, sock } = await linkedKernel();
    sock.emit('groups.upsert', [{ id: FAMILY, subject: 'Family', participants: [] } as never]);
    await sock.settle();
    await sock.receive(textMessage(FAMILY, 'who brings bread?', { participant: BORA, pushName: 'B.', ts: T0 }));
    await sock.receive(textMessage(FAMILY, 'I do', { participant: ALICE, pushName: 'Alice', ts: T0 + 5 }));
    sock.emit('contacts.upsert', [{ id: BORA, name: 'Bora (brother)' }]);
    await sock.settle();
    const list = value(await fx.call('whatsapp_messages', { chat: 'family' }));
    expect(list.chat).toEqual(expect.objectContaining({ chat_id: FAMILY, name: 'Family', is_group: true }));
    expect(list.messages.map((m: { from: string; text: string }) => `${m.from}: ${m.text}`)).toEqual(['Alice: I do', 'Bora (brother): who brings bread?']);
  });

  test('a chat deleted on the phone disappears with its messages', async () => {
    const { fx, sock } = await linkedKernel();
    await sock.historySync(chunkOne);
    sock.emit('chats.delete', [FAMILY]);
    await sock.settle();
    expect(value(await fx.call('whatsapp_latest', {})).chats.map((c: { chat_id: string }) => c.chat_id)).toEqual([ALICE]);
    expect(value(await fx.call('whatsapp_search', { query: 'dinner' })).results).toEqual([]);
  });

  test('a restart in the middle of a history sync loses nothing and duplicates nothing', async () => {
    const { fx, sock } = await linkedKernel();
    await sock.historySync(chunkOne);
    await sock.receive(textMessage(ALICE, 'are you there?', { id: 'R1', ts: T0 + 200 }));
    // memo serve stops before the phone has sent the rest; next time it sends the first chunk again, then the rest.
    const again = await fx.restartWhatsApp();
    const sock2 = await again.serve();
    sock2.open();
    await sock2.settle();
    await sock2.historySync(chunkOne);
    await sock2.historySync(chunkTwo, 2);
    await sock2.receive(textMessage(ALICE, 'are you there?', { id: 'R1', ts: T0 + 200 }));
    const list = value(await again.call('whatsapp_messages', { chat: ALICE }));
    expect(list.messages.map((m: { id: string }) => m.id)).toEqual(['R1', 'A2', 'A1', 'A0']);
    const latest = value(await again.call('whatsapp_latest', {}));
    expect(latest.chats.find((c: { chat_id: string }) => c.chat_id === ALICE).unread).toBe(2);
    expect(
      value(await again.call('whatsapp_search', { query: 'lake' }))
        .results.map((r: { id: string }) => r.id)
        .sort(),
    ).toEqual(['A0', 'A2']);
  });

  test('a batch that fails halfway leaves nothing behind, and applies whole when the phone sends it again', async () => {
    const { fx, sock } = await linkedKernel();
    const good = [0, 1, 2, 3].map((i) => textMessage(ALICE, `batch message ${i}`, { id: `B${i}`, ts: T0 + i }));
    // The third message breaks while it is being stored (as a crash would, mid-transaction).
    const broken = {
      ...good[2]!,
      get message(): never {
        throw new Error('simulated crash');
      },
    };
    sock.emit('messaging-history.set', { chats: [], contacts: [], messages: [good[0]!, good[1]!, broken, good[3]!], syncType: 1, isLatest: true });
    await sock.settle();
    expect(fx.logger.lines.some((l) => l.level === 'warn' && /could not apply events: simulated crash/.test(l.message))).toBe(true);
    expect(error(await fx.call('whatsapp_messages', { chat: ALICE })).code).toBe('NOT_FOUND');
    sock.emit('messaging-history.set', { chats: [], contacts: [], messages: good, syncType: 1, isLatest: true });
    await sock.settle();
    expect(value(await fx.call('whatsapp_messages', { chat: ALICE })).messages.map((m: { id: string }) => m.id)).toEqual(['B3', 'B2', 'B1', 'B0']);
  });

  test('with nothing linked and no history, the read tools say how to link', async () => {
    const fx = await whatsappKernel();
    for (const [tool, args] of [
      ['whatsapp_latest', {}],
      ['whatsapp_messages', { chat: 'Alice' }],
      ['whatsapp_search', { query: 'lake' }],
    ] as const) {
      const e = error(await fx.call(tool, args));
      expect(e.code).toBe('NOT_FOUND');
      expect(e.message).toMatch(/memo whatsapp link/);
    }
  });

  test('the history stays readable while memo serve is not running, and says so', async () => {
    const { fx, sock } = await linkedKernel();
    await sock.historySync(chunkOne);
    const again = await fx.restartWhatsApp();
    const latest = value(await again.call('whatsapp_latest', {}));
    expect(latest.chats).toHaveLength(2);
    expect(latest.connection).toMatch(/memo serve/);
  });
});
