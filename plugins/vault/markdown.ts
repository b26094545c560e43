/**
 * Reading an Obsidian-style note: front matter, headings, #tags, [[wiki links]] and ![[embeds]]. Pure
 * functions of the text; the index and the tools build on them. Code (fenced blocks and inline code)
 * is skipped: a `#define` or `[[x]]` in a code sample is not a tag or a link.
 */
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';

export type FileType = 'markdown' | 'pdf' | 'image' | 'audio' | 'video';

const FILE_TYPES: Record<string, FileType> = {
  md: 'markdown',
  markdown: 'markdown',
  pdf: 'pdf',
  png: 'image',
  jpg: 'image',
  jpeg: 'image',
  gif: 'image',
  webp: 'image',
  svg: 'image',
  bmp: 'image',
  avif: 'image',
  heic: 'image',
  mp3: 'audio',
  wav: 'audio',
  m4a: 'audio',
  ogg: 'audio',
  flac: 'audio',
  webm: 'video',
  mp4: 'video',
  mov: 'video',
  mkv: 'video',
  ogv: 'video',
};

/** The vault's kind of a file, by extension; null for files the vault does not index (html, txt, temp files...). */
export function fileTypeOf(name: string): FileType | null {
  const dot = name.lastIndexOf('.');
  if (dot <= 0) return null;
  return FILE_TYPES[name.slice(dot + 1).toLowerCase()] ?? null;
}

export interface ParsedLink {
  /** The text inside the brackets, alias included (`Meeting#Decisions|the decisions`). */
  raw: string;
  /** The target without the alias (`Meeting#Decisions`). */
  target: string;
  alias: string | null;
  embed: boolean;
  /** 1-based line of the link. */
  line: number;
}

export interface ParsedNote {
  frontMatter: Record<string, unknown> | null;
  /** Why the front matter could not be read, when there is a block that is not valid YAML. */
  frontMatterError: string | null;
  /** The text after the front matter block. */
  body: string;
  title: string | null;
  aliases: string[];
  /** Lower-case, without `#`, front matter tags first, each once. */
  tags: string[];
  headings: string[];
  links: ParsedLink[];
}

const FRONT_MATTER = /^---[ \t]*\r?\n([\s\S]*?)\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|$)/;

/** Splits off a leading front matter block: its YAML source and the body after it (null when there is none). */
export function splitFrontMatter(text: string): { yaml: string | null; body: string } {
  const t = text.startsWith('\uFEFF') ? text.slice(1) : text;
  // An empty block (`---\n---`) has no inner line for the pattern's lazy group: handled here.
  const empty = /^---[ \t]*\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|$)/.exec(t);
  if (empty) return { yaml: '', body: t.slice(empty[0].length) };
  const m = FRONT_MATTER.exec(t);
  if (!m) return { yaml: null, body: t };
  return { yaml: m[1] ?? '', body: t.slice(m[0].length) };
}

