import { proto } from 'baileys';
import { linkedKernel, textMessage, value } from './helpers.js';
import { ME } from './fake-socket.js';

const ALICE = '491701111111@s.whatsapp.net';
const FAMILY = '120363000000000001@g.us';

describe('whatsapp history', () => {
  test('a history sync chunk fills the chats, their last messages and unread counts', async () => {
    const { fx, sock } = await linkedKernel();
    await sock.historySync({
      syncType: proto.HistorySync.HistorySyncType.INITIAL_BOOTSTRAP,
      conversations: [
        {
          id: ALICE,
          name: 'Alice Weber',
          unreadCount: 2,
          conversationTimestamp: 1767268900,
          messages: [
            { message: { key: { remoteJid: ALICE, fromMe: false, id: 'A2' }, message: { conversation: 'see you at the lake' }, messageTimestamp: 1767268900 } },
            { message: { key: { remoteJid: ALICE, fromMe: true, id: 'A1' }, message: { conversation: 'shall we swim?' }, messageTimestamp: 1767268800 } },
          ],
        },
      ],
    });
    const latest = value(await fx.call('whatsapp_latest', {}));
    expect(latest.chats).toEqual([
      expect.objectContaining({
        chat_id: ALICE,
        name: 'Alice Weber',
        number: '+491701111111',
        is_group: false,
        unread: 2,
        last_message: expect.objectContaining({ from: 'Alice Weber', text: 'see you at the lake' }),
      }),
    ]);
    void ME;
    void FAMILY;
    void textMessage;
  });
});
