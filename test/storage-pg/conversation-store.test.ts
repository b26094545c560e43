/**
 * The conversation store on both backends: a SQLite file in the data folder (the default) and the
 * schema memo_agent of a shared PostgreSQL database (MEMO_DATABASE_URL / the kernel's databaseUrl).
 * Same flows, same answers; on PostgreSQL also: two instances see each other's conversations, and
 * the database holds only ciphertext.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { runTurn } from '../../kernel/agent/agent-loop.js';
import { ConversationStore } from '../../kernel/agent/conversation-store.js';
import { isMemoError } from '../../kernel/errors.js';
import { DatabaseUrl } from '../../kernel/storage/database-url.js';
import { makeKernel, tempDir, type Fixture } from '../helpers/kernel-fixture.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { reply, ScriptedProvider, toolCall } from '../helpers/scripted-provider.js';

let server: TestPostgres;
beforeAll(async () => {
  server = await startPostgres();
}, 120_000);

type Backend = 'sqlite' | 'postgres';

/** Where one "installation" keeps its conversations: a folder (key, SQLite file) and, on PostgreSQL, a database. */
interface Place {
  dir: string;
  url: string | null;
  open(): ConversationStore;
}

async function place(backend: Backend): Promise<Place> {
  const dir = tempDir();
  const url = backend === 'postgres' ? await server.database() : null;
  return { dir, url, open: () => new ConversationStore(path.join(dir, 'agent.sqlite'), undefined, url ? DatabaseUrl.parse(url) : null) };
}

const stores: ConversationStore[] = [];
const track = (s: ConversationStore) => (stores.push(s), s);
let fx: Fixture | undefined;
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  await fx?.close();
  fx = undefined;
});

