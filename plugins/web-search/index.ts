import { STATUS_CODES } from 'node:http';
import type { ReadableStreamReadResult } from 'node:stream/web';
import {
  defineTools,
  fetchWithRetry,
  findSecret,
  isMemoError,
  MemoError,
  retryableStatus,
  retryAfterMs,
  type ToolContext,
  type TypedToolImplementation,
} from 'memo-kernel/pack';
import { capText, cleanText, readResultsPage, type PageResult } from './ddg-page.js';
import type { ToolArgs } from './tool-args.js';

/** The pack's settings as the manifest's `config` schema defines them (the kernel applies its defaults). */
interface Settings {
  endpoint: URL;
  timeoutMs: number;
  retries: number;
  userAgent: string;
  maxSnippetChars: number;
}

const DEFAULTS = {
  endpoint: 'https://html.duckduckgo.com/html/',
  timeoutMs: 10_000,
  retries: 1,
  userAgent: 'Memo/0.1 (+local agent tool; web_search)',
  maxSnippetChars: 300,
} as const;

const DEFAULT_MAX_RESULTS = 5;
/**
 * Longest query sent, in characters (the manifest's maxLength says the same, so a longer one is
 * refused by the schema first). DuckDuckGo publishes no limit; a search needs a few key terms, and
 * a long query is more likely to carry pasted context (or a secret) than to find anything.
 */
export const QUERY_MAX = 400;
const TITLE_MAX = 200;
/** Titles, URLs and snippets together: one search cannot flood the model's context. */
const RESULT_CHARS_MAX = 12_000;
/** More than any real result page (30-50 KB); the rest is not read. */
const BODY_MAX_BYTES = 2 * 1024 * 1024;
/** A Retry-After up to this long is waited out; a longer one ends the search with the wait in the message. */
const RETRY_AFTER_MAX_MS = 5_000;
/** Waits before the 2nd, 3rd and 4th attempt when the server does not say: 250, 500, 1000 ms. */
const BACKOFF_BASE_MS = 250;
const BACKOFF_MAX_MS = 1_000;
/** No retry starts if it could not finish within this (the tool's kernel timeout, 90 s, stays a backstop). */
const BUDGET_MS = 80_000;

function settingsOf(ctx: ToolContext): Settings {
  const c = ctx.config;
  const num = (v: unknown, fallback: number) => (typeof v === 'number' && Number.isFinite(v) ? v : fallback);
  const raw = typeof c.endpoint === 'string' ? c.endpoint : DEFAULTS.endpoint;
  let endpoint: URL;
  try {
    endpoint = new URL(raw);
  } catch {
    throw new MemoError('TOOL_FAILED', `The web-search pack's endpoint setting "${raw}" is not a URL; set it to ${DEFAULTS.endpoint}.`);
  }
  if (endpoint.protocol !== 'https:' && endpoint.protocol !== 'http:') {
    throw new MemoError(
      'TOOL_FAILED',
      `The web-search pack's endpoint setting must be an http(s) URL (it is ${endpoint.protocol}); set it to ${DEFAULTS.endpoint}.`,
    );
  }
  return {
    endpoint,
    timeoutMs: num(c.timeoutMs, DEFAULTS.timeoutMs),
    retries: Math.max(0, Math.min(3, Math.floor(num(c.retries, DEFAULTS.retries)))),
    userAgent: typeof c.userAgent === 'string' && c.userAgent.trim() !== '' ? c.userAgent : DEFAULTS.userAgent,
    maxSnippetChars: Math.max(1, num(c.maxSnippetChars, DEFAULTS.maxSnippetChars)),
  };
}

// ---------------------------------------------------------------------------------------------
// One HTTP exchange

function cancelled(): MemoError {
  return new MemoError('CANCELLED', 'The web search was cancelled.');
}

/** The body as UTF-8 text, at most `max` bytes of it. */
async function readBody(res: Response, max: number): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = (await reader.read()) as ReadableStreamReadResult<Uint8Array>;
    if (done) break;
    chunks.push(value);
    size += value.byteLength;
    if (size >= max) {
      await reader.cancel().catch(() => {});
      break;
    }
  }
  return new TextDecoder('utf-8').decode(Buffer.concat(chunks).subarray(0, max));
}

const NETWORK_REASONS: Record<string, string> = {
  ECONNREFUSED: 'the connection was refused',
  ECONNRESET: 'the connection was reset',
  EPIPE: 'the connection was closed',
  UND_ERR_SOCKET: 'the connection was closed before a complete answer',
  ENOTFOUND: 'the host name could not be resolved',
  EAI_AGAIN: 'the host name could not be resolved (DNS did not answer)',
  ETIMEDOUT: 'connecting timed out',
  UND_ERR_CONNECT_TIMEOUT: 'connecting timed out',
  EHOSTUNREACH: 'the host is unreachable',
  ENETUNREACH: 'the network is unreachable',
};

