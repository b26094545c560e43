import 'reflect-metadata';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { container as rootContainer, instanceCachingFactory, type DependencyContainer } from 'tsyringe';
import { AuditLog } from './audit/audit-log.js';
import { KnownSecrets } from './audit/known-secrets.js';
import { SystemClock } from './clock.js';
import type { Disposable } from './disposable.js';
import { MemoError } from './errors.js';
import { StderrLogger } from './logger.js';
import { PermissionGate, DEFAULT_PROMPT_TIMEOUT_MS } from './permissions/permission-gate.js';
import { PermissionStore } from './permissions/permission-store.js';
import { DenyingPrompter } from './permissions/prompter.js';
import { WriteCapabilities } from './permissions/write-capabilities.js';
import { RateLimiter, type RateLimitOptions } from './rate-limit/rate-limiter.js';
import * as T from './tokens.js';
import type { ToolCallRequest, ToolResult } from './tools/contract.js';
import { DEFAULT_TOOL_TIMEOUT_MS, ToolPipeline, type InvokeOptions } from './tools/tool-pipeline.js';
import { ToolRegistry, type PackDefinition } from './tools/tool-registry.js';
import { PathSandbox } from './sandbox/path-sandbox.js';
import { KernelState } from './sandbox/kernel-state.js';
import type { PackFolder } from './packs/pack-loader.js';
import { PackManager, type PackState } from './packs/pack-manager.js';
import { PackSettings } from './packs/pack-settings.js';
import { CommandJudge } from './sandbox/command-judge.js';
import { SkillManager, type SkillFolder, type SkillState } from './skills/skill-manager.js';
import { ProviderRegistry } from './agent/provider-registry.js';
import { ProviderSettings } from './agent/provider-settings.js';
import { resolveConfig } from './packs/pack-settings.js';
import { ConversationStore } from './agent/conversation-store.js';
import { CapabilityProbe } from './agent/capability-probe.js';

export interface KernelOptions {
  /** The sandbox root every path is resolved against. Default: the working directory. */
  root?: string;
  /** Where permissions, the audit trail and databases live. Default: `./data`. */
  dataDir?: string;
  /** Packs registered in code (host apps, tests). */
  packs?: PackDefinition[];
  /** Asked when a medium/dangerous tool has no stored decision. Default: deny (nobody to ask). */
  prompter?: T.Prompter;
  clock?: T.Clock;
  logger?: T.Logger;
  rateLimits?: Partial<RateLimitOptions>;
  promptTimeoutMs?: number;
  defaultToolTimeoutMs?: number;
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
    fs.mkdirSync(abs, { recursive: true });
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

/** This module's folder: `kernel/` in a checkout run from source, `dist/kernel/` once compiled. */
const KERNEL_CODE_DIR = path.dirname(fileURLToPath(import.meta.url));

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
  readonly audit: AuditLog;
  readonly permissions: PermissionStore;
  readonly gate: PermissionGate;
  readonly limiter: RateLimiter;
  readonly capabilities: WriteCapabilities;
  readonly config: T.KernelConfig;
  private readonly pipeline: ToolPipeline;
  private readonly disposables: Disposable[] = [];
  readonly packs: PackManager;
  readonly skills: SkillManager;
  readonly judge: CommandJudge;
  readonly providers: ProviderRegistry;
  readonly providerSettings: ProviderSettings;
  /** Conversations in data/agent.sqlite (opened on first use). */
  readonly conversations: ConversationStore;
  readonly probe: CapabilityProbe;
  /** Folders no tool may reach: data, code, pack and skill folders. */
  readonly state: KernelState;
  private closed = false;

  constructor(readonly container: DependencyContainer) {
    this.config = container.resolve<T.KernelConfig>(T.KernelConfig);
    this.registry = container.resolve(ToolRegistry);
    this.audit = container.resolve(AuditLog);
    this.permissions = container.resolve(PermissionStore);
    this.gate = container.resolve(PermissionGate);
    this.limiter = container.resolve(RateLimiter);
    this.capabilities = container.resolve(WriteCapabilities);
    this.pipeline = container.resolve(ToolPipeline);
    this.packs = container.resolve(PackManager);
    this.skills = container.resolve(SkillManager);
    this.judge = container.resolve(CommandJudge);
    this.providers = container.resolve(ProviderRegistry);
    this.providerSettings = container.resolve(ProviderSettings);
    this.conversations = container.resolve(ConversationStore);
    this.probe = container.resolve(CapabilityProbe);
    this.state = container.resolve(KernelState);
    const logger = container.resolve<T.Logger>(T.Logger);
    this.packs.apiFor = (packId, owned) => ({
      packId,
      dataDir: path.join(this.config.dataDir, 'packs-data', packId),
      logger,
      config: () => this.packs.config(packId) ?? resolveConfig(packId, this.packs.manifest(packId)?.config, {}),
      providers: {
        register: (kind, factory) => {
          const d = this.providers.register(kind, factory, packId);
          owned.push(d);
          return d;
        },
        settings: this.providerSettings,
      },
    });
  }

  /** The one way to call a tool. Never throws; every outcome is audited. */
  invoke(request: ToolCallRequest, options?: InvokeOptions): Promise<ToolResult> {
    return this.pipeline.invoke(request, options);
  }

  registerPack(def: PackDefinition): Disposable {
    const d = this.registry.registerPack(def);
    this.disposables.push(d);
    return d;
  }

