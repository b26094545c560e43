/**
 * Reading the admin lines (a person's changes, written to the audit trail before they are made) as
 * whole processes (bin/memo, dist/): `memo audit tail --admin` shows only them, and the plain tail
 * shows each as one readable row beside the calls.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { killWhenDone } from '../helpers/cleanup.js';
import { requireFreshBuild } from '../helpers/dist.js';
import { BIN, serveWorkspace, type ServeWorkspace as Workspace } from '../mcp/mcp-helpers.js';

beforeAll(requireFreshBuild);

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** bin/memo on the workspace's folders. */
function memo(w: Workspace, args: string[]): Promise<Run> {
  const child = killWhenDone(
    spawn(process.execPath, [BIN, '--packs', w.packs, '--root', w.root, '--data', w.data, ...args], { stdio: ['ignore', 'pipe', 'pipe'] }),
  );
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

function trail(w: Workspace): any[] {
  return fs
    .readFileSync(path.join(w.data, 'agent-audit.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

describe('memo audit tail --admin', () => {
  it('lists the admin lines memo plugins disable wrote (when, by, action, target), leaving out the calls', async () => {
    const w = serveWorkspace('memo-audit-admin-');
    const call = await memo(w, ['tools', 'call', 'echo', '--args', '{"text":"hi"}', '--json']);
    expect(call.code).toBe(0);
    expect((await memo(w, ['plugins', 'disable', 'echo-tools'])).code).toBe(0);
    expect((await memo(w, ['plugins', 'enable', 'echo-tools'])).code).toBe(0);
    const written = trail(w).filter((e) => e.event === 'admin');
    expect(written.map((e) => [e.action, e.target, e.by])).toEqual([
      ['pack.disable', 'echo-tools', 'cli'],
      ['pack.enable', 'echo-tools', 'cli'],
    ]);

    const json = await memo(w, ['audit', 'tail', '--admin', '--json']);
    expect(json.code).toBe(0);
    expect(
      json.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l)),
    ).toEqual(written);

    const text = await memo(w, ['audit', 'tail', '--admin']);
    expect(text.code).toBe(0);
    const rows = text.stdout.trimEnd().split('\n');
    expect(rows).toHaveLength(3);
    expect(rows[0]).toMatch(/^TIME +BY +ACTION +TARGET +CHANGE$/);
    expect(rows[1]).toMatch(new RegExp(`^${written[0].ts} +cli +pack\\.disable +echo-tools +-$`));
    expect(rows[2]).toMatch(new RegExp(`^${written[1].ts} +cli +pack\\.enable +echo-tools +-$`));
    expect(text.stdout).not.toContain('echo ');

    const newest = await memo(w, ['audit', 'tail', '--admin', '-n', '1', '--json']);
    expect(JSON.parse(newest.stdout)).toMatchObject({ action: 'pack.enable' });
  });

  it('shows admin lines in the plain tail as one readable row each, beside the calls', async () => {
    const w = serveWorkspace('memo-audit-plain-');
    expect((await memo(w, ['tools', 'call', 'echo', '--args', '{"text":"hi"}'])).code).toBe(0);
    expect((await memo(w, ['plugins', 'disable', 'echo-tools'])).code).toBe(0);
    const r = await memo(w, ['audit', 'tail']);
    expect(r.code).toBe(0);
    const rows = r.stdout.trimEnd().split('\n');
    expect(rows[0]).toMatch(/^TIME +CALLER +TOOL +DECISION +OUTCOME +MS +SUMMARY$/);
    expect(rows.some((l) => /^\S+ +cli +echo +\S+ +ok /.test(l))).toBe(true);
    expect(rows.at(-1)).toMatch(/^\S+ +admin +pack\.disable +- +- +- +echo-tools by cli$/);
  });

  it('refuses --admin with --tool (usage, exit 2)', async () => {
    const w = serveWorkspace('memo-audit-both-');
    const r = await memo(w, ['audit', 'tail', '--admin', '--tool', 'echo']);
    expect([r.code, r.stderr]).toEqual([2, "memo: --tool picks a tool's calls and --admin a person's changes: give one of them\n"]);
  });
});
