import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError, Option } from 'commander';
import { formatVerifyReport, isAuditEvent, readAuditFileTail, verifyAuditFile, type AuditLine } from '../audit/audit-log.js';
import { SystemClock } from '../clock.js';
import { isMemoError } from '../errors.js';
import { createKernel, kernelState, type Kernel } from '../kernel.js';
import { StderrLogger } from '../logger.js';
import { PermissionStore } from '../permissions/permission-store.js';
import { DenyingPrompter, FixedAnswerPrompter, isPermissionAnswer, PermissionAnswers, type Prompter } from '../permissions/prompter.js';
import { listPackDirs, readManifest, type PackFolder } from '../packs/pack-loader.js';
import type { PackManifest } from '../packs/manifest.js';
import { PackSettings, resolveConfig } from '../packs/pack-settings.js';
import { TtyPrompter } from './tty-prompter.js';
import { registerChatCommands } from './chat-command.js';
import { CommandJudge } from '../sandbox/command-judge.js';
import type { SkillFolder } from '../skills/skill-manager.js';
import { isLoopbackAddress } from '../mcp/auth.js';
// The MCP server modules load the SDK (about 0.3 s): only `memo serve` imports them, on demand.
import type { McpHttpEndpoint, McpHttpEndpointOptions } from '../mcp/mcp-http-server.js';
import { DEFAULT_IDLE_TIMEOUT_MS, DEFAULT_MAX_SESSIONS } from '../mcp/defaults.js';

/** A mistake in how the command was called: exit code 2, one line, nothing written. */
class UsageError extends Error {}

/** The thing asked about does not exist or was refused: exit code 1, one line. */
class NotFound extends Error {}

function knownPackIds(g: GlobalOptions): string[] {
  return listPackDirs(packFolders(g)).map((f) => path.basename(f.dir));
}

function manifestOf(g: GlobalOptions, id: string): PackManifest {
  const folder = listPackDirs(packFolders(g)).find((f) => path.basename(f.dir) === id);
  if (!folder) throw new NotFound(`There is no pack "${id}".`);
  try {
    return readManifest(folder.dir);
  } catch (err) {
    throw new NotFound(`Pack "${id}" ${(err as Error).message}.`);
  }
}

function parseValue(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function setPath(target: Record<string, unknown>, dotted: string, value: unknown): void {
  const keys = dotted.split('.');
  let obj = target;
  for (const k of keys.slice(0, -1)) {
    if (typeof obj[k] !== 'object' || obj[k] === null) obj[k] = {};
    obj = obj[k] as Record<string, unknown>;
  }
  obj[keys.at(-1)!] = value;
}

interface GlobalOptions {
  root?: string;
  data?: string;
  packs?: string;
  skills?: string;
}

/** Built-in packs and skills sit beside the kernel: `plugins/`, `skills/` in a checkout, under `dist/` once compiled. */
export const BUILTIN_PACKS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../plugins');
export const BUILTIN_SKILLS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../skills');

function skillFolders(g: GlobalOptions): SkillFolder[] {
  return [
    { dir: BUILTIN_SKILLS_DIR, source: 'builtin' },
    { dir: path.resolve(g.skills ?? path.join(dataDir(g), 'skills')), source: 'extra' },
  ];
}

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
  await kernel.loadSkills(skillFolders(g));
  return kernel;
}

function print(value: unknown): void {
  process.stdout.write(JSON.stringify(value) + '\n');
}

function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ')).join('\n') + '\n';
}

function parseArgsJson(text: string | undefined): unknown {
  if (text === undefined) return {};
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`--args is not valid JSON: ${(err as Error).message}`);
  }
}

