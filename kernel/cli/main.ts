/**
 * The CLI `bin/memo` runs: global options and one file per command group (tools, permissions,
 * settings, approvals, audit, chat and provider, plugins, shell, skills, serve), each registered on one commander program.
 */
import { Command, CommanderError } from 'commander';
import { isMemoError } from '../errors.js';
import type { Kernel } from '../kernel.js';
import { registerApprovalsCommands } from './approvals-command.js';
import { registerAuditCommands } from './audit-command.js';
import { registerChatCommands } from './chat-command.js';
import { cliContext, NotFound, UsageError, type Cli, type GlobalOptions } from './context.js';
import { addPackCommands } from './pack-command-line.js';
import { registerPermissionsCommands } from './permissions-command.js';
import { registerPluginsCommands } from './plugins-command.js';
import { registerConsoleCommand, registerServeCommand } from './serve-command.js';
import { registerSettingsCommands } from './settings-command.js';
import { registerDoctorCommand } from './doctor-command.js';
import { registerShellCommands } from './shell-command.js';
import { registerSkillsCommands } from './skills-command.js';
import { registerToolsCommands } from './tools-command.js';

export function buildProgram(setExit: (code: number) => void): { program: Command; cli: Cli } {
  const program = new Command('memo')
    .description('Memo agent kernel: tools behind a permission gate, an audit trail, and MCP.')
    .option('--root <dir>', 'sandbox root every path is resolved against (default: the working directory)')
    .option('--data <dir>', 'data folder: permissions, audit trail, databases (default: ./data)')
    .option('--packs <dir>', 'extra tool pack folder (default: <data>/packs)')
    .option('--skills <dir>', 'extra skill folder (default: <data>/skills)')
    .showHelpAfterError()
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });
  const cli = cliContext(() => program.opts<GlobalOptions>(), setExit);
  registerToolsCommands(program, cli);
  registerPermissionsCommands(program, cli);
  registerSettingsCommands(program, cli);
  registerDoctorCommand(program, cli);
  registerApprovalsCommands(program, cli);
  registerAuditCommands(program, cli);
  registerChatCommands(program, {
    boot: (prompter) => cli.boot(prompter),
    dataDir: () => cli.dataDir(),
    setExit,
    usage: (m) => new UsageError(m),
    notFound: (m) => new NotFound(m),
  });
  registerPluginsCommands(program, cli);
  registerShellCommands(program, cli);
  registerSkillsCommands(program, cli);
  registerServeCommand(program, cli);
  registerConsoleCommand(program, cli);
  return { program, cli };
}

/** Runs the CLI; resolves with the exit code (0 ok, 1 a tool or check failed, 2 usage). */
export async function main(argv: string[]): Promise<number> {
  let exit = 0;
  const { program, cli } = buildProgram((code) => (exit = code));
  let packKernel: Kernel | undefined;
  try {
    packKernel = await addPackCommands(program, cli, argv);
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') return 0;
      return 2;
    }
    if (err instanceof UsageError) {
      process.stderr.write(`memo: ${err.message}\n`);
      return 2;
    }
    if (err instanceof NotFound) {
      process.stderr.write(`memo: ${err.message}\n`);
      return 1;
    }
    // A kernel error says what happened and what to do (a damaged conversations file, a missing key): no more to add.
    if (isMemoError(err)) {
      process.stderr.write(`memo: ${err.message}\n`);
      return 1;
    }
    process.stderr.write(`memo: unexpected failure: ${(err as Error)?.message ?? String(err)}\n`);
    return 1;
  } finally {
    await packKernel?.shutdown();
  }
  return exit;
}
