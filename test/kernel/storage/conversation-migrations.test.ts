import * as fs from 'node:fs';
import * as path from 'node:path';
import Database from 'better-sqlite3';
import { ConversationStore } from '../../../kernel/agent/conversation-store.js';
import { ConversationRow, MessageRow, SummaryRow, ToolActivityRow } from '../../../kernel/agent/conversation-entities.js';
import { openSqlite } from '../../../kernel/storage/sqlite.js';
import { tempDir } from '../../helpers/kernel-fixture.js';

const ALL_MIGRATIONS = [
  'CreateConversations1796064597881',
  'AddSummariesAndMessageModel1796500000000',
  'TitleAsText1796600000000',
  'AddMessageReasoning1796700000000',
  'AddActivityEdit1796800000000',
  'AddActivityItems1797200000000',
  'AddConversationMode1797300000000',
];
const ENTITIES = [ConversationRow, MessageRow, ToolActivityRow, SummaryRow];

/** The stored schema, whitespace normalised, and the recorded migrations. */
function schemaOf(file: string): { schema: string[]; migrations: string[] } {
  const db = new Database(file, { readonly: true });
  try {
    const rows = db.prepare(`SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name`).all() as Array<Record<string, string | null>>;
    const schema = rows.map((r) => `${r.type} ${r.name} on ${r.tbl_name}: ${(r.sql ?? '').replace(/\s+/g, ' ').trim()}`);
    const recorded = rows.some((r) => r.name === 'migrations');
    const migrations = recorded ? (db.prepare(`SELECT name FROM migrations ORDER BY id`).all() as Array<{ name: string }>).map((r) => r.name) : [];
    return { schema, migrations };
  } finally {
    db.close();
  }
}

describe("the conversation store's migrations", () => {
  let store: ConversationStore | undefined;
  afterEach(async () => {
    await store?.close();
    store = undefined;
  });

  it('adopts an agent.sqlite made by synchronize, keeping its conversations, and ends with the schema a new file gets', async () => {
    // The file as the kernel made it before migrations: the first schema's tables (what synchronize
    // made from the entities then, see the first migration), no migrations table.
    const old = path.join(tempDir(), 'agent.sqlite');
    const { CONVERSATION_MIGRATIONS } = await import('../../../kernel/agent/conversation-migrations.js');
    await (await openSqlite(old, { entities: ENTITIES, migrations: CONVERSATION_MIGRATIONS.slice(0, 1) })).destroy();
    const db = new Database(old);
    db.exec(`DROP TABLE migrations`);
    db.exec(`INSERT INTO conversations (id, title, provider, model) VALUES ('c1', 'Made before migrations', 'scripted', 'm')`);
    db.exec(
      `INSERT INTO messages (id, conversationId, seq, role, content, toolCalls, isError) VALUES ('m1', 'c1', 1, 'user', 'hello', NULL, 0), ('m2', 'c1', 2, 'assistant', 'hi', '[{"id":"t1","name":"echo","arguments":{"text":"x"}}]', 0)`,
    );
    db.close();

    store = new ConversationStore(old);
    expect(await store.info('c1')).toMatchObject({ title: 'Made before migrations', provider: 'scripted', model: 'm', messages: 2 });
    expect(await store.history('c1')).toEqual([
      { role: 'user', content: 'hello' },
      { role: 'assistant', content: 'hi', toolCalls: [{ id: 't1', name: 'echo', arguments: { text: 'x' } }] },
    ]);
    await store.appendTurn('c1', [{ role: 'user', content: 'again' }], []);
    await store.close();

    const fresh = path.join(tempDir(), 'agent.sqlite');
    store = new ConversationStore(fresh);
    await store.create({ title: 'New' });
    await store.close();

    // The plaintext rows were encrypted as the file was opened, and the file rewritten: no trace left.
    const bytes = fs.readFileSync(old).toString('latin1');
    expect(bytes.includes('Made before migrations')).toBe(false);
    expect(bytes.includes('"text":"x"')).toBe(false);
    const adopted = schemaOf(old);
    expect(adopted.migrations).toEqual(ALL_MIGRATIONS);
    expect(adopted).toEqual(schemaOf(fresh));
    expect(adopted.schema.filter((s) => s.startsWith('table '))).toEqual([
      expect.stringMatching(/^table conversation_summaries on conversation_summaries: CREATE TABLE "conversation_summaries"/),
      expect.stringMatching(/^table conversations on conversations: CREATE TABLE "conversations"/),
      expect.stringMatching(/^table messages on messages: CREATE TABLE "messages"/),
      expect.stringMatching(/^table migrations on migrations: /),
      expect.stringMatching(/^table sqlite_sequence on sqlite_sequence: /),
      expect.stringMatching(/^table tool_activity on tool_activity: CREATE TABLE "tool_activity"/),
    ]);
  });

  it('makes a new file whose schema is what synchronize would make from the entities', async () => {
    const fresh = path.join(tempDir(), 'agent.sqlite');
    const ds = await openSqlite(fresh, {
      entities: ENTITIES,
      migrations: (await import('../../../kernel/agent/conversation-migrations.js')).CONVERSATION_MIGRATIONS,
    });
    try {
      expect((await ds.driver.createSchemaBuilder().log()).upQueries.map((q) => q.query)).toEqual([]);
    } finally {
      await ds.destroy();
    }
    // And the text of each table and index is the same as a synchronized file's (the migrations table aside).
    const synced = path.join(tempDir(), 'agent.sqlite');
    await (await openSqlite(synced, { entities: ENTITIES, migrations: [], synchronize: true })).destroy();
    const own = (file: string) => schemaOf(file).schema.filter((s) => !/ on (migrations|sqlite_sequence):/.test(s));
    expect(own(fresh)).toEqual(own(synced));
  });

  it('opens the file once when the first calls arrive together, so close() leaves no connection behind', async () => {
    const file = path.join(tempDir(), 'agent.sqlite');
    store = new ConversationStore(file);
    await Promise.all([store.create({ title: 'a' }), store.create({ title: 'b' }), store.list()]);
    expect((await store.list()).map((c) => c.title).sort()).toEqual(['a', 'b']);
    await store.close();
    // The last connection to a WAL database removes the -wal file as it closes.
    expect(fs.existsSync(`${file}-wal`)).toBe(false);
    expect(schemaOf(file).migrations).toEqual(ALL_MIGRATIONS);
  });
});
