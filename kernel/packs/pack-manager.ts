import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Disposable } from '../disposable.js';
import { Logger } from '../logger.js';
import { inject, injectable } from '../di.js';
import { FolderWatcher } from '../util/folder-watcher.js';
import { ToolRegistry } from '../tools/tool-registry.js';
import { isPackCandidate, listPackDirs, loadPackFolder, type PackFolder, type PackStatus } from './pack-loader.js';
import type { PackManifest } from './manifest.js';
import { PackSettings, resolveConfig } from './pack-settings.js';
import type { PackActivate, PackApi } from './pack-api.js';

/** How often data/packs.json is checked for changes made by `memo plugins` in another process. */
export const SETTINGS_POLL_MS = 250;

export interface PackState extends PackStatus {
  enabled: boolean;
  /** Set when the newest version failed to load and the previous one keeps running. */
  reloadError?: string;
}

/**
 * Loads manifest packs from folders, keeps them in step with the disk (hot loading), and applies
 * the administrator's enable/disable and settings choices live.
 */
@injectable()
export class PackManager {
  private readonly states = new Map<string, PackState>();
  private readonly registrations = new Map<string, Disposable>();
  private readonly configs = new Map<string, Readonly<Record<string, unknown>>>();
  private watcher: FolderWatcher | null = null;
  private readonly activations = new Map<string, Disposable>();
  /** Builds the PackApi for a pack (`manifest`: a folder pack's, for its privileges); what it registers is pushed onto `owned`. Set by the kernel. */
  apiFor: ((packId: string, owned: Disposable[], manifest?: PackManifest) => PackApi) | null = null;
  private watchingSettings = false;
  /** With a shared database: told when another instance changes the pack choices. */
  private settingsChange: Disposable | null = null;
  private version = 0;
  private folders: PackFolder[] = [];

  constructor(
    @inject(ToolRegistry) private readonly registry: ToolRegistry,
    @inject(PackSettings) private readonly settings: PackSettings,
    @inject(Logger) private readonly logger: Logger,
  ) {}

  /** Loads every pack folder found in the folders; broken ones are reported and skipped. */
  async load(folders: PackFolder[]): Promise<PackState[]> {
    // The choices first (with a shared database, its first read): a pack must load enabled or not as stored.
    await this.settings.ready();
    this.folders.push(...folders);
    const out: PackState[] = [];
    // One pack after another: importing several at once races inside jest's ESM loader ("request for
    // ... is not in cache" when two packs share a module), so tests would not load what users load.
    for (const folder of listPackDirs(folders)) if (this.wanted(folder.dir)) out.push(await this.loadOne(folder, 0));
    return out;
  }

  /** True when some loaded folder takes the pack folder `dir` (its `only` list, if any, names it). */
  private wanted(dir: string): boolean {
    const parent = path.dirname(path.resolve(dir));
    const id = path.basename(dir);
    return this.folders.some((f) => path.resolve(f.dir) === parent && (!f.only || f.only.includes(id)));
  }

  list(): PackState[] {
    return [...this.states.values()].sort((a, b) => a.id.localeCompare(b.id));
  }

  get(id: string): PackState | undefined {
    return this.states.get(id);
  }

  manifest(id: string): PackManifest | undefined {
    return this.states.get(id)?.manifest;
  }

