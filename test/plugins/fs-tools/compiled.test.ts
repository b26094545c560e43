/**
 * The pack as it ships: compiled into dist/ by `npm run build` (which `npm test` runs first), loaded
 * by the CLI, and its atomic write under a real crash (SIGKILL in the middle of writing).
 */
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { tempDir } from '../../helpers/kernel-fixture.js';
import { tempFiles } from './helpers.js';

const BIN = path.resolve('bin/memo');
const DIST_KERNEL = path.resolve('dist/kernel/index.js');
const DIST_PLUGINS = path.resolve('dist/plugins');

beforeAll(() => {
  if (!fs.existsSync(path.join(DIST_PLUGINS, 'fs-tools', 'index.js')) || !fs.existsSync(path.join(DIST_PLUGINS, 'fs-tools', 'plugin.json'))) {
    throw new Error('dist/plugins/fs-tools is missing: run `npm run build` first (npm test does)');
  }
});

function memo(args: string[], root: string, data: string) {
  const res = spawnSync(process.execPath, [BIN, '--root', root, '--data', data, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  let json: any;
  try {
    json = JSON.parse(res.stdout);
  } catch {
    json = undefined;
  }
  return { code: res.status, stdout: res.stdout, stderr: res.stderr, json };
}

function workspace() {
  const base = tempDir('memo-fs-cli-');
  const root = path.join(base, 'root');
  fs.mkdirSync(root);
  return { root, data: path.join(base, 'data') };
}

describe('fs-tools, compiled, through the CLI', () => {
  it('reads a file with `memo tools call read_file --json`', () => {
    const w = workspace();
    fs.writeFileSync(path.join(w.root, 'a.txt'), 'first\nsecond\n');
    const r = memo(['tools', 'call', 'read_file', '--args', '{"path":"a.txt"}', '--json'], w.root, w.data);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.json).toEqual({
      ok: true,
      result: { path: 'a.txt', content: 'first\nsecond\n', totalLines: 2, size: 13, startLine: 1, endLine: 2, truncated: false, summary: 'read a.txt (2 lines, 13 bytes)' },
    });
  });

  it('lists every fs tool with its danger and effect', () => {
    const w = workspace();
    const r = memo(['tools', 'list', '--json'], w.root, w.data);
    expect(r.code).toBe(0);
    const mine = Object.fromEntries(r.json.filter((t: any) => t.pack === 'fs-tools').map((t: any) => [t.name, `${t.danger}/${t.effect}`]));
    expect(mine).toEqual({
      delete_file: 'dangerous/delete',
      delete_lines: 'medium/write',
      edit_file: 'medium/write',
      get_file_info: 'safe/read',
      insert_line: 'medium/write',
      list_directory: 'safe/read',
      read_file: 'safe/read',
      search_files: 'safe/read',
      self_clone: 'dangerous/write',
      write_file: 'medium/write',
    });
  });

  it('writes only with approval, and keeps the .bak', () => {
    const w = workspace();
    fs.writeFileSync(path.join(w.root, 'a.txt'), 'old\n');
    const denied = memo(['tools', 'call', 'write_file', '--args', '{"path":"a.txt","content":"new\\n"}', '--json'], w.root, w.data);
    expect(denied.json.error.code).toBe('PERMISSION_DENIED');
    const r = memo(['tools', 'call', 'write_file', '--args', '{"path":"a.txt","content":"new\\n"}', '--approve', 'allow-once', '--json'], w.root, w.data);
    expect(r.code).toBe(0);
    expect(r.json.result).toMatchObject({ created: false, backup: 'a.txt.bak' });
    expect(fs.readFileSync(path.join(w.root, 'a.txt'), 'utf8')).toBe('new\n');
    expect(fs.readFileSync(path.join(w.root, 'a.txt.bak'), 'utf8')).toBe('old\n');
  });
});

/** A process that overwrites one big file with alternating contents through the compiled pack, forever. */
const WRITER = `
import { createKernel, FixedAnswerPrompter } from ${JSON.stringify(pathToFileURL(DIST_KERNEL).href)};
const [root, data, plugins, size] = process.argv.slice(2);
const kernel = createKernel({ root, dataDir: data, prompter: new FixedAnswerPrompter('allow-once'), rateLimits: { maxCalls: 0, duplicateCooldownMs: 0 } });
await kernel.loadPacks([{ dir: plugins, source: 'builtin' }]);
const contents = ['A', 'B'].map((c) => (c.repeat(79) + '\\n').repeat(Math.ceil(Number(size) / 80)));
process.stdout.write('ready\\n');
for (let i = 0; ; i++) {
  const r = await kernel.invoke({ tool: 'write_file', args: { path: 'big.txt', content: contents[i % 2] }, caller: { kind: 'agent' } });
  if (!r.ok) { process.stderr.write(JSON.stringify(r.error)); process.exit(3); }
}
`;

describe('fs-tools write_file under a crash', () => {
  const SIZE = 16 * 1024 * 1024;
  const full = (c: string) => Buffer.from((c.repeat(79) + '\n').repeat(Math.ceil(SIZE / 80)));

  async function killMidWrite(script: string, root: string, data: string, delayMs: number): Promise<void> {
    const child = spawn(process.execPath, [script, root, data, DIST_PLUGINS, String(SIZE)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d) => String(d).includes('ready') && resolve());
      child.on('exit', (code) => reject(new Error(`writer exited early (${code}): ${stderr}`)));
    });
    await new Promise((r) => setTimeout(r, delayMs));
    const exited = new Promise((r) => child.on('exit', r));
    child.kill('SIGKILL');
    await exited;
  }

  it('leaves the old or a new complete file after SIGKILL at any moment, never a half-written one', async () => {
    const base = tempDir('memo-crash-');
    const script = path.join(base, 'writer.mjs');
    fs.writeFileSync(script, WRITER);
    const versions = [full('O'), full('A'), full('B')];
    const whichOf = (buf: Buffer) => versions.findIndex((v) => v.equals(buf));

    let interruptedWrites = 0;
    for (let attempt = 0; attempt < 12 && interruptedWrites < 3; attempt++) {
      const root = path.join(base, `root${attempt}`);
      fs.mkdirSync(root);
      fs.writeFileSync(path.join(root, 'big.txt'), versions[0]!);
      await killMidWrite(script, root, path.join(base, `data${attempt}`), 40 + ((attempt * 97) % 400));

      expect(whichOf(fs.readFileSync(path.join(root, 'big.txt')))).toBeGreaterThanOrEqual(0);
      if (fs.existsSync(path.join(root, 'big.txt.bak'))) expect(whichOf(fs.readFileSync(path.join(root, 'big.txt.bak')))).toBeGreaterThanOrEqual(0);
      // A temporary file left behind means the kill landed in the middle of a write.
      if (tempFiles(root).length > 0) interruptedWrites++;
    }
    expect(interruptedWrites).toBeGreaterThan(0);
  }, 120_000);
});
