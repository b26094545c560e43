import * as fs from 'node:fs';
import * as path from 'node:path';
import { runTurn } from '../../../kernel/agent/agent-loop.js';
import { ConversationStore } from '../../../kernel/agent/conversation-store.js';
import { makeKernel, tempDir, type Fixture } from '../../helpers/kernel-fixture.js';
import { reply, ScriptedProvider, toolCall } from '../../helpers/scripted-provider.js';
import { nth } from '../../helpers/nth.js';

describe('the conversation store', () => {
  let fx: Fixture;
  let store: ConversationStore;
  afterEach(async () => {
    await store?.close();
    await fx?.close();
  });

  it("keeps a turn's messages and tool activity across a reopen, and replays only the messages", async () => {
    fx = makeKernel();
    const file = path.join(tempDir(), 'agent.sqlite');
    store = new ConversationStore(file);
    const conv = await store.create({ title: 'First', provider: 'scripted', model: 'm' });
    const provider = new ScriptedProvider((_r, n) => (n === 1 ? reply('', toolCall('echo_safe', { text: 'x'.repeat(200) })) : reply('answer')));
    const r = await runTurn(fx.kernel, { provider, model: 'm', conversationId: conv.id, history: await store.history(conv.id), userMessage: 'q1' });
    await store.appendTurn(conv.id, r.messages, r.steps);
    await store.close();

    store = new ConversationStore(file);
    const history = await store.history(conv.id);
    expect(history.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(history[1]).toMatchObject({ role: 'assistant', toolCalls: [{ name: 'echo_safe' }] });
    const activity = await store.activity(conv.id);
    expect(activity).toEqual([expect.objectContaining({ tool: 'echo_safe', outcome: 'ok', turnSeq: 1 })]);
    expect(String(nth(activity, 0).args.text).length).toBeLessThanOrEqual(80);
    expect(JSON.stringify(history)).not.toContain('durationMs');
    expect((await store.info(conv.id)).messages).toBe(4);
    expect(fs.existsSync(file)).toBe(true);
  });

  it('continues a conversation: the next turn sends the stored history', async () => {
    fx = makeKernel();
    store = new ConversationStore(path.join(tempDir(), 'agent.sqlite'));
    const conv = await store.create();
    const provider = new ScriptedProvider((req) => reply(`seen ${req.messages.length}`));
    const t1 = await runTurn(fx.kernel, { provider, model: 'm', conversationId: conv.id, history: await store.history(conv.id), userMessage: 'one' });
    await store.appendTurn(conv.id, t1.messages, t1.steps);
    const t2 = await runTurn(fx.kernel, { provider, model: 'm', conversationId: conv.id, history: await store.history(conv.id), userMessage: 'two' });
    expect(t2.answer).toBe('seen 3');
  });

  it('deletes softly, hides the conversation and kills its write capabilities', async () => {
    fx = makeKernel();
    // The kernel's own store: it tells the kernel's capabilities when a conversation goes.
    const kernelStore = fx.kernel.conversations;
    const conv = await kernelStore.create({ title: 'doomed' });
    const cap = await fx.kernel.capabilities.mint(conv.id);
    expect(await kernelStore.delete(conv.id)).toBe(true);
    expect(await fx.kernel.capabilities.check(cap)).toBeNull();
    expect(fx.kernel.capabilities.size).toBe(0);
    expect(await kernelStore.list()).toEqual([]);
    await expect(kernelStore.appendTurn(conv.id, [{ role: 'user', content: 'x' }], [])).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});
