/** `memo tools list|search|call`: the loaded tools, tool search as the agent ranks, and one call through the kernel pipeline (memo serve's, when it runs on this data folder). */
import type { Command } from 'commander';
import { SystemClock } from '../clock.js';
import { ControlFailure } from '../control/control-client.js';
import { toolList, toolSearchView } from '../control/kernel-views.js';
import { ANSWER_HELP, DenyingPrompter, FixedAnswerPrompter, isPermissionAnswer, type Prompter } from '../permissions/prompter.js';
import type { ProgressUpdate, ToolResult } from '../tools/contract.js';
import { noServerOption, NotFound, print, table, UsageError, type Cli, type ServerOption } from './context.js';
import { TtyPrompter } from './tty-prompter.js';

function parseArgsJson(text: string | undefined): unknown {
  if (text === undefined) return {};
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`--args is not valid JSON: ${(err as Error).message}`);
  }
}

/** Progress is for a person watching: shown on a terminal's stderr, never mixed into output a script reads. */
function showProgress(update: ProgressUpdate): void {
  if (!process.stderr.isTTY) return;
  const of = update.total !== undefined ? `/${update.total}` : '';
  process.stderr.write(`memo: progress ${update.progress}${of}${update.message ? `: ${update.message}` : ''}\n`);
}

export function registerToolsCommands(program: Command, cli: Cli): void {
  const tools = program.command('tools').description('list and call tools');
  tools
    .command('list')
    .description('list the tools of enabled packs (through memo serve when it runs on this data folder)')
    .option('--json', 'print JSON')
    .addOption(noServerOption())
    .action(async (opts: { json?: boolean } & ServerOption) => {
      const list = await cli.readVia(opts, 'tools.list', {}, async () => {
        const kernel = await cli.boot(new DenyingPrompter());
        const own = toolList(kernel);
        await kernel.shutdown();
        return own;
      });
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
    .command('search <words>')
    .description("rank the tools for a request in words, as the agent's tool search would offer them (scores: BM25, higher fits better)")
    .option('--limit <n>', 'how many tools to print (1-100)', '10')
    .option('--mode <mode>', 'only the tools this access mode offers: vault, computer or web (default: every enabled tool)')
    .option('--json', 'print JSON: [{ "name", "pack", "score" }]')
    .addOption(noServerOption())
    .action(async (words: string, opts: { limit: string; mode?: string; json?: boolean } & ServerOption) => {
      const limit = Number(opts.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw new UsageError(`--limit must be a whole number from 1 to 100, not "${opts.limit}"`);
      const mode = opts.mode;
      if (mode !== undefined && mode !== 'vault' && mode !== 'computer' && mode !== 'web')
        throw new UsageError(`--mode must be vault, computer or web, not "${mode}"`);
      if (!words.trim()) throw new UsageError('give the words to search for, e.g. memo tools search "add a task"');
      const fields = { query: words, limit, ...(mode ? { mode } : {}) };
      const hits = await cli.readVia(opts, 'tools.search', fields, async () => {
        const kernel = await cli.boot(new DenyingPrompter());
        const own = toolSearchView(kernel, words, { limit, ...(mode ? { mode } : {}) });
        await kernel.shutdown();
        return own;
      });
      if (opts.json) return print(hits);
      if (hits.length === 0) return void process.stdout.write(`No tool fits "${words}"${mode ? ` in ${mode} mode` : ''}; try other words.\n`);
      process.stdout.write(table([['TOOL', 'PACK', 'SCORE'], ...hits.map((h) => [h.name, h.pack, h.score.toFixed(2)])]));
    });

  tools
    .command('call <tool>')
    .description(
      "call one tool through the kernel pipeline (validate, rate-limit, gate, run, audit): memo serve's when it runs on this data folder with the same root, else a kernel of its own",
    )
    .option('--args <json>', 'the arguments as a JSON object', '{}')
    .option('--approve <answer>', `answer any permission prompt with this, instead of asking (${ANSWER_HELP})`)
    .option('--json', 'print {"ok":true,"result":...} or {"ok":false,"error":{...}}')
    .addOption(noServerOption())
    .action(async (toolName: string, opts: { args: string; approve?: string; json?: boolean } & ServerOption) => {
      const args = parseArgsJson(opts.args);
      let prompter: Prompter;
      if (opts.approve !== undefined) {
        if (!isPermissionAnswer(opts.approve)) throw new UsageError(`--approve must be one of ${ANSWER_HELP}`);
        prompter = new FixedAnswerPrompter(opts.approve);
      } else {
        // Nobody to ask without a terminal: deny rather than hang a script.
        prompter = process.stdin.isTTY && process.stderr.isTTY ? new TtyPrompter(new SystemClock()) : new DenyingPrompter();
      }
      const server = await cli.server(opts, true);
      let result: ToolResult;
      if (server) {
        // Ctrl-C cancels the call on the server; its result (CANCELLED) still comes back. A second Ctrl-C ends this process, and the disconnect cancels it too.
        const onSigint = () => server.cancel();
        process.once('SIGINT', onSigint);
        try {
          result = (await server.request('tools.call', { tool: toolName, args }, { prompter, onProgress: showProgress })) as ToolResult;
        } catch (err) {
          // The request was sent: the call may have run, so it is not repeated on a kernel of this process.
          const code = err instanceof ControlFailure ? err.code : 'DISCONNECTED';
          throw new NotFound(
            `the running server (pid ${server.pid}) did not return the result of ${toolName} (${code}: ${(err as Error).message}); it may have run: see memo audit tail`,
          );
        } finally {
          process.off('SIGINT', onSigint);
        }
      } else {
        const kernel = await cli.boot(prompter);
        const ac = new AbortController();
        const onSigint = () => ac.abort();
        process.once('SIGINT', onSigint);
        result = await kernel.invoke({ tool: toolName, args, caller: { kind: 'cli', id: 'memo tools call' }, signal: ac.signal, onProgress: showProgress });
        process.off('SIGINT', onSigint);
        await kernel.shutdown();
      }
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
