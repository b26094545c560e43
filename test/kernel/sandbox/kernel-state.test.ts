import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ToolResult } from '../../../kernel/tools/contract.js';
import { makeKernel, tempDir, type Fixture } from '../../helpers/kernel-fixture.js';

const PLUGINS = path.resolve('plugins');

/**
 * The kernel's own state (data folder, pack and skill folders) is out of every tool's reach, in the
 * three layouts a user can pick: the default `./data` inside the root, `--data` somewhere else
 * inside the root, and `--data` outside the root.
 */
interface Layout {
  name: string;
  /** Builds root and data folder; returns the data folder and how a tool spells it. */
  make(): { root: string; dataDir: string; spelled: string; cleanup: string[] };
}

const LAYOUTS: Layout[] = [
  {
    name: 'default: data inside the root as ./data',
    make() {
      const root = tempDir('memo-ks-root-');
      return { root, dataDir: path.join(root, 'data'), spelled: 'data', cleanup: [root] };
    },
  },
  {
    name: '--data inside the root under another name',
    make() {
      const root = tempDir('memo-ks-root-');
      return { root, dataDir: path.join(root, 'state', 'memo'), spelled: 'state/memo', cleanup: [root] };
    },
  },
  {
    name: '--data outside the root',
    make() {
      const root = tempDir('memo-ks-root-');
      const outside = tempDir('memo-ks-data-');
      return { root, dataDir: path.join(outside, 'data'), spelled: path.join(outside, 'data'), cleanup: [root, outside] };
    },
  },
];

const refused = (r: ToolResult): string => (r.ok ? `ran: ${JSON.stringify(r.value).slice(0, 200)}` : r.error.code);
const REFUSALS = ['PATH_PROTECTED', 'PATH_OUTSIDE_ROOT'];

