/**
 * The secret VALUES the kernel knows, scrubbed from everything a tool hands back (results, errors,
 * summaries, progress messages, previews, audit lines).
 *
 * Sources: the stored provider keys in `data/providers.json` (and the sensitive header values
 * there), the environment variables those providers name for their keys, and the environment of
 * the kernel's process: variables with a secret name (secret-names.ts) whole, and the
 * secret-shaped parts of the others (a URL's password, a Stripe key under an innocent name).
 *
 * Each value is matched as written, URL-encoded, in hex (both cases), and in base64, standard
 * and URL-safe, as it appears when the value starts at byte offset 0, 1 or 2 (mod 3) of a longer
 * base64 stream (only the characters that depend on the value alone are matched). Values shorter
 * than MIN_SECRET (8) characters, and plain words under 12 (`postgres`, `changeme`), are not
 * scrubbed: they would hit ordinary text too often.
 *
 * One matcher (a sampled-gram index, see Matcher) is built per change of the set, never per call;
 * the first one at the first use. The set is checked for changes at most once a second (environment:
 * reading process.env costs ~15 us; provider file: one stat), and at once when this process saves
 * providers (ProviderSettings' version counter).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { MASK } from './masking.js';
import { isSensitiveName } from './secret-names.js';
import { findSecretRanges } from './secret-rules.js';

export const MIN_SECRET = 8;
/** How often the environment and the provider file are looked at again. */
const RECHECK_MS = 1000;

/** What KnownSecrets reads provider keys from (ProviderSettings satisfies it). */
export interface ProviderKeySource {
  /** Bumped whenever the configurations in memory change. */
  readonly version: number;
  /** The configurations, re-reading the file if another process changed it. */
  list(): ReadonlyArray<{ apiKey?: string; apiKeyEnv?: string; headers?: Record<string, string> }>;
}

export interface KnownSecretsOptions {
  env?: NodeJS.ProcessEnv;
  providers?: ProviderKeySource;
  /** Extra values (tests, host apps). */
  extra?: () => readonly string[];
}

/** One secret's forms. `form` names which (never the value). */
interface Variant {
  text: string;
  form: 'plain' | 'url-encoded' | 'hex' | 'base64' | 'base64url';
}

function b64(buf: Buffer, url: boolean): string {
  return buf.toString(url ? 'base64url' : 'base64').replace(/=+$/, '');
}

/**
 * The base64 characters that depend only on `value`'s bytes when it starts at `offset` (0, 1, 2)
 * bytes into a group of three: leading characters mixed with earlier bytes and the trailing one
 * mixed with later bytes are cut.
 */
export function base64Forms(value: string, url = false): string[] {
  const bytes = Buffer.from(value, 'utf8');
  const forms: string[] = [];
  for (let offset = 0; offset < 3; offset++) {
    const padded = Buffer.concat([Buffer.alloc(offset), bytes]);
    const enc = b64(padded, url);
    const skip = [0, 2, 3][offset];
    const total = offset + bytes.length;
    // The last character is complete only when the value ends on a group boundary.
    const end = total % 3 === 0 ? enc.length : enc.length - 1;
    const form = enc.slice(skip, end);
    if (form.length >= MIN_SECRET) forms.push(form);
  }
  // The value encoded on its own, with its last (padded) character: what `base64 <<< key` shows.
  const whole = b64(bytes, url);
  if (whole.length >= MIN_SECRET) forms.push(whole);
  return forms;
}

function variantsOf(value: string): Variant[] {
  const out: Variant[] = [{ text: value, form: 'plain' }];
  const encoded = encodeURIComponent(value);
  if (encoded !== value) out.push({ text: encoded, form: 'url-encoded' });
  const hex = Buffer.from(value, 'utf8').toString('hex');
  out.push({ text: hex, form: 'hex' }, { text: hex.toUpperCase(), form: 'hex' });
  for (const f of base64Forms(value, false)) out.push({ text: f, form: 'base64' });
  for (const f of base64Forms(value, true)) out.push({ text: f, form: 'base64url' });
  return out;
}

/** What a check found: the form and where the value came from, never the value. */
export interface KnownSecretHit {
  form: Variant['form'];
  source: string;
}