/** A short, human reason for a failed fetch (no stack, no "fetch failed"). */
function networkReason(err: unknown): string {
  const seen = new Set<unknown>();
  const queue: unknown[] = [err];
  let message = '';
  while (queue.length) {
    const e = queue.shift();
    if (!e || typeof e !== 'object' || seen.has(e)) continue;
    seen.add(e);
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') {
      if (NETWORK_REASONS[code]) return NETWORK_REASONS[code];
      if (code.startsWith('CERT_') || code.startsWith('ERR_TLS') || /SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER/.test(code))
        return `its TLS certificate was not accepted (${code})`;
    }
    const m = (e as { message?: unknown }).message;
    if (!message && typeof m === 'string' && m !== '' && m !== 'fetch failed' && m !== 'terminated') message = m;
    queue.push((e as { cause?: unknown }).cause, ...((e as { errors?: unknown[] }).errors ?? []));
  }
  return message ? capText(cleanText(message), 160) : 'the connection failed';
}

function seconds(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${Math.round(ms / 100) / 10} s`;
}

// ---------------------------------------------------------------------------------------------
// The search, with bounded retries

interface Fetched {
  html: string;
  status: number;
}

/**
 * The result page, through the kernel's fetchWithRetry: each attempt has its own timeout (the body
 * read included), 429, 5xx, time-outs and network errors are retried 1 + `retries` times in all,
 * a short Retry-After is waited out and a long one ends the search with the wait in the message.
 * The backoff has no jitter: one person's searches have nobody to fall out of step with, and the
 * progress line says the exact wait.
 */
async function fetchResultsPage(s: Settings, form: URLSearchParams, ctx: ToolContext): Promise<Fetched> {
  const where = `DuckDuckGo (${s.endpoint.host})`;
  const total = s.retries + 1;
  // Why the last attempt failed, for the progress line of the retry that follows it.
  let because = '';
  try {
    return await fetchWithRetry<Fetched>(
      s.endpoint,
      {
        method: 'POST',
        body: form,
        headers: { 'User-Agent': s.userAgent, Accept: 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.5' },
        redirect: 'follow',
        signal: ctx.signal,
      },
      {
        attempts: total,
        baseDelayMs: BACKOFF_BASE_MS,
        maxDelayMs: BACKOFF_MAX_MS,
        jitter: 0,
        maxRetryAfterMs: RETRY_AFTER_MAX_MS,
        attemptTimeoutMs: s.timeoutMs,
        budgetMs: BUDGET_MS,
        judge: async (outcome, n, signal) => {
          const tries = n === 1 ? '' : ` (tried ${n} times)`;
          let res: Response | undefined;
          let html = '';
          let failed: { timedOut: boolean; error: unknown } | undefined;
          if ('error' in outcome) failed = outcome;
          else {
            res = outcome.response;
            try {
              html = await readBody(res, BODY_MAX_BYTES);
            } catch (error) {
              // The attempt's own deadline cut the body short (the caller's stop is handled by fetchWithRetry).
              failed = { timedOut: signal.aborted && !ctx.signal.aborted, error };
            }
          }
          if (failed?.timedOut) {
            because = `no answer within ${seconds(s.timeoutMs)}`;
            return {
              retry: new MemoError(
                'TIMEOUT',
                `${where} did not answer within ${seconds(s.timeoutMs)}${tries}. Try again later, or raise the web-search pack's timeoutMs setting.`,
                { details: { attempts: n, timeoutMs: s.timeoutMs } },
              ),
            };
          }
          if (failed || !res) {
            because = networkReason(failed?.error);
            return {
              retry: new MemoError(
                'TOOL_FAILED',
                `Could not reach ${where}: ${because}${tries}. Check the network connection and the web-search pack's endpoint setting.`,
                { details: { attempts: n } },
              ),
            };
          }
          if (res.status >= 200 && res.status < 300) return { done: { html, status: res.status } };
          const status = `HTTP ${res.status}${res.statusText || STATUS_CODES[res.status] ? ` ${res.statusText || STATUS_CODES[res.status]}` : ''}`;
          // DuckDuckGo may send its bot check with an error status: say what it is.
          if (readResultsPage(html).kind === 'anomaly') throw anomaly(where);
          const retryable = res.status === 429 || retryableStatus(res.status);
          if (!retryable) {
            throw new MemoError(
              'TOOL_FAILED',
              `${where} refused the search with ${status}. Check the web-search pack's endpoint setting (normally ${DEFAULTS.endpoint}).`,
              { details: { status: res.status, attempts: n } },
            );
          }
          const askedMs = retryAfterMs(res.headers, Date.now());
          const details = { status: res.status, attempts: n, ...(askedMs !== undefined ? { retryAfterSeconds: Math.ceil(askedMs / 1000) } : {}) };
          because = `${status}${askedMs !== undefined ? ` (Retry-After ${seconds(askedMs)})` : ''}`;
          if (res.status === 429) {
            const later = askedMs !== undefined ? `It asked to wait ${seconds(askedMs)} before the next search.` : 'Wait a minute before searching again.';
            const failure = new MemoError('TOOL_FAILED', `${where} is limiting how often it can be searched: ${status}${tries}. ${later}`, { details });
            return askedMs === undefined ? { retry: failure } : { retry: failure, retryAfterMs: askedMs };
          }
          const failure = new MemoError('TOOL_FAILED', `${where} answered ${status}${tries}: the search service is having trouble. Try again later.`, {
            details,
          });
          return askedMs === undefined ? { retry: failure } : { retry: failure, retryAfterMs: askedMs };
        },
        onRetry: ({ attempt: n, delayMs }) =>
          ctx.progress({ progress: n, total, message: `${because}; retrying in ${seconds(delayMs)} (attempt ${n + 1} of ${total})` }),
        // The last attempt's own error says what happened and how often it was tried.
        giveUp: ({ last }) => last,
      },
    );
  } catch (err) {
    if (ctx.signal.aborted || (isMemoError(err) && err.code === 'CANCELLED')) throw cancelled();
    throw err;
  }
}

