/**
 * The file under the audit log (audit-log.ts): `agent-audit.jsonl` with its head checkpoint, key and
 * lock, opened and closed; one whole write at its end, taken back if the system cuts it short; the
 * head checkpoint written within `headLagMs`; and, whenever the file is not the way this process left
 * it (another writer, cut, emptied, deleted, replaced), the chain's head taken up again from it, with
 * a `gap` event saying what was seen (reconcile).
 */
import type { KeyObject } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  encodeHead,
  GENESIS_HASH,
  HEAD_SIZE,
  headPathFor,
  keyPathFor,
  loadOrCreateKey,
  lockPathFor,
  looksTorn,
  parseLine,
  readHeadFd,
  sealLine,
  sealOf,
  tagOf,
  type AuditHead,
  type ParsedLine,
} from './audit-chain.js';
import { AuditFileLock } from './audit-lock.js';
import type { AuditEntry, AuditEvent, GapSeen } from './audit-record.js';
import { readTailLines } from './audit-tail.js';

export interface AuditLogOptions {
  /** How many entries to keep in memory (and reload from the file tail on open). Default 1000. */
  memory?: number;
  /** How long an append waits for another process holding the lock. Default 10 s. */
  lockTimeoutMs?: number;
  /**
   * How often an append checks that the path still names the file it writes to (a stat of the path
   * against the open descriptor, about 2 us): a deleted, renamed-over or moved-away file. Default
   * 100 ms; 0 checks on every append. Lines appended in between go to the old file, which the gap
   * event points to (or which the kernel saves beside the log when it was deleted). Another
   * process's lines and a cut, emptied or rewritten file are caught on every append (a pread).
   */
  pathCheckMs?: number;
  /**
   * How long the head checkpoint may trail the lines it seals, in ms. Default 5. An append writes
   * it (under its own lock) when the last head write is that old; otherwise it marks it due and a
   * timer rewrites it (under the lock, unless another process appended since: its head is newer), so
   * a run of calls shares a head write or two instead of paying a pwrite each; close() writes it at
   * once. A process killed in that window leaves its head up to this far behind its trail,
   * which verify accepts (a trail ahead of its head); only lines cut within the window after such a
   * crash would go unnoticed. 0 writes the head with every batch, under the batch's lock.
   */
  headLagMs?: number;
  /** Called (synchronously) when an append or open has to wait for another process's lock. */
  onLockWait?: () => void;
}

type AuditEventDraft = Omit<AuditEvent, 'seq' | 'prev' | 'hash' | 'ts' | 'pid'>;

interface FileId {
  ino: number;
  dev: number;
}

const { O_RDWR, O_CREAT, O_APPEND } = fs.constants;
/** Linux only: reads through this descriptor leave the file's access time alone. */
const O_NOATIME = (fs.constants as { O_NOATIME?: number }).O_NOATIME ?? 0;

/**
 * Opens the trail for appending and for the one-byte probe read before each append (a+). Where the
 * system allows (Linux, and the file is this user's), without access-time updates: on a relatime
 * mount every probe after a write would otherwise mark the file's inode dirty again, a journal
 * update for a read that changes nothing.
 */
function openTrail(file: string): number {
  const flags = O_RDWR | O_CREAT | O_APPEND;
  if (O_NOATIME) {
    try {
      return fs.openSync(file, flags | O_NOATIME, 0o600);
    } catch (err) {
      // Someone else's file (only its owner may ask for O_NOATIME): opened the ordinary way.
      if ((err as NodeJS.ErrnoException).code !== 'EPERM') throw err;
    }
  }
  return fs.openSync(file, flags, 0o600);
}

/**
 * The file side of AuditLog, which adds what is written to it (calls' entries, the kernel's events,
 * lines that could not be written). Every write happens under the lock, after fileChanged() and the
 * throttled pathCheckDue() said whether reconcile() must first make the chain's head agree with the
 * file.
 */