/** Gram length of the index; every variant is at least MIN_SECRET (8) long. */
const GRAM = 4;
const BITMAP_WORDS = 1 << 15; // 2^20 bits

function gramHash(s: string, i: number): number {
  let h = s.charCodeAt(i);
  h = Math.imul(h ^ s.charCodeAt(i + 1), 0x9e3779b1);
  h = Math.imul(h ^ s.charCodeAt(i + 2), 0x85ebca77);
  h = Math.imul(h ^ s.charCodeAt(i + 3), 0xc2b2ae3d);
  return (h ^ (h >>> 15)) >>> 0;
}

/**
 * Finds any of many fixed strings in a text by sampling: every 4-character gram of every variant
 * (at every offset) is in a hash table, and the text is sampled every `step` characters, where
 * step = shortest variant - 4 + 1. Any occurrence of a variant then contains a sampled gram (the
 * first sampled position at or after its start is at most step - 1 further on, so its gram ends
 * inside the occurrence); a hit is checked with startsWith. A 1 MB text costs about n/step hash
 * probes (most stopped after two characters by a pair bitmap) instead of one regex attempt per
 * character and variant: with 10 secrets (67 variants, shortest 14), ~0.4-0.7 ms per MB against
 * ~5-9 ms for a regex alternation of the same variants, measured side by side.
 */
class Matcher {
  private readonly variants: string[] = [];
  private readonly hits: KnownSecretHit[] = [];
  private readonly bits = new Uint32Array(BITMAP_WORDS);
  /** The first two characters (low bytes) of every gram: a cheap first test that skips most samples. */
  private readonly pairs = new Uint32Array(65536 / 32);
  /** gram hash -> [variant index, offset in variant, ...] */
  private readonly table = new Map<number, number[]>();
  private readonly step: number;
  private readonly minLength: number;
  readonly empty: boolean;

  constructor(values: Map<string, string>) {
    const seen = new Set<string>();
    for (const [value, source] of values) {
      for (const v of variantsOf(value)) {
        if (v.text.length < MIN_SECRET || seen.has(v.text)) continue;
        seen.add(v.text);
        this.variants.push(v.text);
        this.hits.push({ form: v.form, source });
      }
    }
    this.empty = this.variants.length === 0;
    this.minLength = this.empty ? Infinity : Math.min(...this.variants.map((v) => v.length));
    this.step = this.empty ? 1 : this.minLength - GRAM + 1;
    this.variants.forEach((v, index) => {
      // The bitmap indices below are masked or shifted into the arrays' bounds.
      for (let o = 0; o + GRAM <= v.length; o++) {
        const h = gramHash(v, o);
        this.bits[(h >>> 5) & (BITMAP_WORDS - 1)]! |= 1 << (h & 31);
        const pair = ((v.charCodeAt(o) & 0xff) << 8) | (v.charCodeAt(o + 1) & 0xff);
        this.pairs[pair >>> 5]! |= 1 << (pair & 31);
        let list = this.table.get(h);
        if (!list) this.table.set(h, (list = []));
        list.push(index, o);
      }
    });
  }

  /** Calls `found(start, variant)` for occurrences; stops when it returns true. */
  private search(text: string, found: (start: number, variant: number) => boolean): void {
    const n = text.length;
    if (this.empty || n < this.minLength) return;
    const { bits, pairs, table, variants, step } = this;
    // The bitmap indices below are masked or shifted into the arrays' bounds.
    for (let p = 0; p + GRAM <= n; p += step) {
      const pair = ((text.charCodeAt(p) & 0xff) << 8) | (text.charCodeAt(p + 1) & 0xff);
      if ((pairs[pair >>> 5]! & (1 << (pair & 31))) === 0) continue;
      const h = gramHash(text, p);
      if ((bits[(h >>> 5) & (BITMAP_WORDS - 1)]! & (1 << (h & 31))) === 0) continue;
      const list = table.get(h);
      if (!list) continue;
      for (let j = 0; j < list.length; j += 2) {
        // list holds (variant, offset) pairs
        const variant = list[j]!;
        const start = p - list[j + 1]!;
        if (start >= 0 && text.startsWith(variants[variant]!, start) && found(start, variant)) return;
      }
    }
  }

