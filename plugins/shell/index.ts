import { isSensitiveName, maskSecrets, MemoError, runProcess, type ToolContext, type ToolImplementation } from '../../kernel/index.js';

/** Each of stdout and stderr is cut to this many bytes (head and tail kept). */
const OUTPUT_CAP = 64 * 1024;

/** Values of sensitive-looking environment variables: scrubbed from command output too (`env`, `printenv`). */
function envSecrets(env: NodeJS.ProcessEnv): string[] {
  return Object.entries(env)
    .filter(([name, value]) => value !== undefined && value.length >= 8 && isSensitiveName(name))
    .map(([, value]) => value!);
}

async function workingDir(cwd: unknown, ctx: ToolContext): Promise<string> {
  const requested = typeof cwd === 'string' && cwd !== '' ? cwd : '.';
  const resolved = await ctx.sandbox.resolve(requested, 'list');
  if (!resolved.exists) throw new MemoError('NOT_FOUND', `The working directory "${requested}" does not exist.`);
  if (!resolved.isDirectory) throw new MemoError('VALIDATION', `The working directory "${requested}" is not a directory.`);
  return resolved.real;
}

const runCommand: ToolImplementation = {
  preview: async (args, ctx) => ({ kind: 'command', text: `$ ${String(args.command)}\n(in ${await workingDir(args.cwd, ctx).catch(() => String(args.cwd ?? '.'))})` }),
  run: async (args, ctx) => {
    const command = String(args.command);
    // The blacklist holds whatever the permission policy says: it is checked on every run.
    const verdict = await ctx.judge.judge(command);
    if (verdict.verdict === 'blocked') throw new MemoError('COMMAND_BLOCKED', `${verdict.reason} (rule ${verdict.rule})`, { details: { rule: verdict.rule } });
    const cwd = await workingDir(args.cwd, ctx);
    const r = await runProcess(['/bin/bash', '-c', command], { cwd, signal: ctx.signal, timeoutMs: 61_000, maxOutputBytes: OUTPUT_CAP });
    const secrets = envSecrets(process.env);
    return {
      exitCode: r.exitCode,
      signal: r.signal,
      stdout: maskSecrets(r.stdout, secrets),
      stderr: maskSecrets(r.stderr, secrets),
      truncated: r.truncated,
      durationMs: Math.round(r.durationMs),
      summary: `exit ${r.exitCode ?? r.signal}${r.truncated ? ' (output cut)' : ''}`,
    };
  },
};

const readEnv: ToolImplementation = (args) => {
  const names = Array.isArray(args.names) ? new Set(args.names as string[]) : null;
  const prefix = typeof args.prefix === 'string' ? args.prefix : '';
  const vars: Record<string, string> = {};
  let masked = 0;
  for (const name of Object.keys(process.env).sort()) {
    if (names && !names.has(name)) continue;
    if (!name.startsWith(prefix)) continue;
    const value = process.env[name] ?? '';
    const shown = isSensitiveName(name) ? '[masked]' : maskSecrets(value);
    if (shown !== value) masked++;
    vars[name] = shown;
  }
  return { variables: vars, count: Object.keys(vars).length, masked, summary: `${Object.keys(vars).length} variables, ${masked} masked` };
};

export const tools = { run_command: runCommand, read_env: readEnv };
