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
import { CREATE_FTS } from './vault-index.js';

/** Reads and parses vault files (vault-relative `paths` under the real folder `real`); those gone or not vault files are left out. */
export function readFiles(input: { real: string; paths: string[] }): Array<{ record: FileRecord; identity: FileIdentity | null }> {
  const out: Array<{ record: FileRecord; identity: FileIdentity | null }> = [];
  const realDirs = new Map<string, boolean>();
  for (const rel of input.paths) {
    const read = readFileRecord(input.real, rel, { realDirs });
    if (read) out.push(read);
  }
  return out;
}

/** FTS5 settings for a bulk fill: a large in-memory term table (one segment per transaction) and no merging until the end. */
const BULK_SETTINGS = { hashsize: 64 * 1024 * 1024, automerge: 0, crisismerge: 64 };
/** FTS5's own defaults, written back before the index takes the table over (its settings travel with it). */
const DEFAULT_SETTINGS = { hashsize: 1024 * 1024, automerge: 4, crisismerge: 16 };

function settings(db: Database.Database, values: Record<string, number>): void {
  // FTS5 takes these as integers, and a bound JavaScript number is a REAL: written into the statement (our own constants).
  for (const [k, v] of Object.entries(values)) db.exec(`INSERT INTO notes_fts (notes_fts, rank) VALUES ('${k}', ${Math.trunc(v)})`);
}

/**
 * Adds rows (`[seq, title, text]`) to the build file's full-text table in one transaction; `fresh`
 * makes the file anew first. The file is scratch: no journal, no syncing (a build that dies is
 * started again from the files).
 */
export function writeText(input: { file: string; rows: Array<[number, string, string]>; fresh?: boolean }): number {
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
      for (const [seq, title, text] of input.rows) insert.run(seq, title, text);
    })();
    return input.rows.length;
  } finally {
    db.close();
  }
}

/** Merges the build file's segments into one (as FTS5's `optimize`) and gives it FTS5's default settings back. */
export function finishText(file: string): void {
  const db = new Database(file);
  try {
    db.pragma('journal_mode = OFF');
    db.pragma('synchronous = OFF');
    db.pragma('cache_size = -65536');
    db.exec(`INSERT INTO notes_fts (notes_fts) VALUES ('optimize')`);
    settings(db, DEFAULT_SETTINGS);
  } finally {
    db.close();
  }
}
