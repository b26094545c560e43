/**
 * `memo settings [show] | rate-limit <off|N|default>`: the administrator's settings for `memo serve`,
 * in `data/settings.json` (mode 0600, atomic, the data folder's: no tool reaches it), or, with
 * MEMO_DATABASE_URL, in the shared database's memo_kernel (every instance's). Today one:
 * the rate limit every caller gets, or none at all. `memo serve --rate-limit` overrides it for one run.
 */
import type { Command } from 'commander';
import { StderrLogger } from '../logger.js';
import { DEFAULT_RATE_LIMITS, NO_RATE_LIMITS, type RateLimitOptions } from '../rate-limit/rate-limiter.js';
import { withCommandStore } from '../state/command-store.js';
import { cliRecorded } from './admin-record.js';
import { SettingsStore, type RateLimitSetting, type SandboxSetting } from '../state/kernel-state-settings.js';
import { storedSettings } from '../state/command-store.js';
import { NotFound, print, UsageError, type Cli } from './context.js';
import { BUILTIN_PROFILES, parseToolList, PROFILE_NAME, type McpProfileSetting } from '../mcp/mcp-profile.js';

export type { RateLimitSetting } from '../state/kernel-state-settings.js';

/** `off` or a whole number of at least 1, as typed on the command line; a usage error otherwise. */
export function parseRateLimit(value: string, what: string): RateLimitSetting {
  if (value === 'off') return 'off';
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new UsageError(`${what} must be off or a whole number of calls per minute (at least 1)`);
  return Number(value);
}

/** The limiter's options for a setting: none at all, or N per caller under a machine-wide ceiling of at least 300. */
export function rateLimitOptions(setting: RateLimitSetting): Partial<RateLimitOptions> {
  if (setting === 'off') return NO_RATE_LIMITS;
  return { maxCalls: setting, globalMaxCalls: Math.max(DEFAULT_RATE_LIMITS.globalMaxCalls, setting) };
}

function describeSandboxSetting(setting: SandboxSetting | undefined): string {
  return setting === 'judged'
    ? 'sandbox: judged (where the OS sandbox cannot start, commands run with the command judge as the only wall)'
    : 'sandbox: refuse (where the OS sandbox cannot start, commands are refused; the default)';
}

function describe(setting: RateLimitSetting | undefined): string {
  if (setting === undefined)
    return `rate limit: default (${DEFAULT_RATE_LIMITS.maxCalls} calls per minute for each caller, ${DEFAULT_RATE_LIMITS.globalMaxCalls} machine-wide)`;
  if (setting === 'off') return 'rate limit: off (no caller and no machine-wide ceiling limits tool calls)';
  return `rate limit: ${setting} calls per minute for each caller, ${Math.max(DEFAULT_RATE_LIMITS.globalMaxCalls, setting)} machine-wide`;
}

function profileLine(name: string, p: McpProfileSetting, builtin = false): string {
  const what = p.tools.includes('*') ? 'every enabled tool' : p.tools.join(', ');
  return `  ${name}: ${what}${p.search ? ', tool search (find_tools, then what the client found)' : ''}${builtin ? ' (built in)' : ''}`;
}

function describeProfiles(stored: Record<string, McpProfileSetting> | undefined): string {
  const lines = [
    ...Object.entries(BUILTIN_PROFILES).map(([n, p]) => profileLine(n, p, true)),
    ...Object.entries(stored ?? {})
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([n, p]) => profileLine(n, p)),
  ];
  return `MCP profiles (memo serve --profile NAME):\n${lines.join('\n')}`;
}

