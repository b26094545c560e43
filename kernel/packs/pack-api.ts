import type { DataSource } from 'typeorm';
import type { Clock } from '../clock.js';
import type { PackAgent } from './pack-agent.js';
import type { Disposable } from '../disposable.js';
import type { Logger } from '../logger.js';
import type { ProviderFactory } from '../providers/provider.js';
import type { ProviderSettings } from '../providers/provider-settings.js';
import type { PackDatabaseOptions } from '../storage/pack-database.js';
import { MemoError } from '../errors.js';
import type { JsonValue, Preview, ToolAssess, ToolContext, ToolPreview, ToolRun, TypedToolImplementation } from '../tools/contract.js';
import type { PackCommand } from './pack-commands.js';
import type { PackService } from './pack-services.js';
import type { ConsolePanel } from './console-panels.js';
import type { PackHttpApi } from './pack-http.js';

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
  /** True when `database({ portable: true })` opens a schema of the kernel's shared PostgreSQL database rather than a file. */
  readonly sharedDatabase: boolean;
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
   * One DataSource per name at a time: once the pack closes it itself (`ds.destroy()`, e.g. a cache it
   * found damaged and set aside), it may open the name again.
   */
  database(options: PackDatabaseOptions): Promise<DataSource>;
  /** A panel for the web console, as data: actions are calls of the pack's own tools through the pipeline. */
  panels: { register(panel: ConsolePanel): Disposable };
  /** What the host app says about its state (e.g. `currentNote`). Read-only for packs. */
  host: {
    get(key: string): JsonValue | undefined;
    onChange(listener: (key: string) => void): Disposable;
  };
  /** Routes on memo serve's HTTP server (beside `/mcp`), served while the pack is enabled. */
  http: PackHttpApi;
  /**
   * The kernel's administration view (approvals, permissions, packs, providers, conversations, the
   * audit trail, the MCP endpoint), for a person's own face such as the web console. Privileged:
   * PERMISSION_DENIED unless this is a built-in pack whose plugin.json declares
   * `"privileges": ["administration"]`; a pack from any other folder never gets it. Its type,
   * PackAdministration, spans the core and the agent, so it is defined above both
   * (kernel/compose/pack-administration.ts): a pack gets it typed through memo-kernel/pack's
   * `administrationOf(api)`.
   */
  administration(): unknown;
}

export type PackActivate = (api: PackApi) => void | Disposable | Promise<void | Disposable>;

/** Marks a tool made by `lazyTool`: its loader, so a reload or a check can import the code up front. */
const LAZY_LOAD = Symbol.for('memo-kernel.lazy-tool');

type LoadedTool = ToolRun | { run: ToolRun; preview?: ToolPreview; assess?: ToolAssess };

/** A lazily loaded tool as the registry sees it: always `run`, `preview` and `assess`, each forwarding to the code once it is loaded. */
export interface LazyTool {
  run: ToolRun;
  preview: ToolPreview;
  assess: ToolAssess;
  readonly [LAZY_LOAD]: () => Promise<unknown>;
}

/** A load error's text without the absolute paths of the pack's code (only the file names stay). */
function withoutPaths(message: string): string {
  return message.replace(/(?:file:\/\/)?(?:\/[^\s'"`/]+)+\/([^\s'"`/]+)/g, '$1');
}

/**
 * One tool whose code is imported on its first call instead of when the pack loads (start-up time):
 * `vault_create_note: lazyTool(async () => (await import('./write-tools.js')).createNote)`. The
 * declaration (plugin.json) is unchanged, so listing, schemas, danger and the gate see the same tool;
 * the call goes through the same pipeline, and `preview`/`assess` answer null until the code says
 * otherwise, as if the tool had none. Code that fails to import is a `TOOL_FAILED` naming the pack and
 * tool (the next call tries again). A reload, and `memo plugins check`, import it up front, so a
 * broken update is refused there and the previous version keeps running.
 */
export function lazyTool<A>(load: () => Promise<TypedToolImplementation<A>>): TypedToolImplementation<A> {
  let code: LoadedTool | undefined;
  let pending: Promise<LoadedTool> | undefined;
  const fetch = (): Promise<LoadedTool> =>
    (pending ??= load().then(
      (impl) => {
        const found = impl as unknown as LoadedTool;
        if (typeof found !== 'function' && typeof (found as { run?: unknown } | null)?.run !== 'function') {
          pending = undefined;
          throw new Error('the loaded module has no handler function for it');
        }
        return (code = found);
      },
      (err: unknown) => {
        pending = undefined;
        throw err;
      },
    ));
  const loaded = async (ctx: ToolContext): Promise<LoadedTool> => {
    try {
      return await fetch();
    } catch (err) {
      const why = withoutPaths((err as Error | null)?.message ?? String(err));
      throw new MemoError('TOOL_FAILED', `The code of ${ctx.tool} (pack "${ctx.plugin}") could not be loaded: ${why}`, {
        plugin: ctx.plugin,
        tool: ctx.tool,
        cause: err,
      });
    }
  };
  const runOf = (impl: LoadedTool) => (typeof impl === 'function' ? impl : impl.run);
  const tool: LazyTool = {
    run: (args, ctx) => (code ? runOf(code)(args, ctx) : loaded(ctx).then((impl) => runOf(impl)(args, ctx))),
    preview: async (args, ctx) => {
      const impl = code ?? (await loaded(ctx));
      return (typeof impl === 'function' ? null : ((await impl.preview?.(args, ctx)) ?? null)) as Preview;
    },
    assess: async (args, ctx) => {
      const impl = code ?? (await loaded(ctx));
      return typeof impl === 'function' ? null : ((await impl.assess?.(args, ctx)) ?? null);
    },
    [LAZY_LOAD]: fetch,
  };
  return tool as unknown as TypedToolImplementation<A>;
}

/** Imports the code of every lazily loaded tool among `handlers` (a reload or a check: errors surface now, not at the first call). */
export async function loadLazyTools(handlers: Record<string, unknown>): Promise<void> {
  for (const [name, impl] of Object.entries(handlers)) {
    const load = (impl as Partial<LazyTool> | null)?.[LAZY_LOAD];
    if (typeof load !== 'function') continue;
    try {
      await load();
    } catch (err) {
      throw Object.assign(new Error(`the code of tool ${name} failed to load: ${(err as Error | null)?.message ?? String(err)}`), { cause: err });
    }
  }
}
