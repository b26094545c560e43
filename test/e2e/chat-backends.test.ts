import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { requireFreshBuild } from '../helpers/dist.js';
import { tempDir } from '../helpers/kernel-fixture.js';
import { containmentInfo } from '../../kernel/sandbox/process-runner.js';
import { SPAWN_TIMEOUT_MS, waitFor } from '../helpers/wait.js';
import { recordedRuns, runProcesses, writeFakeClis } from '../kernel/agent/fake-clis.js';

const BIN = path.resolve('bin/memo');
const PACKS = path.resolve('test/fixtures/packs');

beforeAll(requireFreshBuild);

const containment = await containmentInfo();

interface World {
  root: string;
  data: string;
  bin: string;
  rec: string;
  home: string;
}

function world(): World {
  const base = tempDir('memo-chat-backends-');
  const w = {
    root: path.join(base, 'root'),
    data: path.join(base, 'root', 'data'),
    bin: path.join(base, 'bin'),
    rec: path.join(base, 'rec'),
    home: path.join(base, 'home'),
  };
  for (const d of [w.root, w.rec, w.home]) fs.mkdirSync(d);
  writeFakeClis(w.bin);
  return w;
}

function memo(w: World, args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [BIN, '--packs', PACKS, '--root', w.root, '--data', w.data, ...args], {
    encoding: 'utf8',
    input: '',
    // The fake CLIs first on PATH; a HOME of the test's own, so nothing here can touch the real one.
    env: { ...process.env, PATH: `${w.bin}${path.delimiter}${process.env.PATH ?? ''}`, HOME: w.home, FAKE_CLI_RECORD: w.rec, MEMO_CLI_WRITABLE: w.rec, ...env },
  });
  let json: any;
  try {
    json = JSON.parse(r.stdout);
  } catch {
    json = undefined;
  }
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, json };
}