  /**
   * Loads every pack folder found in the given folders. A pack that fails (bad manifest, code that
   * throws or disagrees with its manifest, a duplicate tool name) is reported and skipped; the
   * others load normally.
   */
  loadPacks(folders: PackFolder[]): Promise<PackState[]> {
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

  /** Stops running handlers, destroys write capabilities, closes the audit file. Idempotent. */
  async shutdown(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.pipeline.close();
    this.capabilities.revokeAll();
    await this.packs.close();
    await this.skills.close();
    await this.conversations.close();
    for (const d of this.disposables.splice(0).reverse()) d.dispose();
    this.audit.close();
  }
}

/** Builds a kernel: validates root and data folder, wires the container, registers the given packs. */
export function createKernel(options: KernelOptions = {}): Kernel {
  const root = checkRoot(options.root ?? process.cwd());
  const dataDir = checkDataDir(options.dataDir ?? path.join(process.cwd(), 'data'));
  const config: T.KernelConfig = {
    root,
    dataDir,
    promptTimeoutMs: options.promptTimeoutMs ?? DEFAULT_PROMPT_TIMEOUT_MS,
    defaultToolTimeoutMs: options.defaultToolTimeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS,
  };

  const c = rootContainer.createChildContainer();
  c.register(T.KernelConfig, { useValue: config });
  c.register(KernelState, { useValue: kernelState(dataDir) });
  c.register(T.Clock, { useValue: options.clock ?? new SystemClock() });
  c.register(T.Logger, { useValue: options.logger ?? new StderrLogger() });
  c.register(T.Prompter, { useValue: options.prompter ?? new DenyingPrompter('the host app supplied no Prompter, so nobody can be asked') });
  c.register(ToolRegistry, { useFactory: instanceCachingFactory(() => new ToolRegistry()) });
  c.register(WriteCapabilities, { useFactory: instanceCachingFactory(() => new WriteCapabilities()) });
  c.register(AuditLog, {
    useFactory: instanceCachingFactory(() => {
      const log = new AuditLog(path.join(dataDir, 'agent-audit.jsonl'));
      log.open();
      return log;
    }),
  });
  c.register(PermissionStore, {
    useFactory: instanceCachingFactory((d) => new PermissionStore(path.join(dataDir, 'permissions.json'), d.resolve<T.Logger>(T.Logger))),
  });
  c.register(RateLimiter, { useFactory: instanceCachingFactory((d) => new RateLimiter(d.resolve<T.Clock>(T.Clock), options.rateLimits)) });
  c.register(PermissionGate, {
    useFactory: instanceCachingFactory(
      (d) => new PermissionGate(d.resolve(PermissionStore), d.resolve<T.Prompter>(T.Prompter), d.resolve<T.Clock>(T.Clock), config.promptTimeoutMs),
    ),
  });
  c.register(ToolPipeline, {
    useFactory: instanceCachingFactory(
      (d) =>
        new ToolPipeline(
          d.resolve(ToolRegistry),
          d.resolve(RateLimiter),
          d.resolve(PermissionGate),
          d.resolve(WriteCapabilities),
          d.resolve(AuditLog),
          d.resolve<T.Clock>(T.Clock),
          {
            root,
            sandbox: new PathSandbox(root, d.resolve(KernelState)),
            judge: d.resolve(CommandJudge),
            dataDir: packDataDir(dataDir),
            defaultTimeoutMs: config.defaultToolTimeoutMs,
            logger: d.resolve<T.Logger>(T.Logger),
            secrets: d.resolve(KnownSecrets),
          },
        ),
    ),
  });
  // Stored provider keys and sensitive environment values: scrubbed from every tool result, error and audit line.
  c.register(KnownSecrets, { useFactory: instanceCachingFactory((d) => new KnownSecrets({ providers: d.resolve(ProviderSettings) })) });

  c.register(PackSettings, {
    useFactory: instanceCachingFactory((d) => new PackSettings(path.join(dataDir, 'packs.json'), d.resolve<T.Logger>(T.Logger))),
  });
  c.register(PackManager, {
    useFactory: instanceCachingFactory((d) => new PackManager(d.resolve(ToolRegistry), d.resolve(PackSettings), d.resolve<T.Logger>(T.Logger))),
  });

  c.register(ProviderRegistry, { useFactory: instanceCachingFactory(() => new ProviderRegistry()) });
  c.register(ProviderSettings, { useFactory: instanceCachingFactory(() => new ProviderSettings(path.join(dataDir, 'providers.json'))) });
  c.register(ConversationStore, {
    useFactory: instanceCachingFactory((d) => {
      const store = new ConversationStore(path.join(dataDir, 'agent.sqlite'));
      // A deleted conversation's write capabilities die with it.
      const caps = d.resolve(WriteCapabilities);
      store.setDeleteListener((id) => caps.revokeConversation(id));
      return store;
    }),
  });
  c.register(CapabilityProbe, { useFactory: instanceCachingFactory((d) => new CapabilityProbe(d.resolve<T.Clock>(T.Clock))) });
  c.register(CommandJudge, { useFactory: instanceCachingFactory((d) => new CommandJudge(d.resolve(KernelState))) });
  c.register(SkillManager, {
    useFactory: instanceCachingFactory(
      (d) => new SkillManager(d.resolve(ToolRegistry), d.resolve(CommandJudge), d.resolve<T.Logger>(T.Logger), d.resolve(KernelState)),
    ),
  });

  const kernel = new Kernel(c);
  kernel.registerPack(kernel.skills.kernelPack());
  for (const pack of options.packs ?? []) kernel.registerPack(pack);
  return kernel;
}
