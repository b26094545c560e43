import 'reflect-metadata';
import { BUILTIN_PACKS_DIR, BUILTIN_SKILLS_DIR, KERNEL_CODE_DIR } from './util/install-folders.js';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { container as rootContainer, instanceCachingFactory, type DependencyContainer } from 'tsyringe';
import { AuditLog } from './audit/audit-log.js';
import { PgAuditLog } from './audit/pg-audit-log.js';
import { KnownSecrets } from './secrets/known-secrets.js';
import { AdminActions } from './compose/admin-actions.js';
import { openAuditTrail } from './audit/open-audit.js';
import { kernelStateDb } from './state/kernel-state-import.js';
import { SystemClock } from './clock.js';
import type { Disposable } from './disposable.js';
import { MemoError } from './errors.js';
import { StderrLogger } from './logger.js';
import { PermissionGate, DEFAULT_PROMPT_TIMEOUT_MS } from './permissions/permission-gate.js';
import { PermissionStore } from './permissions/permission-store.js';
import { DenyingPrompter } from './permissions/prompter.js';
import { WriteCapabilities } from './permissions/write-capabilities.js';
import { ApprovalBroker, DEFAULT_APPROVAL_WAIT_MS } from './permissions/approval-broker.js';
import type { ApprovalFace } from './permissions/prompter.js';
import { RateLimiter, type RateLimitOptions } from './rate-limit/rate-limiter.js';
import * as T from './kernel-tokens.js';
import type { ToolCallRequest, ToolResult } from './tools/contract.js';
import { DEFAULT_TOOL_TIMEOUT_MS, ToolPipeline, type CallGuard, type InvokeOptions, type PipelineOptions } from './tools/tool-pipeline.js';
import { ToolRegistry, type PackDefinition } from './tools/tool-registry.js';
import { PathSandbox } from './sandbox/path-sandbox.js';
import { KernelState } from './sandbox/kernel-state.js';
import { registerKernelAreas } from './sandbox/os-sandbox.js';
import type { BuiltinPackId } from './builtin-packs.js';
import type { PackFolder } from './packs/pack-loader.js';
import { PackManager, type PackState } from './packs/pack-manager.js';
import { PackSettings } from './packs/pack-settings.js';
import { CommandJudge } from './sandbox/command-judge.js';
import { SkillManager, type SkillFolder, type SkillState } from './skills/skill-manager.js';
import { ToolSearch } from './agent/tool-search.js';
import { findToolsPack } from './agent/find-tools.js';
import { ProviderRegistry } from './agent/provider-registry.js';
import { ProviderSettings } from './providers/provider-settings.js';
import { resolveConfig } from './packs/pack-settings.js';
import { ConversationStore } from './agent/conversation-store.js';
import { CapabilityProbe } from './agent/capability-probe.js';
import { PackCommands } from './packs/pack-commands.js';
import { PackServices } from './packs/pack-services.js';
import { SharedServices } from './packs/shared-services.js';
import { ConsolePanels } from './packs/console-panels.js';
import { HostContext } from './packs/host-context.js';
import { PackHttp } from './packs/pack-http.js';
import { assertPrivilege } from './packs/pack-privileges.js';
import { administrationView } from './compose/administration-view.js';
import type { PackManifest } from './packs/manifest.js';
import type { PackApi } from './packs/pack-api.js';
import { packAgent } from './agent/routine-turn.js';
import { databaseFromSetting } from './storage/database-url.js';
import { KernelStateDb } from './storage/kernel-state-db.js';
import { SettingsStore } from './state/kernel-state-settings.js';
import { instanceId } from './storage/instance-id.js';
import type { DataSource } from 'typeorm';

/** The services a host may replace, each with one entry in `KernelOptions.services`. */
export interface KernelServices {
  prompter: T.Prompter | null;
  clock: T.Clock;
  logger: T.Logger;
  auditSink: T.AuditSink;
  conversationStore: T.ConversationStore;
  providerRegistry: T.ProviderRegistry;
}

/** A replacement service: the instance, or a function that makes it from the kernel's resolved config (its folders). */
export type ServiceOverride<S> = S | ((config: T.KernelConfig) => S);

