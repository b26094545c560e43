import * as fs from 'node:fs';
import * as path from 'node:path';
import { lazyTool, type Preview, type ToolContext } from '../../../kernel/pack.js';
import { loadPackCode, readManifest } from '../../../kernel/packs/pack-loader.js';
import type { ToolImplementation } from '../../../kernel/tools/contract.js';
import type { PackDefinition } from '../../../kernel/tools/tool-registry.js';
import { makeKernel, tempDir, tool, type Fixture } from '../../helpers/kernel-fixture.js';

type Args = { text?: string; n?: number };

/** A lazily loaded tool whose loader counts how often it ran: the code is "imported" only when asked. */
function counted(impl: () => unknown): { impl: ToolImplementation; loads: () => number } {
  let loads = 0;
  const lazy = lazyTool<Args>(async () => {
    loads++;
    return (await Promise.resolve(impl())) as never;
  });
  return { impl: lazy, loads: () => loads };
}

function pack(id: string, tools: PackDefinition['tools']): PackDefinition {
  return { id, version: '1.0.0', tools };
}

describe('tools whose code loads on the first call (lazyTool)', () => {
  let fx: Fixture;
  afterEach(async () => fx?.close());

  it('is listed and validated from its declaration before its code loads, and the code loads once', async () => {
    const note = counted(() => (args: Args) => ({ saved: args.text }));
    fx = makeKernel({ packs: [pack('lazy-notes', [{ spec: tool('lazy_save', 'safe', 'write'), impl: note.impl }])] });
    expect(fx.kernel.registry.get('lazy_save')?.spec).toMatchObject({ name: 'lazy_save', danger: 'safe', effect: 'write' });
    expect(note.loads()).toBe(0);

    const invalid = await fx.kernel.invoke({ tool: 'lazy_save', args: { n: -1 }, caller: { kind: 'cli' } });
    expect(invalid.ok).toBe(false);
    expect(!invalid.ok && invalid.error.code).toBe('INVALID_ARGS');
    expect(note.loads()).toBe(0);

    const first = await fx.kernel.invoke({ tool: 'lazy_save', args: { text: 'milk' }, caller: { kind: 'cli' } });
    const second = await fx.kernel.invoke({ tool: 'lazy_save', args: { text: 'eggs' }, caller: { kind: 'cli' } });
    expect(first.ok && first.value).toEqual({ saved: 'milk' });
    expect(second.ok && second.value).toEqual({ saved: 'eggs' });
    expect(note.loads()).toBe(1);
    expect(fx.kernel.audit.tail({ tool: 'lazy_save' }).map((e) => e.outcome)).toEqual(['error', 'ok', 'ok']);
  });

  it('goes through the gate on its first call: the person sees the preview its code makes, and a denial runs nothing', async () => {
    let ran = 0;
    const write = counted(() => ({
      preview: (args: Args): Preview => ({ kind: 'text', text: `Save the note: ${args.text}` }),
      run: (args: Args) => {
        ran++;
        return { saved: args.text };
      },
    }));
    fx = makeKernel({ packs: [pack('lazy-gated', [{ spec: tool('lazy_write', 'medium', 'write'), impl: write.impl }])] });
    fx.prompter.answer('deny-once', 'allow-once');

    const denied = await fx.kernel.invoke({ tool: 'lazy_write', args: { text: 'milk' }, caller: { kind: 'cli' } });
    expect(!denied.ok && denied.error.code).toBe('PERMISSION_DENIED');
    expect(ran).toBe(0);
    expect(fx.prompter.asked[0]?.preview).toEqual({ kind: 'text', text: 'Save the note: milk' });

    const allowed = await fx.kernel.invoke({ tool: 'lazy_write', args: { text: 'eggs' }, caller: { kind: 'cli' } });
    expect(allowed.ok && allowed.value).toEqual({ saved: 'eggs' });
    expect(ran).toBe(1);
    expect(fx.kernel.audit.tail({ tool: 'lazy_write' }).map((e) => e.decision)).toEqual(['deny:once', 'allow:once']);
  });

  it("asks when its code's assess raises a concern, even for a safe tool", async () => {
    const risky = counted(() => ({
      assess: (args: Args) => (args.text === 'risky' ? { verdict: 'ask' as const, rule: 'test-rule', reason: 'the text is risky' } : null),
      run: () => 'done',
    }));
    fx = makeKernel({ packs: [pack('lazy-assess', [{ spec: tool('lazy_assess', 'safe'), impl: risky.impl }])] });
    fx.prompter.answer('deny-once');
    expect((await fx.kernel.invoke({ tool: 'lazy_assess', args: { text: 'plain' }, caller: { kind: 'cli' } })).ok).toBe(true);
    expect(fx.prompter.asked).toHaveLength(0);
    const asked = await fx.kernel.invoke({ tool: 'lazy_assess', args: { text: 'risky' }, caller: { kind: 'cli' } });
    expect(!asked.ok && asked.error.code).toBe('PERMISSION_DENIED');
    expect(fx.prompter.asked[0]?.concern).toMatchObject({ rule: 'test-rule', reason: 'the text is risky' });
  });

  it('shows no preview for code without one, as the same tool loaded eagerly would', async () => {
    const plain = (args: Args) => ({ echoed: args.text });
    const lazy = counted(() => plain);
    fx = makeKernel({
      packs: [
        pack('eager-pack', [{ spec: tool('eager_write', 'medium', 'write'), impl: plain }]),
        pack('lazy-pack', [{ spec: tool('lazy_plain', 'medium', 'write'), impl: lazy.impl }]),
      ],
    });
    fx.prompter.answer('allow-once', 'allow-once');
    const eager = await fx.kernel.invoke({ tool: 'eager_write', args: { text: 'a' }, caller: { kind: 'cli' } });
    const late = await fx.kernel.invoke({ tool: 'lazy_plain', args: { text: 'a' }, caller: { kind: 'cli' } });
    expect(late.ok && late.value).toEqual(eager.ok && eager.value);
    expect(fx.prompter.asked.map((r) => r.preview)).toEqual([null, null]);
  });

  it('fails a call whose code does not load with TOOL_FAILED naming the pack and tool, without real paths, and tries again next call', async () => {
    let broken = true;
    const flaky = counted(() => {
      if (broken) throw new Error(`Cannot find module '${path.join(tempDir(), 'secret-place', 'impl.js')}'`);
      return () => 'loaded at last';
    });
    fx = makeKernel({ packs: [pack('flaky-pack', [{ spec: tool('flaky_tool', 'safe'), impl: flaky.impl }])] });

    const failed = await fx.kernel.invoke({ tool: 'flaky_tool', args: {}, caller: { kind: 'cli' } });
    expect(failed.ok).toBe(false);
    if (failed.ok) return;
    expect(failed.error).toMatchObject({ code: 'TOOL_FAILED', plugin: 'flaky-pack', tool: 'flaky_tool' });
    expect(failed.error.message).toMatch(/^The code of flaky_tool \(pack "flaky-pack"\) could not be loaded: Cannot find module 'impl\.js'$/);
    expect(fx.kernel.audit.tail({ tool: 'flaky_tool' }).at(-1)).toMatchObject({ outcome: 'error', error: { code: 'TOOL_FAILED' } });

    broken = false;
    const retried = await fx.kernel.invoke({ tool: 'flaky_tool', args: {}, caller: { kind: 'cli' } });
    expect(retried.ok && retried.value).toBe('loaded at last');
    expect(flaky.loads()).toBe(2);
  });

  it('fails a call whose module has no handler for the tool with TOOL_FAILED saying so', async () => {
    const empty = counted(() => undefined);
    fx = makeKernel({ packs: [pack('hollow-pack', [{ spec: tool('hollow_tool', 'safe'), impl: empty.impl }])] });
    const r = await fx.kernel.invoke({ tool: 'hollow_tool', args: {}, caller: { kind: 'cli' } });
    expect(!r.ok && r.error).toMatchObject({ code: 'TOOL_FAILED', plugin: 'hollow-pack' });
    expect(!r.ok && r.error.message).toMatch(/could not be loaded: the loaded module has no handler function for it/);
  });
});

