/**
 * Variables and arithmetic. Bash evaluates arithmetic (`$((x))`, `((…))`, `let`, `[[ x -eq y ]]`,
 * array subscripts, `declare -i`) recursively on variable values, and a subscript inside such a
 * value runs its command substitutions: `x='a[$(reboot)]'; echo $((x))` reboots. Builtins that take
 * a variable name (`read`, `printf -v`, `declare`, `unset`, `test -v`…) evaluate a subscript in
 * that name too. So the judge remembers what the command assigned, and:
 * - a literal value holding `$(…)` or a backtick that reaches arithmetic or a name is refused;
 * - a value only known at run time that reaches arithmetic is asked (`runtime-arithmetic`).
 */
import type { Node } from 'web-tree-sitter';
import { DYNAMIC, found, lookupIn, type Ctx, type Finding, type VarInfo } from './context.js';
import { code, DYN, isLiteral, wordsOf, type Word } from './words.js';

const RUNTIME_ARITH = 'runtime-arithmetic';
/** Text that runs a command when bash expands it inside arithmetic or a subscript. */
const RUNS = /\$\(|`|[<>]\(/;
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Names whose values the shell itself keeps: numbers, never text from the command. */
const SPECIAL = /^([#?$!-]|RANDOM|SECONDS|LINENO|BASHPID|EPOCHSECONDS|EPOCHREALTIME|SRANDOM|PPID|UID|EUID)$/;

/** What assigning these words to a variable leaves in it. */
export function infoOf(words: readonly Word[], evaluates = false): VarInfo {
  const [only] = words;
  if (words.length === 1 && only !== undefined && isLiteral(only)) return { value: only.text, taint: RUNS.test(only.text), runtime: false, evaluates };
  const literal = words.every(isLiteral);
  return { value: null, taint: words.some((w) => isLiteral(w) && RUNS.test(w.text)), runtime: !literal, evaluates };
}

/**
 * Checks the variables an arithmetic context reads. `depth` follows values that name other
 * variables (`x=y; y='a[$(…)]'`), as bash does.
 */
export function checkNames(names: Iterable<string>, ctx: Ctx, where: string, depth = 0): Finding | null {
  for (const name of names) {
    if (SPECIAL.test(name)) continue;
    const v = ctx.scope.vars.get(name);
    if (!v) continue; // from the kernel's environment
    if (v.taint) return found(ctx, DYNAMIC, `${where} evaluates ${code(name)}, whose value holds a command substitution that bash would run there`);
    if (v.runtime)
      return found(ctx, RUNTIME_ARITH, `${where} evaluates ${code(name)}, a value only known at run time in which bash would run any hidden \`$(…)\``);
    if (v.value !== null && depth < 8) {
      const f = checkNames(identifiers(v.value), ctx, where, depth + 1);
      if (f) return f;
    }
  }
  return null;
}

/** Identifiers an arithmetic expression written as text refers to. */
export function identifiers(text: string): string[] {
  const out: string[] = [];
  for (const [, dollar, name = ''] of text.matchAll(/(\$\{?)?([A-Za-z_][A-Za-z0-9_]*|[0-9]+)/g)) {
    if (/^\d/.test(name) && !dollar) continue; // a number, not `$1`
    out.push(name);
  }
  return out;
}

/** An arithmetic expression given as text (`let` arguments, a subscript, a `declare -i` value). */
export function checkArithmeticText(text: string, ctx: Ctx, where: string): Finding | null {
  if (text.includes(DYN)) return found(ctx, RUNTIME_ARITH, `${where} evaluates a value only known at run time, in which bash would run any hidden \`$(…)\``);
  if (RUNS.test(text)) return found(ctx, DYNAMIC, `${where} evaluates ${code(text)}, and bash runs the command substitution inside it`);
  return checkNames(identifiers(text), ctx, where);
}

/** An arithmetic context in the tree: `$((…))`, `((…))`, a subscript, a `[[ -eq ]]` operand. */
export function checkArithmeticNode(node: Node, ctx: Ctx, where: string): Finding | null {
  const names: string[] = [];
  const stack: Node[] = [node];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.type === 'command_substitution')
      return found(ctx, RUNTIME_ARITH, `${where} evaluates the output of ${code(n.text)} as arithmetic, where bash would run any \`$(…)\` it prints`);
    if (n.type === 'variable_name' || n.type === 'special_variable_name') names.push(n.text);
    else if (n.type === 'word' && NAME.test(n.text)) names.push(n.text);
    else if (n.type === 'raw_string' || n.type === 'string') {
      const f = checkArithmeticText(wordsOf(n, lookupIn(ctx.scope))[0]?.text ?? DYN, ctx, where);
      if (f) return f;
    }
    for (const c of n.namedChildren) if (c) stack.push(c);
  }
  return checkNames(names, ctx, where);
}

/** A variable name handed to a builtin: `read 'a[$(cmd)]'` runs cmd while assigning. */
export function checkNameArg(w: Word, ctx: Ctx, builtin: string): Finding | null {
  if (!isLiteral(w))
    return found(
      ctx,
      DYNAMIC,
      `${code(builtin)} is given the variable name ${code(w.source)}, only known at run time, and a subscript in it would run commands`,
    );
  const name = w.text.split('=')[0] ?? ''; // split always returns one element
  const sub = /^[A-Za-z_][A-Za-z0-9_]*\[([\s\S]*)\]\+?$/.exec(name);
  if (!sub) return null;
  return checkArithmeticText(sub[1] ?? '', ctx, `${code(builtin)} with the name ${code(w.source)}`);
}

/** `${a[i]}`, `${x:off:len}`, `${!ref}`: the places inside an expansion that bash evaluates. */
export function checkExpansion(node: Node, ctx: Ctx): Finding | null {
  const where = `The expansion ${code(node.text)}`;
  for (const c of node.namedChildren) {
    if (c?.type === 'subscript') {
      const index = c.childForFieldName('index');
      if (index && !/^[@*]$/.test(index.text)) {
        const f = checkArithmeticNode(index, ctx, where);
        if (f) return f;
      }
    }
  }
  if (/^\$\{!/.test(node.text)) {
    const ref = node.namedChildren.find((c) => c?.type === 'variable_name');
    if (ref) {
      const f = checkNames([ref.text], ctx, where);
      if (f) return f;
    }
  }
  // `${x:off:len}`: the offset and length are arithmetic.
  const m = /^\$\{[A-Za-z_][A-Za-z0-9_]*:(?![-=?+])([^}]*)\}$/.exec(node.text);
  return m ? checkArithmeticText((m[1] ?? '').replace(/^\s+/, ''), ctx, where) : null;
}

/** Records an assignment the command makes, and checks what assigning it evaluates. */
export function assign(name: string, words: readonly Word[], ctx: Ctx, opts: { evaluates?: boolean; append?: boolean; where?: string } = {}): Finding | null {
  const before = ctx.scope.vars.get(name);
  const evaluates = !!opts.evaluates || !!before?.evaluates;
  const info = infoOf(words, evaluates);
  if (opts.append) info.value = null;
  if (evaluates) {
    const text = words.map((w) => w.text).join(' ');
    const f = checkArithmeticText(text, ctx, opts.where ?? `Assigning to ${code(name)}, an integer or reference variable,`);
    if (f) return f;
  }
  ctx.scope.vars.set(name, info);
  return null;
}
