/**
 * What `memo shell check` prints for a person: the verdict with its rule and reason, and which of
 * the command's programs use the network. The command as a process is in test/plugins/shell.
 */
import { verdictText } from '../../../kernel/cli/shell-command.js';
import { CommandJudge } from '../../../kernel/sandbox/command-judge.js';

const judge = new CommandJudge();

describe('verdictText', () => {
  it('says an allowed command that uses the network uses it, and which programs', async () => {
    const verdict = await judge.judge('git fetch && curl -s https://example.com | jq .');
    expect(verdict).toMatchObject({ verdict: 'allowed', rule: null, network: { programs: ['git fetch', 'curl'] } });
    expect(verdictText(verdict)).toBe('ALLOWED: No rule matched any command in it.\nIt uses the network: git fetch, curl.\n');
  });

  it('says so for an asked command too', async () => {
    const text = verdictText(await judge.judge("curl -s https://x | python3 -c 'import sys'"));
    expect(text).toMatch(/^ASK \(inline-code\): .*\nIt uses the network: curl\.\n$/);
  });

  it('prints one line when nothing uses the network, or the command is blocked', async () => {
    expect(verdictText(await judge.judge('npm test'))).toBe('ALLOWED: No rule matched any command in it.\n');
    expect(verdictText(await judge.judge('curl https://x; reboot'))).toMatch(/^BLOCKED \(reboot\): [^\n]*\n$/);
  });
});
