import { createHash, createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * The keyed hash chain shared by the writer (audit-log.ts) and the checker (audit-verify.ts).
 *
 * A line is `{"seq":N, ...fields..., "prev":"<hash of the line before>","hash":"<64 hex>"}`. Each
 * line costs one HMAC-SHA512 with the data folder's key (32 random bytes in `audit.key`, mode 0600)
 * over `prev + "\n" + body`, where `body` is the line without its `hash` field. The 64-byte MAC is
 * split in two independent 32-byte halves: the first is the line's `hash` (the chain link), the
 * second is the line's *head tag*, never written to the log, only to the head checkpoint. So whoever
 * rewrites lines without the key cannot make them verify, even if they recompute every hash, and
 * whoever cuts the tail cannot write a head for the new last line. (One MAC instead of two per
 * append: the head tag is free, which keeps the pipeline's per-call overhead in budget.)
 *
 * Lines written before the keyed chain existed carry `hash = SHA-256(prev + "\n" + body)` (the
 * "plain" or unkeyed chain). They are accepted only as a prefix of the file, closed by a keyed
 * `keyed-chain-start` event whose `prev` pins the last plain hash (so the whole legacy prefix is
 * covered by the key from the upgrade on).
 */

export const GENESIS_HASH = '0'.repeat(64);
export const KEY_FILE = 'audit.key';
const HASH_SUFFIX = /,"hash":"([0-9a-f]{64})"\}$/;
const KEY_TEXT = /^([0-9a-f]{64})\n?$/;

/** The key file beside an audit file. One key per data folder. */
export function keyPathFor(auditFile: string): string {
  return path.join(path.dirname(auditFile), KEY_FILE);
}

/** `agent-audit.jsonl` -> `agent-audit.head` (the MACed checkpoint of the last entry). */
export function headPathFor(auditFile: string): string {
  return auditFile.replace(/\.jsonl$/, '') + '.head';
}

/** `agent-audit.jsonl` -> `agent-audit.lock` (the file every writer flocks around its appends). */
export function lockPathFor(auditFile: string): string {
  return auditFile.replace(/\.jsonl$/, '') + '.lock';
}

export class AuditKeyError extends Error {
  constructor(
    readonly keyFile: string,
    message: string,
  ) {
    super(message);
    this.name = 'AuditKeyError';
  }
}

export interface AuditKey {
  key: KeyObject;
  /** True when this call created the key file (first keyed open of this data folder). */
  created: boolean;
}

/** Reads the key file: null when it does not exist; AuditKeyError when it is not a key. */
export function readKey(keyFile: string): KeyObject | null {
  let text: string;
  try {
    text = fs.readFileSync(keyFile, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new AuditKeyError(keyFile, `cannot read the audit key ${keyFile}: ${(err as Error).message}`);
  }
  const m = KEY_TEXT.exec(text);
  if (!m) throw new AuditKeyError(keyFile, `the audit key ${keyFile} is not 64 hex characters: it was altered`);
  return createSecretKey(Buffer.from(m[1] ?? '', 'hex'));
}

/**
 * Loads the data folder's key, creating it on first use. Creation is atomic and exclusive: the
 * key is written whole (mode 0600) to a private temporary file, then hard-linked to its name,
 * which fails if the name exists. So a reader never sees a half-written key, and when two
 * processes create it at the same moment, the loser reads the winner's key.
 */
export function loadOrCreateKey(keyFile: string): AuditKey {
  const existing = readKey(keyFile);
  if (existing) return { key: existing, created: false };
  const tmp = `${keyFile}.tmp-${process.pid}-${randomBytes(6).toString('hex')}`;
  const fd = fs.openSync(tmp, 'wx', 0o600);
  try {
    fs.fchmodSync(fd, 0o600);
    fs.writeSync(fd, randomBytes(32).toString('hex') + '\n');
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  let created = true;
  try {
    fs.linkSync(tmp, keyFile);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    created = false; // another process won the race: use its key
  } finally {
    fs.rmSync(tmp, { force: true });
  }
  const key = readKey(keyFile);
  if (!key) throw new AuditKeyError(keyFile, `the audit key ${keyFile} vanished while it was being created`);
  return { key, created };
}

/** The line's chain hash (first half of its MAC) and its head tag (second half). */
export function macOf(key: KeyObject, prev: string, body: string): { hash: string; tag: string } {
  const mac = createHmac('sha512', key).update(prev).update('\n').update(body).digest('hex');
  return { hash: mac.slice(0, 64), tag: mac.slice(64) };
}

export function plainHashOf(prev: string, body: string): string {
  return createHash('sha256').update(prev).update('\n').update(body).digest('hex');
}

/** One stored line, split into the MACed body and its recorded hash. */
export interface ParsedLine {
  body: string;
  hash: string;
  seq: number;
  prev: string;
  /** Set on kernel event lines (`gap`, `keyed-chain-start`, `torn-tail-recovered`). */
  event?: string;
  obj: Record<string, unknown>;
}

/** Parses a stored line, or null if it is not one of ours (a torn fragment, a hand-written line). */
export function parseLine(line: string): ParsedLine | null {
  const m = HASH_SUFFIX.exec(line);
  if (!m) return null;
  let obj: Record<string, unknown>;
  try {
    obj = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return null;
  }
  if (typeof obj !== 'object' || obj === null || !Number.isInteger(obj.seq) || typeof obj.prev !== 'string') return null;
  const out: ParsedLine = { body: line.slice(0, m.index) + '}', hash: m[1] ?? '', seq: obj.seq as number, prev: obj.prev, obj };
  if (typeof obj.event === 'string') out.event = obj.event;
  return out;
}

export type LineSeal = 'keyed' | 'plain' | 'bad';

/** Which chain a parsed line belongs to: keyed (MAC matches), plain (legacy SHA-256), or neither. */
export function sealOf(p: ParsedLine, key: KeyObject | null): LineSeal {
  if (key && macOf(key, p.prev, p.body).hash === p.hash) return 'keyed';
  if (plainHashOf(p.prev, p.body) === p.hash) return 'plain';
  return 'bad';
}

/** Seals a body (JSON text of an object whose last field is `prev`) into a stored line. */
export function sealLine(key: KeyObject, prev: string, body: string): { line: string; hash: string; tag: string } {
  const { hash, tag } = macOf(key, prev, body);
  return { line: body.slice(0, -1) + `,"hash":"${hash}"}\n`, hash, tag };
}

/** The head tag of a stored keyed line. */
export function tagOf(key: KeyObject, p: ParsedLine): string {
  return macOf(key, p.prev, p.body).tag;
}

/**
 * A torn line is the start of an entry that a crash cut short. It must look like the beginning
 * of the entry that was due (`{"seq":<next>,...`) and must not be a whole line of ours.
 */
export function looksTorn(fragment: string, nextSeq: number): boolean {
  if (fragment.length === 0 || fragment.endsWith('}')) return false;
  const start = `{"seq":${nextSeq},`;
  return fragment.startsWith(start) || start.startsWith(fragment);
}

// ---------------------------------------------------------------------------------------------
// The head checkpoint: a fixed-size record beside the log, rewritten in place (one pwrite) after
// every append. It names the last entry (seq, hash, the log's byte size after it) and carries that
// entry's head tag, which only the key can produce. So a cut tail, an emptied or a deleted log
// shows even though what is left of the chain is intact, and a head rewritten to match a cut log
// does not check out.

export const HEAD_SIZE = 256;

export interface AuditHead {
  seq: number;
  /** Byte size of the log just after the line `seq`. */
  size: number;
  hash: string;
  /** The second half of line `seq`'s MAC (GENESIS_HASH for an empty log). */
  tag: string;
}

/** Encodes the head into `buf` (HEAD_SIZE bytes, space padded, newline terminated). */
export function encodeHead(h: AuditHead, buf: Buffer): Buffer {
  buf.fill(0x20);
  buf.write(`{"v":2,"seq":${h.seq},"size":${h.size},"hash":"${h.hash}","tag":"${h.tag}"}`, 0, 'latin1');
  buf[HEAD_SIZE - 1] = 0x0a;
  return buf;
}

export type HeadState = { state: 'missing' } | { state: 'invalid'; reason: string } | { state: 'ok'; head: AuditHead };

/** Parses a head record. Its tag is checked by the caller, against the line it names. */
export function decodeHead(text: string): HeadState {
  if (text.length === 0) return { state: 'missing' };
  let obj: Record<string, unknown>;
  try {
    obj = JSON.parse(text.trim()) as Record<string, unknown>;
  } catch {
    return { state: 'invalid', reason: 'it is not a head record' };
  }
  const h = { seq: obj.seq, size: obj.size, hash: obj.hash, tag: obj.tag } as AuditHead;
  const hex = /^[0-9a-f]{64}$/;
  if (obj.v !== 2 || !Number.isInteger(h.seq) || !Number.isInteger(h.size) || !hex.test(String(h.hash)) || !hex.test(String(h.tag))) {
    return { state: 'invalid', reason: 'it is not a head record' };
  }
  return { state: 'ok', head: h };
}

export function readHeadFile(headFile: string): HeadState {
  let text: string;
  try {
    text = fs.readFileSync(headFile, 'latin1');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { state: 'missing' };
    return { state: 'invalid', reason: (err as Error).message };
  }
  return decodeHead(text);
}

export function readHeadFd(fd: number): HeadState {
  const buf = Buffer.alloc(HEAD_SIZE + 1);
  const n = fs.readSync(fd, buf, 0, buf.length, 0);
  return decodeHead(buf.subarray(0, n).toString('latin1'));
}
