/**
 * `memo serve`: the long-running host: the kernel with its packs, served over MCP (HTTP or stdio), and
 * to CLI commands on the same data folder through its control socket. `memo serve rotate-token`
 * rotates the running server's MCP token through that socket.
 */
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Option, type Command } from 'commander';
import type { Disposable } from '../disposable.js';
import type { Kernel } from '../kernel.js';
import { StderrLogger } from '../logger.js';
import { isLoopbackAddress } from '../mcp/auth.js';
// The MCP server modules load the SDK (about 0.3 s): only `memo serve` imports them, on demand.
import type { McpHttpEndpoint, McpHttpEndpointOptions } from '../mcp/mcp-http-server.js';
import { DEFAULT_IDLE_TIMEOUT_MS, DEFAULT_MAX_SESSIONS } from '../mcp/defaults.js';
import { clientTokenLookup } from '../mcp/client-tokens.js';
import { registerServeTokenCommands } from './serve-token-command.js';
import { chooseProfile, describeProfile, profileTools, servesEverything, unknownEntries, type McpProfile } from '../mcp/mcp-profile.js';
import { DEFAULT_APPROVAL_WAIT_MS } from '../permissions/approval-broker.js';
import { parseRateLimit, rateLimitOptions, type RateLimitSetting } from './settings-command.js';
import { storedSettings } from '../state/command-store.js';
import { describeSandbox, osSandboxStatus } from '../sandbox/os-sandbox.js';
import { ControlFailure, reachServer } from '../control/control-client.js';
import { ControlServer, type RotatedToken } from '../control/control-server.js';
import { NotFound, print, UsageError, type Cli } from './context.js';
import { cliPlace, FrontUsage, joinServer } from './stdio-front.js';
import { CAPABILITY_ENV } from '../mcp/defaults.js';

interface ServeOptions {
  json?: boolean;
  stdio?: boolean;
  port?: string;
  host?: string;
  allowRemote?: boolean;
  idleTimeout: string;
  maxSessions: string;
  rateLimit?: string;
  tokenFile?: string;
  tools?: string;
  profile?: string;
  search?: boolean;
  services?: boolean;
  /** `--no-server`: with --stdio, a kernel of its own even when memo serve runs on this data folder. */
  server?: boolean;
}

/** Clients known to use only so many tools of a server: the banner warns when a profile holds more. */
const CLIENT_TOOL_CAPS: ReadonlyArray<{ client: string; cap: number; what: string }> = [
  { client: 'Cursor', cap: 40, what: 'warns above about 40 tools and leaves the rest out' },
  { client: 'VS Code (Copilot)', cap: 128, what: 'sends at most 128 tools per request' },
];

