/**
 * JSON from outside, read within bounds. Every place input arrives (the MCP endpoint's request
 * bodies, MCP stdio lines, the console API, the control socket) checks size and nesting depth before
 * JSON.parse, so no message reaches code that recurses over it: the SDK's Node adapter re-serialises
 * a parsed body with JSON.stringify (a RangeError, answered 500, from about 4,000 levels), and
 * schema validation, masking, the audit and a tool's own code walk arguments recursively too.
 */
import type * as http from 'node:http';

/**
 * The deepest nesting accepted, the JSON-RPC envelope included. The deepest tool arguments of the
 * bundled packs sit two levels inside `arguments` (vault's free-form `front_matter`), and the
 * envelope adds three (`{"params":{"arguments":{...}}}`), so 64 leaves room for a pack with nested
 * records while staying two orders of magnitude below where the recursive code on the way overflows.
 */
export const MAX_JSON_DEPTH = 64;

/** How long, and how much more, a refused oversized upload is read and discarded before its connection is closed (see answerAndClose). */
const DRAIN_MAX_MS = 5000;
const DRAIN_MAX_BYTES = 32 * 1024 * 1024;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

/** The sentence a refusal carries: `The request is nested deeper than 64 levels.` */
export function tooDeepMessage(what = 'The request'): string {
  return `${what} is nested deeper than ${MAX_JSON_DEPTH} levels.`;
}

/**
 * Whether `text` opens more than `max` arrays or objects inside one another. One pass over the
 * bytes, no recursion: brackets inside strings do not count (escapes honoured). It
 * says nothing about whether the text is JSON; JSON.parse decides that after. About half the cost
 * of JSON.parse on a 4 MiB message, a quarter of a microsecond on a small one.
 */
export function nestedDeeperThan(text: Uint8Array | string, max = MAX_JSON_DEPTH): boolean {
  // Each level takes at least one byte.
  if (text.length <= max) return false;
  // UTF-8 never puts these ASCII bytes inside a multi-byte character, so bytes are as good as characters.
  const bytes = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i]!;
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_BRACKET || c === OPEN_BRACE) {
      if (++depth > max) return true;
    } else if ((c === CLOSE_BRACKET || c === CLOSE_BRACE) && depth > 0) depth--;
  }
  return false;
}

export type BoundedParse = { value: unknown } | { error: 'too-deep' | 'not-json' };

/** JSON.parse behind the depth check. */
export function parseBoundedJson(text: Buffer | string): BoundedParse {
  if (nestedDeeperThan(text)) return { error: 'too-deep' };
  try {
    return { value: JSON.parse(typeof text === 'string' ? text : text.toString('utf8')) as unknown };
  } catch {
    return { error: 'not-json' };
  }
}

/**
 * The top-level `"id"` of a JSON-RPC request that was refused before parsing, when it is a plain
 * number or string: the answer then names the request it refuses. Else null, as JSON-RPC says for a
 * request whose id cannot be read. One pass; only the refusal path pays for it.
 */
export function jsonRpcIdOf(text: string): string | number | null {
  if (!text.trimStart().startsWith('{')) return null;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      let end = i + 1;
      while (end < text.length && text.charCodeAt(end) !== QUOTE) end += text.charCodeAt(end) === BACKSLASH ? 2 : 1;
      if (end >= text.length) return null;
      if (depth === 1 && end === i + 3 && text.slice(i + 1, end) === 'id') {
        const value = /^\s*:\s*(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|"(?:[^"\\]|\\.){0,256}")\s*[,}]/.exec(text.slice(end + 1, end + 300));
        if (value) {
          try {
            const id = JSON.parse(value[1]!) as unknown;
            if (typeof id === 'string' || typeof id === 'number') return id;
          } catch {
            // not a literal after all
          }
        }
      }
      i = end;
    } else if (c === OPEN_BRACKET || c === OPEN_BRACE) depth++;
    else if (c === CLOSE_BRACKET || c === CLOSE_BRACE) depth--;
  }
  return null;
}

/**
 * A request's body, or 'too-large' once more than `limit` bytes arrive. Past the limit nothing more
 * is kept, and the request is paused, not destroyed: destroying it resets the socket under a client
 * still uploading, which then sees EPIPE or ECONNRESET instead of the answer. Answer it with
 * answerAndClose. Rejects if the client goes away mid-body.
 */
export function readBody(req: http.IncomingMessage, limit: number): Promise<Buffer | 'too-large'> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) return void chunks.push(chunk);
      stop();
      req.pause();
      resolve('too-large');
    };
    const onEnd = () => {
      stop();
      resolve(Buffer.concat(chunks));
    };
    const onError = (err: Error) => {
      stop();
      reject(err);
    };
    const onClose = () => {
      stop();
      reject(new Error('the client closed the connection before the request body ended'));
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

/**
 * Answers a request whose body is not (all) read: the whole answer at once, with
 * `Connection: close`, then the rest of the upload is read and discarded until it ends (up to
 * DRAIN_MAX_BYTES more or DRAIN_MAX_MS), and only then is the connection closed. Node closes a
 * `Connection: close` socket as soon as the answer is written, and closing with unread bytes sends
 * a reset: a client still uploading would see EPIPE or ECONNRESET and often lose the answer.
 */
export function answerAndClose(res: http.ServerResponse, status: number, headers: Record<string, string>, body: string): void {
  const req = res.req;
  const payload = Buffer.from(body, 'utf8');
  if (res.headersSent) return void res.end();
  res.writeHead(status, { ...headers, 'Content-Length': String(payload.length), Connection: 'close' });
  res.write(payload);
  if (req.complete || req.destroyed) return void res.end();
  let discarded = 0;
  const done = () => {
    clearTimeout(timer);
    req.off('data', onData);
    req.off('end', done);
    req.off('close', done);
    req.off('error', done);
    res.end();
  };
  const onData = (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > DRAIN_MAX_BYTES) done();
  };
  const timer = setTimeout(done, DRAIN_MAX_MS);
  timer.unref();
  req.on('data', onData);
  req.once('end', done);
  req.once('close', done);
  req.once('error', done);
  req.resume();
}
