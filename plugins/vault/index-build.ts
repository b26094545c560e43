/**
 * The worker side of a full index build (the first open of a vault, a reindex; see Vault.bulkBuild):
 * run through the kernel's heavy-work pool (runHeavy), so the event loop writes the notes, tags and
 * links into the index while one worker reads and parses the next files and another puts the text of
 * those already in into a full-text table of a build file of its own. Two writers, two files: SQLite
 * takes one writer per file, and the full-text table is most of a build's work. The index takes the
 * build file's table over at the end (VaultIndex.finishBulk).
 *
 * Each function also runs in the event loop as it is (when no worker can be started).
 */
import { rmSync } from 'node:fs';
import Database from 'better-sqlite3';
import { readFileRecord, type FileIdentity, type FileRecord } from './file-record.js';
import { CREATE_FTS, type TextRow } from './vault-index.js';

/**
 * What `readFiles` gives back: the records without their notes' bodies (`parsed.body` is ''), the
 * bodies' UTF-8 bytes one after another in `bytes` (moved, not copied, to the caller and on to
 * `writeText`), and each record's `[start, end)` in them (null for a filed file).
 */
export interface ReadFilesResult {
  files: Array<{ record: FileRecord; identity: FileIdentity | null; span: [number, number] | null }>;
  bytes: ArrayBuffer;
}

/** The key runHeavy takes moved buffers back under (HEAVY_TRANSFER in the kernel's heavy-work.ts). */
const TRANSFER = 'memoHeavyTransfer';

/** Reads and parses vault files (vault-relative `paths` under the real folder `real`); those gone or not vault files are left out. */
export function readFiles(input: { real: string; paths: string[] }): { [TRANSFER]: ArrayBuffer[]; value: ReadFilesResult } {
  const files: ReadFilesResult['files'] = [];
  const bodies: string[] = [];
  const realDirs = new Map<string, boolean>();
  for (const rel of input.paths) {
    const read = readFileRecord(input.real, rel, { realDirs });
    if (!read) continue;
    files.push({ ...read, span: null });
    bodies.push(read.record.parsed?.body ?? '');
  }
  // The bodies as bytes in one buffer: a few copies of a chunk's text (to the event loop, to the text
  // worker) cost more than the rest of the build's messages together.
  const lengths = bodies.map((b) => Buffer.byteLength(b, 'utf8'));
  const bytes = Buffer.allocUnsafeSlow(lengths.reduce((a, b) => a + b, 0));
  let at = 0;
  files.forEach((f, i) => {
    if (!f.record.parsed) return;
    bytes.write(bodies[i]!, at, 'utf8');
    f.span = [at, at + lengths[i]!];
    at += lengths[i]!;
    f.record.parsed.body = '';
  });
  const buffer = bytes.buffer;
  return { [TRANSFER]: [buffer], value: { files, bytes: buffer } };
}

/**
 * FTS5 settings while a build fills the table: a large in-memory term table (64 MB: a few segments per
 * chunk instead of dozens), merging as usual. Measured on the bench vault against the alternatives:
 * FTS5's defaults took 5.9 s to fill; no merging and one `optimize` at the end 3.6 s, but that one
 * large segment made later writes slow (5,000 notes changed at once 3.5 s instead of 2.0) and once
 * stalled a single write 2.4 s; these 3.6 to 4.0 s, with 5,000 changes in 1.3 s and searches as fast.
 */
const BULK_SETTINGS = { hashsize: 64 * 1024 * 1024, automerge: 4, crisismerge: 16 };
/**
 * The settings the index keeps after it takes the table over (they travel with it): FTS5's defaults,
 * but a crisis merge at 64 segments rather than 16. The large segments of a build sit low in FTS5's
 * levels, and later writes soon bring a level of them to merge; FTS5 merges a little at each write,
 * but at 16 segments waiting a crisis merge finishes the whole merge at once (531 ms inside one write,
 * 124 writes after a build). At 64, none came in 3,000 writes (slowest 21 ms).
 */
const FINAL_SETTINGS = { hashsize: 1024 * 1024, automerge: 4, crisismerge: 64 };

function settings(db: Database.Database, values: Record<string, number>): void {
  // FTS5 takes these as integers, and a bound JavaScript number is a REAL: written into the statement (our own constants).
  for (const [k, v] of Object.entries(values)) db.exec(`INSERT INTO notes_fts (notes_fts, rank) VALUES ('${k}', ${Math.trunc(v)})`);
}

/**
 * Adds rows (TextRow) to the build file's full-text table in one transaction; `fresh`
 * makes the file anew first. The file is scratch: no journal, no syncing (a build that dies is
 * started again from the files).
 */
export function writeText(input: { file: string; rows: TextRow[]; bytes?: ArrayBuffer; fresh?: boolean }): number {
  if (input.fresh) rmSync(input.file, { force: true });
  const db = new Database(input.file);
  try {
    db.pragma('journal_mode = OFF');
    db.pragma('synchronous = OFF');
    db.pragma('cache_size = -65536');
    if (input.fresh) {
      db.exec(CREATE_FTS);
      settings(db, BULK_SETTINGS);
    }
    const insert = db.prepare(`INSERT INTO notes_fts (rowid, title, body) VALUES (?, ?, ?)`);
    db.transaction(() => {
      const bytes = input.bytes ? Buffer.from(input.bytes) : null;
      for (const row of input.rows) insert.run(row[0], row[1], row[2] ?? bytes!.toString('utf8', row[3], row[4]));
    })();
    return input.rows.length;
  } finally {
    db.close();
  }
}

/** Gives the build file's table the settings the index keeps (FINAL_SETTINGS), once its last rows are in. */
export function finishText(file: string): void {
  const db = new Database(file);
  try {
    db.pragma('journal_mode = OFF');
    db.pragma('synchronous = OFF');
    settings(db, FINAL_SETTINGS);
  } finally {
    db.close();
  }
}