export class AuditTrailFile {
  protected fd: number | null = null;
  private headFd: number | null = null;
  protected key: KeyObject | null = null;
  protected lock: AuditFileLock | null = null;
  private fileId: FileId = { ino: -1, dev: -1 };
  private headId: FileId = { ino: -1, dev: -1 };
  protected lastHash = GENESIS_HASH;
  /** The head tag of the last line (second half of its MAC). */
  protected lastTag = GENESIS_HASH;
  protected lastSeq = 0;
  protected knownSize = 0;
  private lastPathCheck = 0;
  private headDue = false;
  private headWrittenAt = 0;
  private headTimer: NodeJS.Timeout | null = null;
  protected recent: AuditEntry[] = [];
  private readonly headBuf = Buffer.alloc(HEAD_SIZE);
  private readonly probe = Buffer.alloc(2);
  protected readonly memory: number;
  private readonly lockTimeoutMs: number;
  private readonly pathCheckMs: number;
  private readonly headLagMs: number;
  private readonly onLockWait: (() => void) | undefined;
  readonly headFile: string;
  readonly keyFile: string;
  readonly lockFile: string;
  /** Lines skipped at start because a crash tore them mid-write (kept for compatibility; see `events`). */
  readonly tornLines: number[] = [];
  /** Events this instance wrote (gaps seen, torn tails recovered, the keyed chain started). */
  readonly events: AuditEvent[] = [];

  constructor(
    readonly file: string,
    memory: number | AuditLogOptions = 1000,
    options: AuditLogOptions = {},
  ) {
    const opts = typeof memory === 'number' ? { ...options, memory } : memory;
    this.memory = opts.memory ?? 1000;
    this.lockTimeoutMs = opts.lockTimeoutMs ?? 10_000;
    this.pathCheckMs = opts.pathCheckMs ?? 100;
    this.headLagMs = opts.headLagMs ?? 5;
    this.onLockWait = opts.onLockWait;
    this.headFile = headPathFor(file);
    this.keyFile = keyPathFor(file);
    this.lockFile = lockPathFor(file);
  }

  /** Opens (creating) the file, its key, head and lock, and reloads the last `memory` entries. */
  open(): void {
    if (this.fd !== null) return;
    fs.mkdirSync(path.dirname(this.file), { recursive: true });
    this.key = loadOrCreateKey(this.keyFile).key;
    const lock = new AuditFileLock(this.lockFile, this.lockTimeoutMs, this.onLockWait);
    lock.open();
    this.lock = lock;
    const existed = fs.existsSync(this.file);
    this.fd = openTrail(this.file);
    this.openHead();
    lock.acquire();
    try {
      this.reconcile(true, existed);
    } finally {
      lock.release();
    }
  }

  close(): void {
    try {
      this.flushHead();
    } finally {
      // A head that could not be written (the lock not to be had) still lets go of the files; the
      // error says why, and verify accepts a trail ahead of its head.
      if (this.fd !== null) fs.closeSync(this.fd);
      if (this.headFd !== null) fs.closeSync(this.headFd);
      this.lock?.close();
      this.fd = null;
      this.headFd = null;
      this.lock = null;
    }
  }

  /**
   * Writes `text` at the end of the file in one write(2) and returns its length in bytes. A write
   * the system cut short (the disk filled up in the middle of it) is taken back, so no torn line
   * stays behind, and fails as ENOSPC; a failed one is taken back too (a partial write then error).
   */
  protected writeAll(text: string): number {
    const size = Buffer.byteLength(text, 'utf8');
    let n: number;
    try {
      n = fs.writeSync(this.fd!, text, null, 'utf8');
    } catch (err) {
      this.takeBack();
      throw err;
    }
    if (n !== size) {
      this.takeBack();
      throw Object.assign(new Error(`no space left on device: ${n} of ${size} bytes written`), { code: 'ENOSPC' });
    }
    return n;
  }

