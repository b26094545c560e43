import { MemoError } from '../errors.js';
import type { Concern, Judge } from '../tools/contract.js';
import type { JudgeOptions } from './command-judge.js';

/**
 * The command judge's verdict as a tool's `assess` answer, for every tool that runs a command
 * (run_command, skill command tools): `blocked` refuses the call before anyone is asked
 * (COMMAND_BLOCKED, naming the rule), `ask` becomes a concern (asked every time, no standing
 * approval, denied where nobody can be asked), `allowed` is no concern.
 */
export async function assessCommand(judge: Judge, command: string, options: JudgeOptions = {}): Promise<Concern | null> {
  const verdict = await judge.judge(command, options);
  if (verdict.verdict === 'blocked') {
    throw new MemoError('COMMAND_BLOCKED', `${verdict.reason} (rule ${verdict.rule})`, { details: { rule: verdict.rule } });
  }
  if (verdict.verdict === 'ask') return { verdict: 'ask', rule: verdict.rule ?? 'ask', reason: verdict.reason };
  return null;
}