/** The profile of this run from --tools / --profile / --search and the stored profiles; a bad choice is a usage error. */
async function serveProfile(opts: ServeOptions, dataDir: string): Promise<McpProfile> {
  try {
    return chooseProfile(
      {
        ...(opts.tools !== undefined ? { tools: opts.tools } : {}),
        ...(opts.profile !== undefined ? { profile: opts.profile } : {}),
        search: opts.search === true,
      },
      (await storedSettings(dataDir)).mcpProfiles ?? {},
    );
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/** The serve arguments that choose the profile, for the stdio config the banner prints (it serves the same tools). */
function profileArgs(opts: ServeOptions): string[] {
  return [
    ...(opts.tools !== undefined ? ['--tools', opts.tools] : []),
    ...(opts.profile !== undefined ? ['--profile', opts.profile] : []),
    ...(opts.search ? ['--search'] : []),
  ];
}

/** What the banner says of the profile: how many tools each config serves, and which clients would cap them. */
function profileText(profile: McpProfile, kernel: Kernel): string {
  const count = profileTools(profile, kernel.registry).length;
  const listed = profile.search ? 1 : count;
  const caps = CLIENT_TOOL_CAPS.filter((c) => listed > c.cap).map(
    (c) =>
      `  warning: ${c.client} ${c.what}; this profile lists ${listed}. For it, serve only the packs and tools it needs (--tools a,b) or add --search (it is listed find_tools, then what it finds).\n`,
  );
  return `\nTools served: ${describeProfile(profile, kernel.registry)}. Every config below serves these${profile.search ? '' : ` ${count}`}.\n${caps.join('')}`;
}

/** The bearer token in `--token-file`: one line of at least 32 printable characters, no spaces. Errors never show it. */
function readTokenFile(file: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8').trim();
  } catch (err) {
    throw new UsageError(`--token-file ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if (!/^[\x21-\x7e]{32,}$/.test(text)) throw new UsageError(`--token-file ${file} must hold one token of at least 32 printable characters and no spaces`);
  return text;
}

/**
 * The rate limit of this run: `--rate-limit off|N` when given, else `memo settings rate-limit`
 * (data/settings.json, or the shared database's), else the defaults. `source` names where it came from, for the warning.
 */
async function serveRateLimit(value: string | undefined, dataDir: string): Promise<{ setting: RateLimitSetting | undefined; source: string }> {
  if (value !== undefined) return { setting: parseRateLimit(value, '--rate-limit'), source: '--rate-limit off' };
  return { setting: (await storedSettings(dataDir)).rateLimit, source: 'memo settings rate-limit off' };
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

/** Who answers a permission request in memo serve: nobody at its own terminal (it is a daemon), so requests wait. */
const WAITING = `Permission requests wait for \`memo approvals\` (or a host/console) up to ${DEFAULT_APPROVAL_WAIT_MS / 60_000} minutes: memo approvals list --watch, memo approvals answer <id> <answer>.`;

/** bin/memo of this installation, when the compiled CLI runs from it (dist/kernel/cli/ is three levels down). */
function memoBin(): string | undefined {
  const bin = fileURLToPath(new URL('../../../bin/memo', import.meta.url));
  return existsSync(bin) ? bin : undefined;
}

/**
 * What memo serve prints for a person: first the stdio config for desktop clients (it starts its own
 * memo, or joins this one while it runs, and needs no token), then the URL, the token and the HTTP configs.
 */
function serveBanner(
  url: string,
  token: string,
  remote: boolean,
  place: { root: string; data: string; folders: string[]; fixedPort: boolean; profile: string[] },
): string {
  const bin = memoBin();
  // The same folders as this server's, so a client started while it runs joins it.
  const serveArgs = ['serve', '--stdio', '--root', place.root, '--data', place.data, ...place.folders, ...place.profile];
  // Absolute node and bin/memo: desktop apps often start servers without the shell's PATH.
  const stdio = { mcpServers: { memo: bin ? { command: process.execPath, args: [bin, ...serveArgs] } : { command: 'memo', args: serveArgs } } };
  const http = { mcpServers: { memo: { type: 'http', url, headers: { Authorization: `Bearer ${token}` } } } };
  const viaRemote = {
    mcpServers: { memo: { command: 'npx', args: ['-y', 'mcp-remote', url, '--header', 'Authorization:${MEMO_AUTH}'], env: { MEMO_AUTH: `Bearer ${token}` } } },
  };
  return (
    `\nDesktop clients (Claude Desktop, Cursor, ...): run memo over stdio. This config needs no token. While this memo serve runs, the client joins it (one approvals inbox, one audit trail); otherwise it runs a kernel of its own:\n${JSON.stringify(stdio, null, 2)}\n` +
    (bin ? `(With memo on the client's PATH, "command": "memo" and the args after the script path do the same.)\n` : '') +
    `\nMCP endpoint (Streamable HTTP, ${remote ? 'REMOTE ACCESS ALLOWED' : 'loopback only'})\n  url:   ${url}\n  token: ${token}\n` +
    `The token changes every time memo serve starts${place.fixedPort ? '' : ', and so does the URL: pass --port N to keep the URL (the token still changes)'}.\n` +
    `\nHTTP client config (Cursor, Claude Code, and VS Code under "servers" instead of "mcpServers"):\n${JSON.stringify(http, null, 2)}\n` +
    `\nStdio-only clients through mcp-remote, to this running server:\n${JSON.stringify(viaRemote, null, 2)}\n` +
    `\nExternal clients may run read tools only. ${WAITING}\nRotate the token with ${rotateCommand(place.data)} (or kill -HUP ${process.pid}, or POST ${url}/rotate-token with the token).\nStop with Ctrl-C.\n`
  );
}

/** `memo serve rotate-token`, with `--data` when the data folder is not the default one of the current folder. */
function rotateCommand(data: string): string {
  return path.resolve('data') === path.resolve(data) ? 'memo serve rotate-token' : `memo --data ${JSON.stringify(data)} serve rotate-token`;
}

/** The built-in pack that serves the web console under /ui (plugins/console); an administrator may disable it. */
const CONSOLE_PACK = 'console';

/** What serve prints where it runs after a rotation (by any face), and `memo serve rotate-token` after its own. */
function rotatedText(token: string, consoleLink: string | null): string {
  const link = consoleLink
    ? `New web console link (works once): ${consoleLink}`
    : `No web console link: the ${CONSOLE_PACK} pack is disabled or did not load (memo plugins list says which).`;
  return `Token rotated; the old one no longer works. New token: ${token}\n${link}\n`;
}

/** Why memo serve serves no web console: the console pack is disabled, did not load, or is not there. */
function consoleOff(kernel: Kernel): string {
  const state = kernel.packs.get(CONSOLE_PACK);
  if (!state) return `the ${CONSOLE_PACK} pack is not installed`;
  if (state.status === 'failed') return `the ${CONSOLE_PACK} pack did not load (${state.error ?? 'see memo plugins list'})`;
  return `the ${CONSOLE_PACK} pack is disabled; memo plugins enable ${CONSOLE_PACK} turns it on, and memo serve prints its link then`;
}

/**
 * `memo serve rotate-token`: asks the memo serve on this data folder, through its control socket, to
 * rotate its MCP token. The server writes the admin line `token.rotate` by `cli` first (and refuses,
 * token unchanged, when it cannot: AUDIT_UNAVAILABLE), then rotates; this prints the new token and
 * the new one-time console link. `serve` parses its own options before handing over (commander), so
 * `--json` given here lands there; any other option of serve's is a mistake, refused before anything.
 */
async function rotateToken(cli: Cli, serve: Command, opts: { json?: boolean }): Promise<void> {
  const others = serve.options
    .filter((o) => o.attributeName() !== 'json' && serve.getOptionValueSource(o.attributeName()) === 'cli')
    .map((o) => o.long ?? o.flags);
  if (others.length > 0)
    throw new UsageError(
      `memo serve rotate-token takes only --json (and the global options); ${others.join(', ')} ${others.length > 1 ? 'are' : 'is'} for starting memo serve`,
    );
  const json = opts.json === true || serve.opts<ServeOptions>().json === true;
  const dataDir = cli.dataDir();
  const reach = await reachServer({ dataDir });
  if (reach === null)
    throw new NotFound(
      `no memo serve runs on the data folder ${dataDir}, so there is no MCP token to rotate (the token belongs to a running memo serve: pass its --data, or start one with memo serve)`,
    );
  if ('skipped' in reach) throw new NotFound(`cannot reach the memo serve on ${dataDir}: ${reach.skipped}`);
  const conn = reach.server;
  let rotated: RotatedToken;
  try {
    rotated = (await conn.request('serve.rotate-token')) as RotatedToken;
  } catch (err) {
    if (err instanceof ControlFailure && err.code === 'BAD_REQUEST')
      throw new NotFound(`the running server (pid ${conn.pid}) is an older memo that cannot rotate its token this way: use kill -HUP ${conn.pid}`);
    if (err instanceof ControlFailure && err.code !== 'DISCONNECTED') throw new NotFound(`${err.message} (${err.code})`);
    throw new NotFound(`the running server (pid ${conn.pid}) did not answer (${(err as Error).message}); the token may or may not have been rotated`);
  }
  if (json) return print({ ...rotated, pid: conn.pid });
  process.stdout.write(`memo serve (pid ${conn.pid}, ${rotated.url}): ${rotatedText(rotated.token, rotated.console)}`);
}

/**
 * `memo console link`: a new one-time login link for the web console from the memo serve on this
 * data folder (through its control socket), the MCP token untouched, so connected clients go on. The
 * server writes the admin line `console.link` by `cli` first. Person-only: the command judge blocks
 * it from every tool, in any spelling.
 */
async function consoleLinkCommand(cli: Cli, opts: { json?: boolean }): Promise<void> {
  const dataDir = cli.dataDir();
  const reach = await reachServer({ dataDir });
  if (reach === null)
    throw new NotFound(`no memo serve runs on the data folder ${dataDir}: the web console is served by memo serve (start it, or pass its --data)`);
  if ('skipped' in reach) throw new NotFound(`cannot reach the memo serve on ${dataDir}: ${reach.skipped}`);
  const conn = reach.server;
  let made: { console: string };
  try {
    made = (await conn.request('console.link')) as { console: string };
  } catch (err) {
    if (err instanceof ControlFailure && err.code === 'BAD_REQUEST')
      throw new NotFound(
        `the running server (pid ${conn.pid}) is an older memo without memo console link: kill -HUP ${conn.pid} prints a link (and rotates the MCP token)`,
      );
    if (err instanceof ControlFailure && err.code !== 'DISCONNECTED') throw new NotFound(`${err.message} (${err.code})`);
    throw new NotFound(`the running server (pid ${conn.pid}) did not answer (${(err as Error).message})`);
  }
  if (opts.json) return print({ console: made.console, pid: conn.pid });
  process.stdout.write(`Web console link for memo serve (pid ${conn.pid}); open it in a browser on this machine, it works once:\n  ${made.console}\n`);
}

export function registerConsoleCommand(program: Command, cli: Cli): void {
  program
    .command('console')
    .description('the web console memo serve serves')
    .command('link')
    .option('--json', 'print {"console","pid"}')
    .description('print a new one-time login link from the running memo serve (the MCP token and its clients are not touched)')
    .action(async (opts: { json?: boolean }) => consoleLinkCommand(cli, opts));
}

export function registerServeCommand(program: Command, cli: Cli): void {
  const serve = program
    .command('serve')
    .description('run the kernel with the default packs and serve its tools over MCP (Streamable HTTP on loopback, or --stdio) until stopped')
    .option('--json', 'print one JSON line {"url","token","pid",...} for supervisors instead of text (and a new line after each rotation)')
    .option('--stdio', 'serve MCP over stdin/stdout instead of HTTP (logs go to stderr; stdout carries only the protocol)')
    .option(
      '--services',
      "with --stdio: also run the packs' long-running services (routines scheduler, WhatsApp connection, calendar sync), as memo serve over HTTP always does",
    )
    .option('--port <n>', 'HTTP port (default: a random free port)')
    .option('--host <addr>', 'interface to bind (default 127.0.0.1; anything else needs --allow-remote)')
    .option('--allow-remote', 'allow binding to a non-loopback interface (the token then crosses the network in clear text)')
    .option('--idle-timeout <seconds>', 'close an MCP session after this long without requests', String(DEFAULT_IDLE_TIMEOUT_MS / 1000))
    .option(
      '--max-sessions <n>',
      'most MCP sessions at once; past it the longest-idle one is closed (503 only when all are running a call)',
      String(DEFAULT_MAX_SESSIONS),
    )
    .option(
      '--rate-limit <off|n>',
      'tool calls per minute for each caller, or off for no limits at all (default: memo settings rate-limit, else 30 per caller and 300 machine-wide)',
    )
    .option('--tools <list>', 'serve only these packs and tools, comma-separated (--tools vault: the vault pack; vault,read_file); others are UNKNOWN_TOOL')
    .option('--profile <name>', 'serve a named profile: all (default), vault, files, search, or one of memo settings profile')
    .option('--search', 'tool-search mode: clients are listed find_tools, and the tools they find with it join their list (tools/list_changed)')
    .option(
      '--token-file <path>',
      'take the HTTP bearer token from this file instead of a random one (instances behind one proxy share it; 32+ characters; a rotation re-reads it)',
    )
    .addOption(
      new Option(
        '--no-server',
        'with --stdio: run a kernel of its own even when memo serve runs on this data folder (by default the stdio client joins it: one kernel, one approvals inbox)',
      ),
    )
    .action(async (opts: ServeOptions) => {
      // One kernel per data folder: beside a running memo serve, a stdio server is a front for it.
      // (bin/memo tries this before loading the CLI; here for the spellings it leaves to the CLI.)
      if (opts.stdio && opts.server !== false) {
        const capability = process.env[CAPABILITY_ENV];
        try {
          const code = await joinServer(cliPlace(cli.g()), {
            ...(opts.tools !== undefined ? { tools: opts.tools } : {}),
            ...(opts.profile !== undefined ? { profile: opts.profile } : {}),
            ...(opts.search ? { search: true } : {}),
            ...(capability ? { capability } : {}),
          });
          if (code !== null) return cli.setExit(code);
        } catch (err) {
          if (err instanceof FrontUsage) throw new UsageError(err.message);
          throw err;
        }
      }
      const { McpHttpEndpoint } = await import('../mcp/mcp-http-server.js');
      const { McpStdioServer, reserveStdoutForProtocol, takeWriteCapabilityFromEnv } = await import('../mcp/mcp-stdio.js');
      // Read once, then gone from the environment: nothing the kernel spawns inherits it.
      const capability = takeWriteCapabilityFromEnv();
      const endpointOptions = serveEndpointOptions(opts);
      // Read now, so a bad file is a usage error before anything boots; a rotation reads it again.
      let fileToken = opts.tokenFile === undefined ? undefined : readTokenFile(opts.tokenFile);
      const rate = await serveRateLimit(opts.rateLimit, cli.dataDir());
      const profile = await serveProfile(opts, cli.dataDir());
      const rateLimits = rate.setting === undefined ? undefined : rateLimitOptions(rate.setting);
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
      let control: ControlServer | null = null;
      const served: Disposable[] = [];
      try {
        // No face of its own: a request (from an MCP client, a routine, a pack service) waits in the
        // broker for memo approvals, the console or a host, up to 30 minutes (then APPROVAL_EXPIRED).
        kernel = await cli.boot(null, false, rateLimits);
        const profiled = servesEverything(profile) ? {} : { profile };
        // A stdio client is served as soon as the tools are known: what follows (checks, watchers, the
        // control socket) is not on its way to the first tools/list (the bench's stdio launch).
        const stdio = opts.stdio ? new McpStdioServer(kernel, { stdout: stdout!, logger, ...profiled, ...(capability ? { capability } : {}) }) : undefined;
        await stdio?.start();
        // A damaged conversations file stops chats only: said once here, and by each conversation operation it refuses.
        const conversations = await kernel.conversations.check?.();
        if (conversations?.state === 'damaged') logger.error(conversations.detail);
        else if (conversations?.state === 'unchecked') logger.warn(conversations.detail);
        // One line on what stands under commands: the OS sandbox, or why not and what happens instead.
        const sandbox = await osSandboxStatus();
        const sandboxLine = describeSandbox(sandbox, kernel.config.sandboxFallback ?? 'refuse');
        if (sandbox.available) logger.info(sandboxLine);
        else logger.warn(sandboxLine);
        if (rate.setting === 'off') logger.warn(`rate limits are off (${rate.source}): no caller and no machine-wide ceiling limits tool calls`);
        await kernel.watch();
        // Pack services (schedulers, sockets, sync loops) run for as long as serve does; a stdio server,
        // which a desktop client starts and stops with itself, runs them only when told to.
        if (!opts.stdio || opts.services) await kernel.start();
        else logger.info('pack services (routines scheduler, WhatsApp connection, calendar sync) are not started over stdio; --services starts them');
        // Before the ready line: from then on, CLI commands on this data folder reach this kernel.
        control = await ControlServer.start({
          kernel,
          packFolders: cli.packFolders().map((f) => f.dir),
          skillFolders: cli.skillFolders().map((f) => f.dir),
          logger,
        });
        if (!control) logger.warn('memo approvals cannot reach this server (no control socket): its permission requests wait for a console or a host app only');
        if (opts.stdio) control?.setTokenRotation({ none: `this memo serve (pid ${process.pid}) serves MCP over stdio, which has no token to rotate` });
        const unknown = unknownEntries(profile, kernel.registry);
        if (unknown.length)
          logger.warn(
            `profile ${profile.name}: ${unknown.map((e) => `"${e}"`).join(', ')} ${unknown.length === 1 ? 'names' : 'name'} no loaded pack or tool (memo plugins list); served if a pack of that name loads`,
          );
        const toolCount = profileTools(profile, kernel.registry).length;
        if (stdio) {
          logger.info(`serving ${toolCount} tools over MCP stdio (pid ${process.pid}): ${describeProfile(profile, kernel.registry)}`);
          // Without a socket nobody can watch this process's requests: the warning above says so, and nothing contradicts it.
          if (control) logger.info(WAITING);
          await Promise.race([stopped, stdio.closed]);
          await stdio.close();
          return;
        }
        const tokenFile = opts.tokenFile;
        const token =
          tokenFile === undefined
            ? undefined
            : () => {
                try {
                  fileToken = readTokenFile(tokenFile);
                } catch (err) {
                  logger.error(`${(err as Error).message}: the token stays the one read before`);
                }
                return fileToken!;
              };
        // The packs' routes (the console pack's /ui) on the same port, behind the same Host/Origin checks, each with its own login.
        const k0 = kernel;
        endpoint = new McpHttpEndpoint(kernel, {
          ...endpointOptions,
          logger,
          mounts: [kernel.http],
          ...profiled,
          // Per-client tokens (memo serve token add), read live from the settings.
          clients: clientTokenLookup(() => k0.settings.read()),
          ...(token ? { token } : {}),
        });
        try {
          await endpoint.start();
        } catch (err) {
          throw new NotFound(
            `cannot listen on ${endpointOptions.host}:${endpointOptions.port ?? 0} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
          );
        }
        const ep = endpoint;
        const k = kernel;
        const remote = !isLoopbackAddress(endpointOptions.host);
        if (remote)
          logger.warn(
            `the MCP endpoint listens on ${endpointOptions.host} (--allow-remote): anyone who can reach it with the token can use the read tools, and plain HTTP does not protect the token in transit`,
          );
        // Each call makes a new one-time console login link (the previous link stops working); null while the console pack is off.
        const consoleLink = () => k.http.link(CONSOLE_PACK) ?? null;
        const consoleText = (link: string | null) =>
          link
            ? `\nWeb console (approvals, chat, administration): open this link in a browser on this machine; it works once (memo console link prints a new one):\n  ${link}\n`
            : `\nWeb console: off (${consoleOff(k)}).\n`;
        const info = (link = consoleLink()) => ({
          url: ep.url,
          token: ep.token,
          console: link,
          pid: process.pid,
          root: k.config.root,
          data: k.config.dataDir,
          tools: profileTools(profile, k.registry).length,
          profile: profile.name,
          ...(profile.search ? { search: true } : {}),
        });
        // Rotates and prints the new token here, where memo serve runs; the face that asked has written its admin line already.
        const rotated = (): RotatedToken => {
          ep.rotateToken();
          const link = consoleLink();
          if (opts.json) print(info(link));
          else process.stdout.write(rotatedText(ep.token, link));
          return { url: ep.url, token: ep.token, console: link };
        };
        // SIGHUP: on the audit trail first, by `signal`; a rotation whose line cannot be written is not made.
        onRotate = () => {
          k.admin
            .record({ action: 'token.rotate', by: 'signal' })
            .then(() => void rotated())
            .catch((err: unknown) => logger.error(`SIGHUP: the MCP token was not rotated (it is unchanged): ${(err as Error)?.message ?? String(err)}`));
        };
        // The console's rotation (through the administration view) and memo serve rotate-token (the control socket) record their own lines first.
        served.push(k.http.attach({ url: () => ep.url, rotateToken: () => void rotated(), agentAccess: () => ({ url: ep.url, token: ep.token }) }));
        control?.setTokenRotation({ rotate: rotated });
        if (opts.json) print(info());
        else {
          const names = kernel.packs
            .list()
            .map((p) => `${p.id}${p.status === 'failed' ? ' (skipped)' : p.enabled ? '' : ' (disabled)'}`)
            .join(', ');
          process.stdout.write(
            `Memo kernel running (pid ${process.pid})\n  root:  ${kernel.config.root}\n  data:  ${kernel.config.dataDir}\n  packs: ${names || 'none'} (watching ${cli
              .packFolders()
              .map((f) => f.dir)
              .join(', ')})\n  tools: ${toolCount}\n` +
              profileText(profile, kernel) +
              serveBanner(ep.url, ep.token, remote, {
                root: kernel.config.root,
                data: kernel.config.dataDir,
                // Pack and skill folders given on the command line (absolute: a desktop app starts in another folder).
                folders: [
                  ...(cli.g().packs !== undefined ? ['--packs', path.resolve(cli.g().packs!)] : []),
                  ...(cli.g().skills !== undefined ? ['--skills', path.resolve(cli.g().skills!)] : []),
                ],
                fixedPort: !!endpointOptions.port,
                profile: profileArgs(opts),
              }) +
              consoleText(consoleLink()),
          );
        }
        // The console pack disabled or enabled while serving (memo plugins, the console itself): said here; enabled, with a new link.
        served.push(
          k.registry.onChange((change) => {
            if (change.pack !== CONSOLE_PACK || (change.kind !== 'enabled' && change.kind !== 'disabled')) return;
            const link = consoleLink();
            if (opts.json) print(info(link));
            else if (link) process.stdout.write(`\nThe web console is on again.${consoleText(link)}`);
            else process.stdout.write(`\nThe web console is off: ${consoleOff(k)}.\n`);
          }),
        );
        await stopped;
      } finally {
        process.off('SIGHUP', onHup);
        clearInterval(keepAlive);
        for (const d of served.splice(0).reverse()) d.dispose();
        // Closing the endpoint closes its mounts: chat turns the console started are stopped and stored before the kernel closes their store.
        await endpoint?.close();
        // The socket goes first, so no CLI command reaches a kernel that is shutting down.
        await control?.close();
        await kernel?.shutdown();
        // Everything is closed or was abandoned by shutdown (a database that stopped answering):
        // a connection still open must not keep the process alive. A clean stop exits before this fires.
        setTimeout(() => process.exit(process.exitCode ?? 0), 2_000).unref();
      }
    });
  serve
    .command('rotate-token')
    .description(
      'rotate the MCP token of the memo serve running on this data folder, through its control socket: the old token stops working at once; prints the new one and a new one-time web console link (written to the audit trail first, as token.rotate by cli)',
    )
    .option('--json', 'print {"url","token","console","pid"} as JSON')
    .action((opts: { json?: boolean }) => rotateToken(cli, serve, opts));
  registerServeTokenCommands(serve, cli);
}
