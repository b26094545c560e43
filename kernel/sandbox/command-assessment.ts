import { MemoError } from '../errors.js';
import type { Judge } from './command-judge.js';
import type { CommandVerdict, JudgeOptions } from './command-judge.js';
import { commandSandbox } from './os-sandbox.js';
import type { NetworkGrant } from './network-proxy.js';

/**
 * A tool's own judgement of one call, made before the permission gate: what it cannot vouch for.
 * `ask` means the call is always put to a person (never covered by a session or forever approval,
 * denied where nobody can be asked), whatever the tool's danger level.
 */
export interface Concern {
  verdict: 'ask';
  /** A stable id of what was found (e.g. the command judge's `inline-code`). */
  rule: string;
  /** One sentence for the person asked. */
  reason: string;
  /** The network a command gets if the person allows it (the OS sandbox keeps it off otherwise). */
  network?: { domains: 'any' | string[] };
}

export interface CommandJudgement {
  /** What makes a person decide every time (the judge's `ask`, the network), or null. */
  concern: Concern | null;
  /** The network the command gets if it runs: null (off), or the grant a person's answer allows. */
  network: NetworkGrant | null;
  /** Whether it runs in the OS sandbox (false only where a person chose `memo settings sandbox judged`). */
  sandboxed: boolean;
}

export interface AssessOptions {
  cwd?: string;
  /** Domains a command allowed network may reach (a pack setting); empty or absent: any public one. */
  networkDomains?: readonly string[];
}

function describeGrant(grant: NetworkGrant): string {
  return grant.domains === 'any' ? 'any public address' : grant.domains.join(', ');
}

/**
 * The command judge's verdict and the OS sandbox's state, as one judgement for every tool that runs a
 * command (run_command, skill command tools):
 * - the sandbox cannot start and a person has not chosen to run commands judged only: refused
 *   (COMMAND_BLOCKED, rule sandbox-unavailable), before anyone is asked;
 * - `blocked`: refused before anyone is asked (COMMAND_BLOCKED, naming the rule);
 * - `ask`: a concern (asked every time, no standing approval, denied where nobody can be asked);
 * - network use (curl, git fetch, npm ci): a concern too, which names the domains; the command gets
 *   network only when that question was answered yes, and runs with none otherwise;
 * - `allowed` with no network: no concern.
 */
export async function judgeCommand(judge: Judge, command: string, options: AssessOptions = {}): Promise<CommandJudgement> {
  const mode = await commandSandbox();
  const judgeOptions: JudgeOptions = { osSandbox: mode.sandboxed };
  if (options.cwd !== undefined) judgeOptions.cwd = options.cwd;
  const verdict: CommandVerdict = await judge.judge(command, judgeOptions);
  if (verdict.verdict === 'blocked') {
    throw new MemoError('COMMAND_BLOCKED', `${verdict.reason} (rule ${verdict.rule})`, { details: { rule: verdict.rule } });
  }
  const programs = verdict.network?.programs ?? [];
  const network: NetworkGrant | null = programs.length > 0 ? { domains: options.networkDomains?.length ? [...options.networkDomains] : 'any' } : null;
  const networkText = network
    ? `It uses the network (${programs.join(', ')}): allowed, it runs with network to ${describeGrant(network)} (never this machine's or the local network's addresses); denied, it does not run.`
    : '';
  if (verdict.verdict === 'ask') {
    const reason = networkText ? `${verdict.reason} ${networkText}` : verdict.reason;
    return { concern: { verdict: 'ask', rule: verdict.rule ?? 'ask', reason, ...(network ? { network } : {}) }, network, sandboxed: mode.sandboxed };
  }
  if (network) return { concern: { verdict: 'ask', rule: 'network', reason: networkText, network }, network, sandboxed: mode.sandboxed };
  return { concern: null, network: null, sandboxed: mode.sandboxed };
}

/** judgeCommand's concern, as a tool's `assess` answer. */
export async function assessCommand(judge: Judge, command: string, options: AssessOptions = {}): Promise<Concern | null> {
  return (await judgeCommand(judge, command, options)).concern;
}
