/**
 * Words: what a shell word resolves to once quotes, escapes, braces and known variables are dealt
 * with. The judge reasons about these values, never about the raw text, so `'rm'`, `r""m`, `\rm`
 * and `$'\x72m'` are all `rm`, and `{-rf,/}` is two words.
 */
import type { Node } from 'web-tree-sitter';

/** Marks a part of a word that is only known at run time (a quoted `"$X"`, `"$(cmd)"`). */
export const DYN = '\u0000';
/** Marks `$HOME` / `${HOME}` while a word is assembled; becomes `~` at the start of a word. */
const HOME = '\u0001';
/**
 * Marks the working directory (`$PWD`, `~+`, `$(pwd)`) while a word is assembled, when the command
 * may be in several places: at the start of a word it becomes `.`, which names the same directory
 * from wherever the command is.
 */
const HERE = '\u0003';
/** Brace expansion beyond this many words is treated as unknowable. */
const MAX_BRACE_WORDS = 64;

export interface Word {
  /** The value after quote removal; DYN stands for parts only known at run time. */
  text: string;
  /** The word may become any number of words (unquoted expansion, `"$@"`, xargs input). */
  opaque: boolean;
  /** An unquoted `*`, `?` or `[` makes it a filename pattern. */
  glob: boolean;
  /** It holds a process substitution `<(…)`: the path of a pipe whose content is generated. */
  procSub: boolean;
  /** The source text, for messages. */
  source: string;
  /** Set when the word has no source text of its own (xargs input): says what it stands for. */
  label?: string;
}

/**
 * What the command itself assigned to a variable before this word: a literal value, or
 * `runtime` (command substitution, `read`, a loop). `undefined`: not assigned here, so it comes
 * from the environment the kernel gives the shell. `cwd`: the working directory, wherever the
 * command is at that point (`$PWD` when it may be in several places).
 */
export type VarLookup = (name: string) => { value: string } | 'cwd' | 'runtime' | undefined;
const fromEnvironment: VarLookup = () => undefined;
/** Not a variable name: asks a VarLookup for the working directory itself (what `pwd` prints). */
export const CWD_KEY = '\u0000cwd';