  /** Cuts the file back to what this process knows it holds (under the lock): the end of the last whole line. */
  private takeBack(): void {
    try {
      fs.ftruncateSync(this.fd!, this.knownSize);
    } catch {
      // Truncating frees space and needs none; if even that fails, the next look finds the fragment (foreign-line).
    }
  }

  private openHead(): void {
    this.headFd = fs.openSync(this.headFile, fs.constants.O_RDWR | fs.constants.O_CREAT, 0o600);
    const st = fs.fstatSync(this.headFd);
    this.headId = { ino: st.ino, dev: st.dev };
  }

  /** Rewrites the head checkpoint in place (one pwrite); the caller holds the lock. */
  private writeHead(): void {
    const head: AuditHead = { seq: this.lastSeq, size: this.knownSize, hash: this.lastHash, tag: this.lastTag };
    fs.writeSync(this.headFd!, encodeHead(head, this.headBuf), 0, HEAD_SIZE, 0);
    this.headDue = false;
    this.headWrittenAt = performance.now();
  }

  /** After a write, under its lock: the head now, or (headLagMs > 0) by the timer. */
  protected headLater(): void {
    if (this.headLagMs <= 0 || performance.now() - this.headWrittenAt >= this.headLagMs) return this.writeHead();
    this.headDue = true;
    if (!this.headTimer) {
      this.headTimer = setTimeout(() => {
        try {
          this.flushHead();
        } catch {
          // The lock was not to be had (another process stuck holding it): the head stays due, and
          // the next append or close() writes it; the lines themselves are already in the file.
          this.headTimer = null;
        }
      }, this.headLagMs);
      // A due head never keeps the process alive: close() writes it, and a crash is what the lag allows.
      this.headTimer.unref();
    }
  }

  /** Writes a due head, unless another process appended since (its head is newer). */
  private flushHead(): void {
    if (this.headTimer) clearTimeout(this.headTimer);
    this.headTimer = null;
    if (!this.headDue || this.fd === null || !this.lock) return;
    this.lock.acquire();
    try {
      if (!this.fileChanged()) this.writeHead();
      this.headDue = false;
    } finally {
      this.lock.release();
    }
  }

  /**
   * Whether the file is not the size we left it, or no longer ends with our newline: one pread of
   * the last byte we wrote and the one after it (cheaper than an fstat right after a write, which
   * costs about 2 us here).
   */
  protected fileChanged(): boolean {
    if (this.knownSize === 0) return fs.readSync(this.fd!, this.probe, 0, 1, 0) !== 0;
    const n = fs.readSync(this.fd!, this.probe, 0, 2, this.knownSize - 1);
    return n !== 1 || this.probe[0] !== 0x0a;
  }

  protected pathCheckDue(): boolean {
    if (this.pathCheckMs > 0) {
      const now = Date.now();
      if (now - this.lastPathCheck < this.pathCheckMs) return false;
      this.lastPathCheck = now;
    }
    const st = fs.statSync(this.file, { throwIfNoEntry: false });
    if (!st || st.ino !== this.fileId.ino || st.dev !== this.fileId.dev) return true;
    const hst = fs.statSync(this.headFile, { throwIfNoEntry: false });
    return !hst || hst.ino !== this.headId.ino || hst.dev !== this.headId.dev;
  }