function anomaly(where: string): MemoError {
  return new MemoError(
    'TOOL_FAILED',
    `${where} answered with its bot check ("anomaly" CAPTCHA page) instead of results, so nothing was searched. Too many searches were sent from this address: wait a few minutes before searching again. This tool does not solve CAPTCHAs.`,
  );
}

// ---------------------------------------------------------------------------------------------
// The tool

interface SearchResult {
  title: string;
  url: string;
  snippet: string;
}

/** Caps each title and snippet, then keeps results while the total fits RESULT_CHARS_MAX. */
function shape(found: PageResult[], maxResults: number, maxSnippetChars: number): { results: SearchResult[]; truncated: boolean } {
  const results: SearchResult[] = [];
  let used = 0;
  for (const r of found.slice(0, maxResults)) {
    const item = { title: capText(r.title || r.url, TITLE_MAX), url: r.url, snippet: capText(r.snippet, maxSnippetChars) };
    const size = item.title.length + item.url.length + item.snippet.length;
    if (used + size > RESULT_CHARS_MAX) return { results, truncated: true };
    used += size;
    results.push(item);
  }
  return { results, truncated: false };
}

/**
 * A query leaves the machine: one that holds a secret (a key the kernel knows, in any encoding,
 * or a value shaped like a credential) or is too long is refused before anything is sent. The
 * message names what was found, never the value.
 */
function checkQuery(raw: string, query: string, ctx: ToolContext): void {
  if (query.length > QUERY_MAX) {
    throw new MemoError(
      'VALIDATION',
      `The query is ${query.length} characters long; web_search sends at most ${QUERY_MAX}. Send the few key terms of what to look up. Nothing was searched.`,
    );
  }
  // The raw text too: cleaning must not be what hides a secret (or joins one from parts).
  const found = findSecret(query, ctx) ?? (raw !== query ? findSecret(raw, ctx) : null);
  if (found) {
    throw new MemoError(
      'VALIDATION',
      `The query contains ${found.what}, and a web search would send it to ${settingsOf(ctx).endpoint.host}. Search without it; nothing was sent.`,
      { details: { rule: found.rule } },
    );
  }
}

const webSearch: TypedToolImplementation<ToolArgs['web_search']> = async (args, ctx) => {
  const s = settingsOf(ctx);
  const asked = args.query;
  const query = cleanText(asked);
  if (query === '') throw new MemoError('INVALID_ARGS', 'The query has no searchable text: send a few words to search for.');
  checkQuery(asked, query, ctx);
  const region = args.region ?? null;
  const maxResults = args.maxResults ?? DEFAULT_MAX_RESULTS;

  const form = new URLSearchParams({ q: query });
  if (region) form.set('kl', region);
  const page = await fetchResultsPage(s, form, ctx);
  const shown = `"${capText(query, 80)}"`;
  const where = `DuckDuckGo (${s.endpoint.host})`;

  const reading = readResultsPage(page.html);
  switch (reading.kind) {
    case 'anomaly':
      throw anomaly(where);
    case 'unrecognised':
      throw new MemoError(
        'TOOL_FAILED',
        `The page from ${where} (HTTP ${page.status}${reading.title ? `, titled "${capText(reading.title, 80)}"` : ''}) is not a DuckDuckGo result page, so no results could be read. Check the web-search pack's endpoint setting (normally ${DEFAULTS.endpoint}).`,
      );
    case 'layout-changed':
      throw new MemoError(
        'TOOL_FAILED',
        `${where} sent a result page with ${reading.blocks} result block(s) in a layout this tool cannot read (DuckDuckGo may have changed its page). No results are returned rather than wrong ones.`,
      );
    case 'no-results':
      return { query, region, results: [], count: 0, truncated: false, summary: `No results found for ${shown}.` };
    case 'results': {
      const { results, truncated } = shape(reading.results, maxResults, s.maxSnippetChars);
      const skipped = reading.skipped.ads + reading.skipped.unusable;
      const summary =
        results.length === 0
          ? `No usable results for ${shown} (${skipped} ad(s) or link(s) that are not web pages skipped).`
          : `${results.length} result${results.length === 1 ? '' : 's'} for ${shown}${truncated ? ' (cut to fit)' : ''}.`;
      return { query, region, results, count: results.length, truncated, summary };
    }
  }
};

export const tools = defineTools<ToolArgs>({ web_search: webSearch });
