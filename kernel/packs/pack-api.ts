import type { DataSource } from 'typeorm';
import type { Clock } from '../clock.js';
import type { PackAgent } from '../agent/routine-turn.js';
import type { Disposable } from '../disposable.js';
import type { Logger } from '../logger.js';
import type { ProviderFactory } from '../agent/provider.js';
import type { ProviderSettings } from '../agent/provider-settings.js';
import type { PackDatabaseOptions } from '../storage/pack-database.js';
import type { JsonValue } from '../tools/contract.js';
import type { PackCommand } from './pack-commands.js';
import type { PackService } from './pack-services.js';
import type { ConsolePanel } from './console-panels.js';

/**
 * What a pack's optional `activate(api)` receives: the contribution points beyond tools. Everything
 * it registers (providers, commands, services, shared services, panels, databases) is released when
 * the pack unloads or reloads; return a Disposable for anything else it opened.
 */
export interface PackApi {
  readonly packId: string;
  /** The pack's own data folder (`<data>/packs-data/<id>`), out of every tool's reach. */
  readonly dataDir: string;
  /** This Memo instance's id among those sharing one PostgreSQL database (MEMO_INSTANCE_ID or `data/instance-id`): for leases. */
  readonly instanceId: string;
  readonly logger: Logger;
  /** The kernel's clock: timers a pack schedules on it run on a test's fake clock too. */
  readonly clock: Clock;
  /**
   * Agent turns for packs that run them unattended (routines): the active provider and model to pin,
   * the tools a turn could call, and `run`, one turn with caller kind `routine`, through the same
   * pipeline, with pre-approvals scoped to the run and no write capability.
   */
  readonly agent: PackAgent;
  /** The pack's settings in force (validated against its manifest's `config` schema). */
  config(): Readonly<Record<string, unknown>>;
  /**
   * Validates, saves (data/packs.json) and applies new values for the pack's own settings, as
   * `memo plugins config` would: for a setup command such as `memo vault init`. VALIDATION naming
   * each problem; nothing is saved then.
   */
  configure(changes: Record<string, unknown>): Readonly<Record<string, unknown>>;
  providers: {
    /** Contributes a model wire format (`openai-compatible`, `anthropic`, ...). */
    register(kind: string, factory: ProviderFactory): Disposable;
    /** The stored provider configurations (for tools such as `configure_provider`). */
    readonly settings: ProviderSettings;
  };
  /** A CLI command group: `memo <name> <subcommand> ...`, whose work goes through the pack's tools. */
  commands: { register(command: PackCommand): Disposable };
  /** Long-running work (a scheduler, a socket, a sync loop) that `memo serve` or a host's `kernel.start()` runs. */
  services: { register(service: PackService): Disposable };
  /** Offers a value to other packs under a dotted token (`vault.notes`). */
  provide(token: string, value: unknown): Disposable;
  /** Another pack's offer, or undefined while that pack is not loaded. Look it up when needed; do not keep it. */
  lookup<T>(token: string): T | undefined;
  /**
   * The pack's own SQLite database in its data folder, migrated to the newest of `migrations` before
   * it is returned (no `synchronize` outside tests). Closed when the pack unloads, reloads, or the kernel stops.
   */
  database(options: PackDatabaseOptions): Promise<DataSource>;
  /** A panel for the web console, as data: actions are calls of the pack's own tools through the pipeline. */
  panels: { register(panel: ConsolePanel): Disposable };
  /** What the host app says about its state (e.g. `currentNote`). Read-only for packs. */
  host: {
    get(key: string): JsonValue | undefined;
    onChange(listener: (key: string) => void): Disposable;
  };
}

export type PackActivate = (api: PackApi) => void | Disposable | Promise<void | Disposable>;
