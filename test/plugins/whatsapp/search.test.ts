import { proto } from 'baileys';
import { error, linkedKernel, value, type WhatsAppFixture } from './helpers.js';
import type { FakeSocket } from './fake-socket.js';

const ALICE = '491701111111@s.whatsapp.net';
const BORA = '491702222222@s.whatsapp.net';
const FAMILY = '120363000000000001@g.us';
const DAY = 86_400;
const T0 = 1767268800; // 2026-01-01T12:00:00Z

const m = (chat: string, id: string, text: string, ts: number, extra: { fromMe?: boolean; participant?: string } = {}) => ({
  message: {
    key: { remoteJid: chat, fromMe: extra.fromMe ?? false, id, ...(extra.participant ? { participant: extra.participant } : {}) },
    message: { conversation: text },
    messageTimestamp: ts,
  },
});

async function seeded(): Promise<{ fx: WhatsAppFixture; sock: FakeSocket }> {
  const { fx, sock } = await linkedKernel();
  await sock.historySync({
    syncType: proto.HistorySync.HistorySyncType.INITIAL_BOOTSTRAP,
    conversations: [
      {
        id: ALICE,
        name: 'Alice Weber',
        messages: [
          m(ALICE, 'A1', 'The budget for the Istanbul office is in the spreadsheet', T0),
          m(ALICE, 'A2', 'budget budget budget: we talk about the budget a lot', T0 + DAY),
          m(ALICE, 'A3', 'I sent the budget spreadsheet', T0 + 2 * DAY, { fromMe: true }),
          m(ALICE, 'A4', 'running late, café at 5?', T0 + 3 * DAY),
        ],
      },
      {
        id: FAMILY,
        name: 'Family',
        messages: [
          m(FAMILY, 'F1', 'Istanbul trip in May: who books the flights?', T0 + DAY, { participant: BORA }),
          m(FAMILY, 'F2', 'C++ homework is due NOT tomorrow', T0 + 2 * DAY, { participant: ALICE }),
        ],
      },
    ],
  });
  // Names people gave themselves come in a sync of their own.
  await sock.historySync({ syncType: proto.HistorySync.HistorySyncType.PUSH_NAME, pushnames: [{ id: BORA, pushname: 'Bora' }] }, 2);
  return { fx, sock };
}

const ids = (v: { results: Array<{ id: string }> }) => v.results.map((r) => r.id);

describe('whatsapp_search', () => {
  test('finds every word, best match first, with a snippet marking the words', async () => {
    const { fx } = await seeded();
    const v = value(await fx.call('whatsapp_search', { query: 'budget istanbul' }));
    expect(ids(v)).toEqual(['A1']);
    expect(v.results[0]).toEqual(
      expect.objectContaining({
        chat_id: ALICE,
        chat: 'Alice Weber',
        is_group: false,
        from: 'Alice Weber',
        at: '2026-01-01T12:00:00.000Z',
        snippet: expect.stringContaining('[budget]'),
      }),
    );
    expect(v.results[0].snippet).toContain('[Istanbul]');
    // The message that says "budget" most, in fewest words, ranks first.
    expect(ids(value(await fx.call('whatsapp_search', { query: 'budget' })))[0]).toBe('A2');
  });

  test('phrases, prefixes, stems and accents', async () => {
    const { fx } = await seeded();
    expect(ids(value(await fx.call('whatsapp_search', { query: '"budget spreadsheet"' })))).toEqual(['A3']);
    expect(ids(value(await fx.call('whatsapp_search', { query: 'spread*' }))).sort()).toEqual(['A1', 'A3']);
    expect(ids(value(await fx.call('whatsapp_search', { query: 'run' })))).toEqual(['A4']);
    expect(ids(value(await fx.call('whatsapp_search', { query: 'cafe' })))).toEqual(['A4']);
  });

  test('query syntax in the words is searched for, never parsed', async () => {
    const { fx } = await seeded();
    expect(ids(value(await fx.call('whatsapp_search', { query: 'C++ NOT' })))).toEqual(['F2']);
    expect(ids(value(await fx.call('whatsapp_search', { query: 'homework AND (due' })))).toEqual([]);
    expect(ids(value(await fx.call('whatsapp_search', { query: 'homework "due' })))).toEqual(['F2']);
    expect(error(await fx.call('whatsapp_search', { query: '*** --' })).code).toBe('VALIDATION');
  });

  test('filters by chat, sender and dates', async () => {
    const { fx } = await seeded();
    expect(ids(value(await fx.call('whatsapp_search', { query: 'istanbul', chat: 'Family' })))).toEqual(['F1']);
    expect(ids(value(await fx.call('whatsapp_search', { query: 'istanbul', sender: 'Bora' })))).toEqual(['F1']);
    expect(ids(value(await fx.call('whatsapp_search', { query: 'homework', sender: 'Alice' })))).toEqual(['F2']);
    expect(ids(value(await fx.call('whatsapp_search', { query: 'budget', sender: 'me' })))).toEqual(['A3']);
    expect(ids(value(await fx.call('whatsapp_search', { query: 'budget', after: '2026-01-02', before: '2026-01-03' })))).toEqual(['A2']);
    const nobody = value(await fx.call('whatsapp_search', { query: 'budget', sender: 'Zed' }));
    expect(nobody.results).toEqual([]);
    expect(nobody.note).toMatch(/Nobody in the history is named "Zed"/);
    expect(error(await fx.call('whatsapp_search', { query: 'budget', after: 'last tuesday' })).code).toBe('VALIDATION');
  });

  test('a word in more messages than can be ranked quickly returns the newest matches first, and says so', async () => {
    const { fx, sock } = await seeded();
    const many = Array.from({ length: 2100 }, (_, i) => m(BORA, `N${i}`, `ok ${i % 7 === 0 ? 'sure ' : ''}ok`, T0 + 10 * DAY + i));
    await sock.historySync({ syncType: proto.HistorySync.HistorySyncType.FULL, conversations: [{ id: BORA, messages: many }] }, 3);
    const v = value(await fx.call('whatsapp_search', { query: 'ok', limit: 3 }));
    expect(v.order).toMatch(/^newest first/);
    expect(ids(v)).toEqual(['N2099', 'N2098', 'N2097']);
    expect(v.results[0].snippet).toBe('[ok] [ok]');
    expect(ids(value(await fx.call('whatsapp_search', { query: 'ok', chat: BORA, before: '2026-01-11T12:00:05Z', limit: 2 })))).toEqual(['N4', 'N3']);
    // Fewer matches are ranked.
    expect(value(await fx.call('whatsapp_search', { query: 'sure' })).order).toBe('best match first');
  });
});
