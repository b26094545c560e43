/**
 * Value shapes of secrets: where in a text a credential stands, whatever it is called.
 *
 * Three sources, merged into one list of ranges:
 * - the rules of `@secretlint/secretlint-rule-preset-recommend` (a maintained set: AWS, GCP, Slack,
 *   Stripe, npm, GitHub, GitLab, OpenAI, Anthropic, Groq, Hugging Face, SendGrid, Shopify, Vault,
 *   Docker, Cloudflare, private keys, basic-auth URLs, database connection strings, ...), run here
 *   directly, rule by rule, with a minimal rule context: no files, no config, and the preset's
 *   `secretlint-disable` comment filter is left out so a text cannot switch masking off. Reports are
 *   kept as ranges only (secretlint's messages quote the secret). A reported URL is narrowed to its
 *   password when it has one, so host and database stay readable in audit lines;
 * - a few generic shapes the preset leaves to configuration: bearer/basic tokens, credentials in
 *   any URL, `NAME=value` / `"name": "value"` with a secret name, JWTs, PEM blocks, `sk-` keys, and
 *   the Mailgun, Discord-webhook and Sentry-DSN shapes named in the security review;
 * - credentials inside command lines (command-credentials.ts).
 *
 * The preset is imported once when this module loads (about 6-12 ms, measured beside the kernel's
 * own ~150 ms import); every scan after that is synchronous.
 */
import { rules as presetRules } from '@secretlint/secretlint-rule-preset-recommend';
import { findCommandCredentials } from './command-credentials.js';
import { isSensitiveName } from './secret-names.js';

export interface SecretRange {
  start: number;
  end: number;
  /** A stable id of the rule that found it (`@secretlint/secretlint-rule-stripe`, `url-password`, ...). Never the value. */
  rule: string;
}

interface HandRule {
  id: string;
  re: RegExp;
  /** Index of the capture group that is the secret; 0 = the whole match. */
  group: number;
  /** Only when the name in this group is a secret name. */
  nameGroup?: number;
}

