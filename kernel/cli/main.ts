import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError, Option } from 'commander';
import { verifyAuditFile, type AuditEntry } from '../audit/audit-log.js';
import { SystemClock } from '../clock.js';
import { isMemoError } from '../errors.js';
import { createKernel, type Kernel } from '../kernel.js';
import { StderrLogger } from '../logger.js';
import { PermissionStore } from '../permissions/permission-store.js';
import { DenyingPrompter, FixedAnswerPrompter, isPermissionAnswer, PermissionAnswers, type Prompter } from '../permissions/prompter.js';
import type { PackFolder } from '../packs/pack-loader.js';
import { TtyPrompter } from './tty-prompter.js';

/** A mistake in how the command was called: exit code 2, one line, nothing written. */
class UsageError extends Error {}

interface GlobalOptions {
  root?: string;
  data?: string;
  packs?: string;
}

/** Built-in packs sit beside the kernel: `plugins/` in a checkout, `dist/plugins/` once compiled. */
export const BUILTIN_PACKS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../plugins');

function dataDir(g: GlobalOptions): string {
  return path.resolve(g.data ?? 'data');
}

function packFolders(g: GlobalOptions): PackFolder[] {
  return [
    { dir: BUILTIN_PACKS_DIR, source: 'builtin' },
    { dir: path.resolve(g.packs ?? path.join(dataDir(g), 'packs')), source: 'extra' },
  ];
}

async function boot(g: GlobalOptions, prompter: Prompter, quiet = true): Promise<Kernel> {
  let kernel: Kernel;
  try {
    kernel = createKernel({ root: g.root ?? process.cwd(), dataDir: dataDir(g), prompter, logger: new StderrLogger(quiet) });
  } catch (err) {
    if (isMemoError(err)) throw new UsageError(err.message);
    throw err;
  }
  await kernel.loadPacks(packFolders(g));
  return kernel;
}

function print(value: unknown): void {
  process.stdout.write(JSON.stringify(value) + '\n');
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')).join('\n') + '\n';
}

function parseArgsJson(text: string | undefined): unknown {
  if (text === undefined) return {};
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`--args is not valid JSON: ${(err as Error).message}`);
  }
}

/** Reads the audit file's tail without creating anything. */
function readAuditTail(file: string, n: number, tool?: string): AuditEntry[] {
  if (!fs.existsSync(file)) return [];
  const entries: AuditEntry[] = [];
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (!line) continue;
    try {
      const e = JSON.parse(line) as AuditEntry;
      if (!tool || e.tool === tool) entries.push(e);
    } catch {
      // a torn line: skipped
    }
  }
  return entries.slice(-n);
}

