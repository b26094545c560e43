import {
  assessCommand,
  judgeCommand,
  defineTools,
  environmentSecrets,
  isSensitiveName,
  maskSecrets,
  MemoError,
  runProcess,
  runSummary,
  type ToolContext,
  type TypedToolImplementation,
} from 'memo-kernel/pack';
import type { ToolArgs } from './tool-args.js';

/** Each of stdout and stderr is cut to this many bytes (head and tail kept). */
const OUTPUT_CAP = 64 * 1024;

/**
 * Secret values of the environment, scrubbed from command output (`env`, `printenv`): whole values
 * of secret names (`*_KEY`, `*_TOKEN`, `PGPASSWORD`, `DB_PASS`, `*_DSN`, `*_WEBHOOK_URL`, ...) and
 * the secret-shaped parts of the others (a URL's password), 8 characters or more. PWD, OLDPWD,
 * HOME, PATH and other plain paths are not secrets, so the working directory stays readable. The
 * pipeline scrubs the same values from every tool result; reading them here at run time also
 * covers a variable set a moment ago.
 */
function envSecrets(env: NodeJS.ProcessEnv): string[] {
  return environmentSecrets(env).map(([value]) => value);
}

function networkDomains(ctx: ToolContext): string[] {
  const d = ctx.config.networkDomains;
  return Array.isArray(d) ? d.filter((x): x is string => typeof x === 'string') : [];
}

async function workingDir(cwd: string | undefined, ctx: ToolContext): Promise<string> {
  const requested = cwd !== undefined && cwd !== '' ? cwd : '.';
  const resolved = await ctx.sandbox.resolve(requested, 'list');
  if (!resolved.exists) throw new MemoError('NOT_FOUND', `The working directory "${requested}" does not exist.`);
  if (!resolved.isDirectory) throw new MemoError('VALIDATION', `The working directory "${requested}" is not a directory.`);
  return resolved.real;
}

const runCommand: TypedToolImplementation<ToolArgs['run_command']> = {
  // Judged before anyone is asked: a blocked command is refused outright (nobody is asked about
  // what could never run); one the judge cannot vouch for (inline interpreter code, options that run
  // commands) is asked every time, whatever is stored, and denied where nobody can be asked.
  // Network use (curl, git fetch, npm ci) is a concern too: the command gets network only when the
  // person asked allows it, and the OS sandbox keeps it off otherwise.
  assess: async (args, ctx) => assessCommand(ctx.judge, args.command, { cwd: await workingDir(args.cwd, ctx), networkDomains: networkDomains(ctx) }),
  // The folder is a fact; the command is the caller's text, quoted after it (its line breaks shown
  // as marks), so a line of the command cannot pass for the folder or for anything the kernel says.
  preview: async (args, ctx) => ({
    kind: 'command',
    text: '',
    facts: [{ label: 'runs in', value: await workingDir(args.cwd, ctx).catch(() => args.cwd ?? '.') }],
    quoted: [{ label: 'command', text: args.command }],
  }),
  run: async (args, ctx) => {
    const command = args.command;
    const cwd = await workingDir(args.cwd, ctx);
    // The blacklist holds whatever the permission policy says: judged again on every run, against
    // the file system as it is now (a link made since the question could point elsewhere).
    // A network concern reaching this point was answered yes by a person (a concern is asked every time).
    const { network } = await judgeCommand(ctx.judge, command, { cwd, networkDomains: networkDomains(ctx) });
    const r = await runProcess(['/bin/bash', '-c', command], {
      cwd,
      signal: ctx.signal,
      timeoutMs: 61_000,
      maxOutputBytes: OUTPUT_CAP,
      sandbox: { writable: [ctx.root], network },
    });
    const secrets = envSecrets(process.env);
    return {
      exitCode: r.exitCode,
      signal: r.signal,
      stdout: maskSecrets(r.stdout, secrets),
      stderr: maskSecrets(r.stderr, secrets),
      truncated: r.truncated,
      sandboxed: r.sandboxed,
      network: network ? (network.domains === 'any' ? 'any' : network.domains) : 'off',
      durationMs: Math.round(r.durationMs),
      summary: runSummary(r),
    };
  },
};

const readEnv: TypedToolImplementation<ToolArgs['read_env']> = (args) => {
  const names = args.names ? new Set(args.names) : null;
  const prefix = args.prefix ?? '';
  const vars: Record<string, string> = {};
  let masked = 0;
  for (const name of Object.keys(process.env).sort()) {
    if (names && !names.has(name)) continue;
    if (!name.startsWith(prefix)) continue;
    const value = process.env[name] ?? '';
    // A secret name hides the whole value; any other value shows, less its secret-shaped parts
    // (a URL's password, a Stripe or Mailgun key under an innocent name). Paths stay visible.
    const shown = value === '' ? '' : isSensitiveName(name) ? '[masked]' : maskSecrets(value);
    if (shown !== value) masked++;
    vars[name] = shown;
  }
  return { variables: vars, count: Object.keys(vars).length, masked, summary: `${Object.keys(vars).length} variables, ${masked} masked` };
};

export const tools = defineTools<ToolArgs>({ run_command: runCommand, read_env: readEnv });
