import * as fs from 'node:fs';
import * as path from 'node:path';
import { makeKernel, tempDir, type Fixture } from '../helpers/kernel-fixture.js';
import { nth } from '../helpers/nth.js';

function writePack(base: string, id: string, manifest: Record<string, unknown> | string, code: string) {
  const dir = path.join(base, id);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'plugin.json'), typeof manifest === 'string' ? manifest : JSON.stringify(manifest));
  fs.writeFileSync(path.join(dir, 'index.js'), code);
}

const manifest = (id: string, tools: string[], extra: Record<string, unknown> = {}) => ({
  id,
  name: id,
  version: '1.0.0',
  description: `${id} pack`,
  main: 'index.js',
  tools: tools.map((name) => ({ name, description: `${name} tool`, parameters: { type: 'object' }, danger: 'safe', effect: 'read' })),
  ...extra,
});

describe('loading packs from folders', () => {
  let fx: Fixture;
  afterEach(async () => fx?.close());

  it('loads good packs and skips each broken one with its reason', async () => {
    const base = tempDir('memo-packs-');
    writePack(base, 'good', manifest('good', ['good_tool']), 'export const tools = { good_tool: () => "fine" };');
    writePack(base, 'bad-json', '{ "id": ', 'export const tools = {};');
    writePack(base, 'bad-schema', manifest('bad-schema', ['t1'], { version: 'one' }), 'export const tools = { t1: () => 1 };');
    writePack(base, 'wrong-folder', manifest('other-id', ['t2']), 'export const tools = { t2: () => 1 };');
    writePack(base, 'missing-handler', manifest('missing-handler', ['t3', 't4']), 'export const tools = { t3: () => 1, t5: () => 1 };');
    writePack(base, 'throws', manifest('throws', ['t6']), 'throw new Error("kaboom at load");');
    writePack(base, 'later-duplicate', manifest('later-duplicate', ['good_tool']), 'export const tools = { good_tool: () => 2 };');
    writePack(base, 'no-export', manifest('no-export', ['t7']), 'export const nothing = 1;');
    fs.mkdirSync(path.join(base, 'no-manifest'));

    fx = makeKernel({ packs: [] });
    const statuses = await fx.kernel.loadPacks([{ dir: base, source: 'extra' }]);
    const by = Object.fromEntries(statuses.map((s) => [s.id, s]));
    expect(by.good?.status).toBe('loaded');
    expect(by['bad-json']?.error).toMatch(/not valid JSON/);
    expect(by['bad-schema']?.error).toMatch(/version must match pattern/);
    expect(by['wrong-folder']?.error).toMatch(/id "other-id" but the folder is "wrong-folder"/);
    expect(by['missing-handler']?.error).toMatch(/no handler for t4; handlers not declared in plugin.json: t5/);
    expect(by.throws?.error).toMatch(/kaboom at load/);
    expect(by['later-duplicate']?.error).toMatch(/already provided by pack "good"/);
    expect(by['no-export']?.error).toMatch(/does not export "tools"/);
    expect(by['no-manifest']?.error).toMatch(/has no plugin.json/);
    expect(
      fx.kernel.registry
        .list()
        .filter((t) => t.pack.source === 'extra')
        .map((t) => t.spec.name),
    ).toEqual(['good_tool']);
    expect((await fx.kernel.invoke({ tool: 'good_tool', args: {}, caller: { kind: 'cli' } })).ok).toBe(true);
    expect(fx.logger.lines.filter((l) => l.level === 'warn')).toHaveLength(8);
  });

  it('refuses a manifest whose main points outside the pack folder', async () => {
    const base = tempDir('memo-packs-');
    writePack(base, 'escape', manifest('escape', ['t'], { main: '../other/index.js' }), 'export const tools = { t: () => 1 };');
    fx = makeKernel({ packs: [] });
    const status = nth(await fx.kernel.loadPacks([{ dir: base, source: 'extra' }]), 0);
    expect(status.status).toBe('failed');
    expect(status.error).toMatch(/main must match pattern/);
  });

  it('treats a missing folder as having no packs', async () => {
    fx = makeKernel({ packs: [] });
    expect(await fx.kernel.loadPacks([{ dir: path.join(tempDir(), 'nope'), source: 'extra' }])).toEqual([]);
  });
});
