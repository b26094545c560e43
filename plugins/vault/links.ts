/**
 * Wiki-link resolution, the way the editor follows a link (memrynote's `notes.resolveWikiTarget`):
 * `Meeting#Decisions` is the note Meeting at its heading Decisions, while a note genuinely titled
 * `Sprint #4` still resolves to itself (the whole target is tried before it is split at a `#`).
 * A name several notes share is ambiguous: the candidates are returned and nothing is guessed.
 */

/** The note a candidate key leads to. */
export interface LinkCandidate {
  seq: number;
  id: string;
  path: string;
  title: string;
}

/** Where resolution looks notes up; the index implements it with SQL, the full build with maps. */
export interface NoteLookup {
  /** Notes whose path key (lower case, `.md` dropped) equals `pathKey` or ends with `/` + `pathKey`. */
  byPath(pathKey: string): LinkCandidate[];
  /** Notes whose file name (lower case, `.md` dropped) is `key`. */
  byName(key: string): LinkCandidate[];
  byTitle(key: string): LinkCandidate[];
  byAlias(key: string): LinkCandidate[];
}

export type Resolution =
  | { status: 'resolved'; note: LinkCandidate; heading: string | null }
  | { status: 'ambiguous'; candidates: LinkCandidate[]; heading: string | null }
  | { status: 'broken'; heading: string | null };

/** The lower-case lookup key of a link target or a path: `/` separators, no leading `/` or `./`, `.md` dropped. */
export function keyOf(target: string): string {
  // Each step only when it has something to do: a full build takes the keys of hundreds of thousands of links.
  let k = target.trim();
  if (k.includes('\\')) k = k.replace(/\\/g, '/');
  if (k.startsWith('/') || k.startsWith('./')) k = k.replace(/^(\.\/|\/)+/, '');
  if (k.length >= 3 && k.charCodeAt(k.length - 3) === 46 && /\.md$/i.test(k)) k = k.slice(0, -3);
  return k.toLowerCase();
}

/** The last segment of a key (what `byName` compares). */
export function lastSegment(key: string): string {
  const i = key.lastIndexOf('/');
  return i === -1 ? key : key.slice(i + 1);
}

/** The two keys a link is re-resolved by when notes change: of its whole target, and of the part before its first `#`. */
export function linkKeys(target: string): { full: string; note: string } {
  const hash = target.indexOf('#');
  return { full: lastSegment(keyOf(target)), note: lastSegment(keyOf(hash === -1 ? target : target.slice(0, hash))) };
}

function lookupNote(part: string, lookup: NoteLookup): LinkCandidate[] {
  const key = keyOf(part);
  if (!key) return [];
  // `/Readme` is the Readme at the top of the vault, whatever other folders hold.
  if (part.trim().startsWith('/')) return lookup.byPath(key).filter((c) => keyOf(c.path) === key);
  if (key.includes('/')) return lookup.byPath(key);
  const byName = lookup.byName(key);
  if (byName.length) return byName;
  const byTitle = lookup.byTitle(key);
  return byTitle.length ? byTitle : lookup.byAlias(key);
}

function outcome(found: LinkCandidate[], heading: string | null): Resolution {
  if (found.length === 1) return { status: 'resolved', note: found[0]!, heading };
  const unique = [...new Map(found.map((c) => [c.seq, c])).values()];
  if (unique.length === 1) return { status: 'resolved', note: unique[0]!, heading };
  return { status: 'ambiguous', candidates: unique.sort((a, b) => a.path.localeCompare(b.path)), heading };
}

/**
 * Resolves a link target (the alias already removed). `self` is the note the link is in: a target
 * that is only a heading (`#Decisions`) points into it.
 */
export function resolveWikiTarget(target: string, lookup: NoteLookup, self?: LinkCandidate): Resolution {
  const t = target.trim();
  if (t.startsWith('#')) {
    const heading = t.slice(1).trim() || null;
    return self ? { status: 'resolved', note: self, heading } : { status: 'broken', heading };
  }
  const whole = lookupNote(t, lookup);
  if (whole.length) return outcome(whole, null);
  for (let i = t.indexOf('#'); i !== -1; i = t.indexOf('#', i + 1)) {
    const part = t.slice(0, i).trim();
    if (!part) continue;
    const found = lookupNote(part, lookup);
    if (found.length) return outcome(found, t.slice(i + 1).trim() || null);
  }
  const hash = t.indexOf('#');
  return { status: 'broken', heading: hash === -1 ? null : t.slice(hash + 1).trim() || null };
}

/**
 * A link's text pointed at a renamed or moved note, keeping its heading, alias and embed mark: a
 * short `[[Name]]` stays short unless the new name is ambiguous (then the path is written), and a
 * path-qualified link keeps a path.
 */
export function rewriteLinkText(raw: string, oldTarget: string, heading: string | null, newPath: string, pathNeeded: boolean): string {
  const bar = raw.search(/\\?\|/);
  const aliasPart = bar === -1 ? '' : raw.slice(bar);
  const stem = newPath.replace(/\.md$/i, '');
  const oldPart = oldTarget.split('#')[0] ?? '';
  const usedPath = keyOf(oldPart).includes('/') || oldPart.trim().startsWith('/') || pathNeeded;
  // A path at the top of the vault is written `/Name`, so it cannot be read as a bare name.
  const name = usedPath ? (stem.includes('/') ? stem : `/${stem}`) : lastSegment(stem);
  const headingPart = heading === null ? '' : `#${heading}`;
  // A link that wrote `.md` keeps writing it.
  const ext = /\.md(#|$)/i.test(oldTarget) ? '.md' : '';
  return `${name}${ext}${headingPart}${aliasPart}`;
}
