/**
 * What a rename or move does to the links that point at a note: a link that names the note by its
 * file name or path is rewritten (heading, alias and embed mark kept); a link that found it by its
 * title or an alias still does, and is left alone.
 */
import { keyOf, lastSegment, rewriteLinkText } from './links.js';
import type { LinkInfo, VaultIndex } from './vault-index.js';

export interface LinkEdit {
  /** Vault-relative path of the note the link is in (as it is before the move). */
  source: string;
  line: number;
  from: string;
  to: string;
}

/** The part of a resolved link's target that named the note (the heading split off as resolution did). */
function notePartOf(link: Pick<LinkInfo, 'target' | 'heading'>): string {
  const t = link.target.trim();
  if (link.heading === null) return t;
  for (let i = t.indexOf('#'); i !== -1; i = t.indexOf('#', i + 1)) if ((t.slice(i + 1).trim() || null) === link.heading) return t.slice(0, i);
  return t;
}

/** The link rewrites that moving the notes `moves` (old path -> new path) needs, in every note that links to them. */
export function planRelinks(index: VaultIndex, moves: ReadonlyMap<string, string>): LinkEdit[] {
  const edits: LinkEdit[] = [];
  for (const [oldPath, newPath] of moves) {
    const note = index.note({ path: oldPath });
    if (!note) continue;
    const oldName = lastSegment(keyOf(oldPath));
    const newName = lastSegment(keyOf(newPath));
    // The short name would lead elsewhere too (or already does): write the path.
    const others = index.lookup.byName(newName).filter((c) => c.seq !== note.seq && !moves.has(c.path));
    const pathNeeded = others.length > 0;
    for (const link of index.linksTo(note.seq)) {
      if (link.status !== 'resolved') continue;
      const part = keyOf(notePartOf(link));
      const byPath = part.includes('/');
      if (!byPath && lastSegment(part) !== oldName) continue; // found by title or alias: still does
      if (!byPath && oldName === newName && !pathNeeded) continue; // same name, no path: still resolves
      const source = index.note({ seq: link.source_seq });
      if (!source) continue;
      const to = rewriteLinkText(link.raw, notePartOf(link), link.heading, newPath, pathNeeded);
      if (to !== link.raw) edits.push({ source: source.path, line: link.line, from: link.raw, to });
    }
  }
  return edits;
}

/** Applies the edits of one source note to its text: each `[[from]]` on its line becomes `[[to]]`. */
export function applyRelinks(text: string, edits: readonly LinkEdit[]): string {
  if (edits.length === 0) return text;
  const lines = text.split('\n');
  for (const e of edits) {
    const i = e.line - 1;
    if (i < 0 || i >= lines.length) continue;
    lines[i] = lines[i]!.split(`[[${e.from}]]`).join(`[[${e.to}]]`);
  }
  return lines.join('\n');
}

/** The edits grouped by source note. */
export function bySource(edits: readonly LinkEdit[]): Map<string, LinkEdit[]> {
  const out = new Map<string, LinkEdit[]>();
  for (const e of edits) out.set(e.source, [...(out.get(e.source) ?? []), e]);
  return out;
}

export function describeRelinks(edits: readonly LinkEdit[], limit = 50): string {
  if (edits.length === 0) return 'No links point at it by name or path; none need rewriting.';
  const notes = new Set(edits.map((e) => e.source)).size;
  const lines = edits.slice(0, limit).map((e) => `  ${e.source}:${e.line}  [[${e.from}]] -> [[${e.to}]]`);
  if (edits.length > limit) lines.push(`  … and ${edits.length - limit} more`);
  return `Links rewritten: ${edits.length} in ${notes} note${notes === 1 ? '' : 's'}:\n${lines.join('\n')}`;
}