export interface KernelOptions {
  /** The sandbox root every path is resolved against. Default: the working directory. */
  root?: string;
  /** Where permissions, the audit trail and databases live. Default: `./data`. */
  dataDir?: string;
  /** Packs registered in code (host apps, tests). */
  packs?: PackDefinition[];
  /**
   * The first face of the approval broker, asked when a medium/dangerous tool has no stored decision.
   * Default: deny at once (nobody to ask). `null`: no face; requests wait in the broker (up to
   * `approvalWaitMs`) for a face to attach or for `kernel.approvals.answer(...)`. Same as `services.prompter`.
   */
  prompter?: T.Prompter | null;
  /** Same as `services.clock`. */
  clock?: T.Clock;
  /** Same as `services.logger`. */
  logger?: T.Logger;
  /** Replacements for the kernel's own services: each one registration, used everywhere the kernel needs it. */
  services?: { [K in keyof KernelServices]?: ServiceOverride<KernelServices[K]> };
  rateLimits?: Partial<RateLimitOptions>;
  /** How long a request waits in the broker when no face is attached (default 30 minutes; then APPROVAL_EXPIRED). */
  approvalWaitMs?: number;
  /**
   * A permission request when no face is attached and nobody watches `kernel.approvals.onChange`:
   * `wait` (default) keeps it in the broker for `approvalWaitMs`; `refuse` denies it at once with a
   * message saying how to be asked (memo serve: an outside caller learns now, not in 30 minutes).
   */
  unattendedApprovals?: 'wait' | 'refuse';
  promptTimeoutMs?: number;
  defaultToolTimeoutMs?: number;
  /**
   * A PostgreSQL URL (postgres://USER:PASSWORD@HOST:PORT/DATABASE) where pack databases (each pack in
   * its own schema) and conversations live, shared by every kernel that uses it. Default:
   * MEMO_DATABASE_URL from the environment; unset or blank, SQLite files in dataDir.
   */
  databaseUrl?: string;
  /**
   * With a database: how long the kernel's first read of its state waits for a database that cannot
   * be reached yet (a start during an outage, PostgreSQL still starting), with a line saying so,
   * before loading packs fails saying it waited. Default 60 s.
   */
  databaseStartWaitMs?: number;
  /**
   * Where the OS sandbox (bubblewrap) cannot start: `refuse` commands (default) or run them `judged`
   * only, the command judge being the only wall. The CLI passes the person's `memo settings sandbox`.
   */
  sandboxFallback?: 'refuse' | 'judged';
}

function checkRoot(root: string): string {
  const abs = path.resolve(root);
  let st: fs.Stats;
  try {
    st = fs.statSync(abs);
  } catch {
    throw new MemoError('NOT_FOUND', `The sandbox root ${root} does not exist.`);
  }
  if (!st.isDirectory()) throw new MemoError('VALIDATION', `The sandbox root ${root} is not a directory.`);
  return fs.realpathSync(abs);
}

function checkDataDir(dataDir: string): string {
  const abs = path.resolve(dataDir);
  try {
    // Kernel state: a data folder the kernel creates is its owner's alone (an existing one keeps its mode).
    fs.mkdirSync(abs, { recursive: true, mode: 0o700 });
    fs.accessSync(abs, fs.constants.W_OK);
  } catch (err) {
    throw new MemoError('VALIDATION', `The data folder ${dataDir} cannot be written (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}).`);
  }
  return abs;
}

/** Each pack's data folder, computed once per pack (it is handed to every call). */
function packDataDir(dataDir: string): (packId: string) => string {
  const cache = new Map<string, string>();
  return (packId) => {
    let dir = cache.get(packId);
    if (dir === undefined) cache.set(packId, (dir = path.join(dataDir, 'packs-data', packId)));
    return dir;
  };
}

export { BUILTIN_PACKS_DIR, BUILTIN_SKILLS_DIR };

/** The ids of the built-in packs (the folders of BUILTIN_PACKS_DIR that hold a plugin.json; BUILTIN_PACK_IDS lists them). */
export function builtinPackIds(): BuiltinPackId[] {
  try {
    return fs
      .readdirSync(BUILTIN_PACKS_DIR, { withFileTypes: true })
      .filter((e) => e.isDirectory() && fs.existsSync(path.join(BUILTIN_PACKS_DIR, e.name, 'plugin.json')))
      .map((e) => e.name as BuiltinPackId)
      .sort();
  } catch {
    return [];
  }
}

