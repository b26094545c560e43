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

/** A tsvector literal of the text's lexemes with their positions ('' for none), and how many tokens it has (bm25's length). */
export function wordsOf(text: string | null): { vector: string; count: number } {
  if (!text) return { vector: '', count: 0 };
  const all = tokens(text);
  return { vector: all.map((t, i) => `${quote(t.lexeme)}:${Math.min(i + 1, 16383)}`).join(' '), count: all.length };
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

interface Instance {
  part: number;
  first: number;
  last: number;
}

/** Where each part occurs in the tokens (its words in a row; the last one a prefix for `word*`), in order. */
function instancesOf(all: Token[], parts: readonly QueryPart[]): Instance[] {
  const out: Instance[] = [];
  parts.forEach((p, part) => {
    const words = tokens(p.text).map((t) => t.lexeme);
    if (!words.length) return;
    const fits = (at: number, k: number) => (p.prefix && k === words.length - 1 ? all[at]!.lexeme.startsWith(words[k]!) : all[at]!.lexeme === words[k]);
    for (let i = 0; i + words.length <= all.length; i++) if (words.every((_, k) => fits(i + k, k))) out.push({ part, first: i, last: i + words.length - 1 });
  });
  return out.sort((a, b) => a.first - b.first || a.part - b.part);
}

/** A text's number of tokens and how often each part occurs in it (for bm25, as FTS5 counts them). */
export function frequencies(text: string | null, parts: readonly QueryPart[]): { size: number; counts: number[] } {
  const all = text ? tokens(text) : [];
  const counts = parts.map(() => 0);
  for (const i of instancesOf(all, parts)) counts[i.part]!++;
  return { size: all.length, counts };
}

/** The text around its matched words, FTS5's snippet(…, '[', ']', '…', 16) in shape: a phrase's words in one bracket. */
export function snippetOf(text: string | null, parts: readonly QueryPart[]): string {
  if (!text) return '';
  const all = tokens(text);
  const instances = instancesOf(all, parts);
  const spanEnd = new Array<number>(all.length).fill(-1);
  for (const i of instances) spanEnd[i.first] = Math.max(spanEnd[i.first]!, i.last);
  // FTS5's choice of window: from each instance, the 16 tokens it starts score 1000 for each part
  // first seen in them and 1 for each repeat; the best (first of equals) is then moved so its matches
  // sit in the middle, kept inside the text.
  let from = 0;
  if (all.length > SNIPPET_TOKENS) {
    let best = -1;
    for (const start of instances) {
      const seen = new Set<number>();
      let score = 0;
      let first = -1;
      let last = -1;
      for (const inst of instances) {
        if (inst.first < start.first || inst.first >= start.first + SNIPPET_TOKENS) continue;
        score += seen.has(inst.part) ? 1 : 1000;
        seen.add(inst.part);
        if (first < 0) first = inst.first;
        last = inst.last + 1;
      }
      if (score > best) {
        best = score;
        from = Math.max(0, Math.min(all.length - SNIPPET_TOKENS, first - Math.trunc((SNIPPET_TOKENS - (last - first)) / 2)));
      }
    }
  }
  const to = Math.min(all.length, from + SNIPPET_TOKENS);
  const normal = text.normalize('NFC');
  let out = from > 0 ? '…' : normal.slice(0, all[0]?.start ?? normal.length);
  let openUntil = -1;
  for (let i = from; i < to; i++) {
    const t = all[i]!;
    if (i > from) out += normal.slice(all[i - 1]!.end, t.start);
    // Overlapping instances make one bracket, as FTS5's highlight does.
    if (openUntil < i && spanEnd[i]! >= 0) out += '[';
    if (spanEnd[i]! >= 0) openUntil = Math.max(openUntil, spanEnd[i]!);
    out += normal.slice(t.start, t.end);
    if (openUntil === i || (openUntil > i && i === to - 1)) {
      out += ']';
      openUntil = -1;
    }
  }
  out += to < all.length ? '…' : all.length ? normal.slice(all[all.length - 1]!.end) : '';
  return out;
}
