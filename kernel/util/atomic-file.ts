import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { open, rename, unlink, type FileHandle } from 'node:fs/promises';
import * as path from 'node:path';

// O_EXCL: a temp name someone planted (a link to elsewhere) makes the write fail rather than follow it.
const TEMP_FLAGS = fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | (fs.constants.O_NOFOLLOW ?? 0);

function defaultTemp(file: string): string {
  return `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
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
