import { ASK_RULES, BLOCK_RULES, CommandJudge } from '../../../../kernel/sandbox/command-judge.js';
import { EVERYDAY, NETWORK, NOT_ALLOWED } from './cases.js';

const judge = new CommandJudge();
const KNOWN_RULES = new Set([...BLOCK_RULES.map((r) => r.id), ...ASK_RULES.map((r) => r.id), 'unparseable', 'dynamic-command', 'empty-command']);

describe('CommandJudge case tables', () => {
  // Titles are built here, not by it.each: jest's printf-style titles loop on values holding `%s`.
  describe('does not allow what it cannot vouch for', () => {
    for (const [command, verdict, rule, cwd] of NOT_ALLOWED) {
      it(`${JSON.stringify(command)}${cwd ? ` from ${cwd}` : ''} is ${verdict} under ${rule}`, async () => {
        const v = await judge.judge(command, cwd ? { cwd } : {});
        expect({ verdict: v.verdict, rule: v.rule }).toEqual({ verdict, rule });
        expect(v.reason.startsWith(`${rule}: `)).toBe(true);
        expect(v.reason).toMatch(/\.$/);
        if (verdict === 'ask') expect(v.reason).toMatch(/it is asked every time/);
      });
    }
  });

  describe('allows everyday developer commands', () => {
    for (const command of EVERYDAY) {
      it(`allows ${JSON.stringify(command)}`, async () => {
        const { network: _network, ...verdict } = await judge.judge(command);
        expect(verdict).toEqual({ verdict: 'allowed', rule: null, reason: 'No rule matched any command in it.' });
        await expect(judge.judge(command, { cwd: '/home/dev/project' })).resolves.toMatchObject({ verdict: 'allowed' });
      });
    }
  });

  describe('names the programs that use the network', () => {
    for (const [command, programs] of NETWORK) {
      it(`${JSON.stringify(command)} uses ${programs.length > 0 ? programs.join(', ') : 'no network'}`, async () => {
        const v = await judge.judge(command, { cwd: '/home/dev/project' });
        expect(v.verdict).not.toBe('blocked');
        if (programs.length === 0) expect(v).not.toHaveProperty('network');
        else expect(v.network).toEqual({ programs });
      });
    }
  });

  it('leaves the network out of a blocked verdict', async () => {
    await expect(judge.judge('curl https://x; reboot')).resolves.toEqual({ verdict: 'blocked', rule: 'reboot', reason: expect.any(String) });
  });

  it('names only rules it documents', () => {
    expect(NOT_ALLOWED.filter(([, , rule]) => !KNOWN_RULES.has(rule))).toEqual([]);
  });

  it('has every block and ask rule hit by the table, and the counts the issue asks for', () => {
    const hit = new Set(NOT_ALLOWED.map(([, , rule]) => rule));
    const notHit = [...BLOCK_RULES.map((r) => r.id), ...ASK_RULES.map((r) => r.id)].filter(
      (id) => !hit.has(id) && !['kernel-state', 'fork-bomb', 'nc-exec', 'mkfifo', 'fdisk', 'parted', 'pkexec', 'bash-interactive', 'chmod-777'].includes(id),
    );
    expect(notHit).toEqual([]);
    expect(NOT_ALLOWED.length).toBeGreaterThanOrEqual(200);
    expect(EVERYDAY.length).toBeGreaterThanOrEqual(100);
    expect(new Set(EVERYDAY).size).toBe(EVERYDAY.length);
  });

  it('lets a blocked part win over an asked one, and an asked part over an allowed one', async () => {
    await expect(judge.judge("python3 -c 'x'; reboot")).resolves.toMatchObject({ verdict: 'blocked', rule: 'reboot' });
    await expect(judge.judge("reboot; python3 -c 'x'")).resolves.toMatchObject({ verdict: 'blocked', rule: 'reboot' });
    await expect(judge.judge("ls && python3 -c 'x' && echo done")).resolves.toMatchObject({ verdict: 'ask', rule: 'inline-code' });
    await expect(judge.judge("echo $(python3 -c 'x') $(rm -rf /)")).resolves.toMatchObject({ verdict: 'blocked', rule: 'rm-root' });
  });

  it('names the interpreter and says what happens next in an ask reason', async () => {
    const v = await judge.judge("python3 -c 'print(1)'");
    expect(v.reason).toBe('inline-code: `python3 -c` runs inline code the judge cannot check; it is asked every time, and refused where nobody can be asked.');
  });

  it('judges a relative target from the working directory the caller gives', async () => {
    await expect(judge.judge('rm -rf lib', { cwd: '/usr' })).resolves.toMatchObject({ verdict: 'blocked', rule: 'rm-system' });
    await expect(judge.judge('rm -rf lib', { cwd: '/home/dev/project' })).resolves.toMatchObject({ verdict: 'allowed' });
    // A project that lives under a protected top-level tree is still the project's own.
    await expect(judge.judge('rm -rf build', { cwd: '/root/project' })).resolves.toMatchObject({ verdict: 'allowed' });
    await expect(judge.judge('rm -rf ../../etc', { cwd: '/root/project' })).resolves.toMatchObject({ verdict: 'blocked', rule: 'rm-system' });
  });
});
