import type { Disposable } from '../disposable.js';
import type { Logger } from '../logger.js';
import type { ProviderFactory } from '../agent/provider.js';
import type { ProviderSettings } from '../agent/provider-settings.js';

/**
 * What a pack's optional `activate(api)` receives: contribution points beyond tools. Everything
 * it registers is disposed when the pack unloads or reloads (return a Disposable for the rest).
 */
export interface PackApi {
  readonly packId: string;
  readonly dataDir: string;
  readonly logger: Logger;
  /** The pack's settings in force (validated against its manifest's `config` schema). */
  config(): Readonly<Record<string, unknown>>;
  providers: {
    /** Contributes a model wire format (`openai-compatible`, `anthropic`, ...). */
    register(kind: string, factory: ProviderFactory): Disposable;
    /** The stored provider configurations (for tools such as `configure_provider`). */
    readonly settings: ProviderSettings;
  };
}

export type PackActivate = (api: PackApi) => void | Disposable | Promise<void | Disposable>;
