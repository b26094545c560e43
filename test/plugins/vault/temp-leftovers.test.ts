/**
 * The temp files of vault writes (`<note>.md.<pid>.<hex>.tmp`, the kernel's atomic write): a write
 * killed between the temp file and the rename leaves one behind. It is never listed, searched or
 * indexed, and the vault removes it when it opens, once its writer is gone; a write under way (this
 * process's or another live one's) keeps its file.
 */
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { killWhenDone } from '../../helpers/cleanup.js';
import { requireFreshBuild } from '../../helpers/dist.js';
import { tempDir } from '../../helpers/kernel-fixture.js';
import { SPAWN_TIMEOUT_MS, waitFor } from '../../helpers/wait.js';
import { error, hits, PLUGINS, value, vaultKernel, waitForHits, type VaultFixture } from './helpers.js';

/** A pid no process has: a child that has exited (and been reaped). */
function deadPid(): number {
  const pid = spawnSync(process.execPath, ['-e', '']).pid;
  if (!pid) throw new Error('could not start a process');
  return pid;
}

/** A note body of about `bytes`, every line naming `word`. */
function bigBody(word: string, bytes: number): string {
  const line = `${word} ${'x'.repeat(70)}\n`;
  return line.repeat(Math.ceil(bytes / line.length));
}

async function listed(fx: VaultFixture, folder = ''): Promise<string[]> {
  return (value(await fx.call('vault_list_folder', { path: folder })).entries as Array<{ name: string }>).map((e) => e.name);
}

/** The same root and data folder, a new kernel with the vault pack (watch off): the next start. */
async function restarted(fx: VaultFixture) {
  const again = await fx.restart();
  await again.kernel.loadPacks([{ dir: PLUGINS, source: 'builtin', only: ['vault'] }]);
  again.kernel.packs.setConfig('vault', { watch: false });
  const call = async (tool: string, args: Record<string, unknown>) => value(await again.kernel.invoke({ tool, args, caller: { kind: 'agent' } }));
  return { again, call };
}

describe('vault temp files of interrupted writes', () => {
  it('sweeps a dead writer’s leftover when the vault opens, and keeps a live writer’s; neither is listed or searched', async () => {
    const fx = await vaultKernel({ files: { 'Small.md': 'small note\n' } });
    const started = Date.now() - process.uptime() * 1000;
    const dead = fx.put(`Big.md.${deadPid()}.0badc0de.tmp`, bigBody('pangolin', 750 * 1024));
    const deadInFolder = fx.put(`Projects/Plan.md.${deadPid()}.0123abcd.tmp`, bigBody('pangolin', 1024));
    // Another live process (the one that started this test runner) writing: its write may finish yet.
    const otherLive = fx.put(`Draft.md.${process.ppid}.1234abcd.tmp`, bigBody('pangolin', 1024));
    // This process, writing now.
    const mine = fx.put(`Mine.md.${process.pid}.abcdef01.tmp`, bigBody('pangolin', 1024));
    // This process's pid, but from before it started: a container's kernel gets the same pid on every start.
    const samePidBefore = fx.put(`Old.md.${process.pid}.abcdef02.tmp`, bigBody('pangolin', 1024));
    const hourBefore = new Date(started - 3600_000);
    fs.utimesSync(samePidBefore, hourBefore, hourBefore);

    expect(await listed(fx)).toEqual(['Projects', 'Small.md']);
    expect(await listed(fx, 'Projects')).toEqual([]);
    expect(await hits(fx, 'pangolin')).toEqual([]);
    expect(value(await fx.call('vault_read_note', { note: 'Small' })).path).toBe('Small.md');
    expect(error(await fx.call('vault_read_note', { note: path.basename(dead) })).code).toBe('NOT_FOUND');

    expect([dead, deadInFolder, samePidBefore].filter((f) => fs.existsSync(f))).toEqual([]);
    expect([otherLive, mine].filter((f) => fs.existsSync(f))).toEqual([otherLive, mine]);
    await fx.close();
  });

  it('keeps files and folders that only look like temp files, and lists them as what they are', async () => {
    const look = ['notes.tmp', 'Big.md.tmp', 'Big.md.12.ABCDEF01.tmp', 'Big.md.x12.abcdef01.tmp', 'Big.md.0.abcdef01.tmp', 'Big.md.12.abcdef0.tmp'];
    const fx = await vaultKernel({ files: Object.fromEntries(look.map((n) => [n, 'kept\n'])) });
    // A folder with a temp file's name is a folder: walked, listed, never removed.
    const dead = deadPid();
    fx.put(`Archive.${dead}.abcdef01.tmp/Inside.md`, 'inside note\n');

    expect(await listed(fx)).toEqual([`Archive.${dead}.abcdef01.tmp`, ...[...look].sort((a, b) => a.localeCompare(b))]);
    expect(await hits(fx, 'inside')).toEqual([`Archive.${dead}.abcdef01.tmp/Inside.md`]);
    for (const n of look) expect(fs.existsSync(path.join(fx.vault, n))).toBe(true);
    await fx.close();
  });

  it('does not list a leftover that appears while the vault is open, and the next start sweeps it', async () => {
    const fx = await vaultKernel({ watch: true, files: { 'Small.md': 'small note\n' } });
    expect(await listed(fx)).toEqual(['Small.md']);
    const leftover = fx.put(`Big.md.${deadPid()}.0badc0de.tmp`, bigBody('pangolin', 186 * 1024));
    // A note written after it: once the watcher has applied that, it has seen the leftover too.
    fx.put('After.md', 'zebra\n');
    await waitForHits(fx, 'zebra', ['After.md']);
    expect(await listed(fx)).toEqual(['After.md', 'Small.md']);
    expect(await hits(fx, 'pangolin')).toEqual([]);
    expect(fs.existsSync(leftover)).toBe(true);

    const { again, call } = await restarted(fx);
    expect((await call('vault_list_folder', {})).entries.map((e: { name: string }) => e.name)).toEqual(['After.md', 'Small.md']);
    expect(fs.existsSync(leftover)).toBe(false);
    await again.close();
  });
});

