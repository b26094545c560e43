/**
 * Shells and the builtins that run text as code or bind names: `sh -c` bodies are re-parsed and
 * judged like the command itself; a shell reading its script from stdin is judged on what it reads
 * (a literal heredoc or here-string) or fails closed; `eval`, `alias`, `trap`, `hash -p` and
 * `mapfile -C` are followed. Builtins that take variable names are checked for subscripts that run
 * commands (see variables.ts), and `cd`/`pushd`/`popd` move the scope.
 */
import { DYNAMIC, found, type Ctx, type Finding, type Handler, type Simple } from '../context.js';
import { changeDir } from '../cwd.js';
import { register } from '../registry.js';
import { stdinOf } from '../redirects.js';
import { assign, checkArithmeticText, checkNameArg, infoOf } from '../variables.js';
import { judgeScript, quote } from '../walk.js';
import { code, isLiteral, type Word } from '../words.js';

export const SHELLS = [
  'sh',
  'bash',
  'rbash',
  'zsh',
  'dash',
  'ksh',
  'mksh',
  'ash',
  'yash',
  'posh',
  'fish',
  'tcsh',
  'csh',
  'busybox-sh',
  'oksh',
  'loksh',
  'pdksh',
  'ksh93',
];
/** Paths that are the shell's own standard input. */
const STDIN_PATH = /^(-|\/dev\/stdin|\/dev\/fd\/0|\/proc\/self\/fd\/0)$/;

/** Joins literal words into shell code (`eval`, `watch`) and judges it. */
export function judgeCode(name: string, words: Word[], ctx: Ctx, via: string): Finding | null {
  if (words.length === 0) return null;
  const unknown = words.find((w) => !isLiteral(w));
  if (unknown) return found(ctx, DYNAMIC, `${code(name)} runs ${code(unknown.source)}, code only known at run time`);
  return judgeScript(words.map((w) => w.text).join(' '), ctx, via);
}

/** A shell body `-c BODY [NAME ARGS…]`: the body is judged with `$0`, `$1`… set to the arguments. */
export function judgeBody(body: Word, rest: Word[], ctx: Ctx, via: string): Finding | null {
  if (!isLiteral(body)) return found(ctx, DYNAMIC, `${code(via)} runs ${code(body.source)}, a body only known at run time`);
  const scope = { cwd: ctx.scope.cwd, vars: new Map(ctx.scope.vars), aliases: new Map<string, string>() };
  rest.forEach((w, i) => scope.vars.set(String(i), infoOf([w])));
  return judgeScript(body.text, ctx, via, scope);
}

