/**
 * "did you mean write_file?" for a name that is refused (a tool, a setting): the closest of the
 * names accepted there, when one is close enough to be the one meant. One wording for every face.
 */

/**
 * Edits between `a` and `b`: insertions, deletions, substitutions, and two neighbours swapped
 * (`wirte` to `write` is one), the optimal string alignment distance.
 */
export function editDistance(a: string, b: string): number {
  // Three rows: the one before last (for a swap), the last, and the one being filled.
  let before: number[] = [];
  let last = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(last[j]! + 1, row[j - 1]! + 1, last[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, before[j - 2]! + 1);
      row.push(d);
    }
    before = last;
    last = row;
  }
  return last[b.length]!;
}

/**
 * The candidate closest to `word` (letter case ignored), or undefined when none is within a third of
 * the longer name's length (at least one edit), nor within `maxDistance` when given: `tmeout` finds
 * `timeoutMs`, `zzzzzz` finds nothing. The first of equally close candidates wins.
 */
export function closestName(word: string, candidates: Iterable<string>, maxDistance = Infinity): string | undefined {
  const w = word.toLowerCase();
  let best: { name: string; distance: number } | undefined;
  for (const name of candidates) {
    if (name === word) continue;
    const distance = editDistance(w, name.toLowerCase());
    const limit = Math.min(maxDistance, Math.max(1, Math.floor(Math.max(w.length, name.length) / 3)));
    if (distance <= limit && (!best || distance < best.distance)) best = { name, distance };
  }
  return best?.name;
}

/** "did you mean NAME?" for the closest candidate, or undefined when none is close. */
export function didYouMean(word: string, candidates: Iterable<string>, maxDistance?: number): string | undefined {
  const name = closestName(word, candidates, maxDistance);
  return name === undefined ? undefined : `did you mean ${name}?`;
}

/**
 * `message` with the question added when a candidate is close: after a sentence that ends with a
 * full stop as a sentence of its own ("... does not exist. Did you mean write_file?"), else after a
 * semicolon ("no tool named wirte_file; did you mean write_file?").
 */
export function withDidYouMean(message: string, word: string, candidates: Iterable<string>, maxDistance?: number): string {
  const question = didYouMean(word, candidates, maxDistance);
  if (question === undefined) return message;
  return /[.!?]$/.test(message) ? `${message} ${question.charAt(0).toUpperCase()}${question.slice(1)}` : `${message}; ${question}`;
}
