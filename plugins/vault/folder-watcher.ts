/**
 * Watches a vault's folders with the operating system's notifications: one `fs.watch` per folder
 * (inotify on Linux), never one per file. A file's change is named by its folder's event; a folder
 * that appears is watched (with the folders under it) and reported, one that goes away is dropped and
 * reported, so the vault looks at what is under it.
 *
 * The vault used chokidar, which stat'ed every file of the tree before it was ready (1.1 to 1.5 s for
 * 50,000 notes on the developers' machine, most of a reopen) to tell files from folders. This walks
 * the folders only (one readdir each) and stats a name only when an event names it.
 */
import { lstatSync, readdirSync, watch, type FSWatcher } from 'node:fs';
import path from 'node:path';

export interface FolderEvents {
  /** Something happened to the entry `abs` (a file, or a name that is gone). */
  entry(abs: string): void;
  /** The folder `abs` appeared or went away (what is under it is to be looked at again). */
  folder(abs: string): void;
  /** Folders never watched: hidden ones, kernel state. */
  skip(abs: string): boolean;
  warn(message: string): void;
}

export class FolderWatcher {
  private readonly dirs = new Map<string, FSWatcher>();
  private closed = false;
  private warned = false;

  constructor(
    private readonly root: string,
    private readonly events: FolderEvents,
  ) {}

  /** Starts watching the root and every folder under it. */
  start(): void {
    this.addTree(this.root);
  }

  /** Folders watched now (for tests). */
  get size(): number {
    return this.dirs.size;
  }

  close(): void {
    this.closed = true;
    for (const w of this.dirs.values()) w.close();
    this.dirs.clear();
  }

  /** Watches `dir` and the folders under it (no link followed, skipped ones left out). */
  private addTree(dir: string): void {
    const stack = [dir];
    while (stack.length) {
      const d = stack.pop()!;
      if (!this.watchOne(d)) continue;
      let entries;
      try {
        entries = readdirSync(d, { withFileTypes: true });
      } catch {
        continue; // gone meanwhile: its parent's event says so
      }
      for (const e of entries) if (e.isDirectory()) stack.push(path.join(d, e.name));
    }
  }

  private watchOne(dir: string): boolean {
    if (this.closed || this.dirs.has(dir) || (dir !== this.root && this.events.skip(dir))) return false;
    let w: FSWatcher;
    try {
      w = watch(dir, { persistent: false }, (_event, name) => this.onEvent(dir, name));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR' && !this.warned) {
        // Most often the system's limit on watches (fs.inotify.max_user_watches): said once.
        this.warned = true;
        this.events.warn(`vault watcher: ${dir} cannot be watched (${(err as Error).message}); changes made there outside Memo are seen at the next reindex`);
      }
      return false;
    }
    w.on('error', () => this.dropTree(dir));
    this.dirs.set(dir, w);
    return true;
  }

  private dropTree(dir: string): void {
    for (const [d, w] of this.dirs) {
      if (d === dir || d.startsWith(`${dir}${path.sep}`)) {
        w.close();
        this.dirs.delete(d);
      }
    }
  }

  private onEvent(dir: string, name: string | null): void {
    if (this.closed) return;
    if (!name) {
      // The system did not say which entry (its queue overflowed): the whole folder is looked at again.
      this.events.folder(dir);
      return;
    }
    const abs = path.join(dir, name);
    let isDir = false;
    try {
      isDir = lstatSync(abs).isDirectory();
    } catch {
      // gone
    }
    if (isDir) {
      if (!this.dirs.has(abs) && !this.events.skip(abs)) {
        this.addTree(abs);
        this.events.folder(abs);
      }
      return;
    }
    if (this.dirs.has(abs)) {
      // A watched folder is gone (deleted, or renamed: its new name is an event of its own).
      this.dropTree(abs);
      this.events.folder(abs);
    }
    this.events.entry(abs);
  }
}