describe.each(LAYOUTS)('kernel state with $name', (layout) => {
  let fx: Fixture;
  let cleanup: string[] = [];
  let spelled: string;
  let dataDir: string;
  const call = (tool: string, args: Record<string, unknown>) => fx.kernel.invoke({ tool, args, caller: { kind: 'agent' } });
  const inData = (rel: string) => path.join(spelled, rel);

  beforeEach(async () => {
    const made = layout.make();
    cleanup = made.cleanup;
    spelled = made.spelled;
    dataDir = made.dataDir;
    fx = makeKernel({ packs: [], root: made.root, dataDir: made.dataDir });
    fs.mkdirSync(path.join(dataDir, 'packs'), { recursive: true });
    fs.writeFileSync(path.join(dataDir, 'secret-notes.txt'), 'kept by the kernel\n');
    await fx.kernel.loadPacks([
      { dir: PLUGINS, source: 'builtin' },
      { dir: path.join(dataDir, 'packs'), source: 'extra' },
    ]);
    fx.prompter.setFallback('allow-once');
  });
  afterEach(async () => {
    await fx.close();
    for (const dir of cleanup) fs.rmSync(dir, { recursive: true, force: true });
  });

  const cases: Array<[string, () => [string, Record<string, unknown>]]> = [
    ['read_file of a file in it', () => ['read_file', { path: inData('secret-notes.txt') }]],
    ['get_file_info of a file in it', () => ['get_file_info', { path: inData('secret-notes.txt') }]],
    ['list_directory of it', () => ['list_directory', { path: spelled }]],
    ['search_files inside it', () => ['search_files', { pattern: '**/*', path: spelled }]],
    ['write_file of permissions.json', () => ['write_file', { path: inData('permissions.json'), content: '{"run_command":{"decision":"allow"}}' }]],
    ['write_file of a pack manifest under packs/', () => ['write_file', { path: inData('packs/evil/plugin.json'), content: '{}' }]],
    ['write_file over the audit trail', () => ['write_file', { path: inData('agent-audit.jsonl'), content: '' }]],
    ['edit_file of a file in it', () => ['edit_file', { path: inData('secret-notes.txt'), oldText: 'kept', newText: 'gone' }]],
    ['delete_file of a file in it', () => ['delete_file', { path: inData('secret-notes.txt') }]],
    ['delete_file of the folder itself', () => ['delete_file', { path: spelled, recursive: true }]],
    ['run_command with the folder as cwd', () => ['run_command', { command: 'pwd', cwd: spelled }]],
  ];

  it.each(cases)('refuses %s', async (_label, build) => {
    const [tool, args] = build();
    const before = fs.readFileSync(path.join(dataDir, 'secret-notes.txt'), 'utf8');
    const r = await call(tool, args);
    expect(REFUSALS).toContain(refused(r));
    // Nothing the kernel had is lost or added.
    expect(fs.readFileSync(path.join(dataDir, 'secret-notes.txt'), 'utf8')).toBe(before);
    expect(fs.existsSync(path.join(dataDir, 'packs', 'evil'))).toBe(false);
    expect(fx.kernel.permissions.list().find((d) => d.tool === 'run_command')).toBeUndefined();
  });

  it('names the rule and the folder when the path is inside the root', async () => {
    if (path.isAbsolute(spelled)) return; // outside the root, the root rule answers first
    const r = await call('read_file', { path: inData('secret-notes.txt') });
    expect(!r.ok && r.error).toMatchObject({ code: 'PATH_PROTECTED', message: expect.stringContaining('kernel-state') });
    expect(!r.ok && r.error.message).toContain('the data folder');
  });

  it('refuses a self_clone into its packs folder, so nothing hot-loads from a clone', async () => {
    const r = await call('self_clone', { target: path.join(dataDir, 'packs', 'evil') });
    expect(r.ok ? 'ran' : r.error.code).toBe('PATH_PROTECTED');
    expect(fs.existsSync(path.join(dataDir, 'packs', 'evil'))).toBe(false);
  });

  it('follows a link pointing into it and refuses it', async () => {
    fs.symlinkSync(dataDir, path.join(fx.root, 'innocent'));
    for (const [tool, args] of [
      ['read_file', { path: 'innocent/secret-notes.txt' }],
      ['list_directory', { path: 'innocent' }],
      ['write_file', { path: 'innocent/permissions.json', content: '{}' }],
    ] as const) {
      // Outside the root the root rule answers first; inside it, the kernel-state rule.
      expect(refused(await call(tool, args))).toBe(path.isAbsolute(spelled) ? 'PATH_OUTSIDE_ROOT' : 'PATH_PROTECTED');
    }
  });

  it('leaves it out of a search from the root and out of a clone of the project', async () => {
    fs.writeFileSync(path.join(fx.root, 'visible.txt'), 'x');
    const found = await call('search_files', { pattern: '**/*.txt' });
    expect(found.ok && (found.value as { matches: string[] }).matches).toEqual(['visible.txt']);
    const target = path.join(tempDir('memo-ks-clone-'), 'copy');
    cleanup.push(path.dirname(target));
    const cloned = await call('self_clone', { target });
    expect(cloned.ok).toBe(true);
    expect(fs.existsSync(path.join(target, 'visible.txt'))).toBe(true);
    expect(
      fs
        .readdirSync(target, { recursive: true })
        .map(String)
        .filter((f) => f.endsWith('secret-notes.txt')),
    ).toEqual([]);
  });
});

