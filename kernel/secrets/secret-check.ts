/**
 * Does a text carry a secret? For tools that send text out of the machine (web_search's query):
 * a known secret in any of its forms (KnownSecrets), or a secret-shaped value (secret-rules.ts).
 * The answer names the rule and, for known secrets, where the value came from; never the value.
 *
 * Name-based shapes (`password: x`, `--token x`, `-u user:x`) count only when the value looks like
 * a credential (8+ characters of two or more kinds: lower, upper, digit, symbol), so a query such as
 * "reset password: steps" or "curl -u user:pass syntax" is not refused; vendor shapes (Stripe,
 * GitHub, AWS, private keys, passwords in URLs...) always count.
 */
import { knownSecretsOf } from './known-secrets.js';
import { findSecretRanges } from './secret-rules.js';

export interface SecretFinding {
  /** `known-secret` or the id of the shape rule. */
  rule: string;
  /** Human words for what was found, safe to show (no value). */
  what: string;
}

const NAME_BASED = new Set(['secret-assignment', 'command-assignment', 'command-option', 'command-header']);

function looksLikeCredential(value: string): boolean {
  if (value.length < 8) return false;
  let kinds = 0;
  if (/[a-z]/.test(value)) kinds++;
  if (/[A-Z]/.test(value)) kinds++;
  if (/[0-9]/.test(value)) kinds++;
  if (/[^A-Za-z0-9\s]/.test(value)) kinds++;
  return kinds >= 2;
}

const FORM_WORDS: Record<string, string> = {
  plain: '',
  'url-encoded': ' (URL-encoded)',
  hex: ' (hex-encoded)',
  base64: ' (base64-encoded)',
  base64url: ' (URL-safe base64)',
};

function describeSource(source: string): string {
  if (source === 'provider:key') return 'a stored provider API key';
  if (source === 'provider:key-env') return 'a provider API key from the environment';
  if (source === 'provider:header') return 'a stored provider header value';
  if (source.startsWith('env:')) return `the value of the environment variable ${source.slice(4)}`;
  return 'a secret the host registered';
}

/** The first secret found in a text, or null. `ctx` adds the kernel's known secrets of that call. */
export function findSecret(text: string, ctx?: object): SecretFinding | null {
  const known = ctx ? knownSecretsOf(ctx) : null;
  const hit = known?.find(text);
  if (hit) {
    const form = FORM_WORDS[hit.form];
    return { rule: 'known-secret', what: `${describeSource(hit.source)}${form}` };
  }
  for (const r of findSecretRanges(text)) {
    if (NAME_BASED.has(r.rule) && !looksLikeCredential(text.slice(r.start, r.end))) continue;
    return { rule: r.rule, what: `a value shaped like a credential (rule ${r.rule.replace('@secretlint/secretlint-rule-', 'secretlint ')})` };
  }
  return null;
}
