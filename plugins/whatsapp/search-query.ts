/**
 * A person's (or a model's) search words as an FTS5 expression that cannot be misread as query
 * syntax: each word and each "quoted phrase" is an FTS5 string, so `C++`, `NOT`, `a:b` or a stray
 * quote are searched for, never parsed. Terms are ANDed; `word*` is a prefix; terms with no letter or
 * digit are dropped. (The vault pack builds its queries the same way; see the report on sharing it.)
 */

const HAS_WORD = /[\p{L}\p{N}]/u;
const TOKEN = /"([^"]*)("|$)|(\S+)/gu;

export function matchExpression(input: string): { match: string | null; terms: string[] } {
  const terms: string[] = [];
  const parts: string[] = [];
  const str = (t: string) => `"${t.replace(/"/g, '""')}"`;
  for (const m of input.normalize('NFC').matchAll(TOKEN)) {
    const phrase = m[1]?.trim();
    if (phrase !== undefined) {
      if (HAS_WORD.test(phrase)) {
        terms.push(phrase);
        parts.push(str(phrase));
      }
      continue;
    }
    // A word runs to the next space; a quote inside it starts nothing.
    const word = m[3]!.replace(/"/g, '');
    const prefix = /^[^*]+\*$/.test(word);
    const bare = prefix ? word.slice(0, -1) : word;
    if (!HAS_WORD.test(bare)) continue;
    terms.push(word);
    parts.push(prefix ? `${str(bare)}*` : str(bare));
  }
  return { match: parts.length ? parts.join(' AND ') : null, terms };
}
