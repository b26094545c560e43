/**
 * Note ids that outlive the index. vault.sqlite is a cache of the files and may be lost or damaged;
 * the ids it gives notes are not a cache: tasks, project links, canvas cards and conversations hold
 * them. So every id the index gives, moves or frees is also appended here, to `note-ids.jsonl` beside
 * the index, and an index built again from the files takes each note's id back from it (by path, and
 * by content for a file renamed while the index was gone).
 *
 * Append-only, one JSON line per change, with a header naming the vault folder it belongs to:
 *
 *   {"v":1,"vault":"/abs/vault"}
 *   ["Notes/a.md","949d69fc6a1e2b3c","<sha256 of the content>"]   a path has this id (added, or moved here)
 *   ["Notes/old.md",null]                                           the path has no note any more
 *
 * A batch's lines are appended after its transaction commits (write(2), like the index's own
 * synchronous=NORMAL: a kill -9 loses nothing, a power cut at most the last batch). A torn last line is
 * skipped when read. When the file holds many more lines than live notes it is rewritten from the
 * index (atomically: temp file, fsync, rename). A file of another vault folder, or one that cannot be
 * read, is started again from the index; the notes never change.
 */
import * as fs from 'node:fs';
import { writeFileAtomic, type Logger } from 'memo-kernel/pack';

export interface IdChange {
  path: string;
  /** null: the path has no note any more. */
  id: string | null;
  hash?: string;
}

const VERSION = 1;
/** Rewritten from the index once the file has this many more lines than live notes (and twice as many). */
const SLACK_LINES = 5_000;

export class NoteIdJournal {
  /** What the file says now: path -> id and content hash. */
  private readonly byPath = new Map<string, { id: string; hash: string }>();
  /** The paths of each content hash in byPath. */
  private readonly byHash = new Map<string, Set<string>>();
  private lines = 0;
  private broken = false;

  private constructor(
    readonly file: string,
    private readonly vault: string,
    private readonly logger: Logger,
  ) {}

  /**
   * Reads the journal of `vault` at `file`. Missing, of another folder, or unreadable: empty (the
   * caller writes it from the index with `rewrite`), and `fresh` says so.
   */
  static open(file: string, vault: string, logger: Logger): { journal: NoteIdJournal; fresh: boolean } {
    const journal = new NoteIdJournal(file, vault, logger);
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        logger.warn(`vault: the note ids in ${file} cannot be read (${(err as NodeJS.ErrnoException).code}); they are written again from the index`);
      return { journal, fresh: true };
    }
    const lines = text.split('\n');
    let header: { v?: unknown; vault?: unknown } | null = null;
    try {
      header = JSON.parse(lines[0] ?? '') as { v?: unknown; vault?: unknown };
    } catch {
      // reported below
    }
    if (header?.v !== VERSION || header.vault !== vault) return { journal, fresh: true };
    for (const line of lines.slice(1)) {
      if (line === '') continue;
      let entry: unknown;
      try {
        entry = JSON.parse(line);
      } catch {
        // A line torn by a crash mid-append: what it said is in the index, or lost with the last batch.
        continue;
      }
      if (!Array.isArray(entry) || typeof entry[0] !== 'string') continue;
      journal.lines++;
      if (entry[1] === null) journal.unset(entry[0]);
      else if (typeof entry[1] === 'string' && typeof entry[2] === 'string') journal.set(entry[0], entry[1], entry[2]);
    }
    return { journal, fresh: false };
  }

  /** The id the journal gives `path`, if any. */
  idAt(path: string): string | undefined {
    return this.byPath.get(path)?.id;
  }

  /** The journal's entries (path, id) whose content is `hash` (a file renamed while the index was gone). */
  withContent(hash: string): Array<[string, string]> {
    const out: Array<[string, string]> = [];
    for (const path of this.byHash.get(hash) ?? []) {
      const e = this.byPath.get(path);
      if (e) out.push([path, e.id]);
    }
    return out;
  }

  private set(path: string, id: string, hash: string): void {
    this.unset(path);
    this.byPath.set(path, { id, hash });
    let paths = this.byHash.get(hash);
    if (!paths) this.byHash.set(hash, (paths = new Set()));
    paths.add(path);
  }

  private unset(path: string): void {
    const old = this.byPath.get(path);
    if (!old) return;
    this.byPath.delete(path);
    const paths = this.byHash.get(old.hash);
    paths?.delete(path);
    if (paths?.size === 0) this.byHash.delete(old.hash);
  }

  get size(): number {
    return this.byPath.size;
  }

  /** Appends a committed batch's changes; rewrites the file from `current` when it has grown long. */
  record(changes: readonly IdChange[], current: () => Iterable<[string, { id: string; hash: string }]>): void {
    if (changes.length === 0) return;
    let text = '';
    for (const c of changes) {
      if (c.id === null) this.unset(c.path);
      else this.set(c.path, c.id, c.hash ?? '');
      text += JSON.stringify(c.id === null ? [c.path, null] : [c.path, c.id, c.hash ?? '']) + '\n';
    }
    this.lines += changes.length;
    // Long, or an earlier append failed (those lines are not in the file): written whole from the index.
    if (this.broken || this.lines > Math.max(2 * this.byPath.size, this.byPath.size + SLACK_LINES)) return this.rewrite(current());
    try {
      fs.appendFileSync(this.file, text, { mode: 0o600 });
      this.broken = false;
    } catch (err) {
      this.fail(err);
    }
  }

  /** Writes the whole file from the index's notes (path -> id, hash), atomically. */
  rewrite(notes: Iterable<[string, { id: string; hash: string }]>): void {
    this.byPath.clear();
    this.byHash.clear();
    let text = JSON.stringify({ v: VERSION, vault: this.vault }) + '\n';
    for (const [path, e] of notes) {
      this.set(path, e.id, e.hash);
      text += JSON.stringify([path, e.id, e.hash]) + '\n';
    }
    this.lines = this.byPath.size;
    try {
      writeFileAtomic(this.file, text, 0o600);
      this.broken = false;
    } catch (err) {
      this.fail(err);
    }
  }

  /** Said once per episode: the ids still work, they are only not kept outside the index until it can be written again. */
  private fail(err: unknown): void {
    if (this.broken) return;
    this.broken = true;
    this.logger.warn(
      `vault: the note ids could not be written to ${this.file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): if the index is lost before it can, notes added since get new ids`,
    );
  }
}