  has(text: string): boolean {
    let hit = false;
    this.search(text, () => (hit = true));
    return hit;
  }

  first(text: string): KnownSecretHit | null {
    let index = -1;
    this.search(text, (_s, v) => {
      index = v;
      return true;
    });
    return this.hits[index] ?? null;
  }

  scrub(text: string): string {
    let ranges: Array<[number, number]> | null = null;
    this.search(text, (start, v) => {
      // v is an index search() found in variants
      (ranges ??= []).push([start, start + this.variants[v]!.length]);
      return false;
    });
    if (ranges === null) return text;
    const sorted = (ranges as Array<[number, number]>).sort((a, b) => a[0] - b[0]);
    let out = '';
    let at = 0;
    let [from, to] = sorted[0]!; // ranges is not empty here
    for (let i = 1; i < sorted.length; i++) {
      const [s2, e2] = sorted[i]!; // i < sorted.length
      if (s2 <= to) {
        if (e2 > to) to = e2; // overlapping or touching: one mask
        continue;
      }
      out += text.slice(at, from) + MASK;
      at = to;
      [from, to] = [s2, e2];
    }
    return out + text.slice(at, from) + MASK + text.slice(to);
  }
}

export class KnownSecrets {
  private matcher: Matcher = new Matcher(new Map());
  private values = new Map<string, string>();
  private checkedAt = -Infinity;
  private print = '';
  private envValues: Array<[string, string]> = [];
  private providerValues: Array<[string, string]> = [];
  private providerVersion = -1;
  /** Bumped each time the set of values changes. */
  version = 0;

  /** Nothing is read until the first use (a kernel that never runs a tool never scans the environment). */
  constructor(private readonly options: KnownSecretsOptions = {}) {}

  /** Looks at the sources again (at most once a second unless forced); rebuilds the matcher if the values changed. */
  refresh(force = false): void {
    const providers = this.options.providers;
    const now = performance.now();
    const due = force || now - this.checkedAt >= RECHECK_MS;
    if (!due && (!providers || providers.version === this.providerVersion)) return;
    const env = this.options.env ?? process.env;
    if (due) {
      this.checkedAt = now;
      this.envValues = environmentSecrets(env);
    }
    if (providers) {
      try {
        // One stat: re-reads the file if another process changed it (which bumps the version).
        this.providerValues = providerSecrets(providers.list(), env);
        this.providerVersion = providers.version;
      } catch {
        // A corrupt provider file is reported where providers are used; the last known keys stay.
      }
    }
    const all = [...this.providerValues, ...this.envValues, ...(this.options.extra?.() ?? []).map((v): [string, string] => [v, 'host'])];
    const print = fingerprint(all);
    if (print === this.print) return;
    const values = new Map<string, string>();
    for (const [value, source] of all) if (scrubbable(value) && !values.has(value)) values.set(value, source);
    this.print = print;
    this.values = values;
    this.matcher = new Matcher(values);
    this.version++;
  }

  /** How many values are known now (for reports; never the values). */
  get size(): number {
    this.refresh();
    return this.values.size;
  }

  /** True when the text holds a known secret in any of its forms. */
  contains(text: string): boolean {
    this.refresh();
    return this.matcher.has(text);
  }

  /** The form and source of the first known secret in the text, or null. */
  find(text: string): KnownSecretHit | null {
    this.refresh();
    return this.matcher.first(text);
  }

  /** The text with every known secret (in any of its forms) replaced by `[masked]`. */
  scrub(text: string): string {
    this.refresh();
    return this.matcher.scrub(text);
  }

  /**
   * Scrubs every string (and object key) of a JSON value. Objects and arrays are changed in place:
   * pass a value nobody else holds (the pipeline's own copy of a result). Returns the value.
   */
  scrubValue<T>(value: T): T {
    this.refresh();
    const m = this.matcher;
    if (m.empty) return value;
    return walk(value, m, 0) as T;
  }
}