  /**
   * Under the lock: makes the in-memory chain head agree with the file, and writes an event when
   * the file is not the way this process (or the head checkpoint) left it.
   */
  protected reconcile(atOpen: boolean, existedAtOpen = true): void {
    const key = this.key!;
    let seen: AuditEvent['seen'];
    let detail: string | undefined;
    let oldFd: number | null = null;

    // 1. Does the path still name our file?
    const fst = fs.fstatSync(this.fd!);
    const pst = fs.statSync(this.file, { throwIfNoEntry: false });
    if (!pst || pst.ino !== fst.ino || pst.dev !== fst.dev) {
      seen = pst ? 'replaced' : 'deleted';
      detail = pst ? `${path.basename(this.file)} now names another file` : `${path.basename(this.file)} was deleted`;
      oldFd = this.fd!;
      this.fd = openTrail(this.file);
    }
    // The head too (a deleted head is recreated; the log says the rest).
    const hst = fs.statSync(this.headFile, { throwIfNoEntry: false });
    if (!hst || hst.ino !== this.headId.ino || hst.dev !== this.headId.dev) {
      if (this.headFd !== null) fs.closeSync(this.headFd);
      this.openHead();
    }

    // 2. What the file holds now, and what we knew.
    const fd = this.fd!;
    const size = fs.fstatSync(fd).size;
    const tail = readTailLines(fd, size, atOpen ? Math.max(this.memory + 1, 8) : 8);
    let last: ParsedLine | null = null;
    for (let i = tail.lines.length - 1; i >= 0 && !last; i--) last = parseLine(tail.lines[i]!); // i indexes tail.lines;
    const lastLine = tail.lines.at(-1);
    const lastIsWhole = lastLine !== undefined && parseLine(lastLine) !== null;
    const seal = last ? sealOf(last, key) : null;
    const fileSeq = last?.seq ?? 0;
    const fileHash = last?.hash ?? GENESIS_HASH;
    const fragment = tail.fragment;
    const tornOk = fragment.length > 0 && looksTorn(fragment, fileSeq + 1);
    let headState = readHeadFd(this.headFd!);
    // The head names a line we can see: its tag must be that line's (a head rewritten without the key is not).
    if (headState.state === 'ok' && last && seal === 'keyed' && last.seq === headState.head.seq) {
      const h = headState.head;
      if (h.hash !== last.hash || h.tag !== tagOf(key, last)) headState = { state: 'invalid', reason: `its tag does not match entry #${h.seq}` };
    }
    let known = { seq: this.lastSeq, hash: this.lastHash };
    if (headState.state === 'ok' && headState.head.seq > known.seq) known = { seq: headState.head.seq, hash: headState.head.hash };

    // 3. Decide what to write, if anything.
    const gap = (seenNow: GapSeen, why: string): AuditEventDraft => ({
      event: 'gap',
      seen: seenNow,
      ...(fileSeq < known.seq ? { missing: { from: fileSeq + 1, to: known.seq } } : {}),
      ...(known.seq > 0 ? { known } : {}),
      detail: why,
    });
    const foreign = "the last line of the file is not an entry sealed with this data folder's key";
    let event: AuditEventDraft | null = null;
    const nothingThere = !last && fragment.length === 0;
    if (seen) {
      // Nothing lost if the new file carries on from what we knew (another process of ours may
      // already have reopened it and said so), or if there was never anything to lose.
      const carriesOn = seal === 'keyed' && lastIsWhole && fileSeq >= known.seq && (fileSeq > known.seq || fileHash === known.hash);
      if (carriesOn || (known.seq === 0 && nothingThere)) seen = undefined;
      else event = gap(seen, detail!);
    }
    if (!event && headState.state === 'invalid' && (known.seq > 0 || !nothingThere)) {
      event = gap('head-altered', `${path.basename(this.headFile)} could not be trusted: ${headState.reason}`);
    }
    if (!event && known.seq === 0) {
      // Neither we nor the head know of an entry: a fresh log, the first keyed open of a log written
      // before the keyed chain, or a log whose head was deleted.
      if (last && !lastIsWhole) event = gap('foreign-line', foreign);
      else if (seal === 'keyed' && headState.state === 'missing') {
        event = gap('head-missing', `${path.basename(this.headFile)} was missing: a cut tail before this line cannot be ruled out`);
      } else if (seal === 'plain' && headState.state === 'missing') event = { event: 'keyed-chain-start', legacyEntries: fileSeq };
      else if (last && seal !== 'keyed') event = gap('foreign-line', foreign);
    } else if (!event) {
      if (!last && !existedAtOpen) event = gap('deleted', `${path.basename(this.file)} did not exist`);
      else if (!last) event = gap(size === 0 ? 'emptied' : 'replaced', size === 0 ? 'the file was emptied' : 'the file holds no entry of ours');
      else if (fileSeq < known.seq) event = gap('cut-tail', `the file ends at entry #${fileSeq}`);
      else if (fileSeq === known.seq && fileHash !== known.hash) event = gap('replaced', `entry #${fileSeq} in the file is not the one last written`);
      else if (seal !== 'keyed' || !lastIsWhole) event = gap('foreign-line', foreign);
    }
    if (!event && fragment.length > 0) {
      event = tornOk ? { event: 'torn-tail-recovered' } : gap('foreign-line', 'the file ended in a fragment that is not the start of an entry');
    }

    // 4. A deleted file that only we still hold: save what we have of it before letting go.
    if (oldFd !== null) {
      if (event && event.event === 'gap') {
        const recoveredTo = this.salvage(oldFd);
        if (recoveredTo) event.recoveredTo = recoveredTo;
        else if (seen === 'replaced' && fs.fstatSync(oldFd).nlink > 0) event.detail += '; the old file still exists under another name';
      }
      fs.closeSync(oldFd);
    }

    // 5. Write it.
    this.lastSeq = fileSeq;
    this.lastHash = fileHash;
    this.lastTag = last ? tagOf(key, last) : GENESIS_HASH;
    let text = fragment.length > 0 ? '\n' : '';
    if (event) {
      const seq = Math.max(fileSeq, known.seq) + 1;
      const fields = { seq, ts: new Date().toISOString(), ...event, pid: process.pid, ...(tornOk ? { torn: true as const } : {}), prev: fileHash };
      const sealed = sealLine(key, fileHash, JSON.stringify(fields));
      text += sealed.line;
      this.events.push({ ...fields, hash: sealed.hash });
      this.lastSeq = seq;
      this.lastHash = sealed.hash;
      this.lastTag = sealed.tag;
    }
    if (text) fs.writeSync(fd, text);
    const after = fs.fstatSync(fd);
    this.knownSize = after.size;
    this.fileId = { ino: after.ino, dev: after.dev };
    this.lastPathCheck = Date.now();
    this.writeHead();

    if (atOpen) {
      const entries: AuditEntry[] = [];
      for (const line of tail.lines) {
        const p = parseLine(line);
        if (p && !p.event) entries.push(p.obj as unknown as AuditEntry);
      }
      this.recent = entries.slice(-this.memory);
    }
  }

