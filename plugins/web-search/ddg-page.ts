/**
 * Reading DuckDuckGo's HTML result page (html.duckduckgo.com/html/) with a real HTML parser:
 * which kind of page it is, its organic results, their real target URLs, and clean text.
 */
import { createRequire } from 'node:module';
import type { HTMLElement } from 'node-html-parser';

type HtmlParser = typeof import('node-html-parser');
let htmlParser: HtmlParser | undefined;
/** node-html-parser, loaded on the first page read rather than when the pack loads (it is most of the pack's start-up cost). */
const parser = (): HtmlParser => (htmlParser ??= createRequire(import.meta.url)('node-html-parser') as HtmlParser);

/** One organic result as read from the page, before caps are applied. */
export interface PageResult {
  title: string;
  url: string;
  snippet: string;
}

export interface Skipped {
  /** `.result--ad` blocks. */
  ads: number;
  /** Results whose link is missing, not http(s) after decoding, or points back into DuckDuckGo. */
  unusable: number;
  /** Results whose URL an earlier result already had. */
  duplicates: number;
}

export type PageReading =
  /** A result page: the organic results in page order (possibly none left after skipping). */
  | { kind: 'results'; results: PageResult[]; skipped: Skipped }
  /** DuckDuckGo's own "No results." page. */
  | { kind: 'no-results' }
  /** The bot check ("anomaly" CAPTCHA) page DuckDuckGo shows instead of results. */
  | { kind: 'anomaly' }
  /** Result blocks are there, but none in the markup this reader knows: DuckDuckGo changed its page. */
  | { kind: 'layout-changed'; blocks: number }
  /** Not a DuckDuckGo result page at all. */
  | { kind: 'unrecognised'; title: string };

/** Where DuckDuckGo's relative links point (the redirect `/l/?uddg=` in particular). */
const DDG_BASE = 'https://duckduckgo.com/';
const URL_MAX = 2048;
/** DuckDuckGo's own search, redirect and ad paths: never a result (its other pages, e.g. /privacy, can be). */
const DDG_OWN_PATHS = new Set(['/', '/html', '/html/', '/lite', '/lite/', '/l/', '/y.js']);

/** Sentences only DuckDuckGo's bot check says (matched on the page's text, lower-cased). */
const ANOMALY_TEXT = ['bots use duckduckgo too', 'confirm this search was made by a human'];

/**
 * Sorts a page into one of the kinds above and reads its organic results. Ads (`.result--ad`)
 * are skipped, redirect links are decoded, and results are deduplicated by URL.
 */
export function readResultsPage(html: string): PageReading {
  const root = parser().parse(html, { comment: false });

  // The bot check is a modal with a challenge form posting to anomaly.js; result pages have none of it.
  if (root.querySelector('#challenge-form, form[action*="anomaly.js"], [class*="anomaly-modal"]')) return { kind: 'anomaly' };

  const ads = root.querySelectorAll('.result.result--ad').length;
  const blocks = root.querySelectorAll('.result').filter((b) => !['result--ad', 'result--no-result', 'result--more'].some((c) => b.classList.contains(c)));
  const results: PageResult[] = [];
  const skipped: Skipped = { ads, unusable: 0, duplicates: 0 };
  const seen = new Set<string>();
  let readable = 0;
  for (const block of blocks) {
    const link = block.querySelector('a.result__a');
    if (!link) continue;
    readable++;
    const url = resultUrl(link.getAttribute('href'));
    if (url === null) {
      skipped.unusable++;
      continue;
    }
    const key = dedupeKey(url);
    if (seen.has(key)) {
      skipped.duplicates++;
      continue;
    }
    seen.add(key);
    results.push({ title: cleanText(link.text), url, snippet: cleanText(snippetOf(block)) });
  }
  if (results.length > 0) return { kind: 'results', results, skipped };

  if (root.querySelector('.no-results, .result--no-result')) return { kind: 'no-results' };
  if (blocks.length > 0 && readable === 0) return { kind: 'layout-changed', blocks: blocks.length };
  if (readable > 0 || ads > 0) return { kind: 'results', results, skipped };

  const text = cleanText(root.querySelector('body')?.text ?? root.text).toLowerCase();
  if (ANOMALY_TEXT.some((t) => text.includes(t))) return { kind: 'anomaly' };
  // A result page whose list came back empty, without DuckDuckGo's own "No results." block.
  if (root.querySelector('#links') && /\bno results\b/.test(text)) return { kind: 'no-results' };
  return { kind: 'unrecognised', title: cleanText(root.querySelector('title')?.text ?? '') };
}

