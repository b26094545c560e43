/**
 * WhatsApp search specifics on both engines: the same batches of Baileys events applied to a
 * whatsapp.sqlite (FTS5) and to the PostgreSQL store (tsvector), then the same queries through the
 * same store API. Names and words in other languages and scripts, accents, quotes and backslashes in
 * the text (written into a tsvector literal), numbers, phrases, prefixes, stems, the filters, a LID
 * folded into its number, deletions and edits: the same messages, in the same order, with the same
 * snippets. Also what a person upgrading brings along: an existing whatsapp.sqlite is copied once.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Database } from 'better-sqlite3';
import type { DataSource } from 'typeorm';
import { DatabaseUrl } from '../../kernel/storage/database-url.js';
import { openPackDatabase } from '../../kernel/storage/pack-database.js';
import { ENTITIES, MIGRATIONS } from '../../plugins/whatsapp/schema.js';
import { matchExpression } from '../../plugins/whatsapp/search-query.js';
import { PostgresEngine, SqliteEngine } from '../../plugins/whatsapp/store-engines.js';
import { WhatsAppStore, type SearchFilters, type WhatsAppEvents } from '../../plugins/whatsapp/store.js';
import { tempDir } from '../helpers/kernel-fixture.js';
import { linkedKernel, textMessage, value, whatsappKernel } from '../plugins/whatsapp/helpers.js';
import { onPostgres } from './on-postgres.js';

const pg = onPostgres(['pack_whatsapp__whatsapp']);

const ALICE = '491701111111@s.whatsapp.net';
const ZEYNEP_LID = '99887766@lid';
const ZEYNEP = '905551234567@s.whatsapp.net';
const GROUP = '120363000000000001@g.us';
const T0 = 1767268800;
const LONG =
  'one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty the passport is in the top drawer of the desk twenty-one twenty-two';

const BATCHES: WhatsAppEvents[] = [
  {
    'messaging-history.set': {
      chats: [{ id: ALICE, name: 'Alice Weber' }, { id: GROUP, name: 'Aile' }, { id: ZEYNEP_LID }],
      contacts: [{ id: ZEYNEP_LID, notify: 'Zeynep Yılmaz' }],
      messages: [
        textMessage(ALICE, 'Café au lait at the résumé workshop, naïve question', { id: 'M1', ts: T0 }),
        textMessage(ALICE, "it's a back\\slash and a 'quoted' word: O'Brien", { id: 'M2', ts: T0 + 1 }),
        textMessage(GROUP, 'Yılmaz ailesi cumartesi doğum günü için toplanıyor', { id: 'M3', ts: T0 + 2, participant: ALICE }),
        textMessage(GROUP, 'Привет, как дела? Встреча в 10:30 в комнате 101', { id: 'M4', ts: T0 + 3, participant: ZEYNEP_LID }),
        textMessage(ALICE, 'Die Straße ist gesperrt, Umleitung über Müllerstraße', { id: 'M5', ts: T0 + 4 }),
        textMessage(ALICE, '東京 meeting 🎉 party tonight, running late', { id: 'M6', ts: T0 + 5, fromMe: true }),
        textMessage(ZEYNEP_LID, LONG, { id: 'M7', ts: T0 + 6 }),
        textMessage(ZEYNEP_LID, 'runners run; the runner was running', { id: 'M8', ts: T0 + 7 }),
        textMessage(ALICE, 'party party party at the lake', { id: 'M9', ts: T0 + 8 }),
        textMessage(ALICE, 'this one is deleted: party', { id: 'M10', ts: T0 + 9 }),
        textMessage(ALICE, 'typo: pary tonight', { id: 'M11', ts: T0 + 10 }),
      ],
      isLatest: true,
    },
  },
  // The LID's number becomes known: its chat and messages fold into the number's.
  { 'lid-mapping.update': { lid: ZEYNEP_LID, pn: ZEYNEP } },
  {
    'messages.update': [
      { key: { remoteJid: ALICE, id: 'M10', fromMe: false }, update: { message: null, messageStubType: 1 } },
      {
        key: { remoteJid: ALICE, id: 'M11', fromMe: false },
        update: { message: { editedMessage: { message: { conversation: 'fixed: party tonight' } } } },
      },
    ],
  },
];

const QUERIES: Array<[string, Partial<SearchFilters>?]> = [
  ['cafe'],
  ['CAFÉ resume'],
  ['naive'],
  ["it's"],
  ['back'],
  ['slash'],
  ["'quoted'"],
  ["O'Brien"],
  ['yılmaz'],
  ['Yilmaz'],
  ['doğum günü'],
  ['"doğum günü"'],
  ['привет'],
  ['ДЕЛА'],
  ['101'],
  ['10'],
  ['straße'],
  ['müllerstraße'],
  ['mullerstr*'],
  ['東京'],
  ['party'],
  ['party tonight'],
  ['"party tonight"'],
  ['run'],
  ['running'],
  ['runn*'],
  ['r*'],
  ['passport drawer'],
  ['deleted'],
  ['pary'],
  ['fixed'],
  ['twenty'],
  ['party', { chats: [ALICE] }],
  ['party', { fromMe: true }],
  ['run', { senders: [ZEYNEP] }],
  ['party', { after: T0 + 6, before: T0 + 9 }],
];

async function sqliteStore(): Promise<{ store: WhatsAppStore; ds: DataSource }> {
  const ds = await openPackDatabase(tempDir(), { name: 'whatsapp', entities: ENTITIES, migrations: MIGRATIONS });
  return { store: new WhatsAppStore(new SqliteEngine((ds.driver as unknown as { databaseConnection: Database }).databaseConnection)), ds };
}

async function postgresStore(): Promise<{ store: WhatsAppStore; ds: DataSource }> {
  const ds = await openPackDatabase(
    tempDir(),
    { name: 'whatsapp', entities: ENTITIES, migrations: MIGRATIONS, portable: true },
    { url: DatabaseUrl.parse(pg.url()), packId: 'whatsapp' },
  );
  expect(ds.options.type).toBe('postgres');
  return { store: new WhatsAppStore(new PostgresEngine(ds)), ds };
}

async function answers(store: WhatsAppStore) {
  const out: Array<{ query: string; order: string; hits: Array<[string, string, string]> }> = [];
  for (const [query, filters] of QUERIES) {
    const { match, parts } = matchExpression(query);
    const r = await store.search({ match: match!, parts, limit: 20, ...filters });
    out.push({ query, order: r.order, hits: r.rows.map((m) => [m.chat_jid, m.msg_id, m.snippet]) });
  }
  return out;
}

describe('WhatsApp search: SQLite (FTS5) and PostgreSQL (tsvector) answer alike', () => {
  it('finds the same messages, in the same order, with the same snippets, for every query', async () => {
    const lite = await sqliteStore();
    const post = await postgresStore();
    try {
      for (const batch of BATCHES) {
        expect(await post.store.apply(batch)).toEqual(await lite.store.apply(batch));
      }
      const onSqlite = await answers(lite.store);
      const onPostgres = await answers(post.store);
      expect(onPostgres).toEqual(onSqlite);
      // The corpus exercises what it claims to: folded accents, other scripts, stems, the LID fold, deletions and edits.
      const hits = (q: string) => onSqlite.find((a) => a.query === q)!.hits.map((h) => h[1]);
      expect(hits('cafe')).toEqual(['M1']);
      expect(hits('Yilmaz')).toEqual([]);
      expect(hits('yılmaz')).toEqual(['M3']);
      expect(hits('привет')).toEqual(['M4']);
      expect(hits('run')).toEqual(['M8', 'M6']);
      expect(hits('deleted')).toEqual([]);
      expect(hits('fixed')).toEqual(['M11']);
      expect(hits('pary')).toEqual([]);
      expect(hits('passport drawer')).toEqual(['M7']);
      expect(onSqlite.find((a) => a.query === 'passport drawer')!.hits[0]![2]).toMatch(/^….*\[passport\].*\[drawer\].*…$/);
      expect(onSqlite.find((a) => a.query === 'run')!.hits.every((h) => h[0] !== ZEYNEP_LID)).toBe(true);
      // The other reads agree too.
      expect(await post.store.counts()).toEqual(await lite.store.counts());
      expect(await post.store.latestChats(10, false)).toEqual(await lite.store.latestChats(10, false));
      expect(await post.store.messages(ZEYNEP, 10)).toEqual(await lite.store.messages(ZEYNEP, 10));
      expect(await post.store.allContacts()).toEqual(await lite.store.allContacts());
      expect(await post.store.canonical(ZEYNEP_LID)).toBe(ZEYNEP);
    } finally {
      await lite.ds.destroy();
      await post.ds.destroy();
    }
  });

  it('past 2,000 matches both return the newest first', async () => {
    const lite = await sqliteStore();
    const post = await postgresStore();
    try {
      const many = Array.from({ length: 2050 }, (_, i) => textMessage(ALICE, `ok ${i % 5 === 0 ? 'sure ' : ''}ok`, { id: `N${i}`, ts: T0 + i }));
      const batch = { 'messaging-history.set': { chats: [], contacts: [], messages: many, isLatest: true } } as never;
      await lite.store.apply(batch);
      await post.store.apply(batch);
      for (const query of ['ok', 'sure']) {
        const { match, parts } = matchExpression(query);
        const [a, b] = await Promise.all([lite.store.search({ match: match!, parts, limit: 5 }), post.store.search({ match: match!, parts, limit: 5 })]);
        expect(b.order).toBe(a.order);
        expect(b.rows.map((r) => [r.msg_id, r.snippet])).toEqual(a.rows.map((r) => [r.msg_id, r.snippet]));
      }
      const { match, parts } = matchExpression('ok');
      expect((await post.store.search({ match: match!, parts, limit: 2 })).order).toBe('newest');
    } finally {
      await lite.ds.destroy();
      await post.ds.destroy();
    }
  });
});

describe('upgrading a data folder whose history is in whatsapp.sqlite', () => {
  it('copies the history into PostgreSQL once, the tools answer as before, and the file is kept as it was', async () => {
    const url = process.env.MEMO_DATABASE_URL;
    delete process.env.MEMO_DATABASE_URL;
    let before: { latest: unknown; messages: unknown; search: unknown };
    const { fx, sock } = await linkedKernel();
    try {
      await sock.receive(textMessage(ALICE, 'the boat leaves at nine', { id: 'U1', pushName: 'Alice', ts: T0 }));
      await sock.receive(textMessage(ALICE, 'bring the boat keys', { id: 'U2', ts: T0 + 60 }));
      await sock.receive(textMessage(ZEYNEP, 'see you on the boat', { id: 'U3', pushName: 'Zeynep', ts: T0 + 120 }));
      before = {
        latest: value(await fx.call('whatsapp_latest', {})).chats,
        messages: value(await fx.call('whatsapp_messages', { chat: 'Alice', limit: 1 })),
        search: value(await fx.call('whatsapp_search', { query: 'boat' })).results,
      };
      expect((before.search as unknown[]).length).toBe(3);
    } finally {
      await fx.close();
      process.env.MEMO_DATABASE_URL = url;
    }
    const file = path.join(fx.packData, 'whatsapp.sqlite');
    const bytes = fs.readFileSync(file);

    const upgraded = await whatsappKernel({ root: fx.root, dataDir: fx.dataDir });
    const page = value(await upgraded.call('whatsapp_messages', { chat: 'Alice', limit: 1 }));
    expect(value(await upgraded.call('whatsapp_latest', {})).chats).toEqual(before.latest);
    expect(value(await upgraded.call('whatsapp_search', { query: 'boat' })).results).toEqual(before.search);
    expect({ ...page, connection: null }).toEqual({ ...(before.messages as object), connection: null });
    // The cursor of the page before the upgrade still pages on: seqs were kept.
    expect(value(await upgraded.call('whatsapp_messages', { chat: 'Alice', before: page.next_before })).messages.map((m: { id: string }) => m.id)).toEqual([
      'U1',
    ]);
    expect(upgraded.logger.lines).toContainEqual({
      level: 'info',
      message: expect.stringMatching(/copied the history in .*whatsapp\.sqlite \(3 messages\) into PostgreSQL/),
    });
    expect(fs.readFileSync(file).equals(bytes)).toBe(true);
    // A restart copies nothing again.
    const again = await upgraded.restartWhatsApp();
    expect(value(await again.call('whatsapp_search', { query: 'boat' })).results).toEqual(before.search);
    expect(again.logger.lines.filter((l) => /whatsapp\.sqlite/.test(l.message))).toEqual([]);

    // Another instance with a history of its own in its file: the shared store is not empty, so that file is left alone and said so.
    process.env.MEMO_DATABASE_URL = '';
    const other = await linkedKernel();
    await other.sock.receive(textMessage(ALICE, 'a message only the other file has', { id: 'O1', ts: T0 + 500 }));
    await other.fx.close();
    process.env.MEMO_DATABASE_URL = url;
    const second = await whatsappKernel({ root: other.fx.root, dataDir: other.fx.dataDir });
    expect(value(await second.call('whatsapp_search', { query: 'boat' })).results).toEqual(before.search);
    expect(value(await second.call('whatsapp_search', { query: 'only' })).results).toEqual([]);
    expect(second.logger.lines).toContainEqual({
      level: 'warn',
      message: expect.stringMatching(/has a history of 1 messages that was not copied into PostgreSQL/),
    });
    const ds = await openPackDatabase(
      tempDir(),
      { name: 'whatsapp', entities: ENTITIES, migrations: MIGRATIONS, portable: true },
      { url: DatabaseUrl.parse(url!), packId: 'whatsapp' },
    );
    try {
      expect(await new WhatsAppStore(new PostgresEngine(ds)).counts()).toMatchObject({ messages: 3 });
    } finally {
      await ds.destroy();
    }
  });
});
