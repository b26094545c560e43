/**
 * Other names of the kernel's state: the ones a path comparison cannot see.
 *
 * - A **hard link** is a second name of the same inode, anywhere on the same file system: realpath
 *   and /proc/self/fd name the link, not the kernel's file. `InodeIndex` knows the inodes of the
 *   files in the kernel's areas, so a file whose link count is above one can be compared with them.
 *   Only such files are ever looked up (a file with one link has no other name), so the hot path
 *   does not pay for it.
 * - A **bind mount** shows a folder (or a file) of a file system at a second place: the data folder
 *   mounted under the root is, as far as paths tell, an ordinary folder there. `mountAliases`
 *   reads /proc/self/mountinfo (each mount's root inside its file system and its mount point) and
 *   names every place where an area can also be reached, so the path rules can cover those too.
 */
import { lstatSync, readdirSync, readFileSync, type BigIntStats } from 'node:fs';
import path from 'node:path';

// ---------------------------------------------------------------------------------------------
// Mounts

/** One line of /proc/self/mountinfo (see proc(5)). */
export interface MountEntry {
  id: number;
  parent: number;
  /** `major:minor` of the file system (the same for every mount of it). */
  device: string;
  /** The folder of the file system that this mount shows ("/" for the whole of it). */
  root: string;
  /** Where it is shown. */
  mountPoint: string;
}

