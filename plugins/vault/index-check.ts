/**
 * The index's integrity check, run in a worker thread (runHeavy) for an index too large to check on
 * the event loop: `PRAGMA quick_check` reads every page (about 1 to 1.5 s for a 100 MB index of
 * 50,000 notes on a busy 2-core machine), and the kernel's other calls keep being served meanwhile.
 * Its own read-only connection; the kernel's stays open beside it (WAL).
 */
import Database from 'better-sqlite3';

/** `ok`, or what quick_check found first (a damaged file that cannot even be opened says so too). */
export function quickCheck(file: string): string {
  let db: Database.Database;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
  } catch (err) {
    return (err as Error).message;
  }
  try {
    return String(db.pragma('quick_check(1)', { simple: true }));
  } catch (err) {
    return (err as Error).message;
  } finally {
    db.close();
  }
}
