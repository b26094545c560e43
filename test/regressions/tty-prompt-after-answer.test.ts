/**
 * Regression: answering `y` to a `memo tools call` prompt in a terminal printed
 * "(prompt withdrawn: denied)" right after, though the call then ran and succeeded. The gate aborts
 * the question's signal once an answer arrives (to withdraw it from other faces), and the terminal
 * prompter's abort listener outlived its own answer. Run here through a real pseudo-terminal, so the
 * CLI picks its terminal prompter as it does for a person.
 */
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { killWhenDone } from '../helpers/cleanup.js';
import { requireFreshBuild } from '../helpers/dist.js';
import { tempDir } from '../helpers/kernel-fixture.js';
import { waitFor } from '../helpers/wait.js';

const BIN = path.resolve('bin/memo');
const PACKS = path.resolve('test/fixtures/packs');

const quote = (arg: string) => `'${arg.replace(/'/g, `'\\''`)}'`;

/** How to run `argv` on a pseudo-terminal whose input is our pipe: util-linux `script`, or python3's pty module. */
function onPty(argv: string[]): [string, string[]] {
  if (spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0) return ['script', ['-qfec', argv.map(quote).join(' '), '/dev/null']];
  const py = 'import os, pty, sys; sys.exit(os.waitstatus_to_exitcode(pty.spawn(sys.argv[1:])))';
  return ['python3', ['-c', py, ...argv]];
}

beforeAll(requireFreshBuild);

describe('the terminal prompt of memo tools call', () => {
  it('prints nothing after the answer y, and the call runs', async () => {
    const base = tempDir('memo-tty-');
    const root = path.join(base, 'root');
    fs.mkdirSync(root);
    const data = path.join(base, 'data');
    const argv = [process.execPath, BIN, '--packs', PACKS, '--root', root, '--data', data, 'tools', 'call', 'note_write', '--args', '{"line":"x"}'];
    const [cmd, args] = onPty(argv);
    const child = killWhenDone(spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'] }));
    let shown = '';
    child.stdout.on('data', (d) => (shown += d));
    child.stderr.on('data', (d) => (shown += d));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

    await waitFor(() => shown.includes('answer (') || child.exitCode !== null, { what: () => `the prompt; the terminal showed: ${shown}` });
    expect(shown).toContain('Permission needed ─ note_write (echo-tools)');
    child.stdin.write('y\n');
    const code = await exited;

    expect(shown).not.toMatch(/withdrawn|elsewhere|denied/);
    expect(shown).toContain('"written": 2');
    expect(code).toBe(0);
    expect(fs.readFileSync(path.join(root, 'notes.txt'), 'utf8')).toBe('x\n');
  });
});