describe('kernel state spellings in the default layout', () => {
  let fx: Fixture;
  let root: string;
  const call = (tool: string, args: Record<string, unknown>) => fx.kernel.invoke({ tool, args, caller: { kind: 'agent' } });

  beforeEach(async () => {
    root = tempDir('memo-ks-root-');
    fx = makeKernel({ packs: [], root, dataDir: path.join(root, 'data') });
    await fx.kernel.loadPacks([{ dir: PLUGINS, source: 'builtin' }]);
    fx.prompter.setFallback('allow-once');
  });
  afterEach(async () => {
    await fx.close();
    fs.rmSync(root, { recursive: true, force: true });
  });

  it.each([
    'DATA/permissions.json',
    'Data/permissions.json',
    'data./permissions.json',
    'data /permissions.json',
    'data\u200b/permissions.json',
    './data/permissions.json',
    'data//permissions.json',
  ])('refuses a write to %j, a spelling other file systems open as the data folder', async (spelling) => {
    const r = await call('write_file', { path: spelling, content: '{}' });
    expect(refused(r)).toBe('PATH_PROTECTED');
  });

  it('refuses deleting a folder that contains the data folder', async () => {
    const nested = tempDir('memo-ks-root-');
    const inner = makeKernel({ packs: [], root: nested, dataDir: path.join(nested, 'work', 'data') });
    try {
      await inner.kernel.loadPacks([{ dir: PLUGINS, source: 'builtin' }]);
      inner.prompter.setFallback('allow-once');
      const r = await inner.kernel.invoke({ tool: 'delete_file', args: { path: 'work', recursive: true }, caller: { kind: 'agent' } });
      expect(!r.ok && r.error).toMatchObject({ code: 'PATH_PROTECTED', message: expect.stringContaining('contains the data folder') });
      expect(fs.existsSync(path.join(nested, 'work', 'data'))).toBe(true);
    } finally {
      await inner.close();
      fs.rmSync(nested, { recursive: true, force: true });
    }
  });

  it('protects an extra pack folder inside the root once packs are loaded from it', async () => {
    const extra = path.join(root, 'mypacks');
    fs.mkdirSync(extra);
    await fx.kernel.loadPacks([{ dir: extra, source: 'extra' }]);
    const r = await call('write_file', { path: 'mypacks/evil/plugin.json', content: '{}' });
    expect(!r.ok && r.error).toMatchObject({ code: 'PATH_PROTECTED', message: expect.stringContaining('a pack folder') });
    expect(fs.existsSync(path.join(extra, 'evil'))).toBe(false);
  });

  it('still reads and writes ordinary workspace files beside the data folder', async () => {
    fs.mkdirSync(path.join(root, 'notes'));
    fs.mkdirSync(path.join(root, 'database'));
    expect(refused(await call('write_file', { path: 'notes/data.txt', content: 'fine' }))).toMatch(/^ran/);
    expect(refused(await call('write_file', { path: 'database/x.json', content: '{}' }))).toMatch(/^ran/);
    const r = await call('read_file', { path: 'notes/data.txt' });
    expect(r.ok && (r.value as { content: string }).content).toBe('fine');
  });
});

describe('kernel state when the root is the kernel own checkout', () => {
  let fx: Fixture;
  const root = process.cwd();
  const probes = ['node_modules/memo-kernel-state-probe.txt', 'kernel/memo-kernel-state-probe.ts'];
  const call = (tool: string, args: Record<string, unknown>) => fx.kernel.invoke({ tool, args, caller: { kind: 'agent' } });

  beforeEach(async () => {
    fx = makeKernel({ packs: [], root, dataDir: path.join(tempDir('memo-ks-self-'), 'data') });
    await fx.kernel.loadPacks([{ dir: PLUGINS, source: 'builtin' }]);
    fx.prompter.setFallback('allow-once');
  });
  afterEach(async () => {
    await fx.close();
    // Only if the protection failed would these exist; they are this test's own names.
    for (const p of probes) fs.rmSync(path.join(root, p), { force: true });
  });

  it.each(probes)('refuses writing %s (the kernel code and its dependencies are loaded code)', async (probe) => {
    expect(refused(await call('write_file', { path: probe, content: 'x' }))).toBe('PATH_PROTECTED');
    expect(fs.existsSync(path.join(root, probe))).toBe(false);
  });

  it('still reads the kernel code, but not the built-in pack folder it loads from', async () => {
    expect(refused(await call('read_file', { path: 'kernel/kernel.ts' }))).toMatch(/^ran/);
    expect(refused(await call('read_file', { path: 'plugins/shell/plugin.json' }))).toBe('PATH_PROTECTED');
  });
});