function walk(value: unknown, m: Matcher, depth: number): unknown {
  if (typeof value === 'string') return m.scrub(value);
  if (value === null || typeof value !== 'object' || depth > 64) return value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      if (v !== null && (typeof v === 'string' || typeof v === 'object')) value[i] = walk(v, m, depth + 1);
    }
    return value;
  }
  const obj = value as Record<string, unknown>;
  let renamed: Array<[string, string]> | null = null;
  for (const k of Object.keys(obj)) {
    const v = obj[k];
    if (v !== null && (typeof v === 'string' || typeof v === 'object')) obj[k] = walk(v, m, depth + 1);
    if (m.has(k)) (renamed ??= []).push([k, m.scrub(k)]);
  }
  if (renamed) {
    for (const [from, to] of renamed) {
      const v = obj[from];
      delete obj[from];
      obj[to] = v;
    }
  }
  return obj;
}

/**
 * Values worth scrubbing: 8 characters or more, and not a short plain word (`postgres`, `password`,
 * `changeme`: letters of one case only, under 12 characters), which would mask ordinary text in
 * every result. read_env still masks such values by their variable's name.
 */
function scrubbable(value: string): boolean {
  if (value.length < MIN_SECRET) return false;
  return !(value.length < 12 && (/^[a-z]+$/.test(value) || /^[A-Z]+$/.test(value)));
}

function fingerprint(list: Array<[string, string]>): string {
  return list.map(([v, s]) => `${s}\u0001${v}`).join('\u0000');
}

const shapeCache = new Map<string, string[]>();

function isExistingPath(value: string): boolean {
  if (!/^(?:\/|~\/)[^\s]*$/.test(value)) return false;
  const file = value.startsWith('~/') ? path.join(os.homedir(), value.slice(2)) : value;
  return fs.existsSync(file);
}

/** Secret values of an environment: whole values of secret names, secret-shaped parts of the others. */
export function environmentSecrets(env: NodeJS.ProcessEnv): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const name in env) {
    const value = env[name];
    if (value === undefined || !scrubbable(value)) continue;
    if (isSensitiveName(name)) {
      // A secret name holding the path of an existing file (GOOGLE_APPLICATION_CREDENTIALS=/home/me/sa.json)
      // names where the secret is, and is no secret itself: every mention of the path would be masked.
      if (!isExistingPath(value)) out.push([value, `env:${name}`]);
      continue;
    }
    // A URL's password, a vendor key under an innocent name (shapes cached per value: env rarely changes).
    let parts = shapeCache.get(value);
    if (parts === undefined) {
      parts = findSecretRanges(value)
        .map((r) => value.slice(r.start, r.end))
        .filter((p) => p.length >= MIN_SECRET);
      if (shapeCache.size > 1000) shapeCache.clear();
      shapeCache.set(value, parts);
    }
    for (const part of parts) out.push([part, `env:${name}`]);
  }
  return out;
}

function providerSecrets(list: ReturnType<ProviderKeySource['list']>, env: NodeJS.ProcessEnv): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const p of list) {
    if (p.apiKey) out.push([p.apiKey, 'provider:key']);
    if (p.apiKeyEnv) {
      const v = env[p.apiKeyEnv];
      if (v) out.push([v, 'provider:key-env']);
    }
    for (const [name, value] of Object.entries(p.headers ?? {})) if (value && isSensitiveName(name)) out.push([value, 'provider:header']);
  }
  return out;
}

// ----------------------------------------------------------------------------------------------
// Packs reach the kernel's known secrets through their call's context (they import only kernel/index.ts).

const byContext = new WeakMap<object, KnownSecrets>();

/** Called by the pipeline for each call's context. */
export function attachKnownSecrets(ctx: object, secrets: KnownSecrets): void {
  byContext.set(ctx, secrets);
}

/** The known secrets of the kernel running this call (null outside a call). */
export function knownSecretsOf(ctx: object): KnownSecrets | null {
  return byContext.get(ctx) ?? null;
}

const SVG_DATA_URL = /^data:image\/svg\+xml((?:;[a-z-]+=[^;,]*)*)(;base64)?,/i;

/** The text a reader of an SVG sees: XML character references and the five entities decoded. */
function xmlText(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#[0-9]+|amp|lt|gt|quot|apos);/gi, (whole, ref: string) => {
    const r = ref.toLowerCase();
    if (r.startsWith('#')) {
      const code = r.startsWith('#x') ? parseInt(r.slice(2), 16) : parseInt(r.slice(1), 10);
      return code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }[r] ?? whole;
  });
}

