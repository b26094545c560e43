/**
 * What a person sees of the OS sandbox from the CLI: `memo doctor`, `memo settings sandbox`, memo
 * serve's start line, and `memo tools call run_command` refused without bubblewrap. MEMO_BWRAP
 * points the kernel at a missing bwrap (the lookup would otherwise find the system's).
 */
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { killWhenDone } from '../helpers/cleanup.js';
import { requireFreshBuild } from '../helpers/dist.js';
import { tempDir } from '../helpers/kernel-fixture.js';
import { waitFor } from '../helpers/wait.js';

const BIN = path.resolve('bin/memo');
const NO_BWRAP = { MEMO_BWRAP: path.join(tempDir('memo-nobwrap-'), 'bwrap') };

beforeAll(requireFreshBuild);

function workspace() {
  const base = tempDir('memo-sandbox-cli-');
  const root = path.join(base, 'root');
  fs.mkdirSync(root);
  return { root, data: path.join(root, 'data') };
}

function memo(w: { root: string; data: string }, args: string[], env: NodeJS.ProcessEnv = {}) {
  return spawnSync(process.execPath, [BIN, '--root', w.root, '--data', w.data, ...args], {
    encoding: 'utf8',
    cwd: w.root,
    env: { ...process.env, ...env },
  });
}

describe('the OS sandbox from the CLI', () => {
  it('memo doctor says commands run in the sandbox, with bwrap and the process limit, and exits 0', () => {
    const r = memo(workspace(), ['doctor']);
    expect(r.stdout).toMatch(/^OK {4}sandbox: commands run in the OS sandbox \(bubblewrap .*bwrap\).*processes a command/m);
    expect(r.stdout).toMatch(/^OK {4}packs: 10 active/m);
    expect(r.status).toBe(0);
  });

  it('without bubblewrap, memo doctor fails naming apt-get install bubblewrap, and run_command is refused without running', () => {
    const w = workspace();
    const doctor = memo(w, ['doctor'], NO_BWRAP);
    expect(doctor.status).toBe(1);
    expect(doctor.stdout).toMatch(/^FAIL {2}sandbox: commands are refused: .*apt-get install bubblewrap.*memo settings sandbox judged/m);
    const marker = path.join(w.root, 'ran');
    const call = memo(w, ['tools', 'call', 'run_command', '--args', JSON.stringify({ command: `touch ${marker}` }), '--json'], NO_BWRAP);
    expect(`${call.stdout}${call.stderr}`).toMatch(/COMMAND_BLOCKED[\s\S]*apt-get install bubblewrap/);
    expect(fs.existsSync(marker)).toBe(false);
  });

  it('memo settings sandbox judged is a person’s setting: doctor warns, and show prints it', () => {
    const w = workspace();
    const set = memo(w, ['settings', 'sandbox', 'judged']);
    expect(set.status).toBe(0);
    expect(set.stderr).toMatch(/warning: .*only the command judge/);
    expect(memo(w, ['settings']).stdout).toMatch(/^sandbox: judged/m);
    const doctor = memo(w, ['doctor'], NO_BWRAP);
    expect(doctor.stdout).toMatch(/^WARN {2}sandbox: commands run WITHOUT the OS sandbox, judged only/m);
    expect(doctor.status).toBe(0);
    expect(memo(w, ['settings', 'sandbox', 'maybe']).status).toBe(2);
    expect(memo(w, ['settings', 'sandbox', 'refuse']).status).toBe(0);
    expect(memo(w, ['settings']).stdout).toMatch(/^sandbox: refuse/m);
  });

  it('memo serve says at start, in one line, that commands are refused without bubblewrap', async () => {
    const w = workspace();
    const child = killWhenDone(
      spawn(process.execPath, [BIN, '--root', w.root, '--data', w.data, 'serve', '--port', '0'], {
        env: { ...process.env, ...NO_BWRAP },
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    await waitFor(() => /commands are refused: the OS sandbox cannot start/.test(err), { what: 'the sandbox line' });
    expect(err).toMatch(/apt-get install bubblewrap/);
    child.kill('SIGTERM');
  });
});
