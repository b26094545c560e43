/**
 * `vault_index_health` (`memo vault status`): what a person asks when something looks wrong. The
 * vault's folder and note count, whether this run found the index damaged and set it aside, the
 * damaged index files kept beside it, how many note ids are kept outside the index (note-ids.jsonl),
 * and the planning database: where it is, whether its check passed, its dated backups.
 */
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { isMemoError, type ToolContext } from 'memo-kernel/pack';
import { backupsOf } from './planning-backup.js';
import { runtimeOf } from './runtime.js';
import type { ToolArgs } from './tool-args.js';

/** The names in the pack's data folder that start with `prefix`, sorted. */
function namesStarting(dir: string, prefix: string): string[] {
  try {
    return readdirSync(dir)
      .filter((n) => n.startsWith(prefix) && !n.endsWith('.tmp'))
      .sort();
  } catch {
    return [];
  }
}

export async function indexHealth(_args: ToolArgs['vault_index_health'], ctx: ToolContext) {
  const rt = runtimeOf(ctx);
  const dir = path.dirname(rt.indexFile);
  // Opening the vault checks the index (and heals it): the status is of the index as it now is.
  const vault = await rt.vault(ctx);
  const notes = vault.index.count();
  const broken = namesStarting(dir, 'vault.sqlite.broken-').filter((n) => !/-(wal|shm)$/.test(n));
  let planning: Record<string, unknown>;
  try {
    const ds = await rt.planningDatabase();
    planning =
      ds.options.type === 'better-sqlite3'
        ? { where: rt.planningFile, check: 'ok', backups: backupsOf(rt.planningFile).map((b) => path.basename(b)) }
        : { where: 'the shared PostgreSQL database (MEMO_DATABASE_URL)', check: 'ok' };
  } catch (err) {
    planning = {
      where: rt.planningFile,
      check: 'damaged',
      problem: isMemoError(err) ? err.message : (err as Error).message,
      backups: backupsOf(rt.planningFile).map((b) => path.basename(b)),
    };
  }
  const index = {
    file: rt.indexFile,
    bytes: statSync(rt.indexFile, { throwIfNoEntry: false })?.size ?? 0,
    /** `ok`, `running` (a large index is checked in a worker), or what the check found. */
    check: rt.indexCheck,
    healed: rt.healed,
    damaged_files_kept: broken,
    note_ids_kept: rt.journalSize,
  };
  const parts = [
    `${notes} notes indexed in ${vault.folder}`,
    rt.healed ? `the index was damaged (${rt.healed.problem}) and rebuilt; the damaged file is ${path.basename(rt.healed.setAside)}` : 'the index is sound',
    broken.length ? `${broken.length} damaged index file${broken.length === 1 ? '' : 's'} kept beside it (safe to delete)` : null,
    planning.check === 'ok' ? 'the planning database is sound' : 'the planning database is DAMAGED (see planning.problem)',
  ].filter(Boolean);
  return { folder: vault.folder, notes, index, planning, summary: parts.join('; ') };
}
