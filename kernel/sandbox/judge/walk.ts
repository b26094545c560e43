/**
 * Walking the parsed command. Every simple command is judged, wherever it sits: lists, pipelines,
 * subshells, groups, substitutions, if/while/for/case bodies, function bodies. The walk keeps the
 * scope a command runs in (where `cd` may have taken it, what the command assigned), because
 * `cd / && rm -rf usr` and `x='a[$(reboot)]'; echo $((x))` are only dangerous in context.
 */
import type { Node } from 'web-tree-sitter';
import { childScope, DYNAMIC, found, lookupIn, settle, through, UNPARSEABLE, type Ctx, type Finding, type Scope, type Simple } from './context.js';
import { envAssignment } from './env-vars.js';
import { forkBomb, recordCall } from './fork-bomb.js';
import { kernelStateWords } from './kernel-state-rule.js';
import { noteNetwork } from './network.js';
import { judgeRedirects, redirectDestinations } from './redirects.js';
import { handlerFor, isWrapper } from './registry.js';
import { inputRedirectWords, noteSecrets, noteSecretWords } from './secrets.js';
import { assign, checkArithmeticNode, checkExpansion, checkNameArg, infoOf } from './variables.js';
import { code, DYN, isLiteral, show, wordsOf, type Word } from './words.js';

/** How many shells-within-shells (`bash -c`, `eval`, heredocs…) the judge follows before refusing. */
const MAX_DEPTH = 8;

/** Every node type of the bash grammar the walker understands; anything else is refused. */
const KNOWN_TYPES = new Set([
  'program',
  'comment',
  'command',
  'command_name',
  'variable_assignment',
  'variable_assignments',
  'variable_name',
  'special_variable_name',
  'word',
  'number',
  'string',
  'string_content',
  'raw_string',
  'ansi_c_string',
  'translated_string',
  'concatenation',
  'simple_expansion',
  'expansion',
  'command_substitution',
  'process_substitution',
  'arithmetic_expansion',
  'brace_expression',
  'list',
  'pipeline',
  'subshell',
  'compound_statement',
  'redirected_statement',
  'file_redirect',
  'file_descriptor',
  'heredoc_redirect',
  'heredoc_start',
  'heredoc_body',
  'heredoc_content',
  'heredoc_end',
  'herestring_redirect',
  'if_statement',
  'elif_clause',
  'else_clause',
  'while_statement',
  'for_statement',
  'c_style_for_statement',
  'do_group',
  'case_statement',
  'case_item',
  'function_definition',
  'negated_command',
  'test_command',
  'test_operator',
  'declaration_command',
  'unset_command',
  'array',
  'subscript',
  'binary_expression',
  'unary_expression',
  'ternary_expression',
  'postfix_expression',
  'parenthesized_expression',
  'extglob_pattern',
  'regex',
]);

// ---------------------------------------------------------------------------------------------
// Parsing a piece of shell text.

/**
 * Bash drops a backslash-newline everywhere but inside single quotes, `$'…'`, comments and quoted
 * heredocs, joining the two halves of a word (`re\⏎boot` is `reboot`); tree-sitter splits the word
 * there instead. So the joins are made first, outside the places the first parse says keep them.
 */
function joinContinuations(text: string, ctx: Ctx): string {
  if (!text.includes('\\\n')) return text;
  const tree = ctx.run.parser.parse(text);
  if (!tree) return text;
  const keep: Array<[number, number]> = [];
  try {
    const stack: Node[] = [tree.rootNode];
    while (stack.length > 0) {
      const n = stack.pop()!;
      const quotedHeredoc = n.type === 'heredoc_body' && /['"\\]/.test(n.parent?.namedChildren.find((c) => c?.type === 'heredoc_start')?.text ?? '');
      if (n.type === 'raw_string' || n.type === 'ansi_c_string' || n.type === 'comment' || quotedHeredoc) keep.push([n.startIndex, n.endIndex]);
      else for (const c of n.children) if (c) stack.push(c);
    }
  } finally {
    tree.delete();
  }
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const range = keep.find(([s, e]) => i >= s && i < e);
    if (range) {
      out += text.slice(i, range[1]);
      i = range[1] - 1;
    } else if (text[i] === '\\' && text[i + 1] === '\n') i++;
    else if (text[i] === '\\') out += text[i] + (text[++i] ?? '');
    else out += text[i];
  }
  return out;
}

