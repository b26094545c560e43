/**
 * `memo-kernel/pack` from a pack folder outside this package (where Node alone could not find it by
 * name) resolves to the running kernel's own module, before and after a hot reload: one kernel
 * module per process, so errors and classes a pack uses are the kernel's.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { killWhenDone } from '../helpers/cleanup.js';
import { requireFreshBuild } from '../helpers/dist.js';
import { tempDir } from '../helpers/kernel-fixture.js';

beforeAll(requireFreshBuild);

const HOST = `
import * as fs from 'node:fs';
import * as path from 'node:path';
const [, , packs, base, version] = process.argv;
const kernelApi = await import(${JSON.stringify(path.resolve('dist/kernel/index.js'))});
const packApi = await import(${JSON.stringify(path.resolve('dist/kernel/pack.js'))});
globalThis.hostModules = { MemoError: kernelApi.MemoError, defineTools: packApi.defineTools };
const kernel = kernelApi.createKernel({ root: base, dataDir: path.join(base, 'data'), rateLimits: { maxCalls: 0, duplicateCooldownMs: 0 }, logger: { info() {}, warn: (m) => process.stderr.write(m + '\\n'), error() {} } });
await kernel.loadPacks([{ dir: packs, source: 'extra' }]);
await kernel.watch();
const call = async () => {
  const r = await kernel.invoke({ tool: 'entry_probe', args: {}, caller: { kind: 'host' } });
  return r.ok ? r.value : r.error;
};
const first = await call();
// A new version of the pack's code, helper first: the watcher reloads it, helper included.
fs.writeFileSync(path.join(packs, 'entry-probe', 'helper.js'), "export const helperVersion = 'h2';\\n");
fs.writeFileSync(path.join(packs, 'entry-probe', 'index.js'), fs.readFileSync(path.join(packs, 'entry-probe', 'index.js'), 'utf8').replace("'v1'", "'v2'"));
let second = first;
for (let i = 0; i < 400 && second.version !== 'v2'; i++) {
  await new Promise((r) => setTimeout(r, 25));
  second = await call();
}
await kernel.shutdown();
process.stdout.write(JSON.stringify({ first, second }));
`;

const PACK = `
import { MemoError, defineTools } from 'memo-kernel/pack';
import { helperVersion } from './helper.js';
export const tools = defineTools({
  entry_probe: () => ({
    version: 'v1',
    helper: helperVersion,
    sameErrorClass: MemoError === globalThis.hostModules.MemoError,
    sameModule: defineTools === globalThis.hostModules.defineTools,
  }),
});
`;

describe('memo-kernel/pack from a folder outside the package', () => {
  it('is the running kernel’s module, and stays so when the pack reloads', async () => {
    const base = tempDir('memo-entry-');
    const packs = path.join(base, 'packs');
    const dir = path.join(packs, 'entry-probe');
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(
      path.join(dir, 'plugin.json'),
      JSON.stringify({
        id: 'entry-probe',
        name: 'Entry probe',
        version: '1.0.0',
        description: 'Reports which kernel module it sees.',
        main: 'index.js',
        tools: [{ name: 'entry_probe', description: 'Reports which kernel module it sees.', parameters: { type: 'object' }, danger: 'safe', effect: 'read' }],
      }),
    );
    fs.writeFileSync(path.join(dir, 'index.js'), PACK);
    fs.writeFileSync(path.join(dir, 'helper.js'), "export const helperVersion = 'h1';\n");
    fs.writeFileSync(path.join(base, 'host.mjs'), HOST);
    const child = killWhenDone(spawn(process.execPath, [path.join(base, 'host.mjs'), packs, base], { stdio: ['ignore', 'pipe', 'pipe'] }));
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const code = await new Promise<number | null>((r) => child.on('close', r));
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    const { first, second } = JSON.parse(stdout);
    expect(first).toEqual({ version: 'v1', helper: 'h1', sameErrorClass: true, sameModule: true });
    // The pack's own files are new modules; the kernel's module is the same one.
    expect(second).toEqual({ version: 'v2', helper: 'h2', sameErrorClass: true, sameModule: true });
  });
});
