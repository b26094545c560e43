/** `memo tools list|call`: the loaded tools, and one call through the kernel pipeline. */
import { Option, type Command } from 'commander';
import { SystemClock } from '../clock.js';
import { DenyingPrompter, FixedAnswerPrompter, isPermissionAnswer, PermissionAnswers, type Prompter } from '../permissions/prompter.js';
import { print, table, UsageError, type Cli } from './context.js';
import { TtyPrompter } from './tty-prompter.js';

function parseArgsJson(text: string | undefined): unknown {
  if (text === undefined) return {};
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`--args is not valid JSON: ${(err as Error).message}`);
  }
}

export function registerToolsCommands(program: Command, cli: Cli): void {
  const tools = program.command('tools').description('list and call tools');
  tools
    .command('list')
    .description('list the tools of enabled packs')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const kernel = await cli.boot(new DenyingPrompter());
      const list = kernel.registry.list().map((t) => ({
        name: t.spec.name,
        pack: t.pack.id,
        danger: t.spec.danger,
        effect: t.spec.effect,
        description: t.spec.description,
        parameters: t.spec.parameters,
      }));
      await kernel.shutdown();
      if (opts.json) return print(list);
      if (list.length === 0) return void process.stdout.write('No tools are loaded.\n');
      process.stdout.write(
        table([
          ['TOOL', 'DANGER', 'EFFECT', 'PACK', 'DESCRIPTION'],
          ...list.map((t) => [t.name, t.danger, t.effect, t.pack, (t.description.split('\n')[0] ?? '').slice(0, 70)]),
        ]),
      );
    });

  tools
    .command('call <tool>')
    .description('call one tool through the kernel pipeline (validate, rate-limit, gate, run, audit)')
    .option('--args <json>', 'the arguments as a JSON object', '{}')
    .addOption(new Option('--approve <answer>', 'answer any permission prompt with this, instead of asking').choices([...PermissionAnswers]))
    .option('--json', 'print {"ok":true,"result":...} or {"ok":false,"error":{...}}')
    .action(async (toolName: string, opts: { args: string; approve?: string; json?: boolean }) => {
      const args = parseArgsJson(opts.args);
      let prompter: Prompter;
      if (opts.approve !== undefined) {
        if (!isPermissionAnswer(opts.approve)) throw new UsageError(`--approve must be one of ${PermissionAnswers.join(', ')}`);
        prompter = new FixedAnswerPrompter(opts.approve);
      } else {
        // Nobody to ask without a terminal: deny rather than hang a script.
        prompter = process.stdin.isTTY && process.stderr.isTTY ? new TtyPrompter(new SystemClock()) : new DenyingPrompter();
      }
      const kernel = await cli.boot(prompter);
      const ac = new AbortController();
      const onSigint = () => ac.abort();
      process.once('SIGINT', onSigint);
      const result = await kernel.invoke({ tool: toolName, args, caller: { kind: 'cli', id: 'memo tools call' }, signal: ac.signal });
      process.off('SIGINT', onSigint);
      await kernel.shutdown();
      if (result.ok) {
        if (opts.json) print({ ok: true, result: result.value });
        else process.stdout.write((typeof result.value === 'string' ? result.value : JSON.stringify(result.value, null, 2)) + '\n');
        cli.setExit(0);
      } else {
        if (opts.json) print({ ok: false, error: { code: result.error.code, message: result.error.message } });
        else process.stderr.write(`memo: ${result.error.code}: ${result.error.message}\n`);
        cli.setExit(1);
      }
    });
}
