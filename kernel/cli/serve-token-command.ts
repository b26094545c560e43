/**
 * `memo serve token add NAME [--profile P] | list | remove NAME`: per-client MCP tokens. Each client
 * (Cursor, a script, a colleague's desktop) gets a token of its own, beside the one `memo serve`
 * prints: its calls are limited and audited as that token, whatever name the client declares; it is
 * served its profile; removing it refuses the client's next request. Only the token's SHA-256 is
 * stored (data/settings.json or the shared database); the token is printed once. Every change is an
 * admin line (`token.add`, `token.remove`) written first. A running memo serve reads them live.
 */
import type { Command } from 'commander';
import { StderrLogger } from '../logger.js';
import { newClientToken } from '../mcp/client-tokens.js';
import { chooseProfile, PROFILE_NAME } from '../mcp/mcp-profile.js';
import { storedSettings, withCommandStore } from '../state/command-store.js';
import { SettingsStore } from '../state/kernel-state-settings.js';
import type { McpTokenSetting } from '../state/shapes.js';
import { cliRecorded } from './admin-record.js';
import { NotFound, print, UsageError, type Cli } from './context.js';

function checkName(name: string): void {
  if (!PROFILE_NAME.test(name))
    throw new UsageError('a token name is 1 to 40 lowercase letters, digits and dashes, starting with a letter (cursor, laptop-script)');
}

async function save(cli: Cli, name: string, entry: McpTokenSetting | undefined): Promise<void> {
  const logger = new StderrLogger();
  await cliRecorded(
    cli,
    { action: entry ? 'token.add' : 'token.remove', target: name, ...(entry?.profile ? { change: { profile: entry.profile } } : {}) },
    () =>
      withCommandStore(
        cli.dataDir(),
        logger,
        (db) => new SettingsStore(cli.dataDir(), logger, db),
        (store) => store.setToken(name, entry),
      ),
  );
}

export function registerServeTokenCommands(serve: Command, cli: Cli): void {
  const token = serve
    .command('token')
    .description("per-client MCP tokens: each client its own token, rate budget, audit name and profile (memo serve's own token stays)");
  token
    .command('add <name>')
    .option(
      '--profile <name>',
      'the profile this client is served (all, vault, files, search, or one of memo settings profile); default: the one memo serve runs with',
    )
    .option('--json', 'print {"name","token","profile"}')
    .description('make a token for one client and print it once (only its digest is kept)')
    // `memo serve` has --profile and --json of its own, and commander gives them to it: read both levels.
    .action(async (name: string, _opts: unknown, command: Command) => {
      const opts = command.optsWithGlobals<{ profile?: string; json?: boolean }>();
      checkName(name);
      const settings = await storedSettings(cli.dataDir());
      if (settings.mcpTokens?.[name]) throw new UsageError(`there is a token named ${name} already: memo serve token remove ${name} first to replace it`);
      if (opts.profile !== undefined) {
        try {
          chooseProfile({ profile: opts.profile }, settings.mcpProfiles ?? {});
        } catch (err) {
          throw new UsageError((err as Error).message);
        }
      }
      const made = newClientToken();
      await save(cli, name, { digest: made.digest, ...(opts.profile !== undefined ? { profile: opts.profile } : {}), created: new Date().toISOString() });
      if (opts.json) return print({ name, token: made.token, profile: opts.profile ?? null });
      const config = { mcpServers: { memo: { type: 'http', url: 'http://127.0.0.1:PORT/mcp', headers: { Authorization: `Bearer ${made.token}` } } } };
      process.stdout.write(
        `Token for ${name} (${opts.profile ? `profile ${opts.profile}` : "memo serve's own profile"}):\n  ${made.token}\n` +
          `It is shown once: memo keeps only its digest. It works with every memo serve on this data folder, now and after restarts, until memo serve token remove ${name}.\n` +
          `HTTP client config (PORT: the one memo serve prints; pass memo serve --port N to keep it):\n${JSON.stringify(config, null, 2)}\n`,
      );
    });
  token
    .command('list')
    .option('--json', 'print [{"name","profile","created"}]')
    .description('the client tokens (names, profiles, when made; never the tokens)')
    .action(async (_opts: unknown, command: Command) => {
      const opts = command.optsWithGlobals<{ json?: boolean }>();
      const tokens = Object.entries((await storedSettings(cli.dataDir())).mcpTokens ?? {})
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([name, t]) => ({ name, profile: t.profile ?? null, created: t.created }));
      if (opts.json) return print(tokens);
      process.stdout.write(
        tokens.length
          ? `${tokens.map((t) => `${t.name}  ${t.profile ? `profile ${t.profile}` : "memo serve's profile"}  made ${t.created}`).join('\n')}\n`
          : 'No client tokens (memo serve token add NAME makes one).\n',
      );
    });
  token
    .command('remove <name>')
    .description("remove a client's token: its next request is refused, on any memo serve of this data folder")
    .action(async (name: string) => {
      checkName(name);
      if (!(await storedSettings(cli.dataDir())).mcpTokens?.[name]) throw new NotFound(`there is no client token named ${name} (memo serve token list)`);
      await save(cli, name, undefined);
      process.stdout.write(`Token ${name} removed: its next request is refused.\n`);
    });
}
