import {
  DEFAULT_RETRY_POLICY,
  fetchWithRetry,
  isMemoError,
  isProviderError,
  isSensitiveName,
  maskSecrets,
  ProviderError,
  resolveApiKey,
  retryableStatus as kernelRetryable,
  retryAfterMs,
  type ProviderConfig,
  type RetryPolicy,
} from 'memo-kernel/pack';
import type { Endpoint } from './presets.js';

const MAX_MESSAGE = 1000;

/**
 * What a factory receives. The kernel passes `fetch`; the rest default to the real thing and
 * exist so tests (and hosts) can drive retries without waiting.
 */
export interface AdapterDeps {
  fetch: typeof fetch;
  /** Waits `ms`, rejecting as soon as the signal aborts. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Epoch ms (for Retry-After given as an HTTP date). */
  now?: () => number;
  /** 0 <= x < 1, for the backoff's jitter. */
  random?: () => number;
  /** Where `apiKeyEnv` is looked up. */
  env?: NodeJS.ProcessEnv;
  /** The kernel's retry policy, in part (attempts, backoff, the Retry-After cap). */
  retry?: Partial<RetryPolicy>;
}

export function cancelled(): ProviderError {
  return new ProviderError('The request was cancelled.', null, false, 'cancelled');
}

/**
 * The key for a request, or a ProviderError before anything is sent. A hosted preset at its own
 * URL with neither `apiKeyEnv` nor a stored key falls back to the preset's conventional variable
 * (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...); with an overridden base URL it never does, so a
 * configuration pointing elsewhere cannot pick up a key meant for the real service.
 */
export function resolveKey(config: ProviderConfig, ep: Endpoint, env: NodeJS.ProcessEnv): string | undefined {
  const configured = resolveApiKey(config, env);
  if (configured) return configured;
  if (!config.apiKeyEnv && !config.apiKey && ep.keyEnv && ep.presetUrl && env[ep.keyEnv]) return env[ep.keyEnv];
  if (!ep.needsKey) return undefined;
  const where = config.apiKeyEnv ? `set $${config.apiKeyEnv}` : ep.presetUrl ? `set $${ep.keyEnv}` : `set apiKeyEnv (e.g. $${ep.keyEnv})`;
  throw new ProviderError(`no API key: ${where} or store a key with configure_provider (provider "${config.name}").`, null, false, 'no_api_key');
}

/** Values scrubbed from every message and detail: the key, and sensitive-looking configured headers. */
export function secretsOf(key: string | undefined, headers: Record<string, string> | undefined): string[] {
  const out = key ? [key] : [];
  for (const [name, value] of Object.entries(headers ?? {})) if (isSensitiveName(name) && value) out.push(value);
  return out;
}

/** A provider's error, as read from its body. */
interface ErrorFields {
  message?: string;
  type?: string;
  code?: string;
  /** Gemini's RetryInfo (`"30s"`), in ms. */
  retryDelayMs?: number;
}

function str(v: unknown): string | undefined {
  if (typeof v === 'string' && v.trim()) return v.trim();
  if (typeof v === 'number') return String(v);
  return undefined;
}

/**
 * Reads the human-readable message and the type/code from any of the three error shapes:
 * OpenAI `{error:{message,type,code}}` (also Groq, OpenRouter, xAI, llama.cpp, Ollama), Anthropic
 * `{type:"error",error:{type,message}}`, Gemini `{error:{code,message,status,details}}` (sometimes
 * wrapped in an array); plus the bare `{error:"..."}`, `{message}` and `{detail}` of smaller servers.
 */
export function readErrorBody(json: unknown): ErrorFields {
  const root: unknown = Array.isArray(json) ? json[0] : json;
  if (!root || typeof root !== 'object') return {};
  const r = root as Record<string, unknown>;
  const e = r.error;
  if (typeof e === 'string') return { message: e };
  if (e && typeof e === 'object') {
    const err = e as Record<string, unknown>;
    const out: ErrorFields = {};
    const message = str(err.message);
    if (message) out.message = message;
    const type = str(err.type) ?? str(err.status);
    if (type) out.type = type;
    let code = typeof err.code === 'string' ? err.code : undefined;
    if (Array.isArray(err.details)) {
      for (const d of err.details as Array<Record<string, unknown>>) {
        if (!d || typeof d !== 'object') continue;
        if (!code && typeof d.reason === 'string') code = d.reason;
        if (typeof d['@type'] === 'string' && d['@type'].endsWith('google.rpc.RetryInfo') && typeof d.retryDelay === 'string') {
          const s = Number.parseFloat(d.retryDelay);
          if (Number.isFinite(s) && s >= 0) out.retryDelayMs = Math.round(s * 1000);
        }
      }
    }
    if (code) out.code = code;
    return out;
  }
  const message = str(r.message) ?? str(r.detail);
  return message ? { message } : {};
}