/** mountinfo writes space, tab, newline and backslash in paths as octal escapes (`\040`). */
function unescapeMountPath(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

/** The mounts listed in mountinfo text, in its order (a mount listed later may cover an earlier one). Malformed lines are skipped. */
export function parseMountInfo(text: string): MountEntry[] {
  const out: MountEntry[] = [];
  for (const line of text.split('\n')) {
    // id parent major:minor root mount-point options [optional fields...] - fstype source super-options
    const fields = line.split(' ');
    if (fields.length < 5 || !/^\d+:\d+$/.test(fields[2] ?? '')) continue;
    const id = Number(fields[0]);
    const parent = Number(fields[1]);
    const root = unescapeMountPath(fields[3]!); // length checked above
    const mountPoint = unescapeMountPath(fields[4]!);
    if (!Number.isInteger(id) || !Number.isInteger(parent) || !path.isAbsolute(root) || !path.isAbsolute(mountPoint)) continue;
    out.push({ id, parent, device: fields[2]!, root, mountPoint });
  }
  return out;
}

function segments(p: string): string[] {
  return p.split('/').filter((s) => s.length > 0);
}

function isWithin(parent: readonly string[], child: readonly string[]): boolean {
  return child.length >= parent.length && parent.every((s, i) => s === child[i]);
}

function join(base: readonly string[], rest: readonly string[]): string {
  return '/' + [...base, ...rest].join('/');
}

/**
 * The other places where the folder (or file) `target`, a real absolute path, can be reached
 * through the mounts listed: for every mount of the same file system that shows `target` or a
 * folder above it, the matching path below its mount point; for every mount that shows a part of
 * `target`, its whole mount point. `target` itself is left out. Empty when no mount contains
 * `target` (or the table is empty).
 */
export function mountAliases(mounts: readonly MountEntry[], target: string): string[] {
  const targetSegments = segments(target);
  // The mount `target` is reached through: the deepest mount point above it, the last one listed
  // when several are stacked at that place.
  let home: MountEntry | undefined;
  let homeDepth = -1;
  for (const m of mounts) {
    const mp = segments(m.mountPoint);
    if (mp.length >= homeDepth && isWithin(mp, targetSegments)) {
      home = m;
      homeDepth = mp.length;
    }
  }
  if (!home) return [];
  // Where `target` lies inside its file system.
  const inFs = [...segments(home.root), ...targetSegments.slice(homeDepth)];
  const aliases = new Set<string>();
  for (const m of mounts) {
    if (m.device !== home.device) continue;
    const root = segments(m.root);
    const mp = segments(m.mountPoint);
    if (isWithin(root, inFs)) aliases.add(join(mp, inFs.slice(root.length)));
    else if (isWithin(inFs, root)) aliases.add(join(mp, []));
  }
  aliases.delete(join(targetSegments, []));
  return [...aliases];
}

/**
 * Reads /proc/self/mountinfo again when asked and at least `intervalMs` have passed since the last
 * read, and says whether it changed. Reading it costs tens of microseconds (far more than a small
 * `read_file`), so it is not read on every call. Where the file does not exist (not Linux), the
 * table stays empty.
 */
export class MountTable {
  private text: string | undefined;
  private readAt = Number.NEGATIVE_INFINITY;
  mounts: readonly MountEntry[] = [];

  constructor(
    private readonly file = '/proc/self/mountinfo',
    private readonly intervalMs = 250,
  ) {}

  /** Re-reads the table when due (or `force`d). True when it changed since the last read. */
  refresh(force = false): boolean {
    const now = performance.now();
    if (!force && now - this.readAt < this.intervalMs) return false;
    this.readAt = now;
    let text: string;
    try {
      text = readFileSync(this.file, 'utf8');
    } catch {
      text = '';
    }
    if (text === this.text) return false;
    this.text = text;
    this.mounts = parseMountInfo(text);
    return true;
  }
}

// ---------------------------------------------------------------------------------------------
// Hard links

/** What the index knows of one folder of an area. */
interface DirRecord {
  /** The folder's identity and times when it was listed: a change in its entries changes its mtime and ctime. */
  ino: bigint;
  dev: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
  /** Listed too soon after its last change for its mtime to be trusted (timestamps are coarse): listed again next time. */
  racy: boolean;
  /** Could not be listed (EACCES, EMFILE...): any file might be in it, so a lookup answers as if it were. */
  unreadable: boolean;
  /** Device and inode (`"dev:ino"`) of every entry that is not a folder. */
  files: Set<string>;
  subdirs: string[];
  /** The index of the area the folder belongs to. */
  area: number;
}

/**
 * A folder changed less than this before it was listed might change again within the same tick of
 * the file system's clock without its mtime moving (git calls such entries "racily clean").
 */
const RACY_NS = 2_000_000_000n;

/**
 * The inodes of every file in some folders (the kernel's areas), kept up to date cheaply: each
 * lookup first compares every known folder's mtime and ctime with those it had when it was listed
 * (one lstat per folder) and lists again only the folders that changed, so a kernel file replaced by
 * a rename (a new inode) is known by its new inode at the next lookup. Lookups are meant to be rare:
 * only for files that have more than one link.
 */
export class InodeIndex {
  private readonly dirs = new Map<string, DirRecord>();
  private tops: readonly string[] = [];

  /** The folders to index (real paths), in order; the index of a folder here is what `lookup` returns. Unchanged tops keep what is known. */
  setTops(tops: readonly string[]): void {
    if (tops.length === this.tops.length && tops.every((t, i) => t === this.tops[i])) return;
    this.tops = [...tops];
    this.dirs.clear();
  }

  /**
   * The index (into the folders given to `setTops`) of the folder holding another name of the
   * inode `dev:ino`, and the folder's path, or null. It fails closed: while a folder of an area
   * cannot be listed, the answer is that folder (the inode may be in it).
   */
  lookup(dev: bigint, ino: bigint): { top: number; dir: string } | null {
    this.update();
    const key = `${dev}:${ino}`;
    let unknown: { top: number; dir: string } | null = null;
    for (const [dir, record] of this.dirs) {
      if (record.files.has(key)) return { top: record.area, dir };
      if (record.unreadable && !unknown) unknown = { top: record.area, dir };
    }
    return unknown;
  }

  /** Lists the folders that changed (or appeared) since they were last listed. */
  private update(): void {
    const seen = new Set<string>();
    const visit = (dir: string, area: number): void => {
      if (seen.has(dir)) return; // nested areas (data/packs in data): listed once
      seen.add(dir);
      let stats: BigIntStats;
      try {
        stats = lstatSync(dir, { bigint: true });
      } catch {
        this.dirs.delete(dir);
        return;
      }
      if (!stats.isDirectory()) {
        this.dirs.delete(dir);
        return;
      }
      let record = this.dirs.get(dir);
      if (
        !record ||
        record.racy ||
        record.ino !== stats.ino ||
        record.dev !== stats.dev ||
        record.mtimeNs !== stats.mtimeNs ||
        record.ctimeNs !== stats.ctimeNs
      ) {
        record = this.list(dir, stats, area);
      }
      for (const sub of record.subdirs) visit(sub, area);
    };
    this.tops.forEach((top, i) => visit(top, i));
    for (const dir of this.dirs.keys()) if (!seen.has(dir)) this.dirs.delete(dir);
  }

  private list(dir: string, stats: BigIntStats, area: number): DirRecord {
    const listedAt = BigInt(Date.now()) * 1_000_000n;
    const record: DirRecord = {
      ino: stats.ino,
      dev: stats.dev,
      mtimeNs: stats.mtimeNs,
      ctimeNs: stats.ctimeNs,
      // A change sets the mtime to the present: only a recent one could come out the same again.
      racy: stats.mtimeNs > listedAt - RACY_NS,
      unreadable: false,
      files: new Set(),
      subdirs: [],
      area,
    };
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      names = []; // unreadable: nothing can be known of it, so lookups treat any inode as its (listed again next time)
      record.racy = true;
      record.unreadable = true;
    }
    for (const name of names) {
      const entry = path.join(dir, name);
      try {
        const s = lstatSync(entry, { bigint: true });
        if (s.isDirectory()) record.subdirs.push(entry);
        else if (!s.isSymbolicLink()) record.files.add(`${s.dev}:${s.ino}`);
      } catch {
        record.racy = true; // gone meanwhile: look again next time
      }
    }
    this.dirs.set(dir, record);
    return record;
  }
}
