/**
 * Reading an audit file from its end: the last whole lines and any torn fragment after them (what
 * the log reloads at open and looks at when the file changed under it), and the newest lines as
 * `memo audit tail` shows them, without creating or locking anything.
 */
import * as fs from 'node:fs';
import { parseLine } from './audit-chain.js';
import { isAuditEvent, type AuditLine } from './audit-record.js';

/** Reads up to `count` last whole lines of a file from its end, and any fragment after the last newline. */
export function readTailLines(fd: number, size: number, count: number): { lines: string[]; fragment: string } {
  if (size === 0) return { lines: [], fragment: '' };
  const chunk = 64 * 1024;
  let pos = size;
  const parts: Buffer[] = [];
  let newlines = 0;
  while (pos > 0 && newlines <= count) {
    const len = Math.min(chunk, pos);
    pos -= len;
    const part = Buffer.alloc(len);
    fs.readSync(fd, part, 0, len, pos);
    parts.push(part);
    for (const b of part) if (b === 10) newlines++;
  }
  const text = Buffer.concat(parts.reverse()).toString('utf8');
  const lines = text.split('\n');
  const fragment = lines.pop()!; // '' when the file ends with a newline
  if (pos > 0) lines.shift(); // the first line may be partial
  return { lines: lines.slice(-count), fragment };
}

/**
 * The newest lines of an audit file (entries and events), read from its end without creating or
 * locking anything: what `memo audit tail` shows. `tool` keeps only that tool's entries.
 */
export function readAuditFileTail(file: string, count: number, tool?: string): AuditLine[] {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  try {
    const size = fs.fstatSync(fd).size;
    // Filtering by tool may need the whole file; otherwise the tail is enough.
    const { lines } = readTailLines(fd, size, tool ? Number.MAX_SAFE_INTEGER : count);
    const out: AuditLine[] = [];
    for (const line of lines) {
      const p = parseLine(line);
      if (!p) continue;
      const entry = p.obj as unknown as AuditLine;
      if (tool && (isAuditEvent(entry) || entry.tool !== tool)) continue;
      out.push(entry);
    }
    return out.slice(-count);
  } finally {
    fs.closeSync(fd);
  }
}
