import { MemoError } from '../errors.js';
import { StderrLogger, type Logger } from '../logger.js';
import type { KernelStateDb, RemoteChange, ReplicatedView } from '../storage/kernel-state-db.js';
import { isAccessMode, providersTable, providerWrites } from '../state/kernel-state-tables.js';
import type { AccessMode } from '../tools/contract.js';
import { JsonFileStore } from '../util/json-file-store.js';
import type { ProviderConfig } from './provider.js';
import type { ProviderShape } from '../state/shapes.js';

export type { ProviderShape };

const NAME = /^[a-z0-9]+(?:[-_][a-z0-9]+)*$/;

/**
 * Provider configurations in `data/providers.json`, a JsonFileStore (mode 0600, written atomically,
 * re-read when it changes). API keys are preferably named environment variables; a stored key never
 * leaves this file except to the provider itself, and every listing masks it. An unreadable file is
 * reported (never quoted: it may hold keys) and treated as "no providers"; the next change moves it aside.
 *
 * With a shared database (`db`: MEMO_DATABASE_URL) the configurations are rows of memo_kernel, read
 * from a view in memory and written through (kernel-state-db.ts); a stored key (and header values)
 * is sealed with `data/kernel.key` before it reaches the database, which every instance then needs.
 */
export class ProviderSettings {
  private readonly store: JsonFileStore<ProviderShape> | null = null;
  private readonly shared: ReplicatedView<ProviderShape> | null = null;

  constructor(
    readonly file: string,
    logger: Logger = new StderrLogger(),
    private readonly db?: KernelStateDb,
  ) {
    if (db) {
      this.shared = db.view(providersTable);
      return;
    }
    this.store = new JsonFileStore<ProviderShape>({
      file,
      logger,
      empty: () => ({ version: 1, active: null, providers: Object.create(null) as Record<string, ProviderConfig> }),
      parse: (json) => {
        const parsed = json as Partial<ProviderShape> | null;
        if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('is not a JSON object');
        const providers = parsed.providers ?? {};
        if (typeof providers !== 'object' || Array.isArray(providers)) throw new Error('has a "providers" entry that is not an object');
        const active = typeof parsed.active === 'string' ? parsed.active : null;
        if (parsed.mode !== undefined && !isAccessMode(parsed.mode)) throw new Error('has a "mode" that is not vault, computer or web');
        const mode = parsed.mode === undefined ? {} : { mode: parsed.mode };
        return { version: 1, active, providers: Object.assign(Object.create(null) as Record<string, ProviderConfig>, providers), ...mode };
      },
      whileUnusable: 'no provider is configured',
    });
  }

  /** Bumped whenever the configurations held in memory change (a save here, or a reload of the file). Read-only. */
  get version(): number {
    return this.shared ? this.shared.version : this.store!.version;
  }

  /** Why the file could not be used, if it could not. */
  get problem(): string | null {
    return this.store ? this.store.problem : null;
  }

  /** Resolves once the configurations can be read (at once for the file; the first read of the database). */
  ready(): Promise<void> {
    return this.db ? this.db.ready() : Promise.resolve();
  }

  /** Resolves once every change made here is saved (at once for the file); rejects saying why one was not. */
  saved(): Promise<void> {
    return this.shared ? this.shared.saved() : Promise.resolve();
  }

  private get data(): ProviderShape {
    return this.shared ? this.shared.read() : this.store!.read();
  }

  private change(local: (data: ProviderShape) => void, remote: RemoteChange): void {
    if (this.shared) return this.shared.change(local, remote);
    this.store!.update(local);
  }

  list(): ProviderConfig[] {
    return Object.values(this.data.providers).sort((a, b) => a.name.localeCompare(b.name));
  }

  get(name: string): ProviderConfig | undefined {
    return this.data.providers[name];
  }

  active(): ProviderConfig | undefined {
    const data = this.data;
    return data.active ? data.providers[data.active] : undefined;
  }

  /** The access mode a chat turn uses unless one is chosen (`computer` until one is stored). */
  defaultMode(): AccessMode {
    return this.data.mode ?? 'computer';
  }

  /** Stores the access mode chats use unless one is chosen. */
  setDefaultMode(mode: AccessMode): void {
    if (!isAccessMode(mode)) throw new MemoError('VALIDATION', `The access mode must be vault, computer or web (not ${JSON.stringify(mode)}).`);
    this.change((data) => void (data.mode = mode), providerWrites.mode(mode));
  }

  /** Adds or replaces a configuration; the first one becomes active. */
  put(config: ProviderConfig): void {
    if (!NAME.test(config.name)) throw new MemoError('VALIDATION', `Provider name "${config.name}" must be lowercase letters, digits, "-" or "_".`);
    if (config.apiKey && config.apiKeyEnv) throw new MemoError('VALIDATION', 'Give either an API key environment variable or a key, not both.');
    this.change((data) => {
      data.providers[config.name] = structuredClone(config);
      if (!data.active) data.active = config.name;
    }, providerWrites.put(config));
  }

  remove(name: string): boolean {
    if (!this.data.providers[name]) return false;
    this.change((data) => {
      delete data.providers[name];
      if (data.active === name) data.active = (this.shared ? Object.keys(data.providers).sort()[0] : Object.keys(data.providers)[0]) ?? null;
    }, providerWrites.remove(name));
    return true;
  }

  use(name: string): void {
    if (!this.data.providers[name]) throw new MemoError('NOT_FOUND', `There is no provider "${name}" (memo provider list).`);
    this.change((data) => void (data.active = name), providerWrites.use(name));
  }
}

/** The key a configuration resolves to now (env var first), or undefined. */
export function resolveApiKey(config: ProviderConfig, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (config.apiKeyEnv) return env[config.apiKeyEnv] || undefined;
  return config.apiKey || undefined;
}

/** A configuration safe to print: the key replaced by where it comes from. */
export function describeProvider(config: ProviderConfig, activeName?: string): Record<string, unknown> {
  const { apiKey, headers, ...rest } = config;
  return {
    ...rest,
    apiKey: apiKey ? '[stored, masked]' : config.apiKeyEnv ? `from $${config.apiKeyEnv}${process.env[config.apiKeyEnv] ? '' : ' (not set)'}` : 'none',
    ...(headers ? { headers: Object.fromEntries(Object.keys(headers).map((k) => [k, '[masked]'])) } : {}),
    active: config.name === activeName,
  };
}
