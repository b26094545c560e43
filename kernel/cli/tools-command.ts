/** `memo tools list|search|call`: the loaded tools, tool search as the agent ranks, and one call through the kernel pipeline (memo serve's, when it runs on this data folder). */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Command } from 'commander';
import { SystemClock } from '../clock.js';
import { ControlFailure, type ControlConnection } from '../control/control-client.js';
import { MAX_REQUEST_LINE_BYTES } from '../control/control-protocol.js';
import { toolList, toolSearchView } from '../control/kernel-views.js';
import { ANSWER_HELP, DenyingPrompter, FixedAnswerPrompter, isPermissionAnswer, type Prompter } from '../permissions/prompter.js';
import type { ProgressUpdate, ToolResult } from '../tools/contract.js';
import { noServerOption, NotFound, print, table, UsageError, type Cli, type ServerOption } from './context.js';
import { TtyPrompter } from './tty-prompter.js';
import { withDidYouMean } from '../util/did-you-mean.js';

/** Where the arguments of `memo tools call` come from: `--args` inline, `--args -` (stdin), or `--args-file PATH`. */
interface ArgsOptions {
  args?: string;
  argsFile?: string;
}

function parseJson(text: string, from: string): unknown {
  if (text.trim() === '') throw new UsageError(`${from} is empty: give the arguments as a JSON object`);
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${from} is not valid JSON: ${(err as Error).message}`);
  }
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The call's arguments: `--args` as given, read from stdin for `--args -`, or read from the file
 * `--args-file` names (for arguments longer than the OS lets one command-line argument be, 128 KiB
 * on Linux). Both options, an unreadable file or text that is not JSON: a usage error, before
 * anything is loaded or written.
 */
async function callArgs(opts: ArgsOptions): Promise<unknown> {
  if (opts.args !== undefined && opts.argsFile !== undefined) throw new UsageError('give the arguments with --args or --args-file, not both');
  if (opts.argsFile !== undefined) {
    const file = path.resolve(opts.argsFile);
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const why = code === 'ENOENT' ? 'it does not exist' : code === 'EISDIR' ? 'it is a folder' : `${code ?? (err as Error).message}`;
      throw new UsageError(`--args-file ${file} cannot be read: ${why}`);
    }
    return parseJson(text, `--args-file ${file}`);
  }
  if (opts.args === undefined) return {};
  if (opts.args === '-') return parseJson(await readStdin(), '--args - (stdin)');
  return parseJson(opts.args, '--args');
}

/**
 * A request line to memo serve holds at most MAX_REQUEST_LINE_BYTES; a call whose arguments come
 * near it (a few KB are kept for the rest of the request) runs on a kernel of its own.
 */
function tooLargeForServer(args: unknown): boolean {
  return Buffer.byteLength(JSON.stringify(args) ?? '') > MAX_REQUEST_LINE_BYTES - 16 * 1024;
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
    .option('--args <json>', 'the arguments as a JSON object (default: {}), or - to read them from stdin')
    .option('--args-file <path>', 'read the arguments (a JSON object) from this file: for arguments longer than a command line takes (128 KiB)')
    .option('--approve <answer>', `answer any permission prompt with this, instead of asking (${ANSWER_HELP})`)
    .option('--json', 'print {"ok":true,"result":...} or {"ok":false,"error":{...}}')
    .addOption(noServerOption())
    .action(async (toolName: string, opts: ArgsOptions & { approve?: string; json?: boolean } & ServerOption) => {
      const args = await callArgs(opts);
      let prompter: Prompter;
      if (opts.approve !== undefined) {
        if (!isPermissionAnswer(opts.approve)) throw new UsageError(`--approve must be one of ${ANSWER_HELP}`);
        prompter = new FixedAnswerPrompter(opts.approve);
      } else {
        // Nobody to ask without a terminal (stdin read for --args - is not one): deny rather than hang a script.
        prompter = process.stdin.isTTY && process.stderr.isTTY ? new TtyPrompter(new SystemClock()) : new DenyingPrompter();
      }
      let server: ControlConnection | null;
      if (tooLargeForServer(args)) {
        const running = await cli.server(opts, true, true);
        running?.close();
        if (running)
          process.stderr.write(
            `memo: not via the running server (pid ${running.pid}): the arguments are too large for one request to it; using a kernel of its own\n`,
          );
        server = null;
      } else server = await cli.server(opts, true);
      let result: ToolResult;
      // The tool names of the kernel that answered, for an unknown tool's "did you mean".
      let names: () => Promise<string[]>;
      if (server) {
        const pid = server.pid;
        // Ctrl-C cancels the call on the server; its result (CANCELLED) still comes back. A second Ctrl-C ends this process, and the disconnect cancels it too.
        const onSigint = () => server.cancel();
        process.once('SIGINT', onSigint);
        try {
          result = (await server.request('tools.call', { tool: toolName, args }, { prompter, onProgress: showProgress })) as ToolResult;
        } catch (err) {
          // The request was sent: the call may have run, so it is not repeated on a kernel of this process.
          const code = err instanceof ControlFailure ? err.code : 'DISCONNECTED';
          throw new NotFound(
            `the running server (pid ${pid}) did not return the result of ${toolName} (${code}: ${(err as Error).message}); it may have run: see memo audit tail`,
          );
        } finally {
          process.off('SIGINT', onSigint);
        }
        names = async () => {
          // A connection carries one request: a second one, saying nothing on stderr.
          const again = await cli.server(opts, true, true);
          return again ? ((await again.request('tools.list')) as Array<{ name: string }>).map((t) => t.name) : [];
        };
      } else {
        const kernel = await cli.boot(prompter);
        const ac = new AbortController();
        const onSigint = () => ac.abort();
        process.once('SIGINT', onSigint);
        result = await kernel.invoke({ tool: toolName, args, caller: { kind: 'cli', id: 'memo tools call' }, signal: ac.signal, onProgress: showProgress });
        process.off('SIGINT', onSigint);
        const own = kernel.registry.list({ includeDisabled: true }).map((t) => t.spec.name);
        names = () => Promise.resolve(own);
        await kernel.shutdown();
      }
      if (result.ok) {
        if (opts.json) print({ ok: true, result: result.value });
        else process.stdout.write((typeof result.value === 'string' ? result.value : JSON.stringify(result.value, null, 2)) + '\n');
        cli.setExit(0);
      } else {
        let message = result.error.message;
        if (result.error.code === 'UNKNOWN_TOOL') message = withDidYouMean(message, toolName, await names().catch(() => []));
        if (opts.json) print({ ok: false, error: { code: result.error.code, message } });
        else process.stderr.write(`memo: ${result.error.code}: ${message}\n`);
        cli.setExit(1);
      }
    });
}
