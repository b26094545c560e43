/**
 * A damaged agent.sqlite, the ways the reliability run damaged it (test/helpers/sqlite-damage.ts), in
 * a kernel: it is found by a check at start (and before the file is opened), every conversation
 * operation is refused with one message naming the file and what to do, the file is left exactly as
 * it was, and everything that does not store conversations (tools, routine turns) keeps working.
 * memo serve's start line and memo doctor's line are in test/e2e/conversation-damage.test.ts.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { runChatTurn } from '../../../kernel/agent/chat-turn.js';
import { ConversationStore } from '../../../kernel/agent/conversation-store.js';
import { isMemoError } from '../../../kernel/errors.js';
import type { PackApi } from '../../../kernel/packs/pack-api.js';
import { echoPack, makeKernel, tempDir, type Fixture } from '../../helpers/kernel-fixture.js';
import { reply, ScriptedProvider } from '../../helpers/scripted-provider.js';
import { DAMAGES, damage, onDisk } from '../../helpers/sqlite-damage.js';

const answer = () => new ScriptedProvider((_r, n) => reply(`answer ${n} ${'a'.repeat(3_000)}`));

/** A kernel whose agent.sqlite holds a few conversations (long enough for many pages), closed again. */
async function dataWithConversations(): Promise<{ dataDir: string; file: string; ids: string[] }> {
  const fx = makeKernel();
  const ids: string[] = [];
  for (let c = 0; c < 3; c++) {
    const conv = await fx.kernel.conversations.create({ title: `conversation ${c}` });
    for (let t = 0; t < 4; t++) {
      const r = await runChatTurn(fx.kernel, { provider: answer(), model: 'm', conversationId: conv.id, userMessage: `question ${t} ${'q'.repeat(3_000)}` });
      expect(r.stopReason).toBe('final');
      await r.title;
    }
    ids.push(conv.id);
  }
  await fx.close();
  return { dataDir: fx.dataDir, file: path.join(fx.dataDir, 'agent.sqlite'), ids };
}

/** The refusal every conversation operation gets: the file, what is wrong, what to do. */
async function refusal(p: Promise<unknown>, file: string): Promise<string> {
  const err: unknown = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(isMemoError(err)).toBe(true);
  if (!isMemoError(err)) throw new Error('no MemoError');
  expect(err.code).toBe('CONFLICT');
  expect(err.details).toEqual({ file, damaged: true });
  expect(err.message).toContain(`The conversations file ${file} `);
  expect(err.message).toContain('Memo keeps no backup of it and never deletes or renames it');
  expect(err.message).toContain('move agent.sqlite, agent.sqlite-wal and agent.sqlite-shm (those there) out of the data folder');
  expect(err.message).toContain('put agent.sqlite back from your own backup (with agent.key beside it), or leave it out to start with no conversations');
  return err.message;
}

