/**
 * Reading one vault file as the index stores it (its type, size, mtime, content hash and, for a note,
 * what it says), in the event loop or in a worker thread during a full build (index-build.ts). No
 * imports but Node's and the markdown parser, so a worker loads it quickly.
 */
import { createHash } from 'node:crypto';
import { closeSync, constants as fsConstants, fstatSync, lstatSync, openSync, readFileSync, readSync, realpathSync, type Stats } from 'node:fs';
import path from 'node:path';
import { fileTypeOf, parseNote, type FileType, type ParsedNote } from './markdown.js';

/** Markdown above this is indexed by name only (its text is not parsed or searchable). */
export const MAX_PARSE_BYTES = 8 * 1024 * 1024;
/** Filed files above this are fingerprinted by their size and first megabyte, not read whole. */
const FULL_HASH_BYTES = 8 * 1024 * 1024;

/** One file as the indexer read it. */
export interface FileRecord {
  path: string;
  fileType: FileType;
  size: number;
  mtime: number;
  hash: string;
  /** Markdown only. */
  parsed: ParsedNote | null;
}

/** The identity of a file that has other names (a hard link), for the kernel's own-files check. */
export interface FileIdentity {
  dev: bigint;
  ino: bigint;
  nlink: bigint;
}

export function sha256(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/**
 * Reads `rel` under the vault folder `real` (a real path, without links); null when it is gone, not a
 * regular file, not a vault file, or reached through a link. Read through one descriptor that follows
 * no link. A file with other names (a hard link) is checked by that descriptor's own fstat with
 * `isKernelFile` (the sandbox's, in the event loop); without one (in a worker) its identity comes
 * back in `identity`, for the caller to check before it indexes the record.
 *
 * Synchronous: a worker reads thousands of files this way several times faster than through the
 * thread pool, and the event loop reads one file at a time (a write tool's, the watcher's few).
 */
export function readFileRecord(
  real: string,
  rel: string,
  options: { stats?: Stats; isKernelFile?: (own: FileIdentity) => boolean; realDirs?: Map<string, boolean> } = {},
): { record: FileRecord; identity: FileIdentity | null } | null {
  const fileType = fileTypeOf(rel);
  if (!fileType) return null;
  const abs = path.join(real, rel);
  const dir = path.dirname(abs);
  try {
    // The folder's real path is itself: no link on the way (asked once per folder in a build).
    let noLink = options.realDirs?.get(dir);
    if (noLink === undefined) {
      try {
        noLink = realpathSync.native(dir) === dir;
      } catch {
        noLink = false;
      }
      options.realDirs?.set(dir, noLink);
    }
    if (!noLink) return null;
    const stats = options.stats ?? lstatSync(abs);
    if (!stats.isFile()) return null;
    const fd = openSync(abs, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW);
    try {
      let identity: FileIdentity | null = null;
      if (stats.nlink > 1) {
        const own = fstatSync(fd, { bigint: true });
        if (!own.isFile()) return null;
        identity = { dev: own.dev, ino: own.ino, nlink: own.nlink };
        if (options.isKernelFile) {
          if (options.isKernelFile(identity)) return null;
          identity = null;
        }
      }
      if (fileType !== 'markdown') {
        let hash: string;
        if (stats.size <= FULL_HASH_BYTES) hash = sha256(readFileSync(fd));
        else {
          const buf = Buffer.alloc(1024 * 1024);
          const bytesRead = readSync(fd, buf, 0, buf.length, 0);
          hash = `p:${stats.size}:${sha256(buf.subarray(0, bytesRead))}`;
        }
        return { record: { path: rel, fileType, size: stats.size, mtime: stats.mtimeMs, hash, parsed: null }, identity };
      }
      const buf = readFileSync(fd);
      const text = buf.length > MAX_PARSE_BYTES ? '' : buf.toString('utf8');
      return { record: { path: rel, fileType, size: buf.length, mtime: stats.mtimeMs, hash: sha256(buf), parsed: parseNote(text) }, identity };
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP') return null; // gone, or swapped for a link meanwhile
    throw err;
  }
}
