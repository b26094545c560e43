/**
 * The ways the reliability run damaged a SQLite file (agent.sqlite), on real files: cut to half its
 * length, garbage over its header, pages in the middle overwritten with random bytes, emptied to
 * zero bytes, and a write-ahead log left without its database. Deterministic: the "random" bytes
 * come from a fixed seed, so a failure can be replayed.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import Database from 'better-sqlite3';

/** Bytes from a fixed seed (mulberry32). */
function seededBytes(length: number, seed: number): Buffer {
  const out = Buffer.alloc(length);
  let a = seed >>> 0;
  for (let i = 0; i < length; i++) {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    out[i] = ((t ^ (t >>> 14)) >>> 0) & 0xff;
  }
  return out;
}

/**
 * A write-ahead log of `file` holding one committed change, as a crash or a copy would leave it: the
 * log is copied while a connection holds it, before the close that would fold it into the file.
 */
export function writeAheadLogOf(file: string): Buffer {
  const db = new Database(file);
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('wal_autocheckpoint = 0');
    db.exec(`UPDATE "conversations" SET "updatedAt" = datetime("updatedAt", '+1 second')`);
    return fs.readFileSync(`${file}-wal`);
  } finally {
    db.close();
  }
}

export type Damage =
  'cut to half its length' | 'garbage over its header' | 'pages in the middle overwritten' | 'emptied to zero bytes' | 'a write-ahead log without the database';

export const DAMAGES: readonly Damage[] = [
  'cut to half its length',
  'garbage over its header',
  'pages in the middle overwritten',
  'emptied to zero bytes',
  'a write-ahead log without the database',
];

/** Damages the (closed, whole) SQLite file `file` the named way. */
export function damage(file: string, how: Damage): void {
  const size = fs.statSync(file).size;
  switch (how) {
    case 'cut to half its length':
      fs.truncateSync(file, Math.floor(size / 2));
      return;
    case 'garbage over its header': {
      const fd = fs.openSync(file, 'r+');
      fs.writeSync(fd, seededBytes(100, 1), 0, 100, 0);
      fs.closeSync(fd);
      return;
    }
    case 'pages in the middle overwritten': {
      const page = 4096;
      const pages = Math.floor(size / page);
      if (pages < 6) throw new Error(`${file} has ${pages} pages: too few to overwrite its middle`);
      const fd = fs.openSync(file, 'r+');
      for (const n of [Math.floor(pages / 2) - 1, Math.floor(pages / 2)]) fs.writeSync(fd, seededBytes(page, n), 0, page, n * page);
      fs.closeSync(fd);
      return;
    }
    case 'emptied to zero bytes':
      fs.truncateSync(file, 0);
      return;
    case 'a write-ahead log without the database': {
      const wal = writeAheadLogOf(file);
      fs.rmSync(file);
      fs.rmSync(`${file}-shm`, { force: true });
      fs.writeFileSync(`${file}-wal`, wal, { mode: 0o600 });
      return;
    }
  }
}

/** What is on disk of `file` and its write-ahead log: to show that nothing changed them. */
export function onDisk(file: string): { file: string | null; wal: string | null } {
  const hash = (f: string) => (fs.existsSync(f) && fs.statSync(f).size > 0 ? createHash('sha256').update(fs.readFileSync(f)).digest('hex') : null);
  return { file: fs.existsSync(file) ? (hash(file) ?? 'empty') : null, wal: hash(`${file}-wal`) };
}
