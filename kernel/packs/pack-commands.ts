import { toDisposable, type Disposable } from '../disposable.js';
import { MemoError } from '../errors.js';
import type { ToolResult } from '../tools/contract.js';

/** One `memo <group> <name>` subcommand a pack contributes. Its work goes through tools, never around them. */
export interface PackSubcommand {
  name: string;
  description: string;
  /** Positional arguments, in order (commander syntax is built from these). */
  arguments?: Array<{ name: string; description?: string; required?: boolean; variadic?: boolean }>;
  /** Options in commander's flag syntax: `--limit <n>`, `--json`. */
  options?: Array<{ flags: string; description: string; default?: string | boolean }>;
  /** Returns the exit code (default 0). Throwing prints the message and exits 1. */
  run(ctx: PackCommandContext): number | void | Promise<number | void>;
}

/** A top-level CLI command group (`memo vault ...`) contributed by a pack through `api.commands.register`. */
export interface PackCommand {
  /** kebab-case; may not shadow a built-in command (`tools`, `plugins`, `serve`, ...). */
  name: string;
  description: string;
  subcommands: PackSubcommand[];
}

export interface PackCommandContext {
  /** Positional arguments by name (a variadic one is a string array). */
  args: Readonly<Record<string, string | string[] | undefined>>;
  options: Readonly<Record<string, unknown>>;
  /** Calls a tool through the kernel's one pipeline (validate, rate limit, gate, run, audit) as the CLI. */
  invoke(tool: string, args: Record<string, unknown>): Promise<ToolResult>;
  /** Writes a line to stdout (a string as is, anything else as JSON). */
  print(value: unknown): void;
  /**
   * Puts a person's change to settings on the audit trail (an `admin` line naming the face the
   * command ran in: `cli`, `console`), before the command makes it: `action` like `calendar.consent`,
   * `target` what it changes, `change` how (secrets masked). Throws when the line cannot be
   * written; the command must not make the change then.
   */
  record(change: { action: string; target?: string; change?: Record<string, unknown> }): Promise<void>;
  /** Aborted on Ctrl-C. */
  signal: AbortSignal;
}

// ---------------------------------------------------------------------------------------------
// How a pack's command reports, the same in every pack: `CODE: message` or the answer's text, and
// with --json `{ok: false, error: {code, message}}` or `{ok: true, result}`.

export type CommandOutput = Pick<PackCommandContext, 'options' | 'print'>;

/** Prints a failure; the exit code is 2 for a VALIDATION error (the command line was wrong), else 1. */
export function commandFailed(ctx: CommandOutput, code: string, message: string): number {
  ctx.print(ctx.options.json ? { ok: false, error: { code, message } } : `${code}: ${message}`);
  return code === 'VALIDATION' ? 2 : 1;
}

/** Prints a success: `text` for people, `value` under --json. Exit code 0. */
export function commandDone(ctx: CommandOutput, value: unknown, text: string): number {
  ctx.print(ctx.options.json ? { ok: true, result: value } : text);
  return 0;
}

/** Runs a command's work; anything it throws is printed as a failure with its code (TOOL_FAILED when it has none). */
export async function commandGuarded(ctx: CommandOutput, work: () => number | Promise<number>): Promise<number> {
  try {
    return await work();
  } catch (err) {
    const e = err as { code?: unknown; message?: string };
    return commandFailed(ctx, typeof e.code === 'string' ? e.code : 'TOOL_FAILED', e.message ?? String(err));
  }
}

export interface RegisteredCommand {
  pack: string;
  command: PackCommand;
}

const NAME = /^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$/;

/** memo's own top-level commands, which no pack may shadow (a test checks this against the CLI program). */
export const BUILTIN_COMMANDS: ReadonlySet<string> = new Set([
  'approvals',
  'audit',
  'chat',
  'console',
  'doctor',
  'help',
  'permissions',
  'plugins',
  'provider',
  'serve',
  'settings',
  'shell',
  'skills',
  'tools',
]);

/** The commands packs contribute, by group name. The CLI reads it after loading packs. */
export class PackCommands {
  private readonly groups = new Map<string, RegisteredCommand>();

  constructor(private readonly reserved: ReadonlySet<string> = BUILTIN_COMMANDS) {}

  register(pack: string, command: PackCommand): Disposable {
    const problems = commandProblems(command);
    if (problems.length)
      throw new MemoError('VALIDATION', `Command "${String(command?.name)}" of pack "${pack}" is invalid: ${problems.join('; ')}.`, { plugin: pack });
    if (this.reserved.has(command.name))
      throw new MemoError('CONFLICT', `Pack "${pack}" may not register the command "${command.name}": it is one of memo's own commands.`, { plugin: pack });
    const existing = this.groups.get(command.name);
    if (existing && existing.pack !== pack)
      throw new MemoError('CONFLICT', `Command "${command.name}" of pack "${pack}" is already provided by pack "${existing.pack}".`, { plugin: pack });
    const entry: RegisteredCommand = { pack, command };
    this.groups.set(command.name, entry);
    return toDisposable(() => {
      if (this.groups.get(command.name) === entry) this.groups.delete(command.name);
    });
  }

  list(): RegisteredCommand[] {
    return [...this.groups.values()].sort((a, b) => a.command.name.localeCompare(b.command.name));
  }

  get(name: string): RegisteredCommand | undefined {
    return this.groups.get(name);
  }
}

function commandProblems(command: PackCommand): string[] {
  const p: string[] = [];
  if (!command || typeof command !== 'object') return ['it must be an object'];
  if (typeof command.name !== 'string' || !NAME.test(command.name)) p.push('name must be kebab-case');
  if (typeof command.description !== 'string' || !command.description.trim()) p.push('description is required');
  if (!Array.isArray(command.subcommands) || command.subcommands.length === 0) return [...p, 'subcommands must list at least one subcommand'];
  const seen = new Set<string>();
  for (const sub of command.subcommands) {
    const label = `subcommand "${String(sub?.name)}"`;
    if (typeof sub?.name !== 'string' || !NAME.test(sub.name)) p.push(`${label}: name must be kebab-case`);
    else if (seen.has(sub.name)) p.push(`${label} is declared twice`);
    else seen.add(sub.name);
    if (typeof sub?.description !== 'string' || !sub.description.trim()) p.push(`${label}: description is required`);
    if (typeof sub?.run !== 'function') p.push(`${label}: run must be a function`);
    const args = sub?.arguments ?? [];
    args.forEach((a, i) => {
      if (typeof a?.name !== 'string' || !/^[a-zA-Z][\w-]*$/.test(a.name)) p.push(`${label}: argument ${i + 1} needs a name`);
      if (a?.variadic && i !== args.length - 1) p.push(`${label}: only the last argument may be variadic`);
    });
    for (const o of sub?.options ?? [])
      if (typeof o?.flags !== 'string' || !/^(-\w, )?--[a-z][\w-]*( <[\w-]+>| \[[\w-]+\])?$/.test(o.flags))
        p.push(`${label}: option "${String(o?.flags)}" must look like --name or --name <value>`);
  }
  return p;
}
