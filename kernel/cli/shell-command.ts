/** `memo shell check`: the command judge's verdict on a command, without running it. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Command } from 'commander';
import { kernelState } from '../kernel.js';
import { CommandJudge, type CommandVerdict } from '../sandbox/command-judge.js';
import { osSandboxStatus } from '../sandbox/os-sandbox.js';
import { print, type Cli } from './context.js';

/** What `memo shell check` prints for a person: the verdict, its rule and reason, and the programs that use the network. */
export function verdictText(verdict: CommandVerdict): string {
  const head = `${verdict.verdict.toUpperCase()}${verdict.rule ? ` (${verdict.rule})` : ''}: ${verdict.reason}\n`;
  return verdict.network ? `${head}It uses the network: ${verdict.network.programs.join(', ')}.\n` : head;
}

export function registerShellCommands(program: Command, cli: Cli): void {
  program
    .command('shell')
    .description('the shell command judge')
    .command('check <command>')
    .description(
      'judge a command without running it, as run_command would in --root (exit 0 allowed, 1 blocked, 3 ask: always asked, never covered by a standing approval); also says which of its programs use the network',
    )
    .option('--json', 'print {"verdict","rule","reason"}, and "network": {"programs": [...]} when programs in it use the network')
    .option('--no-sandbox', 'judge it as if the OS sandbox could not start (as a judged-only run would be judged)')
    .action(async (command: string, opts: { json?: boolean; sandbox?: boolean }) => {
      // The same kernel state a kernel on this data folder protects, so `cat data/providers.json` is judged as it would be.
      const state = kernelState(cli.dataDir());
      for (const f of cli.packFolders()) state.add(f.dir, 'a pack folder');
      for (const f of cli.skillFolders()) state.add(f.dir, 'a skill folder');
      const cwd = fs.realpathSync(path.resolve(cli.g().root ?? process.cwd()));
      // As run_command judges it here: in the OS sandbox when it can start, where the data folder does not
      // exist, so recursive commands over the root are everyday work (words naming kernel state stay refused).
      const osSandbox = opts.sandbox !== false && (await osSandboxStatus()).available;
      const verdict = await new CommandJudge(state).judge(command, { cwd, osSandbox });
      if (opts.json) print(verdict);
      else process.stdout.write(verdictText(verdict));
      cli.setExit(verdict.verdict === 'allowed' ? 0 : verdict.verdict === 'ask' ? 3 : 1);
    });
}
