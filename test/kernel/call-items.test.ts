import { runChatTurn } from '../../kernel/agent/chat-turn.js';
import { systemPrompt } from '../../kernel/agent/system-prompt.js';
import { ITEM_LIMIT } from '../../kernel/tools/call-items.js';
import type { ToolImplementation } from '../../kernel/tools/contract.js';
import { makeKernel, type Fixture } from '../helpers/kernel-fixture.js';
import { reply, ScriptedProvider, toolCall } from '../helpers/scripted-provider.js';

const spec = (name: string) => ({ name, description: 'd', parameters: { type: 'object' }, danger: 'safe' as const, effect: 'read' as const });

function kernelWith(tools: Record<string, ToolImplementation>): Fixture {
  return makeKernel({ packs: [{ id: 'things', version: '1.0.0', tools: Object.entries(tools).map(([name, impl]) => ({ spec: spec(name), impl })) }] });
}

describe('the items a result names (ToolResult.items, AgentStep.items)', () => {
  let fx: Fixture;
  afterEach(async () => fx?.close());

  it('keeps well-formed items once each, drops unknown types, empty ids and an icon that is text, and caps the list', async () => {
    const many = Array.from({ length: ITEM_LIMIT + 50 }, (_, i) => ({ type: 'task', id: `t${i}`, title: `Task ${i}` }));
    fx = kernelWith({
      mixed: {
        run: () => 'ok',
        items: () =>
          [
            { type: 'note', id: 'n1', title: 'Plan', icon: '🚀' },
            { type: 'note', id: 'n1', title: 'Plan again' },
            { type: 'spaceship', id: 'x', title: 'Unknown' },
            { type: 'task', id: '', title: 'No id' },
            { type: 'event', id: 'e1', title: '', icon: '<img src=x onerror=alert(1)>' },
          ] as never,
      },
      lots: { run: () => 'ok', items: () => many as never },
    });
    const r = await fx.kernel.invoke({ tool: 'mixed', args: {}, caller: { kind: 'host' } });
    expect(r.ok && r.items).toEqual([
      { type: 'note', id: 'n1', title: 'Plan', icon: '🚀' },
      { type: 'event', id: 'e1', title: 'e1' },
    ]);
    const l = await fx.kernel.invoke({ tool: 'lots', args: {}, caller: { kind: 'host' } });
    expect(l.ok && l.items?.length).toBe(ITEM_LIMIT);
  });

  it('a tool whose items throws keeps its result, without links', async () => {
    fx = kernelWith({
      broken: {
        run: () => ({ value: 42 }),
        items: () => {
          throw new Error('shape changed');
        },
      },
    });
    const r = await fx.kernel.invoke({ tool: 'broken', args: {}, caller: { kind: 'host' } });
    expect(r).toMatchObject({ ok: true, value: { value: 42 } });
    expect('items' in r).toBe(false);
  });

  it("an agent turn's step carries the items, and the stored activity keeps them for a reopened conversation", async () => {
    fx = kernelWith({ find_plan: { run: () => ({ id: 'n1' }), items: () => [{ type: 'note', id: 'n1', title: 'Launch plan' }] } });
    const conv = await fx.kernel.conversations.create();
    const provider = new ScriptedProvider((_req, n) => (n === 1 ? reply('', toolCall('find_plan', {})) : reply('See [Launch plan](memo:note/n1).')));
    const r = await runChatTurn(fx.kernel, {
      provider,
      model: 'm',
      conversationId: conv.id,
      userMessage: 'find the plan',
      titles: false,
      systemPrompt: systemPrompt(fx.kernel, 'agent'),
    });
    expect(r.steps[0]?.items).toEqual([{ type: 'note', id: 'n1', title: 'Launch plan' }]);
    expect((await fx.kernel.conversations.activity(conv.id))[0]?.items).toEqual([{ type: 'note', id: 'n1', title: 'Launch plan' }]);
    // The model is told how to link what a tool returned.
    expect(provider.requests[0]!.messages[0]!.content).toContain('[its title](memo:TYPE/ID)');
  });
});