/** `memo settings profile ...`: named MCP profiles, stored like the other settings and recorded as admin lines. */
function registerProfileCommands(settings: Command, cli: Cli): void {
  const profile = settings.command('profile').description('named MCP profiles: the tools memo serve --profile NAME serves');
  const save = async (name: string, value: McpProfileSetting | undefined) => {
    const logger = new StderrLogger();
    await cliRecorded(
      cli,
      { action: 'settings.profile', change: { profile: name, ...(value ? { tools: value.tools, search: value.search === true } : { removed: true }) } },
      () =>
        withCommandStore(
          cli.dataDir(),
          logger,
          (db) => new SettingsStore(cli.dataDir(), logger, db),
          (store) => store.setProfile(name, value),
        ),
    );
  };
  const checkName = (name: string) => {
    if (!PROFILE_NAME.test(name)) throw new UsageError('a profile name is 1 to 40 lowercase letters, digits and dashes, starting with a letter');
    if (BUILTIN_PROFILES[name]) throw new UsageError(`${name} is a built-in profile (${Object.keys(BUILTIN_PROFILES).join(', ')}); choose another name`);
  };
  profile
    .command('list', { isDefault: true })
    .option('--json', 'print JSON: {"builtin": {...}, "stored": {...}}')
    .description('the built-in and stored profiles')
    .action(async (opts: { json?: boolean }) => {
      const stored = (await storedSettings(cli.dataDir())).mcpProfiles ?? {};
      if (opts.json) return print({ builtin: BUILTIN_PROFILES, stored });
      process.stdout.write(`${describeProfiles(stored)}\n`);
    });
  profile
    .command('set <name>')
    .requiredOption('--tools <list>', 'pack ids and tool names, comma-separated (vault,read_file); * for every tool')
    .option('--search', 'tool-search mode: clients are listed find_tools and the tools they found with it')
    .description('add or replace a named profile; memo serve --profile NAME serves it from its next start')
    .action(async (name: string, opts: { tools: string; search?: boolean }) => {
      checkName(name);
      let tools: string[];
      try {
        tools = parseToolList(opts.tools, '--tools');
      } catch (err) {
        throw new UsageError((err as Error).message);
      }
      const value: McpProfileSetting = { tools, ...(opts.search ? { search: true } : {}) };
      await save(name, value);
      process.stdout.write(
        `profile ${name} saved:\n${profileLine(name, value)}\nmemo serve --profile ${name} serves it (a running memo serve keeps the profile it started with).\n`,
      );
    });
  profile
    .command('remove <name>')
    .description('remove a stored profile')
    .action(async (name: string) => {
      checkName(name);
      const stored = (await storedSettings(cli.dataDir())).mcpProfiles ?? {};
      if (!stored[name]) throw new NotFound(`there is no stored profile "${name}" (memo settings profile list)`);
      await save(name, undefined);
      process.stdout.write(`profile ${name} removed.\n`);
    });
}

export function registerSettingsCommands(program: Command, cli: Cli): void {
  const settings = program
    .command('settings')
    .description('administrator settings (data/settings.json): the rate limit of memo serve, and what commands do where the OS sandbox cannot start');
  settings
    .command('show', { isDefault: true })
    .option('--json', 'print JSON')
    .description('print the settings')
    .action(async (opts: { json?: boolean }) => {
      const value = await storedSettings(cli.dataDir());
      if (opts.json) return print(value);
      process.stdout.write(`${describe(value.rateLimit)}\n${describeSandboxSetting(value.sandbox)}\n${describeProfiles(value.mcpProfiles)}\n`);
    });
  registerProfileCommands(settings, cli);
  settings
    .command('sandbox <refuse|judged>')
    .description('where the OS sandbox (bubblewrap) cannot start: refuse commands (default), or run them judged only; applies at the next start')
    .action(async (value: string) => {
      if (value !== 'refuse' && value !== 'judged') throw new UsageError('the sandbox setting is refuse or judged');
      const logger = new StderrLogger();
      await cliRecorded(cli, { action: 'settings.sandbox', change: { sandbox: value } }, () =>
        withCommandStore(
          cli.dataDir(),
          logger,
          (db) => new SettingsStore(cli.dataDir(), logger, db),
          (store) => store.setSandbox(value === 'refuse' ? undefined : value),
        ),
      );
      process.stdout.write(`${describeSandboxSetting(value)}; memo serve applies it at its next start.\n`);
      if (value === 'judged')
        process.stderr.write(
          'memo: warning: where the OS sandbox cannot start, commands an agent runs will reach the data folder and the network with only the command judge in the way.\n',
        );
    });
  settings
    .command('rate-limit <value>')
    .description('tool calls per minute for each caller of memo serve (N), no limits at all (off), or the default (default); applies at the next start')
    .action(async (value: string) => {
      const setting = value === 'default' ? undefined : parseRateLimit(value, 'the rate limit');
      const logger = new StderrLogger();
      await cliRecorded(cli, { action: 'settings.rate-limit', change: { rateLimit: setting ?? 'default' } }, () =>
        withCommandStore(
          cli.dataDir(),
          logger,
          (db) => new SettingsStore(cli.dataDir(), logger, db),
          (store) => store.setRateLimit(setting),
        ),
      );
      process.stdout.write(`${describe(setting)}; memo serve applies it at its next start.\n`);
      if (setting === 'off') process.stderr.write('memo: warning: with the rate limit off, nothing limits how fast any caller can call tools.\n');
    });
}