const HAND_RULES: HandRule[] = [
  {
    id: 'private-key',
    re: /-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]{0,16384}?-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|[\s\S]*$)/dg,
    group: 0,
  },
  { id: 'authorization-token', re: /\b(?:Bearer|Basic|Token|Digest)\s+([A-Za-z0-9._~+/=-]{8,})/dgi, group: 1 },
  { id: 'sk-key', re: /\b(sk-[A-Za-z0-9_-]{16,})/dg, group: 1 },
  { id: 'github-token', re: /\b((?:gh[pousr]_|github_pat_)[A-Za-z0-9_]{20,})/dg, group: 1 },
  { id: 'slack-token', re: /\b(xox[abposr]-[A-Za-z0-9-]{10,})/dg, group: 1 },
  { id: 'aws-access-key-id', re: /\b((?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|A3T[A-Z0-9])[0-9A-Z]{16})\b/dg, group: 1 },
  // An AWS secret access key has no shape of its own (40 characters of base64's alphabet): it is
  // recognised beside its access key id, as command output prints them without names (`aws iam
  // create-access-key --output text`, the console's CSV), up to 300 characters either side. Both
  // cases of letters are required, so a 40-hex git hash beside an id is left alone.
  {
    id: 'aws-secret-after-id',
    re: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b[\s\S]{0,300}?(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]{0,39}[a-z])(?=[A-Za-z0-9/+]{0,39}[A-Z])([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])/dg,
    group: 1,
  },
  {
    id: 'aws-secret-before-id',
    re: /(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]{0,39}[a-z])(?=[A-Za-z0-9/+]{0,39}[A-Z])([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])[\s\S]{0,300}?\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/dg,
    group: 1,
  },
  { id: 'google-api-key', re: /\b(AIza[0-9A-Za-z_-]{35})/dg, group: 1 },
  // Bare provider keys that command output prints without a name in front.
  { id: 'google-oauth-secret', re: /\b(GOCSPX-[A-Za-z0-9_-]{28})/dg, group: 1 },
  { id: 'google-refresh-token', re: /(?<![A-Za-z0-9_-])(1\/\/0[A-Za-z0-9_-]{40,})/dg, group: 1 },
  { id: 'digitalocean-token', re: /\b(do[opr]_v1_[a-f0-9]{64})\b/dg, group: 1 },
  { id: 'twilio-key', re: /\b(SK[0-9a-f]{32})\b/dg, group: 1 },
  { id: 'pypi-token', re: /\b(pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,})/dg, group: 1 },
  { id: 'databricks-token', re: /\b(dapi[a-f0-9]{32}(?:-\d)?)\b/dg, group: 1 },
  { id: 'jwt', re: /\b(eyJ[A-Za-z0-9_-]{8,1024}\.[A-Za-z0-9_-]{8,16384}\.[A-Za-z0-9_-]{8,2048})/dg, group: 1 },
  { id: 'mailgun-key', re: /\b(key-[0-9a-zA-Z]{32})\b/dg, group: 1 },
  { id: 'discord-webhook', re: /\bhttps?:\/\/(?:ptb\.|canary\.)?discord(?:app)?\.com\/api\/webhooks\/\d+\/([A-Za-z0-9_-]{20,})/dgi, group: 1 },
  { id: 'webhook-url', re: /\bhttps:\/\/[A-Za-z0-9.-]{0,200}(?:webhook\.office\.com|hooks\.zapier\.com|hooks\.slack\.com)\/[^\s"'<>]{8,}/dgi, group: 0 },
  // Sentry DSN (and similar): a 32-hex public key as the user part of a URL.
  { id: 'dsn-key', re: /\b[a-z][a-z0-9+.-]{0,30}:\/\/([0-9a-f]{32})(?::[0-9a-f]{32})?@/dgi, group: 1 },
  // Any scheme, any user (also none: `redis://:pw@host`): the password part.
  { id: 'url-password', re: /\b[a-z][a-z0-9+.-]{0,30}:\/\/[^\s:@/?#"'<>]{0,256}:([^\s@/?#"'<>]{1,256})@/dgi, group: 1 },
  {
    id: 'secret-assignment',
    // The name must hold a fragment of a secret word (all of secret-names.ts's words do), and the
    // value is bounded: a long run of `a:a:a:` costs a bounded scan per name, not the rest of the text.
    re: /(?<![A-Za-z0-9_.-])([A-Za-z0-9_.-]{0,40}(?:key|token|secret|pass|pwd|auth|cookie|credential|session|bearer|hook|dsn)[A-Za-z0-9_.-]{0,40})["']?\s{0,20}(?:=|:|=>)\s{0,20}["']?([^\s"'&;,<>]{3,1024})/dgi,
    group: 2,
    nameGroup: 1,
  },
];

// ----------------------------------------------------------------------------------------------
// secretlint's recommended preset, driven directly

interface RuleReport {
  range: readonly [number, number] | [number, number];
}
interface RuleContext {
  report(descriptor: RuleReport): void;
  createTranslator(messages: unknown): (id: string, props?: unknown) => { message: string };
  ignore(descriptor: unknown): void;
  registerRule(rule: unknown): void;
}
interface RuleSource {
  content: string;
  filePath: string;
  ext: string;
  contentType: 'text' | 'binary';
}
interface RuleCreator {
  meta: { id: string };
  create(context: RuleContext, options: Record<string, unknown>): { file?: (source: RuleSource) => unknown };
}

/** Rules left out: the comment filter would let a text switch masking off. */
const SKIPPED_RULES = new Set(['@secretlint/secretlint-rule-filter-comments']);
/** Options for some rules: AWS access key ids are masked too (off by default in secretlint). */
const RULE_OPTIONS: Record<string, Record<string, unknown>> = { '@secretlint/secretlint-rule-aws': { enableIDScanRule: true } };

let sink: SecretRange[] | null = null;
let sinkRule = '';
const noMessage = { message: '' };

const presetScanners: Array<{ id: string; file: (source: RuleSource) => unknown }> = [];
for (const creator of presetRules as unknown as RuleCreator[]) {
  const id = creator.meta.id;
  if (SKIPPED_RULES.has(id)) continue;
  const context: RuleContext = {
    report: ({ range }) => {
      if (sink) sink.push({ start: range[0], end: range[1], rule: sinkRule });
    },
    // secretlint's messages quote the secret: none are built.
    createTranslator: () => () => noMessage,
    ignore: () => {},
    registerRule: () => {},
  };
  try {
    const handlers = creator.create(context, RULE_OPTIONS[id] ?? {});
    if (typeof handlers.file === 'function') presetScanners.push({ id, file: handlers.file.bind(handlers) });
  } catch {
    // A rule that cannot start is skipped; the others still run.
  }
}

/** Narrows a reported URL to its password, when it has one. */
const URL_WITH_PASSWORD = /^[a-z][a-z0-9+.:-]*:\/\/[^\s:@/]*:([^\s@/]+)@/i;

function runPreset(text: string, into: SecretRange[]): void {
  const source: RuleSource = { content: text, filePath: '', ext: '', contentType: 'text' };
  const found: SecretRange[] = [];
  sink = found;
  try {
    for (const scanner of presetScanners) {
      sinkRule = scanner.id;
      try {
        const r = scanner.file(source);
        // An asynchronous rule (file formats such as .p12) reports later, into nothing.
        if (r && typeof (r as Promise<unknown>).catch === 'function') (r as Promise<unknown>).catch(() => {});
      } catch {
        // one rule's failure does not stop the others
      }
    }
  } finally {
    sink = null;
  }
  for (const r of found) {
    const m = URL_WITH_PASSWORD.exec(text.slice(r.start, r.end));
    if (m) {
      const password = m[1] ?? '';
      const at = r.start + m[0].length - 1 - password.length;
      into.push({ start: at, end: at + password.length, rule: r.rule });
    } else into.push(r);
  }
}

// ----------------------------------------------------------------------------------------------

/** Longest text the command-line parser reads (a command is rarely longer; file contents are). */
const COMMAND_SCAN_MAX = 64 * 1024;

/**
 * The preset runs only on text that could hold one of its shapes (it costs ~15 us per text even
 * when nothing is found). Checked rule by rule against the 27 rules of preset 13.0.7: every token
 * rule needs 16+ characters of [A-Za-z0-9_-] in a row (real Slack, Stripe, GitHub, npm, SendGrid,
 * Shopify, GitLab, Grafana, OpenAI, Anthropic, Groq, Hugging Face, Linear, Notion, 1Password,
 * Vault, Vercel, Databricks, Docker, Figma, Cloudflare, Tailscale and AWS key ids all have one);
 * URL rules (basic auth, database strings, Slack webhooks, x-oauth-basic) need `://`; the PEM rule
 * `PRIVATE KEY`; AWS secret keys and account ids need their `secret` / `account` names. A preset
 * upgrade changes PRESET_RULE_IDS, which a test pins, so this list is looked at again.
 */
const PRESET_HINT = /[A-Za-z0-9_-]{16}|:\/\/|PRIVATE KEY|secret|account/i;
/**
 * A credential on a command line follows an option (`-p`, `--password`), stands in an assignment
 * (`NAME=`), or is a header whose name is a secret name (`Authorization:`, `X-Api-Key:`).
 */
const COMMAND_HINT = /(?:^|[\s'"(;&|`])-|=|(?:key|token|secret|pass|pwd|auth|cookie|credential|session|bearer|hook|dsn)[A-Za-z0-9_-]*["']?\s*:/i;
/**
 * Every hand rule needs one of these (the assignment rule a secret name, whose words all contain
 * one of the name fragments): text with none skips the hand rules.
 */
const HAND_HINT =
  /PRIVATE KEY|bearer|basic|token|digest|sk-|gh[pousr]_|github_pat_|xox|AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|A3T|AIza|GOCSPX-|1\/\/0|do[opr]_v1_|SK[0-9a-f]{32}|pypi-|dapi|eyJ|key|:\/\/|secret|pass|pwd|auth|cookie|credential|session|hook|dsn/i;

/** Values too short to be a credential by shape alone. */
const MIN_SHAPE = 3;

/**
 * Every secret-shaped range of a text, sorted and merged (overlapping ranges become one, keeping
 * the first rule's id). Never includes the `[masked]` marker itself.
 */
export function findSecretRanges(text: string): SecretRange[] {
  if (text.length < 8) return [];
  const all: SecretRange[] = [];
  if (HAND_HINT.test(text))
    for (const rule of HAND_RULES) {
      const re = rule.re;
      re.lastIndex = 0;
      for (let m = re.exec(text); m; m = re.exec(text)) {
        if (m[0].length === 0) {
          re.lastIndex++;
          continue;
        }
        const value = m[rule.group];
        if (!value || value.length < MIN_SHAPE || value === '[masked]') continue;
        const name = rule.nameGroup === undefined ? undefined : (m[rule.nameGroup] ?? '');
        if (name !== undefined && !isSensitiveName(name)) {
          // Not a secret name: go on right after the name, so `a=b token=c` still finds `c`.
          re.lastIndex = m.index + name.length;
          continue;
        }
        const start = m.indices![rule.group]![0];
        all.push({ start, end: start + value.length, rule: rule.id });
      }
    }
  if (PRESET_HINT.test(text)) runPreset(text, all);
  if (text.length <= COMMAND_SCAN_MAX && COMMAND_HINT.test(text))
    for (const f of findCommandCredentials(text)) all.push({ start: f.start, end: f.end, rule: f.rule });
  return merge(all, text);
}

function merge(ranges: SecretRange[], text: string): SecretRange[] {
  if (ranges.length === 0) return ranges;
  ranges.sort((a, b) => a.start - b.start || b.end - a.end);
  const out: SecretRange[] = [];
  for (const r of ranges) {
    if (r.end <= r.start) continue;
    if (text.slice(r.start, r.end) === '[masked]') continue;
    const last = out[out.length - 1];
    if (last && r.start <= last.end) {
      if (r.end > last.end) last.end = r.end;
    } else out.push({ ...r });
  }
  return out;
}