/** What a shell does with its standard input when it has no script: runs it. */
function judgeStdinScript(name: string, cmd: Simple, ctx: Ctx): Finding | null {
  const stdin = stdinOf(cmd, ctx);
  if (stdin === null)
    return found(ctx, DYNAMIC, `${code(name)} reads its commands from ${cmd.piped || ctx.piped ? 'a pipe' : 'standard input'}, which the judge cannot see`);
  if ('unknown' in stdin) return found(ctx, DYNAMIC, `${code(name)} reads its commands from ${stdin.unknown}, only known at run time`);
  if ('file' in stdin) {
    if (STDIN_PATH.test(stdin.file.text) || /^\/dev\//.test(stdin.file.text))
      return found(ctx, DYNAMIC, `${code(name)} reads its commands from ${code(stdin.file.source)}`);
    return found(ctx, 'interpreter-pipe', `${code(name)} reads its commands from ${code(stdin.file.source)} on standard input, which the judge does not read`);
  }
  return judgeScript(stdin.script, ctx, `${name} <<`);
}

/** `sh`, `bash`, `zsh`…: `-c BODY` is judged as shell; `-i` is an interactive shell; no script means stdin. */
export const judgeShell: Handler = (name, args, cmd, ctx) => {
  let commandMode = false;
  let interactive = false;
  let fromStdin = false;
  let i = 0;
  for (; i < args.length; i++) {
    const w = args[i]!; // i < args.length
    if (w.opaque || (w.text.startsWith('-') && !isLiteral(w)))
      return found(ctx, DYNAMIC, `${code(name)} with ${code(w.source)}, which may expand to anything at run time`);
    if (w.text === '--' || w.text === '-') {
      if (w.text === '-') fromStdin = true;
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
    const f = judgeBody(body, operands.slice(1), ctx, `${name} -c`);
    if (f) return f;
    // Run by find or xargs, the body's arguments are found paths or input only known at run time.
    const feeder = ctx.via.find((v) => /^(find -|xargs)/.test(v));
    return feeder ? found(ctx, 'option-runs-command', `${code(feeder)} runs ${code(`${name} -c`)} with arguments only known at run time`) : null;
  }
  const script = operands[0];
  if (script && !fromStdin && !STDIN_PATH.test(script.text)) {
    return script.procSub || script.opaque ? found(ctx, DYNAMIC, `${code(name)} runs ${code(script.source)}, a script generated at run time`) : null;
  }
  return judgeStdinScript(name, cmd, ctx);
};

const judgeEval: Handler = (name, args, _cmd, ctx) => judgeCode(name, args, ctx, name);

/** `source FILE` runs a file; only a generated one (`source <(curl …)`, `. /dev/stdin`) is unknowable. */
const judgeSource: Handler = (name, args, cmd, ctx) => {
  const file = args.find((w) => !w.text.startsWith('-'));
  if (file && isLiteral(file) && STDIN_PATH.test(file.text)) return judgeStdinScript(name, cmd, ctx);
  return file?.procSub || file?.opaque ? found(ctx, DYNAMIC, `${code(name)} runs ${code(file.source)}, a script generated at run time`) : null;
};

/** `alias NAME='CODE'` stores code that later runs in place of NAME. */
const judgeAlias: Handler = (name, args, _cmd, ctx) => {
  for (const w of args) {
    const eq = w.text.indexOf('=');
    if (w.opaque || eq < 0) continue;
    const body = { ...w, text: w.text.slice(eq + 1) };
    const f = judgeCode(name, [body], ctx, name);
    if (f) return f;
    ctx.scope.aliases.set(w.text.slice(0, eq), body.text);
  }
  return null;
};

/** `hash -p PATH NAME`: later commands named NAME run PATH. */
const judgeHash: Handler = (name, args, _cmd, ctx) => {
  for (let i = 0; i < args.length; i++) {
    const t = args[i]!.text; // i < args.length
    if (!/^-[a-z]*p$/.test(t)) continue;
    const target = args[i + 1];
    const names = args.slice(i + 2);
    if (!target || !isLiteral(target) || !names.every(isLiteral))
      return found(ctx, DYNAMIC, `${code(name + ' -p')} binds a command name to a program only known at run time`);
    for (const n of names) ctx.scope.aliases.set(n.text, quote(target.text));
    return null;
  }
  return null;
};

/** `trap 'CODE' SIGNALS…` runs CODE later. */
const judgeTrap: Handler = (name, args, _cmd, ctx) => {
  const operands = args[0]?.text === '--' ? args.slice(1) : args.filter((w) => !/^-[lp]$/.test(w.text));
  const body = operands[0];
  if (operands.length < 2 || body === undefined || body.text === '-') return null;
  return judgeCode(name, [body], ctx, name);
};

/** `enable -f LIB NAME` loads a builtin from a shared library: code the judge cannot see. */
const judgeEnable: Handler = (name, args, _cmd, ctx) =>
  args.some((w) => /^-[a-z]*f/.test(w.text))
    ? found(ctx, 'option-runs-command', `${code(name + ' -f')} loads a builtin from a shared library the judge cannot see`)
    : null;

const judgeCd: Handler = (name, args, cmd, ctx) => {
  const operands = args.filter((w, i) => !(/^-[LPe@]+$/.test(w.text) && args.slice(0, i).every((p) => p.text.startsWith('-'))) && w.text !== '--');
  const rotates = name === 'popd' || (name === 'pushd' && (!operands[0] || /^[+-]\d+$/.test(operands[0].text)));
  changeDir(ctx.scope, rotates ? null : (operands[0] ?? 'home'), cmd.env);
  return null;
};

/** Builtins that assign to the variables they are given by name. */
const NAME_TAKERS: Record<string, { valued: RegExp; nameOptions: RegExp; names: 'operands' | 'last' | 'none' }> = {
  read: { valued: /^-[a-zA-Z]*[adinNptu]$/, nameOptions: /^-[a-zA-Z]*a$/, names: 'operands' },
  mapfile: { valued: /^-[a-zA-Z]*[dnOsuCc]$/, nameOptions: /^$/, names: 'last' },
  printf: { valued: /^-v$/, nameOptions: /^-v$/, names: 'none' },
  wait: { valued: /^-[a-zA-Z]*p$/, nameOptions: /^-[a-zA-Z]*p$/, names: 'none' },
  unset: { valued: /^$/, nameOptions: /^$/, names: 'operands' },
  export: { valued: /^$/, nameOptions: /^$/, names: 'operands' },
  declare: { valued: /^$/, nameOptions: /^$/, names: 'operands' },
};

const judgeNameTaker: Handler = (name, args, _cmd, ctx) => {
  const key = name === 'readarray' ? 'mapfile' : ['typeset', 'local', 'readonly'].includes(name) ? 'declare' : name;
  const def = NAME_TAKERS[key];
  if (def === undefined) throw new Error(`judge: ${name} is registered as a name taker without a definition`);
  const names: Word[] = [];
  let i = 0;
  for (; i < args.length; i++) {
    const t = args[i]!.text; // i < args.length
    if (t === '--') {
      i++;
      break;
    }
    if (!t.startsWith('-') || t === '-') break;
    const next = args[i + 1];
    if (key === 'mapfile' && /^-[a-zA-Z]*C$/.test(t) && next) {
      const f = judgeCode(name + ' -C', [next], ctx, `${name} -C`); // the callback is shell code
      if (f) return f;
    }
    if (def.valued.test(t)) {
      if (def.nameOptions.test(t) && next) names.push(next);
      i++;
    }
  }
  const operands = args.slice(i);
  if (def.names === 'operands') names.push(...operands);
  if (def.names === 'last' && operands.length > 0) names.push(operands.at(-1)!);
  for (const w of names) {
    const f = checkNameArg(w, ctx, name);
    if (f) return f;
    if (isLiteral(w)) ctx.scope.vars.set(w.text.split(/[[=]/)[0] ?? '', { value: null, taint: false, runtime: true, evaluates: false });
  }
  return null;
};

/** `let EXPR…`: each argument is arithmetic. */
const judgeLet: Handler = (name, args, _cmd, ctx) => {
  for (const w of args) {
    const f = checkArithmeticText(isLiteral(w) ? w.text : '\u0000', ctx, `${code(name + ' ' + w.source)}`);
    if (f) return f;
    const target = /^([A-Za-z_][A-Za-z0-9_]*)\s*[-+*/%&|^]?=/.exec(w.text);
    if (target?.[1] !== undefined) ctx.scope.vars.set(target[1], { value: null, taint: false, runtime: false, evaluates: false });
  }
  return null;
};

/** `test -v NAME`, `[ -v NAME ]`: NAME's subscript is evaluated. */
const judgeTest: Handler = (name, args, _cmd, ctx) => {
  for (let i = 0; i < args.length - 1; i++) {
    const next = args[i + 1];
    if (args[i]?.text !== '-v' || next === undefined) continue;
    const f = checkNameArg(next, ctx, `${name} -v`);
    if (f) return f;
  }
  return null;
};

/** `getopts OPTSTRING NAME`: NAME is assigned. */
const judgeGetopts: Handler = (name, args, _cmd, ctx) => (args[1] ? (checkNameArg(args[1], ctx, name) ?? assign(args[1].text, [], ctx)) : null);

register(SHELLS, judgeShell);
register(['eval'], judgeEval);
register(['source', '.'], judgeSource);
register(['alias'], judgeAlias);
register(['hash'], judgeHash);
register(['trap'], judgeTrap);
register(['enable'], judgeEnable);
register(['cd', 'pushd', 'popd', 'chdir'], judgeCd);
register(['read', 'mapfile', 'readarray', 'printf', 'wait', 'unset', 'export', 'declare', 'typeset', 'local', 'readonly'], judgeNameTaker);
register(['let'], judgeLet);
register(['test', '['], judgeTest);
register(['getopts'], judgeGetopts);