  /** Copies an unlinked file's content (reachable only through our descriptor) beside the log. */
  private salvage(oldFd: number): string | undefined {
    const st = fs.fstatSync(oldFd);
    if (st.nlink > 0 || st.size === 0) return undefined;
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    const base = path.basename(this.file).replace(/\.jsonl$/, '');
    const name = `${base}.recovered-${stamp}-${process.pid}.jsonl`;
    const target = path.join(path.dirname(this.file), name);
    const out = fs.openSync(target, 'wx', 0o600);
    try {
      const buf = Buffer.alloc(1 << 20);
      let pos = 0;
      for (;;) {
        const n = fs.readSync(oldFd, buf, 0, buf.length, pos);
        if (n <= 0) break;
        fs.writeSync(out, buf, 0, n);
        pos += n;
      }
    } finally {
      fs.closeSync(out);
    }
    // Its own head, so the saved copy can be verified on its own.
    if (st.size === this.knownSize) {
      const headFile = headPathFor(target);
      const head: AuditHead = { seq: this.lastSeq, size: this.knownSize, hash: this.lastHash, tag: this.lastTag };
      fs.writeFileSync(headFile, encodeHead(head, Buffer.alloc(HEAD_SIZE)), { mode: 0o600, flag: 'wx' });
    }
    return name;
  }
}