/**
 * The kernel's own folders, out of every tool's reach: the data folder, the kernel's code and its
 * dependencies (closed to changes only), and the built-in pack and skill folders beside it (and,
 * when running compiled, their sources in the checkout, which `npm run build` turns into loaded code). Pack and skill folders loaded later add
 * themselves (Kernel.loadPacks / loadSkills).
 */
export function kernelState(dataDir: string): KernelState {
  const state = new KernelState();
  state.add(dataDir, 'the data folder');
  state.add(KERNEL_CODE_DIR, "the kernel's code", 'change');
  const installRoot = path.dirname(KERNEL_CODE_DIR);
  state.add(path.join(installRoot, 'plugins'), 'the built-in pack folder');
  state.add(path.join(installRoot, 'skills'), 'the built-in skill folder');
  const packageRoot = path.basename(installRoot) === 'dist' ? path.dirname(installRoot) : installRoot;
  if (packageRoot !== installRoot) {
    state.add(path.join(packageRoot, 'plugins'), 'the built-in pack sources');
    state.add(path.join(packageRoot, 'skills'), 'the built-in skill sources');
  }
  // The kernel's dependencies are loaded code too: readable, never changed through a tool.
  state.add(path.join(packageRoot, 'node_modules'), "the kernel's dependencies", 'change');
  return state;
}

/**
 * One kernel instance: its own DI container, registry, gate, limiter and audit trail. Several can
 * live in one process (tests do this); they share nothing.
 */
export class Kernel {
  readonly registry: ToolRegistry;
  /** Where every call's outcome is recorded (the hash-chained audit file unless a host replaced it). */
  readonly audit: T.AuditSink;
  readonly permissions: PermissionStore;
  /** The administrator's settings (data/settings.json, or the shared database's rows): read live, as `memo settings` changes them. */
  readonly settings: SettingsStore;
  readonly gate: PermissionGate;
  readonly limiter: RateLimiter;
  readonly capabilities: WriteCapabilities;
  /**
   * Every pending permission request: list them, watch them (`onChange`), attach faces (a terminal,
   * a dialog, the console) and answer them (`answer(id, reply)`). The first answer wins.
   */
  readonly approvals: ApprovalBroker;
  readonly config: T.KernelConfig;
  private readonly pipeline: ToolPipeline;
  private readonly disposables: Disposable[] = [];
  readonly packs: PackManager;
  readonly skills: SkillManager;
  /** Ranks the enabled tools for a request in words (find_tools, a turn's tool set, `memo tools search`). */
  readonly toolSearch: ToolSearch;
  readonly judge: CommandJudge;
  /** Model wire formats, and providers made from configurations: `kernel.providers.create({ name, kind, baseUrl, model })`. */
  readonly providers: T.ProviderRegistry;
  readonly providerSettings: ProviderSettings;
  /** Conversations (data/agent.sqlite, opened on first use, unless a host replaced the store). */
  readonly conversations: T.ConversationStore;
  readonly probe: CapabilityProbe;
  /** Folders no tool may reach: data, code, pack and skill folders. */
  readonly state: KernelState;
  /** CLI command groups packs contribute (`memo vault ...`). */
  readonly commands: PackCommands;
  /**
   * A person's changes (packs enabled, disabled and configured, permissions, always-allow,
   * providers), each written to the audit trail before it is made, naming the face (`by`: `console`,
   * `host` by default). A change whose line cannot be written is not made.
   */
  readonly admin: AdminActions;
  /** Long-running pack services, run between start() and shutdown(). */
  readonly services: PackServices;
  /** What packs offer each other by token. */
  readonly shared: SharedServices;
  /** Web console panels packs contribute, as data. */
  readonly panels: ConsolePanels;
  /** What the host app tells packs about its state (`kernel.hostContext.set('currentNote', ...)`). */
  readonly hostContext: HostContext;
  /** HTTP routes packs mount (`api.http.mount`), served by memo serve's endpoint (its `mounts`) while each pack is enabled. */
  readonly http: PackHttp;
  /** Closed at shutdown before the kernel's own services (MCP endpoints register here). */
  private readonly shutdownHooks = new Set<() => Promise<void> | void>();
  /** Pack databases still closing (a reload disposes the old one while the new one opens). */
  private readonly closing = new Set<Promise<unknown>>();
  /** `activate` calls of packs registered in code, still running. */
  private readonly activating = new Set<Promise<void>>();
  private closed = false;