  private async loadOne(folder: PackFolder, version: number): Promise<PackState> {
    const id = path.basename(folder.dir);
    const previous = this.states.get(id);
    if (previous && previous.dir !== folder.dir && previous.status === 'loaded') {
      const state: PackState = {
        id,
        dir: folder.dir,
        source: folder.source,
        status: 'failed',
        enabled: false,
        error: `a pack with id "${id}" is already loaded from ${previous.dir}`,
      };
      this.logger.warn(`pack ${id} (${folder.dir}) was skipped: ${state.error}`);
      return state;
    }
    const started = performance.now();
    const { status, definition } = await loadPackFolder(folder, version);
    const enabled = this.settings.isEnabled(id, status.manifest?.enabledByDefault ?? true);
    let state: PackState = { ...status, enabled };
    if (definition) {
      try {
        const schema = status.manifest?.config;
        const stored = this.settings.storedConfig(id);
        this.configs.set(id, Object.freeze(resolveConfig(id, schema, stored)));
        definition.config = () => this.configs.get(id) ?? {};
        this.registry.setEnabled(id, enabled);
        const loaded = this.registrations.has(id);
        const before = this.registry.pack(id)?.toolNames ?? [];
        const registration = loaded ? this.registry.replacePack(definition) : this.registry.registerPack(definition);
        this.registrations.set(id, registration);
        await this.activate(id, definition.activate, status.manifest);
        if (loaded)
          this.logReload(
            id,
            definition.version ?? '0.0.0',
            before,
            definition.tools.map((t) => t.spec.name),
            performance.now() - started,
          );
        // A pack that appeared while the kernel runs (the folder watcher found it) says so, as a reload does.
        else if (version > 0)
          this.logger.info(
            `pack ${id} ${definition.version ?? '0.0.0'} added from ${folder.dir} (${definition.tools.length} tool${definition.tools.length === 1 ? '' : 's'}${enabled ? '' : ', disabled'})`,
          );
      } catch (err) {
        state = { ...state, status: 'failed', error: (err as Error).message };
        if (!previous || previous.status !== 'loaded') {
          this.registrations.get(id)?.dispose();
          this.registrations.delete(id);
        }
      }
    }
    if (state.status === 'failed' && previous?.status === 'loaded' && this.registrations.has(id)) {
      // Keep the working version; say why the new one was not taken.
      const kept: PackState = { ...previous, reloadError: state.error! };
      this.states.set(id, kept);
      this.logger.warn(`pack ${id} did not reload (${state.error}); the previous version keeps running`);
      return kept;
    }
    if (state.status === 'failed') this.logger.warn(`pack ${id} (${folder.dir}) was skipped: ${state.error}`);
    this.states.set(id, state);
    return state;
  }

  /** One line per successful reload: the pack, its version, the tools it gained and lost, and how long it took. */
  private logReload(id: string, version: string, before: readonly string[], after: readonly string[], ms: number): void {
    const added = after.filter((t) => !before.includes(t));
    const removed = before.filter((t) => !after.includes(t));
    const changes = [added.length ? `added ${added.join(', ')}` : '', removed.length ? `removed ${removed.join(', ')}` : ''].filter(Boolean);
    this.logger.info(
      `pack ${id} ${version} reloaded in ${Math.round(ms)} ms (${after.length} tools${changes.length ? `; ${changes.join('; ')}` : ', none added or removed'})`,
    );
  }

  /** Runs the `activate` of a pack a host registered in code (its tools are already registered). */
  activateHost(id: string, activate: PackActivate): Promise<void> {
    return this.activate(id, activate);
  }

  /** Releases what a host-registered pack's `activate` contributed (the pack was disposed). */
  deactivate(id: string): void {
    this.activations.get(id)?.dispose();
    this.activations.delete(id);
  }

  /** Runs a pack's `activate`, after disposing what its previous version contributed. */
  private async activate(id: string, activate: PackActivate | undefined, manifest?: PackManifest): Promise<void> {
    this.activations.get(id)?.dispose();
    this.activations.delete(id);
    if (!activate || !this.apiFor) return;
    const owned: Disposable[] = [];
    const api = this.apiFor(id, owned, manifest);
    try {
      const extra = await activate(api);
      if (extra && typeof extra.dispose === 'function') owned.push(extra);
    } catch (err) {
      for (const d of owned.reverse()) d.dispose();
      throw new Error(`its activate() failed: ${(err as Error)?.message ?? String(err)}`, { cause: err });
    }
    this.activations.set(id, {
      dispose: () =>
        owned
          .splice(0)
          .reverse()
          .forEach((d) => d.dispose()),
    });
  }

