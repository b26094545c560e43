/**
 * Generated text for the benchmarks that need a corpus (vault, WhatsApp): a seeded generator, so every
 * run builds the same data, made-up words, and a Zipf-like pick so some words are common and most rare.
 */

/** mulberry32: the same sequence for the same seed. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SYLLABLES = ['ka', 'lo', 'mi', 'ne', 'ra', 'tu', 'vo', 'zi', 'pe', 'sa', 'do', 'fu', 'gri', 'bel', 'mon', 'tar', 'quin', 'ost', 'vel', 'ran'];

/** `size` distinct words of 2 to 4 syllables. */
export function vocabulary(size: number, rand: () => number): string[] {
  const words = new Set<string>();
  while (words.size < size) {
    const n = 2 + Math.floor(rand() * 3);
    let w = '';
    for (let i = 0; i < n; i++) w += SYLLABLES[Math.floor(rand() * SYLLABLES.length)];
    words.add(w);
  }
  return [...words];
}

/** A Zipf-like pick of a rank in [0, n): rank r with weight 1/(r+10). */
export function zipfPicker(n: number, rand: () => number): () => number {
  const cdf = new Float64Array(n);
  let sum = 0;
  for (let r = 0; r < n; r++) cdf[r] = sum += 1 / (r + 10);
  return () => {
    const x = rand() * sum;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}
