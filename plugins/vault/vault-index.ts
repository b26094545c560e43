/**
 * The vault's index in SQLite: notes, aliases, tags, links (resolved, ambiguous or broken) and the
 * FTS5 text. Synchronous (better-sqlite3 under the pack's typeorm DataSource) so a batch of changes is
 * one transaction: a search never sees half a batch, and 5,000 changed files cost one commit.
 */
import { randomBytes } from 'node:crypto';
import type { Database, Statement } from 'better-sqlite3';
import type { FileType, ParsedLink } from './markdown.js';
import type { FileRecord } from './file-record.js';

export type { FileRecord } from './file-record.js';
import { keyOf, lastSegment, linkKeys, resolveWikiTarget, type LinkCandidate, type NoteLookup, type Resolution } from './links.js';
import { toFtsQuery } from './fts-query.js';
import type { IdChange, NoteIdJournal } from './note-ids.js';

export interface NoteInfo {
  seq: number;
  id: string;
  path: string;
  title: string;
  file_type: FileType;
  size: number;
  mtime: number;
  hash: string;
  front_matter: string | null;
  headings: string;
  aliases: string;
}

export interface LinkInfo {
  id: number;
  source_seq: number;
  raw: string;
  target: string;
  alias: string | null;
  embed: number;
  line: number;
  status: 'resolved' | 'ambiguous' | 'broken';
  target_seq: number | null;
  heading: string | null;
}

export interface SearchOptions {
  query: string;
  fileTypes?: readonly string[];
  tags?: readonly string[];
  folder?: string;
  limit: number;
  /** Only this note (search.reasons asks whether one note is among what a search finds). */
  seq?: number;
}

export interface SearchHit {
  seq: number;
  id: string;
  path: string;
  title: string;
  file_type: string;
  mtime: number;
  snippet: string | null;
  score: number | null;
  /** The note's own icon (front matter `icon`), when it has one. */
  icon: string | null;
}

/** The kinds of value a front matter property holds, as properties.list names them. */
export type PropertyType = 'text' | 'number' | 'boolean' | 'list' | 'date' | 'object';

const PROPERTY_TYPES: readonly PropertyType[] = ['text', 'number', 'boolean', 'list', 'date', 'object'];

export interface PropertyInfo {
  name: string;
  /** The kinds of its values (a key set to null adds none), in PROPERTY_TYPES's order. */
  types: PropertyType[];
  /** Notes that have it. */
  count: number;
}

/** A search's terms found in one text (see `termsIn`). */
export interface TermsFound {
  terms: string[];
  snippet: string | null;
}

export interface TagInfo {
  name: string;
  count: number;
  color: string | null;
  icon: string | null;
  sort_order: number;
  category_id: number | null;
  category_name: string | null;
}

export interface BatchResult {
  added: number;
  updated: number;
  removed: number;
  renamed: number;
  unchanged: number;
}

/** The FTS5 tokenizer: Porter stemming over unicode61 with accents folded (`café` finds `cafe`, `running` finds `run`). */
export const FTS_TOKENIZER = 'porter unicode61 remove_diacritics 2';

/**
 * The full-text table: contentless (the notes' text is in the files; a copy would more than double
 * the index), with deletes allowed so a changed note's old words can be removed.
 */
export const CREATE_FTS = `CREATE VIRTUAL TABLE notes_fts USING fts5(title, body, content='', contentless_delete=1, tokenize='${FTS_TOKENIZER}')`;

/** Contents of removed notes whose ids are kept for a file that comes back with them (see `idFor`). */
const REMEMBERED_REMOVALS = 10_000;

/** Random bytes drawn ahead for note ids: a build gives 50,000 ids, and one draw each costs more than the rest of an insert. */
let idPool = Buffer.alloc(0);
let idAt = 0;

export function newNoteId(): string {
  if (idAt + 8 > idPool.length) {
    idPool = randomBytes(8 * 1024);
    idAt = 0;
  }
  idAt += 8;
  return idPool.toString('hex', idAt - 8, idAt);
}

/** The title a file gets: its front matter title, else its name without `.md`. */
export function titleOf(record: Pick<FileRecord, 'path' | 'fileType' | 'parsed'>): string {
  const name = record.path.slice(record.path.lastIndexOf('/') + 1);
  return record.parsed?.title ?? (record.fileType === 'markdown' ? name.replace(/\.(md|markdown)$/i, '') : name);
}

/** Keys of a note for link lookup: its name, title and aliases, lower case. */
function keysOf(path: string, title: string, aliases: readonly string[]): string[] {
  return [lastSegment(keyOf(path)), title.toLowerCase(), ...aliases.map((a) => a.toLowerCase())];
}

/** What the full-text table holds of a file besides its title: a note's body, a filed file's name and type. */
function textOf(record: FileRecord, title: string): string {
  return record.parsed ? record.parsed.body : `${title} ${record.fileType}`;
}

/** A file's row in `notes` (without seq and id). */
function rowValues(record: FileRecord, title: string) {
  return {
    path: record.path,
    path_key: keyOf(record.path),
    name_key: lastSegment(keyOf(record.path)),
    title,
    title_key: title.toLowerCase(),
    file_type: record.fileType,
    size: record.size,
    mtime: record.mtime,
    hash: record.hash,
    front_matter: record.parsed?.frontMatter ? JSON.stringify(record.parsed.frontMatter) : null,
    headings: JSON.stringify(record.parsed?.headings ?? []),
    aliases: JSON.stringify(record.parsed?.aliases ?? []),
  };
}