function snippetOf(block: HTMLElement): string {
  const el = block.querySelector('.result__snippet');
  return el ? el.text : '';
}

/**
 * The real target of a result link: DuckDuckGo's redirect (`//duckduckgo.com/l/?uddg=<encoded>`,
 * absolute or relative) is decoded; direct links are kept. Null when there is no usable http(s)
 * target: no href, a non-web scheme, an ad click-through (`/y.js`), or another DuckDuckGo page.
 */
export function resultUrl(href: string | undefined | null): string | null {
  const raw = stripControls(href ?? '').trim();
  if (raw === '') return null;
  let link: URL;
  try {
    link = new URL(raw, DDG_BASE);
  } catch {
    return null;
  }
  const relative = !/^[a-z][a-z0-9+.-]*:/i.test(raw) && !raw.startsWith('//');
  let target: string;
  if (isDdgHost(link.hostname) && link.pathname === '/l/') {
    const uddg = link.searchParams.get('uddg');
    if (!uddg) return null;
    target = stripControls(uddg).trim();
  } else if (relative || (isDdgHost(link.hostname) && DDG_OWN_PATHS.has(link.pathname))) {
    // A relative link is a DuckDuckGo page, not a web result; /y.js is an ad's click-through.
    return null;
  } else {
    target = link.href;
  }
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  if (url.username || url.password) return null;
  const out = url.href;
  return out.length > URL_MAX ? null : out;
}

function isDdgHost(host: string): boolean {
  return host === 'duckduckgo.com' || host.endsWith('.duckduckgo.com');
}

/** Two results are the same page when their URLs differ only in the fragment. */
function dedupeKey(url: string): string {
  const u = new URL(url);
  u.hash = '';
  return u.href;
}

// eslint-disable-next-line no-control-regex -- removing control characters from page text is the point
const CONTROLS = /[\u0000-\u001F\u007F-\u009F\u200B\u202A-\u202E\u2060\u2066-\u2069\uFEFF]/g;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

function stripControls(s: string): string {
  return s.replace(CONTROLS, '');
}

/**
 * Text as a model should see it: (entities are already decoded by the parser) whitespace runs
 * collapsed to one space, control, bidi-override and zero-width characters removed, broken
 * surrogates dropped, NFC.
 */
export function cleanText(s: string): string {
  return s
    .replace(/[\s\u2028\u2029]+/g, ' ')
    .replace(CONTROLS, '')
    .replace(LONE_SURROGATE, '')
    .normalize('NFC')
    .replace(/ {2,}/g, ' ')
    .trim();
}

/** Made on the first cut, not when the pack loads (ICU's break data takes milliseconds to set up). */
let graphemes: Intl.Segmenter | undefined;

/**
 * At most `max` UTF-16 units, ending in "…" when cut. Cuts between graphemes (never inside an
 * emoji or a combined letter), at a word boundary when one is close.
 */
export function capText(s: string, max: number): string {
  if (s.length <= max) return s;
  const room = max - 1;
  let cut = 0;
  for (const { segment, index } of (graphemes ??= new Intl.Segmenter(undefined, { granularity: 'grapheme' })).segment(s)) {
    if (index + segment.length > room) break;
    cut = index + segment.length;
  }
  let head = s.slice(0, cut);
  const atWordEnd = /\s/.test(s.charAt(cut));
  const space = head.lastIndexOf(' ');
  if (!atWordEnd && space >= room * 0.7) head = head.slice(0, space);
  return `${head.trimEnd()}…`;
}