/** Shortens and quotes text for a message. */
export const code = (s: string): string => {
  const short = s.length > 60 ? s.slice(0, 57) + '…' : s;
  return '`' + short.replace(/\s+/g, ' ').replace(/`/g, "'") + '`';
};

/** How a word appears in messages. */
export const show = (w: Word): string => w.label ?? code(w.source);

/**
 * A word before brace expansion. Unquoted text stays raw (backslashes included) so braces and
 * globs can still be told apart; quoted characters are backslash-escaped.
 */
interface Pattern {
  text: string;
  opaque: boolean;
  procSub: boolean;
}

const literal = (text: string): Pattern => ({ text, opaque: false, procSub: false });
const runtimeOnly = (): Pattern => ({ text: DYN, opaque: false, procSub: false });
const anyWords = (): Pattern => ({ text: DYN, opaque: true, procSub: false });
const escapeAll = (s: string): string => s.replace(/[\s\S]/g, (c) => '\\' + c);
/** Inside double quotes a backslash only escapes `$`, backtick, `"`, `\` and newline. */
const unescapeDoubleQuoted = (s: string): string => s.replace(/\\([$`"\\\n])/g, (_m, c: string) => (c === '\n' ? '' : c));
const unescapePattern = (s: string): string => s.replace(/\\([\s\S])/g, '$1');

/** A directory value as a pattern: a known place, the working directory, or only known at run time. */
function placePattern(place: ReturnType<VarLookup>): Pattern {
  if (place === 'cwd') return literal(HERE);
  if (place === undefined || place === 'runtime') return runtimeOnly();
  return literal(escapeAll(place.value));
}

/**
 * `$(pwd)`, `` `pwd` ``, `$(pwd -P)`, `$(builtin pwd)`, `$(/bin/pwd)`, `$(realpath .)`,
 * `$(readlink -f .)`: the working directory.
 */
function isPwd(node: Node): boolean {
  const commands = node.namedChildren.filter((c) => c !== null && c.type !== 'comment');
  const [cmd] = commands;
  if (commands.length !== 1 || cmd?.type !== 'command') return false;
  const words = cmd.namedChildren.filter((c): c is Node => c !== null).map((c) => c.text);
  if (words[0] === 'builtin' || words[0] === 'command') words.shift();
  const [name, ...rest] = words;
  if (name === undefined) return false;
  const program = name.slice(name.lastIndexOf('/') + 1);
  const flags = rest.filter((w) => w.startsWith('-'));
  const operands = rest.filter((w) => !w.startsWith('-'));
  if (program === 'pwd') return operands.length === 0 && flags.every((f) => /^(-[LP]+|--(logical|physical))$/.test(f));
  if (program === 'realpath' || program === 'readlink')
    return operands.length === 1 && /^\.\/?$/.test(operands[0]!) && (program === 'realpath' || flags.some((f) => /^-[a-z]*[fem]/.test(f))); // length checked
  return false;
}

function patternOf(node: Node, vars: VarLookup, quoted = false, split = true): Pattern {
  switch (node.type) {
    case 'word':
      return literal(node.text.replace(/\\\n/g, '')); // a backslash-newline inside a word is a line continuation
    case 'number':
    case '$': // a lone `$` is literal
      return literal(node.text);
    case 'raw_string':
      return literal(escapeAll(node.text.slice(1, -1)));
    case 'ansi_c_string':
      return literal(escapeAll(decodeAnsiC(node.text.slice(2, -1))));
    case 'string':
      return joinParts(node, vars, true, split);
    case 'concatenation':
      return joinParts(node, vars, quoted, split);
    case 'string_content':
      return literal(escapeAll(unescapeDoubleQuoted(node.text)));
    case 'translated_string': {
      const inner = node.namedChildren.find((c) => c?.type === 'string');
      return inner ? patternOf(inner, vars, quoted, split) : anyWords();
    }
    case 'simple_expansion':
    case 'expansion':
      return expansionPattern(node, vars, quoted || !split);
    case 'command_substitution':
      if (isPwd(node)) return placePattern(vars(CWD_KEY));
      return quoted || !split ? runtimeOnly() : anyWords();
    case 'arithmetic_expansion':
      return runtimeOnly(); // a number: one word, unknown value
    case 'process_substitution':
      return { text: DYN, opaque: false, procSub: true };
    default:
      return anyWords(); // brace_expression `{1..9}` and anything else cannot be pinned down
  }
}

/** Concatenates the parts of a string or concatenation, keeping any text between child nodes. */
function joinParts(node: Node, vars: VarLookup, inString: boolean, split: boolean): Pattern {
  const children = node.children.filter((c): c is Node => c !== null);
  const parts = inString ? children.slice(1, -1) : children; // drop the surrounding quotes
  let text = '';
  let opaque = false;
  let procSub = false;
  let at = inString ? node.startIndex + 1 : node.startIndex;
  const source = node.tree.rootNode.text;
  for (const part of parts) {
    const gap = source.slice(at, part.startIndex);
    text += inString ? escapeAll(unescapeDoubleQuoted(gap)) : gap;
    const p = part.isNamed ? patternOf(part, vars, inString, split) : literal(inString ? escapeAll(part.text) : part.text);
    text += p.text;
    opaque ||= p.opaque;
    procSub ||= p.procSub;
    at = part.endIndex;
  }
  return { text, opaque, procSub };
}

/**
 * `$X`, `${X}`: a value the command itself assigned is used as written; HOME from the environment
 * is a home directory; anything else is only known at run time, and unquoted it may split into any
 * number of words. `"$@"` and `${a[@]}` are always many words.
 */
function expansionPattern(node: Node, vars: VarLookup, quoted: boolean): Pattern {
  const text = node.text;
  const plain = /^\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?$/.exec(text);
  if (plain && text.startsWith('${') === text.endsWith('}')) {
    const name = plain[1] ?? '';
    const known = vars(name);
    if (known === undefined && name === 'HOME') return literal(HOME);
    if (known === 'cwd') return literal(HERE);
    if (known !== undefined && known !== 'runtime') {
      if (quoted) return literal(escapeAll(known.value));
      // Unquoted, a value is split on blanks and globbed: only a plain one stays one known word.
      return /^[^\s*?[\]]+$/.test(known.value) ? literal(escapeAll(known.value)) : anyWords();
    }
  }
  const manyWords = /^\$\{?[@]|\[@\]\}$/.test(text); // "$@", "${@}", "${a[@]}"
  if (manyWords || !quoted) return anyWords();
  return runtimeOnly();
}

/** Decodes the body of `$'…'` the way bash does (a NUL ends the string). */
function decodeAnsiC(body: string): string {
  const simple: Record<string, string> = {
    a: '\x07',
    b: '\b',
    e: '\x1b',
    E: '\x1b',
    f: '\f',
    n: '\n',
    r: '\r',
    t: '\t',
    v: '\v',
    '\\': '\\',
    "'": "'",
    '"': '"',
    '?': '?',
  };
  let out = '';
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (c !== '\\' || i + 1 >= body.length) {
      out += c;
      continue;
    }
    const next = body[i + 1]!; // i + 1 < body.length, checked above
    let m: RegExpMatchArray | null;
    if (next in simple) {
      out += simple[next];
      i += 1;
    } else if ((m = /^[0-7]{1,3}/.exec(body.slice(i + 1)))) {
      out += String.fromCharCode(parseInt(m[0], 8) & 0xff);
      i += m[0].length;
    } else if ((m = /^x([0-9a-fA-F]{1,2})/.exec(body.slice(i + 1)))) {
      out += String.fromCharCode(parseInt(m[1] ?? '', 16));
      i += m[0].length;
    } else if ((m = /^(?:u([0-9a-fA-F]{1,4})|U([0-9a-fA-F]{1,8}))/.exec(body.slice(i + 1)))) {
      const cp = parseInt(m[1] ?? m[2] ?? '', 16);
      out += cp <= 0x10ffff ? String.fromCodePoint(cp) : '';
      i += m[0].length;
    } else if (next === 'c' && i + 2 < body.length) {
      out += String.fromCharCode(body.charCodeAt(i + 2) & 0x1f);
      i += 2;
    } else {
      out += c + next; // unknown escapes stay as written
      i += 1;
    }
    const nul = out.indexOf('\0');
    if (nul >= 0) return out.slice(0, nul);
  }
  return out;
}

/** Index of the first unescaped character of `chars` in a pattern at or after `from`, or -1. */
function findUnescaped(p: string, chars: string, from = 0): number {
  for (let i = from; i < p.length; i++) {
    if (p[i] === '\\') i++;
    else if (chars.includes(p[i]!)) return i;
  }
  return -1;
}

/** Bash brace expansion of `{a,b}` groups (sequences like `{1..9}` arrive as their own node). */
function expandBraces(p: string, budget = { left: MAX_BRACE_WORDS }): string[] | null {
  for (let open = findUnescaped(p, '{'); open >= 0; open = findUnescaped(p, '{', open + 1)) {
    const alternatives = braceAlternatives(p, open);
    if (!alternatives) continue;
    const out: string[] = [];
    for (const alt of alternatives.parts) {
      const expanded = expandBraces(p.slice(0, open) + alt + p.slice(alternatives.end + 1), budget);
      if (!expanded) return null;
      out.push(...expanded);
    }
    return out;
  }
  return --budget.left < 0 ? null : [p];
}

/** The comma-separated alternatives of the brace group opening at `open`, or null if it is not one. */
function braceAlternatives(p: string, open: number): { parts: string[]; end: number } | null {
  const parts: string[] = [];
  let depth = 0;
  let start = open + 1;
  for (let i = open + 1; i < p.length; i++) {
    const c = p[i];
    if (c === '\\') i++;
    else if (c === '{') depth++;
    else if (c === '}' && depth > 0) depth--;
    else if (c === ',' && depth === 0) {
      parts.push(p.slice(start, i));
      start = i + 1;
    } else if (c === '}') {
      if (parts.length === 0) return null; // `{x}` and `{}` are literal
      parts.push(p.slice(start, i));
      return { parts, end: i };
    }
  }
  return null;
}

/**
 * `~+` and `~-` at the start of an unquoted word are bash's `$PWD` and `$OLDPWD` (`~-` stays as
 * written when OLDPWD is unset; here it is only known at run time until the command changes
 * directory, since the environment may set it).
 */
function tildePlace(p: string, vars: VarLookup): string {
  const m = /^~([+-])(?=\/|$)/.exec(p);
  if (!m) return p;
  return placePattern(vars(m[1] === '+' ? 'PWD' : 'OLDPWD')).text + p.slice(2);
}

function finishWord(pattern: string, procSub: boolean, source: string, vars: VarLookup): Word {
  const p = tildePlace(pattern, vars);
  let text = p.startsWith(HOME) ? '~' + p.slice(1) : p;
  // The working directory at the start of a word, alone or before a `/`, is `.`; elsewhere (`${PWD}x`) some value.
  if (text.startsWith(HERE) && (text.length === 1 || text[1] === '/' || text.startsWith('\\/', 1))) text = '.' + text.slice(1);
  text = text.split(HOME).join(DYN).split(HERE).join(DYN); // `$HOME` in the middle of a word is just some value
  return { text: unescapePattern(text), opaque: false, glob: findUnescaped(text, '*?[') >= 0, procSub, source };
}

/** A word whose value and number are only known at run time. */
export function opaqueWord(source: string, label?: string): Word {
  return { text: DYN, opaque: true, glob: false, procSub: false, source, ...(label ? { label } : {}) };
}

/** A word the judge makes up (the `rm` that `find -delete` amounts to), not read from the command. */
export function syntheticWord(text: string, source = text): Word {
  return { text, opaque: false, glob: false, procSub: false, source };
}

/**
 * The words a word node becomes (brace expansion can turn one node into several words). With
 * `split` false (the value of an assignment), expansions are not split or globbed: one word.
 */
export function wordsOf(node: Node, vars: VarLookup = fromEnvironment, split = true): Word[] {
  const p = patternOf(node, vars, false, split);
  const source = node.text;
  if (p.opaque) return [opaqueWord(source)];
  if (!split) return [{ ...finishWord(p.text, p.procSub, source, vars), glob: false }];
  const expanded = expandBraces(p.text);
  if (!expanded) return [opaqueWord(source)];
  return expanded.map((e) => finishWord(e, p.procSub, source, vars));
}

/** A word with no run-time parts. */
export const isLiteral = (w: Word): boolean => !w.opaque && !w.text.includes(DYN);
/** The value a word has when all its run-time parts turn out empty (unset variables). */
export const ifEmpty = (w: Word): string => w.text.split(DYN).join('');