describe('memo chat --backend', () => {
  it('runs a turn through the claude CLI: its write comes back over MCP, passes the gate and lands in the workspace', () => {
    const w = world();
    const r = memo(w, ['chat', '-p', 'write ferns need water', '--backend', 'claude', '--approve', 'allow-once', '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ provider: 'claude-cli', model: 'claude-sonnet-4-5-20250929', access: 'vault', stopReason: 'final' });
    expect(r.json.answer).toMatch(/^Done: /);
    expect(r.json.steps).toEqual([expect.objectContaining({ tool: 'note_write', outcome: 'ok' })]);
    expect(fs.readFileSync(path.join(w.root, 'notes.txt'), 'utf8')).toContain('ferns need water');
    const [run] = recordedRuns(w.rec, 'claude');
    expect(run.argv[run.argv.indexOf('--tools') + 1]).toBe('');
    // The audit trail has the call, made by the MCP caller with the turn's capability.
    const audit = fs
      .readFileSync(path.join(w.data, 'agent-audit.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .filter((l) => l.tool === 'note_write');
    expect(audit).toEqual([expect.objectContaining({ outcome: 'ok', caller: expect.objectContaining({ kind: 'mcp' }) })]);
    // The conversation is stored encrypted like any other: no plaintext of the message on disk.
    expect(fs.readFileSync(path.join(w.data, 'agent.sqlite')).includes('ferns need water')).toBe(false);
    // Nothing was written into the test's HOME by Memo.
    expect(fs.readdirSync(w.home)).toEqual([]);
  });

  it('without an answer the write is denied at the gate, and the CLI is told why', () => {
    const w = world();
    const r = memo(w, ['chat', '-p', 'write nope', '--backend', 'codex', '--json']);
    expect(r.code).toBe(0);
    expect(r.json.steps).toEqual([expect.objectContaining({ tool: 'note_write', outcome: 'denied', code: 'PERMISSION_DENIED' })]);
    expect(fs.existsSync(path.join(w.root, 'notes.txt'))).toBe(false);
  });

  it('says plainly which access a turn has, and refuses agy in Vault only', () => {
    const w = world();
    const text = memo(w, ['chat', '-p', 'hello', '--backend', 'claude', '--computer-access']);
    expect(text.code).toBe(0);
    expect(text.stdout).toBe('You said: hello\n');
    expect(text.stderr).toContain("memo: Claude CLI 2.1.3 · Computer access: the CLI's own file, shell and web tools are allowed this turn");
    const agy = memo(w, ['chat', '-p', 'hello', '--backend', 'agy']);
    expect(agy.code).toBe(1);
    expect(agy.stderr).toMatch(/Antigravity CLI cannot be limited to Memo's tools/);
    expect(memo(w, ['chat', '-p', 'hello', '--computer-access']).stderr).toMatch(/--computer-access applies to a CLI backend/);
    const web = memo(w, ['chat', '-p', 'hello', '--backend', 'claude', '--web']);
    expect(web.code).toBe(1);
    expect(web.stderr).toContain('memo: warning: Web search only does not apply to a CLI backend');
    expect(web.stderr).toContain('Web search only does not apply to Claude CLI');
    const computer = memo(w, ['chat', '-p', 'hello', '--backend', 'claude', '--mode', 'computer']);
    expect(computer.stderr).toContain('memo: Claude CLI 2.1.3 · Computer access');
    expect(memo(w, ['chat', '-p', 'hello', '--backend', 'gemini']).stderr).toMatch(/--backend must be one of claude, codex, agy/);
  });

  it('memo chat --backends lists each CLI with its version, and how to set up one that is missing', () => {
    const w = world();
    fs.rmSync(path.join(w.bin, 'codex'));
    const r = memo(w, ['chat', '--backends', '--json'], { FAKE_AGY_VERSION: '1.1.0', SHELL: '' });
    expect(r.code).toBe(0);
    expect(r.json.backends.map((b: any) => [b.backend, b.found, b.version ?? null])).toEqual([
      ['claude', true, '2.1.3'],
      ['codex', false, null],
      ['agy', false, '1.1.0'],
    ]);
    const text = memo(w, ['chat', '--backends'], { SHELL: '' });
    expect(text.stdout).toContain('claude Claude CLI  2.1.3');
    expect(text.stdout).toMatch(/codex {2}Codex CLI {2}not detected: `codex` is not on PATH/);
    expect(text.stdout).toContain('set up: install it, then run `codex login` once');
  });

  // With PID namespaces (process-containment.ts) the CLI is the init of its own, tied to Memo by a
  // parent-death signal; without them Memo cleans up only when it gets to (see README, Security).
  (containment.mode === 'namespace' ? it : it.skip)(
    'Memo killed with SIGKILL mid-turn takes the CLI down with it, and what the CLI left in a session of its own',
    async () => {
      const w = world();
      const child = spawn(process.execPath, [BIN, '--packs', PACKS, '--root', w.root, '--data', w.data, 'chat', '-p', 'hello', '--backend', 'claude'], {
        stdio: ['ignore', 'ignore', 'pipe'],
        env: {
          ...process.env,
          PATH: `${w.bin}${path.delimiter}${process.env.PATH ?? ''}`,
          HOME: w.home,
          // Killed, Memo cannot remove the turn's run folder: it goes with the test's own.
          TMPDIR: w.home,
          FAKE_CLI_RECORD: w.rec,
          MEMO_CLI_WRITABLE: w.rec,
          // The CLI never answers (and ignores SIGTERM); first it starts a process in a session of its own.
          FAKE_CLI_HANG: '1',
          FAKE_CLI_LEAVE: 'escape',
        },
      });
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      const ended = new Promise<void>((r) => child.once('exit', () => r()));
      const memoPid = child.pid!;
      try {
        await waitFor(() => fs.existsSync(path.join(w.rec, 'claude-leftover.pid')), { what: () => `the CLI to start its leftover (memo said: ${stderr})` });
        const started = runProcesses(w.rec, undefined, [memoPid]);
        // The CLI, the process it left, and what contains them.
        expect(started.length).toBeGreaterThanOrEqual(2);
        expect(runProcesses(w.rec, 'leftover', [memoPid])).toHaveLength(1);
        child.kill('SIGKILL');
        await ended;
        await waitFor(() => runProcesses(w.rec, undefined, [memoPid]).length === 0, {
          what: () => `everything the turn started to end with Memo (live: ${runProcesses(w.rec, undefined, [memoPid]).join(', ')})`,
        });
      } finally {
        child.kill('SIGKILL');
        for (const pid of runProcesses(w.rec, undefined, [memoPid]))
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // gone
          }
      }
    },
    SPAWN_TIMEOUT_MS,
  );
});
