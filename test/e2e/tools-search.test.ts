/**
 * `memo tools search` through the compiled CLI, with the built-in packs: the ranking the agent's tool
 * search would use, narrowed by an access mode, as a table or JSON; bad options are usage errors.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { killWhenDone } from '../helpers/cleanup.js';
import { requireFreshBuild } from '../helpers/dist.js';
import { tempDir } from '../helpers/kernel-fixture.js';

const BIN = path.resolve('bin/memo');

function memo(w: { root: string; data: string }, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const c = killWhenDone(spawn(process.execPath, [BIN, '--root', w.root, '--data', w.data, ...args], { stdio: ['ignore', 'pipe', 'pipe'] }));
    let stdout = '';
    let stderr = '';
    c.stdout.on('data', (d) => (stdout += d));
    c.stderr.on('data', (d) => (stderr += d));
    c.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('memo tools search', () => {
  beforeAll(requireFreshBuild);
  const w = (() => {
    const base = tempDir('memo-tools-search-');
    const root = path.join(base, 'root');
    fs.mkdirSync(root);
    return { root, data: path.join(base, 'data') };
  })();

  it('prints the ranked tools with pack and score as JSON, best first, within --limit', async () => {
    const r = await memo(w, ['tools', 'search', 'what is on my calendar tomorrow', '--limit', '3', '--json']);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    const hits = JSON.parse(r.stdout) as Array<{ name: string; pack: string; score: number }>;
    expect(hits).toHaveLength(3);
    expect(hits[0]).toMatchObject({ name: 'get_calendar_events', pack: 'calendar' });
    expect(hits.map((h) => h.score)).toEqual([...hits.map((h) => h.score)].sort((a, b) => b - a));
  });

  it('ranks only the tools an access mode offers with --mode, and prints a table without --json', async () => {
    const vault = await memo(w, ['tools', 'search', 'run a shell command', '--mode', 'vault', '--json']);
    expect(vault.code).toBe(0);
    const names = (JSON.parse(vault.stdout) as Array<{ name: string }>).map((h) => h.name);
    expect(names).not.toContain('run_command');
    const table = await memo(w, ['tools', 'search', 'run a shell command']);
    expect(table.code).toBe(0);
    expect(table.stdout.split('\n')[0]).toMatch(/^TOOL\s+PACK\s+SCORE$/);
    expect(table.stdout.split('\n')[1]).toMatch(/^run_command\s+shell\s+\d+\.\d\d$/);
  });

  it('refuses a bad --limit or --mode with exit 2, and says so when nothing fits', async () => {
    expect(await memo(w, ['tools', 'search', 'x', '--limit', '0'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--limit must be a whole number from 1 to 100'),
    });
    expect(await memo(w, ['tools', 'search', 'x', '--mode', 'desktop'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--mode must be vault, computer or web'),
    });
    expect(await memo(w, ['tools', 'search', 'delete a note', '--mode', 'web'])).toMatchObject({
      code: 0,
      stdout: 'No tool fits "delete a note" in web mode; try other words.\n',
    });
  });
});
