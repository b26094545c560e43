import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ToolResult } from '../../../kernel/tools/contract.js';
import { flush, makeKernel, tempDir, type Fixture } from '../../helpers/kernel-fixture.js';
import { shownPreview } from '../../helpers/shown-preview.js';
import { waitFor } from '../../helpers/wait.js';
import { processesWithArg } from '../../helpers/processes.js';
import { requireFreshBuild } from '../../helpers/dist.js';

const value = (r: ToolResult): any => (r.ok ? r.value : undefined);
const code = (r: ToolResult) => (r.ok ? 'ok' : r.error.code);
const withArg = processesWithArg;

/** A real kernel with the built-in packs loaded; `run` calls run_command through its pipeline. */
async function shellKernel(): Promise<Fixture> {
  const fx = makeKernel({ packs: [] });
  await fx.kernel.loadPacks([{ dir: path.resolve('plugins'), source: 'builtin' }]);
  return fx;
}
const runIn = (fx: Fixture, command: string, cwd?: string) =>
  fx.kernel.invoke({ tool: 'run_command', args: { command, ...(cwd ? { cwd } : {}) }, caller: { kind: 'agent' } });

describe('the shell pack', () => {
  let fx: Fixture;
  const run = (command: string, cwd?: string) => runIn(fx, command, cwd);

  beforeEach(async () => {
    fx = await shellKernel();
    fx.prompter.setFallback('allow-once');
  });
  afterEach(async () => fx.close());

  it('runs a command in the root and returns exit code, stdout and stderr', async () => {
    const r = await run('echo out; echo err >&2; pwd; exit 3');
    expect(value(r)).toMatchObject({
      exitCode: 3,
      stdout: `out\n${fx.kernel.config.root}\n`,
      stderr: 'err\n',
      truncated: false,
      summary: 'exit 3, 2 lines, 1 line on stderr',
    });
  });

  it('runs in a cwd inside the root, and refuses one outside it or missing', async () => {
    fs.mkdirSync(path.join(fx.root, 'sub'));
    expect(value(await run('pwd', 'sub')).stdout.trim()).toBe(path.join(fx.kernel.config.root, 'sub'));
    expect(code(await run('pwd', '/tmp'))).toBe('PATH_OUTSIDE_ROOT');
    expect(code(await run('pwd', 'nope'))).toBe('NOT_FOUND');
  });

  it('refuses a blacklisted command even when run_command is allowed forever, and runs nothing', async () => {
    fx.kernel.permissions.set({ tool: 'run_command', decision: 'allow', plugin: 'shell', scope: 'forever' }, new Date());
    const marker = path.join(fx.root, 'ran');
    const r = await run(`touch ${marker}; sudo -n true`);
    expect(r.ok ? null : r.error).toMatchObject({ code: 'COMMAND_BLOCKED', message: expect.stringContaining('rule sudo') });
    expect(fs.existsSync(marker)).toBe(false);
    expect(fx.kernel.audit.tail().at(-1)).toMatchObject({ tool: 'run_command', error: { code: 'COMMAND_BLOCKED' } });
  });

  it('asks with the folder as a fact and the command quoted after it, each of its lines marked as one', async () => {
    await run('ls -la');
    expect(fx.prompter.asked.at(-1)!.preview).toEqual({
      kind: 'command',
      text: '',
      facts: [{ label: 'runs in', value: fx.kernel.config.root }],
      quoted: [{ label: 'command', text: 'ls -la' }],
    });
    await run('ls\n# (in /home)');
    expect(shownPreview(fx.prompter.asked.at(-1)).split('\n').slice(-2)).toEqual([
      `runs in: ${fx.kernel.config.root}`,
      'command, written by the model: "ls⏎# (in /home)"',
    ]);
  });

  it('kills the command and everything it started, setsid children too, when the 60 s timeout passes', async () => {
    const t = `4${Date.now() % 100000}.${process.pid}`; // a unique sleep duration, found in /proc
    const ready = path.join(fx.root, 'ready');
    const pending = run(`setsid -f sleep ${t}; sleep ${t} & touch ${ready}; sleep ${t}`);
    await waitFor(() => fs.existsSync(ready) && withArg(t).length >= 3, { what: 'the command and its two children to start' });
    await flush();
    fx.clock.advance(60_000);
    expect(code(await pending)).toBe('TIMEOUT');
    await waitFor(() => withArg(t).length === 0, { what: () => `no process left with ${t} (left: ${withArg(t).join(', ')})` });
  });

  it('cuts long output in the middle and says so', async () => {
    const r = value(await run('head -c 300000 /dev/zero | tr "\\0" a; echo END'));
    expect(r.truncated).toBe(true);
    expect(r.stdout).toContain('output cut');
    expect(r.stdout.endsWith('END\n')).toBe(true);
    expect(r.stdout.length).toBeLessThan(70 * 1024);
  });

  it('masks secret environment values in command output', async () => {
    process.env.MEMO_TEST_API_KEY = 'super-secret-value-123';
    try {
      const r = value(await run('printenv MEMO_TEST_API_KEY'));
      expect(r.stdout).toBe('[masked]\n');
    } finally {
      delete process.env.MEMO_TEST_API_KEY;
    }
  });

  it('lists environment variables with sensitive values masked', async () => {
    process.env.MEMO_TEST_TOKEN = 'tok-abcdefgh';
    process.env.MEMO_TEST_PLAIN = 'visible';
    try {
      const r = await fx.kernel.invoke({ tool: 'read_env', args: { prefix: 'MEMO_TEST_' }, caller: { kind: 'agent' } });
      expect(value(r).variables).toEqual({ MEMO_TEST_PLAIN: 'visible', MEMO_TEST_TOKEN: '[masked]' });
      expect(value(r).masked).toBe(1);
    } finally {
      delete process.env.MEMO_TEST_TOKEN;
      delete process.env.MEMO_TEST_PLAIN;
    }
  });
});

