/**
 * One open vault: its folder (found through the kernel's sandbox), its index, and the watcher that
 * keeps the index true to the files. The files are the truth: every change, the agent's or anyone
 * else's, is read back from disk into the index.
 *
 * The folder is walked without following links, and a folder that is kernel state (the data folder,
 * pack code) is never entered, even when it lies inside the vault.
 */
import { constants as fsConstants, lstatSync, readdirSync, rmSync, type Stats } from 'node:fs';
import { lstat, mkdir, open, realpath } from 'node:fs/promises';
import path from 'node:path';
import {
  HEAVY_TRANSFER,
  MemoError,
  runHeavy,
  atomicTempWriter,
  removeTempLeftover,
  type Logger,
  type ResolvedPath,
  type Sandbox,
  type ToolContext,
  type PathIntent,
} from 'memo-kernel/pack';
import { fileTypeOf, makeSnippet, splitFrontMatter } from './markdown.js';
import { readFileRecord, type FileIdentity, type FileRecord } from './file-record.js';
import type { ReadFilesResult } from './index-build.js';
import { FolderWatcher } from './folder-watcher.js';
import { VaultIndex, type BatchResult, type NoteInfo } from './vault-index.js';

export { sha256 } from './file-record.js';
/** The watcher waits for this much quiet before applying what changed (an editor's save is several writes)... */
const QUIET_MS = 50;
/** ...but never holds changes longer than this, however busy the folder is. */
const MAX_HOLD_MS = 2000;
/** How much of a note a search snippet is looked for in. */
const SNIPPET_READ_BYTES = 256 * 1024;
/** Files stat'ed at once when the watcher names them. */
const READ_CONCURRENCY = 16;
/** A scan lets the event loop run after this many files. */
const SCAN_YIELD = 2000;
/** A sync reads this many files or more in a worker (fewer in the event loop, one by one). */
const WORKER_READ_MIN = 200;
/** Files applied per transaction during a scan (bounds memory: parsed bodies wait for their batch). */
const SCAN_CHUNK = 2500;

/** Files read and applied per step of a full build in workers (see `bulkBuild`); MEMO_VAULT_BULK_CHUNK sets another (tests). */
function bulkChunk(): number {
  const v = Number(process.env.MEMO_VAULT_BULK_CHUNK);
  return Number.isInteger(v) && v > 0 ? v : 2500;
}
/** The worker side of a full build. */
const BUILD_MODULE = new URL('./index-build.js', import.meta.url);

/**
 * The fewest files a sync must add to an empty index to build it in workers (`bulkBuild`); fewer go
 * through `applyBatch` in the event loop (starting workers costs more than it saves). MEMO_VAULT_BULK_MIN
 * sets another (tests build small vaults the full way).
 */
function bulkMin(): number {
  const v = Number(process.env.MEMO_VAULT_BULK_MIN);
  return Number.isInteger(v) && v > 0 ? v : 2000;
}

/** Progress of a sync that reads many files: files done of the files to read. */
export type SyncProgress = (done: number, total: number) => void;

/** One step of a full build in a worker (the event loop runs it when no worker can be started: code not compiled). */
async function buildStep<T>(fn: 'readFiles' | 'writeText' | 'finishText', input: unknown, transfer: ArrayBuffer[] = []): Promise<T> {
  try {
    return await runHeavy<T>(BUILD_MODULE, fn, input, { what: 'building the vault index', deadlineMs: 10 * 60_000, transfer });
  } catch (err) {
    if (!(err instanceof MemoError && /needs the compiled/.test(err.message))) throw err;
    const local = (await import('./index-build.js')) as unknown as Record<string, (input: unknown) => unknown>;
    const out = local[fn]!(input);
    // What a worker would have moved back under HEAVY_TRANSFER is the value itself here.
    return (out !== null && typeof out === 'object' && HEAVY_TRANSFER in out ? (out as unknown as { value: unknown }).value : out) as T;
  }
}

/** Names never part of a vault: hidden folders (.git, .obsidian, .trash) and dependency trees. */
export function isSkippedName(name: string): boolean {
  return name.startsWith('.') || name === 'node_modules';
}

