import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { lstat, open, rename, unlink, type FileHandle } from 'node:fs/promises';
import * as path from 'node:path';

// O_EXCL: a temp name someone planted (a link to elsewhere) makes the write fail rather than follow it.
const TEMP_FLAGS = fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | (fs.constants.O_NOFOLLOW ?? 0);

// The temp file's name says which process writes it, so a sweep can tell a killed write's leftover
// from a write still under way (in this process or another): `<file>.<pid>.<8 hex>.tmp`.
function defaultTemp(file: string): string {
  return `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
}

const DEFAULT_TEMP = /\.([1-9]\d{0,9})\.[0-9a-f]{8}\.tmp$/;

/** The process that wrote `name`, when it is a temp file of this module's naming (`<file>.<pid>.<8 hex>.tmp`); null otherwise. */
export function atomicTempWriter(name: string): number | null {
  const m = name.endsWith('.tmp') ? DEFAULT_TEMP.exec(name) : null;
  // A pid is a positive 32-bit number: a longer one was never written by this module.
  return m && m.index > 0 && Number(m[1]) <= 0x7fffffff ? Number(m[1]) : null;
}

/** When this process started, on the clock file times are set by. */
const STARTED_MS = Date.now() - process.uptime() * 1000;
/** File times can be coarse (whole seconds; two on FAT): "older than this process" leaves this much room. */
const MTIME_SLACK_MS = 2000;

/**
 * Whether a temp file written by process `pid` is a leftover: a write that can no longer finish.
 * Another pid: when no process has it any more (a live one, even another user's, may still be
 * writing). This process's own pid, or a naming without one (`null`): when the file is older than
 * this process (a container's kernel gets the same pid on every start, so a dead one's files carry
 * ours). A pid reused by an unrelated live process keeps its file until that process is gone.
 */
function isTempLeftover(pid: number | null, mtimeMs: number): boolean {
  if (pid === null || pid === process.pid) return mtimeMs < STARTED_MS - MTIME_SLACK_MS;
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'EPERM';
  }
}

/**
 * Removes `file`, the temp file of an atomic write by process `pid` (null when its naming carries
 * none), if it is a leftover of a killed write (see isTempLeftover): a regular file, never a link or
 * a folder. The caller matches the name against its own writer's naming; this only judges the
 * writer. Returns whether it was removed; any failure (gone meanwhile, no permission) is false.
 */
export async function removeTempLeftover(file: string, pid: number | null): Promise<boolean> {
  try {
    const st = await lstat(file);
    if (!st.isFile() || !isTempLeftover(pid, st.mtimeMs)) return false;
    await unlink(file);
    return true;
  } catch {
    return false;
  }
}

/**
 * Writes a file so that a crash leaves the old or the new content, never half: a temp file beside
 * it (O_EXCL), fsync, rename over the target, then fsync the folder so the rename itself survives a
 * power cut. The file gets `mode` exactly (the umask does not narrow it). On any failure the temp
 * file is removed and the target is left as it was.
 */
export function writeFileAtomic(file: string, content: string | Uint8Array, mode = 0o600): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = defaultTemp(file);
  let created = false;
  try {
    const fd = fs.openSync(tmp, TEMP_FLAGS, mode);
    created = true;
    try {
      fs.writeFileSync(fd, content);
      fs.fchmodSync(fd, mode);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, file);
  } catch (err) {
    // Only a temp file this call made: whatever already sat at the name (EEXIST) is not ours to remove.
    if (created) fs.rmSync(tmp, { force: true });
    throw err;
  }
  syncFolder(path.dirname(file));
}

/** Points in an async atomic write where a caller may look, check or stop (a throw abandons the write). */
export interface AtomicWriteSteps {
  /** The temp file is open and still empty. */
  opened?(handle: FileHandle): Promise<void> | void;
  /** The temp file is complete and synced; the target is untouched. Throwing here leaves the target as it was. */
  beforeRename?(temp: string): Promise<void> | void;
  /** The target holds the new content; the folder is not synced yet. */
  renamed?(): void;
}

export interface AtomicWriteOptions {
  /** The file's mode, applied exactly; null: as any new file of this process (0666 less the umask). */
  mode: number | null;
  /** Owner to keep (applied only when running as root; ignored where it cannot be). */
  owner?: { uid: number; gid: number };
  /** The temp file's path: in the target's folder, so the rename never crosses file systems. Default `<file>.<pid>.<random>.tmp`. */
  temp?: string;
  steps?: AtomicWriteSteps;
}

/**
 * The async form of `writeFileAtomic`, with the same guarantees, plus `steps` for callers that do
 * more around the write (fs-tools keeps a backup and re-checks the folder before the rename).
 */
export async function writeFileAtomicAsync(file: string, content: string | Uint8Array, options: AtomicWriteOptions): Promise<void> {
  const mode = options.mode;
  const tmp = options.temp ?? defaultTemp(file);
  const steps = options.steps ?? {};
  let created = false;
  try {
    const h = await open(tmp, TEMP_FLAGS, mode ?? 0o666);
    created = true;
    try {
      await steps.opened?.(h);
      await h.writeFile(content);
      if (mode !== null) await h.chmod(mode);
      const owner = options.owner;
      if (owner && process.getuid?.() === 0) await h.chown(owner.uid, owner.gid).catch(() => {});
      await h.sync();
    } finally {
      await h.close();
    }
    await steps.beforeRename?.(tmp);
    await rename(tmp, file);
  } catch (err) {
    if (created) await unlink(tmp).catch(() => {});
    throw err;
  }
  steps.renamed?.();
  await syncFolderAsync(path.dirname(file));
}

/** fsync on a folder makes a rename in it durable. Some file systems refuse it; the rename is still atomic. */
function syncFolder(dir: string): void {
  let fd: number | undefined;
  try {
    fd = fs.openSync(dir, fs.constants.O_RDONLY);
    fs.fsyncSync(fd);
  } catch {
    // EINVAL/EISDIR on some file systems: nothing more can be done.
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

async function syncFolderAsync(dir: string): Promise<void> {
  let h: FileHandle | undefined;
  try {
    h = await open(dir, fs.constants.O_RDONLY);
    await h.sync();
  } catch {
    // As in syncFolder.
  } finally {
    await h?.close().catch(() => {});
  }
}

/** A cheap fingerprint of a file's identity and content state, or 'absent'. */
export function fileStamp(file: string): string {
  try {
    const st = fs.statSync(file);
    return `${st.mtimeMs}:${st.size}:${st.ino}`;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'absent' : `error:${(err as NodeJS.ErrnoException).code ?? 'unknown'}`;
  }
}