function htmlTitle(text: string): string | undefined {
  const m = /<title[^>]*>([^<]{1,200})<\/title>/i.exec(text);
  const title = m?.[1];
  return title === undefined ? undefined : title.replace(/\s+/g, ' ').trim() || undefined;
}

/** A retryable failure: the kernel's (408, 429, 5xx with 529 overloaded) plus 409, which OpenAI answers for a lock timeout. */
function retryableStatus(status: number): boolean {
  return status === 409 || kernelRetryable(status);
}

export interface SendOptions {
  /** `openai-compatible`, `anthropic`, `gemini`: names the source in details. */
  label: string;
  endpoint: Endpoint;
  url: string;
  headers: Record<string, string>;
  body: unknown;
  signal: AbortSignal;
  secrets: string[];
  deps: AdapterDeps;
  /**
   * The request asked for a stream: a `text/event-stream` reply is read as it arrives, each event's
   * data handed to `onData`, and `result()` is the reply (assembled like a non-streamed one). A
   * server that answers plain JSON anyway is read as usual. A stream that breaks off after it
   * started is not retried (its text was already shown).
   */
  sse?: { onData(data: string): void; result(): unknown };
}

/** Reads a server-sent event stream, calling `onData` with each event's data (lines joined); `[DONE]` ends it. */
async function readEventStream(body: ReadableStream<Uint8Array>, onData: (data: string) => void): Promise<void> {
  const decoder = new TextDecoder();
  let buffer = '';
  const flush = (block: string): boolean => {
    const data = block
      .split(/\r?\n/)
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).replace(/^ /, ''))
      .join('\n');
    if (!data) return false;
    if (data === '[DONE]') return true;
    onData(data);
    return false;
  };
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let at: RegExpExecArray | null;
    while ((at = /\r?\n\r?\n/.exec(buffer))) {
      const block = buffer.slice(0, at.index);
      buffer = buffer.slice(at.index + at[0].length);
      if (flush(block)) return;
    }
  }
  buffer += decoder.decode();
  if (buffer.trim()) flush(buffer);
}

interface Failure {
  error: ProviderError;
  retryAfterMs?: number;
}

/**
 * POSTs a JSON body and returns the parsed JSON reply, through the kernel's fetchWithRetry:
 * retryable failures are retried with exponential backoff and jitter (or the provider's
 * Retry-After, or Gemini's RetryInfo), at most `attempts` times in all; the signal cancels at any
 * point, the backoff included. Every error is a ProviderError whose message is the provider's own
 * sentence, scrubbed of the key; the raw body is never kept.
 */
