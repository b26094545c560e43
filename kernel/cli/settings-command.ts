/**
 * `memo settings [show] | rate-limit <off|N|default>`: the administrator's settings for `memo serve`,
 * in `data/settings.json` (mode 0600, atomic, the data folder's: no tool reaches it). Today one:
 * the rate limit every caller gets, or none at all. `memo serve --rate-limit` overrides it for one run.
 */
import * as path from 'node:path';
import type { Command } from 'commander';
import { StderrLogger, type Logger } from '../logger.js';
import { DEFAULT_RATE_LIMITS, NO_RATE_LIMITS, type RateLimitOptions } from '../rate-limit/rate-limiter.js';
import { JsonFileStore } from '../util/json-file-store.js';
import { print, UsageError, type Cli } from './context.js';

/** `off`, or calls per minute for each caller. */
export type RateLimitSetting = 'off' | number;

interface Settings {
  rateLimit?: RateLimitSetting;
}

function isRateLimit(value: unknown): value is RateLimitSetting {
  return value === 'off' || (typeof value === 'number' && Number.isInteger(value) && value >= 1);
}

export function settingsStore(dataDir: string, logger: Logger = new StderrLogger()): JsonFileStore<Settings> {
  return new JsonFileStore<Settings>({
    file: path.join(dataDir, 'settings.json'),
    logger,
    empty: () => ({}),
    parse: (json) => {
      if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new Error('is not a JSON object');
      const { rateLimit } = json as Record<string, unknown>;
      if (rateLimit !== undefined && !isRateLimit(rateLimit)) throw new Error('has a "rateLimit" that is neither "off" nor a whole number of at least 1');
      return rateLimit === undefined ? {} : { rateLimit };
    },
    whileUnusable: 'the default rate limits apply',
  });
}

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

function describe(setting: RateLimitSetting | undefined): string {
  if (setting === undefined)
    return `rate limit: default (${DEFAULT_RATE_LIMITS.maxCalls} calls per minute for each caller, ${DEFAULT_RATE_LIMITS.globalMaxCalls} machine-wide)`;
  if (setting === 'off') return 'rate limit: off (no caller and no machine-wide ceiling limits tool calls)';
  return `rate limit: ${setting} calls per minute for each caller, ${Math.max(DEFAULT_RATE_LIMITS.globalMaxCalls, setting)} machine-wide`;
}

export function registerSettingsCommands(program: Command, cli: Cli): void {
  const settings = program.command('settings').description('administrator settings for memo serve (data/settings.json): the rate limit');
  settings
    .command('show', { isDefault: true })
    .option('--json', 'print JSON')
    .description('print the settings')
    .action((opts: { json?: boolean }) => {
      const value = settingsStore(cli.dataDir()).read();
      if (opts.json) return print(value);
      process.stdout.write(`${describe(value.rateLimit)}\n`);
    });
  settings
    .command('rate-limit <value>')
    .description('tool calls per minute for each caller of memo serve (N), no limits at all (off), or the default (default); applies at the next start')
    .action((value: string) => {
      const store = settingsStore(cli.dataDir());
      const setting = value === 'default' ? undefined : parseRateLimit(value, 'the rate limit');
      store.update((s) => {
        if (setting === undefined) delete s.rateLimit;
        else s.rateLimit = setting;
      });
      process.stdout.write(`${describe(setting)}; memo serve applies it at its next start.\n`);
      if (setting === 'off') process.stderr.write('memo: warning: with the rate limit off, nothing limits how fast any caller can call tools.\n');
    });
}