/** A note's own icon, from the front matter the index keeps (text only). */
const ICON = `CASE WHEN json_type(n.front_matter, '$.icon') = 'text' THEN json_extract(n.front_matter, '$.icon') END`;
const NOTE_COLUMNS = 'seq, id, path, title, file_type, size, mtime, hash, front_matter, headings, aliases';

/**
 * The secondary indexes a bulk build (see `startBulk`) drops while it fills the tables and makes again
 * at its end: one sort per index instead of a B-tree update per row. The unique id and path indexes
 * stay (every insert looks them up). Made again when a vault opens, so a build that was killed never
 * leaves an index without them.
 */
const SECONDARY_INDEXES: Record<string, string> = {
  IDX_notes_name_key: `CREATE INDEX IF NOT EXISTS "IDX_notes_name_key" ON "notes" ("name_key")`,
  IDX_notes_title_key: `CREATE INDEX IF NOT EXISTS "IDX_notes_title_key" ON "notes" ("title_key")`,
  IDX_notes_hash: `CREATE INDEX IF NOT EXISTS "IDX_notes_hash" ON "notes" ("hash")`,
  IDX_note_aliases_key: `CREATE INDEX IF NOT EXISTS "IDX_note_aliases_key" ON "note_aliases" ("alias_key")`,
  IDX_note_tags_tag: `CREATE INDEX IF NOT EXISTS "IDX_note_tags_tag" ON "note_tags" ("tag")`,
  IDX_links_source: `CREATE INDEX IF NOT EXISTS "IDX_links_source" ON "links" ("source_seq")`,
  IDX_links_target: `CREATE INDEX IF NOT EXISTS "IDX_links_target" ON "links" ("target_seq")`,
  IDX_links_key_full: `CREATE INDEX IF NOT EXISTS "IDX_links_key_full" ON "links" ("key_full")`,
  // Only the links whose note part differs from the whole target (those with a `#`): the rest are found by key_full.
  IDX_links_key_note: `CREATE INDEX IF NOT EXISTS "IDX_links_key_note" ON "links" ("key_note") WHERE key_note <> key_full`,
};

/** vault_meta's mark of a bulk build under way: an index that still has it at open was left half built. */
export const BULK_MARK = 'bulk_build';

/** A row of the full-text table: `[seq, title, text]`, or `[seq, title, null, start, end]` for text in a build step's bytes (index-build.ts). */
export type TextRow = [number, string, string] | [number, string, null, number, number];

/** Rows given to one INSERT of links in a bulk build (per-statement costs dominate otherwise). */
const LINK_ROWS_AT_ONCE = 64;

interface LinkRows {
  add(row: unknown[]): void;
  flush(): void;
}

/** The links of a note a bulk build added, resolved once every note is in (see `finishBulk`). */
interface PendingLinks {
  path: string;
  title: string;
  links: readonly ParsedLink[];
}

export class VaultIndex {
  private readonly s: Record<string, Statement>;
  /** See `keepIds`. */
  private keptIds: ReadonlyMap<string, string> | null = null;
  /** Ids of notes removed since the vault opened, by content hash, oldest first (see `idFor`). */
  private readonly removedIds = new Map<string, string[]>();
  /** The ids kept outside the index (see useJournal), and whether a path it names is still a file. */
  private journal: { ids: NoteIdJournal; exists: (path: string) => boolean } | null = null;
  /**
   * A bulk build under way (see `startBulk`): the links of the notes it added, by seq; and the text rows
   * other writes put in or took out meanwhile, which the build's own text table lacks (null: taken out).
   */
  private bulk: { links: Map<number, PendingLinks>; linksDone: boolean; text: Map<number, [string, string] | null>; written: boolean } | null = null;

