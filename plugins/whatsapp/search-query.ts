/**
 * A person's (or a model's) search words as an FTS5 expression that cannot be misread as query
 * syntax: each word and each "quoted phrase" is an FTS5 string, so `C++`, `NOT`, `a:b` or a stray
 * quote are searched for, never parsed. Terms are ANDed; `word*` is a prefix; terms with no letter or
 * digit are dropped. (The vault pack builds its queries the same way; see the report on sharing it.)
 * The same parts make the PostgreSQL store's tsquery (text-index.ts), so both read a query alike.
 */

const HAS_WORD = /[\p{L}\p{N}]/u;
const TOKEN = /"([^"]*)("|$)|(\S+)/gu;

/** One term: a word or a quoted phrase, `prefix` for a word given as `word*`. */
export interface QueryPart {
  text: string;
  prefix: boolean;
}

export function matchExpression(input: string): { match: string | null; terms: string[]; parts: QueryPart[] } {
  const terms: string[] = [];
  const parts: QueryPart[] = [];
  for (const m of input.normalize('NFC').matchAll(TOKEN)) {
    const phrase = m[1]?.trim();
    if (phrase !== undefined) {
      if (HAS_WORD.test(phrase)) {
        terms.push(phrase);
        parts.push({ text: phrase, prefix: false });
      }
      continue;
    }
    // A word runs to the next space; a quote inside it starts nothing.
    const word = m[3]!.replace(/"/g, '');
    const prefix = /^[^*]+\*$/.test(word);
    const bare = prefix ? word.slice(0, -1) : word;
    if (!HAS_WORD.test(bare)) continue;
    terms.push(word);
    parts.push({ text: bare, prefix });
  }
  const str = (t: string) => `"${t.replace(/"/g, '""')}"`;
  const match = parts.map((p) => (p.prefix ? `${str(p.text)}*` : str(p.text))).join(' AND ');
  return { match: match || null, terms, parts };
}