  constructor(private readonly container: DependencyContainer) {
    this.config = container.resolve<T.KernelConfig>(T.KernelConfig);
    this.registry = container.resolve(ToolRegistry);
    this.audit = container.resolve<T.AuditSink>(T.AuditSink);
    this.permissions = container.resolve(PermissionStore);
    this.settings = container.resolve(SettingsStore);
    this.gate = container.resolve(PermissionGate);
    this.limiter = container.resolve(RateLimiter);
    this.capabilities = container.resolve(WriteCapabilities);
    this.approvals = container.resolve(ApprovalBroker);
    const prompter = container.resolve<T.Prompter | null>(T.Prompter);
    if (prompter) this.disposables.push(this.approvals.attach(asFace(prompter)));
    // Every command run in this process (any kernel's, any pack's) finds this kernel's areas masked.
    this.disposables.push(registerKernelAreas({ areas: () => this.state.areas(), fallback: () => this.config.sandboxFallback ?? 'refuse' }));
    this.pipeline = container.resolve(ToolPipeline);
    this.packs = container.resolve(PackManager);
    this.skills = container.resolve(SkillManager);
    this.toolSearch = container.resolve(ToolSearch);
    this.judge = container.resolve(CommandJudge);
    this.providers = container.resolve<T.ProviderRegistry>(T.ProviderRegistry);
    this.providerSettings = container.resolve(ProviderSettings);
    this.conversations = container.resolve<T.ConversationStore>(T.ConversationStore);
    this.probe = container.resolve(CapabilityProbe);
    this.state = container.resolve(KernelState);
    const logger = container.resolve<T.Logger>(T.Logger);
    this.commands = new PackCommands();
    this.services = new PackServices(logger, (pack, service, tool, args) => this.invoke({ tool, args, caller: { kind: 'host', id: `${pack}/${service}` } }));
    this.shared = new SharedServices();
    this.panels = new ConsolePanels();
    this.hostContext = new HostContext();
    this.http = new PackHttp(this.registry);
    // A host without an HTTP server of its own still ends the mounts' open work (console chat turns) before the stores close.
    this.onShutdown(() => this.http.close());
    this.packs.apiFor = (packId, owned, manifest) => this.packApi(packId, owned, logger, manifest);
    this.admin = new AdminActions({
      audit: this.audit,
      permissions: this.permissions,
      packs: this.packs,
      registry: this.registry,
      providerSettings: this.providerSettings,
      known: container.resolve(KnownSecrets),
      clock: container.resolve<T.Clock>(T.Clock),
    });
  }