/** What the SVG's text elements draw, one after the other (a label wrapped onto several lines read as one). */
function drawnText(svg: string): string {
  let out = '';
  for (const m of svg.matchAll(/<text\b[^>]*>([\s\S]*?)<\/text>/gi)) out += (m[1] ?? '').replace(/<[^>]*>/g, '');
  return xmlText(out);
}

/**
 * A preview image with the known secrets scrubbed, or null when it cannot be vouched for (then it is
 * left out: the preview's text says what the call does). An SVG data: URL is decoded and scrubbed
 * as text, then encoded again as it was; it is dropped if a secret still shows once its XML
 * references are decoded or its text elements are read together (a label wrapped mid-word). Any
 * other image (a PNG: text drawn as pixels cannot be read) is dropped.
 */
function scrubPreviewImage(image: string, known: Pick<KnownSecrets, 'scrub' | 'contains'>): string | null {
  const m = SVG_DATA_URL.exec(image);
  if (!m) return null;
  const data = image.slice(m[0].length);
  const base64 = m[2] !== undefined;
  let svg: string;
  try {
    svg = base64 ? Buffer.from(data, 'base64').toString('utf8') : decodeURIComponent(data);
  } catch {
    return null;
  }
  const clean = known.scrub(svg);
  if (known.contains(xmlText(clean)) || known.contains(drawnText(clean))) return null;
  if (clean === svg) return image;
  return m[0] + (base64 ? Buffer.from(clean, 'utf8').toString('base64') : encodeURIComponent(clean));
}

/** A tool's approval preview as far as scrubbing is concerned (the tool contract's Preview is one). */
export interface PreviewLike {
  text?: unknown;
  facts?: unknown;
  quoted?: unknown;
}

/**
 * A tool's preview with the known secrets scrubbed from all it shows: its text, its facts and quoted
 * text (labels too), and its image (the canvas pack's SVG of the drawing, where a label is plain text
 * inside base64). The preview is not changed; a copy is returned. An image that cannot be checked is
 * left out (see scrubPreviewImage); so is a fact or a quote whose parts are not strings (no face could
 * show it, and a secret in it could not be scrubbed).
 */
/** A preview's document (a note edit's body before and after), every string scrubbed; dropped when it is not one. */
function scrubDocument(document: unknown, known: Pick<KnownSecrets, 'scrub'>): { document?: Record<string, string> } {
  const d = typeof document === 'object' && document !== null ? (document as Record<string, unknown>) : null;
  const keys = ['type', 'id', 'title', 'path', 'before', 'after'];
  if (!d || !keys.every((k) => typeof d[k] === 'string')) return {};
  return { document: Object.fromEntries(keys.map((k) => [k, known.scrub(d[k] as string)])) };
}

export function scrubPreview<P extends PreviewLike>(preview: P, known: Pick<KnownSecrets, 'scrub' | 'contains'>): P {
  const { image, facts, quoted, document, ...rest } = preview as P & { image?: unknown; document?: unknown };
  const text = (v: unknown): v is string => typeof v === 'string';
  const records = (v: unknown): Array<Record<string, unknown>> =>
    Array.isArray(v) ? v.filter((x): x is Record<string, unknown> => typeof x === 'object' && x !== null) : [];
  const out = {
    ...rest,
    text: typeof preview.text === 'string' ? known.scrub(preview.text) : preview.text,
    ...(facts !== undefined
      ? {
          facts: records(facts)
            .filter((f) => text(f.label) && text(f.value))
            .map((f) => ({ label: known.scrub(f.label as string), value: known.scrub(f.value as string) })),
        }
      : {}),
    ...(quoted !== undefined
      ? {
          quoted: records(quoted)
            .filter((q) => text(q.label) && text(q.text) && (q.from === undefined || text(q.from)))
            .map((q) => ({
              label: known.scrub(q.label as string),
              text: known.scrub(q.text as string),
              ...(q.from !== undefined ? { from: known.scrub(q.from as string) } : {}),
            })),
        }
      : {}),
    ...(document !== undefined ? scrubDocument(document, known) : {}),
  } as P;
  if (image === undefined) return out;
  const clean = typeof image === 'string' ? scrubPreviewImage(image, known) : null;
  return clean === null ? out : { ...out, image: clean };
}