describe('the judge in front of run_command', () => {
  let fx: Fixture;
  const run = (command: string, cwd?: string) => runIn(fx, command, cwd);

  beforeEach(async () => {
    fx = await shellKernel();
  });
  afterEach(async () => fx.close());

  it('refuses a blocked command before anyone is asked, even when allowed forever', async () => {
    fx.kernel.permissions.set({ tool: 'run_command', decision: 'allow', plugin: 'shell', scope: 'forever' }, new Date());
    const r = await run('sudo id');
    expect(!r.ok && r.error).toMatchObject({ code: 'COMMAND_BLOCKED', message: expect.stringContaining('rule sudo') });
    expect(fx.prompter.asked).toHaveLength(0);
  });

  it('asks about inline interpreter code every time, whatever is stored, and shows the whole command', async () => {
    fx.kernel.permissions.set({ tool: 'run_command', decision: 'allow', plugin: 'shell', scope: 'forever' }, new Date());
    expect(value(await run('echo plain'))).toMatchObject({ exitCode: 0 });
    expect(fx.prompter.asked).toHaveLength(0);
    const command = `python3 -c 'print(6 * 7)'`;
    fx.prompter.answer('allow-forever', 'deny-once');
    expect(value(await run(command)).stdout).toBe('42\n');
    expect(fx.prompter.asked[0]).toMatchObject({
      standingApprovalAllowed: false,
      concern: { verdict: 'ask', rule: expect.any(String) },
      preview: { kind: 'command', quoted: [{ label: 'command', text: command }] },
    });
    expect(code(await run(`${command} `))).toBe('PERMISSION_DENIED');
    expect(fx.prompter.asked).toHaveLength(2);
  });

  it('puts the network a command would get before the person, as a fact of the request, in words every face shows', async () => {
    fx.prompter.answer('deny-once');
    expect(code(await run('curl -s https://example.com/'))).toBe('PERMISSION_DENIED');
    const asked = fx.prompter.asked.at(-1)!;
    expect(asked.concern).toMatchObject({ verdict: 'ask', network: { domains: 'any' } });
    const { approvalDisplay, displayLines } = await import('../../../kernel/control/preview-format.js');
    expect(displayLines(approvalDisplay(asked), { bodyLines: 12 }).join('\n')).toMatch(/network: if allowed, to any public address/);
  });

  it('denies a command the judge cannot vouch for where nobody can be asked', async () => {
    const { createKernel } = await import('../../../kernel/kernel.js');
    const k = createKernel({ root: fx.root, dataDir: fx.dataDir, packs: [], rateLimits: { maxCalls: 0, duplicateCooldownMs: 0 } });
    try {
      await k.loadPacks([{ dir: path.resolve('plugins'), source: 'builtin' }]);
      k.permissions.set({ tool: 'run_command', decision: 'allow', plugin: 'shell', scope: 'forever' }, new Date());
      const r = await k.invoke({ tool: 'run_command', args: { command: `node -e 'require("fs").writeFileSync("made","x")'` }, caller: { kind: 'host' } });
      expect(code(r)).toBe('PERMISSION_DENIED');
      expect(fs.existsSync(path.join(fx.root, 'made'))).toBe(false);
    } finally {
      await k.shutdown();
    }
  });

  it('refuses commands whose words point into the data folder, from the root or after cd', async () => {
    // A kernel whose data folder is inside its root, as in the default layout.
    const root = tempDir('memo-judge-root-');
    const k = makeKernel({ packs: [], root, dataDir: path.join(root, 'data') });
    try {
      await k.kernel.loadPacks([{ dir: path.resolve('plugins'), source: 'builtin' }]);
      k.prompter.setFallback('allow-once');
      for (const command of [
        'cat data/permissions.json',
        'cd data && cat permissions.json',
        'echo x > data/permissions.json',
        'cp /etc/hostname data/packs/x',
        `cat ${path.join(root, 'data', 'agent-audit.jsonl')}`,
      ]) {
        const r = await k.kernel.invoke({ tool: 'run_command', args: { command }, caller: { kind: 'agent' } });
        expect([command, !r.ok && r.error.code]).toEqual([command, 'COMMAND_BLOCKED']);
        expect(!r.ok && r.error.message).toContain('kernel-state');
      }
      expect(k.prompter.asked).toHaveLength(0);
      expect(
        value(await k.kernel.invoke({ tool: 'run_command', args: { command: 'echo fine > notes.txt && cat notes.txt' }, caller: { kind: 'agent' } })).stdout,
      ).toBe('fine\n');
    } finally {
      await k.close();
    }
  });
});

