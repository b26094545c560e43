/**
 * Secret masking for audit lines, error messages and summaries. Three rules, applied together:
 * by key name (word-wise, so `api_key` and `accessToken` match but `keyword` and `max_tokens`
 * do not), by a tool's declared `sensitiveArgs`, and by value shape (bearer tokens, `sk-` keys,
 * JWTs, private key blocks, credentials in URLs, `NAME=secret` assignments).
 */
export const MASK = '[masked]';

const SENSITIVE_WORDS = new Set([
  'key', 'keys', 'apikey', 'apikeys', 'token', 'accesstoken', 'refreshtoken', 'secret', 'secrets',
  'password', 'passwords', 'passwd', 'passphrase', 'pwd', 'auth', 'authorization', 'cookie', 'cookies',
  'credential', 'credentials', 'privatekey', 'clientsecret', 'sessionid', 'bearer',
]);

/** Splits `x-api-key`, `apiKey`, `API_KEY`, `accessToken` into lower-case words. */
function words(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w.toLowerCase());
}

export function isSensitiveKey(name: string): boolean {
  const lower = name.toLowerCase();
  if (SENSITIVE_WORDS.has(lower.replace(/[^a-z0-9]/g, ''))) return true;
  return words(name).some((w) => SENSITIVE_WORDS.has(w));
}

interface ShapeRule {
  re: RegExp;
  /** Index of the capture group that is the secret; 0 = the whole match. */
  group: number;
}

// Each pattern is anchored on something a human would recognise as a credential.
const SHAPES: ShapeRule[] = [
  { re: /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)/g, group: 0 },
  { re: /\b(?:Bearer|Basic|Token)\s+([A-Za-z0-9._~+/=-]{8,})/gi, group: 1 },
  { re: /\b(sk-[A-Za-z0-9_-]{16,})/g, group: 1 },
  { re: /\b((?:gh[pousr]_|github_pat_)[A-Za-z0-9_]{20,})/g, group: 1 },
  { re: /\b(xox[abposr]-[A-Za-z0-9-]{10,})/g, group: 1 },
  { re: /\b(AKIA[0-9A-Z]{16})\b/g, group: 1 },
  { re: /\b(AIza[0-9A-Za-z_-]{35})/g, group: 1 },
  { re: /\b(eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})/g, group: 1 },
  { re: /\b[a-z][a-z0-9+.-]*:\/\/[^\s:@/]+:([^\s@/]+)@/gi, group: 1 },
  {
    re: /\b[A-Za-z0-9_.-]*(?:api[_-]?key|access[_-]?key|token|secret|password|passwd|credential)[A-Za-z0-9_]*["']?\s*[=:]\s*["']?([^\s"'&;,]{3,})/gi,
    group: 1,
  },
];

/** Finds the secret substrings of a text by value shape. */
export function findSecretShapes(text: string): string[] {
  const found: string[] = [];
  for (const { re, group } of SHAPES) {
    re.lastIndex = 0;
    for (let m = re.exec(text); m; m = re.exec(text)) {
      const secret = m[group];
      if (secret && secret !== MASK) found.push(secret);
      if (m[0].length === 0) re.lastIndex++;
    }
  }
  return found;
}

/** Replaces every known secret, and every secret-shaped substring, in a text. */
export function maskText(text: string, secrets: Iterable<string> = []): string {
  let out = text;
  // Longest first, so a secret that contains another is replaced whole.
  const all = [...new Set([...secrets, ...findSecretShapes(text)])].filter((s) => s.length >= 4).sort((a, b) => b.length - a.length);
  for (const s of all) out = out.split(s).join(MASK);
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
  const paths = sensitivePaths.map((p) => p.split('.'));

  const walk = (value: unknown, path: string[], depth: number): unknown => {
    if (depth > 32) return '[too deep]';
    if (typeof value === 'string') {
      const shapes = findSecretShapes(value);
      if (shapes.length === 0) return value;
      secrets.push(...shapes);
      return maskText(value, shapes);
    }
    if (Array.isArray(value)) return value.map((v, i) => walk(v, [...path, String(i)], depth + 1));
    if (value && typeof value === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) {
        const here = [...path, k];
        const declared = paths.some((p) => p.length === here.length && p.every((seg, i) => seg === here[i]));
        if (declared || isSensitiveKey(k)) {
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

  const masked = walk(args, [], 0);
  return { masked, secrets: [...new Set(secrets.filter((s) => s.length >= 4))] };
}
