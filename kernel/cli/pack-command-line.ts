/**
 * Command groups packs contribute (`memo vault list`): found by booting the kernel when the first
 * word is not one of memo's own commands, then added to the program before it parses. Each
 * subcommand's work goes through the kernel's pipeline as the CLI.
 */
import type { Command } from 'commander';
import { SystemClock } from '../clock.js';
import type { Kernel } from '../kernel.js';
import { BUILTIN_COMMANDS } from '../packs/pack-commands.js';
import { DenyingPrompter } from '../permissions/prompter.js';
import type { Cli } from './context.js';
import { TtyPrompter } from './tty-prompter.js';

/** Global options that take a value: their value is not the command word. */
const VALUE_OPTIONS = new Set(['--root', '--data', '--packs', '--skills']);

/** The first word of argv (after node and the script) that is not a global option. */
export function commandWord(argv: readonly string[]): string | undefined {
  for (let i = 2; i < argv.length; i++) {
    const a = argv[i]!;
    if (VALUE_OPTIONS.has(a)) i++;
    else if (!a.startsWith('-')) return a;
  }
  return undefined;
}

/**
 * When argv names no built-in command, boots a kernel and adds the pack command groups to the
 * program. Returns the kernel (the caller shuts it down after parsing), or undefined.
 */
export async function addPackCommands(program: Command, cli: Cli, argv: readonly string[]): Promise<Kernel | undefined> {
  const word = commandWord(argv);
  if (word === undefined || BUILTIN_COMMANDS.has(word)) return undefined;
  // The global options (--data, --packs...) are needed before the real parse: the kernel boots on them.
  program.parseOptions([...argv.slice(2)]);
  const prompter = process.stdin.isTTY && process.stderr.isTTY ? new TtyPrompter(new SystemClock()) : new DenyingPrompter();
  const kernel = await cli.boot(prompter);
  for (const { pack, command } of kernel.commands.list()) {
    const group = program.command(command.name).description(`${command.description} (pack ${pack})`);
    for (const sub of command.subcommands) {
      const c = group.command(sub.name).description(sub.description);
      for (const a of sub.arguments ?? []) {
        const name = `${a.name}${a.variadic ? '...' : ''}`;
        c.argument(a.required ? `<${name}>` : `[${name}]`, a.description ?? '');
      }
      for (const o of sub.options ?? []) {
        if (o.default === undefined) c.option(o.flags, o.description);
        else c.option(o.flags, o.description, o.default);
      }
      c.action(async (...params: unknown[]) => {
        // commander passes the positional values, then the options object, then the command.
        const names = (sub.arguments ?? []).map((a) => a.name);
        const args: Record<string, string | string[] | undefined> = {};
        names.forEach((n, i) => (args[n] = params[i] as string | string[] | undefined));
        const options = (params[names.length] ?? {}) as Record<string, unknown>;
        const ac = new AbortController();
        const onSigint = () => ac.abort();
        process.once('SIGINT', onSigint);
        try {
          const code = await sub.run({
            args,
            options,
            signal: ac.signal,
            invoke: (tool, toolArgs) =>
              kernel.invoke({ tool, args: toolArgs, caller: { kind: 'cli', id: `memo ${command.name} ${sub.name}` }, signal: ac.signal }),
            print: (value) => process.stdout.write((typeof value === 'string' ? value : JSON.stringify(value)) + '\n'),
            record: (change) => kernel.admin.record({ ...change, by: 'cli' }),
          });
          cli.setExit(typeof code === 'number' ? code : 0);
        } catch (err) {
          process.stderr.write(`memo ${command.name} ${sub.name}: ${(err as Error)?.message ?? String(err)}\n`);
          cli.setExit(1);
        } finally {
          process.off('SIGINT', onSigint);
        }
      });
    }
  }
  return kernel;
}