describe('pack folders with lazily loaded tools', () => {
  let fx: Fixture;
  afterEach(async () => fx?.close());

  function writeLazyPack(base: string, id: string, impl: string): string {
    const dir = path.join(base, id);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(
      path.join(dir, 'plugin.json'),
      JSON.stringify({
        id,
        name: id,
        version: '1.0.0',
        description: `${id} pack`,
        main: 'index.js',
        tools: [{ name: `${id.replace(/-/g, '_')}_greet`, description: 'greets', parameters: { type: 'object' }, danger: 'safe', effect: 'read' }],
      }),
    );
    fs.writeFileSync(
      path.join(dir, 'index.js'),
      `import { lazyTool } from 'memo-kernel/pack';\nexport const tools = { ${id.replace(/-/g, '_')}_greet: lazyTool(async () => (await import('./impl.js')).greet) };\n`,
    );
    fs.writeFileSync(path.join(dir, 'impl.js'), impl);
    return dir;
  }

  it('loads a pack whose lazily loaded file is broken, and its call fails naming the pack', async () => {
    const base = tempDir('memo-lazy-packs-');
    writeLazyPack(base, 'half-broken', 'export const greet = () => "hi" ;;; )');
    fx = makeKernel({ packs: [] });
    const [status] = await fx.kernel.loadPacks([{ dir: base, source: 'extra' }]);
    expect(status).toMatchObject({ id: 'half-broken', status: 'loaded' });
    const r = await fx.kernel.invoke({ tool: 'half_broken_greet', args: {}, caller: { kind: 'cli' } });
    expect(!r.ok && r.error).toMatchObject({ code: 'TOOL_FAILED', plugin: 'half-broken', tool: 'half_broken_greet' });
    expect(!r.ok && r.error.message).toMatch(/^The code of half_broken_greet \(pack "half-broken"\) could not be loaded: /);
    expect(!r.ok && r.error.message).not.toContain(base);
  });

  it('imports lazily loaded files up front on a reload or check, refusing a broken one with its file and line', async () => {
    const base = tempDir('memo-lazy-packs-');
    const dir = writeLazyPack(base, 'checked', 'export const greet = () => "hi";\nexport const oops = ( ;\n');
    await expect(loadPackCode(dir, readManifest(dir), 1)).rejects.toThrow(/its code failed to load: impl\.js:2:\d+: SyntaxError/);
  });

  it('imports lazily loaded files up front on a reload or check, and pairs a good one as usual', async () => {
    const base = tempDir('memo-lazy-packs-');
    const dir = writeLazyPack(base, 'fine', 'export const greet = () => "hi";\n');
    const { tools } = await loadPackCode(dir, readManifest(dir), 1);
    expect(tools.map((t) => t.spec.name)).toEqual(['fine_greet']);
    const impl = tools[0]!.impl as { run: (args: object, ctx: ToolContext) => unknown };
    expect(await impl.run({}, {} as ToolContext)).toBe('hi');
  });
});
