/**
 * The kernel's own state: folders no tool may reach, whatever the root and whatever the intent.
 *
 * The data folder (audit trail and its key, permissions, settings, provider keys, databases, extra
 * packs and skills, every pack's data) and every folder the kernel loads code or skills from are
 * registered here. The path sandbox refuses any path that resolves into one of them (PATH_PROTECTED),
 * and the command judge refuses commands whose literal words point into them. Without this, one
 * approved `write_file data/permissions.json` would store an allow-forever, a file written under
 * `data/packs/x/` would hot-load as code with the kernel's rights, and `read_file data/providers.json`
 * would hand a stored API key to any MCP client.
 *
 * Areas are compared by path segments, with the spellings the `.git` rule covers: case folded,
 * trailing dots and spaces and HFS+'s ignorable characters removed (a case-insensitive or NTFS-like
 * mount would open `Data./` as `data/`), and both the lexical and the real path of each folder, so a
 * link pointing in is caught once the sandbox has resolved it.
 *
 * Two kinds of other names no path comparison sees are covered too (kernel-aliases.ts): every place
 * a bind mount shows an area at (read from /proc/self/mountinfo, again at most every 250 ms when
 * asked, and counted as a spelling of the area), and hard links to the files of the areas closed to
 * every access (`linkedOwner`, asked only for a file with more than one link).
 */
import { realpathSync } from 'node:fs';
import path from 'node:path';
import { toDisposable, type Disposable } from '../disposable.js';
import { InodeIndex, MountTable, mountAliases } from './kernel-aliases.js';

/** Which intents an area is closed to: every one, or only writes and deletes (the kernel's own code). */
export type AreaReach = 'all' | 'change';

export interface KernelArea {
  /** The folder as registered (absolute). */
  readonly dir: string;
  /** What it is, for messages: "the data folder", "the pack folder", ... */
  readonly label: string;
  readonly reach: AreaReach;
}

interface Entry {
  area: KernelArea;
  /** Folded segments of each spelling: the lexical path and its real path. */
  spellings: string[][];
  /** Folded segments of every other place a bind mount shows the area at (or a part of it). */
  aliases: string[][];
}

/** What a KernelState and its `except()` views share besides the areas. */
interface Shared {
  mounts: MountTable;
  /** Mount table read at least once (the first question reads it). */
  mountsRead: boolean;
  inodes: InodeIndex;
  /** Bumped when an area is added or removed; the inode index is rebuilt when it lags. */
  version: number;
  indexedVersion: number;
  /** The areas the inode index covers, in the order given to it. */
  indexed: Entry[];
}

function newShared(): Shared {
  return { mounts: new MountTable(), mountsRead: false, inodes: new InodeIndex(), version: 0, indexedVersion: -1, indexed: [] };
}

/** The stat fields `linkedOwner` needs (bigint stats, as the sandbox takes them). */
export interface LinkStats {
  dev: bigint;
  ino: bigint;
  nlink: bigint;
  isDirectory(): boolean;
}

/** Characters macOS (HFS+) ignores in names. */
// eslint-disable-next-line no-misleading-character-class -- each code point is matched on its own on purpose, the combining ones (U+034F, variation selectors) included
const IGNORABLE_CHARS = /[\u00ad\u034f\u180b-\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufe00-\ufe0f\ufeff]/g;

/**
 * A name as a case-insensitive, NTFS- or HFS+-like file system would see it (HFS+'s ignorable
 * characters and NTFS's trailing dots and spaces gone, case folded). The `.git` rule uses it too.
 */
export function foldSegment(segment: string): string {
  return segment
    .replace(IGNORABLE_CHARS, '')
    .replace(/[. ]+$/, '')
    .toLowerCase();
}

function foldedSegments(absolutePath: string): string[] {
  return path
    .resolve(absolutePath)
    .split(path.sep)
    .filter((s) => s.length > 0)
    .map(foldSegment);
}

function within(parent: readonly string[], child: readonly string[]): boolean {
  return child.length >= parent.length && parent.every((seg, i) => seg === child[i]);
}

/** The folders that are the kernel's own. One per kernel instance; packs and skills add theirs as they load. */
export class KernelState {
  /**
   * `entries` and `exempt` are for `except()`: a view shares its parent's areas (later additions
   * included) and treats the exempt folders as nobody's.
   */
  constructor(
    private readonly entries: Entry[] = [],
    private readonly exempt: readonly string[][] = [],
    private readonly shared: Shared = newShared(),
  ) {}

  /**
   * A view in which `dir` and everything below it belong to nobody: a skill's command running in its
   * own folder reads its bundled scripts there, although that folder lies in a skill folder.
   */
  except(dir: string): KernelState {
    const spellings = [foldedSegments(dir)];
    try {
      spellings.push(foldedSegments(realpathSync.native(dir)));
    } catch {
      // not there: the lexical spelling is enough
    }
    return new KernelState(this.entries, [...this.exempt, ...spellings], this.shared);
  }