function buildProgram(setExit: (code: number) => void): Command {
  const program = new Command('memo')
    .description('Memo agent kernel: tools behind a permission gate, an audit trail, and MCP.')
    .option('--root <dir>', 'sandbox root every path is resolved against (default: the working directory)')
    .option('--data <dir>', 'data folder: permissions, audit trail, databases (default: ./data)')
    .option('--packs <dir>', 'extra tool pack folder (default: <data>/packs)')
    .showHelpAfterError()
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });
  const g = () => program.opts<GlobalOptions>();

  const tools = program.command('tools').description('list and call tools');
  tools
    .command('list')
    .description('list the tools of enabled packs')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const kernel = await boot(g(), new DenyingPrompter());
      const list = kernel.registry.list().map((t) => ({ name: t.spec.name, pack: t.pack.id, danger: t.spec.danger, effect: t.spec.effect, description: t.spec.description, parameters: t.spec.parameters }));
      await kernel.shutdown();
      if (opts.json) return print(list);
      if (list.length === 0) return void process.stdout.write('No tools are loaded.\n');
      process.stdout.write(table([['TOOL', 'DANGER', 'EFFECT', 'PACK', 'DESCRIPTION'], ...list.map((t) => [t.name, t.danger, t.effect, t.pack, t.description.split('\n')[0]!.slice(0, 70)])]));
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
      const kernel = await boot(g(), prompter);
      const ac = new AbortController();
      const onSigint = () => ac.abort();
      process.once('SIGINT', onSigint);
      const result = await kernel.invoke({ tool: toolName, args, caller: { kind: 'cli', id: 'memo tools call' }, signal: ac.signal });
      process.off('SIGINT', onSigint);
      await kernel.shutdown();
      if (result.ok) {
        if (opts.json) print({ ok: true, result: result.value });
        else process.stdout.write((typeof result.value === 'string' ? result.value : JSON.stringify(result.value, null, 2)) + '\n');
        setExit(0);
      } else {
        if (opts.json) print({ ok: false, error: { code: result.error.code, message: result.error.message } });
        else process.stderr.write(`memo: ${result.error.code}: ${result.error.message}\n`);
        setExit(1);
      }
    });

  const permissions = program.command('permissions').description('stored (forever) permission decisions');
  permissions
    .command('list')
    .option('--json', 'print JSON')
    .description('list stored decisions')
    .action((opts: { json?: boolean }) => {
      const store = new PermissionStore(path.join(dataDir(g()), 'permissions.json'), new StderrLogger());
      const list = store.list();
      if (opts.json) return print(list);
      if (list.length === 0) return void process.stdout.write('No stored permission decisions.\n');
      process.stdout.write(table([['TOOL', 'DECISION', 'PACK', 'SINCE'], ...list.map((d) => [d.tool, d.decision, d.plugin ?? '-', d.at])]));
    });
  permissions
    .command('revoke <tool>')
    .description("remove a tool's stored decision (it will be asked again)")
    .action((toolName: string) => {
      const store = new PermissionStore(path.join(dataDir(g()), 'permissions.json'), new StderrLogger());
      if (store.revoke(toolName)) process.stdout.write(`Revoked the stored decision for ${toolName}.\n`);
      else {
        process.stderr.write(`memo: there is no stored decision for ${toolName}.\n`);
        setExit(1);
      }
    });

  const audit = program.command('audit').description('the audit trail (data/agent-audit.jsonl)');
  audit
    .command('tail')
    .description('show the newest audit entries')
    .option('-n, --lines <n>', 'how many', '20')
    .option('--tool <tool>', 'only this tool')
    .option('--json', 'print one JSON entry per line')
    .action((opts: { lines: string; tool?: string; json?: boolean }) => {
      const n = Number(opts.lines);
      if (!Number.isInteger(n) || n < 1) throw new UsageError('-n must be a whole number of at least 1');
      const entries = readAuditTail(path.join(dataDir(g()), 'agent-audit.jsonl'), n, opts.tool);
      if (opts.json) return void entries.forEach((e) => print(e));
      if (entries.length === 0) return void process.stdout.write('No audit entries.\n');
      process.stdout.write(
        table([
          ['TIME', 'CALLER', 'TOOL', 'DECISION', 'OUTCOME', 'MS', 'SUMMARY'],
          ...entries.map((e) => [e.ts, e.caller.kind, e.tool, e.decision, e.outcome === 'ok' ? 'ok' : (e.error?.code ?? 'error'), String(Math.round(e.durationMs)), e.summary.replace(/\s+/g, ' ').slice(0, 60)]),
        ]),
      );
    });
  audit
    .command('verify')
    .description('check the hash chain: report the first line altered, removed or inserted')
    .option('--json', 'print JSON')
    .action((opts: { json?: boolean }) => {
      const report = verifyAuditFile(path.join(dataDir(g()), 'agent-audit.jsonl'));
      if (opts.json) print(report);
      else if (report.ok) process.stdout.write(`OK: ${report.entries} entries, chain intact${report.torn.length ? `; torn by a crash (not tampering): line ${report.torn.join(', ')}` : ''}.\n`);
      else process.stdout.write(`TAMPERED: ${report.problem!.message}.\n`);
      setExit(report.ok ? 0 : 1);
    });

  program
    .command('serve')
    .description('run the kernel with the default packs until stopped')
    .option('--json', 'print one JSON line for supervisors instead of text')
    .action(async (opts: { json?: boolean }) => {
      const kernel = await boot(g(), new DenyingPrompter('memo serve has nobody to ask; store a decision with memo tools call --approve allow-forever'), false);
      const packs = kernel.packStatuses();
      const toolCount = kernel.registry.list().length;
      if (opts.json) print({ url: null, token: null, pid: process.pid, root: kernel.config.root, data: kernel.config.dataDir, tools: toolCount });
      else {
        process.stdout.write(`Memo kernel running (pid ${process.pid})\n  root:  ${kernel.config.root}\n  data:  ${kernel.config.dataDir}\n  packs: ${packs.length ? packs.map((p) => `${p.id}${p.status === 'failed' ? ' (skipped)' : ''}`).join(', ') : 'none'}\n  tools: ${toolCount}\nStop with Ctrl-C.\n`);
      }
      // Nothing else holds the event loop open yet; this does until a signal arrives.
      const keepAlive = setInterval(() => {}, 1 << 30);
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      clearInterval(keepAlive);
      await kernel.shutdown();
    });

  return program;
}

/** Runs the CLI; resolves with the exit code (0 ok, 1 a tool or check failed, 2 usage). */
export async function main(argv: string[]): Promise<number> {
  let exit = 0;
  const program = buildProgram((code) => (exit = code));
  try {
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
    process.stderr.write(`memo: unexpected failure: ${(err as Error)?.message ?? String(err)}\n`);
    return 1;
  }
  return exit;
}
