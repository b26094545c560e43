/**
 * The administrator's settings for `memo serve` (`memo settings`): `data/settings.json` (mode 0600,
 * atomic, the data folder's: no tool reaches it), or, with MEMO_DATABASE_URL, memo_kernel's rows in
 * the shared database, which every instance reads.
 */
import * as path from 'node:path';
import { StderrLogger, type Logger } from '../logger.js';
import { JsonFileStore } from '../util/json-file-store.js';
import type { KernelStateDb, RemoteChange, ReplicatedView } from '../storage/kernel-state-db.js';
import { isRateLimit, isSandboxSetting, settingsTable, settingsWrites } from './kernel-state-tables.js';
import { isProfiles, isTokens } from '../util/mcp-settings.js';
import type { McpProfileSetting, McpTokenSetting, RateLimitSetting, SandboxSetting, Settings } from './shapes.js';

export type { McpProfileSetting, McpTokenSetting, RateLimitSetting, SandboxSetting, Settings };

/** The settings: `data/settings.json`, or (with a shared database, `db`) memo_kernel's rows, read from memory and written through. */
export class SettingsStore {
  private readonly store: JsonFileStore<Settings> | null = null;
  private readonly shared: ReplicatedView<Settings> | null = null;

  constructor(
    dataDir: string,
    logger: Logger = new StderrLogger(),
    private readonly db?: KernelStateDb,
  ) {
    if (db) {
      this.shared = db.view(settingsTable);
      return;
    }
    this.store = new JsonFileStore<Settings>({
      file: path.join(dataDir, 'settings.json'),
      logger,
      empty: () => ({}),
      parse: (json) => {
        if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new Error('is not a JSON object');
        const { rateLimit, sandbox, mcpProfiles, mcpTokens } = json as Record<string, unknown>;
        if (rateLimit !== undefined && !isRateLimit(rateLimit)) throw new Error('has a "rateLimit" that is neither "off" nor a whole number of at least 1');
        if (sandbox !== undefined && !isSandboxSetting(sandbox)) throw new Error('has a "sandbox" that is neither "refuse" nor "judged"');
        if (mcpProfiles !== undefined && !isProfiles(mcpProfiles))
          throw new Error(
            'has "mcpProfiles" that are not well-formed (each a name of lowercase letters, digits and dashes, with "tools": a list of pack ids and tool names)',
          );
        if (mcpTokens !== undefined && !isTokens(mcpTokens))
          throw new Error('has "mcpTokens" that are not well-formed (each a client name with "digest", "created" and an optional "profile")');
        return {
          ...(mcpTokens === undefined ? {} : { mcpTokens }),
          ...(rateLimit === undefined ? {} : { rateLimit }),
          ...(sandbox === undefined ? {} : { sandbox }),
          ...(mcpProfiles === undefined ? {} : { mcpProfiles }),
        };
      },
      whileUnusable: 'the default rate limits apply, and commands are refused where the OS sandbox cannot start',
    });
  }

  /** Why the file could not be used, if it could not. */
  get problem(): string | null {
    return this.store ? this.store.problem : null;
  }

  ready(): Promise<void> {
    return this.db ? this.db.ready() : Promise.resolve();
  }

  saved(): Promise<void> {
    return this.shared ? this.shared.saved() : Promise.resolve();
  }

  read(): Settings {
    return structuredClone(this.shared ? this.shared.read() : this.store!.read());
  }

  /** A rate limit, or the default (undefined). */
  setRateLimit(setting: RateLimitSetting | undefined): void {
    const local = (s: Settings) => {
      if (setting === undefined) delete s.rateLimit;
      else s.rateLimit = setting;
    };
    if (this.shared) this.shared.change(local, settingsWrites.rateLimit(setting));
    else this.store!.update(local);
  }

  /** Adds or replaces a named MCP profile (`profile` given), or removes it (undefined). */
  setProfile(name: string, profile: McpProfileSetting | undefined): void {
    this.setEntry('mcpProfiles', name, profile, settingsWrites.mcpProfiles);
  }

  /** Adds or replaces a client's MCP token (its digest), or removes it (undefined). */
  setToken(name: string, token: McpTokenSetting | undefined): void {
    this.setEntry('mcpTokens', name, token, settingsWrites.mcpTokens);
  }

  /** One entry of a map-valued setting, added, replaced or removed; an empty map is no setting. */
  private setEntry<K extends 'mcpProfiles' | 'mcpTokens', V extends NonNullable<Settings[K]>[string]>(
    key: K,
    name: string,
    value: V | undefined,
    write: (all: Record<string, V>) => RemoteChange,
  ): void {
    const next = (s: Settings) => {
      const all = { ...((s[key] ?? {}) as Record<string, V>) };
      if (value === undefined) delete all[name];
      else all[name] = value;
      return all;
    };
    const local = (s: Settings) => {
      const all = next(s);
      if (Object.keys(all).length === 0) delete s[key];
      else (s as Record<string, unknown>)[key] = all;
    };
    if (this.shared) this.shared.change(local, write(next(this.shared.read())));
    else this.store!.update(local);
  }

  /** What commands do where the OS sandbox cannot start; undefined: the default (refuse). */
  setSandbox(setting: SandboxSetting | undefined): void {
    const local = (s: Settings) => {
      if (setting === undefined) delete s.sandbox;
      else s.sandbox = setting;
    };
    if (this.shared) this.shared.change(local, settingsWrites.sandbox(setting));
    else this.store!.update(local);
  }
}