/** A tag as stored: no leading `#`, lower case (Obsidian's tags are case-insensitive), trimmed. */
export function normalizeTag(tag: string): string {
  return tag.trim().replace(/^#+/, '').toLowerCase();
}

/** What a tag may be: letters, digits, `_`, `-`, `/` (nesting), not only digits (`#123` is not a tag). */
export function isValidTag(tag: string): boolean {
  return /^[\p{L}\p{N}_\-/]+$/u.test(tag) && !/^[\p{N}/]+$/u.test(tag) && !tag.startsWith('/') && !tag.endsWith('/');
}

function stringList(value: unknown): string[] {
  if (typeof value === 'string') return value.split(/[,\s]+/).filter(Boolean);
  if (Array.isArray(value)) return value.filter((v): v is string | number => typeof v === 'string' || typeof v === 'number').map(String);
  return [];
}

/**
 * Each line of the body with code masked out (fenced blocks become empty lines, inline code spans
 * become spaces), so tags and links are only found in prose. Line numbers are kept.
 */
function proseLines(body: string): string[] {
  const lines = body.split('\n');
  let fence: string | null = null;
  return lines.map((line) => {
    const f = /^\s{0,3}(`{3,}|~{3,})/.exec(line);
    if (fence !== null) {
      if (f && f[1]![0] === fence[0] && f[1]!.length >= fence.length) fence = null;
      return '';
    }
    if (f) {
      fence = f[1]!;
      return '';
    }
    return line.includes('`') ? line.replace(/(`+)[\s\S]*?\1/g, (m) => ' '.repeat(m.length)) : line;
  });
}

const WIKI = /(!?)\[\[([^[\]\n]+?)\]\]/g;
// A tag starts after whitespace or the line start (not inside a word, a URL fragment or a link).
const TAG = /(?:^|[\s(,;])#([\p{L}\p{N}_\-/]+)/gu;

/** Finds the wiki links and embeds of a body, skipping code. */
export function parseLinks(body: string, lineOffset = 0): ParsedLink[] {
  const out: ParsedLink[] = [];
  proseLines(body).forEach((line, i) => {
    if (!line.includes('[[')) return;
    for (const m of line.matchAll(WIKI)) {
      const raw = m[2]!.trim();
      if (!raw) continue;
      // `\|` is how a link inside a table cell escapes its alias bar.
      const bar = raw.search(/\\?\|/);
      const target = (bar === -1 ? raw : raw.slice(0, bar)).replace(/\\$/, '').trim();
      const alias =
        bar === -1
          ? null
          : raw
              .slice(bar)
              .replace(/^\\?\|/, '')
              .trim() || null;
      out.push({ raw, target, alias, embed: m[1] === '!', line: i + 1 + lineOffset });
    }
  });
  return out;
}

/** Parses a markdown note. Never throws: a broken front matter block is reported in `frontMatterError` and read as body. */
export function parseNote(text: string): ParsedNote {
  const { yaml, body } = splitFrontMatter(text);
  let frontMatter: Record<string, unknown> | null = null;
  let frontMatterError: string | null = null;
  if (yaml !== null) {
    try {
      const value: unknown = yaml.trim() === '' ? {} : parseYaml(yaml, { maxAliasCount: 100 });
      if (value !== null && typeof value === 'object' && !Array.isArray(value)) frontMatter = value as Record<string, unknown>;
      else if (value !== null) frontMatterError = 'the front matter is not a mapping of keys to values';
      else frontMatter = {};
    } catch (err) {
      frontMatterError = `the front matter is not valid YAML (${(err as Error).message.split('\n')[0]})`;
    }
  }
  // Line numbers of the body count from the file's first line.
  const offset = yaml === null ? 0 : text.slice(0, text.length - body.length).split('\n').length - 1;
  const tags: string[] = [];
  const addTag = (t: string) => {
    const n = normalizeTag(t);
    if (n && isValidTag(n) && !tags.includes(n)) tags.push(n);
  };
  for (const t of stringList(frontMatter?.tags ?? frontMatter?.tag)) addTag(t);
  const headings: string[] = [];
  for (const line of proseLines(body)) {
    if (!line.includes('#')) continue;
    const h = /^#{1,6}[ \t]+(.+?)[ \t#]*$/.exec(line);
    if (h) {
      headings.push(h[1]!.trim());
      continue;
    }
    for (const m of line.matchAll(TAG)) addTag(m[1]!);
  }
  const title = typeof frontMatter?.title === 'string' && frontMatter.title.trim() ? frontMatter.title.trim() : null;
  const aliases = stringList(frontMatter?.aliases ?? frontMatter?.alias).filter((a) => a.trim() !== '');
  return { frontMatter, frontMatterError, body, title, aliases, tags, headings, links: parseLinks(body, offset) };
}

/** A note's text from front matter and body: no block when the front matter is empty. */
export function composeNote(frontMatter: Record<string, unknown> | null, body: string): string {
  if (!frontMatter || Object.keys(frontMatter).length === 0) return body;
  return `---\n${stringifyYaml(frontMatter, { lineWidth: 0 }).trimEnd()}\n---\n${body}`;
}

/** The text of one section: from its heading to the next heading of the same or a higher level. */
export function sectionOf(body: string, heading: string): string | null {
  const lines = body.split('\n');
  const want = heading.trim().toLowerCase();
  let start = -1;
  let level = 0;
  let fence = false;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (/^\s{0,3}(`{3,}|~{3,})/.test(line)) fence = !fence;
    if (fence) continue;
    const h = /^(#{1,6})[ \t]+(.+?)[ \t#]*$/.exec(line);
    if (!h) continue;
    if (start === -1) {
      if (h[2]!.trim().toLowerCase() === want) {
        start = i;
        level = h[1]!.length;
      }
    } else if (h[1]!.length <= level) {
      return lines.slice(start, i).join('\n').trimEnd();
    }
  }
  return start === -1 ? null : lines.slice(start).join('\n').trimEnd();
}

/** Lower case without accents: how the index compares words (`Zürich` is `zurich`). */
function fold(word: string): string {
  return word.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();
}

/** A rough stem (the index stems with Porter): `running` -> `runn`, matched as a prefix. */
function stemOf(word: string): string {
  const w = fold(word);
  const m = /^(.{3,}?)(?:ing|ed|es|s|ly)$/.exec(w);
  return m ? m[1]! : w;
}

/**
 * A short passage of `body` around the first word that matches the search terms, matches in
 * **bold**: the index keeps no copy of the text, so snippets are cut from the file. Words are
 * compared as the index does, roughly (accents folded, case ignored, a stem matching a prefix).
 */
export function makeSnippet(body: string, terms: readonly string[], width = 16): string {
  const needles = [
    ...new Set(
      terms
        .flatMap((t) => t.replace(/\*$/, '').split(/[^\p{L}\p{N}_]+/u))
        .filter(Boolean)
        .map(stemOf),
    ),
  ];
  const hit = (w: string) => {
    const f = fold(w);
    return needles.some((n) => f === n || (n.length >= 3 && f.startsWith(n)));
  };
  // Words are read only as far as needed: up to the first match and `width` beyond it.
  const words: RegExpExecArray[] = [];
  let first = -1;
  let more = false;
  for (const m of body.matchAll(/[\p{L}\p{N}_]+/gu)) {
    if ((first !== -1 && words.length >= first + width) || (first === -1 && words.length >= 5000)) {
      more = true;
      break;
    }
    words.push(m);
    if (first === -1 && hit(m[0])) first = words.length - 1;
  }
  if (words.length === 0) return '';
  const from = Math.max(0, (first === -1 ? 0 : first) - Math.floor(width / 3));
  const to = Math.min(words.length, from + width);
  let out = from > 0 ? '…' : '';
  let at = words[from]!.index;
  for (let i = from; i < to; i++) {
    const m = words[i]!;
    out += body.slice(at, m.index);
    out += hit(m[0]) ? `**${m[0]}**` : m[0];
    at = m.index + m[0].length;
  }
  const truncated = more || to < words.length;
  return (out + (truncated ? '…' : body.slice(at))).replace(/\s+/g, ' ').trim();
}