  /** The contribution points one pack gets; everything registered through them is pushed onto `owned`. */
  private packApi(packId: string, owned: Disposable[], logger: T.Logger, manifest?: PackManifest): PackApi {
    const own = <D extends Disposable>(d: D): D => {
      owned.push(d);
      return d;
    };
    const dataDir = path.join(this.config.dataDir, 'packs-data', packId);
    // Each database name: null while it opens, then its DataSource (another open waits for the pack to close it).
    const openNames = new Map<string, DataSource | null>();
    // Aborted when the pack unloads or reloads: its routine turns stop with it.
    const unloading = new AbortController();
    own({ dispose: () => unloading.abort(new Error(`the pack ${packId} is unloading`)) });
    const kernelDir = this.config.dataDir;
    return {
      packId,
      dataDir,
      // Read on first use: made (and kept in the data folder) only for a pack that asks.
      get instanceId() {
        return instanceId(kernelDir);
      },
      sharedDatabase: this.config.database !== undefined && this.config.database !== null,
      logger,
      clock: this.container.resolve<T.Clock>(T.Clock),
      agent: packAgent(this, unloading.signal),
      config: () => this.packs.config(packId) ?? resolveConfig(packId, this.packs.manifest(packId)?.config, {}),
      configure: (changes) => this.packs.setConfig(packId, changes),
      providers: {
        register: (kind, factory) => own(this.providers.register(kind, factory, packId)),
        settings: this.providerSettings,
      },
      commands: { register: (command) => own(this.commands.register(packId, command)) },
      services: { register: (service) => own(this.services.register(packId, service)) },
      provide: (token, value) => own(this.shared.provide(packId, token, value)),
      lookup: <V>(token: string) => this.shared.lookup<V>(token),
      database: async (options) => {
        if (this.closed) throw new MemoError('CANCELLED', 'The kernel is shutting down.', { plugin: packId });
        // One connection per file: a second one would see the first's migrations half done.
        const name = options.name ?? 'pack';
        // Open again only once the pack closed it (ds.destroy(): a damaged cache it sets aside and rebuilds).
        const previous = openNames.get(name);
        if (previous !== undefined && (previous === null || previous.isInitialized))
          throw new MemoError('CONFLICT', `Pack "${packId}" already opened its database "${name}"; keep the DataSource it returned.`, { plugin: packId });
        openNames.set(name, null);
        const { openPackDatabase } = await import('./storage/pack-database.js');
        let ds: DataSource;
        try {
          ds = await openPackDatabase(dataDir, options, this.config.database ? { url: this.config.database, packId } : undefined);
        } catch (err) {
          openNames.delete(name);
          throw err;
        }
        openNames.set(name, ds);
        own({
          dispose: () => {
            if (openNames.get(name) === ds) openNames.delete(name);
            if (!ds.isInitialized) return;
            const p = ds.destroy().catch((err: unknown) => logger.warn(`pack ${packId}: its database did not close cleanly: ${(err as Error).message}`));
            this.closing.add(p);
            void p.finally(() => this.closing.delete(p));
          },
        });
        return ds;
      },
      panels: {
        register: (panel) => own(this.panels.register(packId, panel, this.registry.pack(packId)?.toolNames ?? [])),
      },
      host: {
        get: (key) => this.hostContext.get(key),
        onChange: (listener) => own(this.hostContext.onChange(listener)),
      },
      http: { mount: (prefix, handler) => own(this.http.mount(packId, prefix, handler)) },
      // Privileged: only a built-in pack that declares it (pack-privileges.ts), never one from another folder.
      administration: () => {
        assertPrivilege({ id: packId, dir: this.registry.pack(packId)?.dir, manifest }, 'administration', BUILTIN_PACKS_DIR);
        return administrationView(this, packId, own);
      },
    };
  }

  /**
   * Starts the pack services (schedulers, sockets, sync loops); `memo serve` calls it, and so does a
   * host that wants them. Services of packs loaded later start as they load. Idempotent.
   */
  async start(): Promise<void> {
    if (this.closed) throw new MemoError('VALIDATION', 'This kernel has been shut down; create a new one.');
    await Promise.all([...this.activating]);
    await this.services.start();
  }

  /** Runs `hook` at shutdown, before pack services stop (MCP endpoints close their sessions here). */
  onShutdown(hook: () => Promise<void> | void): Disposable {
    this.shutdownHooks.add(hook);
    return { dispose: () => void this.shutdownHooks.delete(hook) };
  }

  /**
   * Adds a check every later call passes after validation, before rate limits and the gate (see
   * CallGuard): a refusal it throws is audited like any other. Disposing removes it.
   */
  addCallGuard(guard: CallGuard): Disposable {
    return { dispose: this.pipeline.addGuard(guard) };
  }

  /** The one way to call a tool. Never throws; every outcome is audited. */
  invoke(request: ToolCallRequest, options?: InvokeOptions): Promise<ToolResult> {
    return this.pipeline.invoke(request, options);
  }

