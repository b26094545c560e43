/**
 * The shell command judge: refuses dangerous shell commands whatever permissions the caller holds.
 *
 * It judges the parsed command, never the raw string: the command is parsed with tree-sitter's
 * bash grammar and every simple command in it is examined (lists, pipelines, subshells, groups,
 * `$(…)`, backticks, `<(…)`, substitutions inside arguments and strings, if/while/for/case bodies,
 * function bodies, and the bodies of `sh -c`, `bash -c`, `eval`, heredocs fed to a shell…).
 * Quoting and escapes are resolved (`'rm'`, `r""m`, `\rm` and `$'\x72m'` are all `rm`), names are
 * matched on their basename (`/bin/rm`), and wrappers such as `env`, `timeout`, `nice`, `xargs`
 * or `find -exec` are looked through.
 *
 * It fails closed. Besides the 23 rules of BLOCK_RULES, a verdict can carry one of three
 * fail-closed rule ids:
 * - `unparseable`: the text is not complete, valid shell (ERROR or MISSING nodes), or it uses a
 *   construct the judge cannot reason about, or nests shells deeper than MAX_DEPTH;
 * - `dynamic-command`: what decides the verdict is only known at run time: a command name built
 *   from an expansion (`$CMD`, `$(echo rm)`), a shell body that is not literal (`bash -c "$X"`,
 *   `eval "$(…)"`), a shell reading commands from a pipe, a wrapper option the judge does not
 *   know, or rm/chmod/chown arguments that may expand to any words (`rm $X`, `xargs rm`);
 * - `empty-command`: there is nothing to run.
 *
 * It does not look inside other languages (`python3 -c`, `node -e`) or script files
 * (`bash build.sh`, `make`), and reading files is not its business.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { Language, Parser, type Node } from 'web-tree-sitter';

export interface CommandVerdict {
  verdict: 'blocked' | 'allowed';
  /** A BLOCK_RULES id, or `unparseable` / `dynamic-command` / `empty-command`; null when allowed. */
  rule: string | null;
  /** One sentence naming what was found (or why the command is allowed). */
  reason: string;
}

export const BLOCK_RULES: ReadonlyArray<{ id: string; category: string; description: string }> = Object.freeze([
  { id: 'rm-root', category: 'Destructive', description: 'rm of `/` or of everything under it (`/`, `/*`, `/..`, `"$EMPTY/"`), or rm with `--no-preserve-root`.' },
  { id: 'rm-home', category: 'Destructive', description: 'Recursive rm of a home directory or all of its contents (`~`, `~/`, `~/*`, `$HOME`, `${HOME}`, `~user`).' },
  { id: 'rm-cwd', category: 'Destructive', description: 'Recursive rm of the working directory, its parent, or all of their contents (`.`, `./`, `./*`, `*`, `.*`, `..`).' },
  { id: 'rm-system', category: 'Destructive', description: 'rm of a path in a system tree (`/etc`, `/usr`, `/bin`, `/var`…) or of a top-level directory such as `/home` or `/opt`.' },
  { id: 'dd', category: 'Disk', description: '`dd` (raw block copies that can overwrite a disk), or a shell redirect that writes to a disk device such as `/dev/sda`.' },
  { id: 'mkfs', category: 'Disk', description: 'Creating or wiping a filesystem: `mkfs`, `mkfs.ext4` and kin, `mke2fs`, `mkswap`, `wipefs`, `newfs`.' },
  { id: 'format', category: 'Disk', description: '`format`, or `diskutil` erasing or repartitioning a disk.' },
  { id: 'fdisk', category: 'Disk', description: 'Partition table editors: `fdisk`, `sfdisk`, `cfdisk`, `gdisk`, `sgdisk`.' },
  { id: 'parted', category: 'Disk', description: 'The `parted` / `gparted` partition editors.' },
  { id: 'chmod-777', category: 'Permission changes', description: 'chmod with a mode that lets everyone write and execute (`777`, `0777`, `1777`, `a=rwx`, `a+rwx`, `o+wx`, `+rwx`…), recursive or not.' },
  { id: 'chmod-system', category: 'Permission changes', description: 'chmod of `/` or of a path in a system tree (`/etc`, `/usr`, `/bin`…), e.g. `chmod -R 755 /usr`.' },
  { id: 'chown-system', category: 'Permission changes', description: 'chown or chgrp of `/` or of a path in a system tree, e.g. `chown root /etc/passwd`.' },
  { id: 'sudo', category: 'Privilege escalation', description: 'Running a command as another user with `sudo`, `sudoedit`, `doas` or `run0`.' },
  { id: 'su', category: 'Privilege escalation', description: 'Switching user with `su`.' },
  { id: 'pkexec', category: 'Privilege escalation', description: 'Running a command as another user with polkit\'s `pkexec`.' },
  { id: 'fork-bomb', category: 'Fork bombs', description: 'A function that runs itself concurrently (piped into itself or in the background): `:(){ :|:& };:` and renamed variants.' },
  { id: 'nc-exec', category: 'Reverse shells', description: 'netcat (`nc`, `ncat`, `netcat`) with `-e`/`-c`/`--exec`/`--sh-exec`, or `socat` with an `EXEC:`/`SYSTEM:` address: a program wired to a socket.' },
  { id: 'bash-interactive', category: 'Reverse shells', description: 'An interactive shell (`bash -i`, `sh -i`), or a redirect to bash\'s `/dev/tcp/` or `/dev/udp/` network sockets.' },
  { id: 'mkfifo', category: 'Reverse shells', description: 'Creating a named pipe (`mkfifo`, `mknod NAME p`), the plumbing of a netcat reverse shell.' },
  { id: 'shutdown', category: 'System control', description: '`shutdown`, or taking the machine out of service: `systemctl suspend|hibernate|rescue|emergency`, `init 1`.' },
  { id: 'reboot', category: 'System control', description: '`reboot`, `systemctl reboot|kexec|soft-reboot`, `init 6`.' },
  { id: 'halt', category: 'System control', description: '`halt`, `systemctl halt`.' },
  { id: 'poweroff', category: 'System control', description: '`poweroff`, `systemctl poweroff`, `init 0`.' },
]);

const UNPARSEABLE = 'unparseable';
const DYNAMIC = 'dynamic-command';
const EMPTY = 'empty-command';

/** How many shells-within-shells (`bash -c`, `eval`, heredocs…) the judge follows before refusing. */
const MAX_DEPTH = 8;
/** Brace expansion beyond this many words is treated as unknowable. */
const MAX_BRACE_WORDS = 64;

// ---------------------------------------------------------------------------------------------
// Parser: initialised lazily, once per process.

let parserPromise: Promise<Parser> | null = null;

function loadParser(): Promise<Parser> {
  parserPromise ??= (async () => {
    await Parser.init();
    const requireHere = createRequire(import.meta.url);
    const grammarDir = path.dirname(requireHere.resolve('tree-sitter-bash/package.json'));
    const bash = await Language.load(path.join(grammarDir, 'tree-sitter-bash.wasm'));
    const parser = new Parser();
    parser.setLanguage(bash);
    return parser;
  })().catch((err: unknown) => {
    parserPromise = null; // let a later call retry
    throw err;
  });
  return parserPromise;
}

// ---------------------------------------------------------------------------------------------
// Words: what a shell word resolves to once quotes, escapes and braces are dealt with.

