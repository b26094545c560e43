/**
 * The console's static files as they are served: each with a strong ETag of its bytes, compressed
 * once on first request with Brotli or gzip as the browser accepts (Vary: Accept-Encoding), and
 * revalidated on every load (`no-cache`: the URLs are not versioned, so a browser asks again and
 * gets a 304 while nothing changed). Nothing is compressed that would not shrink.
 */
import { createHash } from 'node:crypto';
import type * as http from 'node:http';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

export interface StaticAsset {
  body: Buffer;
  type: string;
}

interface Prepared extends StaticAsset {
  etag: string;
  br?: Buffer | null;
  gzip?: Buffer | null;
}

/** The encodings a request accepts, best first: `br`, then `gzip` (q=0 refuses one). */
function accepted(header: string | undefined): Array<'br' | 'gzip'> {
  const out: Array<'br' | 'gzip'> = [];
  const given = new Map<string, number>();
  for (const part of (header ?? '').split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => /^\s*q=([0-9.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
    if (name) given.set(name, q === undefined ? 1 : Number(q));
  }
  for (const enc of ['br', 'gzip'] as const) {
    const q = given.get(enc) ?? given.get('*');
    if (q !== undefined && q > 0) out.push(enc);
  }
  return out;
}

/** Whether If-None-Match names one of the asset's ETags (any of its encodings), or is `*`. */
function notModified(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  const base = etag.slice(0, -1);
  return header.split(',').some((t) => {
    const tag = t.trim().replace(/^W\//, '');
    return tag === '*' || tag === etag || tag.startsWith(`${base}-`);
  });
}

export class StaticAssets {
  private readonly prepared = new Map<string, Prepared>();

  constructor(assets: ReadonlyMap<string, StaticAsset>) {
    for (const [path, a] of assets) {
      const etag = `"${createHash('sha256').update(a.body).digest('base64url').slice(0, 22)}"`;
      this.prepared.set(path, { ...a, etag });
    }
  }

  has(path: string): boolean {
    return this.prepared.has(path);
  }

  /** The asset's bytes in `enc`, made once; null when compressing would not make it smaller. */
  private encoded(a: Prepared, enc: 'br' | 'gzip'): Buffer | null {
    if (a[enc] !== undefined) return a[enc];
    const packed =
      enc === 'br'
        ? brotliCompressSync(a.body, { params: { [constants.BROTLI_PARAM_QUALITY]: 9, [constants.BROTLI_PARAM_SIZE_HINT]: a.body.length } })
        : gzipSync(a.body, { level: 9 });
    return (a[enc] = packed.length < a.body.length ? packed : null);
  }

  /**
   * Answers a GET or HEAD for `path` (false when there is no such asset): 304 when the browser has
   * it, else the bytes, compressed when it accepts that. `headers` are the console's own (CSP...).
   */
  serve(req: http.IncomingMessage, res: http.ServerResponse, path: string, headers: Record<string, string>, cache: string): boolean {
    const a = this.prepared.get(path);
    if (!a) return false;
    req.resume();
    let body: Buffer = a.body;
    let encoding: 'br' | 'gzip' | null = null;
    for (const enc of accepted(req.headers['accept-encoding'])) {
      const packed = this.encoded(a, enc);
      if (packed) {
        body = packed;
        encoding = enc;
        break;
      }
    }
    // Each representation has its own strong ETag; any of them revalidates the asset.
    const etag = encoding ? `${a.etag.slice(0, -1)}-${encoding}"` : a.etag;
    const common = { ...headers, ETag: etag, 'Cache-Control': cache, Vary: 'Accept-Encoding' };
    if (notModified(req.headers['if-none-match'], a.etag)) {
      res.writeHead(304, common);
      res.end();
      return true;
    }
    res.writeHead(200, {
      ...common,
      'Content-Type': a.type,
      'Content-Length': String(body.length),
      ...(encoding ? { 'Content-Encoding': encoding } : {}),
    });
    res.end(req.method === 'HEAD' ? undefined : body);
    return true;
  }
}
