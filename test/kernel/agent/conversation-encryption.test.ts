import * as fs from 'node:fs';
import * as path from 'node:path';
import Database from 'better-sqlite3';
import { runChatTurn } from '../../../kernel/agent/chat-turn.js';
import { ConversationStore } from '../../../kernel/agent/conversation-store.js';
import type { ChatRequest } from '../../../kernel/providers/provider.js';
import { isMemoError } from '../../../kernel/errors.js';
import { makeKernel, tempDir, type Fixture } from '../../helpers/kernel-fixture.js';
import { reply, ScriptedProvider, toolCall } from '../../helpers/scripted-provider.js';

const MARKER = 'ZEBRA-7431-marmalade';
const isSummary = (r: ChatRequest) => /^You compact a conversation/.test(r.messages[0]?.content ?? '');
const isTitle = (r: ChatRequest) => /^Write a title/.test(r.messages[0]?.content ?? '');

/** The database file and its WAL, as bytes a person with the disk could read. */
function onDisk(file: string): string {
  return [file, `${file}-wal`, `${file}-shm`]
    .filter((f) => fs.existsSync(f))
    .map((f) => fs.readFileSync(f).toString('latin1'))
    .join('\n');
}

describe('conversations encrypted at rest', () => {
  let fx: Fixture;
  let store: ConversationStore | undefined;
  afterEach(async () => {
    await store?.close();
    store = undefined;
    await fx?.close();
  });

  /** A chat whose message, answer, reasoning, tool arguments, tool result, title and summary all carry the marker. */
  async function chatWithMarker(): Promise<string> {
    const conv = await fx.kernel.conversations.create();
    const provider = new ScriptedProvider((req, n) => {
      if (isTitle(req)) return reply(`Title ${MARKER}`);
      if (isSummary(req)) return reply(`Summary ${MARKER}`);
      return n === 1
        ? reply('', toolCall('echo_safe', { text: MARKER }))
        : { ...reply(`Answer ${MARKER} ${'a'.repeat(3_000)}`), reasoning: `Reasoning ${MARKER}` };
    }, 8_000);
    for (let i = 0; i < 6; i++) {
      const r = await runChatTurn(fx.kernel, { provider, model: 'm', conversationId: conv.id, userMessage: `Question ${MARKER} ${'q'.repeat(3_000)}` });
      expect(r.stopReason).toBe('final');
      await r.title;
    }
    expect(provider.requests.some(isSummary)).toBe(true);
    return conv.id;
  }

  it('leaves no plaintext of a conversation in the SQLite file, while open or after, and reads it all back', async () => {
    fx = makeKernel();
    const file = path.join(fx.dataDir, 'agent.sqlite');
    const id = await chatWithMarker();
    expect(onDisk(file).includes('enc1:')).toBe(true);
    expect(onDisk(file).includes(MARKER)).toBe(false);
    expect(onDisk(file).includes('Question')).toBe(false);

    const conversations = fx.kernel.conversations;
    expect((await conversations.info(id)).title).toBe(`Title ${MARKER}`);
    expect((await conversations.history(id))[0]?.content).toContain(`Summary ${MARKER}`);
    expect((await conversations.activity(id))[0]?.args).toEqual({ text: MARKER });
    expect((await conversations.messages!(id)).filter((m) => m.content.includes(MARKER)).length).toBeGreaterThan(6);
    expect((await conversations.messages!(id)).some((m) => m.reasoning === `Reasoning ${MARKER}`)).toBe(true);
    await fx.close();
    expect(onDisk(file).includes(MARKER)).toBe(false);

    // The key: 0600, in the data folder (the kernel's own state, which no tool reaches).
    const key = path.join(fx.dataDir, 'agent.key');
    expect(fs.statSync(key).mode & 0o777).toBe(0o600);
  }, 30_000);

  it('finds things in your own history though the file holds only ciphertext', async () => {
    fx = makeKernel();
    const id = await chatWithMarker();
    const plain = await fx.kernel.conversations.create({ title: 'Groceries' });
    await fx.kernel.conversations.appendTurn(plain.id, [{ role: 'user', content: 'buy oat milk' }], []);
    const store = fx.kernel.conversations as ConversationStore;
    const hits = await store.search('zebra-7431');
    expect(hits.length).toBeGreaterThan(0);
    expect(hits.every((h) => h.conversationId === id)).toBe(true);
    expect(hits[0]).toMatchObject({ title: `Title ${MARKER}`, role: 'user', snippet: expect.stringContaining(MARKER) });
    expect(await store.search('oat milk')).toEqual([expect.objectContaining({ conversationId: plain.id, seq: 1, snippet: 'buy oat milk' })]);
    expect(await store.search('groceries')).toEqual([expect.objectContaining({ conversationId: plain.id, seq: null })]);
    expect(await store.search('nothing like this')).toEqual([]);
  }, 30_000);

  it('refuses to open without its key, saying what to do, and never makes a new key over encrypted rows', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'agent.sqlite');
    store = new ConversationStore(file);
    const conv = await store.create({ title: 'secret plans' });
    await store.close();
    const keyFile = path.join(dir, 'agent.key');
    const key = fs.readFileSync(keyFile);
    fs.rmSync(keyFile);

    store = new ConversationStore(file);
    const err = await store.info(conv.id).catch((e: unknown) => e);
    expect(isMemoError(err) && err.code).toBe('CONFLICT');
    expect((err as Error).message).toBe(
      `The conversation key ${keyFile} is missing: the conversations in ${file} are encrypted with it and cannot be read. Put the key file back from a backup, or move ${file} away to start with no conversations.`,
    );
    expect(fs.existsSync(keyFile)).toBe(false);
    await store.close();

    fs.writeFileSync(keyFile, key, { mode: 0o600 });
    store = new ConversationStore(file);
    expect((await store.info(conv.id)).title).toBe('secret plans');
  });

  it('refuses a value that was altered or moved to another row', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'agent.sqlite');
    store = new ConversationStore(file);
    const a = await store.create({ title: 'first' });
    const b = await store.create({ title: 'second' });
    await store.close();
    const db = new Database(file);
    const titleOf = (id: string) => (db.prepare(`SELECT title FROM conversations WHERE id = ?`).get(id) as { title: string }).title;
    db.prepare(`UPDATE conversations SET title = ? WHERE id = ?`).run(titleOf(a.id), b.id);
    db.close();

    store = new ConversationStore(file);
    expect((await store.info(a.id)).title).toBe('first');
    await expect(store.info(b.id)).rejects.toThrow(
      `A conversation value (conversation/${b.id}/title) fails its authentication check: it was altered or moved. It is left as it is.`,
    );
  });

  it('rotates the key: everything re-encrypted with the new one, the old one dropped, nothing lost', async () => {
    fx = makeKernel();
    const id = await chatWithMarker();
    const store = fx.kernel.conversations as ConversationStore;
    // A step a person edited, whose result named an item: those columns are encrypted too, and must survive the rotation.
    await store.appendTurn(
      id,
      [
        { role: 'user', content: 'Link it' },
        { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'echo_safe', arguments: { text: 'asked' } }] },
        { role: 'tool', toolCallId: 'c1', name: 'echo_safe', content: 'ok' },
        { role: 'assistant', content: 'Done' },
      ],
      [
        {
          iteration: 1,
          callId: 'c1',
          tool: 'echo_safe',
          args: { text: MARKER },
          outcome: 'ok',
          summary: 'ok',
          durationMs: 1,
          edited: { by: 'console', askedArgs: { text: `asked ${MARKER}` } },
          items: [{ type: 'note', id: 'n1', title: `Note ${MARKER}`, icon: '🚀' }],
        },
      ],
    );
    expect((await store.activity(id)).at(-1)).toMatchObject({ edited: { by: 'console' }, items: [{ type: 'note', id: 'n1', icon: '🚀' }] });
    expect(onDisk(path.join(fx.dataDir, 'agent.sqlite')).includes(MARKER)).toBe(false);
    const before = { history: await store.history(id), activity: await store.activity(id), info: await store.info(id), summaries: await store.summaries(id) };
    const file = path.join(fx.dataDir, 'agent.sqlite');
    const oldKey = JSON.parse(fs.readFileSync(store.keyFile, 'utf8')) as { current: string };

    const rotated = await store.rotateKey();
    expect(rotated.keyId).not.toBe(oldKey.current);
    expect(rotated.values).toBeGreaterThan(10);
    const keyFile = JSON.parse(fs.readFileSync(store.keyFile, 'utf8')) as { current: string; keys: Record<string, string> };
    expect(Object.keys(keyFile.keys)).toEqual([rotated.keyId]);
    expect(onDisk(file).includes(`enc1:${oldKey.current}:`)).toBe(false);
    expect(onDisk(file).includes(MARKER)).toBe(false);
    expect({ history: await store.history(id), activity: await store.activity(id), info: await store.info(id), summaries: await store.summaries(id) }).toEqual(
      before,
    );

    // And a store opened afresh reads it with the new key.
    await fx.close();
    const again = new ConversationStore(file);
    try {
      expect(await again.history(id)).toEqual(before.history);
    } finally {
      await again.close();
    }
  }, 30_000);
});
