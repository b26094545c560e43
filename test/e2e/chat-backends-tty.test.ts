/**
 * The interactive `memo chat --backend claude` on a real pseudo-terminal: the access said up front,
 * the gate's question answered in the chat, the answer streamed as it arrives, and the in-chat
 * switches (/computer, /backend).
 */
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { killWhenDone } from '../helpers/cleanup.js';
import { requireFreshBuild } from '../helpers/dist.js';
import { tempDir } from '../helpers/kernel-fixture.js';
import { waitFor } from '../helpers/wait.js';
import { recordedRuns, writeFakeClis } from '../kernel/agent/fake-clis.js';

const BIN = path.resolve('bin/memo');
const PACKS = path.resolve('test/fixtures/packs');
const quote = (arg: string) => `'${arg.replace(/'/g, `'\\''`)}'`;

function onPty(argv: string[]): [string, string[]] {
  if (spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0) return ['script', ['-qfec', argv.map(quote).join(' '), '/dev/null']];
  const py = 'import os, pty, sys; sys.exit(os.waitstatus_to_exitcode(pty.spawn(sys.argv[1:])))';
  return ['python3', ['-c', py, ...argv]];
}

beforeAll(requireFreshBuild);

describe('memo chat --backend in a terminal', () => {
  it('says the access, asks at the gate, streams the answer, and switches access and backend in the chat', async () => {
    const base = tempDir('memo-chat-tty-');
    const root = path.join(base, 'root');
    const bin = path.join(base, 'bin');
    const rec = path.join(base, 'rec');
    const home = path.join(base, 'home');
    for (const d of [root, rec, home]) fs.mkdirSync(d);
    writeFakeClis(bin);
    const argv = [process.execPath, BIN, '--packs', PACKS, '--root', root, '--data', path.join(base, 'data'), 'chat', '--backend', 'claude'];
    const [cmd, args] = onPty(argv);
    const child = killWhenDone(
      spawn(cmd, args, {
        stdio: ['pipe', 'pipe', 'pipe'],
        env: {
          ...process.env,
          PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}`,
          HOME: home,
          FAKE_CLI_RECORD: rec,
          MEMO_CLI_WRITABLE: rec,
          SHELL: '/bin/sh',
        },
      }),
    );
    let shown = '';
    child.stdout.on('data', (d) => (shown += d));
    child.stderr.on('data', (d) => (shown += d));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const prompts = () => shown.split('you> ').length - 1;
    const next = async (n: number) => waitFor(() => prompts() >= n || child.exitCode !== null, { what: () => `prompt #${n}; the terminal showed: ${shown}` });

    await next(1);
    expect(shown).toContain('Memo chat · Claude CLI');
    expect(shown).toContain("Vault only: the CLI's own file, shell and web tools are off");
    child.stdin.write('write from the terminal\n');
    await waitFor(() => shown.includes('[y] allow once') || child.exitCode !== null, { what: () => `the gate's question; the terminal showed: ${shown}` });
    expect(shown).toContain('note_write wants to run');
    child.stdin.write('y\n');
    await next(2);
    expect(shown).toContain('Claude CLI 2.1.3 · Vault only');
    // Streamed into the run box as it arrived, not printed a second time.
    expect(shown).toMatch(/│ Done: .*\r?\n└─ 1 iteration\(s\), final/);
    expect(shown.match(/Done: /g)).toHaveLength(1);
    expect(fs.readFileSync(path.join(root, 'notes.txt'), 'utf8')).toContain('from the terminal');

    child.stdin.write('/computer\n');
    await next(3);
    expect(shown).toContain("(Computer access: the CLI's own file, shell and web tools are allowed this turn");
    child.stdin.write('hello\n');
    await next(4);
    child.stdin.write('/backend\n');
    await next(5);
    expect(shown).toMatch(/claude +Claude CLI {2}2\.1\.3/);
    child.stdin.write('/exit\n');
    expect(await exited).toBe(0);

    const runs = recordedRuns(rec, 'claude').filter((r) => r.endpoint !== null);
    expect(runs.map((r) => r.argv.includes('--tools'))).toEqual([true, false]);
  });

  it('switches from a provider to a CLI backend and back in one conversation: the CLI gets the earlier exchange, and the conversation ends on the provider again', async () => {
    const base = tempDir('memo-chat-tty-');
    const root = path.join(base, 'root');
    const bin = path.join(base, 'bin');
    const rec = path.join(base, 'rec');
    const home = path.join(base, 'home');
    const data = path.join(base, 'data');
    for (const d of [root, rec, home]) fs.mkdirSync(d);
    writeFakeClis(bin);
    const env = {
      ...process.env,
      PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}`,
      HOME: home,
      FAKE_CLI_RECORD: rec,
      MEMO_CLI_WRITABLE: rec,
      SHELL: '/bin/sh',
    };
    const memo = [process.execPath, BIN, '--packs', PACKS, '--root', root, '--data', data];
    expect(
      spawnSync(memo[0]!, [...memo.slice(1), 'provider', 'add', 'test', '--kind', 'scripted', '--model', 'rules-1'], { env, encoding: 'utf8' }).status,
    ).toBe(0);
    const [cmd, args] = onPty([...memo, 'chat', '--effort', 'low']);
    const child = killWhenDone(spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'], env }));
    let shown = '';
    child.stdout.on('data', (d) => (shown += d));
    child.stderr.on('data', (d) => (shown += d));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const prompts = () => shown.split('you> ').length - 1;
    const send = async (line: string) => {
      const n = prompts();
      child.stdin.write(`${line}\n`);
      await waitFor(() => prompts() > n || child.exitCode !== null, { what: () => `the prompt after ${line}; the terminal showed: ${shown}` });
    };
    await waitFor(() => prompts() >= 1, { what: () => `the first prompt; the terminal showed: ${shown}` });
    await send('first from the provider');
    await send('/backend codex');
    expect(shown).toContain("(Codex CLI 0.58.0; Vault only: the CLI's own file, shell and web tools are off");
    await send('second from codex');
    await send('/effort high');
    expect(shown).toContain('(effort: high)');
    await send('/backend off');
    expect(shown).toContain('(back to test/rules-1)');
    await send('third from the provider');
    child.stdin.write('/exit\n');
    expect(await exited).toBe(0);

    // Codex got the earlier exchange with its message, and its turn's effort.
    const [codexRun] = recordedRuns(rec, 'codex').filter((r) => r.endpoint !== null);
    expect(codexRun.prompt).toContain('[User]\nfirst from the provider');
    expect(codexRun.argv).toContain('model_reasoning_effort="low"');
    const listed = spawnSync(memo[0]!, [...memo.slice(1), 'chat', '--history', '--json'], { env, encoding: 'utf8' });
    const [conversation] = JSON.parse(listed.stdout).conversations;
    expect(conversation.provider).toBe('test');
  });
});
