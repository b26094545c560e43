import * as fs from 'node:fs';
import { MemoError } from '../errors.js';
import { fileStamp, writeFileAtomic } from '../util/atomic-file.js';
import type { ProviderConfig } from './provider.js';

interface FileShape {
  version: 1;
  active: string | null;
  providers: Record<string, ProviderConfig>;
}

const NAME = /^[a-z0-9]+(?:[-_][a-z0-9]+)*$/;

/**
 * Provider configurations in `data/providers.json` (mode 0600, written atomically). API keys are
 * preferably named environment variables; a stored key never leaves this file except to the
 * provider itself, and every listing masks it.
 */
export class ProviderSettings {
  private data: FileShape = { version: 1, active: null, providers: {} };
  private stamp = '';
  private changes = 0;

  constructor(readonly file: string) {}

  /** Bumped whenever the configurations held in memory change (a save here, or a reload of the file). Read-only. */
  get version(): number {
    return this.changes;
  }

  private refresh(): void {
    const stamp = fileStamp(this.file);
    if (stamp === this.stamp) return;
    this.stamp = stamp;
    this.changes++;
    this.data = { version: 1, active: null, providers: {} };
    if (stamp === 'absent') return;
    let parsed: Partial<FileShape>;
    try {
      parsed = JSON.parse(fs.readFileSync(this.file, 'utf8')) as Partial<FileShape>;
    } catch (err) {
      throw new MemoError('VALIDATION', `${this.file} cannot be read as JSON (${(err as Error).message.split('\n')[0]}); fix or remove it.`);
    }
    this.data = { version: 1, active: parsed.active ?? null, providers: parsed.providers ?? {} };
  }

  private save(): void {
    writeFileAtomic(this.file, JSON.stringify(this.data, null, 2) + '\n', 0o600);
    this.stamp = fileStamp(this.file);
    this.changes++;
  }

  list(): ProviderConfig[] {
    this.refresh();
    return Object.values(this.data.providers).sort((a, b) => a.name.localeCompare(b.name));
  }

  get(name: string): ProviderConfig | undefined {
    this.refresh();
    return this.data.providers[name];
  }

  active(): ProviderConfig | undefined {
    this.refresh();
    return this.data.active ? this.data.providers[this.data.active] : undefined;
  }

  /** Adds or replaces a configuration; the first one becomes active. */
  put(config: ProviderConfig): void {
    if (!NAME.test(config.name)) throw new MemoError('VALIDATION', `Provider name "${config.name}" must be lowercase letters, digits, "-" or "_".`);
    if (config.apiKey && config.apiKeyEnv) throw new MemoError('VALIDATION', 'Give either an API key environment variable or a key, not both.');
    this.refresh();
    this.data.providers[config.name] = config;
    if (!this.data.active) this.data.active = config.name;
    this.save();
  }

  remove(name: string): boolean {
    this.refresh();
    if (!this.data.providers[name]) return false;
    delete this.data.providers[name];
    if (this.data.active === name) this.data.active = Object.keys(this.data.providers)[0] ?? null;
    this.save();
    return true;
  }

  use(name: string): void {
    this.refresh();
    if (!this.data.providers[name]) throw new MemoError('NOT_FOUND', `There is no provider "${name}" (memo provider list).`);
    this.data.active = name;
    this.save();
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
