import { runChatTurn } from '../../../kernel/agent/chat-turn.js';
import { findMentions, resolveMentions } from '../../../kernel/agent/chat-mentions.js';
import type { ChatRequest } from '../../../kernel/providers/provider.js';
import { makeKernel, type Fixture } from '../../helpers/kernel-fixture.js';
import { reply, ScriptedProvider } from '../../helpers/scripted-provider.js';
import { value, vaultKernel } from '../../plugins/vault/helpers.js';

const isTitle = (r: ChatRequest) => /^Write a title/.test(r.messages[0]?.content ?? '');

describe('vault @mentions in chat', () => {
  let fx: Fixture;
  afterEach(async () => fx?.close());

  it('finds @word, @"several words" and @[[Title]], never an e-mail address', () => {
    expect(findMentions('see @Roadmap, @"Star Wars Movies" and @[[Weekly review]]; mail ada@example.com')).toEqual([
      'Roadmap',
      'Star Wars Movies',
      'Weekly review',
    ]);
    expect(findMentions('@Roadmap twice: @Roadmap.')).toEqual(['Roadmap']);
  });

  it('sends the message as typed when no vault pack is loaded', async () => {
    fx = makeKernel();
    expect(await resolveMentions(fx.kernel, 'summarise @Roadmap')).toEqual({ message: 'summarise @Roadmap', references: [], unresolved: [] });
  });

  it('resolves mentions to note and task references through the vault service, and stores them with the message', async () => {
    const vx = await vaultKernel({ files: { 'Roadmap.md': '# Roadmap\nship it\n', 'Star Wars Movies.md': '# Star Wars Movies\n' } });
    fx = vx;
    value(await vx.call('vault_reindex', {}));
    value(await vx.call('vault_create_task', { title: 'Water ferns' }));
    const conv = await fx.kernel.conversations.create();
    const provider = new ScriptedProvider((req) => (isTitle(req) ? reply('Roadmap') : reply('ok')));
    const r = await runChatTurn(fx.kernel, {
      provider,
      model: 'm',
      conversationId: conv.id,
      userMessage: 'summarise @Roadmap and @"Star Wars Movies", then @"Water ferns" and @Nowhere',
    });
    expect(r.mentions.references.map((m) => [m.mention, m.type, m.title])).toEqual([
      ['Roadmap', 'note', 'Roadmap'],
      ['Star Wars Movies', 'note', 'Star Wars Movies'],
      ['Water ferns', 'task', 'Water ferns'],
    ]);
    expect(r.mentions.unresolved).toEqual([{ mention: 'Nowhere', reason: 'no note or task by that name' }]);
    const sent = provider.requests.find((q) => !isTitle(q))!.messages.at(-1)!.content;
    expect(sent).toMatch(
      /^summarise @Roadmap and @"Star Wars Movies", then @"Water ferns" and @Nowhere\n\nMentioned vault items:\n- @Roadmap: note "Roadmap" \(id [^,]+, path [^)]*Roadmap\.md\)\n/,
    );
    expect((await fx.kernel.conversations.history(conv.id))[0]?.content).toBe(sent);
    await r.title;
  });
});
