/**
 * The words of a message as the PostgreSQL store indexes them, made to match what SQLite's FTS5
 * tokenizer (`porter unicode61 remove_diacritics 2`) makes of the same text: runs of letters and
 * digits, case and accents folded (`Café` is `cafe`), and Porter's stemmer on plain a-z words of 3
 * or more letters (`running` is `run`). Tokens are made here, not by a PostgreSQL text search
 * configuration, so both stores find the same messages for the same words: the tsvector and tsquery
 * are written as literals of already-normal lexemes (which is what the `simple` configuration would
 * make of them: no stop words, no language of its own, so names and any language match).
 *
 * Also the snippet PostgreSQL has no FTS5-compatible equivalent of (ts_headline marks what its own
 * parser finds): the matched words in brackets, 16 tokens around them, `…` where text was cut.
 */
import { stemmer } from 'stemmer';
import type { QueryPart } from './search-query.js';

interface Token {
  lexeme: string;
  start: number;
  end: number;
}

const WORD = /[\p{L}\p{N}]+/gu;
/** PostgreSQL refuses lexemes over 2,046 bytes; FTS5's porter passes such tokens through unstemmed. */
const MAX_LEXEME = 500;

function fold(word: string): string {
  return word.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase();
}

function lexemeOf(word: string): string {
  const folded = fold(word);
  return folded.length >= 3 && folded.length <= 64 && /^[a-z]+$/.test(folded) ? stemmer(folded) : folded;
}

function tokens(text: string): Token[] {
  const out: Token[] = [];
  for (const m of text.normalize('NFC').matchAll(WORD)) {
    const lexeme = lexemeOf(m[0]);
    if (lexeme && lexeme.length <= MAX_LEXEME) out.push({ lexeme, start: m.index, end: m.index + m[0].length });
  }
  return out;
}

const quote = (lexeme: string) => `'${lexeme.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;

/** A tsvector literal of the text's lexemes with their positions ('' for none). */
export function tsvectorOf(text: string | null): string {
  if (!text) return '';
  return tokens(text)
    .map((t, i) => `${quote(t.lexeme)}:${Math.min(i + 1, 16383)}`)
    .join(' ');
}

/** A tsquery literal: every part ANDed, a part of several words a phrase (`<->`), `:*` on a prefix's last word. Null: nothing to match. */
export function tsqueryOf(parts: readonly QueryPart[]): string | null {
  const out: string[] = [];
  for (const p of parts) {
    const words = tokens(p.text).map((t) => quote(t.lexeme));
    if (!words.length) continue;
    if (p.prefix) words[words.length - 1] += ':*';
    out.push(words.length > 1 ? `(${words.join(' <-> ')})` : words[0]!);
  }
  return out.length ? out.join(' & ') : null;
}

const SNIPPET_TOKENS = 16;

/** The text around its matched words, FTS5's snippet(…, '[', ']', '…', 16) in shape. */
export function snippetOf(text: string | null, parts: readonly QueryPart[]): string {
  if (!text) return '';
  const exact = new Set<string>();
  const prefixes: string[] = [];
  for (const p of parts) {
    const words = tokens(p.text).map((t) => t.lexeme);
    words.forEach((w, i) => (p.prefix && i === words.length - 1 ? prefixes.push(w) : exact.add(w)));
  }
  const all = tokens(text);
  const hit = all.map((t) => exact.has(t.lexeme) || prefixes.some((p) => t.lexeme.startsWith(p)));
  // The window of 16 tokens with the most different matched words, then the most matches, earliest first.
  let from = 0;
  if (all.length > SNIPPET_TOKENS) {
    let best = -1;
    for (let i = 0; i + SNIPPET_TOKENS <= all.length; i++) {
      const window = all.slice(i, i + SNIPPET_TOKENS).filter((_, j) => hit[i + j]);
      const score = new Set(window.map((t) => t.lexeme)).size * 1000 + window.length;
      if (score > best) {
        best = score;
        from = i;
      }
    }
  }
  const to = Math.min(all.length, from + SNIPPET_TOKENS);
  const normal = text.normalize('NFC');
  let out = from > 0 ? '…' : normal.slice(0, all[0]?.start ?? normal.length);
  for (let i = from; i < to; i++) {
    const t = all[i]!;
    if (i > from) out += normal.slice(all[i - 1]!.end, t.start);
    const word = normal.slice(t.start, t.end);
    out += hit[i] ? `[${word}]` : word;
  }
  out += to < all.length ? '…' : all.length ? normal.slice(all[all.length - 1]!.end) : '';
  return out;
}