describe.each<Backend>(['sqlite', 'postgres'])('the conversation store on %s', (backend) => {
  it("keeps a turn's messages, tool activity and reasoning across a reopen, and replays only the messages", async () => {
    fx = makeKernel();
    const p = await place(backend);
    let store = track(p.open());
    const conv = await store.create({ title: 'First', provider: 'scripted', model: 'm' });
    const provider = new ScriptedProvider((_r, n) => (n === 1 ? reply('', toolCall('echo_safe', { text: 'hello' })) : reply('answer')));
    const r = await runTurn(fx.kernel, { provider, model: 'm', conversationId: conv.id, history: await store.history(conv.id), userMessage: 'q1' });
    await store.appendTurn(conv.id, r.messages, r.steps, {
      provider: 'scripted',
      model: 'm',
      reasoning: [{ message: r.messages.length - 1, text: 'thought it over' }],
    });
    await store.close();

    store = track(p.open());
    const history = await store.history(conv.id);
    expect(history.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(history[1]).toMatchObject({ role: 'assistant', toolCalls: [{ name: 'echo_safe', arguments: { text: 'hello' } }] });
    expect(await store.activity(conv.id)).toEqual([expect.objectContaining({ tool: 'echo_safe', outcome: 'ok', turnSeq: 1 })]);
    const messages = await store.messages(conv.id);
    expect(messages.at(-1)).toMatchObject({ role: 'assistant', content: 'answer', reasoning: 'thought it over', provider: 'scripted', model: 'm' });
    const info = await store.info(conv.id);
    expect(info).toMatchObject({ title: 'First', messages: 4, provider: 'scripted', model: 'm' });
    expect(Date.parse(info.updatedAt)).toBeGreaterThan(Date.now() - 60 * 60_000);
    expect(fs.existsSync(path.join(p.dir, 'agent.sqlite'))).toBe(backend === 'sqlite');
  });

  it('continues a conversation after a compaction: the summary replaces what it summarised', async () => {
    const p = await place(backend);
    const store = track(p.open());
    const conv = await store.create({ title: 'Long' });
    await store.appendTurn(
      conv.id,
      [
        { role: 'user', content: 'one' },
        { role: 'assistant', content: 'first answer' },
      ],
      [],
    );
    const history = await store.history(conv.id);
    await store.appendTurn(
      conv.id,
      [
        { role: 'user', content: 'two' },
        { role: 'assistant', content: 'second answer' },
      ],
      [],
      { compaction: { summary: 'they said one', replaced: history.length } },
    );
    const replay = await store.history(conv.id);
    expect(replay.map((m) => [m.role, m.content])).toEqual([
      ['system', expect.stringContaining('they said one')],
      ['user', 'two'],
      ['assistant', 'second answer'],
    ]);
    expect((await store.summaries(conv.id)).map((s) => s.content)).toEqual(['they said one']);
  });

  it('lists, renames, searches and deletes softly', async () => {
    const p = await place(backend);
    const store = track(p.open());
    const a = await store.create({ title: 'Groceries' });
    const b = await store.create({ title: 'Travel' });
    await store.appendTurn(a.id, [{ role: 'user', content: 'buy oat milk' }], []);
    await store.update(b.id, { title: 'Trip to Lisbon' });
    expect((await store.list()).map((c) => c.title).sort()).toEqual(['Groceries', 'Trip to Lisbon']);
    expect(await store.search('oat milk')).toEqual([expect.objectContaining({ conversationId: a.id, seq: 1, snippet: 'buy oat milk' })]);
    expect(await store.search('lisbon')).toEqual([expect.objectContaining({ conversationId: b.id, seq: null })]);
    expect(await store.delete(a.id)).toBe(true);
    expect(await store.exists(a.id)).toBe(false);
    expect((await store.list()).map((c) => c.id)).toEqual([b.id]);
    await expect(store.appendTurn(a.id, [{ role: 'user', content: 'x' }], [])).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('lists the conversation with the newest turn first, in one order on every read; a new title alone does not move one', async () => {
    const store = track((await place(backend)).open());
    const tick = () => new Promise((r) => setTimeout(r, 5));
    const a = await store.create({ title: 'a' });
    await tick();
    const b = await store.create({ title: 'b' });
    await tick();
    const c = await store.create({ title: 'c' });
    await tick();
    await store.appendTurn(a.id, [{ role: 'user', content: 'hi' }], []);
    const order = [a.id, c.id, b.id];
    expect((await store.list()).map((x) => x.id)).toEqual(order);
    await tick();
    await store.update(b.id, { title: 'b, named' });
    expect((await store.list()).map((x) => x.id)).toEqual(order);
    // A turn's provider is activity: the conversation comes first.
    await store.update(b.id, { provider: 'p', model: 'm' });
    expect((await store.list()).map((x) => x.id)).toEqual([b.id, a.id, c.id]);
    expect((await store.info(b.id)).title).toBe('b, named');
  });

  it('rotates the key: everything re-encrypted with the new one, nothing lost', async () => {
    const p = await place(backend);
    let store = track(p.open());
    const conv = await store.create({ title: 'Before rotation' });
    await store.appendTurn(conv.id, [{ role: 'user', content: 'keep me' }], []);
    const { values } = await store.rotateKey();
    expect(values).toBeGreaterThanOrEqual(2);
    await store.close();
    store = track(p.open());
    expect((await store.info(conv.id)).title).toBe('Before rotation');
    expect((await store.history(conv.id))[0]).toMatchObject({ content: 'keep me' });
  });

  it('refuses to open without its key, naming where the conversations are, and makes no new key', async () => {
    const p = await place(backend);
    let store = track(p.open());
    const conv = await store.create({ title: 'secret plans' });
    await store.close();
    const keyFile = path.join(p.dir, 'agent.key');
    const key = fs.readFileSync(keyFile);
    fs.rmSync(keyFile);
    store = track(p.open());
    const err = await store.info(conv.id).catch((e: unknown) => e);
    expect(isMemoError(err) && err.code).toBe('CONFLICT');
    const where = backend === 'sqlite' ? path.join(p.dir, 'agent.sqlite') : `${DatabaseUrl.parse(p.url!).display} (schema "memo_agent")`;
    expect((err as Error).message).toContain(`The conversation key ${keyFile} is missing: the conversations in ${where} are encrypted with it`);
    expect((err as Error).message).not.toContain(server.password);
    expect(fs.existsSync(keyFile)).toBe(false);
    await store.close();
    fs.writeFileSync(keyFile, key, { mode: 0o600 });
    store = track(p.open());
    expect((await store.info(conv.id)).title).toBe('secret plans');
  });
});

describe('the conversation store on a shared PostgreSQL database', () => {
  it('is shared: a second instance with the same key sees and continues the first one’s conversation', async () => {
    const p = await place('postgres');
    const one = track(p.open());
    const conv = await one.create({ title: 'Shared' });
    await one.appendTurn(conv.id, [{ role: 'user', content: 'from instance one' }], []);
    // Another instance: another data folder holding a copy of the same key.
    const otherDir = tempDir();
    fs.copyFileSync(path.join(p.dir, 'agent.key'), path.join(otherDir, 'agent.key'));
    const two = track(new ConversationStore(path.join(otherDir, 'agent.sqlite'), undefined, DatabaseUrl.parse(p.url!)));
    expect((await two.history(conv.id)).map((m) => m.content)).toEqual(['from instance one']);
    await two.appendTurn(conv.id, [{ role: 'assistant', content: 'answered by instance two' }], []);
    expect((await one.history(conv.id)).map((m) => m.content)).toEqual(['from instance one', 'answered by instance two']);
    expect(fs.existsSync(path.join(otherDir, 'agent.sqlite'))).toBe(false);
  });

  it('keeps every turn when two instances append to one conversation at the same time', async () => {
    const p = await place('postgres');
    const one = track(p.open());
    const conv = await one.create({ title: 'Busy' });
    const otherDir = tempDir();
    fs.copyFileSync(path.join(p.dir, 'agent.key'), path.join(otherDir, 'agent.key'));
    const two = track(new ConversationStore(path.join(otherDir, 'agent.sqlite'), undefined, DatabaseUrl.parse(p.url!)));
    await two.exists(conv.id);
    const turns = Array.from({ length: 16 }, (_, i) =>
      (i % 2 ? two : one).appendTurn(
        conv.id,
        [
          { role: 'user', content: `question ${i}` },
          { role: 'assistant', content: `answer ${i}` },
        ],
        [],
      ),
    );
    await Promise.all(turns);
    const messages = await one.messages(conv.id);
    expect(messages.map((m) => m.seq)).toEqual(Array.from({ length: 32 }, (_, i) => i + 1));
    // Each turn's two messages stay together.
    for (let i = 0; i < 32; i += 2) expect(messages[i + 1]!.content).toBe(messages[i]!.content.replace('question', 'answer'));
  });

  it('records instants, whatever the server’s time zone', async () => {
    const far = await startPostgres({ timeZone: 'Pacific/Kiritimati' });
    expect(await far.query(`SELECT current_setting('TimeZone') AS tz`)).toEqual([{ tz: 'Pacific/Kiritimati' }]);
    const store = track(new ConversationStore(path.join(tempDir(), 'agent.sqlite'), undefined, DatabaseUrl.parse(await far.database())));
    const before = Date.now();
    const conv = await store.create({ title: 'Now' });
    await store.appendTurn(conv.id, [{ role: 'user', content: 'hi' }], []);
    const after = Date.now();
    const info = await store.info(conv.id);
    // A wall-clock time read in the wrong zone would be 14 hours off.
    for (const t of [info.createdAt, info.updatedAt]) {
      expect(Date.parse(t)).toBeGreaterThanOrEqual(before - 1000);
      expect(Date.parse(t)).toBeLessThanOrEqual(after + 1000);
    }
  });

  it('holds only ciphertext of what was written', async () => {
    const p = await place('postgres');
    const store = track(p.open());
    const conv = await store.create({ title: 'Title zebra-7431' });
    await store.appendTurn(conv.id, [{ role: 'user', content: 'the zebra-7431 plan' }], []);
    const db = new URL(p.url!).pathname.slice(1);
    const rows = await server.query(
      `SELECT c.title, m.content FROM memo_agent.conversations c JOIN memo_agent.messages m ON m."conversationId" = c.id`,
      [],
      db,
    );
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain('zebra-7431');
    expect(JSON.stringify(rows)).toContain('enc1:');
  });

  it('is where a kernel keeps its conversations when given databaseUrl, with no agent.sqlite in its data folder', async () => {
    const url = await server.database();
    fx = makeKernel({ databaseUrl: url });
    const conv = await fx.kernel.conversations.create({ title: 'Via the kernel' });
    await fx.kernel.conversations.appendTurn(conv.id, [{ role: 'user', content: 'hello' }], []);
    const db = new URL(url).pathname.slice(1);
    expect(await server.query(`SELECT count(*)::int AS n FROM memo_agent.messages`, [], db)).toEqual([{ n: 1 }]);
    expect(fs.existsSync(path.join(fx.dataDir, 'agent.sqlite'))).toBe(false);
    expect(JSON.stringify(fx.kernel.config)).not.toContain(server.password);
    expect(JSON.stringify(fx.kernel.config)).not.toContain(encodeURIComponent(server.password));
  });
});