export async function postJson(o: SendOptions): Promise<unknown> {
  const now = o.deps.now ?? Date.now;
  // Provider messages are sentences; a page-long one is cut (the person needs its start).
  const scrub = (s: string) => {
    const masked = maskSecrets(s, o.secrets);
    return masked.length > MAX_MESSAGE ? `${masked.slice(0, MAX_MESSAGE - 1)}…` : masked;
  };
  const make = (message: string, status: number | null, retryable: boolean, detail: string) =>
    new ProviderError(scrub(message), status, retryable, scrub(detail));

  if (o.signal.aborted) throw cancelled();
  const payload = JSON.stringify(o.body);
  try {
    return await fetchWithRetry<unknown>(
      o.url,
      { method: 'POST', headers: o.headers, body: payload, signal: o.signal },
      {
        ...o.deps.retry,
        fetch: o.deps.fetch,
        ...(o.deps.sleep ? { sleep: o.deps.sleep } : {}),
        ...(o.deps.random ? { random: o.deps.random } : {}),
        judge: async (outcome) => {
          const failure = 'error' in outcome ? { error: networkError(o, outcome.error, make) } : await readReply(o, outcome.response, now, make);
          if ('json' in failure) return { done: failure.json };
          if (!failure.error.retryable) throw failure.error;
          return failure.retryAfterMs === undefined ? { retry: failure.error } : { retry: failure.error, retryAfterMs: failure.retryAfterMs };
        },
        giveUp: ({ why, attempts, last, retryAfterMs: asked }) => {
          const error = last as ProviderError; // the judge's retry value is always a ProviderError
          const detail = (extra: string) => `${error.detail ?? ''}${error.detail ? '; ' : ''}${extra}`;
          if (why === 'retry-after' && asked !== undefined) {
            const seconds = Math.ceil(asked / 1000);
            const at = new Date(now() + asked).toISOString().replace(/\.\d{3}Z$/, 'Z');
            const cap = (o.deps.retry?.maxRetryAfterMs ?? DEFAULT_RETRY_POLICY.maxRetryAfterMs) / 1000;
            return make(
              `${error.message} (the provider asks to retry after ${at}, in ${seconds} s)`,
              error.status,
              true,
              detail(`retry-after ${seconds} s exceeds the ${cap} s cap`),
            );
          }
          return make(error.message, error.status, true, detail(`gave up after ${attempts} attempts`));
        },
      },
    );
  } catch (err) {
    // The kernel reports a stop as CANCELLED; a provider's caller expects its own error.
    if (o.signal.aborted || (isMemoError(err) && err.code === 'CANCELLED')) throw cancelled();
    throw err;
  }
}

/** Reads one reply: its JSON, or the failure it stands for (with the wait the provider asked for). */
async function readReply(
  o: SendOptions,
  res: Response,
  now: () => number,
  make: (message: string, status: number | null, retryable: boolean, detail: string) => ProviderError,
): Promise<Failure | { json: unknown }> {
  if (o.sse && res.ok && res.body && (res.headers.get('content-type') ?? '').includes('text/event-stream')) {
    try {
      const sse = o.sse;
      await readEventStream(res.body, (data) => sse.onData(data));
      return { json: o.sse.result() };
    } catch (err) {
      if (o.signal.aborted) throw cancelled();
      if (isProviderError(err)) throw err;
      const why = (err as Error)?.message ?? String(err);
      throw make(`The reply from ${o.endpoint.host} broke off while streaming (${why}).`, null, false, `${o.label} stream error`);
    }
  }
  let text: string;
  try {
    text = await res.text();
  } catch (err) {
    if (o.signal.aborted) throw cancelled();
    return { error: networkError(o, err, make) };
  }
  const requestId = res.headers.get('request-id') ?? res.headers.get('x-request-id') ?? undefined;
  let json: unknown;
  let isJson = false;
  try {
    json = JSON.parse(text);
    isJson = true;
  } catch {
    // handled below
  }
  if (res.ok) {
    if (!isJson) {
      return {
        error: make(
          `${o.endpoint.host} answered HTTP ${res.status} with a reply that is not JSON.`,
          res.status,
          false,
          `${o.label} non-JSON success reply (${res.headers.get('content-type') ?? 'no content-type'})`,
        ),
      };
    }
    // Some gateways (OpenRouter) report upstream failures inside a 200.
    const fields = readErrorBody(json);
    const r = json as Record<string, unknown> | null;
    if (r && typeof r === 'object' && !Array.isArray(r) && r.error !== undefined && fields.message) {
      const code = Number((r.error as Record<string, unknown>)?.code);
      const status = Number.isInteger(code) && code >= 400 ? code : 502;
      return { error: make(fields.message, status, retryableStatus(status), describe(o.label, fields, status, requestId)) };
    }
    return { json };
  }
  const fields = isJson ? readErrorBody(json) : {};
  const retryAfter = retryAfterMs(res.headers, now()) ?? fields.retryDelayMs;
  let message = fields.message;
  if (!message) {
    const what = res.statusText ? `HTTP ${res.status} ${res.statusText}` : `HTTP ${res.status}`;
    const title = isJson ? undefined : htmlTitle(text);
    message = isJson
      ? `${o.endpoint.host} answered ${what}.`
      : `${o.endpoint.host} answered ${what} with a page that is not JSON${title ? ` ("${title}")` : ''}, probably from a proxy or gateway.`;
  }
  const error = make(
    message,
    res.status,
    retryableStatus(res.status),
    describe(o.label, fields, res.status, requestId, isJson ? undefined : (res.headers.get('content-type') ?? 'no content-type')),
  );
  return retryAfter === undefined ? { error } : { error, retryAfterMs: retryAfter };
}