/**
 * A host writing one large note through the vault's own tool (vault_create_note: the kernel's atomic
 * write), from the compiled kernel in a process of its own. The temp file's writeFile is held halfway:
 * half the note is in the temp file when the marker file appears, and the process blocks until killed.
 */
const WRITER = `
import { open } from 'node:fs/promises';
import { writeFileSync } from 'node:fs';
import { createKernel, FixedAnswerPrompter } from ${JSON.stringify(pathToFileURL(path.resolve('dist/kernel/index.js')).href)};
const [root, data, plugins, marker, size] = process.argv.slice(2);
const probe = await open(process.execPath, 'r');
const proto = Object.getPrototypeOf(probe);
await probe.close();
const writeFile = proto.writeFile;
proto.writeFile = async function (content, options) {
  const buf = Buffer.from(content);
  if (buf.length < Number(size)) return writeFile.call(this, content, options);
  await this.write(buf.subarray(0, buf.length >> 1));
  await this.sync();
  writeFileSync(marker, 'halfway');
  for (;;) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
};
const kernel = createKernel({ root, dataDir: data, prompter: new FixedAnswerPrompter('allow-once'), rateLimits: { maxCalls: 0, duplicateCooldownMs: 0 } });
await kernel.loadPacks([{ dir: plugins, source: 'builtin', only: ['vault'] }]);
kernel.packs.setConfig('vault', { watch: false });
const body = ('pangolin ' + 'x'.repeat(70) + '\\n').repeat(Math.ceil(Number(size) / 80));
const r = await kernel.invoke({ tool: 'vault_create_note', args: { title: 'Big', content: body }, caller: { kind: 'agent' } });
process.stderr.write('the write was not held: ' + JSON.stringify(r));
process.exit(3);
`;

describe('vault note write killed by SIGKILL', () => {
  beforeAll(() => requireFreshBuild());

  it(
    'leaves nothing listed or searched, and the next start removes the half-written temp file',
    async () => {
      const fx = await vaultKernel({ watch: true, files: { 'Small.md': 'small note\n' } });
      expect(await listed(fx)).toEqual(['Small.md']);
      const work = tempDir('memo-vault-kill-');
      const script = path.join(work, 'writer.mjs');
      const marker = path.join(work, 'halfway');
      fs.writeFileSync(script, WRITER);
      // Its own data folder (one kernel per data folder), the same vault.
      const child = killWhenDone(
        spawn(process.execPath, [script, fx.root, path.join(work, 'data'), path.resolve('dist/plugins'), marker, String(750 * 1024)], {
          stdio: ['ignore', 'ignore', 'pipe'],
        }),
      );
      let stderr = '';
      child.stderr.on('data', (d) => (stderr += d));
      const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
      let exitCode: number | null | undefined;
      void exited.then((code) => (exitCode = code));
      await waitFor(() => fs.existsSync(marker) || exitCode !== undefined, { what: 'the writer to be halfway through the note' });
      if (exitCode !== undefined) throw new Error(`the writer ended (${exitCode}) before it was halfway: ${stderr}`);
      child.kill('SIGKILL');
      await exited;

      const left = fs.readdirSync(fx.vault).filter((n) => n.endsWith('.tmp'));
      expect(left).toEqual([expect.stringMatching(new RegExp(`^Big\\.md\\.${child.pid}\\.[0-9a-f]{8}\\.tmp$`))]);
      expect(fs.statSync(path.join(fx.vault, left[0]!)).size).toBeGreaterThan(300 * 1024);
      expect(fs.existsSync(path.join(fx.vault, 'Big.md'))).toBe(false);

      // The vault that was open meanwhile: once the watcher has applied a later change, nothing of it.
      fx.put('After.md', 'zebra\n');
      await waitForHits(fx, 'zebra', ['After.md']);
      expect(await listed(fx)).toEqual(['After.md', 'Small.md']);
      expect(await hits(fx, 'pangolin')).toEqual([]);

      // The next start: swept, and still nothing listed or found.
      const { again, call } = await restarted(fx);
      expect((await call('vault_list_folder', {})).entries.map((e: { name: string }) => e.name)).toEqual(['After.md', 'Small.md']);
      expect((await call('vault_search_notes', { query: 'pangolin' })).results).toEqual([]);
      expect(fs.readdirSync(fx.vault).filter((n) => n.endsWith('.tmp'))).toEqual([]);
      await again.close();
    },
    SPAWN_TIMEOUT_MS,
  );
});