  /**
   * Registers a folder. It need not exist yet (a data/packs folder made later is still covered:
   * the lexical spelling is kept, and the real path is taken once it exists at registration).
   */
  add(dir: string, label: string, reach: AreaReach = 'all'): Disposable {
    const abs = path.resolve(dir);
    const spellings = [foldedSegments(abs)];
    let real = abs;
    try {
      real = realpathSync.native(abs);
      if (real !== abs) spellings.push(foldedSegments(real));
    } catch {
      // Not there yet: its lexical spelling guards it, and a real path cannot differ until it exists.
    }
    const entry: Entry = { area: { dir: abs, label, reach }, spellings, aliases: [] };
    if (this.shared.mountsRead) entry.aliases = aliasesOf(this.shared.mounts, real);
    this.entries.push(entry);
    this.shared.version++;
    return toDisposable(() => {
      const i = this.entries.indexOf(entry);
      if (i >= 0) this.entries.splice(i, 1);
      this.shared.version++;
    });
  }

  /** Every registered area. */
  areas(): readonly KernelArea[] {
    return this.entries.map((e) => e.area);
  }

  /**
   * The area an absolute path lies in (or is), for the given kind of access: `read` (read, list,
   * search, stat, a working directory) meets only `all` areas; `change` meets every area. Null when
   * the path is none of the kernel's business. Pass real (resolved) paths where you have them;
   * lexical ones are compared too.
   */
  owner(absolutePath: string, access: 'read' | 'change' = 'change'): KernelArea | null {
    if (typeof absolutePath !== 'string' || !path.isAbsolute(absolutePath) || absolutePath.includes('\0')) return null;
    this.refreshMounts();
    const segments = foldedSegments(absolutePath);
    if (this.exempt.some((e) => within(e, segments))) return null;
    for (const { area, spellings, aliases } of this.entries) {
      if (access === 'read' && area.reach !== 'all') continue;
      if (spellings.some((s) => within(s, segments)) || aliases.some((s) => within(s, segments))) return area;
    }
    return null;
  }

  /**
   * The area a file with more than one name (a hard link) is also a file of: `stats` is the file's
   * own (fstat of what the caller opened). Null at once for a directory or a file with a single
   * link, which cannot be another name of anything; otherwise its device and inode are looked up
   * among the files of the areas closed to every access (the data folder, pack and skill folders),
   * an index kept up to date by comparing each of their folders' times (see InodeIndex). The
   * kernel's code and dependencies (closed to changes only) are not indexed: they are large, and
   * installed read-only in a real installation.
   */
  linkedOwner(stats: LinkStats): KernelArea | null {
    if (stats.nlink <= 1n || stats.isDirectory()) return null;
    const shared = this.shared;
    if (shared.indexedVersion !== shared.version) {
      shared.indexed = this.entries.filter((e) => e.area.reach === 'all');
      shared.indexedVersion = shared.version;
    }
    // Real paths worked out again each time (a few realpaths, and only for files with several
    // links): a data folder made, moved or reached through a new link since is indexed where it is now.
    shared.inodes.setTops(shared.indexed.map((e) => realOr(e.area.dir)));
    const hit = shared.inodes.lookup(stats.dev, stats.ino);
    if (!hit) return null;
    const dirSegments = foldedSegments(hit.dir);
    if (this.exempt.some((e) => within(e, dirSegments))) return null;
    return shared.indexed[hit.top]?.area ?? null;
  }

  /**
   * Reads the mount table again if it is due (every 250 ms at most; `force`: now) and, when it
   * changed, works out again where bind mounts show each area.
   */
  refreshMounts(force = false): void {
    const shared = this.shared;
    const first = !shared.mountsRead;
    if (!shared.mounts.refresh(force || first) && !first) return;
    shared.mountsRead = true;
    // The real path now: a folder made after it was registered may be reached through a link.
    for (const entry of this.entries) entry.aliases = aliasesOf(shared.mounts, realOr(entry.area.dir));
  }

  /**
   * The areas that lie strictly inside `dir` (e.g. the data folder inside the root), so a walk over
   * `dir` (search, clone, listing) can leave them out.
   */
  inside(dir: string, access: 'read' | 'change' = 'read'): KernelArea[] {
    this.refreshMounts();
    const base = foldedSegments(dir);
    const out: KernelArea[] = [];
    for (const { area, spellings, aliases } of this.entries) {
      if (access === 'read' && area.reach !== 'all') continue;
      if (spellings.some((s) => s.length > base.length && within(base, s)) || aliases.some((s) => s.length > base.length && within(base, s))) out.push(area);
    }
    return out;
  }
}

/** Where bind mounts show `real` besides `real` itself, as folded segments. */
function aliasesOf(mounts: MountTable, real: string): string[][] {
  return mountAliases(mounts.mounts, real).map(foldedSegments);
}

function realOr(dir: string): string {
  try {
    return realpathSync.native(dir);
  } catch {
    return dir;
  }
}
