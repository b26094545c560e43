/**
 * The pack as it ships: compiled into dist/ by `npm run build` (which `npm test` runs first), loaded
 * by the CLI, and its atomic write under a real crash: SIGKILL at each step of the write, at points
 * the test controls (plugins/fs-tools/crash-points.ts), never by timing.
 */
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { killWhenDone } from '../../helpers/cleanup.js';
import { requireFreshBuild } from '../../helpers/dist.js';
import { tempDir } from '../../helpers/kernel-fixture.js';
import { SPAWN_TIMEOUT_MS, waitFor } from '../../helpers/wait.js';
import { tempFiles } from './helpers.js';

const BIN = path.resolve('bin/memo');
const DIST_KERNEL = path.resolve('dist/kernel/index.js');
const DIST_PLUGINS = path.resolve('dist/plugins');

beforeAll(() => {
  requireFreshBuild();
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
  it(
    'reads a file with `memo tools call read_file --json`',
    () => {
      const w = workspace();
      fs.writeFileSync(path.join(w.root, 'a.txt'), 'first\nsecond\n');
      const r = memo(['tools', 'call', 'read_file', '--args', '{"path":"a.txt"}', '--json'], w.root, w.data);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.json).toEqual({
        ok: true,
        result: {
          path: 'a.txt',
          content: 'first\nsecond\n',
          totalLines: 2,
          size: 13,
          startLine: 1,
          endLine: 2,
          truncated: false,
          summary: 'read a.txt (2 lines, 13 bytes)',
        },
      });
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'lists every fs tool with its danger and effect',
    () => {
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
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'writes only with approval, and keeps the .bak',
    () => {
      const w = workspace();
      fs.writeFileSync(path.join(w.root, 'a.txt'), 'old\n');
      const denied = memo(['tools', 'call', 'write_file', '--args', '{"path":"a.txt","content":"new\\n"}', '--json'], w.root, w.data);
      expect(denied.json.error.code).toBe('PERMISSION_DENIED');
      const r = memo(['tools', 'call', 'write_file', '--args', '{"path":"a.txt","content":"new\\n"}', '--approve', 'allow-once', '--json'], w.root, w.data);
      expect(r.code).toBe(0);
      expect(r.json.result).toMatchObject({ created: false, backup: 'a.txt.bak' });
      expect(fs.readFileSync(path.join(w.root, 'a.txt'), 'utf8')).toBe('new\n');
      expect(fs.readFileSync(path.join(w.root, 'a.txt.bak'), 'utf8')).toBe('old\n');
    },
    SPAWN_TIMEOUT_MS,
  );
});

/**
 * One write_file through the compiled pack, in a process of its own. With MEMO_TEST_PAUSE_ATOMIC_WRITE
 * set (see plugins/fs-tools/crash-points.ts), the write stops at the chosen step, writes the marker
 * file and blocks until it is killed.
 */
const WRITER = `
import { createKernel, FixedAnswerPrompter } from ${JSON.stringify(pathToFileURL(DIST_KERNEL).href)};
const [root, data, plugins, letter, size] = process.argv.slice(2);
const content = (letter.repeat(79) + '\\n').repeat(Number(size) / 80);
const kernel = createKernel({ root, dataDir: data, prompter: new FixedAnswerPrompter('allow-once'), rateLimits: { maxCalls: 0, duplicateCooldownMs: 0 } });
await kernel.loadPacks([{ dir: plugins, source: 'builtin' }]);
const r = await kernel.invoke({ tool: 'write_file', args: { path: 'big.txt', content }, caller: { kind: 'agent' } });
await kernel.shutdown();
if (!r.ok) { process.stderr.write(JSON.stringify(r.error)); process.exit(3); }
`;

describe('fs-tools write_file under a crash', () => {
  const SIZE = 256 * 1024;
  const full = (c: string) => (c.repeat(79) + '\n').repeat(SIZE / 80);
  const [OLD, NEW, NEXT] = [full('O'), full('N'), full('X')];
  const name = (content: string | null) =>
    content === null ? 'absent' : (({ [OLD]: 'old', [NEW]: 'new', [NEXT]: 'next' } as Record<string, string>)[content] ?? `partial (${content.length} bytes)`);
  const read = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : null);

  let script: string;
  beforeAll(() => {
    script = path.join(tempDir('memo-crash-'), 'writer.mjs');
    fs.writeFileSync(script, WRITER);
  });

  /** Writes the version made of `content` ('N' or 'X') to big.txt. */
  function writer(root: string, data: string, content: 'N' | 'X', env: NodeJS.ProcessEnv = {}) {
    const child = killWhenDone(
      spawn(process.execPath, [script, root, data, DIST_PLUGINS, content, String(SIZE)], {
        stdio: ['ignore', 'ignore', 'pipe'],
        env: { ...process.env, ...env },
      }),
    );
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    // 'close', not 'exit': only then has all of the child's stderr been read.
    const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
    return { child, exited, stderr: () => stderr };
  }

  /** Starts a write that pauses at `step`, and SIGKILLs it there (the marker file says it arrived). */
  async function killAt(step: string, root: string, data: string): Promise<number | undefined> {
    const marker = path.join(path.dirname(root), `paused-${step}`);
    const w = writer(root, data, 'N', { MEMO_TEST_PAUSE_ATOMIC_WRITE: `${step}:${marker}` });
    let exitCode: number | null | undefined;
    void w.exited.then((code) => (exitCode = code));
    await waitFor(() => fs.existsSync(marker) || exitCode !== undefined, { what: `the writer to reach ${step}` });
    if (exitCode !== undefined) throw new Error(`the writer ended (${exitCode}) before ${step}: ${w.stderr()}`);
    w.child.kill('SIGKILL');
    await w.exited;
    return w.child.pid;
  }

  // After a kill at each step: what the target and its .bak hold (the write replaces OLD with NEW).
  const cases: Array<[step: string, target: string, bak: string | null]> = [
    ['temp-created', OLD, null],
    ['temp-partial', OLD, null],
    ['temp-written', OLD, null],
    ['backup-made', OLD, null],
    ['before-rename', OLD, OLD],
    ['after-rename', NEW, OLD],
  ];

  it.each(cases)(
    'after SIGKILL at %s, the file is the old or the new one, complete, and the next write succeeds',
    async (step, target, bak) => {
      const base = tempDir('memo-crash-');
      const root = path.join(base, 'root');
      const data = path.join(base, 'data');
      fs.mkdirSync(root);
      fs.writeFileSync(path.join(root, 'big.txt'), OLD);

      const killed = await killAt(step, root, data);
      expect(name(read(path.join(root, 'big.txt')))).toBe(name(target));
      expect(name(read(path.join(root, 'big.txt.bak')))).toBe(name(bak));
      // What a crash leaves at most: the hidden temporary files of the write it interrupted, naming its process.
      const left = tempFiles(root);
      expect(left.length).toBeLessThanOrEqual(2);
      for (const f of left) expect(f).toMatch(new RegExp(`^\\.big\\.txt(\\.bak)?\\.memo-${killed}-[0-9a-f]{12}\\.tmp$`));

      const next = writer(root, data, 'X');
      expect([await next.exited, next.stderr()]).toEqual([0, '']);
      expect(name(read(path.join(root, 'big.txt')))).toBe('next');
      expect(name(read(path.join(root, 'big.txt.bak')))).toBe(name(target));
      // The next write in the folder sweeps what the crash left, and leaves none of its own.
      expect(tempFiles(root)).toEqual([]);
    },
    SPAWN_TIMEOUT_MS,
  );
});
