/**
 * The protected-path rules a PathSandbox applies whatever the root: the system directories no tool
 * may touch (SYSTEM_DIRS, and which of them lie below a given root), `.git` however a file system
 * spells it, and the segment-by-segment containment test every check is made with.
 */
import { realpathSync } from 'node:fs';
import path from 'node:path';
import { foldSegment } from './kernel-state.js';

/**
 * Directories no tool may read, list, write or delete, whatever the root. They matter when the root
 * is broad (e.g. `/`); a root deliberately placed *inside* one of them (say `/var/www/site` or
 * `/opt/app`) is honoured, because every path is confined to that root anyway.
 *
 * Choices: `/opt` is in (vendor-installed software, like /usr). `/srv`, `/home`, `/tmp`, `/mnt` and
 * `/media` are out: they hold user data and scratch space, which is what a workspace is for. `/root`
 * is in (the superuser's home, keys and shell history). On macOS `/etc`, `/var` are links to
 * `/private/...`; both spellings are listed, and the real path of every entry is added at run time
 * (merged-/usr systems make `/bin` a link to `/usr/bin`, for example).
 */
export const SYSTEM_DIRS: readonly string[] = Object.freeze([
  // Linux / POSIX
  '/etc',
  '/usr',
  '/boot',
  '/efi',
  '/bin',
  '/sbin',
  '/lib',
  '/lib32',
  '/lib64',
  '/libx32',
  '/proc',
  '/sys',
  '/dev',
  '/var',
  '/root',
  '/run',
  '/opt',
  '/snap',
  '/lost+found',
  // macOS
  '/System',
  '/Library',
  '/Applications',
  '/private/etc',
  '/private/var',
  '/cores',
]);

/** macOS and Windows file systems are usually case-insensitive: compare system dirs folded there. */
export const FOLD_CASE = process.platform === 'darwin' || process.platform === 'win32';

export function segmentsOf(absolutePath: string): string[] {
  return absolutePath.split(path.sep).filter((s) => s.length > 0);
}

/** Whether `child` is `parent` or below it, compared whole segment by whole segment. */
export function isWithinSegments(parent: readonly string[], child: readonly string[], fold = false): boolean {
  if (child.length < parent.length) return false;
  return parent.every((seg, i) => (fold ? seg.toLowerCase() === child[i]?.toLowerCase() : seg === child[i]));
}

/**
 * Whether a name means `.git` on some file system. Like git's own core.protectNTFS/protectHFS
 * (on by default on every platform), this also catches NTFS's trailing dots/spaces and HFS+'s
 * ignorable characters, so a repository checked out elsewhere cannot be attacked through this one.
 */
export function isGitSegment(segment: string): boolean {
  return foldSegment(segment) === '.git';
}

/**
 * The system directories (and their real paths) that lie strictly below the root. One at or above
 * the root is not protected: the root was put there on purpose, and nothing outside it is reachable.
 */
export function protectedDirsBelow(rootSegments: readonly string[]): string[][] {
  const spellings = new Set<string>();
  for (const dir of SYSTEM_DIRS) {
    spellings.add(dir);
    try {
      spellings.add(realpathSync.native(dir));
    } catch {
      // Not on this system: the spelling alone still guards it should it appear later.
    }
  }
  return [...spellings].map(segmentsOf).filter((dir) => dir.length > rootSegments.length && isWithinSegments(rootSegments, dir, FOLD_CASE));
}