  constructor(readonly db: Database) {
    // The index is rebuildable from the files: commits need not wait for the disk (WAL keeps it
    // consistent), and a larger page cache keeps a 50,000-note build off the disk.
    db.pragma('synchronous = NORMAL');
    db.pragma('cache_size = -32768');
    db.pragma('temp_store = MEMORY');
    const p = (sql: string) => db.prepare(sql);
    this.s = {
      byPath: p(`SELECT ${NOTE_COLUMNS} FROM notes WHERE path = ?`),
      byId: p(`SELECT ${NOTE_COLUMNS} FROM notes WHERE id = ?`),
      bySeq: p(`SELECT ${NOTE_COLUMNS} FROM notes WHERE seq = ?`),
      insert: p(`INSERT INTO notes (id, path, path_key, name_key, title, title_key, file_type, size, mtime, hash, front_matter, headings, aliases)
                 VALUES (@id, @path, @path_key, @name_key, @title, @title_key, @file_type, @size, @mtime, @hash, @front_matter, @headings, @aliases)`),
      update: p(`UPDATE notes SET path = @path, path_key = @path_key, name_key = @name_key, title = @title, title_key = @title_key, file_type = @file_type,
                 size = @size, mtime = @mtime, hash = @hash, front_matter = @front_matter, headings = @headings, aliases = @aliases WHERE seq = @seq`),
      touch: p(`UPDATE notes SET mtime = ?, size = ? WHERE seq = ?`),
      delete: p(`DELETE FROM notes WHERE seq = ?`),
      ftsDelete: p(`DELETE FROM notes_fts WHERE rowid = ?`),
      ftsInsert: p(`INSERT INTO notes_fts (rowid, title, body) VALUES (?, ?, ?)`),
      aliasesDelete: p(`DELETE FROM note_aliases WHERE note_seq = ?`),
      aliasInsert: p(`INSERT OR IGNORE INTO note_aliases (note_seq, alias_key) VALUES (?, ?)`),
      tagsDelete: p(`DELETE FROM note_tags WHERE note_seq = ?`),
      tagInsert: p(`INSERT OR IGNORE INTO note_tags (note_seq, tag) VALUES (?, ?)`),
      tagsOf: p(`SELECT tag FROM note_tags WHERE note_seq = ? ORDER BY tag`),
      linksDelete: p(`DELETE FROM links WHERE source_seq = ?`),
      linkInsert: p(`INSERT INTO links (source_seq, raw, target, alias, embed, line, key_full, key_note, status, target_seq, heading)
                     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
      linkUpdate: p(`UPDATE links SET status = ?, target_seq = ?, heading = ? WHERE id = ?`),
      linksFrom: p(`SELECT id, source_seq, raw, target, alias, embed, line, status, target_seq, heading FROM links WHERE source_seq = ? ORDER BY line, id`),
      linksTo: p(
        `SELECT id, source_seq, raw, target, alias, embed, line, status, target_seq, heading FROM links WHERE target_seq = ? ORDER BY source_seq, line`,
      ),
      lookupName: p(`SELECT seq, id, path, title FROM notes WHERE name_key = ?`),
      lookupTitle: p(`SELECT seq, id, path, title FROM notes WHERE title_key = ?`),
      lookupAlias: p(`SELECT n.seq, n.id, n.path, n.title FROM note_aliases a JOIN notes n ON n.seq = a.note_seq WHERE a.alias_key = ?`),
      lookupPath: p(
        `SELECT seq, id, path, title FROM notes WHERE path_key = ? OR (length(path_key) > length(?) AND substr(path_key, -length(?) - 1) = '/' || ?)`,
      ),
      allPaths: p(`SELECT seq, path, size, mtime, hash, id FROM notes`),
      count: p(`SELECT count(*) AS n FROM notes`),
    };
  }

  /** Makes the secondary indexes a killed bulk build may have left dropped (a no-op when they are there). */
  ensureIndexes(): void {
    this.db.exec(Object.values(SECONDARY_INDEXES).join(';\n'));
  }

  // -------------------------------------------------------------------------------------------
  // Reading

  note(where: { id?: string; path?: string; seq?: number }): NoteInfo | undefined {
    if (where.seq !== undefined) return this.s.bySeq!.get(where.seq) as NoteInfo | undefined;
    if (where.id !== undefined) return this.s.byId!.get(where.id) as NoteInfo | undefined;
    return this.s.byPath!.get(where.path) as NoteInfo | undefined;
  }

  tagsOf(seq: number): string[] {
    return (this.s.tagsOf!.all(seq) as Array<{ tag: string }>).map((r) => r.tag);
  }

  linksFrom(seq: number): LinkInfo[] {
    return this.s.linksFrom!.all(seq) as LinkInfo[];
  }

  linksTo(seq: number): LinkInfo[] {
    return this.s.linksTo!.all(seq) as LinkInfo[];
  }

  /** Every indexed file: path -> its size, mtime and hash (what a scan compares with). */
  files(): Map<string, { seq: number; size: number; mtime: number; hash: string; id: string }> {
    const out = new Map<string, { seq: number; size: number; mtime: number; hash: string; id: string }>();
    for (const r of this.s.allPaths!.iterate() as Iterable<{ seq: number; path: string; size: number; mtime: number; hash: string; id: string }>)
      out.set(r.path, r);
    return out;
  }

  /** `files()` for the given paths only. */
  filesAt(paths: readonly string[]): Map<string, { seq: number; size: number; mtime: number; hash: string; id: string }> {
    const out = new Map<string, { seq: number; size: number; mtime: number; hash: string; id: string }>();
    for (const p of paths) {
      const r = this.note({ path: p });
      if (r) out.set(p, r);
    }
    return out;
  }

  count(): number {
    return (this.s.count!.get() as { n: number }).n;
  }

  /** SQL lookups for link resolution (one indexed query per tier). */
  readonly lookup: NoteLookup = {
    byName: (k) => this.s.lookupName!.all(k) as LinkCandidate[],
    byTitle: (k) => this.s.lookupTitle!.all(k) as LinkCandidate[],
    byAlias: (k) => this.s.lookupAlias!.all(k) as LinkCandidate[],
    byPath: (k) => this.s.lookupPath!.all(k, k, k, k) as LinkCandidate[],
  };

  resolve(target: string, self?: LinkCandidate): Resolution {
    return resolveWikiTarget(target, this.lookup, self);
  }

  search(o: SearchOptions): { hits: SearchHit[]; terms: string[] } {
    const where: string[] = [];
    const params: unknown[] = [];
    if (o.fileTypes?.length) {
      where.push(`n.file_type IN (${o.fileTypes.map(() => '?').join(', ')})`);
      params.push(...o.fileTypes);
    }
    if (o.folder) {
      // A range on the unique path index: every path under `folder/` ('0' sorts right after '/').
      where.push(`n.path >= ? AND n.path < ?`);
      params.push(`${o.folder}/`, `${o.folder}0`);
    }
    for (const tag of o.tags ?? []) {
      // A tag also finds its nested tags: #project finds #project/alpha.
      // Driven by the tag index: only the tagged notes are looked at.
      where.push(`n.seq IN (SELECT t.note_seq FROM note_tags t WHERE t.tag = ? OR (t.tag >= ? AND t.tag < ?))`);
      params.push(tag, `${tag}/`, `${tag}0`);
    }
    if (o.seq !== undefined) {
      where.push(`n.seq = ?`);
      params.push(o.seq);
    }
    const q = toFtsQuery(o.query);
    if (o.query.trim() !== '' && q.match === null) return { hits: [], terms: [] };
    if (q.match === null) {
      const sql = `SELECT n.seq, n.id, n.path, n.title, n.file_type, n.mtime, NULL AS snippet, NULL AS score, ${ICON} AS icon FROM notes n
                   ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY n.mtime DESC, n.path LIMIT ?`;
      return { hits: this.db.prepare(sql).all(...params, o.limit) as SearchHit[], terms: [] };
    }
    // Snippets are cut from the files afterwards (the FTS table keeps no copy of the text).
    // FTS5's own rank column (bm25, title weighted 8:1) sorts about twice as fast as calling bm25() per row.
    const sql = `SELECT n.seq, n.id, n.path, n.title, n.file_type, n.mtime, NULL AS snippet, notes_fts.rank AS score, ${ICON} AS icon
                 FROM notes_fts JOIN notes n ON n.seq = notes_fts.rowid
                 WHERE notes_fts MATCH ? AND notes_fts.rank MATCH 'bm25(8.0, 1.0)' ${where.length ? `AND ${where.join(' AND ')}` : ''}
                 ORDER BY notes_fts.rank LIMIT ?`;
    const hits = (this.db.prepare(sql).all(q.match, ...params, o.limit) as SearchHit[]).map((h) => ({ ...h }));
    return { hits, terms: q.terms };
  }

  /**
   * Which of a search's terms each of `texts` holds, judged by FTS5 with the index's own tokenizer, so
   * stems, folded accents, prefixes and phrases count exactly as the search counts them (the query
   * goes through toFtsQuery as the search's does, one term at a time); with `snippet`, also a
   * passage around the matches in **bold**. The texts pass through a scratch table in the
   * connection's temp schema (memory, seen by no other connection), emptied again before returning.
   */
  termsIn(query: string, texts: ReadonlyArray<{ text: string; snippet?: boolean }>): { terms: string[]; found: TermsFound[] } {
    const q = toFtsQuery(query);
    const found: TermsFound[] = texts.map(() => ({ terms: [], snippet: null }));
    // toFtsQuery's match is its terms' FTS5 strings, in order, each `"..."` (quotes doubled) with an optional `*`.
    const parts = q.match?.match(/"(?:[^"]|"")*"\*?/g) ?? [];
    if (texts.length === 0 || parts.length !== q.terms.length) return { terms: q.terms, found };
    this.db.exec(`CREATE VIRTUAL TABLE IF NOT EXISTS temp.term_texts USING fts5(text, tokenize='${FTS_TOKENIZER}')`);
    this.db.transaction(() => {
      this.db.exec(`DELETE FROM temp.term_texts`);
      const insert = this.db.prepare(`INSERT INTO temp.term_texts (rowid, text) VALUES (?, ?)`);
      texts.forEach((t, i) => insert.run(i + 1, t.text));
      const holding = this.db.prepare(`SELECT rowid FROM temp.term_texts WHERE term_texts MATCH ?`).pluck();
      const held = texts.map(() => new Set<number>());
      parts.forEach((part, k) => {
        for (const row of holding.all(part) as number[]) held[row - 1]!.add(k);
      });
      // The rowid CAST: the driver binds a number as REAL, and FTS5 does not narrow a MATCH by a REAL rowid.
      const snippet = this.db
        .prepare(`SELECT snippet(term_texts, 0, '**', '**', '…', 16) FROM temp.term_texts WHERE term_texts MATCH ? AND rowid = CAST(? AS INTEGER)`)
        .pluck();
      texts.forEach((t, i) => {
        const ks = [...held[i]!].sort((a, b) => a - b);
        found[i]!.terms = [...new Set(ks.map((k) => q.terms[k]!))];
        if (t.snippet && ks.length) {
          const s = snippet.get(ks.map((k) => parts[k]).join(' OR '), i + 1) as string | undefined;
          found[i]!.snippet = s ? s.replace(/\s+/g, ' ').trim() : null;
        }
      });
      this.db.exec(`DELETE FROM temp.term_texts`);
    })();
    return { terms: q.terms, found };
  }

  /**
   * Every front matter key the notes under `folder` ('' for all) use, with how many notes use it and
   * the kinds of value it holds, most used first: one query over the front matter the index keeps as
   * JSON. YAML's dates are text in JSON: a text that reads YYYY-MM-DD (with a time or not) is a date.
   */
  properties(folder = ''): PropertyInfo[] {
    const inFolder = folder ? `AND n.path >= ? AND n.path < ?` : '';
    const rows = this.db
      .prepare(
        `SELECT p.key AS name, count(*) AS count,
                group_concat(DISTINCT CASE p.type
                  WHEN 'integer' THEN 'number' WHEN 'real' THEN 'number'
                  WHEN 'true' THEN 'boolean' WHEN 'false' THEN 'boolean'
                  WHEN 'array' THEN 'list' WHEN 'object' THEN 'object'
                  WHEN 'text' THEN CASE
                    WHEN p.atom GLOB '[0-9][0-9][0-9][0-9]-[01][0-9]-[0-3][0-9]'
                      OR p.atom GLOB '[0-9][0-9][0-9][0-9]-[01][0-9]-[0-3][0-9][T ][0-2][0-9]:[0-5][0-9]*' THEN 'date'
                    ELSE 'text' END
                END) AS types
         FROM notes n, json_each(n.front_matter) p
         WHERE n.front_matter IS NOT NULL ${inFolder}
         GROUP BY p.key ORDER BY count DESC, p.key`,
      )
      .all(...(folder ? [`${folder}/`, `${folder}0`] : [])) as Array<{ name: string; count: number; types: string | null }>;
    return rows.map((r) => {
      const types = new Set(r.types?.split(',') ?? []);
      return { name: r.name, types: PROPERTY_TYPES.filter((t) => types.has(t)), count: r.count };
    });
  }

  /** Every tag in use or given settings: note count, colour, icon, order and category. */
  tags(): TagInfo[] {
    return this.db
      .prepare(
        `WITH used AS (SELECT tag, count(*) AS n FROM note_tags GROUP BY tag),
              names AS (SELECT tag AS name FROM used UNION SELECT name FROM tags)
         SELECT names.name AS name, COALESCE(used.n, 0) AS count, t.color AS color, t.icon AS icon, COALESCE(t.sort_order, 0) AS sort_order,
                t.category_id AS category_id, c.name AS category_name
         FROM names LEFT JOIN used ON used.tag = names.name LEFT JOIN tags t ON t.name = names.name LEFT JOIN tag_categories c ON c.id = t.category_id
         ORDER BY COALESCE(t.sort_order, 0), names.name`,
      )
      .all()
      .map((r) => ({ ...(r as TagInfo) })); // plain objects of this realm (the driver makes its own)
  }

  /** Notes under a folder (vault-relative, '' for all), by path. */
  notesUnder(folder: string): NoteInfo[] {
    if (folder === '') return this.db.prepare(`SELECT ${NOTE_COLUMNS} FROM notes ORDER BY path`).all() as NoteInfo[];
    return this.db.prepare(`SELECT ${NOTE_COLUMNS} FROM notes WHERE path >= ? AND path < ? ORDER BY path`).all(`${folder}/`, `${folder}0`) as NoteInfo[];
  }

  // -------------------------------------------------------------------------------------------
  // Writing

  /**
   * Applies changed files and removed paths in one transaction. A removed note whose content
   * reappears under a new path in the same batch is a rename: it keeps its id (and `moves` says so
   * explicitly for renames done through Memo). Links into and out of every changed note are then
   * resolved again.
   */
  applyBatch(upserts: readonly FileRecord[], removals: readonly string[], moves: ReadonlyMap<string, string> = new Map()): BatchResult {
    if (this.bulk) this.bulk.written = true;
    const result: BatchResult = { added: 0, updated: 0, removed: 0, renamed: 0, unchanged: 0 };
    /** Ids given, moved or freed, for the journal once the batch commits. */
    const ids: IdChange[] = [];
    const run = this.db.transaction(() => {
      ids.length = 0;
      const affectedKeys = new Set<string>();
      const affectedSeqs = new Set<number>();
      const fresh: Array<{ seq: number; record: FileRecord }> = [];
      const removedRows = new Map<string, NoteInfo>();
      for (const p of removals) {
        const row = this.note({ path: p });
        if (row) removedRows.set(p, row);
      }
      for (const p of moves.values()) {
        const row = this.note({ path: p });
        if (row) removedRows.set(p, row);
      }
      const byHash = new Map<string, NoteInfo[]>();
      for (const row of removedRows.values()) byHash.set(row.hash, [...(byHash.get(row.hash) ?? []), row]);
      const reused = new Set<number>();
      const upserted = new Set(upserts.map((u) => u.path));

      for (const record of upserts) {
        const existing = this.note({ path: record.path });
        const title = titleOf(record);
        const aliases = record.parsed?.aliases ?? [];
        if (existing && existing.hash === record.hash && !moves.has(record.path)) {
          if (existing.mtime !== record.mtime || existing.size !== record.size) this.s.touch!.run(record.mtime, record.size, existing.seq);
          result.unchanged++;
          continue;
        }
        let row = existing;
        if (!row) {
          // Moved through Memo (explicit), or renamed on disk (same content gone from elsewhere in this batch).
          const from = moves.get(record.path);
          const candidate = from !== undefined ? removedRows.get(from) : byHash.get(record.hash)?.find((r) => !reused.has(r.seq));
          if (candidate && !reused.has(candidate.seq)) {
            row = candidate;
            reused.add(candidate.seq);
            result.renamed++;
            for (const k of keysOf(candidate.path, candidate.title, JSON.parse(candidate.aliases) as string[])) affectedKeys.add(k);
          }
        }
        if (row) {
          for (const k of keysOf(row.path, row.title, JSON.parse(row.aliases) as string[])) affectedKeys.add(k);
          affectedSeqs.add(row.seq);
          // Its links are inserted below from what it holds now, not from what a bulk build read.
          this.bulk?.links.delete(row.seq);
          if (row.path === record.path) result.updated++;
        }
        const values = rowValues(record, title);
        let seq: number;
        if (row) {
          seq = row.seq;
          if (row.path !== record.path) ids.push({ path: row.path, id: null }, { path: record.path, id: row.id, hash: record.hash });
          this.s.update!.run({ ...values, seq });
          this.s.ftsDelete!.run(seq);
          this.s.aliasesDelete!.run(seq);
          this.s.tagsDelete!.run(seq);
          this.s.linksDelete!.run(seq);
        } else {
          const id = this.idFor(record.path, record.hash);
          seq = Number(this.s.insert!.run({ ...values, id }).lastInsertRowid);
          ids.push({ path: record.path, id, hash: record.hash });
          result.added++;
        }
        for (const k of keysOf(record.path, title, aliases)) affectedKeys.add(k);
        const text = textOf(record, title);
        this.s.ftsInsert!.run(seq, title, text);
        this.bulk?.text.set(seq, [title, text]);
        for (const a of aliases) this.s.aliasInsert!.run(seq, a.toLowerCase());
        for (const t of record.parsed?.tags ?? []) this.s.tagInsert!.run(seq, t);
        fresh.push({ seq, record });
      }

      for (const row of removedRows.values()) {
        if (reused.has(row.seq) || upserted.has(row.path)) continue;
        for (const k of keysOf(row.path, row.title, JSON.parse(row.aliases) as string[])) affectedKeys.add(k);
        affectedSeqs.add(row.seq);
        this.bulk?.links.delete(row.seq);
        this.bulk?.text.set(row.seq, null);
        this.s.ftsDelete!.run(row.seq);
        this.s.delete!.run(row.seq);
        this.rememberRemoved(row);
        ids.push({ path: row.path, id: null });
        result.removed++;
      }

      // Links of the changed notes, resolved against the index as it now stands.
      const lookup = fresh.length > 500 ? this.memoryLookup() : this.lookup;
      for (const { seq, record } of fresh) if (record.parsed) this.insertLinks(seq, record.path, titleOf(record), record.parsed.links, lookup);
      this.reresolve(affectedKeys, affectedSeqs, new Set(fresh.map((f) => f.seq)), lookup);
    });
    run.immediate();
    this.journal?.ids.record(ids, () => this.idEntries());
    return result;
  }

  /** A note's links, each resolved against `lookup`; written through `rows` when given (a bulk build's many). */
  private insertLinks(seq: number, path: string, title: string, links: readonly ParsedLink[], lookup: NoteLookup, rows?: LinkRows): void {
    const self = { seq, id: '', path, title };
    for (const link of links) {
      const r = resolveWikiTarget(link.target, lookup, self);
      const keys = linkKeys(link.target);
      (rows?.add ?? ((row: unknown[]) => this.s.linkInsert!.run(row)))([
        seq,
        link.raw,
        link.target,
        link.alias,
        link.embed ? 1 : 0,
        link.line,
        keys.full,
        keys.note,
        r.status,
        r.status === 'resolved' ? r.note.seq : null,
        r.heading,
      ]);
    }
  }

  /** Link rows written LINK_ROWS_AT_ONCE to a statement (a bulk build's hundreds of thousands); `flush` writes the rest. */
  private linkRows(): LinkRows {
    const columns = 11;
    const many = this.db.prepare(
      `INSERT INTO links (source_seq, raw, target, alias, embed, line, key_full, key_note, status, target_seq, heading) VALUES ${Array.from(
        { length: LINK_ROWS_AT_ONCE },
        () => `(${Array.from({ length: columns }, () => '?').join(', ')})`,
      ).join(', ')}`,
    );
    let buffer: unknown[] = [];
    return {
      add: (row) => {
        for (let i = 0; i < columns; i++) buffer.push(row[i]);
        if (buffer.length === LINK_ROWS_AT_ONCE * columns) {
          many.run(buffer);
          buffer = [];
        }
      },
      flush: () => {
        for (let i = 0; i < buffer.length; i += columns) this.s.linkInsert!.run(buffer.slice(i, i + columns));
        buffer = [];
      },
    };
  }

  // -------------------------------------------------------------------------------------------
  // Bulk builds

  /**
   * Starts a bulk build: an index with no notes (a vault's first open, a reindex) filled by
   * `bulkInsert` chunks, then completed by `finishBulk`. Until then the secondary indexes are dropped
   * (made again in one sort each) and the notes' links wait in memory (resolved once, against every
   * note, instead of each chunk's links against a part of the notes and again as later chunks bring
   * their targets). The notes' text goes to a build file of its own (index-build.ts), whose
   * full-text table this index takes over at the end. vault_meta marks the build: an index that still
   * has the mark when it opens was left half built, and is built again. Writes between chunks (write
   * tools, the watcher) go through `applyBatch` as always.
   */
  startBulk(): void {
    if (this.bulk) return;
    this.db.transaction(() => {
      this.setMeta(BULK_MARK, new Date().toISOString());
      for (const name of Object.keys(SECONDARY_INDEXES)) this.db.exec(`DROP INDEX IF EXISTS "${name}"`);
    })();
    this.bulk = { links: new Map(), linksDone: false, text: new Map(), written: false };
  }

  /** Whether a bulk build is under way. */
  get bulkBuilding(): boolean {
    return this.bulk !== null;
  }

  /**
   * Adds files during a bulk build, in one transaction: their rows, tags and aliases. Returns their
   * text rows for the build file (a note's text as its `span` in the step's bytes: see index-build.ts);
   * links wait for `finishBulk`. A path already indexed (a write tool's, between chunks) goes through
   * `applyBatch`, text and all (its body taken from the bytes by `bodyOf`).
   */
  bulkInsert(
    files: ReadonlyArray<{ record: FileRecord; span: [number, number] | null }>,
    bodyOf: (span: [number, number]) => string,
  ): { result: BatchResult; text: TextRow[] } {
    const bulk = this.bulk;
    if (!bulk) throw new Error('bulkInsert outside a bulk build');
    // Only a write between chunks can have added one of these paths already.
    const known = bulk.written ? files.filter((f) => this.note({ path: f.record.path }) !== undefined) : [];
    for (const f of known) if (f.span && f.record.parsed) f.record.parsed.body = bodyOf(f.span);
    const result = known.length
      ? this.applyBatch(
          known.map((f) => f.record),
          [],
        )
      : { added: 0, updated: 0, removed: 0, renamed: 0, unchanged: 0 };
    const skip = new Set(known);
    const ids: IdChange[] = [];
    const text: TextRow[] = [];
    const run = this.db.transaction(() => {
      ids.length = 0;
      text.length = 0;
      for (const f of files) {
        if (skip.has(f)) continue;
        const { record } = f;
        const title = titleOf(record);
        const id = this.idFor(record.path, record.hash);
        const seq = Number(this.s.insert!.run({ ...rowValues(record, title), id }).lastInsertRowid);
        ids.push({ path: record.path, id, hash: record.hash });
        text.push(f.span ? [seq, title, null, f.span[0], f.span[1]] : [seq, title, textOf(record, title)]);
        for (const a of record.parsed?.aliases ?? []) this.s.aliasInsert!.run(seq, a.toLowerCase());
        for (const t of record.parsed?.tags ?? []) this.s.tagInsert!.run(seq, t);
        if (record.parsed?.links.length) bulk.links.set(seq, { path: record.path, title, links: record.parsed.links });
      }
    });
    run.immediate();
    result.added += files.length - known.length;
    this.journal?.ids.record(ids, () => this.idEntries());
    return { result, text };
  }

  /**
   * The first half of completing a bulk build (also one stopped part way: what it added is then
   * complete), in one transaction: every waiting link resolved against all the notes, the links other
   * writes made meanwhile resolved again (their targets may have come later), the secondary indexes
   * made. Runs while a worker still puts the last of the text into the build file (see `finishBulk`).
   */
  finishLinks(): void {
    const bulk = this.bulk;
    if (!bulk || bulk.linksDone) return;
    this.db
      .transaction(() => {
        const lookup = this.memoryLookup();
        const earlier = this.db
          .prepare(
            `SELECT l.id, l.target, l.status, l.target_seq, l.heading, l.source_seq, n.path AS source_path, n.title AS source_title FROM links l JOIN notes n ON n.seq = l.source_seq`,
          )
          .all() as Array<LinkInfo & { source_path: string; source_title: string }>;
        for (const r of earlier) this.resolveAgain(r, lookup);
        const rows = this.linkRows();
        for (const [seq, p] of bulk.links) this.insertLinks(seq, p.path, p.title, p.links, lookup, rows);
        rows.flush();
        this.ensureIndexes();
      })
      .immediate();
    bulk.links.clear();
    bulk.linksDone = true;
  }

  /**
   * Completes a bulk build (`finishLinks` first, if not done): the full-text table taken over from the
   * build file `textFile`, with what other writes put in or took out meanwhile done again on it, in one
   * transaction. Without `textFile` (its build failed) the notes added are not searchable by their
   * text: the mark stays, and the next open builds the index again.
   */
  finishBulk(textFile: string | null): void {
    const bulk = this.bulk;
    if (!bulk) return;
    this.finishLinks();
    this.bulk = null;
    if (textFile === null) return;
    this.db.prepare(`ATTACH ? AS text_build`).run(textFile);
    // SQLite's defensive mode forbids writing FTS5's own tables; lifted for this copy of one FTS5
    // table into another made by the same statement (CREATE_FTS) and the same SQLite.
    this.db.unsafeMode(true);
    try {
      this.db
        .transaction(() => {
          for (const t of ['data', 'idx', 'docsize', 'config'])
            this.db.exec(`DELETE FROM main.notes_fts_${t}; INSERT INTO main.notes_fts_${t} SELECT * FROM text_build.notes_fts_${t}`);
          for (const [seq, row] of bulk.text) {
            this.s.ftsDelete!.run(seq);
            if (row) this.s.ftsInsert!.run(seq, row[0], row[1]);
          }
          this.db.prepare(`DELETE FROM vault_meta WHERE key = ?`).run(BULK_MARK);
        })
        .immediate();
    } finally {
      this.db.unsafeMode(false);
      this.db.exec(`DETACH text_build`);
    }
  }

  /**
   * Keeps every id this index gives, moves or frees in `journal` too (note-ids.ts), and takes ids back
   * from it for notes added while it lacks them (an index lost, damaged or deleted, and built again).
   * `exists` says whether a vault path is a file now: an id is taken back by content only from a path
   * that is gone (a rename while the index was away), never from a file still waiting to be indexed.
   */
  useJournal(journal: NoteIdJournal, exists: (path: string) => boolean): void {
    this.journal = { ids: journal, exists };
  }

  /** Every note's path, id and content hash, as the journal keeps them. */
  *idEntries(): Iterable<[string, { id: string; hash: string }]> {
    for (const r of this.db.prepare(`SELECT path, id, hash FROM notes`).iterate() as Iterable<{ path: string; id: string; hash: string }>)
      yield [r.path, { id: r.id, hash: r.hash }];
  }

  /** Links elsewhere that may now point somewhere else: by the names that came or went, and into changed notes. */
  private reresolve(keys: Set<string>, seqs: Set<number>, skipSources: Set<number>, lookup: NoteLookup): void {
    if (keys.size === 0 && seqs.size === 0) return;
    const rows = new Map<number, LinkInfo & { source_path: string; source_title: string }>();
    const select = `SELECT l.id, l.source_seq, l.raw, l.target, l.alias, l.embed, l.line, l.status, l.target_seq, l.heading, n.path AS source_path, n.title AS source_title
                    FROM links l JOIN notes n ON n.seq = l.source_seq WHERE `;
    const chunk = <T>(xs: T[], f: (part: T[]) => void) => {
      for (let i = 0; i < xs.length; i += 500) f(xs.slice(i, i + 500));
    };
    chunk([...keys], (part) => {
      const marks = part.map(() => '?').join(', ');
      // `key_note <> key_full` as written in the partial index on key_note, so SQLite uses it.
      for (const r of this.db
        .prepare(`${select} l.key_full IN (${marks}) OR (l.key_note IN (${marks}) AND key_note <> key_full)`)
        .all(...part, ...part) as Array<LinkInfo & { source_path: string; source_title: string }>)
        rows.set(r.id, r);
    });
    chunk([...seqs], (part) => {
      for (const r of this.db.prepare(`${select} l.target_seq IN (${part.map(() => '?').join(', ')})`).all(...part) as Array<
        LinkInfo & { source_path: string; source_title: string }
      >)
        rows.set(r.id, r);
    });
    for (const r of rows.values()) {
      if (!skipSources.has(r.source_seq)) this.resolveAgain(r, lookup);
    }
  }

  /** A stored link resolved again against `lookup`, its row updated when where it leads changed. */
  private resolveAgain(r: LinkInfo & { source_path: string; source_title: string }, lookup: NoteLookup): void {
    const res = resolveWikiTarget(r.target, lookup, { seq: r.source_seq, id: '', path: r.source_path, title: r.source_title });
    const target = res.status === 'resolved' ? res.note.seq : null;
    if (res.status !== r.status || target !== r.target_seq || res.heading !== r.heading) this.s.linkUpdate!.run(res.status, target, res.heading, r.id);
  }

  /** The whole notes table in maps: a full build resolves hundreds of thousands of links without a query each. */
  private memoryLookup(): NoteLookup {
    const byName = new Map<string, LinkCandidate[]>();
    const byTitle = new Map<string, LinkCandidate[]>();
    const byAlias = new Map<string, LinkCandidate[]>();
    const byPathKey = new Map<string, LinkCandidate[]>();
    const add = (m: Map<string, LinkCandidate[]>, k: string, c: LinkCandidate) => {
      const list = m.get(k);
      if (list) list.push(c);
      else m.set(k, [c]);
    };
    const all = this.db.prepare(`SELECT seq, id, path, title, path_key, name_key, title_key FROM notes`).all() as Array<
      LinkCandidate & { path_key: string; name_key: string; title_key: string }
    >;
    const bySeq = new Map<number, LinkCandidate>();
    const pathKeyOf = new Map<number, string>();
    for (const r of all) {
      const c = { seq: r.seq, id: r.id, path: r.path, title: r.title };
      bySeq.set(r.seq, c);
      pathKeyOf.set(r.seq, r.path_key);
      add(byName, r.name_key, c);
      add(byTitle, r.title_key, c);
      add(byPathKey, r.path_key, c);
    }
    for (const a of this.db.prepare(`SELECT note_seq, alias_key FROM note_aliases`).all() as Array<{ note_seq: number; alias_key: string }>) {
      const c = bySeq.get(a.note_seq);
      if (c) add(byAlias, a.alias_key, c);
    }
    return {
      byName: (k) => byName.get(k) ?? [],
      byTitle: (k) => byTitle.get(k) ?? [],
      byAlias: (k) => byAlias.get(k) ?? [],
      // A path key ending in `/k` has k's last segment as its name: only those notes are compared.
      byPath: (k) => {
        const exact = byPathKey.get(k) ?? [];
        const suffix = (byName.get(lastSegment(k)) ?? []).filter((c) => pathKeyOf.get(c.seq) !== k && pathKeyOf.get(c.seq)!.endsWith(`/${k}`));
        return [...exact, ...suffix];
      },
    };
  }

  /**
   * The id a note added at `path` with content `hash` gets, if no other note has it now: the one a note
   * there had before a rebuild cleared the index (while that rebuild runs, whoever adds the row: the
   * rebuild, the watcher or a write tool); else that of a note removed earlier with the same content (a
   * rename on disk whose two halves reached the index in two batches: a file moved into a new folder
   * is seen only once the watcher has found the folder); else a new one.
   */
  private idFor(path: string, hash: string): string {
    const free = (id: string | undefined): id is string => id !== undefined && this.s.byId!.get(id) === undefined;
    const kept = this.keptIds?.get(path);
    if (free(kept)) return kept;
    const journaled = this.journal?.ids.idAt(path);
    if (free(journaled)) return journaled;
    const gone = this.removedIds.get(hash);
    while (gone?.length) {
      const id = gone.shift();
      if (gone.length === 0) this.removedIds.delete(hash);
      if (free(id)) return id;
    }
    if (this.journal) {
      const { ids, exists } = this.journal;
      for (const [at, id] of ids.withContent(hash)) if (free(id) && !exists(at)) return id;
    }
    return newNoteId();
  }

  private rememberRemoved(row: NoteInfo): void {
    const ids = this.removedIds.get(row.hash);
    if (ids) ids.push(row.id);
    else this.removedIds.set(row.hash, [row.id]);
    // Bounded: the oldest contents are forgotten first.
    if (this.removedIds.size > REMEMBERED_REMOVALS) this.removedIds.delete(this.removedIds.keys().next().value!);
  }

  /**
   * Holds the ids a rebuild is to give back (by path; from `clearFiles`) until it is done (null). The
   * rebuild applies its chunks between other writes: a write tool's refresh or a watcher batch that
   * adds a cleared path first must give it its old id, or the rebuild would find the row there and keep
   * the new one.
   */
  keepIds(ids: ReadonlyMap<string, string> | null): void {
    this.keptIds = ids;
  }

  /** Removes every file's rows, keeping the tags' own settings; returns the ids the notes had, by path, for the rebuild to keep. */
  clearFiles(): Map<string, string> {
    const ids = new Map<string, string>();
    for (const [p, r] of this.files()) ids.set(p, r.id);
    this.db.transaction(() => {
      // Dropping the FTS5 table is instant; deleting its rows one by one is not.
      this.db.exec(`DELETE FROM links; DELETE FROM note_tags; DELETE FROM note_aliases; DELETE FROM notes;
                    DROP TABLE notes_fts; ${CREATE_FTS};`);
      this.db.prepare(`DELETE FROM vault_meta WHERE key = ?`).run(BULK_MARK);
    })();
    return ids;
  }

  meta(key: string): string | undefined {
    return (this.db.prepare(`SELECT value FROM vault_meta WHERE key = ?`).get(key) as { value: string } | undefined)?.value;
  }

  setMeta(key: string, value: string): void {
    this.db.prepare(`INSERT INTO vault_meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`).run(key, value);
  }
}
