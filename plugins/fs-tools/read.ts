/** read_file: text files up to 1 MB whole, or a slice of lines (offset/limit) of a bigger one. */
import type { FileHandle } from 'node:fs/promises';
import type { ToolContext } from 'memo-kernel/pack';
import type { ToolArgs } from './tool-args.js';
import {
  BINARY_SNIFF_BYTES,
  READ_MAX_BYTES,
  checkSignal,
  countLines,
  countTextLines,
  decodeText,
  fail,
  humanBytes,
  isBinary,
  plural,
  readAll,
  shown,
} from './common.js';

type ReadArgs = ToolArgs['read_file'];

export interface ReadResult {
  path: string;
  content: string;
  totalLines: number;
  size: number;
  startLine: number;
  endLine: number;
  truncated: boolean;
  nextOffset?: number;
  summary: string;
  [key: string]: string | number | boolean | undefined;
}

const CHUNK = 1024 * 1024;
/** Files up to this size are read by the sandbox in one go on the event-loop thread (readSmallFile). */
const SMALL_READ = 64 * 1024;

function binaryError(requested: string) {
  return fail(
    'VALIDATION',
    `${shown(requested)} looks binary (it has NUL bytes in its first ${BINARY_SNIFF_BYTES / 1024} KB), so it is not returned as text.`,
    {
      path: requested,
    },
  );
}

function offsetError(requested: string, offset: number, total: number) {
  return fail('VALIDATION', `offset ${offset} is past the end of ${shown(requested)}, which has ${plural(total, 'line')}.`, {
    path: requested,
    offset,
    totalLines: total,
  });
}

export async function readFileTool(args: ReadArgs, ctx: ToolContext): Promise<ReadResult> {
  const requested = args.path;
  const sliced = args.offset !== undefined || args.limit !== undefined;
  const small = ctx.sandbox.readSmallFile?.(requested, SMALL_READ);
  if (small) return fromBuffer(small.data, requested, args);
  const { handle, size } = await ctx.sandbox.openForRead(requested);
  try {
    if (size > READ_MAX_BYTES && !sliced) {
      throw fail(
        'VALIDATION',
        `${shown(requested)} is ${humanBytes(size)} (${size} bytes), over read_file's limit of 1 MB (${READ_MAX_BYTES} bytes). ` +
          'Read it in parts with offset and limit (for example offset: 1, limit: 2000), or find what you need with search_files.',
        { path: requested, size, limit: READ_MAX_BYTES },
      );
    }
    const result = size > READ_MAX_BYTES ? await readSliceStreaming(handle, requested, args, ctx) : await readSmall(handle, requested, args, size);
    return result;
  } finally {
    await handle.close();
  }
}

function finish(requested: string, content: string, total: number, size: number, start: number, end: number, truncated: boolean): ReadResult {
  const out: ReadResult = { path: requested, content, totalLines: total, size, startLine: start, endLine: end, truncated, summary: '' };
  if (end < total) out.nextOffset = end + 1;
  const part = total === 0 ? 'empty' : start === 1 && end === total ? plural(total, 'line') : `lines ${start}-${end} of ${total}`;
  out.summary = `read ${requested} (${part}, ${humanBytes(size)})${truncated ? ', cut at 1 MB' : ''}`;
  return out;
}

async function readSmall(handle: FileHandle, requested: string, args: ReadArgs, size: number): Promise<ReadResult> {
  return fromBuffer(await readAll(handle, READ_MAX_BYTES, requested, size), requested, args);
}

/** A whole file (at most 1 MB) as the result: all of it, or the lines asked for. */
function fromBuffer(buf: Buffer, requested: string, args: ReadArgs): ReadResult {
  if (isBinary(buf)) throw binaryError(requested);
  if (args.offset === undefined && args.limit === undefined) {
    const content = decodeText(buf);
    const total = countTextLines(content);
    return finish(requested, content, total, buf.length, total === 0 ? 0 : 1, total, false);
  }
  const total = countLines(buf);
  const first = args.offset ?? 1;
  if (first > Math.max(total, 1)) throw offsetError(requested, first, total);
  if (total === 0) return finish(requested, '', 0, 0, 0, 0, false);
  const last = Math.min(total, args.limit === undefined ? total : first + args.limit - 1);
  const startByte = lineStart(buf, first);
  const endByte = last === total ? buf.length : lineStart(buf, last + 1);
  return finish(requested, decodeText(buf, startByte, endByte), total, buf.length, first, last, false);
}

/** Byte offset where 1-based `line` starts (the buffer has at least line - 1 newlines). */
function lineStart(buf: Buffer, line: number): number {
  let pos = 0;
  for (let n = 1; n < line; n++) pos = buf.indexOf(10, pos) + 1;
  return pos;
}

/**
 * A slice of a file over 1 MB: reads it in 1 MB chunks, keeps the requested lines (at most 1 MB
 * of them, cut at a line boundary) and counts every line to the end.
 */
async function readSliceStreaming(handle: FileHandle, requested: string, args: ReadArgs, ctx: ToolContext): Promise<ReadResult> {
  const first = args.offset ?? 1;
  const wantedLast = args.limit === undefined ? Infinity : first + args.limit - 1;
  const buf = Buffer.allocUnsafe(CHUNK);
  const kept: Buffer[] = [];
  let keptBytes = 0;
  let keptCompleteBytes = 0; // bytes of the kept lines that are complete
  let lastKeptLine = first - 1;
  let cut = false;
  let line = 1;
  let position = 0;
  let lastByte = 10;

  for (;;) {
    checkSignal(ctx.signal, `Reading ${shown(requested)}`);
    const { bytesRead } = await handle.read(buf, 0, CHUNK, position);
    if (bytesRead === 0) break;
    if (position === 0 && isBinary(buf, bytesRead)) throw binaryError(requested);
    position += bytesRead;
    lastByte = buf[bytesRead - 1]!;
    let i = 0;
    while (i < bytesRead) {
      const nl = buf.indexOf(10, i);
      const complete = nl !== -1 && nl < bytesRead;
      const segEnd = complete ? nl + 1 : bytesRead;
      if (!cut && line >= first && line <= wantedLast) {
        if (keptBytes + (segEnd - i) > READ_MAX_BYTES) {
          cut = true;
        } else {
          kept.push(Buffer.from(buf.subarray(i, segEnd)));
          keptBytes += segEnd - i;
          if (complete) {
            keptCompleteBytes = keptBytes;
            lastKeptLine = line;
          }
        }
      }
      if (complete) line++;
      i = segEnd;
    }
  }

  const total = position === 0 ? 0 : lastByte === 10 ? line - 1 : line;
  if (first > Math.max(total, 1)) throw offsetError(requested, first, total);
  // A last line without a newline ends at EOF: it is complete too.
  if (!cut && keptBytes > keptCompleteBytes) {
    keptCompleteBytes = keptBytes;
    lastKeptLine = total;
  }
  if (cut && lastKeptLine < first) {
    throw fail('VALIDATION', `Line ${first} of ${shown(requested)} is longer than 1 MB, so it cannot be returned.`, {
      path: requested,
      line: first,
      limit: READ_MAX_BYTES,
    });
  }
  const content = decodeText(Buffer.concat(kept, keptBytes), 0, keptCompleteBytes);
  const end = Math.min(lastKeptLine, total);
  return finish(requested, content, total, position, total === 0 ? 0 : first, end, cut);
}
