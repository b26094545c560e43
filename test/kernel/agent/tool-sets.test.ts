/**
 * A turn's tool set with the built-in packs (about 100 tools): every definition when they fit a
 * quarter of the model's window, a narrowed set plus find_tools when they do not, and what find_tools
 * finds offered from the next model call on. The model is scripted (the edge of the world); the
 * kernel, its packs, tool search and the pipeline are real.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { runTurn } from '../../../kernel/agent/agent-loop.js';
import { TokenCounter } from '../../../kernel/agent/context-budget.js';
import type { ChatRequest } from '../../../kernel/providers/provider.js';
import { makeKernel, tempDir, type Fixture } from '../../helpers/kernel-fixture.js';
import { reply, ScriptedProvider, toolCall } from '../../helpers/scripted-provider.js';

let fx: Fixture;
beforeAll(async () => {
  const root = tempDir('memo-toolsets-');
  fs.mkdirSync(path.join(root, 'vault'));
  fx = makeKernel({ packs: [], root, dataDir: path.join(root, 'data') });
  await fx.kernel.loadPacks([{ dir: path.resolve('plugins'), source: 'builtin' }]);
  fx.prompter.setFallback('allow-once');
}, 120_000);
afterAll(async () => fx?.close());

const names = (request: ChatRequest | undefined) => (request?.tools ?? []).map((t) => t.name);
const tokensOf = (provider: ScriptedProvider, request: ChatRequest | undefined) => new TokenCounter(provider, 'm').count(JSON.stringify(request?.tools ?? []));

function turn(provider: ScriptedProvider, userMessage: string, extra: Partial<Parameters<typeof runTurn>[1]> = {}) {
  return runTurn(fx.kernel, { provider, model: 'm', conversationId: 'c', history: [], userMessage, ...extra });
}

describe('a turn with the built-in packs', () => {
  it('sends every enabled tool when all definitions fit a quarter of the window, and no find_tools', async () => {
    const provider = new ScriptedProvider(() => reply('ok'), 1_000_000);
    await turn(provider, 'hello');
    const sent = names(provider.requests[0]);
    expect(sent.length).toBe(fx.kernel.registry.list().length - 1);
    expect(sent).not.toContain('find_tools');
    expect(sent).toEqual(expect.arrayContaining(['run_command', 'vault_create_task', 'get_calendar_events']));
  });

  it('sends a narrowed set within a quarter of a 16K window: find_tools and the tools that fit the message', async () => {
    const provider = new ScriptedProvider(() => reply('ok'), 16_384);
    const r = await turn(provider, 'what meetings are on my calendar tomorrow?');
    expect(r.stopReason).toBe('final');
    const sent = names(provider.requests[0]);
    expect(sent).toContain('find_tools');
    expect(sent).toContain('get_calendar_events');
    expect(sent.length).toBeLessThan(15);
    expect(tokensOf(provider, provider.requests[0])).toBeLessThanOrEqual(16_384 / 4);
  });

  it('offers what find_tools finds from the next model call on, and runs it through the pipeline', async () => {
    const provider = new ScriptedProvider((_r, n) =>
      n === 1
        ? reply('', toolCall('find_tools', { query: 'create a new task in a project' }))
        : n === 2
          ? reply('', toolCall('vault_create_task', { title: 'Buy milk' }))
          : reply('done'),
    );
    Object.defineProperty(provider, 'contextWindow', { value: () => 8_192 });
    const r = await turn(provider, 'hi');
    expect(names(provider.requests[0])).not.toContain('vault_create_task');
    expect(names(provider.requests[1])).toContain('vault_create_task');
    expect(r.steps.map((s) => [s.tool, s.outcome])).toEqual([
      ['find_tools', 'ok'],
      ['vault_create_task', 'ok'],
    ]);
    const found = JSON.parse(r.messages.find((m) => m.role === 'tool')!.content) as { tools: Array<{ name: string }> };
    expect(found.tools.map((t) => t.name)).toContain('vault_create_task');
    expect(fx.kernel.audit.tail().filter((l) => l.tool === 'find_tools').length).toBeGreaterThan(0);
  });

  it('in Vault only offers and finds only Vault-only tools, and refuses a call outside the mode as unknown', async () => {
    const provider = new ScriptedProvider((_r, n) =>
      n === 1 ? reply('', toolCall('find_tools', { query: 'run a shell command', limit: 10 }), toolCall('run_command', { command: 'ls' })) : reply('done'),
    );
    const r = await turn(provider, 'list the files here', { mode: 'vault' });
    const vaultOnly = fx.kernel.registry
      .list()
      .filter((t) => t.spec.modes?.includes('vault'))
      .map((t) => t.spec.name);
    for (const name of names(provider.requests[0])) expect(vaultOnly).toContain(name);
    expect(names(provider.requests[0])).not.toContain('run_command');
    const found = JSON.parse(r.messages.find((m) => m.role === 'tool')!.content) as { tools: Array<{ name: string }> };
    for (const t of found.tools) expect(vaultOnly).toContain(t.name);
    expect(r.steps[1]).toMatchObject({ tool: 'run_command', outcome: 'error', code: 'UNKNOWN_TOOL' });
    // The model is told how to find what it may use, not sent a list of 70 names.
    expect(r.messages.filter((m) => m.role === 'tool')[1]?.content).toMatch(
      /^Error UNKNOWN_TOOL: There is no tool named "run_command" in this mode \(\d+ tools are available; find_tools searches them\)\.$/,
    );
    expect(fx.prompter.asked.filter((q) => q.tool === 'run_command')).toHaveLength(0);
  });

  it('in Web search only sends web_search alone', async () => {
    const provider = new ScriptedProvider(() => reply('ok'), 16_384);
    await turn(provider, 'news about the election', { mode: 'web' });
    expect(names(provider.requests[0])).toEqual(['web_search']);
  });

  it('ranks the file tools for a request that names a file without saying "file", and web_search for a URL', () => {
    expect(fx.kernel.toolSearch.search('what does hello.txt say?', { limit: 1 })[0]?.name).toBe('read_file');
    expect(fx.kernel.toolSearch.search('summarize https://example.com/post', { limit: 1 })[0]?.name).toBe('web_search');
    expect(fx.kernel.toolSearch.search('the of and', { limit: 5 })).toEqual([]);
  });
});
