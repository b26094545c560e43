/**
 * Secret masking for audit lines, error messages, summaries and listings. Rules, applied together:
 * by key name (word-wise, so `api_key`, `accessToken`, `PGPASSWORD`, `DB_PASS`, `SENTRY_DSN` match
 * but `keyword`, `max_tokens`, `PWD` do not: secret-names.ts), by a tool's declared
 * `sensitiveArgs`, by value shape (secretlint's recommended rules plus a few generic shapes:
 * secret-rules.ts), and credentials inside command lines (`mysql -pX`, `curl -u user:X`:
 * command-credentials.ts). Values the kernel knows to be secret (stored provider keys, sensitive
 * environment values) are scrubbed separately by KnownSecrets (known-secrets.ts).
 */
import { findSecretRanges, type SecretRange } from './secret-rules.js';
import { isSensitiveName } from './secret-names.js';

export const MASK = '[masked]';

/** True when a value stored under this key name is a secret. */
export function isSensitiveKey(name: string): boolean {
  return isSensitiveName(name);
}

export { isSensitiveName, findSecretRanges };

function maskRanges(text: string, ranges: readonly SecretRange[]): string {
  if (ranges.length === 0) return text;
  let out = '';
  let at = 0;
  for (const r of ranges) {
    out += text.slice(at, r.start) + MASK;
    at = r.end;
  }
  return out + text.slice(at);
}

/**
 * Replaces every given secret value (4 characters or more) and every secret-shaped substring of a
 * text with `[masked]`. Shapes are found on the original text, then the values are replaced,
 * longest first, so a secret that contains another is replaced whole.
 */
export function maskText(text: string, secrets: Iterable<string> = []): string {
  let out = maskRanges(text, findSecretRanges(text));
  const values = [...new Set(secrets)].filter((s) => s.length >= 4 && s !== MASK).sort((a, b) => b.length - a.length);
  for (const s of values) if (out.includes(s)) out = out.split(s).join(MASK);
  return out;
}

export interface MaskedArgs {
  masked: unknown;
  /** The literal secret values found, so the same values can be scrubbed from messages and summaries. */
  secrets: string[];
}

function collectStrings(value: unknown, into: string[], depth = 0): void {
  if (depth > 32) return;
  if (typeof value === 'string') into.push(value);
  else if (typeof value === 'number' || typeof value === 'boolean') into.push(String(value));
  else if (Array.isArray(value)) for (const v of value) collectStrings(v, into, depth + 1);
  else if (value && typeof value === 'object') for (const v of Object.values(value)) collectStrings(v, into, depth + 1);
}

/**
 * Masks an arguments object. `sensitivePaths` are a tool's `sensitiveArgs`: a top-level name
 * (`apiKey`) or a dotted path (`headers.x-session`); the whole value there is masked.
 */
export function maskArgs(args: unknown, sensitivePaths: readonly string[] = []): MaskedArgs {
  const secrets: string[] = [];
  const paths = sensitivePaths.length ? sensitivePaths.map((p) => p.split('.')) : null;

  const walk = (value: unknown, path: string[] | null, depth: number): unknown => {
    if (depth > 32) return '[too deep]';
    if (typeof value === 'string') {
      const ranges = findSecretRanges(value);
      if (ranges.length === 0) return value;
      for (const r of ranges) secrets.push(value.slice(r.start, r.end));
      return maskRanges(value, ranges);
    }
    if (Array.isArray(value)) return value.map((v, i) => walk(v, path ? [...path, String(i)] : null, depth + 1));
    if (value && typeof value === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) {
        const here = paths ? [...path!, k] : null;
        const declared = here !== null && paths!.some((p) => p.length === here.length && p.every((seg, i) => seg === here[i]));
        if (declared || isSensitiveName(k)) {
          collectStrings(v, secrets);
          out[k] = v === null || v === undefined || v === '' ? v : MASK;
        } else {
          out[k] = walk(v, here, depth + 1);
        }
      }
      return out;
    }
    return value;
  };

  const masked = walk(args, paths ? [] : null, 0);
  return { masked, secrets: [...new Set(secrets.filter((s) => s.length >= 4))] };
}