/** Marks a part of a word that is only known at run time (a quoted `"$X"`, `"$(cmd)"`). */
const DYN = '\u0000';
/** Marks `$HOME` / `${HOME}` while a word is assembled; becomes `~` at the start of a word. */
const HOME = '\u0001';

interface Word {
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

/** How a word appears in messages. */
const show = (w: Word): string => w.label ?? code(w.source);

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

function patternOf(node: Node, quoted = false): Pattern {
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
      return joinParts(node, true);
    case 'concatenation':
      return joinParts(node, quoted);
    case 'string_content':
      return literal(escapeAll(unescapeDoubleQuoted(node.text)));
    case 'translated_string': {
      const inner = node.namedChildren.find((c) => c?.type === 'string');
      return inner ? patternOf(inner, quoted) : anyWords();
    }
    case 'simple_expansion':
    case 'expansion':
      return expansionPattern(node, quoted);
    case 'command_substitution':
      return quoted ? runtimeOnly() : anyWords();
    case 'arithmetic_expansion':
      return runtimeOnly(); // a number: one word, unknown value
    case 'process_substitution':
      return { text: DYN, opaque: false, procSub: true };
    default:
      return anyWords(); // brace_expression `{1..9}` and anything else cannot be pinned down
  }
}

/** Concatenates the parts of a string or concatenation, keeping any text between child nodes. */
function joinParts(node: Node, inString: boolean): Pattern {
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
    const p = part.isNamed ? patternOf(part, inString) : literal(inString ? escapeAll(part.text) : part.text);
    text += p.text;
    opaque ||= p.opaque;
    procSub ||= p.procSub;
    at = part.endIndex;
  }
  return { text, opaque, procSub };
}

/** `$X`, `${X…}`: HOME is known; `"$@"` and unquoted expansions may become any words. */
function expansionPattern(node: Node, quoted: boolean): Pattern {
  const text = node.text;
  if (text === '$HOME' || text === '${HOME}') return literal(HOME);
  const manyWords = /^\$\{?[@]|\[@\]\}$/.test(text); // "$@", "${@}", "${a[@]}"
  if (manyWords || !quoted) return anyWords();
  return runtimeOnly();
}

