import * as fs from 'node:fs';
import * as path from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
import type { Logger } from '../logger.js';

/** Waits this long after the last file event in an entry: editors save in several writes. */
export const RELOAD_DEBOUNCE_MS = 100;

/**
 * Watches parent folders whose direct subfolders are entries (packs, skills). Any change inside an
 * entry calls `onEntry(entryDir)` once the entry has been quiet for the debounce; calls for one
 * entry never overlap (a change during a reload schedules another after it).
 */
export class FolderWatcher {
  private watcher: FSWatcher | null = null;
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly inFlight = new Map<string, Promise<void>>();

  constructor(
    private readonly logger: Logger,
    private readonly onEntry: (entryDir: string, parent: string) => void | Promise<void>,
  ) {}

  async watch(parents: string[]): Promise<void> {
    // chokidar never says 'ready' for an empty list: nothing to watch is done at once.
    if (this.watcher || parents.length === 0) return;
    for (const dir of parents) fs.mkdirSync(dir, { recursive: true });
    this.watcher = watch(parents, {
      ignoreInitial: true,
      depth: 4,
      ignored: (p: string) => /(^|[/\\])(node_modules|\.git)([/\\]|$)/.test(p),
    });
    this.watcher.on('all', (_event, file) => {
      for (const parent of parents) {
        const rel = path.relative(parent, file);
        if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) continue;
        const name = rel.split(path.sep)[0] ?? ''; // split always returns one element
        if (name.startsWith('.')) return;
        const entry = path.join(parent, name);
        this.schedule(entry, () => this.onEntry(entry, parent));
        return;
      }
    });
    this.watcher.on('error', (err) => this.logger.warn(`watcher: ${(err as Error).message}`));
    await new Promise<void>((resolve) => this.watcher!.once('ready', () => resolve()));
  }

  /** Runs `fn` for `key` after the debounce, serialised with earlier runs for the same key. */
  schedule(key: string, fn: () => void | Promise<void>): void {
    clearTimeout(this.timers.get(key));
    this.timers.set(
      key,
      setTimeout(() => {
        this.timers.delete(key);
        const prev = this.inFlight.get(key) ?? Promise.resolve();
        const next = prev.then(fn).catch((err: unknown) => this.logger.error(`reloading ${key}: ${(err as Error).message}`));
        this.inFlight.set(key, next);
        void next.finally(() => {
          if (this.inFlight.get(key) === next) this.inFlight.delete(key);
        });
      }, RELOAD_DEBOUNCE_MS),
    );
  }

  /** Resolves once pending reloads have run. */
  async idle(): Promise<void> {
    while (this.timers.size || this.inFlight.size) {
      await new Promise((r) => setTimeout(r, RELOAD_DEBOUNCE_MS / 2));
      await Promise.all(this.inFlight.values());
    }
  }

  async close(): Promise<void> {
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    await this.watcher?.close();
    this.watcher = null;
  }
}
