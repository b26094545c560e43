/**
 * Is a SQLite file whole? A check cheap enough for start-up: the file's header, its write-ahead log,
 * then `PRAGMA quick_check` (every b-tree page and the free list; no cross-check of indexes against
 * their tables). Measured in a fresh process on a busy 2-core machine (load 11): 90-150 ms for a
 * 28.5 MB conversations file (1,000 conversations, 16,000 messages), 270-350 ms for 141 MB (5,000,
 * 80,000); 35-45 ms and 130-160 ms when checked again in the same process.
 *
 * Nothing here writes, renames or deletes the file: a damaged file is the truth of what it held, for
 * the person to restore or set aside. A missing file is not damage (it is made on first use), unless
 * its write-ahead log is still there: SQLite, opening the file anew, would drop the log's changes.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

export type SqliteHealth =
  /** Whole: `ms` the check took. */
  | { state: 'ok'; bytes: number; ms: number }
  /** No file yet (and no write-ahead log left of one). */
  | { state: 'absent' }
  /** `problem` continues "The file X ...": "is cut short (...)", "is not a SQLite database (...)". */
  | { state: 'damaged'; problem: string }
  /** It could not be read to check it (permissions, a lock): not known to be damaged. */
  | { state: 'unchecked'; reason: string };

export interface SqliteHealthOptions {
  /** What shows the file held data once ("agent.key beside it"): an empty (0-byte) file was then emptied, not new. */
  heldData?: string;
}

const HEADER = Buffer.from('SQLite format 3\0', 'latin1');

function sizeOf(file: string): number | null {
  try {
    return fs.statSync(file).size;
  } catch {
    return null;
  }
}

function bytes(n: number): string {
  return `${n.toLocaleString('en-US')} bytes`;
}

/** What the header says of the file's length, when it can be trusted (see the SQLite file format, 1.3). */
function recordedLength(header: Buffer): number | null {
  const raw = header.readUInt16BE(16);
  const pageSize = raw === 1 ? 65536 : raw;
  const pages = header.readUInt32BE(28);
  // The page count is valid only when the "version-valid-for" number matches the change counter.
  if (pageSize < 512 || (pageSize & (pageSize - 1)) !== 0 || pages === 0 || header.readUInt32BE(92) !== header.readUInt32BE(24)) return null;
  return pageSize * pages;
}

/** quick_check's findings, short and on one line ("Tree 6 page 24 cell 6: invalid page number 2771690277; ..."). */
function oneLine(found: string[]): string {
  return found
    .map((f) =>
      f
        .replace(/\*\*\* in database \w+ \*\*\*/, '')
        .replace(/\s+/g, ' ')
        .trim(),
    )
    .join('; ')
    .slice(0, 300);
}

/** A failure SQLite reports for a damaged file (SQLITE_CORRUPT and its extended codes, SQLITE_NOTADB). */
export function isSqliteDamage(err: unknown): boolean {
  for (let e = err as { code?: unknown; cause?: unknown; driverError?: unknown } | undefined, depth = 0; e && depth < 5; depth++) {
    if (typeof e.code === 'string' && (e.code.startsWith('SQLITE_CORRUPT') || e.code === 'SQLITE_NOTADB')) return true;
    e = (e.driverError ?? e.cause) as typeof e;
  }
  return false;
}

/** Checks `file` without changing it (see above). */
export async function checkSqliteFile(file: string, options: SqliteHealthOptions = {}): Promise<SqliteHealth> {
  const name = path.basename(file);
  const wal = sizeOf(`${file}-wal`) ?? 0;
  const walNote = `its write-ahead log ${name}-wal (${bytes(wal)}, its latest changes)`;
  let size: number;
  try {
    size = fs.statSync(file).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return { state: 'unchecked', reason: (err as Error).message };
    return wal > 0 ? { state: 'damaged', problem: `is missing, but ${walNote} is still there` } : { state: 'absent' };
  }
  if (size === 0) {
    if (wal > 0) return { state: 'damaged', problem: `is empty (0 bytes) beside ${walNote}` };
    return options.heldData ? { state: 'damaged', problem: `is empty (0 bytes), though ${options.heldData} shows it held data` } : { state: 'absent' };
  }
  const header = Buffer.alloc(100);
  let read: number;
  try {
    const fd = fs.openSync(file, 'r');
    try {
      read = fs.readSync(fd, header, 0, 100, 0);
    } finally {
      fs.closeSync(fd);
    }
  } catch (err) {
    return { state: 'unchecked', reason: (err as Error).message };
  }
  if (read < 100 || !header.subarray(0, 16).equals(HEADER))
    return { state: 'damaged', problem: `is not a SQLite database (its first bytes are not SQLite's header; ${bytes(size)})` };
  // Without a write-ahead log the file is all there is: shorter than its header says is cut short.
  const expected = recordedLength(header);
  const cut = wal === 0 && expected !== null && size < expected ? `is cut short (${bytes(size)} of the ${bytes(expected)} its header records)` : null;

  const started = performance.now();
  const { default: Sqlite } = await import('better-sqlite3');
  let db: import('better-sqlite3').Database | undefined;
  try {
    // Read-only where a write-ahead log holds changes (it is read, never folded into the file here).
    // Without one, a read-write connection: SQLite's own -wal and -shm files then go when it closes,
    // where a read-only one would leave them, and a check that reads only writes nothing either way.
    db = new Sqlite(file, { readonly: wal > 0, fileMustExist: true, timeout: 2000 });
    const found = (db.pragma('quick_check(3)') as Array<{ quick_check: string }>).map((r) => r.quick_check).filter((r) => r !== 'ok');
    if (found.length) return { state: 'damaged', problem: cut ?? `is damaged (SQLite's quick_check: ${oneLine(found)})` };
    return { state: 'ok', bytes: size, ms: Math.round(performance.now() - started) };
  } catch (err) {
    if (isSqliteDamage(err)) return { state: 'damaged', problem: cut ?? `is damaged (SQLite: ${(err as Error).message})` };
    return { state: 'unchecked', reason: (err as Error).message };
  } finally {
    db?.close();
  }
}
