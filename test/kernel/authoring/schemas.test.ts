import * as fs from 'node:fs';
import * as path from 'node:path';
import { SchemaCompiler } from '../../../kernel/tools/schemas.js';
import { resolveConfig } from '../../../kernel/packs/pack-settings.js';
import { makeKernel, tempDir, type Fixture } from '../../helpers/kernel-fixture.js';

const tool = (name: string, parameters: Record<string, unknown>) => ({
  spec: { name, description: `${name} tool`, parameters, danger: 'safe' as const, effect: 'read' as const },
  impl: () => 1,
});

describe('one schema compiler per kernel', () => {
  let fx: Fixture;
  afterEach(async () => fx?.close());

  it('compiles a schema once, whatever the key order it is written in', () => {
    const schemas = new SchemaCompiler();
    const a = schemas.compile({ type: 'object', properties: { x: { type: 'string' } }, required: ['x'] });
    const b = schemas.compile({ required: ['x'], properties: { x: { type: 'string' } }, type: 'object' });
    expect(b).toBe(a);
    expect(schemas.size).toBe(1);
    expect(a({ x: 'hi' })).toBe(true);
    expect(a({ x: 1 })).toBe(false);
  });

  it('gives two tools of two packs with the same parameters one validator', () => {
    fx = makeKernel({ packs: [] });
    const params = { type: 'object', properties: { q: { type: 'string' } } };
    fx.kernel.registerPack({ id: 'one', tools: [tool('one_tool', params)] });
    fx.kernel.registerPack({ id: 'two', tools: [tool('two_tool', { ...params })] });
    expect(fx.kernel.registry.get('one_tool')!.validate).toBe(fx.kernel.registry.get('two_tool')!.validate);
  });

  it('keeps its cache bounded when a pack is reloaded 200 times with a new schema each time', () => {
    fx = makeKernel({ packs: [] });
    const registry = fx.kernel.registry;
    const before = registry.schemas.size;
    for (let i = 0; i < 200; i++) {
      registry.replacePack({ id: 'reloaded', tools: [tool('reloaded_tool', { type: 'object', properties: { n: { const: i } } })] });
    }
    // One held by the live tool, at most 64 idle ones kept for reuse.
    expect(registry.schemas.size - before).toBeLessThanOrEqual(65);
    expect(registry.get('reloaded_tool')!.validate({ n: 199 })).toBe(true);
    expect(registry.get('reloaded_tool')!.validate({ n: 198 })).toBe(false);
  });

  it('reuses the compiled validator when a pack is reloaded with the same schemas', () => {
    fx = makeKernel({ packs: [] });
    const registry = fx.kernel.registry;
    const def = () => ({ id: 'same', tools: [tool('same_tool', { type: 'object', properties: { n: { type: 'integer' } } })] });
    registry.replacePack(def());
    const first = registry.get('same_tool')!.validate;
    const size = registry.schemas.size;
    for (let i = 0; i < 200; i++) registry.replacePack(def());
    expect(registry.get('same_tool')!.validate).toBe(first);
    expect(registry.schemas.size).toBe(size);
  });

  it('compiles two schemas with the same $id in two kernels without a clash', () => {
    const a = new SchemaCompiler();
    const b = new SchemaCompiler();
    const va = a.compile({ $id: 'https://example.test/s', type: 'string' });
    const vb = b.compile({ $id: 'https://example.test/s', type: 'number' });
    expect([va('x'), va(1), vb('x'), vb(1)]).toEqual([true, false, false, true]);
  });

  it('applies settings defaults, nested ones too, without changing what it was given', () => {
    const schema = {
      type: 'object',
      properties: { limit: { type: 'integer', default: 5 }, nested: { type: 'object', default: {}, properties: { on: { type: 'boolean', default: true } } } },
    };
    const given = {};
    expect(resolveConfig('p', schema, given)).toEqual({ limit: 5, nested: { on: true } });
    expect(given).toEqual({});
    expect(() => resolveConfig('p', schema, { limit: 'many' })).toThrow(/limit must be integer/);
  });

  it('refuses a host pack tool whose declaration breaks the one declaration schema, naming field and allowed values', () => {
    fx = makeKernel({ packs: [] });
    const bad = { ...tool('t', { type: 'object' }), spec: { ...tool('t', { type: 'object' }).spec, effect: 'peek' as never, colour: 'red' } };
    expect(() => fx.kernel.registerPack({ id: 'x', tools: [bad] })).toThrow(
      /colour is not an accepted field \(accepted: name, description, .*openWorld, editable, modes, keywords, examples\)/,
    );
    expect(() => fx.kernel.registerPack({ id: 'x', tools: [bad] })).toThrow(/effect must be one of read, write, delete \(got "peek"\)/);
  });

  it('loads a pack whose plugin.json marks a tool openWorld, and keeps the hint on the tool', async () => {
    const base = tempDir('memo-openworld-');
    const dir = path.join(base, 'net-pack');
    fs.mkdirSync(dir);
    fs.writeFileSync(
      path.join(dir, 'plugin.json'),
      JSON.stringify({
        id: 'net-pack',
        name: 'n',
        version: '1.0.0',
        description: 'd',
        main: 'index.js',
        tools: [{ name: 'fetch_page', description: 'd', parameters: { type: 'object' }, danger: 'safe', effect: 'read', openWorld: true }],
      }),
    );
    fs.writeFileSync(path.join(dir, 'index.js'), 'export const tools = { fetch_page: () => 1 };');
    fx = makeKernel({ packs: [] });
    const [state] = await fx.kernel.loadPacks([{ dir: base, source: 'extra' }]);
    expect(state?.status).toBe('loaded');
    expect(fx.kernel.registry.get('fetch_page')!.spec.openWorld).toBe(true);
  });
});