describe('memo shell check', () => {
  beforeAll(requireFreshBuild);
  const check = (cmd: string) =>
    spawnSync(process.execPath, [path.resolve('bin/memo'), '--data', path.join(tempDir(), 'd'), 'shell', 'check', cmd, '--json'], { encoding: 'utf8' });

  it('prints the verdict, rule and reason of a blocked command and runs nothing', () => {
    const marker = path.join(tempDir(), 'made');
    const r = check(`touch ${marker} && rm --recursive --force /`);
    expect(r.status).toBe(1);
    expect(JSON.parse(r.stdout)).toEqual({ verdict: 'blocked', rule: 'rm-root', reason: expect.any(String) });
    expect(fs.existsSync(marker)).toBe(false);
  });

  it('prints the ask verdict, with exit 3, for inline interpreter code', () => {
    const r = check(`python3 -c 'import os; os.system("id")'`);
    expect(r.status).toBe(3);
    expect(JSON.parse(r.stdout)).toEqual({ verdict: 'ask', rule: expect.any(String), reason: expect.stringContaining('python3') });
  });

  it('refuses a command pointing into the data folder it is given', () => {
    const base = tempDir();
    const r = spawnSync(
      process.execPath,
      [path.resolve('bin/memo'), '--root', base, '--data', path.join(base, 'data'), 'shell', 'check', 'cat data/providers.json', '--json'],
      { encoding: 'utf8' },
    );
    expect(r.status).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ verdict: 'blocked', rule: 'kernel-state' });
  });

  it('judges as run_command would here: a recursive command over the root is everyday work in the OS sandbox, refused with --no-sandbox', () => {
    const base = tempDir();
    const run = (...extra: string[]) =>
      spawnSync(
        process.execPath,
        [path.resolve('bin/memo'), '--root', base, '--data', path.join(base, 'data'), 'shell', 'check', ...extra, 'find . -name "*.pyc" -delete', '--json'],
        {
          encoding: 'utf8',
        },
      );
    expect([run().status, JSON.parse(run().stdout).verdict]).toEqual([0, 'allowed']);
    expect(JSON.parse(run('--no-sandbox').stdout)).toMatchObject({ verdict: 'blocked', rule: 'kernel-state' });
  });

  it('says allowed for a command that uses the network, and names the programs', () => {
    const r = check('npm ci && curl -sS https://example.org');
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ verdict: 'allowed', network: { programs: ['npm ci', 'curl'] } });
  });

  it('allows a harmless command that merely mentions a dangerous one', () => {
    const r = check('git commit -m "fix halt"');
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ verdict: 'allowed', rule: null });
  });
});
