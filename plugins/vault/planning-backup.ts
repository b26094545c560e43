/**
 * Dated copies of the planning database (statuses, projects, tasks, inbox: the truth, not a cache),
 * beside it in the pack's data folder: `vault-planning.sqlite.backup-<YYYY-MM-DD>`, made with
 * `VACUUM INTO` (a consistent copy while the database is in use) at most once a day, when the vault
 * first opens its planning data; the newest BACKUPS_KEPT are kept. What a person restores from when
 * the file is damaged (runtime.ts names the newest).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Database } from 'better-sqlite3';
import type { Logger } from 'memo-kernel/pack';

export const BACKUPS_KEPT = 3;

export function backUpDaily(db: Database, file: string, now: number, logger: Logger): void {
  const dir = path.dirname(file);
  const prefix = `${path.basename(file)}.backup-`;
  const target = path.join(dir, `${prefix}${new Date(now).toISOString().slice(0, 10)}`);
  // A copy an earlier process was killed while making: its own naming, older than this process.
  for (const n of fs.readdirSync(dir).filter((x) => x.startsWith(prefix) && x.endsWith('.tmp'))) {
    const at = path.join(dir, n);
    if ((fs.statSync(at, { throwIfNoEntry: false })?.mtimeMs ?? Infinity) < performance.timeOrigin) fs.rmSync(at, { force: true });
  }
  if (fs.existsSync(target)) return;
  const temp = `${target}.${process.pid}.tmp`;
  try {
    fs.rmSync(temp, { force: true });
    db.prepare('VACUUM INTO ?').run(temp);
    fs.chmodSync(temp, 0o600);
    fs.renameSync(temp, target);
  } catch (err) {
    fs.rmSync(temp, { force: true });
    logger.warn(`vault: the daily backup of ${file} could not be made (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    return;
  }
  const kept = backupsOf(file);
  for (const old of kept.slice(0, Math.max(0, kept.length - BACKUPS_KEPT))) fs.rmSync(old, { force: true });
}

/** The dated backups of `file` beside it, oldest first, as paths. */
export function backupsOf(file: string): string[] {
  const dir = path.dirname(file);
  const prefix = `${path.basename(file)}.backup-`;
  try {
    return fs
      .readdirSync(dir)
      .filter((n) => n.startsWith(prefix) && !n.endsWith('.tmp'))
      .sort()
      .map((n) => path.join(dir, n));
  } catch {
    return [];
  }
}