  /** Removes a pack's tools (its folder is gone). */
  unload(id: string): void {
    this.activations.get(id)?.dispose();
    this.activations.delete(id);
    this.registrations.get(id)?.dispose();
    this.registrations.delete(id);
    this.states.delete(id);
    this.configs.delete(id);
  }

  /** Persists an administrator's enable/disable and applies it at once. */
  setEnabled(id: string, enabled: boolean): void {
    this.settings.setEnabled(id, enabled);
    const state = this.states.get(id);
    if (state) state.enabled = enabled;
    this.registry.setEnabled(id, enabled);
  }

  /** Resolves once every enable/disable and settings change made here is stored (with a shared database: committed); rejects saying why one was not. */
  saved(): Promise<void> {
    return this.settings.saved();
  }

  /** Validates, persists and applies new settings for a pack; returns the settings in force. */
  setConfig(id: string, changes: Record<string, unknown>): Readonly<Record<string, unknown>> {
    const state = this.states.get(id);
    const resolved = Object.freeze(this.settings.setConfig(id, state?.manifest?.config, changes));
    if (state) this.configs.set(id, resolved);
    return resolved;
  }

  /** The settings in force for a loaded pack. */
  config(id: string): Readonly<Record<string, unknown>> | undefined {
    return this.configs.get(id);
  }

  /** Re-reads data/packs.json and applies enabled/disabled and settings to every loaded pack. */
  applySettings(): void {
    if (!this.settings.refresh()) return;
    for (const state of this.states.values()) {
      if (state.status !== 'loaded') continue;
      const enabled = this.settings.isEnabled(state.id, state.manifest?.enabledByDefault ?? true);
      state.enabled = enabled;
      this.registry.setEnabled(state.id, enabled);
      try {
        this.configs.set(state.id, Object.freeze(resolveConfig(state.id, state.manifest?.config, this.settings.storedConfig(state.id))));
      } catch (err) {
        this.logger.warn(`settings of pack ${state.id} are invalid (${(err as Error).message}); its previous settings stay in force`);
      }
    }
  }

  /** Watches the pack folders and the settings file; changes apply without a restart. */
  async watch(): Promise<void> {
    if (this.watcher) return;
    this.watcher = new FolderWatcher(this.logger, (dir) => {
      const folder = this.folders.find((f) => path.dirname(dir) === path.resolve(f.dir));
      return folder && this.wanted(dir) && isPackCandidate(dir) ? this.sync({ dir, source: folder.source }) : undefined;
    });
    await this.watcher.watch(this.folders.map((f) => path.resolve(f.dir)));
    // The settings file is polled, not watched: chokidar stops reporting anything when one of its
    // paths does not exist yet, and an fs.watch on data/ would fire on every audit line.
    fs.watchFile(this.settings.file, { interval: SETTINGS_POLL_MS, persistent: false }, () =>
      this.watcher?.schedule('\u0000settings', () => this.applySettings()),
    );
    this.watchingSettings = true;
    this.settingsChange = this.settings.onChange(() => this.watcher?.schedule('\u0000settings', () => this.applySettings()));
  }

  private async sync(folder: PackFolder): Promise<void> {
    const id = path.basename(folder.dir);
    const state = this.states.get(id);
    if (!fs.existsSync(folder.dir)) {
      if (state && state.dir === folder.dir) {
        this.unload(id);
        this.logger.info(`pack ${id} removed (${folder.dir} is gone): its tools are no longer offered`);
      }
      return;
    }
    await this.loadOne(folder, ++this.version);
  }

  /** Resolves once pending reloads have run (for hosts that want to wait for the disk to settle). */
  async idle(): Promise<void> {
    await this.watcher?.idle();
  }

  async close(): Promise<void> {
    await this.watcher?.close();
    this.watcher = null;
    for (const d of this.activations.values()) d.dispose();
    this.activations.clear();
    if (this.watchingSettings) fs.unwatchFile(this.settings.file);
    this.settingsChange?.dispose();
    this.settingsChange = null;
    this.watchingSettings = false;
    for (const d of this.registrations.values()) d.dispose();
    this.registrations.clear();
  }
}