/** Parses and walks a piece of shell text: the whole command, or a body handed to `bash -c`. */
export function judgeScript(text: string, ctx: Ctx, via: string | null, scope?: Scope): Finding | null {
  const inner: Ctx = via === null ? ctx : { ...through(ctx, via), depth: ctx.depth + 1, scope: scope ?? childScope(ctx.scope) };
  if (inner.depth > MAX_DEPTH) return found(inner, UNPARSEABLE, `The command nests shells more than ${MAX_DEPTH} levels deep`);
  const tree = ctx.run.parser.parse(joinContinuations(text, inner));
  if (!tree) return found(inner, UNPARSEABLE, 'The shell parser produced no tree for the command');
  try {
    if (tree.rootNode.hasError) {
      const problem = firstProblem(tree.rootNode);
      const where = problem
        ? ` at character ${problem.startIndex + 1}${problem.isMissing ? ` (a ${code(problem.type)} is missing)` : ` (${code(problem.text || problem.type)})`}`
        : '';
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
// Walking the tree.

function visitChildren(node: Node, ctx: Ctx): Finding | null {
  for (const child of node.namedChildren) {
    // A statement followed by `&` runs in the background, concurrently with what follows.
    const f = child && visit(child, child.nextSibling?.type === '&' && !ctx.concurrent ? { ...ctx, concurrent: true } : ctx);
    if (f) return f;
  }
  return null;
}

/** Visits a node; an ask finding is recorded and the walk goes on, a blocked one stops it. */
function visit(node: Node, ctx: Ctx): Finding | null {
  return settle(visitNode(node, ctx), ctx);
}

function visitNode(node: Node, ctx: Ctx): Finding | null {
  switch (node.type) {
    case 'command':
      return visitCommand(node, [], ctx);
    case 'redirected_statement':
      return visitRedirected(node, ctx);
    case 'pipeline':
      return visitPipeline(node, ctx);
    case 'subshell':
      return visitChildren(node, { ...ctx, scope: childScope(ctx.scope) });
    case 'command_substitution':
    case 'process_substitution':
      // Their output is read by the command around them, not by the caller.
      return visitChildren(node, { ...ctx, scope: childScope(ctx.scope), feeds: true });
    case 'function_definition':
      return visitFunction(node, ctx);
    case 'while_statement':
    case 'for_statement':
    case 'c_style_for_statement':
      return visitLoop(node, ctx);
    case 'variable_assignment':
      return visitAssignment(node, ctx, true);
    case 'declaration_command':
      return visitDeclaration(node, ctx);
    case 'unset_command':
      return (
        visitChildren(node, ctx) ??
        nameArgs(
          node.namedChildren.filter((c): c is Node => !!c && !/^-/.test(c.text)),
          ctx,
          'unset',
        )
      );
    case 'test_command':
      return settle(visitTest(node, ctx), ctx) ?? visitChildren(node, ctx);
    case 'arithmetic_expansion':
      return settle(checkArithmeticNode(node, ctx, `The arithmetic ${code(node.text)}`), ctx) ?? visitChildren(node, ctx);
    case 'compound_statement':
      if (node.child(0)?.type === '((') return settle(checkArithmeticNode(node, ctx, `The arithmetic ${code(node.text)}`), ctx) ?? visitChildren(node, ctx);
      return visitChildren(node, ctx);
    case 'expansion':
      return settle(checkExpansion(node, ctx), ctx) ?? visitChildren(node, ctx);
    case 'subscript': {
      const index = node.childForFieldName('index');
      return (
        settle(index && !/^[@*]$/.test(index.text) ? checkArithmeticNode(index, ctx, `The subscript ${code(node.text)}`) : null, ctx) ??
        visitChildren(node, ctx)
      );
    }
    default:
      if (!KNOWN_TYPES.has(node.type))
        return found(ctx, UNPARSEABLE, `The command uses ${code(node.text)}, a construct (${node.type}) the judge cannot reason about`);
      return visitChildren(node, ctx);
  }
}

/** Each command of a pipeline runs in its own subshell; all but the first read a pipe. */
function visitPipeline(node: Node, ctx: Ctx): Finding | null {
  let first = true;
  const members = node.namedChildren.filter((c): c is Node => c !== null && c.type !== 'comment');
  for (const child of node.namedChildren) {
    if (!child) continue;
    const last = child === members.at(-1);
    const inner: Ctx = {
      ...ctx,
      scope: childScope(ctx.scope),
      piped: ctx.piped || !first,
      feeds: ctx.feeds || !last,
      concurrent: ctx.concurrent || members.length > 1,
    };
    first = false;
    const f = visit(child, inner);
    if (f) return f;
  }
  return null;
}

/** A loop may run its body any number of times: a `cd` in it leaves the directory unknown. */
function visitLoop(node: Node, ctx: Ctx): Finding | null {
  const before = ctx.scope.cwd;
  let f: Finding | null;
  if (node.type === 'for_statement') {
    const variable = node.childForFieldName('variable');
    const values = node.childrenForFieldName('value');
    for (const v of values) {
      const g = visit(v, ctx);
      if (g) return g;
    }
    const words = values.flatMap((v) => wordsOf(v, lookupIn(ctx.scope)));
    // Without `in`, the loop walks "$@". With several values, none of them can stand for the variable.
    const info =
      values.length === 0
        ? { value: null, taint: false, runtime: true, evaluates: false }
        : { ...infoOf(words), value: words.length === 1 && words[0] && isLiteral(words[0]) ? words[0].text : null };
    if (variable) ctx.scope.vars.set(variable.text, info);
    const body = node.childForFieldName('body');
    f = body ? visit(body, ctx) : null;
  } else {
    // `for ((init; cond; step))`: all three are arithmetic.
    for (const part of node.type === 'c_style_for_statement' ? node.namedChildren : []) {
      if (!part || part.type === 'do_group' || part.type === 'compound_statement') continue;
      const g = settle(checkArithmeticNode(part, ctx, `The loop header ${code(part.text)}`), ctx);
      if (g) return g;
    }
    f = visitChildren(node, ctx);
  }
  if (ctx.scope.cwd !== before) unsettle(ctx.scope);
  return f;
}

/** After a loop or function that changed directory, where the command is (and was) is unknown. */
function unsettle(scope: Scope): void {
  scope.cwd = null;
  scope.oldpwd = null;
}

/**
 * A function body runs whenever it is called: judged where defined; a `cd` in it unsettles the
 * directory. The calls it makes are recorded, so a cycle of concurrent calls is a fork bomb.
 */
function visitFunction(node: Node, ctx: Ctx): Finding | null {
  const nameNode = node.childForFieldName('name');
  const name = nameNode ? wordsOf(nameNode)[0]?.text : undefined;
  if (name !== undefined) ctx.run.functions.set(name, new Map());
  const inner: Ctx = { ...ctx, scope: childScope(ctx.scope), fn: name, concurrent: false, feeds: false };
  const g = visitChildren(node, inner);
  if (inner.scope.cwd !== ctx.scope.cwd) unsettle(ctx.scope);
  if (g) return g;
  return name !== undefined ? forkBomb(name, inner) : null;
}

/** `NAME=VALUE` as a statement (recorded) or before a command (only that command's environment). */
function visitAssignment(node: Node, ctx: Ctx, record: boolean): Finding | null {
  const nested = visitChildren(node, ctx);
  if (nested) return nested;
  const nameNode = node.childForFieldName('name');
  const value = node.childForFieldName('value');
  const name = nameNode?.type === 'subscript' ? nameNode.childForFieldName('name')?.text : nameNode?.text;
  if (!name) return null;
  const words = value
    ? value.type === 'array'
      ? value.namedChildren.flatMap((c) => (c ? wordsOf(c, lookupIn(ctx.scope)) : []))
      : wordsOf(value, lookupIn(ctx.scope), false)
    : [];
  const f = kernelStateWords(words, ctx, `The value of ${code(name)},`) ?? settle(envAssignment(name, words, ctx, judgeScript), ctx);
  if (f) return f;
  if (!record) return null;
  const append = node.children.some((c) => c?.type === '+=');
  return assign(name, value?.type === 'array' ? [] : words, ctx, { append });
}

/** `declare`, `typeset`, `local`, `export`, `readonly`: names with subscripts, `-i` and `-n` evaluate. */
function visitDeclaration(node: Node, ctx: Ctx): Finding | null {
  const keyword = node.child(0)?.text ?? 'declare';
  let evaluates = false;
  for (const c of node.namedChildren) {
    if (!c) continue;
    if (c.type === 'word' && /^[-+]/.test(c.text)) {
      if (c.text.startsWith('-') && /[in]/.test(c.text)) evaluates = true;
      continue;
    }
    if (c.type === 'variable_assignment') {
      const nested = visitChildren(c, ctx);
      if (nested) return nested;
      const nameNode = c.childForFieldName('name');
      const name = nameNode?.type === 'subscript' ? nameNode.childForFieldName('name')?.text : nameNode?.text;
      const value = c.childForFieldName('value');
      const words = value && value.type !== 'array' ? wordsOf(value, lookupIn(ctx.scope), false) : [];
      const f =
        kernelStateWords(words, ctx, `The value of ${code(name ?? '')},`) ??
        settle(envAssignment(name ?? '', words, ctx, judgeScript), ctx) ??
        (name ? assign(name, words, ctx, { evaluates, where: `${code(keyword)} of ${code(c.text)}` }) : null);
      if (f) return f;
      continue;
    }
    if (c.type === 'variable_name') {
      const v = ctx.scope.vars.get(c.text);
      if (evaluates) ctx.scope.vars.set(c.text, { ...(v ?? { value: null, taint: false, runtime: false }), evaluates: true });
      continue;
    }
    const nested = visit(c, ctx);
    if (nested) return nested;
    for (const w of wordsOf(c, lookupIn(ctx.scope))) {
      const f = checkNameArg(w, ctx, keyword);
      if (f) return f;
      const eq = w.text.indexOf('=');
      if (eq > 0 && !w.opaque) {
        const name = w.text
          .slice(0, eq)
          .replace(/\[[\s\S]*$/, '')
          .replace(/\+$/, '');
        const g = assign(name, [{ ...w, text: w.text.slice(eq + 1) }], ctx, { evaluates, where: `${code(keyword)} of ${code(w.source)}` });
        if (g) return g;
      }
    }
  }
  return null;
}

/** Names handed to a builtin (`unset`, `read`…) as nodes. */
function nameArgs(nodes: Node[], ctx: Ctx, builtin: string): Finding | null {
  for (const n of nodes) {
    for (const w of wordsOf(n, lookupIn(ctx.scope))) {
      const f = checkNameArg(w, ctx, builtin);
      if (f) return f;
    }
  }
  return null;
}

/** `[[ -v NAME ]]` evaluates a subscript in NAME; `[[ A -eq B ]]` evaluates A and B as arithmetic. */
function visitTest(node: Node, ctx: Ctx): Finding | null {
  const stack: Node[] = [node];
  while (stack.length > 0) {
    const n = stack.pop()!;
    const op = n.childForFieldName('operator')?.text ?? n.namedChildren.find((c) => c?.type === 'test_operator')?.text;
    if (n.type === 'unary_expression' && op === '-v') {
      const f = nameArgs(
        n.namedChildren.filter((c): c is Node => !!c && c.type !== 'test_operator'),
        ctx,
        '[[ -v',
      );
      if (f) return f;
    }
    if (n.type === 'binary_expression' && op && /^-(eq|ne|lt|le|gt|ge)$/.test(op)) {
      for (const side of [n.childForFieldName('left'), n.childForFieldName('right')]) {
        const f = side ? checkArithmeticNode(side, ctx, `The comparison ${code(n.text)}`) : null;
        if (f) return f;
      }
    }
    for (const c of n.namedChildren) if (c) stack.push(c);
  }
  return null;
}

/** A statement with redirects: when its body is a simple command, the redirects are its own. */
function visitRedirected(node: Node, ctx: Ctx): Finding | null {
  const body = node.childForFieldName('body');
  const redirects = node.childrenForFieldName('redirect');
  for (const r of redirects) {
    const g = visit(r, ctx); // substitutions inside the redirects
    if (g) return g;
  }
  if (body?.type === 'command') return visitCommand(body, redirects, ctx);
  noteSecretWords(body?.text ?? '', inputRedirectWords(redirects, ctx), ctx);
  const readsStdin = redirects.some((r) => r.type !== 'file_redirect' || /^0?<[^<]?/.test(r.text.replace(/^\s+/, '')));
  const f = body ? visit(body, readsStdin ? { ...ctx, piped: true } : ctx) : null;
  if (f) return f;
  const targets = redirects.flatMap((r) => redirectDestinations(r, ctx));
  return kernelStateWords(targets, ctx, 'The redirect target') ?? judgeRedirects(redirects, ctx, null);
}

function visitCommand(node: Node, outerRedirects: Node[], ctx: Ctx): Finding | null {
  const own: Node[] = [];
  // What runs first: substitutions inside the words, the prefix assignments, the redirects.
  for (const c of node.namedChildren) {
    if (!c) continue;
    const f = c.type === 'variable_assignment' ? visitAssignment(c, ctx, false) : visit(c, ctx);
    if (f) return f;
    if (/redirect$/.test(c.type)) own.push(c);
  }
  const nameNode = node.childForFieldName('name');
  const redirects = [...own, ...outerRedirects];
  const env = new Map<string, Word[]>();
  for (const c of node.namedChildren) {
    if (c?.type !== 'variable_assignment') continue;
    const value = c.childForFieldName('value');
    env.set(c.childForFieldName('name')?.text ?? '', value ? wordsOf(value, lookupIn(ctx.scope), false) : []);
  }
  if (!nameNode) {
    const targets = redirects.flatMap((r) => redirectDestinations(r, ctx));
    return kernelStateWords(targets, ctx, 'The redirect target') ?? judgeRedirects(redirects, ctx, null);
  }
  if (nameNode.namedChildCount !== 1) return found(ctx, UNPARSEABLE, `The command name ${code(nameNode.text)} has a shape the judge cannot reason about`);
  const vars = lookupIn(ctx.scope);
  const words = wordsOf(nameNode.namedChild(0)!, vars);
  const args = node.childrenForFieldName('argument');
  args.forEach((arg, i) => {
    // `$"…"` (a translated string) arrives as a `$` token followed by the string: one word.
    const next = args[i + 1];
    if (!arg.isNamed && arg.type === '$' && next && next.startIndex === arg.endIndex) return;
    words.push(...wordsOf(arg, vars));
  });
  const cmd: Simple = { words, redirects, piped: !!ctx.piped, env };
  const targets = redirects.flatMap((r) => redirectDestinations(r, ctx));
  return (
    kernelStateWords(pathLikeWords(words), ctx, `The word`) ??
    kernelStateWords(targets, ctx, 'The redirect target') ??
    settle(judgeRedirects(redirects, ctx, cmd), ctx) ??
    judgeSimple(cmd, ctx)
  );
}

// ---------------------------------------------------------------------------------------------
// Simple commands.

/** Programs whose first operand is a search pattern, not a path (unless -e/-f give the pattern). */
const PATTERN_FIRST = new Set(['grep', 'egrep', 'fgrep', 'rg', 'ag', 'ack', 'zgrep']);
/** Programs that only print their arguments: a word there names nothing (a redirect is judged apart). */
const PRINTERS = new Set(['echo', 'printf']);

/**
 * The words of a simple command that may name files, for the kernel-state rule: with the data folder
 * inside the root, `grep -rn data src` or `echo data` would otherwise be refused for the word `data`.
 */
function pathLikeWords(words: readonly Word[]): readonly Word[] {
  const first = words[0];
  const program = first ? programName(first) : null;
  if (first === undefined || program === null) return words;
  if (PRINTERS.has(program)) return words.slice(0, 1);
  if (!PATTERN_FIRST.has(program)) return words;
  const rest = words.slice(1);
  if (rest.some((w) => /^(-[A-Za-z]*[ef]|--regexp|--file)/.test(w.text))) return words;
  const pattern = rest.findIndex((w) => w.text === '--' || !w.text.startsWith('-'));
  if (pattern < 0) return words;
  const at = rest[pattern]?.text === '--' ? pattern + 1 : pattern;
  return [first, ...rest.filter((_, i) => i !== at)];
}

/** The program a command name runs: its basename, lower-cased (case-insensitive filesystems), or null. */
export function programName(w: Word): string | null {
  if (w.opaque || w.glob) return null;
  const base = w.text.slice(w.text.lastIndexOf('/') + 1);
  if (base === '' || base.includes(DYN)) return null;
  return base.toLowerCase().replace(/\.(exe|com)$/, '');
}

export function judgeSimple(cmd: Simple, ctx: Ctx): Finding | null {
  const [nameWord, ...args] = cmd.words;
  if (!nameWord) return null;
  const alias = isLiteral(nameWord) ? ctx.scope.aliases.get(nameWord.text) : undefined;
  if (alias !== undefined) {
    // An alias defined earlier in the command replaces the name with its text.
    if (!args.every(isLiteral))
      return found(ctx, DYNAMIC, `The alias ${code(nameWord.text)} is used with ${code(args.map((a) => a.source).join(' '))}, only known at run time`);
    const scope = childScope(ctx.scope);
    scope.aliases.delete(nameWord.text);
    const f = judgeScript([alias, ...args.map((a) => quote(a.text))].join(' '), ctx, `alias ${nameWord.text}`, scope);
    if (f) return f;
  }
  const name = programName(nameWord);
  if (name === null) return found(ctx, DYNAMIC, `The command name ${show(nameWord)} is only known at run time`);
  if (isLiteral(nameWord)) recordCall(nameWord.text, ctx);
  noteNetwork(name, args, ctx);
  // A wrapper's words are judged with the command it runs; an alias's with its expansion.
  if (!isWrapper(name) && alias === undefined) noteSecrets(name, args, cmd, ctx);
  const handler = handlerFor(name);
  return settle(handler ? handler(name, args, cmd, ctx) : null, ctx);
}

/** Judges the command a wrapper runs, remembering the wrapper for the message. */
export function judgeInner(words: Word[], cmd: Simple, ctx: Ctx, via: string): Finding | null {
  return judgeSimple({ ...cmd, words }, through(ctx, via));
}

/** Quotes a literal for re-parsing. */
export const quote = (s: string): string => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);