  /**
   * Registers a pack defined in code. Its tools are callable at once; its `activate` (contributions
   * beyond tools) runs in the background and `start()` waits for it. A failing `activate` is logged
   * and the pack's tools are withdrawn, as for a pack loaded from a folder.
   */
  registerPack(def: PackDefinition): Disposable {
    const registration = this.registry.registerPack(def);
    const d: Disposable = {
      dispose: () => {
        this.packs.deactivate(def.id);
        registration.dispose();
      },
    };
    this.disposables.push(d);
    if (def.activate) {
      const activation = this.packs.activateHost(def.id, def.activate).catch((err: unknown) => {
        this.container.resolve<T.Logger>(T.Logger).warn(`pack ${def.id} was withdrawn: ${(err as Error).message}`);
        d.dispose();
      });
      this.activating.add(activation);
      void activation.finally(() => this.activating.delete(activation));
    }
    return d;
  }

  /**
   * Loads packs: a built-in pack by id (`'fs-tools'`, typed as BuiltinPackId), or every pack found in
   * a folder (`{ dir, source }`, optionally `only` some ids, any string). A pack that fails (bad
   * manifest, code that throws or disagrees with its manifest, a duplicate tool name) is reported and
   * skipped; the others load normally. An unknown built-in id (from untyped code) is refused before
   * anything loads (NOT_FOUND, listing the ids).
   */
  loadPacks(packs: ReadonlyArray<PackFolder | BuiltinPackId>): Promise<PackState[]> {
    const ids = packs.filter((p): p is BuiltinPackId => typeof p === 'string');
    const folders = packs.filter((p): p is PackFolder => typeof p !== 'string');
    if (ids.length) {
      const known = builtinPackIds();
      const unknown = ids.filter((id) => !known.includes(id));
      if (unknown.length)
        return Promise.reject(
          new MemoError('NOT_FOUND', `No built-in pack is called ${unknown.map((u) => `"${u}"`).join(', ')} (built-in packs: ${known.join(', ') || 'none'}).`),
        );
      folders.unshift({ dir: BUILTIN_PACKS_DIR, source: 'builtin', only: ids });
    }
    // Code loaded from a folder is the kernel's: no tool may read or write it from now on.
    for (const f of folders) this.protect(f.dir, 'a pack folder');
    return this.packs.load(folders);
  }

  /** Loads SKILL.md bundles; broken ones are reported and skipped. */
  loadSkills(folders: SkillFolder[]): Promise<SkillState[]> {
    for (const f of folders) this.protect(f.dir, 'a skill folder');
    return this.skills.load(folders);
  }

  private protect(dir: string, label: string): void {
    const abs = path.resolve(dir);
    if (this.state.areas().some((a) => a.dir === abs && a.reach === 'all')) return;
    this.disposables.push(this.state.add(abs, label));
  }

  /** Hot loading: pack and skill folders and data/packs.json are watched; changes apply without a restart. */
  async watch(): Promise<void> {
    await this.packs.watch();
    await this.skills.watch();
  }

  /**
   * One lifecycle: closes MCP endpoints (and anything else registered with onShutdown), stops pack
   * services and running handlers, destroys write capabilities, closes pack databases and the audit
   * file. Idempotent.
   */
  async shutdown(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const logger = this.container.resolve<T.Logger>(T.Logger);
    for (const hook of [...this.shutdownHooks].reverse()) {
      try {
        await hook();
      } catch (err) {
        logger.warn(`a shutdown step failed: ${(err as Error)?.message ?? String(err)}`);
      }
    }
    this.shutdownHooks.clear();
    await this.services.stop();
    this.pipeline.close();
    this.capabilities.revokeAll();
    await this.closeWithin('the packs', () => this.packs.close(), logger);
    await this.closeWithin("the packs' databases", () => Promise.all([...this.closing]), logger);
    await this.skills.close();
    // The shared stores close together, each connection pool ended; a database that hangs (no answer,
    // not refused) must not keep the process from stopping.
    await this.closeWithin(
      'the shared stores',
      () =>
        Promise.all([
          this.conversations.close(),
          this.config.database ? this.container.resolve(KernelStateDb).close() : undefined,
          this.limiter.close(),
          this.approvals.close(),
        ]),
      logger,
    );
    for (const d of this.disposables.splice(0).reverse()) d.dispose();
    await this.closeWithin('the audit trail', () => this.audit.close(), logger);
  }

