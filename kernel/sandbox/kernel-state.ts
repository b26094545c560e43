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
 */
import { realpathSync } from 'node:fs';
import path from 'node:path';
import { toDisposable, type Disposable } from '../disposable.js';

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
    return new KernelState(this.entries, [...this.exempt, ...spellings]);
  }

  /**
   * Registers a folder. It need not exist yet (a data/packs folder made later is still covered:
   * the lexical spelling is kept, and the real path is taken once it exists at registration).
   */
  add(dir: string, label: string, reach: AreaReach = 'all'): Disposable {
    const abs = path.resolve(dir);
    const spellings = [foldedSegments(abs)];
    try {
      const real = realpathSync.native(abs);
      if (real !== abs) spellings.push(foldedSegments(real));
    } catch {
      // Not there yet: its lexical spelling guards it, and a real path cannot differ until it exists.
    }
    const entry: Entry = { area: { dir: abs, label, reach }, spellings };
    this.entries.push(entry);
    return toDisposable(() => {
      const i = this.entries.indexOf(entry);
      if (i >= 0) this.entries.splice(i, 1);
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
    const segments = foldedSegments(absolutePath);
    if (this.exempt.some((e) => within(e, segments))) return null;
    for (const { area, spellings } of this.entries) {
      if (access === 'read' && area.reach !== 'all') continue;
      if (spellings.some((s) => within(s, segments))) return area;
    }
    return null;
  }

  /**
   * The areas that lie strictly inside `dir` (e.g. the data folder inside the root), so a walk over
   * `dir` (search, clone, listing) can leave them out.
   */
  inside(dir: string, access: 'read' | 'change' = 'read'): KernelArea[] {
    const base = foldedSegments(dir);
    const out: KernelArea[] = [];
    for (const { area, spellings } of this.entries) {
      if (access === 'read' && area.reach !== 'all') continue;
      if (spellings.some((s) => s.length > base.length && within(base, s))) out.push(area);
    }
    return out;
  }
}