/**
 * Entries a folder listing shows: not skipped, and not the temp file of an atomic write (the one every
 * vault write makes, `<note>.md.<pid>.<hex>.tmp`), whether that write is under way or was killed.
 */
export function isListedEntry(e: { name: string; isFile(): boolean }): boolean {
  return !isSkippedName(e.name) && !(e.isFile() && atomicTempWriter(e.name) !== null);
}

export function shown(p: string): string {
  const q = JSON.stringify(p);
  return q.length > 200 ? `${q.slice(0, 160)}…"` : q;
}

/** Whether `inner` is `outer` or inside it, segment by segment (`/a/bc` is not inside `/a/b`). */
function within(outer: string, inner: string): boolean {
  const rel = path.relative(outer, inner);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel) && rel.split(path.sep)[0] !== '..');
}

/**
 * A vault-relative path as given by a caller, checked and normalised: `/` separators, no `.` or `..`
 * segments, no hidden segments, not absolute. VALIDATION otherwise (parsed, never string-matched).
 */
export function cleanRelative(requested: string, what = 'path'): string {
  if (typeof requested !== 'string' || requested.includes('\0')) throw new MemoError('VALIDATION', `The ${what} must be text without NUL bytes.`);
  const p = requested.trim().replace(/\\/g, '/');
  if (p.startsWith('/') || /^[a-zA-Z]:\//.test(p))
    throw new MemoError('VALIDATION', `The ${what} ${shown(requested)} is absolute; give it relative to the vault folder.`);
  const segments = p.split('/').filter((s, i, all) => !(s === '' && (i === all.length - 1 || i === 0)) && s !== '.');
  for (const s of segments) {
    if (s === '') throw new MemoError('VALIDATION', `The ${what} ${shown(requested)} has an empty segment.`);
    if (s === '..') throw new MemoError('PATH_OUTSIDE_ROOT', `The ${what} ${shown(requested)} uses "..": paths stay inside the vault.`);
    if (isSkippedName(s)) throw new MemoError('VALIDATION', `The ${what} ${shown(requested)} goes through a hidden folder, which is not part of the vault.`);
  }
  return segments.join('/');
}

async function runLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      await fn(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

export class Vault {
  readonly index: VaultIndex;
  private watcher: FolderWatcher | null = null;
  private chain: Promise<unknown> = Promise.resolve();
  /** Watcher batches and rebuilds, one at a time (see `inTurn`). */
  private turns: Promise<unknown> = Promise.resolve();
  /** A watcher batch is waiting for its turn: it takes what changed when it starts, so more can join it. */
  private flushQueued = false;
  private closed = false;
  private pending = new Set<string>();
  private pendingDirs = new Set<string>();
  private quietTimer: NodeJS.Timeout | null = null;
  private holdTimer: NodeJS.Timeout | null = null;

  constructor(
    /** The vault folder's real path. */
    readonly real: string,
    /** The folder as the setting names it, relative to the sandbox root. */
    readonly folder: string,
    private readonly sandbox: Sandbox,
    index: VaultIndex,
    private readonly logger: Logger,
  ) {
    this.index = index;
  }

  /** Runs `fn` after every earlier write and batch: the index is changed by one thing at a time. */
  exclusive<T>(fn: () => Promise<T> | T): Promise<T> {
    const run = this.chain.then(() => {
      if (this.closed) throw new MemoError('CANCELLED', 'The vault was closed (the pack reloaded or the kernel stopped).');
      return fn();
    });
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** Vault-relative path of a real path inside the vault. */
  relativeOf(real: string): string {
    return path.relative(this.real, real).split(path.sep).join('/');
  }

  /**
   * A vault-relative path through the kernel's sandbox: refused if it leads outside the root, into
   * kernel state or `.git`, or (after links are followed) outside the vault folder.
   */
  async resolve(ctx: ToolContext, rel: string, intent: PathIntent, what = 'path'): Promise<{ resolved: ResolvedPath; rel: string }> {
    const clean = cleanRelative(rel, what);
    const resolved = await ctx.sandbox.resolve(clean === '' ? this.folder : path.join(this.folder, clean), intent);
    if (!within(this.real, resolved.real)) {
      throw new MemoError('PATH_OUTSIDE_ROOT', `The ${what} ${shown(rel)} leads outside the vault folder (through a link).`, { details: { path: rel } });
    }
    return { resolved, rel: this.relativeOf(resolved.real) };
  }

  // -------------------------------------------------------------------------------------------
  // Reading files into records

  /** Reads one file as the index stores it; null when it is gone, not a regular file, or not a vault file. */
  readRecord(rel: string, st?: Stats): FileRecord | null {
    // Kernel state is never indexed, nor a file reached through a link (the vault's real path has none).
    if (this.sandbox.kernelArea(path.join(this.real, rel)) !== null) return null;
    const read = readFileRecord(this.real, rel, { ...(st ? { stats: st } : {}), isKernelFile: (own) => this.isKernelFile(own) });
    return read?.record ?? null;
  }

  /**
   * Reads many files: in a worker when they are many (`WORKER_READ_MIN`), one by one in the event loop
   * when they are few. `stats` are what a scan found (the worker looks for itself).
   */
  private async readMany(paths: readonly string[], stats: ReadonlyMap<string, Stats>): Promise<FileRecord[]> {
    if (paths.length >= WORKER_READ_MIN) {
      const got = await this.readInWorker(paths);
      const bytes = Buffer.from(got.bytes);
      for (const f of got.files) if (f.span && f.record.parsed) f.record.parsed.body = bytes.toString('utf8', f.span[0], f.span[1]);
      return got.files.map((f) => f.record);
    }
    const records: FileRecord[] = [];
    for (const rel of paths) {
      const r = this.readRecord(rel, stats.get(rel));
      if (r) records.push(r);
    }
    return records;
  }

  /**
   * Reads and parses files in a worker (index-build.ts): the records without their bodies, which come
   * as bytes (see ReadFilesResult). Kernel state and the kernel's own files are never indexed.
   */
  private async readInWorker(paths: readonly string[]): Promise<ReadFilesResult> {
    // A file of kernel state inside the vault folder is left out here, before any worker reads it.
    const wanted = paths.filter((rel) => this.sandbox.kernelArea(path.join(this.real, rel)) === null);
    const got = await buildStep<ReadFilesResult>('readFiles', { real: this.real, paths: wanted });
    // A file with other names (a hard link) that is one of the kernel's own is never indexed.
    return { files: got.files.filter((r) => r.identity === null || !this.isKernelFile(r.identity)), bytes: got.bytes };
  }

  /** Whether a file with other names (a hard link) is one of the kernel's own. */
  isKernelFile(own: FileIdentity): boolean {
    return this.sandbox.kernelFile({ ...own, isDirectory: () => false }) !== null;
  }

  /** A snippet of a markdown note around the search terms, cut from the file (null when it cannot be read). */
  async snippet(rel: string, terms: readonly string[]): Promise<string | null> {
    const abs = path.join(this.real, rel);
    if (this.sandbox.kernelArea(abs) !== null) return null;
    try {
      if ((await realpath(path.dirname(abs))) !== path.dirname(abs)) return null;
      const h = await open(abs, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW);
      try {
        const own = await h.stat({ bigint: true });
        if (!own.isFile() || this.sandbox.kernelFile(own) !== null) return null;
        const buf = Buffer.allocUnsafe(Math.min(Number(own.size), SNIPPET_READ_BYTES));
        const { bytesRead } = await h.read(buf, 0, buf.length, 0);
        return makeSnippet(splitFrontMatter(buf.subarray(0, bytesRead).toString('utf8')).body, terms);
      } finally {
        await h.close();
      }
    } catch {
      return null;
    }
  }

  /**
   * Every vault file under `under` (vault-relative, '' for all): path -> stats. No links followed;
   * kernel state never entered. Temp files of atomic writes are never vault files; those a killed
   * write left (its process gone) are removed on the way, so opening the vault (its first sync walks
   * the whole folder) sweeps them, and so does every rebuild.
   */
  async scan(under = ''): Promise<Map<string, Stats>> {
    const out = new Map<string, Stats>();
    // Synchronous calls (a thread-pool round trip per file made a 50,000-file walk take seconds),
    // with a pause for the event loop every SCAN_YIELD files.
    let sinceYield = 0;
    const walk = async (dirAbs: string): Promise<void> => {
      if (this.sandbox.kernelArea(dirAbs) !== null) return;
      let entries;
      try {
        entries = readdirSync(dirAbs, { withFileTypes: true });
      } catch {
        return; // gone or unreadable: nothing of it is indexed
      }
      const subdirs: string[] = [];
      for (const e of entries) {
        const abs = path.join(dirAbs, e.name);
        const writer = e.isFile() ? atomicTempWriter(e.name) : null;
        if (writer !== null) await removeTempLeftover(abs, writer);
        if (!isListedEntry(e)) continue;
        if (e.isDirectory()) subdirs.push(abs);
        else if (e.isFile() && fileTypeOf(e.name)) {
          try {
            out.set(this.relativeOf(abs), lstatSync(abs));
          } catch {
            // removed meanwhile
          }
          if (++sinceYield >= SCAN_YIELD) {
            sinceYield = 0;
            await new Promise((resolve) => setImmediate(resolve));
          }
        }
      }
      for (const d of subdirs) await walk(d);
    };
    await walk(under ? path.join(this.real, under) : this.real);
    return out;
  }

  /** The given vault-relative paths that are vault files now, with their stats. */
  private async statPaths(paths: readonly string[]): Promise<Map<string, Stats>> {
    const out = new Map<string, Stats>();
    await runLimited(paths, READ_CONCURRENCY, async (rel) => {
      if (!fileTypeOf(rel)) return;
      try {
        const st = await lstat(path.join(this.real, rel));
        if (st.isFile()) out.set(rel, st);
      } catch {
        // gone: a removal
      }
    });
    return out;
  }

  /**
   * Brings the index in line with the files under `under`: new and changed files (by size and
   * mtime, or all with `force`) are read, missing ones removed; a file that reappears elsewhere with
   * the same content keeps its id. Applied in chunks, each one transaction.
   */
  async sync(options: { under?: string; paths?: Iterable<string>; force?: boolean; signal?: AbortSignal; progress?: SyncProgress } = {}): Promise<BatchResult> {
    const under = options.under ?? '';
    // Given paths (what the watcher saw): only they are looked at; otherwise the folder is walked.
    const given = options.paths ? [...new Set(options.paths)] : null;
    const files = given ? await this.statPaths(given) : await this.scan(under);
    // Only the rows of the given paths (a flush must not read 50,000 rows to apply one change).
    const indexed = given ? this.index.filesAt(given) : this.index.files();
    const prefix = under ? `${under}/` : '';
    const changed: string[] = [];
    for (const [rel, st] of files) {
      const row = indexed.get(rel);
      if (options.force || !row || row.size !== st.size || row.mtime !== st.mtimeMs) changed.push(rel);
    }
    const removals = given
      ? given.filter((p) => indexed.has(p) && !files.has(p))
      : [...indexed.keys()].filter((p) => (prefix === '' || p.startsWith(prefix)) && !files.has(p));
    const removalsByHash = new Map<string, string[]>();
    for (const p of removals) {
      const h = indexed.get(p)!.hash;
      removalsByHash.set(h, [...(removalsByHash.get(h) ?? []), p]);
    }
    const claimed = new Set<string>();
    const total: BatchResult = { added: 0, updated: 0, removed: 0, renamed: 0, unchanged: files.size - changed.length };
    // The first build of an index (a new vault, a reindex): in workers, with the index in bulk mode.
    if (!given && removals.length === 0 && changed.length >= bulkMin() && this.index.db.name !== ':memory:' && this.index.count() === 0)
      return this.bulkBuild(changed, total, options);
    for (let i = 0; i < changed.length || (i === 0 && removals.length); i += SCAN_CHUNK) {
      if (options.signal?.aborted) throw new MemoError('CANCELLED', 'The vault scan was stopped before it finished.');
      const part = changed.slice(i, i + SCAN_CHUNK);
      const records = await this.readMany(part, files);
      // A new path whose content an indexed path that is gone had: a rename, even across chunks.
      const moves = new Map<string, string>();
      for (const r of records) {
        if (indexed.has(r.path)) continue;
        const from = removalsByHash.get(r.hash)?.find((p) => !claimed.has(p));
        if (from !== undefined) {
          claimed.add(from);
          moves.set(r.path, from);
        }
      }
      const last = i + SCAN_CHUNK >= changed.length;
      const partRemovals = last ? removals.filter((p) => !claimed.has(p)) : [];
      const r = await this.exclusive(() => this.index.applyBatch(records, partRemovals, moves));
      for (const k of ['added', 'updated', 'removed', 'renamed', 'unchanged'] as const) total[k] += r[k];
      if (last) break;
    }
    return total;
  }

  /**
   * Fills an empty index with `paths` (vault-relative, with their stats in `files`): one worker reads
   * and parses the next chunk while the event loop adds the chunk before it (rows, tags, aliases: one
   * transaction each, in turn with write tools through `exclusive`) and another worker puts the text
   * of the chunks already added into a build file's full-text table (index-build.ts). The index then
   * takes that table over, resolves every link once and makes its secondary indexes (VaultIndex.finishBulk).
   * Stopped part way (the signal, a failure), what was added is completed the same way.
   */
  private async bulkBuild(paths: readonly string[], total: BatchResult, options: { signal?: AbortSignal; progress?: SyncProgress }): Promise<BatchResult> {
    const textFile = `${this.index.db.name}.text-build`;
    const chunks: string[][] = [];
    for (let i = 0, size = bulkChunk(); i < paths.length; i += size) chunks.push(paths.slice(i, i + size));
    // Promises awaited later: marked handled now (a failure while the loop is elsewhere is taken up where each is awaited).
    const later = <T>(p: Promise<T>): Promise<T> => {
      p.catch(() => undefined);
      return p;
    };
    const read = (part: string[]) => later(this.readInWorker(part));
    await this.exclusive(() => this.index.startBulk());
    // The text steps run one after another (one writer on the build file); one that fails stops those after it.
    let text: Promise<unknown> = later(buildStep('writeText', { file: textFile, rows: [], fresh: true }));
    let textWaiting = 0;
    let reading: Promise<ReadFilesResult> | null = chunks.length ? read(chunks[0]!) : null;
    let failure: Error | null = null;
    let done = 0;
    try {
      for (let i = 0; i < chunks.length; i++) {
        if (options.signal?.aborted) throw new MemoError('CANCELLED', 'The vault scan was stopped before it finished.');
        const got = await reading!;
        reading = i + 1 < chunks.length ? read(chunks[i + 1]!) : null;
        const bytes = Buffer.from(got.bytes);
        const step = await this.exclusive(() => this.index.bulkInsert(got.files, ([start, end]) => bytes.toString('utf8', start, end)));
        for (const k of ['added', 'updated', 'removed', 'renamed', 'unchanged'] as const) total[k] += step.result[k];
        textWaiting++;
        // The bytes move on to the text worker (not copied): this thread is done with them.
        text = later(text.then(() => buildStep('writeText', { file: textFile, rows: step.text, bytes: got.bytes }, [got.bytes])).finally(() => textWaiting--));
        // At most two chunks' text waits in memory.
        if (textWaiting > 2) await text;
        done += chunks[i]!.length;
        options.progress?.(done, paths.length);
      }
    } catch (err) {
      failure = err instanceof Error ? err : new Error(String(err));
      await reading?.catch(() => undefined);
    }
    const textDone = text
      .then(() => buildStep('finishText', textFile))
      .then(
        () => true,
        (err: unknown) => {
          this.logger.warn(`vault index: the notes' text could not be indexed (${(err as Error).message}); run memo vault reindex`);
          return false;
        },
      );
    try {
      // Completed even when the vault is closing (the index must not keep a build half done). The
      // links and indexes first, while the worker puts in the last of the text.
      const inTurn = (fn: () => void) => (this.closed ? fn() : this.exclusive(fn));
      await inTurn(() => this.index.finishLinks());
      const textOk = await textDone;
      await inTurn(() => this.index.finishBulk(textOk ? textFile : null));
    } finally {
      await textDone;
      try {
        rmSync(textFile, { force: true });
      } catch (err) {
        // What is in the way is not the build's to remove (a folder by that name): said, and left.
        this.logger.warn(`vault index: the build's scratch file ${textFile} could not be removed (${(err as Error).message})`);
      }
    }
    if (failure !== null) throw failure;
    return total;
  }

  /**
   * Rebuilds the index from the files: every file read again; notes keep their ids (by path), tags
   * their settings. Taken in turn with the watcher's batches (after those under way, before those to
   * come); a write tool's refresh may land between its chunks, and a note it adds keeps its id too.
   */
  rebuild(signal?: AbortSignal, progress?: SyncProgress): Promise<BatchResult> {
    return this.inTurn(async () => {
      await this.exclusive(() => this.index.keepIds(this.index.clearFiles()));
      try {
        return await this.sync({ force: true, ...(signal ? { signal } : {}), ...(progress ? { progress } : {}) });
      } finally {
        this.index.keepIds(null);
      }
    });
  }

  /**
   * Runs `fn` after every earlier watcher batch and rebuild has finished. Each of them reads files and
   * applies what it read later; run side by side, an older read could be applied after a newer one
   * and stay, stale, until the file changed again. In turn, the later one always reads later.
   */
  private inTurn<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.turns.then(fn);
    this.turns = run.catch(() => undefined);
    return run;
  }

  /** Reads the given paths again and applies them (called inside `exclusive` by the write tools). */
  refreshPaths(paths: readonly string[], moves: ReadonlyMap<string, string> = new Map()): Promise<BatchResult> {
    try {
      const upserts: FileRecord[] = [];
      const removals: string[] = [];
      for (const rel of new Set(paths)) {
        const r = this.readRecord(rel);
        if (r) upserts.push(r);
        else removals.push(rel);
      }
      return Promise.resolve(this.index.applyBatch(upserts, removals, moves));
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
  }

  // -------------------------------------------------------------------------------------------
  // Watching

  /**
   * Watches the vault's folders (folder-watcher.ts): notes and filed files are seen through their
   * folder's events rather than one handle per file (50,000 notes would otherwise be 50,000 watch
   * handles), and no file is stat'ed to start.
   */
  watch(): Promise<void> {
    const watcher = new FolderWatcher(this.real, {
      entry: (abs) => {
        if (this.closed || !within(this.real, abs) || abs === this.real) return;
        const rel = this.relativeOf(abs);
        if (!fileTypeOf(rel) || rel.split('/').some(isSkippedName)) return;
        this.pending.add(rel);
        this.schedule();
      },
      folder: (abs) => {
        if (this.closed || !within(this.real, abs)) return;
        this.pendingDirs.add(this.relativeOf(abs));
        this.schedule();
      },
      skip: (abs) => isSkippedName(path.basename(abs)) || this.sandbox.kernelArea(abs) !== null,
      warn: (message) => this.logger.warn(message),
    });
    this.watcher = watcher;
    watcher.start();
    return Promise.resolve();
  }

  private schedule(): void {
    if (this.quietTimer) clearTimeout(this.quietTimer);
    this.quietTimer = setTimeout(() => this.flush(), QUIET_MS);
    this.holdTimer ??= setTimeout(() => this.flush(), MAX_HOLD_MS);
  }

  /**
   * Applies what the watcher collected: a storm of thousands of events becomes one scan of the folders
   * involved and one transaction per chunk. In turn with earlier batches and rebuilds (`inTurn`); what
   * changes while it waits joins it.
   */
  private flush(): void {
    if (this.quietTimer) clearTimeout(this.quietTimer);
    if (this.holdTimer) clearTimeout(this.holdTimer);
    this.quietTimer = this.holdTimer = null;
    if (this.closed || this.flushQueued) return;
    this.flushQueued = true;
    void this.inTurn(async () => {
      this.flushQueued = false;
      const files = [...this.pending];
      const dirs = [...this.pendingDirs];
      this.pending.clear();
      this.pendingDirs.clear();
      if (this.closed || (files.length === 0 && dirs.length === 0)) return;
      try {
        // Folders that came or went: what is under them now, and what the index had under them.
        const topDirs = dirs.filter((d) => !dirs.some((o) => o !== d && d.startsWith(`${o}/`)));
        const candidates = new Set(files);
        for (const d of topDirs) {
          for (const rel of (await this.scan(d)).keys()) candidates.add(rel);
          for (const n of this.index.notesUnder(d)) candidates.add(n.path);
        }
        // Read, compared by size and mtime, applied in chunks of one transaction each; a file that
        // reappears elsewhere with the same content (a rename on disk) keeps its id.
        if (candidates.size) await this.sync({ paths: candidates });
      } catch (err) {
        if (!this.closed) this.logger.warn(`vault index: applying file changes failed (${(err as Error).message}); run memo vault reindex`);
      }
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.quietTimer) clearTimeout(this.quietTimer);
    if (this.holdTimer) clearTimeout(this.holdTimer);
    const w = this.watcher;
    this.watcher = null;
    w?.close();
    await this.turns;
    await this.chain;
  }

  // -------------------------------------------------------------------------------------------
  // Finding notes

  /**
   * A note by its id, its vault-relative path (`.md` optional), or a wiki-link target (`Meeting`,
   * `Meeting#Decisions`, `folder/Meeting`). Ambiguous names are refused with the candidates (a write
   * never guesses); NOT_FOUND when nothing matches.
   */
  find(ref: string): { note: NoteInfo; heading: string | null } {
    const r = ref.trim();
    if (!r) throw new MemoError('VALIDATION', 'Name the note: its id, its path in the vault, or its title.');
    const byId = /^[0-9a-f]{16}$/.test(r) ? this.index.note({ id: r }) : undefined;
    if (byId) return { note: byId, heading: null };
    const asPath = r.replace(/\\/g, '/').replace(/^\/+/, '');
    for (const p of [asPath, `${asPath}.md`]) {
      const n = this.index.note({ path: p });
      if (n) return { note: n, heading: null };
    }
    const res = this.index.resolve(r.replace(/^!?\[\[|\]\]$/g, '').split(/\\?\|/)[0] ?? r);
    if (res.status === 'resolved') return { note: this.index.note({ seq: res.note.seq })!, heading: res.heading };
    if (res.status === 'ambiguous') {
      const list = res.candidates.map((c) => `${c.path} (id ${c.id})`).join(', ');
      throw new MemoError('VALIDATION', `${shown(ref)} matches ${res.candidates.length} notes: ${list}. Name one by its path or id.`, {
        details: { candidates: res.candidates.map((c) => ({ id: c.id, path: c.path, title: c.title })) },
      });
    }
    throw new MemoError('NOT_FOUND', `No note in the vault is ${shown(ref)} (looked for an id, a path and a title).`, { details: { note: ref } });
  }
}

/**
 * Creates the folders of `rel` (vault-relative) that are missing, one level at a time and never
 * through a link (a link swapped in since the sandbox checked would otherwise be walked into).
 */
export async function ensureFolders(vault: Vault, ctx: ToolContext, relFolder: string): Promise<string[]> {
  if (relFolder === '') return [];
  const { resolved } = await vault.resolve(ctx, relFolder, 'write', 'folder');
  const made: string[] = [];
  const missing: string[] = [];
  for (let cur = resolved.real; ; cur = path.dirname(cur)) {
    try {
      const st = await lstat(cur);
      if (!st.isDirectory()) throw new MemoError('VALIDATION', `${shown(vault.relativeOf(cur))} is a file, not a folder.`);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    if (!within(vault.real, cur) || cur === vault.real) throw new MemoError('NOT_FOUND', 'The vault folder is gone. Run memo vault init.');
    missing.unshift(cur);
  }
  for (const d of missing) {
    try {
      await mkdir(d);
      made.push(vault.relativeOf(d));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    if (!(await lstat(d)).isDirectory()) throw new MemoError('CONFLICT', `${shown(vault.relativeOf(d))} changed while it was being created.`);
  }
  return made;
}