  /**
   * Runs one shutdown step, giving up on it after SHUTDOWN_STEP_MS with a warning: with a shared
   * database that stopped answering, ending a connection pool waits for replies that never come.
   * What it left open is abandoned (memo serve then exits regardless).
   */
  private async closeWithin(what: string, step: () => unknown, logger: T.Logger): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), SHUTDOWN_STEP_MS);
      timer.unref();
    });
    try {
      const outcome = await Promise.race([
        Promise.resolve()
          .then(step)
          .then(() => 'done' as const),
        late,
      ]);
      if (outcome === 'late')
        logger.warn(`${what} did not close within ${SHUTDOWN_STEP_MS / 1000} s (a database that does not answer?); shutting down without waiting`);
    } catch (err) {
      logger.warn(`${what} did not close cleanly: ${(err as Error)?.message ?? String(err)}`);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** How long one step of shutdown (a store's close) may take before it is abandoned. */
const SHUTDOWN_STEP_MS = 5_000;

/** A prompter as a face of the broker: its own name if it has one (the terminal's is `terminal`), else `host`. */
function asFace(prompter: T.Prompter): ApprovalFace {
  const named = prompter as Partial<ApprovalFace>;
  return typeof named.name === 'string' ? (prompter as ApprovalFace) : { name: 'host', ask: (r, s) => prompter.ask(r, s) };
}

const SERVICE_TOKENS: { readonly [K in keyof KernelServices]: symbol } = {
  prompter: T.Prompter,
  clock: T.Clock,
  logger: T.Logger,
  auditSink: T.AuditSink,
  conversationStore: T.ConversationStore,
  providerRegistry: T.ProviderRegistry,
};

/** Builds a kernel: validates root and data folder, wires the container, registers the given packs. */
export function createKernel(options: KernelOptions = {}): Kernel {
  const root = checkRoot(options.root ?? process.cwd());
  const dataDir = checkDataDir(options.dataDir ?? path.join(process.cwd(), 'data'));
  const config: T.KernelConfig = {
    root,
    dataDir,
    promptTimeoutMs: options.promptTimeoutMs ?? DEFAULT_PROMPT_TIMEOUT_MS,
    defaultToolTimeoutMs: options.defaultToolTimeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS,
    database:
      options.databaseUrl !== undefined
        ? databaseFromSetting(options.databaseUrl, 'The databaseUrl option')
        : databaseFromSetting(process.env.MEMO_DATABASE_URL),
    sandboxFallback: options.sandboxFallback ?? 'refuse',
  };

  const c = rootContainer.createChildContainer();
  c.register(T.KernelConfig, { useValue: config });
  c.register(KernelState, { useValue: kernelState(dataDir) });
  // The replaceable services: the host's, or the kernel's own. One token each; everything resolves them by token.
  const defaults: { [K in keyof KernelServices]: (d: DependencyContainer) => KernelServices[K] } = {
    prompter: () => new DenyingPrompter('the host app supplied no Prompter, so nobody can be asked'),
    clock: () => new SystemClock(),
    logger: () => new StderrLogger(),
    // With a shared database: this instance's own chain there (kernel/audit/pg-audit-log.ts).
    auditSink: () => openAuditTrail(dataDir, config.database),
    conversationStore: () => new ConversationStore(path.join(dataDir, 'agent.sqlite'), undefined, config.database),
    providerRegistry: () => new ProviderRegistry(),
  };
  const shorthand: Partial<KernelServices> = {
    ...(options.prompter !== undefined ? { prompter: options.prompter } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
  };
  for (const key of Object.keys(SERVICE_TOKENS) as Array<keyof KernelServices>) {
    const override = options.services?.[key] ?? shorthand[key];
    const make =
      override === undefined ? defaults[key] : () => (typeof override === 'function' ? (override as (cfg: T.KernelConfig) => unknown)(config) : override);
    c.register(SERVICE_TOKENS[key], { useFactory: instanceCachingFactory(make) });
  }
  // Values the kernel's classes are built from.
  c.register(T.RateLimits, { useValue: options.rateLimits ?? {} });
  c.register(T.PromptTimeoutMs, { useValue: config.promptTimeoutMs });
  c.register(T.ApprovalWaitMs, { useValue: options.approvalWaitMs ?? DEFAULT_APPROVAL_WAIT_MS });
  c.register(T.UnattendedApprovals, { useValue: options.unattendedApprovals ?? 'wait' });
  c.register(T.PipelineOptions, {
    useFactory: instanceCachingFactory((d): PipelineOptions => ({
      root,
      sandbox: new PathSandbox(root, d.resolve(KernelState)),
      judge: d.resolve(CommandJudge),
      dataDir: packDataDir(dataDir),
      defaultTimeoutMs: config.defaultToolTimeoutMs,
      logger: d.resolve<T.Logger>(T.Logger),
      secrets: d.resolve(KnownSecrets),
    })),
  });
  // The files of this kernel's data folder: each store is made for its own file.
  const logger = (d: DependencyContainer) => d.resolve<T.Logger>(T.Logger);
  // With a shared database they are memo_kernel's rows instead, kept in step across instances (kernel/storage/kernel-state-db.ts).
  const db = config.database;
  if (db)
    c.register(KernelStateDb, {
      useFactory: instanceCachingFactory((d) =>
        kernelStateDb(db, dataDir, logger(d), options.databaseStartWaitMs !== undefined ? { startWaitMs: options.databaseStartWaitMs } : {}),
      ),
    });
  const shared = (d: DependencyContainer) => (db ? d.resolve(KernelStateDb) : undefined);
  c.register(PermissionStore, { useFactory: instanceCachingFactory((d) => new PermissionStore(path.join(dataDir, 'permissions.json'), logger(d), shared(d))) });
  c.register(SettingsStore, { useFactory: instanceCachingFactory((d) => new SettingsStore(dataDir, logger(d), shared(d))) });
  c.register(PackSettings, { useFactory: instanceCachingFactory((d) => new PackSettings(path.join(dataDir, 'packs.json'), logger(d), shared(d))) });
  c.register(ProviderSettings, {
    useFactory: instanceCachingFactory((d) => new ProviderSettings(path.join(dataDir, 'providers.json'), logger(d), shared(d))),
  });
  // Stored provider keys and sensitive environment values: scrubbed from every tool result, error and audit line.
  c.register(KnownSecrets, { useFactory: instanceCachingFactory((d) => new KnownSecrets({ providers: d.resolve(ProviderSettings) })) });
  // Asks the conversation store at check time; the store in turn tells it when a conversation goes (below).
  c.register(WriteCapabilities, {
    useFactory: instanceCachingFactory((d) => new WriteCapabilities((id) => d.resolve<T.ConversationStore>(T.ConversationStore).exists(id))),
  });
  // Everything else is built by the container from its constructor's tokens, once per kernel.
  c.registerSingleton(ToolRegistry);
  c.registerSingleton(RateLimiter);
  c.registerSingleton(ApprovalBroker);
  c.registerSingleton(PermissionGate);
  c.registerSingleton(ToolPipeline);
  c.registerSingleton(PackManager);
  c.registerSingleton(CapabilityProbe);
  c.registerSingleton(CommandJudge);
  c.registerSingleton(SkillManager);
  c.registerSingleton(ToolSearch);

  // A deleted conversation's write capabilities die with it, whichever store the host chose.
  // and so do the approvals given for it ("nothing survives it").
  c.resolve<T.ConversationStore>(T.ConversationStore).setDeleteListener((id) => {
    c.resolve(WriteCapabilities).revokeConversation(id);
    c.resolve(PermissionStore).forgetConversation(id);
  });
  const kernel = new Kernel(c);
  kernel.registerPack(kernel.skills.kernelPack());
  kernel.registerPack(findToolsPack(kernel.toolSearch, kernel.registry));
  // A skill's allowed-tools: while a turn follows a skill, calls outside its list are refused.
  kernel.addCallGuard(kernel.skills.guard);
  // The audit trail fails closed, on a file as on PostgreSQL: once a line could not be written,
  // calls are refused until writing works again (and the lost lines are named in the trail).
  if (kernel.audit instanceof PgAuditLog || kernel.audit instanceof AuditLog) kernel.addCallGuard(kernel.audit.guard);
  // A turn's capability destroyed (the turn ended, however) ends what the turn activated.
  kernel.capabilities.onRevoke((turn) => kernel.skills.endTurn(turn));
  for (const pack of options.packs ?? []) kernel.registerPack(pack);
  return kernel;
}