describe('a damaged conversations file (agent.sqlite)', () => {
  let fx: Fixture | undefined;
  afterEach(async () => {
    await fx?.close();
    fx = undefined;
  });

  it.each(DAMAGES)(
    'when %s: the check says damaged, every conversation operation is refused naming the file, tools still run, and the file is untouched',
    async (how) => {
      const data = await dataWithConversations();
      damage(data.file, how);
      const before = onDisk(data.file);
      const files = () => fs.readdirSync(data.dataDir).filter((f) => f.startsWith('agent.sqlite'));
      const listing = files();

      fx = makeKernel({ dataDir: data.dataDir });
      const health = await fx.kernel.conversations.check!();
      expect(health.state).toBe('damaged');
      expect(health.detail).toContain(`The conversations file ${data.file} `);

      // A tool call that has nothing to do with conversations, from an MCP client and from the CLI.
      expect(await fx.kernel.invoke({ tool: 'echo_safe', args: { text: 'still here' }, caller: { kind: 'mcp', id: 'client' } })).toMatchObject({
        ok: true,
        value: { echoed: { text: 'still here' } },
      });
      expect(await fx.kernel.invoke({ tool: 'echo_safe', args: { text: 'cli' }, caller: { kind: 'cli' } })).toMatchObject({ ok: true });

      // A chat turn, a new conversation, the history, a search: each refused with the same message.
      const message = await refusal(runChatTurn(fx.kernel, { provider: answer(), model: 'm', conversationId: data.ids[0]!, userMessage: 'hello' }), data.file);
      expect(message).toBe(health.detail);
      await refusal(fx.kernel.conversations.create(), data.file);
      await refusal(fx.kernel.conversations.list(), data.file);
      await refusal(fx.kernel.conversations.search!('question'), data.file);

      // Nothing deleted, renamed or rewritten: the same bytes, the same files.
      await fx.close();
      fx = undefined;
      expect(onDisk(data.file)).toEqual(before);
      expect(files()).toEqual(listing);
    },
  );

  it('says what is wrong in words: cut short with its lengths, not a database, a log without its file, emptied', async () => {
    const problems: Record<string, string> = {};
    for (const how of DAMAGES) {
      const data = await dataWithConversations();
      damage(data.file, how);
      const store = new ConversationStore(data.file);
      problems[how] = (await store.check()).detail;
      await store.close();
    }
    expect(problems['cut to half its length']).toMatch(/agent\.sqlite is cut short \([\d,]+ bytes of the [\d,]+ bytes its header records\)/);
    expect(problems['garbage over its header']).toMatch(/agent\.sqlite is not a SQLite database \(its first bytes are not SQLite's header/);
    expect(problems['pages in the middle overwritten']).toMatch(/agent\.sqlite is damaged \(SQLite's quick_check: Tree \d+ page \d+/);
    expect(problems['emptied to zero bytes']).toMatch(/agent\.sqlite is empty \(0 bytes\), though agent\.key beside it shows it held data/);
    expect(problems['a write-ahead log without the database']).toMatch(
      /agent\.sqlite is missing, but its write-ahead log agent\.sqlite-wal \([\d,]+ bytes, its latest changes\) is still there/,
    );
  });

  it("runs a routine's turn (it stores no conversation) while the conversations file is damaged", async () => {
    const data = await dataWithConversations();
    damage(data.file, 'pages in the middle overwritten');
    let api: PackApi | undefined;
    fx = makeKernel({ dataDir: data.dataDir, packs: [echoPack(), { id: 'routine-host', version: '1.0.0', tools: [], activate: (a) => void (api = a) }] });
    fx.kernel.providers.register('scripted', () => new ScriptedProvider(() => reply('routine done')), 'test');
    fx.kernel.providerSettings.put({ name: 'scripted-one', kind: 'scripted', model: 'model-a' });
    await fx.kernel.start();
    const r = await api!.agent.run({ routineId: 'r-1', runId: 'run-1', provider: 'scripted-one', model: 'model-a', prompt: 'do the thing' });
    expect(r).toMatchObject({ stopReason: 'final', answer: 'routine done' });
  });

  it('works again once the person puts a whole file back, without a restart', async () => {
    const data = await dataWithConversations();
    const whole = fs.readFileSync(data.file);
    damage(data.file, 'garbage over its header');
    fx = makeKernel({ dataDir: data.dataDir });
    expect((await fx.kernel.conversations.check!()).state).toBe('damaged');
    await refusal(fx.kernel.conversations.info(data.ids[1]!), data.file);

    fs.writeFileSync(data.file, whole);
    expect(await fx.kernel.conversations.info(data.ids[1]!)).toMatchObject({ id: data.ids[1], messages: 8 });
    expect((await fx.kernel.conversations.check!()).state).toBe('ok');
  });

  it('starts with no conversations once the person moves the damaged file (and its log) aside, as the message says', async () => {
    const data = await dataWithConversations();
    damage(data.file, 'a write-ahead log without the database');
    fx = makeKernel({ dataDir: data.dataDir });
    await refusal(fx.kernel.conversations.list(), data.file);
    for (const f of ['agent.sqlite-wal', 'agent.sqlite-shm'])
      if (fs.existsSync(path.join(data.dataDir, f))) fs.renameSync(path.join(data.dataDir, f), path.join(tempDir(), f));
    expect(await fx.kernel.conversations.list()).toEqual([]);
    const conv = await fx.kernel.conversations.create({ title: 'a new start' });
    expect((await fx.kernel.conversations.info(conv.id)).title).toBe('a new start');
  });

  it('finds a whole file whole, and a file not made yet absent, without making it', async () => {
    const data = await dataWithConversations();
    const store = new ConversationStore(data.file);
    const whole = await store.check();
    expect(whole.state).toBe('ok');
    expect(whole.detail).toMatch(/agent\.sqlite is whole \(\d+\.\d MB, checked in \d+ ms\)/);
    expect(await store.list()).toHaveLength(3);
    await store.close();

    const fresh = new ConversationStore(path.join(tempDir(), 'agent.sqlite'));
    expect(await fresh.check()).toEqual({ state: 'absent', detail: expect.stringContaining('is not made yet: the first chat makes it') });
    expect(fs.existsSync(fresh.file)).toBe(false);
    await fresh.close();
  });
});