function describe(label: string, f: ErrorFields, status: number, requestId: string | undefined, nonJson?: string): string {
  const parts = [`${label} HTTP ${status}`];
  if (f.type) parts.push(f.type);
  if (f.code && f.code !== f.type) parts.push(f.code);
  if (nonJson) parts.push(`non-JSON body (${nonJson})`);
  if (requestId) parts.push(`request ${requestId}`);
  return parts.join(' ');
}

function networkError(
  o: SendOptions,
  err: unknown,
  make: (message: string, status: number | null, retryable: boolean, detail: string) => ProviderError,
): ProviderError {
  const e = err as { message?: string; cause?: { code?: string; message?: string } };
  const code = e?.cause?.code ?? (e?.cause?.message || e?.message || 'network error');
  const hint = code === 'ECONNREFUSED' && o.endpoint.local ? ': is the server running?' : '.';
  return make(`Could not reach ${o.endpoint.host} (${code})${hint}`, null, true, `${o.label} network error ${code}`);
}

/**
 * Headers common to all kinds. Configured extras (OpenRouter's HTTP-Referer, ...) come first with
 * lower-cased names, so the content type and the auth header the adapter sets replace them
 * rather than being sent twice.
 */
export function baseHeaders(config: ProviderConfig): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(config.headers ?? {})) if (typeof value === 'string') out[name.toLowerCase()] = value;
  out['content-type'] = 'application/json';
  out.accept = 'application/json';
  return out;
}

/** What every adapter works out before a request: the signal (refused if already aborted), key, model and base headers. */
export function startRequest(
  config: ProviderConfig,
  ep: Endpoint,
  request: { signal?: AbortSignal; model: string },
  env: NodeJS.ProcessEnv,
): { signal: AbortSignal; key: string | undefined; model: string; headers: Record<string, string>; secrets: string[] } {
  const signal = request.signal ?? new AbortController().signal;
  if (signal.aborted) throw cancelled();
  const key = resolveKey(config, ep, env);
  return { signal, key, model: modelOf(request.model, config), headers: baseHeaders(config), secrets: secretsOf(key, config.headers) };
}

/** Clamps a temperature into a provider's accepted range. */
export function clamp(t: number, lo: number, hi: number): number {
  if (!Number.isFinite(t)) return lo;
  return Math.min(hi, Math.max(lo, t));
}

/** The model of a request (or the configuration's default). */
export function modelOf(requested: string | undefined, config: ProviderConfig): string {
  const model = requested || config.model;
  if (!model) throw new ProviderError(`Provider "${config.name}" has no model: configure one or pass it with the request.`, null, false, 'no_model');
  return model;
}

/** Parses a model's tool-call arguments: never throws; `{}` plus a reason when they are not a JSON object. */
export function parseArguments(raw: unknown): { arguments: Record<string, unknown>; parseError?: string } {
  if (raw && typeof raw === 'object' && !Array.isArray(raw)) return { arguments: raw as Record<string, unknown> };
  if (raw === undefined || raw === null || (typeof raw === 'string' && raw.trim() === '')) return { arguments: {} };
  if (typeof raw !== 'string') return { arguments: {}, parseError: `the arguments are a ${Array.isArray(raw) ? 'list' : typeof raw}, not an object` };
  try {
    const v = JSON.parse(raw) as unknown;
    if (v && typeof v === 'object' && !Array.isArray(v)) return { arguments: v as Record<string, unknown> };
    return { arguments: {}, parseError: `the arguments are ${Array.isArray(v) ? 'a list' : v === null ? 'null' : `a ${typeof v}`}, not an object` };
  } catch (err) {
    return { arguments: {}, parseError: (err as Error).message };
  }
}
