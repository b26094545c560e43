/**
 * Tools whose code loads on their first call (lazyTool), in real processes around the compiled
 * kernel: a built-in pack's lazily loaded files stay one module graph with the files it loaded at
 * start even when a pack from outside the package has since registered the resolve hook, and a
 * changed lazily loaded file hot-reloads (a broken one is refused, the previous version keeps running).
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { killWhenDone } from '../helpers/cleanup.js';
import { requireFreshBuild } from '../helpers/dist.js';
import { tempDir } from '../helpers/kernel-fixture.js';
import { waitFor } from '../helpers/wait.js';
import { KernelHost } from './kernel-host.js';

beforeAll(requireFreshBuild);

function writeManifest(dir: string, id: string, tool: string, danger = 'safe'): void {
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(
    path.join(dir, 'plugin.json'),
    JSON.stringify({
      id,
      name: id,
      version: '1.0.0',
      description: `${id} pack`,
      main: 'index.js',
      tools: [{ name: tool, description: `${tool} tool`, parameters: { type: 'object' }, danger, effect: 'read' }],
    }),
  );
}

const HOST = `
import * as path from 'node:path';
const [, builtin, outside, base] = process.argv;
const { createKernel, FixedAnswerPrompter } = await import(${JSON.stringify(path.resolve('dist/kernel/index.js'))});
const kernel = createKernel({ root: base, dataDir: path.join(base, 'data'), prompter: new FixedAnswerPrompter('allow-once'), rateLimits: { maxCalls: 0, duplicateCooldownMs: 0 }, logger: { info() {}, warn: (m) => process.stderr.write(m + '\\n'), error() {} } });
// The vault first, as a built-in pack (no resolve hook yet), then a pack from outside the package (which registers it).
const loaded = [...(await kernel.loadPacks([{ dir: builtin, source: 'builtin', only: ['vault'] }])), ...(await kernel.loadPacks([{ dir: outside, source: 'extra' }]))];
const call = async (tool, args) => {
  const r = await kernel.invoke({ tool, args, caller: { kind: 'host' } });
  return r.ok ? { ok: true, value: r.value } : { ok: false, error: r.error };
};
const reindex = await call('vault_reindex', { create: true });
const created = await call('vault_create_note', { title: 'Lazy graph', content: 'one module graph' });
const found = await call('vault_search_notes', { query: 'graph' });
await kernel.shutdown();
process.stdout.write(JSON.stringify({ loaded: loaded.map((s) => [s.id, s.status]), reindex, created, found }));
`;

describe('lazily loaded tools in a real process', () => {
  it('a built-in pack loaded before a pack from outside the package runs its lazily loaded tools against its own state', async () => {
    const base = tempDir('memo-lazy-e2e-');
    const outside = path.join(base, 'packs');
    writeManifest(path.join(outside, 'outside'), 'outside', 'outside_probe');
    fs.writeFileSync(path.join(outside, 'outside', 'index.js'), 'export const tools = { outside_probe: () => "here" };\n');
    fs.mkdirSync(path.join(base, 'root'));
    const child = killWhenDone(
      spawn(process.execPath, ['--input-type=module', '-e', HOST, path.resolve('dist/plugins'), outside, path.join(base, 'root')], {
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect({ code, err }).toEqual({ code: 0, err: '' });
    const r = JSON.parse(out) as Record<string, any>;
    expect(r.loaded).toEqual([
      ['vault', 'loaded'],
      ['outside', 'loaded'],
    ]);
    // The tools' code was imported after the hook: had it become a second copy of the vault's
    // modules, it would not find the runtime the pack's activate() registered ("not active").
    expect(r.reindex).toMatchObject({ ok: true });
    expect(r.created).toMatchObject({ ok: true });
    expect(r.found.ok).toBe(true);
    expect(JSON.stringify(r.found.value)).toContain('Lazy graph');
  });

  describe('hot reload', () => {
    let host: KernelHost;
    afterEach(async () => host?.stop());

    it('reloads a changed lazily loaded file, and keeps the previous version when the new one is broken', async () => {
      const base = tempDir('memo-lazy-hot-');
      const packs = path.join(base, 'packs');
      const dir = path.join(packs, 'lazy-greeter');
      writeManifest(dir, 'lazy-greeter', 'lazy_greet');
      fs.writeFileSync(path.join(dir, 'impl.js'), 'export const greet = () => "v1";\n');
      fs.writeFileSync(
        path.join(dir, 'index.js'),
        'import { lazyTool } from "memo-kernel/pack";\nexport const tools = { lazy_greet: lazyTool(async () => (await import("./impl.js")).greet) };\n',
      );
      fs.mkdirSync(path.join(base, 'root'));
      host = await KernelHost.start(path.join(base, 'root'), path.join(base, 'data'), packs);
      expect(await host.event(1)).toMatchObject({ event: 'added', pack: 'lazy-greeter' });
      expect((await host.call('lazy_greet')).value).toBe('v1');

      fs.writeFileSync(path.join(dir, 'impl.js'), 'export const greet = () => "v2";\n');
      expect(await host.event(2)).toMatchObject({ event: 'reloaded', pack: 'lazy-greeter' });
      expect((await host.call('lazy_greet')).value).toBe('v2');

      fs.writeFileSync(path.join(dir, 'impl.js'), 'export const greet = () => "v3" ;;; )\n');
      const state = await waitFor(
        async () => {
          const found = (await host.request('packs')).packs.find((p: any) => p.id === 'lazy-greeter');
          return found?.reloadError !== undefined ? found : undefined;
        },
        { what: 'the broken reload to be refused' },
      );
      expect(state.status).toBe('loaded');
      expect(state.reloadError).toMatch(/its code failed to load: impl\.js:1:\d+: SyntaxError/);
      expect((await host.call('lazy_greet')).value).toBe('v2');
      expect(host.events).toHaveLength(2);
    });
  });
});