/** One row of `memo audit tail`: an entry, or a kernel event (gap, torn tail, keyed chain start). */
function auditRow(e: AuditLine): string[] {
  if (isAuditEvent(e)) {
    const what = [e.seen, e.missing ? `#${e.missing.from}${e.missing.to > e.missing.from ? `-#${e.missing.to}` : ''} missing` : '', e.detail ?? ''].filter(Boolean).join('; ');
    return [e.ts, 'kernel', `(${e.event})`, '-', '-', '-', what.replace(/\s+/g, ' ').slice(0, 60)];
  }
  return [e.ts, e.caller.kind, e.tool, e.decision, e.outcome === 'ok' ? 'ok' : (e.error?.code ?? 'error'), String(Math.round(e.durationMs)), e.summary.replace(/\s+/g, ' ').slice(0, 60)];
}

interface ServeOptions {
  json?: boolean;
  stdio?: boolean;
  port?: string;
  host?: string;
  allowRemote?: boolean;
  idleTimeout: string;
  maxSessions: string;
}

/** Checks serve's options before anything boots: a bad one is a usage error (exit 2). */
function serveEndpointOptions(opts: ServeOptions): McpHttpEndpointOptions & { host: string } {
  const out: McpHttpEndpointOptions & { host: string } = { host: opts.host ?? '127.0.0.1', allowRemote: opts.allowRemote === true };
  if (opts.port !== undefined) {
    const port = Number(opts.port);
    if (!/^\d+$/.test(opts.port) || port > 65535) throw new UsageError('--port must be a whole number from 0 to 65535');
    out.port = port;
  }
  const idle = Number(opts.idleTimeout);
  if (!Number.isFinite(idle) || idle <= 0) throw new UsageError('--idle-timeout must be a positive number of seconds');
  out.idleTimeoutMs = idle * 1000;
  const max = Number(opts.maxSessions);
  if (!Number.isInteger(max) || max < 1) throw new UsageError('--max-sessions must be a whole number of at least 1');
  out.maxSessions = max;
  if (!opts.stdio && !isLoopbackAddress(out.host) && !out.allowRemote) {
    throw new UsageError(
      `refusing to serve MCP on ${out.host}: memo serve binds to loopback only, because anyone who reaches the endpoint with the token can use every read tool, and over plain HTTP the token crosses the network in clear text. Pass --allow-remote to bind there anyway.`,
    );
  }
  return out;
}

/** What memo serve prints for a person: the URL, the token, and client configs to paste. */
function serveBanner(url: string, token: string, remote: boolean): string {
  const http = { mcpServers: { memo: { type: 'http', url, headers: { Authorization: `Bearer ${token}` } } } };
  const viaRemote = { mcpServers: { memo: { command: 'npx', args: ['-y', 'mcp-remote', url, '--header', 'Authorization:${MEMO_AUTH}'], env: { MEMO_AUTH: `Bearer ${token}` } } } };
  return (
    `MCP endpoint (Streamable HTTP, ${remote ? 'REMOTE ACCESS ALLOWED' : 'loopback only'})\n  url:   ${url}\n  token: ${token}\n` +
    `\nClient config (Cursor, Claude Code, and VS Code under "servers" instead of "mcpServers"):\n${JSON.stringify(http, null, 2)}\n` +
    `\nStdio-only clients (Claude Desktop) through mcp-remote:\n${JSON.stringify(viaRemote, null, 2)}\n` +
    `\nExternal clients may run read tools only. Rotate the token with kill -HUP ${process.pid} or POST ${url}/rotate-token.\nStop with Ctrl-C.\n`
  );
}

function buildProgram(setExit: (code: number) => void): Command {
  const program = new Command('memo')
    .description('Memo agent kernel: tools behind a permission gate, an audit trail, and MCP.')
    .option('--root <dir>', 'sandbox root every path is resolved against (default: the working directory)')
    .option('--data <dir>', 'data folder: permissions, audit trail, databases (default: ./data)')
    .option('--packs <dir>', 'extra tool pack folder (default: <data>/packs)')
    .option('--skills <dir>', 'extra skill folder (default: <data>/skills)')
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
      process.stdout.write(table([['TOOL', 'DANGER', 'EFFECT', 'PACK', 'DESCRIPTION'], ...list.map((t) => [t.name, t.danger, t.effect, t.pack, t.description.split('\n')[0].slice(0, 70)])]));
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
      // Read from the file's end, without creating or locking anything.
      const entries = readAuditFileTail(path.join(dataDir(g()), 'agent-audit.jsonl'), n, opts.tool);
      if (opts.json) return void entries.forEach((e) => print(e));
      if (entries.length === 0) return void process.stdout.write('No audit entries.\n');
      process.stdout.write(table([['TIME', 'CALLER', 'TOOL', 'DECISION', 'OUTCOME', 'MS', 'SUMMARY'], ...entries.map(auditRow)]));
    });
  audit
    .command('verify')
    .description('check the keyed chain and its head: report the first line altered, removed, inserted or reordered, a cut, emptied, deleted or replaced file, or a rewrite without the key (exit 1)')
    .option('--json', 'print JSON')
    .action((opts: { json?: boolean }) => {
      const report = verifyAuditFile(path.join(dataDir(g()), 'agent-audit.jsonl'));
      if (opts.json) print(report);
      else process.stdout.write(formatVerifyReport(report));
      setExit(report.ok ? 0 : 1);
    });

  registerChatCommands(program, {
    boot: (prompter) => boot(g(), prompter),
    dataDir: () => dataDir(g()),
    setExit,
    usage: (m) => new UsageError(m),
    notFound: (m) => new NotFound(m),
  });

  const plugins = program.command('plugins').description('tool packs: list, inspect, enable, disable, configure');
  plugins
    .command('list')
    .description('every pack found, loaded or skipped (with the reason)')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const kernel = await boot(g(), new DenyingPrompter());
      const list = kernel.packs.list().map((p) => ({
        id: p.id,
        name: p.manifest?.name ?? p.id,
        version: p.manifest?.version ?? null,
        source: p.source,
        enabled: p.enabled,
        tools: p.manifest?.tools.length ?? 0,
        status: p.status,
        ...(p.error ? { error: p.error } : {}),
        dir: p.dir,
      }));
      await kernel.shutdown();
      if (opts.json) return print(list);
      if (list.length === 0) return void process.stdout.write('No packs found.\n');
      process.stdout.write(
        table([
          ['PACK', 'VERSION', 'SOURCE', 'ENABLED', 'TOOLS', 'STATUS'],
          ...list.map((p) => [p.id, p.version ?? '-', p.source, p.enabled ? 'yes' : 'no', String(p.tools), p.status === 'loaded' ? 'loaded' : `failed: ${p.error}`]),
        ]),
      );
    });
  plugins
    .command('info <id>')
    .description("a pack's tools with their danger levels and schemas, its settings and status")
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const kernel = await boot(g(), new DenyingPrompter());
      const state = kernel.packs.get(id);
      const config = kernel.packs.config(id) ?? null;
      await kernel.shutdown();
      if (!state) throw new NotFound(`There is no pack "${id}".`);
      const info = { id, status: state.status, ...(state.error ? { error: state.error } : {}), enabled: state.enabled, source: state.source, dir: state.dir, manifest: state.manifest ?? null, config };
      if (opts.json) return print(info);
      const m = state.manifest;
      let out = `${id}${m ? ` ${m.version}: ${m.name}` : ''} (${state.source}, ${state.enabled ? 'enabled' : 'disabled'}, ${state.status}${state.error ? `: ${state.error}` : ''})\n`;
      if (m) {
        out += `${m.description}\n\nTools:\n`;
        for (const t of m.tools) out += `  ${t.name}  [${t.danger}, ${t.effect}${t.confirm ? ', asks every time' : ''}]\n    ${t.description}\n    parameters: ${JSON.stringify(t.parameters)}\n`;
        if (m.config) out += `\nSettings schema: ${JSON.stringify(m.config)}\nSettings: ${JSON.stringify(config)}\n`;
      }
      process.stdout.write(out);
    });
  for (const [verb, enabled] of [['enable', true], ['disable', false]] as const) {
    plugins
      .command(`${verb} <id>`)
      .description(`${verb} a pack (persists in data/packs.json; a running kernel applies it at once)`)
      .action((id: string) => {
        const known = knownPackIds(g());
        if (!known.includes(id)) throw new NotFound(`There is no pack "${id}"${known.length ? ` (packs: ${known.join(', ')})` : ''}.`);
        const settings = new PackSettings(path.join(dataDir(g()), 'packs.json'), new StderrLogger());
        settings.setEnabled(id, enabled);
        process.stdout.write(`${enabled ? 'Enabled' : 'Disabled'} ${id}.\n`);
      });
  }
  plugins
    .command('config <id> [settings...]')
    .description("show a pack's settings, or set them: key=value (value as JSON when it parses, else text)")
    .option('--json', 'print JSON')
    .action((id: string, pairs: string[], opts: { json?: boolean }) => {
      const manifest = manifestOf(g(), id);
      const settings = new PackSettings(path.join(dataDir(g()), 'packs.json'), new StderrLogger());
      let current: Record<string, unknown>;
      if (pairs.length === 0) {
        current = resolveConfig(id, manifest.config, settings.storedConfig(id));
      } else {
        const changes: Record<string, unknown> = {};
        for (const pair of pairs) {
          const eq = pair.indexOf('=');
          if (eq <= 0) throw new UsageError(`settings are key=value pairs, got "${pair}"`);
          setPath(changes, pair.slice(0, eq), parseValue(pair.slice(eq + 1)));
        }
        try {
          current = settings.setConfig(id, manifest.config, changes);
        } catch (err) {
          if (isMemoError(err)) throw new NotFound(err.message);
          throw err;
        }
      }
      if (opts.json) return print(current);
      process.stdout.write(JSON.stringify(current, null, 2) + '\n');
    });

  program
    .command('shell')
    .description('the shell command judge')
    .command('check <command>')
    .description('judge a command without running it, as run_command would in --root (exit 0 allowed, 1 blocked, 3 ask: always asked, never covered by a standing approval)')
    .option('--json', 'print {"verdict","rule","reason"}')
    .action(async (command: string, opts: { json?: boolean }) => {
      // The same kernel state a kernel on this data folder protects, so `cat data/providers.json` is judged as it would be.
      const state = kernelState(dataDir(g()));
      for (const f of packFolders(g())) state.add(f.dir, 'a pack folder');
      for (const f of skillFolders(g())) state.add(f.dir, 'a skill folder');
      const cwd = fs.realpathSync(path.resolve(g().root ?? process.cwd()));
      const verdict = await new CommandJudge(state).judge(command, { cwd });
      if (opts.json) print(verdict);
      else process.stdout.write(`${verdict.verdict.toUpperCase()}${verdict.rule ? ` (${verdict.rule})` : ''}: ${verdict.reason}\n`);
      setExit(verdict.verdict === 'allowed' ? 0 : verdict.verdict === 'ask' ? 3 : 1);
    });

  const skills = program.command('skills').description('SKILL.md bundles');
  skills
    .command('list')
    .description('every skill found, loaded or skipped (with the reason)')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const kernel = await boot(g(), new DenyingPrompter());
      const list = kernel.skills.list().map((s) => ({
        name: s.name,
        description: s.skill?.description ?? null,
        source: s.source,
        status: s.status,
        ...(s.error ? { error: s.error } : {}),
        tools: s.skill?.tools.map((t) => t.name) ?? [],
        dir: s.dir,
      }));
      await kernel.shutdown();
      if (opts.json) return print(list);
      if (list.length === 0) return void process.stdout.write('No skills found.\n');
      process.stdout.write(
        table([
          ['SKILL', 'SOURCE', 'TOOLS', 'STATUS', 'DESCRIPTION'],
          ...list.map((s) => [s.name, s.source, s.tools.join(',') || '-', s.status === 'loaded' ? 'loaded' : `failed: ${s.error}`, (s.description ?? '').slice(0, 60)]),
        ]),
      );
    });
  skills
    .command('show <name>')
    .description("a skill's description, instructions, bundled files and command tools")
    .option('--json', 'print JSON')
    .action(async (name: string, opts: { json?: boolean }) => {
      const kernel = await boot(g(), new DenyingPrompter());
      const state = kernel.skills.get(name);
      const detail = state?.status === 'loaded' ? await kernel.invoke({ tool: 'read_skill', args: { name }, caller: { kind: 'cli', id: 'memo skills show' } }) : null;
      await kernel.shutdown();
      if (!state) throw new NotFound(`There is no skill "${name}".`);
      if (state.status === 'failed') throw new NotFound(`Skill "${name}" was skipped: ${state.error}`);
      const value = detail?.ok ? (detail.value as Record<string, any>) : null;
      if (opts.json) return print(value);
      let out = `${name}: ${value?.description}\n\n${value?.instructions}\n`;
      if (value?.tools?.length) out += `\nCommand tools:\n${value.tools.map((t: any) => `  ${t.name}: ${t.command}`).join('\n')}\n`;
      out += `\nFiles: ${value?.files.join(', ')}\n`;
      process.stdout.write(out);
    });

  program
    .command('serve')
    .description('run the kernel with the default packs and serve its tools over MCP (Streamable HTTP on loopback, or --stdio) until stopped')
    .option('--json', 'print one JSON line {"url","token","pid",...} for supervisors instead of text (and a new line after each rotation)')
    .option('--stdio', 'serve MCP over stdin/stdout instead of HTTP (logs go to stderr; stdout carries only the protocol)')
    .option('--port <n>', 'HTTP port (default: a random free port)')
    .option('--host <addr>', 'interface to bind (default 127.0.0.1; anything else needs --allow-remote)')
    .option('--allow-remote', 'allow binding to a non-loopback interface (the token then crosses the network in clear text)')
    .option('--idle-timeout <seconds>', 'close an MCP session after this long without requests', String(DEFAULT_IDLE_TIMEOUT_MS / 1000))
    .option('--max-sessions <n>', 'most MCP sessions at once; more get 503', String(DEFAULT_MAX_SESSIONS))
    .action(async (opts: ServeOptions) => {
      const { McpHttpEndpoint } = await import('../mcp/mcp-http-server.js');
      const { McpStdioServer, reserveStdoutForProtocol, takeWriteCapabilityFromEnv } = await import('../mcp/mcp-stdio.js');
      // Read once, then gone from the environment: nothing the kernel spawns inherits it.
      const capability = takeWriteCapabilityFromEnv();
      const endpointOptions = serveEndpointOptions(opts);
      // Handlers first: a supervisor may send SIGTERM (or SIGHUP) the moment it reads the ready line.
      const stopped = new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      let onRotate = () => {};
      const onHup = () => onRotate();
      // SIGHUP rotates the HTTP token; over stdio there is no token, so a hangup keeps its default meaning.
      if (!opts.stdio) process.on('SIGHUP', onHup);
      // Nothing else holds the event loop open yet; this does until a signal arrives.
      const keepAlive = setInterval(() => {}, 1 << 30);
      const stdout = opts.stdio ? reserveStdoutForProtocol() : undefined;
      const logger = new StderrLogger();
      let kernel: Kernel | undefined;
      let endpoint: McpHttpEndpoint | undefined;
      try {
        kernel = await boot(g(), new DenyingPrompter('memo serve has nobody to ask; store a decision with memo tools call --approve allow-forever'), false);
        await kernel.watch();
        const toolCount = kernel.registry.list().length;
        if (opts.stdio) {
          const stdio = new McpStdioServer(kernel, { stdout: stdout!, logger, ...(capability ? { capability } : {}) });
          await stdio.start();
          logger.info(`serving ${toolCount} tools over MCP stdio (pid ${process.pid})`);
          await Promise.race([stopped, stdio.closed]);
          await stdio.close();
          return;
        }
        endpoint = new McpHttpEndpoint(kernel, { ...endpointOptions, logger });
        try {
          await endpoint.start();
        } catch (err) {
          throw new NotFound(`cannot listen on ${endpointOptions.host}:${endpointOptions.port ?? 0} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
        }
        const ep = endpoint;
        const k = kernel;
        const remote = !isLoopbackAddress(endpointOptions.host);
        if (remote) logger.warn(`the MCP endpoint listens on ${endpointOptions.host} (--allow-remote): anyone who can reach it with the token can use the read tools, and plain HTTP does not protect the token in transit`);
        const info = () => ({ url: ep.url, token: ep.token, pid: process.pid, root: k.config.root, data: k.config.dataDir, tools: k.registry.list().length });
        onRotate = () => {
          ep.rotateToken();
          if (opts.json) print(info());
          else process.stdout.write(`Token rotated; the old one no longer works. New token: ${ep.token}\n`);
        };
        if (opts.json) print(info());
        else {
          const names = kernel.packs.list().map((p) => `${p.id}${p.status === 'failed' ? ' (skipped)' : p.enabled ? '' : ' (disabled)'}`).join(', ');
          process.stdout.write(
            `Memo kernel running (pid ${process.pid})\n  root:  ${kernel.config.root}\n  data:  ${kernel.config.dataDir}\n  packs: ${names || 'none'} (watching ${packFolders(g()).map((f) => f.dir).join(', ')})\n  tools: ${toolCount}\n` +
              serveBanner(ep.url, ep.token, remote),
          );
        }
        await stopped;
      } finally {
        process.off('SIGHUP', onHup);
        clearInterval(keepAlive);
        await endpoint?.close();
        await kernel?.shutdown();
      }
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
    if (err instanceof NotFound) {
      process.stderr.write(`memo: ${err.message}\n`);
      return 1;
    }
    process.stderr.write(`memo: unexpected failure: ${(err as Error)?.message ?? String(err)}\n`);
    return 1;
  }
  return exit;
}
