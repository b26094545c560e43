import * as fs from 'node:fs';
import * as path from 'node:path';
import { MAX_ATTACHMENT_BYTES, readAttachment } from '../../../kernel/agent/chat-attachments.js';
import { compactConversation, runChatTurn } from '../../../kernel/agent/chat-turn.js';
import { SUMMARY_PREFIX } from '../../../kernel/agent/compaction.js';
import type { ChatRequest } from '../../../kernel/providers/provider.js';
import { isMemoError } from '../../../kernel/errors.js';
import { makeKernel, tempDir, type Fixture } from '../../helpers/kernel-fixture.js';
import { reply, ScriptedProvider } from '../../helpers/scripted-provider.js';

const isTitle = (r: ChatRequest) => /^Write a title/.test(r.messages[0]?.content ?? '');
const isSummary = (r: ChatRequest) => /^You compact a conversation/.test(r.messages[0]?.content ?? '');

async function codeOf(p: Promise<unknown>): Promise<string | undefined> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  return isMemoError(err) ? err.code : String(err);
}

describe('attachments and /compact', () => {
  let fx: Fixture;
  afterEach(async () => fx?.close());

  it('sends an attached file after the message, fenced and named, and stores it with the message', async () => {
    fx = makeKernel();
    fs.mkdirSync(path.join(fx.root, 'notes'));
    fs.writeFileSync(path.join(fx.root, 'notes', 'plan.md'), '# Plan\nship on Friday\n');
    const conv = await fx.kernel.conversations.create();
    const provider = new ScriptedProvider((req) => (isTitle(req) ? reply('Plan') : reply('Friday it is')));
    const attachment = await readAttachment(fx.kernel, 'notes/plan.md');
    expect(attachment).toEqual({ path: path.join('notes', 'plan.md'), text: '# Plan\nship on Friday\n' });

    const r = await runChatTurn(fx.kernel, { provider, model: 'm', conversationId: conv.id, userMessage: 'When do we ship?', attachments: [attachment] });
    expect(r.stopReason).toBe('final');
    const sent = provider.requests.find((q) => !isTitle(q))!.messages.at(-1)!;
    expect(sent.content).toBe(`When do we ship?\n\nAttached file ${path.join('notes', 'plan.md')}:\n\`\`\`\n# Plan\nship on Friday\n\`\`\``);
    expect((await fx.kernel.conversations.history(conv.id))[0]?.content).toBe(sent.content);
    await r.title;
    // The title comes from what the person typed, not from the file.
    expect(provider.requests.find(isTitle)!.messages[1]?.content).toMatch(/^Person: When do we ship\?\n\nAssistant: Friday it is$/);
  });

  it('reads attachments through the sandbox: never the data folder, nothing outside the root, only text, within the size limit', async () => {
    // The data folder inside the workspace root: still the kernel's own, closed to attachments.
    const root = tempDir();
    fx = makeKernel({ root, dataDir: path.join(root, 'data') });
    fs.writeFileSync(path.join(fx.root, 'blob.bin'), Buffer.from([1, 0, 2]));
    fs.writeFileSync(path.join(fx.root, 'big.txt'), 'x'.repeat(MAX_ATTACHMENT_BYTES + 1));
    await fx.kernel.conversations.create();
    expect(fs.existsSync(path.join(root, 'data', 'agent.key'))).toBe(true);
    expect(await codeOf(readAttachment(fx.kernel, 'data/agent.key'))).toBe('PATH_PROTECTED');
    expect(await codeOf(readAttachment(fx.kernel, path.join(tempDir(), 'elsewhere.txt')))).toBe('PATH_OUTSIDE_ROOT');
    expect(await codeOf(readAttachment(fx.kernel, '../outside.txt'))).toBe('PATH_OUTSIDE_ROOT');
    expect(await codeOf(readAttachment(fx.kernel, 'missing.txt'))).toBe('NOT_FOUND');
    expect(await codeOf(readAttachment(fx.kernel, 'blob.bin'))).toBe('VALIDATION');
    await expect(readAttachment(fx.kernel, 'big.txt')).rejects.toThrow(`big.txt is 257 KB; an attachment may be at most 256 KB.`);
  });

  it("counts an attachment against the turn's budget: one that cannot fit the window is refused before sending", async () => {
    fx = makeKernel();
    fs.writeFileSync(path.join(fx.root, 'long.txt'), 'word '.repeat(20_000));
    const conv = await fx.kernel.conversations.create();
    const provider = new ScriptedProvider(() => reply('never'), 8_000);
    const r = await runChatTurn(fx.kernel, {
      provider,
      model: 'm',
      conversationId: conv.id,
      userMessage: 'summarise this',
      attachments: [await readAttachment(fx.kernel, 'long.txt')],
      toolsEnabled: false,
    });
    expect(r.stopReason).toBe('error');
    expect(r.error).toMatch(/^This conversation needs [\d.]+K tokens; this model's window is 8\.0K/);
    expect(provider.requests).toHaveLength(0);
  });

  it('compacts on request: all but the last exchange summarised and stored, the last one kept verbatim', async () => {
    fx = makeKernel();
    const conv = await fx.kernel.conversations.create();
    const provider = new ScriptedProvider((req) => (isSummary(req) ? reply('They said hello twice.') : reply('hi')));
    const opts = { provider, model: 'm', conversationId: conv.id };
    expect(await compactConversation(fx.kernel, opts)).toBeNull();
    await runChatTurn(fx.kernel, { ...opts, userMessage: 'hello', titles: false });
    expect(await compactConversation(fx.kernel, opts)).toBeNull();
    await runChatTurn(fx.kernel, { ...opts, userMessage: 'hello again', titles: false });
    await runChatTurn(fx.kernel, { ...opts, userMessage: 'last one', titles: false });

    expect(await compactConversation(fx.kernel, opts)).toEqual({ summary: 'They said hello twice.', replaced: 4 });
    expect(await fx.kernel.conversations.history(conv.id)).toEqual([
      { role: 'system', content: `${SUMMARY_PREFIX}They said hello twice.` },
      { role: 'user', content: 'last one' },
      { role: 'assistant', content: 'hi' },
    ]);
    // Compacting again right away finds nothing new to summarise.
    expect(await compactConversation(fx.kernel, opts)).toBeNull();
    expect((await fx.kernel.conversations.messages!(conv.id)).length).toBe(6);
  });
});