/** Decodes the body of `$'…'` the way bash does (a NUL ends the string). */
function decodeAnsiC(body: string): string {
  const simple: Record<string, string> = { a: '\x07', b: '\b', e: '\x1b', E: '\x1b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v', '\\': '\\', "'": "'", '"': '"', '?': '?' };
  let out = '';
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c !== '\\' || i + 1 >= body.length) {
      out += c;
      continue;
    }
    const next = body[i + 1]!;
    let m: RegExpMatchArray | null;
    if (next in simple) {
      out += simple[next];
      i += 1;
    } else if ((m = /^[0-7]{1,3}/.exec(body.slice(i + 1)))) {
      out += String.fromCharCode(parseInt(m[0], 8) & 0xff);
      i += m[0].length;
    } else if ((m = /^x([0-9a-fA-F]{1,2})/.exec(body.slice(i + 1)))) {
      out += String.fromCharCode(parseInt(m[1]!, 16));
      i += m[0].length;
    } else if ((m = /^(?:u([0-9a-fA-F]{1,4})|U([0-9a-fA-F]{1,8}))/.exec(body.slice(i + 1)))) {
      const cp = parseInt((m[1] ?? m[2])!, 16);
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

function finishWord(p: string, procSub: boolean, source: string): Word {
  let text = p.startsWith(HOME) ? '~' + p.slice(1) : p;
  text = text.split(HOME).join(DYN); // `$HOME` in the middle of a word is just some value
  return { text: unescapePattern(text), opaque: false, glob: findUnescaped(text, '*?[') >= 0, procSub, source };
}

function opaqueWord(source: string): Word {
  return { text: DYN, opaque: true, glob: false, procSub: false, source };
}

/** The words a word node becomes (brace expansion can turn one node into several words). */
function wordsOf(node: Node): Word[] {
  const p = patternOf(node);
  const source = node.text;
  if (p.opaque) return [opaqueWord(source)];
  const expanded = expandBraces(p.text);
  if (!expanded) return [opaqueWord(source)];
  return expanded.map((e) => finishWord(e, p.procSub, source));
}

const isLiteral = (w: Word): boolean => !w.opaque && !w.text.includes(DYN);
/** The value a word has when all its run-time parts turn out empty (unset variables). */
const ifEmpty = (w: Word): string => w.text.split(DYN).join('');

// ---------------------------------------------------------------------------------------------
// Paths: which protected place a target names.

type PathClass = 'root' | 'system' | 'home' | 'cwd';

/** Trees whose every path belongs to the system. */
const SYSTEM_TREES = new Set(['bin', 'boot', 'dev', 'etc', 'lib', 'lib32', 'lib64', 'libx32', 'nix', 'proc', 'root', 'run', 'sbin', 'snap', 'sys', 'usr', 'var', 'System', 'Library', 'private']);
/** Top-level directories that are protected themselves, though what is inside belongs to someone. */
const SYSTEM_ROOTS = new Set(['home', 'Users', 'opt', 'srv', 'mnt', 'media', 'Volumes', 'Applications']);
/** Scratch space inside system trees (what is under them is not the system's). */
const SCRATCH = ['var/tmp', 'var/folders', 'private/tmp', 'private/var/folders', 'private/var/tmp'];

const hasGlob = (component: string): boolean => /[*?[]/.test(component);
/** A glob that matches (nearly) every name: `*`, `.*`, `?*`, `[a-z]*`. */
const isCatchAll = (component: string): boolean => hasGlob(component) && component.replace(/\[[^\]]*\]|[*?.]/g, '') === '';

/** Classifies a path lexically (`..` resolved, symlinks ignored); null when it names nothing protected. */
function classifyPath(text: string): PathClass | null {
  if (text === '') return null;
  const base = text.startsWith('/') ? 'abs' : text.startsWith('~') ? 'home' : 'rel';
  const rest = base === 'home' ? text.replace(/^~[^/]*/, '') : text;
  const stack: string[] = [];
  let up = 0;
  for (const c of rest.split('/')) {
    if (c === '' || c === '.') continue;
    if (c !== '..') stack.push(c);
    else if (stack.length > 0) stack.pop();
    else if (base === 'home') return 'home'; // above a home directory
    else if (base === 'rel') up++;
  }
  const firstGlob = stack.findIndex(hasGlob);
  const everything = stack.length === 0 || (firstGlob === 0 && isCatchAll(stack[0]!));
  if (base === 'abs') return classifyAbsolute(stack, firstGlob);
  if (base === 'home') return everything ? 'home' : null;
  return everything || (up > 0 && stack.length === 0) ? 'cwd' : null;
}

function classifyAbsolute(stack: string[], firstGlob: number): PathClass | null {
  if (stack.length === 0 || firstGlob === 0) return 'root'; // `/`, or a pattern over top-level names
  const joined = stack.join('/');
  if (SCRATCH.some((s) => joined.startsWith(s + '/'))) return null;
  if (SYSTEM_TREES.has(stack[0]!)) return 'system';
  const justTheRoot = firstGlob === -1 ? stack.length === 1 : firstGlob === 1;
  return SYSTEM_ROOTS.has(stack[0]!) && justTheRoot ? 'system' : null;
}

// ---------------------------------------------------------------------------------------------
// Findings and context.

interface Finding {
  rule: string;
  what: string;
  via: readonly string[];
}

interface Ctx {
  parser: Parser;
  /** Shells and wrappers the current command was reached through, outermost first. */
  via: readonly string[];
  depth: number;
}

/** A simple command: its words (name first) and the redirects that apply to it. */
interface Simple {
  words: Word[];
  redirects: Node[];
}

const code = (s: string): string => {
  const short = s.length > 60 ? s.slice(0, 57) + '…' : s;
  return '`' + short.replace(/\s+/g, ' ').replace(/`/g, "'") + '`';
};

function found(ctx: Ctx, rule: string, what: string): Finding {
  return { rule, what, via: ctx.via };
}

function reasonOf(f: Finding): string {
  const via = f.via.length > 0 ? ` (reached through ${f.via.map(code).join(', then ')})` : '';
  return `${f.what}${via}.`;
}

const unknownOption = (ctx: Ctx, name: string, w: Word): Finding =>
  w.opaque
    ? found(ctx, DYNAMIC, `${code(name)} with ${show(w)}, which may expand to anything at run time, so what it runs cannot be determined`)
    : found(ctx, DYNAMIC, `${code(name)} with ${show(w)}, an option the judge does not know, so the command it runs cannot be determined`);

// ---------------------------------------------------------------------------------------------
// Walking the tree.

/** Every node type of the bash grammar the walker understands; anything else is refused. */
const KNOWN_TYPES = new Set([
  'program', 'comment', 'command', 'command_name', 'variable_assignment', 'variable_assignments', 'variable_name',
  'special_variable_name', 'word', 'number', 'string', 'string_content', 'raw_string', 'ansi_c_string',
  'translated_string', 'concatenation', 'simple_expansion', 'expansion', 'command_substitution',
  'process_substitution', 'arithmetic_expansion', 'brace_expression', 'list', 'pipeline', 'subshell',
  'compound_statement', 'redirected_statement', 'file_redirect', 'file_descriptor', 'heredoc_redirect',
  'heredoc_start', 'heredoc_body', 'heredoc_content', 'heredoc_end', 'herestring_redirect', 'if_statement',
  'elif_clause', 'else_clause', 'while_statement', 'for_statement', 'c_style_for_statement', 'do_group',
  'case_statement', 'case_item', 'function_definition', 'negated_command', 'test_command', 'test_operator',
  'declaration_command', 'unset_command', 'array', 'subscript', 'binary_expression', 'unary_expression',
  'ternary_expression', 'postfix_expression', 'parenthesized_expression', 'extglob_pattern', 'regex',
]);

function visitChildren(node: Node, ctx: Ctx): Finding | null {
  for (const child of node.namedChildren) {
    const f = child && visit(child, ctx);
    if (f) return f;
  }
  return null;
}

function visit(node: Node, ctx: Ctx): Finding | null {
  switch (node.type) {
    case 'command':
      return visitCommand(node, [], ctx);
    case 'redirected_statement':
      return visitRedirected(node, ctx);
    case 'function_definition':
      return forkBomb(node, ctx) ?? visitChildren(node, ctx);
    case 'file_redirect':
      return redirectTarget(node, ctx) ?? visitChildren(node, ctx);
    default:
      if (!KNOWN_TYPES.has(node.type)) return found(ctx, UNPARSEABLE, `The command uses ${code(node.text)}, a construct (${node.type}) the judge cannot reason about`);
      return visitChildren(node, ctx);
  }
}

/** A statement with redirects: when its body is a simple command, the redirects are its stdin. */
function visitRedirected(node: Node, ctx: Ctx): Finding | null {
  const body = node.childForFieldName('body');
  const redirects = node.childrenForFieldName('redirect');
  const f = body?.type === 'command' ? visitCommand(body, redirects, ctx) : body ? visit(body, ctx) : null;
  if (f) return f;
  for (const r of redirects) {
    const g = visit(r, ctx);
    if (g) return g;
  }
  return null;
}

function visitCommand(node: Node, outerRedirects: Node[], ctx: Ctx): Finding | null {
  // What runs first: substitutions inside the words and assignments, and the redirects.
  const nested = visitChildren(node, ctx);
  if (nested) return nested;
  const nameNode = node.childForFieldName('name');
  if (!nameNode) return null; // only assignments or redirects
  if (nameNode.namedChildCount !== 1) return found(ctx, UNPARSEABLE, `The command name ${code(nameNode.text)} has a shape the judge cannot reason about`);
  const words = wordsOf(nameNode.namedChild(0)!);
  const args = node.childrenForFieldName('argument');
  args.forEach((arg, i) => {
    // `$"…"` (a translated string) arrives as a `$` token followed by the string: one word.
    const next = args[i + 1];
    if (!arg.isNamed && arg.type === '$' && next && next.startIndex === arg.endIndex) return;
    words.push(...wordsOf(arg));
  });
  return judgeSimple({ words, redirects: [...node.childrenForFieldName('redirect'), ...outerRedirects] }, ctx);
}

/** Parses and walks a piece of shell text: the whole command, or a body handed to `bash -c`. */
function judgeScript(text: string, ctx: Ctx, via: string | null): Finding | null {
  const inner: Ctx = via === null ? ctx : { ...ctx, via: [...ctx.via, via], depth: ctx.depth + 1 };
  if (inner.depth > MAX_DEPTH) return found(inner, UNPARSEABLE, `The command nests shells more than ${MAX_DEPTH} levels deep`);
  const tree = ctx.parser.parse(text);
  if (!tree) return found(inner, UNPARSEABLE, 'The shell parser produced no tree for the command');
  try {
    const problem = tree.rootNode.hasError ? firstProblem(tree.rootNode) : null;
    if (tree.rootNode.hasError) {
      const where = problem ? ` at character ${problem.startIndex + 1}${problem.isMissing ? ` (a ${code(problem.type)} is missing)` : ` (${code(problem.text || problem.type)})`}` : '';
      return found(inner, UNPARSEABLE, `${code(text)} is not complete, valid shell${where}, so it cannot be checked`);
    }
    return visit(tree.rootNode, inner);
  } finally {
    tree.delete();
  }
}

function firstProblem(node: Node): Node | null {
  if (node.isError || node.isMissing) return node;
  for (const child of node.children) {
    if (child && (child.hasError || child.isMissing)) return firstProblem(child);
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Redirects.

/** Whole-disk and partition devices, where a raw write destroys the filesystem. */
const DISK_DEVICE = /^\/dev\/(sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|disk\d|rdisk\d|md\d|dm-\d|mapper\/)/;

function redirectTarget(node: Node, ctx: Ctx): Finding | null {
  const writes = node.children.some((c) => c !== null && !c.isNamed && />/.test(c.type));
  for (const dest of node.childrenForFieldName('destination')) {
    for (const w of wordsOf(dest)) {
      if (/^\/dev\/(tcp|udp)\//.test(w.text)) return found(ctx, 'bash-interactive', `A redirect to ${code(w.source)} opens a network connection from the shell`);
      if (writes && DISK_DEVICE.test(w.text)) return found(ctx, 'dd', `A redirect writes raw data to the disk device ${code(w.source)}`);
    }
  }
  return null;
}

type StdinSource = { script: string } | { unknown: string } | 'file' | null;

/** Where a command's standard input comes from, as far as its own redirects say. */
function stdinOf(cmd: Simple): StdinSource {
  for (const r of cmd.redirects) {
    if (r.type === 'heredoc_redirect') {
      const start = r.namedChildren.find((c) => c?.type === 'heredoc_start');
      const body = r.namedChildren.find((c) => c?.type === 'heredoc_body');
      if (!body) return { script: '' };
      const quoted = /['"\\]/.test(start?.text ?? '');
      if (quoted) return { script: body.text };
      if (body.namedChildren.some((c) => c?.type !== 'heredoc_content')) return { unknown: 'a heredoc with expansions' };
      return { script: body.text.replace(/\\([$`\\])/g, '$1').replace(/\\\n/g, '') };
    }
    if (r.type === 'herestring_redirect') {
      const arg = r.namedChildren.find((c) => c !== null && c.type !== 'file_descriptor');
      const words = arg ? wordsOf(arg) : [];
      const w = words[0];
      if (words.length !== 1 || !w || !isLiteral(w)) return { unknown: `the here-string ${code(arg?.text ?? '')}` };
      return { script: w.text };
    }
    if (r.type === 'file_redirect') {
      const fd = r.childForFieldName('descriptor')?.text ?? '0';
      const reads = r.children.some((c) => c !== null && (c.type === '<' || c.type === '<&'));
      if (reads && fd === '0') return 'file';
    }
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Fork bombs.

/** A function whose body runs the function itself concurrently: piped into itself or backgrounded. */
function forkBomb(def: Node, ctx: Ctx): Finding | null {
  const nameNode = def.childForFieldName('name');
  const body = def.childForFieldName('body');
  if (!nameNode || !body) return null;
  const name = wordsOf(nameNode)[0]?.text;
  if (name === undefined) return null;
  const calls = body.descendantsOfType('command').filter((c): c is Node => {
    const n = c?.childForFieldName('name')?.namedChild(0);
    return !!n && wordsOf(n)[0]?.text === name;
  });
  const concurrent = calls.some((call) => {
    for (let n: Node | null = call; n && n.id !== body.id; n = n.parent) {
      if (n.parent?.type === 'pipeline' || n.nextSibling?.type === '&') return true;
    }
    return false;
  });
  return concurrent ? found(ctx, 'fork-bomb', `The function ${code(name)} runs copies of itself concurrently, a fork bomb`) : null;
}

// ---------------------------------------------------------------------------------------------
// Simple commands.

type Handler = (name: string, args: Word[], cmd: Simple, ctx: Ctx) => Finding | null;

/** The program a command name runs: its basename, lower-cased (case-insensitive filesystems), or null. */
function programName(w: Word): string | null {
  if (w.opaque || w.glob) return null;
  const base = w.text.slice(w.text.lastIndexOf('/') + 1);
  if (base === '' || base.includes(DYN)) return null;
  return base.toLowerCase().replace(/\.(exe|com)$/, '');
}

function judgeSimple(cmd: Simple, ctx: Ctx): Finding | null {
  const [nameWord, ...args] = cmd.words;
  if (!nameWord) return null;
  const name = programName(nameWord);
  if (name === null) return found(ctx, DYNAMIC, `The command name ${code(nameWord.source)} is only known at run time`);
  const handler = HANDLERS.get(name) ?? (/^(mkfs\.|newfs)/.test(name) ? HANDLERS.get('mkfs') : undefined);
  return handler ? handler(name, args, cmd, ctx) : null;
}

/** Judges the command a wrapper runs, remembering the wrapper for the message. */
function judgeInner(words: Word[], cmd: Simple, ctx: Ctx, via: string): Finding | null {
  return judgeSimple({ words, redirects: cmd.redirects }, { ...ctx, via: [...ctx.via, via] });
}

const blockName = (rule: string, what: string): Handler => (name, _args, _cmd, ctx) => found(ctx, rule, `${code(name)}${what}`);

// --- option parsing shared by the wrappers --------------------------------------------------

interface OptSpec {
  /** Short options, getopt style: `n:` takes a value, `e::` an optional attached one. */
  short?: string;
  /** Long options: `name`, `name=` (takes a value), `name=?` (optional `=value`). */
  long?: readonly string[];
  /** `su -` : a lone dash is an option. */
  dashIsOption?: boolean;
}

type Parsed = { options: Map<string, string | true>; operands: Word[] } | { unknown: Word };

/** Parses leading options, stopping at `--` or the first operand (the command a wrapper runs). */
function getopt(args: Word[], spec: OptSpec): Parsed {
  const options = new Map<string, string | true>();
  let i = 0;
  for (; i < args.length; i++) {
    const w = args[i]!;
    const t = w.text;
    if (w.opaque) return { unknown: w };
    if (t === '--') {
      i++;
      break;
    }
    if (t === '-' && spec.dashIsOption) continue;
    if (!t.startsWith('-') || t === '-') break;
    if (t.includes(DYN)) return { unknown: w };
    if (t.startsWith('--')) {
      const r = longOption(args, i, spec);
      if ('unknown' in r) return r;
      options.set(r.name, r.value);
      i = r.next;
      continue;
    }
    const r = shortCluster(args, i, spec);
    if ('unknown' in r) return r;
    r.found.forEach(([k, v]) => options.set(k, v));
    i = r.next;
  }
  return { options, operands: args.slice(i) };
}

function longOption(args: Word[], i: number, spec: OptSpec): { name: string; value: string | true; next: number } | { unknown: Word } {
  const w = args[i]!;
  const eq = w.text.indexOf('=');
  const given = w.text.slice(2, eq < 0 ? undefined : eq);
  const defs = (spec.long ?? []).map((d) => ({ name: d.replace(/=\??$/, ''), kind: d.endsWith('=?') ? 'optional' : d.endsWith('=') ? 'value' : 'flag' }));
  const exact = defs.find((d) => d.name === given);
  const prefixed = defs.filter((d) => d.name.startsWith(given));
  const def = exact ?? (given !== '' && prefixed.length === 1 ? prefixed[0] : undefined);
  if (!def) return { unknown: w };
  if (eq >= 0) return def.kind === 'flag' ? { unknown: w } : { name: def.name, value: w.text.slice(eq + 1), next: i };
  if (def.kind !== 'value') return { name: def.name, value: true, next: i };
  const v = args[i + 1];
  return v && !v.opaque ? { name: def.name, value: v.text, next: i + 1 } : { unknown: v ?? w };
}

function shortCluster(args: Word[], i: number, spec: OptSpec): { found: Array<[string, string | true]>; next: number } | { unknown: Word } {
  const w = args[i]!;
  const shortSpec = spec.short ?? '';
  const out: Array<[string, string | true]> = [];
  for (let j = 1; j < w.text.length; j++) {
    const letter = w.text[j]!;
    const at = shortSpec.indexOf(letter);
    if (at < 0 || letter === ':') return { unknown: w };
    const takesValue = shortSpec[at + 1] === ':';
    if (!takesValue) {
      out.push([letter, true]);
      continue;
    }
    const optional = shortSpec[at + 2] === ':';
    const attached = w.text.slice(j + 1);
    if (attached !== '' || optional) {
      out.push([letter, attached || true]);
      return { found: out, next: i };
    }
    const v = args[i + 1];
    if (!v || v.opaque) return { unknown: v ?? w };
    out.push([letter, v.text]);
    return { found: out, next: i + 1 };
  }
  return { found: out, next: i };
}

// --- wrappers: commands that run another command --------------------------------------------

interface WrapperDef {
  spec: OptSpec;
  /** Operands the wrapper takes before the command: timeout's duration, chroot's new root. */
  leading?: number;
  /** Options after which no command runs (`command -v` only looks a name up). */
  noCommandWith?: readonly string[];
}

const WRAPPERS: Record<string, WrapperDef> = {
  command: { spec: { short: 'pvV' }, noCommandWith: ['v', 'V'] },
  builtin: { spec: {} },
  exec: { spec: { short: 'cla:' } },
  nice: { spec: { short: 'n:0123456789', long: ['adjustment='] } },
  timeout: { spec: { short: 's:k:v', long: ['signal=', 'kill-after=', 'preserve-status', 'foreground', 'verbose'] }, leading: 1 },
  nohup: { spec: {} },
  stdbuf: { spec: { short: 'i:o:e:', long: ['input=', 'output=', 'error='] } },
  time: { spec: { short: 'pf:o:avq', long: ['format=', 'output=', 'append', 'verbose', 'portability', 'quiet'] } },
  ionice: { spec: { short: 'c:n:p:P:u:t', long: ['class=', 'classdata=', 'pid=', 'pgid=', 'uid=', 'ignore'] }, noCommandWith: ['p', 'P', 'u', 'pid', 'pgid', 'uid'] },
  setsid: { spec: { short: 'cfw', long: ['ctty', 'fork', 'wait'] } },
  chroot: { spec: { long: ['userspec=', 'groups=', 'skip-chdir'] }, leading: 1 },
  coproc: { spec: {} },
};

const judgeWrapper: Handler = (name, args, cmd, ctx) => {
  const def = WRAPPERS[name]!;
  const parsed = getopt(args, def.spec);
  if ('unknown' in parsed) return unknownOption(ctx, name, parsed.unknown);
  if (def.noCommandWith?.some((o) => parsed.options.has(o))) return null;
  return judgeInner(parsed.operands.slice(def.leading ?? 0), cmd, ctx, name);
};

/** `env [-i] [-u NAME] [NAME=VALUE]… COMMAND`, and `env -S 'COMMAND ARGS'` which splits a string. */
const judgeEnv: Handler = (name, args, cmd, ctx) => {
  const parsed = getopt(args, { short: 'iu:0C:S:vP:', long: ['ignore-environment', 'null', 'unset=', 'chdir=', 'split-string=', 'debug', 'default-signal=?', 'ignore-signal=?', 'block-signal=?', 'list-signal-handling'] });
  if ('unknown' in parsed) return unknownOption(ctx, name, parsed.unknown);
  let rest = parsed.operands;
  while (rest[0] && !rest[0].opaque && /^[A-Za-z_][A-Za-z0-9_]*=/.test(rest[0].text)) rest = rest.slice(1);
  const split = parsed.options.get('S') ?? parsed.options.get('split-string');
  if (typeof split === 'string') {
    if (split.includes(DYN) || !rest.every(isLiteral)) return found(ctx, DYNAMIC, '`env -S` with a command only known at run time');
    return judgeScript([split, ...rest.map((w) => w.text)].join(' '), ctx, 'env -S');
  }
  return judgeInner(rest, cmd, ctx, name);
};

/** `xargs CMD ARGS…` appends words read from stdin: they are unknown, so they join as an opaque word. */
const judgeXargs: Handler = (name, args, cmd, ctx) => {
  const parsed = getopt(args, {
    short: '0a:d:E:e::I:i::L:l::n:P:s:rtpxo',
    long: ['null', 'arg-file=', 'delimiter=', 'eof=?', 'replace=?', 'max-lines=?', 'max-args=', 'max-procs=', 'max-chars=', 'interactive', 'verbose', 'exit', 'no-run-if-empty', 'open-tty', 'process-slot-var=', 'show-limits'],
  });
  if ('unknown' in parsed) return unknownOption(ctx, name, parsed.unknown);
  const replaceOpt = parsed.options.get('I') ?? parsed.options.get('i') ?? parsed.options.get('replace');
  const inner = parsed.operands.length > 0 ? parsed.operands : [finishWord('echo', false, 'echo')];
  if (replaceOpt === undefined) return judgeInner([...inner, { ...opaqueWord(''), label: 'arguments read from stdin' }], cmd, ctx, name);
  // With -I each input line replaces the marker inside a word, which stays one word.
  const marker = replaceOpt === true ? '{}' : replaceOpt;
  return judgeInner(inner.map((w) => (marker !== '' && w.text.includes(marker) ? { ...w, text: w.text.split(marker).join(DYN) } : w)), cmd, ctx, name);
};

/** `busybox APPLET ARGS…` runs the applet. */
const judgeBusybox: Handler = (name, args, cmd, ctx) => {
  if (args[0] && !args[0].opaque && args[0].text.startsWith('-')) return null; // --list, --install, --help
  return judgeInner(args, cmd, ctx, name);
};

/** `watch [-n SECS] CMD…` runs its words through `sh -c` (or directly with `-x`). */
const judgeWatch: Handler = (name, args, cmd, ctx) => {
  const parsed = getopt(args, { short: 'n:d::tbegcxpwhvq:', long: ['interval=', 'differences=?', 'no-title', 'beep', 'errexit', 'chgexit', 'equexit=', 'exec', 'color', 'no-color', 'precise', 'no-wrap', 'no-linewrap', 'help', 'version'] });
  if ('unknown' in parsed) return unknownOption(ctx, name, parsed.unknown);
  if (parsed.options.has('x') || parsed.options.has('exec')) return judgeInner(parsed.operands, cmd, ctx, name);
  return judgeCode(name, parsed.operands, ctx, name);
};

/**
 * `find PATHS… -exec CMD… ;` and `-delete`. The `{}` of an exec is a found path; when a start
 * path is itself protected (`/`, a system tree, a home), `{}` stands for that path, since the
 * start path is among the results.
 */
const judgeFind: Handler = (name, args, cmd, ctx) => {
  let i = 0;
  while (args[i] && /^-([HLP]|O\d*|D)$/.test(args[i]!.text)) i += args[i]!.text === '-D' ? 2 : 1;
  const starts: Word[] = [];
  for (; i < args.length && !/^[-(!),]/.test(args[i]!.text); i++) starts.push(args[i]!);
  const protectedStarts = starts.filter((s) => !s.opaque && classifyPath(ifEmpty(s)) !== null && classifyPath(ifEmpty(s)) !== 'cwd');
  for (; i < args.length; i++) {
    const t = args[i]!.text;
    if (t === '-delete') {
      for (const s of protectedStarts) {
        const f = judgeInner([finishWord('rm', false, 'rm'), finishWord('-r', false, '-delete'), s], cmd, ctx, 'find -delete');
        if (f) return f;
      }
    }
    if (!['-exec', '-execdir', '-ok', '-okdir'].includes(t)) continue;
    const end = args.findIndex((w, j) => j > i && (w.text === ';' || w.text === '+'));
    const inner = args.slice(i + 1, end < 0 ? undefined : end);
    const fillings = protectedStarts.length > 0 ? protectedStarts : [null];
    for (const start of fillings) {
      const words = inner.map((w) => (start && w.text === '{}' ? start : w));
      const f = judgeInner(words, cmd, ctx, `find ${t}`);
      if (f) return f;
    }
    i = end < 0 ? args.length : end;
  }
  return null;
};

// --- shells and other ways to run text as code -------------------------------------------------

/** Joins literal words into shell code (`eval`, `watch`) and judges it. */
function judgeCode(name: string, words: Word[], ctx: Ctx, via: string): Finding | null {
  if (words.length === 0) return null;
  const unknown = words.find((w) => !isLiteral(w));
  if (unknown) return found(ctx, DYNAMIC, `${code(name)} runs ${code(unknown.source)}, code only known at run time`);
  return judgeScript(words.map((w) => w.text).join(' '), ctx, via);
}

/** `sh`, `bash`, `zsh`…: `-c BODY` is judged as shell; `-i` is an interactive shell; no script means stdin. */
const judgeShell: Handler = (name, args, cmd, ctx) => {
  let commandMode = false;
  let interactive = false;
  let fromStdin = false;
  let i = 0;
  for (; i < args.length; i++) {
    const w = args[i]!;
    if (w.opaque || (w.text.startsWith('-') && w.text.includes(DYN))) return unknownOption(ctx, name, w);
    if (w.text === '--' || w.text === '-') {
      i++;
      break;
    }
    if (w.text.startsWith('--')) {
      if (w.text === '--rcfile' || w.text === '--init-file') i++;
      if (w.text === '--interactive') interactive = true;
      continue;
    }
    if (!/^[-+][A-Za-z]+$/.test(w.text)) break;
    for (const letter of w.text.slice(1)) {
      if (letter === 'c') commandMode = true;
      if (letter === 'i') interactive = true;
      if (letter === 's') fromStdin = true;
      if (letter === 'o' || letter === 'O') i++; // `-o pipefail`
    }
  }
  const operands = args.slice(i);
  if (interactive) return found(ctx, 'bash-interactive', `${code(name + ' -i')} starts an interactive shell, the core of a reverse shell`);
  if (commandMode) {
    const body = operands[0];
    if (!body) return null;
    if (!isLiteral(body)) return found(ctx, DYNAMIC, `${code(name + ' -c')} runs ${code(body.source)}, a body only known at run time`);
    return judgeScript(body.text, ctx, `${name} -c`);
  }
  const script = operands[0];
  if (script && !fromStdin) {
    return script.procSub ? found(ctx, DYNAMIC, `${code(name)} runs ${code(script.source)}, a script generated at run time`) : null;
  }
  return judgeStdinScript(name, cmd, ctx);
};

function judgeStdinScript(name: string, cmd: Simple, ctx: Ctx): Finding | null {
  const stdin = stdinOf(cmd);
  if (stdin === 'file') return null; // `bash < build.sh` runs a file, like `bash build.sh`
  if (stdin === null) return found(ctx, DYNAMIC, `${code(name)} reads its commands from standard input, which the judge cannot see`);
  if ('unknown' in stdin) return found(ctx, DYNAMIC, `${code(name)} reads its commands from ${stdin.unknown}, only known at run time`);
  return judgeScript(stdin.script, ctx, `${name} <<`);
}

const judgeEval: Handler = (name, args, _cmd, ctx) => judgeCode(name, args, ctx, name);

/** `source FILE` runs a file; only a generated one (`source <(curl …)`) is unknowable. */
const judgeSource: Handler = (name, args, _cmd, ctx) => {
  const file = args.find((w) => !w.text.startsWith('-'));
  return file?.procSub || file?.opaque ? found(ctx, DYNAMIC, `${code(name)} runs ${code(file.source)}, a script generated at run time`) : null;
};

/** `alias NAME='CODE'` stores code that later runs as a command. */
const judgeAlias: Handler = (name, args, _cmd, ctx) => {
  for (const w of args) {
    const eq = w.text.indexOf('=');
    if (w.opaque || eq < 0) continue;
    const f = judgeCode(name, [{ ...w, text: w.text.slice(eq + 1) }], ctx, name);
    if (f) return f;
  }
  return null;
};

/** `trap 'CODE' SIGNALS…` runs CODE later. */
const judgeTrap: Handler = (name, args, _cmd, ctx) => {
  const operands = args[0]?.text === '--' ? args.slice(1) : args.filter((w) => !/^-[lp]$/.test(w.text));
  if (operands.length < 2 || operands[0]!.text === '-') return null;
  return judgeCode(name, [operands[0]!], ctx, name);
};

// --- privilege escalation ---------------------------------------------------------------------

interface EscalatorDef {
  rule: string;
  spec: OptSpec;
  /** The option whose value is shell code (`su -c CODE`). */
  codeOption?: readonly string[];
}

const ESCALATORS: Record<string, EscalatorDef> = {
  sudo: { rule: 'sudo', spec: { short: 'AbEeHiKklnPSsVvBNu:g:C:D:h:p:r:t:T:U:R:', long: ['user=', 'group=', 'login', 'shell', 'non-interactive', 'preserve-env=?', 'background', 'askpass', 'set-home', 'chdir=', 'chroot=', 'close-from=', 'prompt=', 'role=', 'type=', 'command-timeout=', 'other-user=', 'host='] } },
  sudoedit: { rule: 'sudo', spec: {} },
  doas: { rule: 'sudo', spec: { short: 'nsLu:C:' } },
  run0: { rule: 'sudo', spec: { short: 'u:g:', long: ['user=', 'group=', 'nice=', 'chdir=', 'setenv=', 'unit=', 'property=', 'description=', 'slice=', 'background=', 'machine=', 'no-ask-password'] } },
  su: { rule: 'su', spec: { short: 'mplfPTc:s:g:G:w:', long: ['command=', 'session-command=', 'shell=', 'login', 'preserve-environment', 'group=', 'supp-group=', 'pty', 'no-pty', 'whitelist-environment='], dashIsOption: true }, codeOption: ['c', 'command', 'session-command'] },
  pkexec: { rule: 'pkexec', spec: { long: ['user=', 'disable-internal-agent', 'keep-cwd', 'help', 'version'] } },
};

/** Escalation is blocked outright; what it would run is judged too, so the message can say it. */
const judgeEscalator: Handler = (name, args, cmd, ctx) => {
  const def = ESCALATORS[name]!;
  const parsed = getopt(args, def.spec);
  let inner: Finding | null = null;
  let runs = '';
  if (!('unknown' in parsed)) {
    const body = def.codeOption?.map((o) => parsed.options.get(o)).find((v) => typeof v === 'string');
    if (typeof body === 'string' && !body.includes(DYN)) {
      inner = judgeScript(body, ctx, null);
      runs = body;
    } else if (name !== 'su' && name !== 'sudoedit' && parsed.operands.length > 0) {
      inner = judgeInner(parsed.operands, cmd, ctx, name);
      runs = parsed.operands.map((w) => w.source).join(' ');
    }
  }
  const what = runs ? `${code(name)} runs ${code(runs)} as another user` : `${code(name)} escalates privileges`;
  const also = inner ? `, and that command is refused on its own too: ${inner.what.charAt(0).toLowerCase()}${inner.what.slice(1)}` : '';
  return found(ctx, def.rule, what + also);
};

// --- destructive: rm ---------------------------------------------------------------------------

const RM_RULE: Record<PathClass, string> = { root: 'rm-root', system: 'rm-system', home: 'rm-home', cwd: 'rm-cwd' };
const PLACE: Record<PathClass, string> = { root: 'the filesystem root', system: 'a system path', home: 'a home directory', cwd: 'the working directory or its parent' };

interface Flags {
  recursive: boolean;
  force: boolean;
  /** A flag word with run-time parts (`-$X`): it may mean anything. */
  unknownFlags: boolean;
  noPreserveRoot: boolean;
}

/** Reads rm/chmod/chown style flags from one word; returns false when the word is not an option. */
function readFlag(w: Word, flags: Flags, shortRecursive: RegExp, longNames: Record<string, keyof Flags>): boolean {
  const t = w.text;
  if (!t.startsWith('-') || t === '-' || t === '--') return false;
  if (t.includes(DYN)) {
    flags.unknownFlags = true;
    return true;
  }
  if (t.startsWith('--')) {
    const given = t.slice(2).split('=')[0]!;
    const matches = Object.keys(longNames).filter((n) => given !== '' && n.startsWith(given));
    const key = longNames[given] ?? (matches.length === 1 ? longNames[matches[0]!] : undefined);
    if (key) flags[key] = true;
    return true;
  }
  if (shortRecursive.test(t)) flags.recursive = true;
  if (/f/.test(t)) flags.force = true;
  return true;
}

/** The protected place a target names, also when its run-time parts are empty (`"$DIR/"` is `/`). */
function describeTarget(t: Word, cls: PathClass): string {
  const empty = ifEmpty(t);
  const note = t.text.includes(DYN) ? `, which is ${code(empty)} when its variables are empty` : '';
  return `${code(t.source)} (${PLACE[cls]}${note})`;
}

const judgeRm: Handler = (name, args, _cmd, ctx) => {
  const flags: Flags = { recursive: false, force: false, unknownFlags: false, noPreserveRoot: false };
  const targets: Word[] = [];
  /** Words that may be flags or targets: a quoted `"$X"` could hold `-r`. */
  const maybeFlags: Word[] = [];
  let opaque: Word | null = null;
  let endOfOptions = false;
  for (const w of args) {
    if (w.opaque) {
      opaque ??= w;
      if (!endOfOptions) flags.unknownFlags = true; // may expand to `-rf /`
      continue;
    }
    if (!endOfOptions && w.text === '--') {
      endOfOptions = true;
      continue;
    }
    if (!endOfOptions && readFlag(w, flags, /[rR]/, { recursive: 'recursive', force: 'force', 'no-preserve-root': 'noPreserveRoot' })) continue;
    if (!endOfOptions && w.text.startsWith(DYN)) maybeFlags.push(w);
    targets.push(w);
  }
  if (flags.noPreserveRoot) return found(ctx, 'rm-root', `${code(name)} with ${code('--no-preserve-root')} turns off the guard against deleting ${code('/')}`);
  for (const t of targets) {
    const recursive = flags.recursive || flags.unknownFlags || maybeFlags.some((m) => m !== t);
    const how = flags.recursive ? (flags.force ? ' with recursive+force' : ' with recursive') : recursive ? ' with flags that may be recursive' : '';
    const empty = ifEmpty(t);
    if (empty === '' && recursive) return found(ctx, DYNAMIC, `${code(name)}${how} on ${code(t.source)}, a target only known at run time`);
    const cls = classifyPath(empty);
    if (!cls) continue;
    // Root and system paths are refused outright; home and cwd only when the delete is recursive.
    if (cls === 'root' || cls === 'system' || recursive) return found(ctx, RM_RULE[cls], `${code(name)}${how} on ${describeTarget(t, cls)}`);
  }
  if (opaque) return found(ctx, DYNAMIC, `${code(name)} with ${show(opaque)}, which may expand to any flags or paths at run time`);
  return null;
};

// --- permission changes: chmod, chown ----------------------------------------------------------

/** Does a chmod mode leave everyone else able to write and execute (the danger of 777)? null: not a mode. */
function grantsWorldWriteExec(mode: string): boolean | null {
  if (/^[0-7]{1,4}$/.test(mode)) return (parseInt(mode.slice(-1), 8) & 3) === 3;
  const clauses = mode.split(',');
  if (!clauses.every((c) => /^[ugoa]*([-+=]([ugo]|[rwxXst]*))+$/.test(c))) return null;
  let write = false;
  let exec = false;
  for (const clause of clauses) {
    const who = /^[ugoa]*/.exec(clause)![0];
    // No `who` means all, less the umask, which the judge cannot know: assume it lets it through.
    if (who !== '' && !/[ao]/.test(who)) continue;
    for (const [, op, perms] of clause.slice(who.length).matchAll(/([-+=])([ugo]|[rwxXst]*)/g)) {
      const copies = /^[ugo]$/.test(perms!); // `o=u` copies another class: assume it has everything
      const w = copies || perms!.includes('w');
      const x = copies || /[xX]/.test(perms!);
      if (op === '=') [write, exec] = [w, x];
      else if (op === '+') [write, exec] = [write || w, exec || x];
      else [write, exec] = [write && !w, exec && !x];
    }
  }
  return write && exec;
}

const isChmodMode = (t: string): boolean => grantsWorldWriteExec(t) !== null;

const judgeChmod: Handler = (name, args, _cmd, ctx) => {
  const flags: Flags = { recursive: false, force: false, unknownFlags: false, noPreserveRoot: false };
  let mode: Word | null = null;
  let reference = false;
  const targets: Word[] = [];
  let endOfOptions = false;
  for (const w of args) {
    if (w.opaque) return found(ctx, DYNAMIC, `${code(name)} with ${show(w)}, which may expand to any mode or paths at run time`);
    if (!endOfOptions && w.text === '--') {
      endOfOptions = true;
      continue;
    }
    if (!endOfOptions && /^--ref/.test(w.text)) reference = true;
    const modeLike = mode === null && !reference && isChmodMode(w.text); // `-x` and `-rwx` are modes
    if (!endOfOptions && !modeLike && readFlag(w, flags, /R/, { recursive: 'recursive' })) continue;
    if (mode === null && !reference) mode = w;
    else targets.push(w);
  }
  if (mode && mode.text.includes(DYN)) return found(ctx, DYNAMIC, `${code(name)} with the mode ${code(mode.source)}, only known at run time`);
  if (mode && grantsWorldWriteExec(mode.text)) {
    const on = targets.map((t) => t.source).join(' ');
    return found(ctx, 'chmod-777', `${code(name + ' ' + mode.source)} lets everyone write and execute ${on ? code(on) : 'the files'}`);
  }
  return systemTargets(name, targets, flags.recursive || flags.unknownFlags, 'chmod-system', ctx);
};

/** chown/chgrp OWNER FILE…: refused on `/` and system paths. */
const judgeChown: Handler = (name, args, _cmd, ctx) => {
  const flags: Flags = { recursive: false, force: false, unknownFlags: false, noPreserveRoot: false };
  const operands: Word[] = [];
  let reference = false;
  let endOfOptions = false;
  for (const w of args) {
    if (w.opaque) return found(ctx, DYNAMIC, `${code(name)} with ${show(w)}, which may expand to any owner or paths at run time`);
    if (!endOfOptions && w.text === '--') {
      endOfOptions = true;
      continue;
    }
    if (!endOfOptions && /^--ref/.test(w.text)) reference = true;
    if (!endOfOptions && readFlag(w, flags, /R/, { recursive: 'recursive' })) continue;
    operands.push(w);
  }
  return systemTargets(name, reference ? operands : operands.slice(1), flags.recursive || flags.unknownFlags, 'chown-system', ctx);
};

function systemTargets(name: string, targets: Word[], recursive: boolean, rule: string, ctx: Ctx): Finding | null {
  for (const t of targets) {
    const empty = ifEmpty(t);
    if (empty === '' && recursive) return found(ctx, DYNAMIC, `${code(name)} with recursive on ${code(t.source)}, a target only known at run time`);
    const cls = classifyPath(empty);
    if (cls === 'root' || cls === 'system') return found(ctx, rule, `${code(name)}${recursive ? ' with recursive' : ''} on ${describeTarget(t, cls)}`);
  }
  return null;
}

// --- reverse shells ------------------------------------------------------------------------------

const judgeNetcat: Handler = (name, args, _cmd, ctx) => {
  const exec = args.find((w) => !w.opaque && (/^--(exec|sh-exec|lua-exec)(=|$)/.test(w.text) || /^-[A-Za-z0-9]*[ec]/.test(w.text)));
  return exec ? found(ctx, 'nc-exec', `${code(name + ' ' + exec.source)} wires a program to a network socket, a reverse shell`) : null;
};

const judgeSocat: Handler = (name, args, _cmd, ctx) => {
  const exec = args.find((w) => /(^|[,!])\s*(exec|system):/i.test(w.text));
  return exec ? found(ctx, 'nc-exec', `${code(name)} with the address ${code(exec.source)} wires a program to a network socket, a reverse shell`) : null;
};

const judgeMknod: Handler = (name, args, _cmd, ctx) =>
  args.some((w) => w.text === 'p') ? found(ctx, 'mkfifo', `${code(name + ' … p')} creates a named pipe, the plumbing of a reverse shell`) : null;

// --- system control ------------------------------------------------------------------------------

const POWER_VERBS: Record<string, string> = {
  poweroff: 'poweroff', reboot: 'reboot', 'soft-reboot': 'reboot', kexec: 'reboot', halt: 'halt',
  suspend: 'shutdown', hibernate: 'shutdown', 'hybrid-sleep': 'shutdown', 'suspend-then-hibernate': 'shutdown',
  rescue: 'shutdown', emergency: 'shutdown',
};
const START_VERBS = new Set(['start', 'isolate', 'restart', 'try-restart', 'reload-or-restart']);

/** `systemctl poweroff`, `systemctl isolate reboot.target`, `loginctl reboot`. */
const judgeSystemctl: Handler = (name, args, _cmd, ctx) => {
  const operands: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const t = args[i]!.text;
    if (/^-[HMtpsnoP]$/.test(t)) i++; // an option that takes the next word as its value
    else if (!t.startsWith('-')) operands.push(t.toLowerCase());
  }
  const [verb, ...units] = operands;
  if (verb === undefined) return null;
  const direct = POWER_VERBS[verb];
  if (direct) return found(ctx, direct, `${code(name + ' ' + verb)} takes the machine down`);
  const unit = START_VERBS.has(verb) ? units.find((u) => POWER_VERBS[u.replace(/\.target$/, '')] && u.endsWith('.target')) : undefined;
  return unit ? found(ctx, POWER_VERBS[unit.replace(/\.target$/, '')]!, `${code(`${name} ${verb} ${unit}`)} takes the machine down`) : null;
};

const RUNLEVELS: Record<string, string> = { '0': 'poweroff', '6': 'reboot', '1': 'shutdown', s: 'shutdown', S: 'shutdown', single: 'shutdown' };

const judgeInit: Handler = (name, args, _cmd, ctx) => {
  const level = args.find((w) => !w.text.startsWith('-'))?.text;
  const rule = level === undefined ? undefined : RUNLEVELS[level];
  return rule ? found(ctx, rule, `${code(name + ' ' + level)} switches the machine to runlevel ${level}`) : null;
};

const DISKUTIL_ERASE = /^(erasedisk|erasevolume|reformat|partitiondisk|zerodisk|randomdisk|secureerase|erasecd|splitpartition|mergepartitions)$/i;
const judgeDiskutil: Handler = (name, args, _cmd, ctx) => {
  const verb = args.find((w) => DISKUTIL_ERASE.test(w.text));
  return verb ? found(ctx, 'format', `${code(name + ' ' + verb.source)} erases or repartitions a disk`) : null;
};

// --- the table ------------------------------------------------------------------------------------

const HANDLERS = new Map<string, Handler>();
const register = (names: readonly string[], handler: Handler): void => names.forEach((n) => HANDLERS.set(n, handler));

register(['rm'], judgeRm);
register(['dd'], blockName('dd', ' copies raw blocks and can overwrite a whole disk'));
register(['mkfs', 'mke2fs', 'mkswap', 'wipefs', 'mkdosfs', 'mkntfs', 'mkexfatfs'], blockName('mkfs', ' creates or wipes a filesystem'));
register(['format'], blockName('format', ' formats a disk'));
register(['diskutil'], judgeDiskutil);
register(['fdisk', 'sfdisk', 'cfdisk', 'gdisk', 'sgdisk', 'cgdisk'], blockName('fdisk', ' edits a disk\'s partition table'));
register(['parted', 'gparted'], blockName('parted', ' edits a disk\'s partitions'));
register(['chmod'], judgeChmod);
register(['chown', 'chgrp'], judgeChown);
register(Object.keys(ESCALATORS), judgeEscalator);
register(['nc', 'ncat', 'netcat', 'nc.traditional', 'nc.openbsd'], judgeNetcat);
register(['socat'], judgeSocat);
register(['mkfifo'], blockName('mkfifo', ' creates a named pipe, the plumbing of a reverse shell'));
register(['mknod'], judgeMknod);
register(['shutdown'], blockName('shutdown', ' takes the machine down'));
register(['reboot'], blockName('reboot', ' restarts the machine'));
register(['halt'], blockName('halt', ' halts the machine'));
register(['poweroff'], blockName('poweroff', ' powers the machine off'));
register(['systemctl', 'loginctl'], judgeSystemctl);
register(['init', 'telinit'], judgeInit);
register(Object.keys(WRAPPERS), judgeWrapper);
register(['env'], judgeEnv);
register(['xargs'], judgeXargs);
register(['busybox'], judgeBusybox);
register(['watch'], judgeWatch);
register(['find'], judgeFind);
register(['sh', 'bash', 'rbash', 'zsh', 'dash', 'ksh', 'mksh', 'ash', 'yash', 'posh'], judgeShell);
register(['eval'], judgeEval);
register(['source', '.'], judgeSource);
register(['alias'], judgeAlias);
register(['trap'], judgeTrap);

// ---------------------------------------------------------------------------------------------

/** Judges shell commands before they run; see the module comment for what it refuses and why. */
export class CommandJudge {
  async judge(command: string): Promise<CommandVerdict> {
    if (command.trim() === '') return { verdict: 'blocked', rule: EMPTY, reason: 'The command is empty: there is nothing to run.' };
    if (/[\u0000\u0001]/.test(command)) return { verdict: 'blocked', rule: UNPARSEABLE, reason: 'The command contains NUL or control characters that a shell command cannot hold.' };
    let parser: Parser;
    try {
      parser = await loadParser();
    } catch (err) {
      return { verdict: 'blocked', rule: UNPARSEABLE, reason: `The shell parser could not be loaded (${(err as Error).message}), so nothing can be checked.` };
    }
    try {
      const finding = judgeScript(command, { parser, via: [], depth: 0 }, null);
      if (finding) return { verdict: 'blocked', rule: finding.rule, reason: reasonOf(finding) };
      return { verdict: 'allowed', rule: null, reason: 'No rule matched any command in it.' };
    } catch (err) {
      // A judge that trips over its input must not let the input through.
      return { verdict: 'blocked', rule: UNPARSEABLE, reason: `The command could not be analysed (${(err as Error).message}).` };
    }
  }
}
