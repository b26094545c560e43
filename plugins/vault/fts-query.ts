/**
 * A person's search text as an FTS5 query that cannot break: every word and every "quoted phrase"
 * becomes an FTS5 string (quotes doubled), so `C++`, `foo-bar`, `NOT`, `a:b`, `(` or a stray quote
 * are searched for, never parsed as query syntax. Terms are ANDed; a word ending in `*` is a prefix.
 * Terms with nothing searchable in them (`+++`, `--`) are dropped.
 */

export interface FtsQuery {
  /** The FTS5 MATCH expression, or null when nothing searchable is left. */
  match: string | null;
  /** The terms as understood, for the result's explanation. */
  terms: string[];
}

const SEARCHABLE = /[\p{L}\p{N}]/u;

function quoted(text: string): string {
  return `"${text.replace(/"/g, '""')}"`;
}

export function toFtsQuery(input: string): FtsQuery {
  const terms: string[] = [];
  const parts: string[] = [];
  const text = input.normalize('NFC');
  let i = 0;
  while (i < text.length) {
    const ch = text[i]!;
    if (/\s/.test(ch)) {
      i++;
      continue;
    }
    if (ch === '"') {
      // A phrase runs to the next quote; an unbalanced one runs to the end.
      const end = text.indexOf('"', i + 1);
      const phrase = (end === -1 ? text.slice(i + 1) : text.slice(i + 1, end)).trim();
      i = end === -1 ? text.length : end + 1;
      if (SEARCHABLE.test(phrase)) {
        terms.push(phrase);
        parts.push(quoted(phrase));
      }
      continue;
    }
    let j = i;
    while (j < text.length && !/\s/.test(text[j]!) && text[j] !== '"') j++;
    const word = text.slice(i, j);
    i = j;
    const prefix = word.length > 1 && word.endsWith('*') && !word.endsWith('**');
    const bare = prefix ? word.slice(0, -1) : word;
    if (!SEARCHABLE.test(bare)) continue;
    terms.push(word);
    parts.push(prefix ? `${quoted(bare)}*` : quoted(bare));
  }
  return { match: parts.length ? parts.join(' ') : null, terms };
}
