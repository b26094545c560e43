/**
 * What the walk carries: findings, the per-call state (asks collected so far, kernel areas, realpath
 * cache) and the scope a command runs in (possible working directories, variables the command set).
 */
import type { Node, Parser } from 'web-tree-sitter';
import type { KernelState } from '../kernel-state.js';
import { START, type Cwd } from './paths.js';
import { code, CWD_KEY, type VarLookup, type Word } from './words.js';

/** Fail-closed rule ids: the judge could not vouch for the command, so it is refused. */
export const UNPARSEABLE = 'unparseable';
export const DYNAMIC = 'dynamic-command';
export const EMPTY = 'empty-command';

/**
 * Rules whose verdict is `ask`: the command may be fine, but what decides it (code in another
 * language, a command hidden in an option) is beyond what the judge can check.
 */
export const ASK_RULES: ReadonlyArray<{ id: string; description: string }> = Object.freeze([
  {
    id: 'inline-code',
    description:
      'Code handed to an interpreter on the command line: `python3 -c`, `perl -e`, `node -e`, `ruby -e`, `php -r`, awk programs that run commands or pipes, sed scripts with `e`/`w`.',
  },
  {
    id: 'interpreter-pipe',
    description:
      'An interpreter or shell reading its program from standard input: a pipe, a here-string, a heredoc or a redirected file (`curl … | python3`, `bash < file`).',
  },
  {
    id: 'option-runs-command',
    description:
      'A program option or environment variable that makes a program run a command or load code: `git -c core.sshCommand=…`, `tar --to-command`, `ssh -o ProxyCommand`, `vim -c`, `find -exec sh -c`, `BASH_ENV=`, `LD_PRELOAD=`.',
  },
  {
    id: 'runtime-arithmetic',
    description: 'Arithmetic (or an array subscript, or `${!name}`) over a value only known at run time: bash runs any `$(…)` hidden in such a value.',
  },
]);
const ASK_IDS = new Set(ASK_RULES.map((r) => r.id));
export const isAskRule = (rule: string): boolean => ASK_IDS.has(rule);

export interface Finding {
  rule: string;
  what: string;
  via: readonly string[];
}

/** What the command itself assigned to a variable. */
export interface VarInfo {
  /** The literal value, or null when it is only known at run time. */
  value: string | null;
  /** The literal value holds a command substitution that arithmetic or a subscript would run. */
  taint: boolean;
  /** The value comes from run time (command substitution, `read`, an expansion). */
  runtime: boolean;
  /** Declared `-i` (or `-n`): assigning to it evaluates (or dereferences) the value. */
  evaluates: boolean;
}

/** Shell state that follows the commands of a list; copied for subshells, pipelines, substitutions. */
export interface Scope {
  cwd: Cwd;
  /**
   * Where the command was before its last `cd` (bash's OLDPWD, and `~-`): undefined until the
   * command changes directory (then it is whatever the environment held, unknown to the judge).
   */
  oldpwd?: Cwd | undefined;
  vars: Map<string, VarInfo>;
  aliases: Map<string, string>;
}

/** Per-call state shared by the whole walk. */
export interface Run {
  parser: Parser;
  /** Ask findings met so far; a blocked finding still wins over them. */
  asks: Finding[];
  state: KernelState | null;
  /** The directory the command starts in, when the caller said (absolute, real). */
  start: string | null;
  /** Real paths resolved during this call (a word often appears twice). */
  real: Map<string, string>;
  /**
   * The command runs in the OS sandbox, where the kernel's areas do not exist: a recursive command
   * over a folder that only incidentally holds one is not refused (words naming an area still are).
   */
  osSandbox: boolean;
  /** Programs met so far that use the network (`curl`, `git fetch`), in order, once each. */
  network: string[];
  /** Secret files (keys, credentials) the command reads, with the program reading them. */
  secrets: Array<{ word: string; program: string; what: string }>;
  /** Shell functions defined so far: the functions each one calls, and whether concurrently. */
  functions: Map<string, Map<string, boolean>>;
}

export interface Ctx {
  run: Run;
  scope: Scope;
  /** Shells and wrappers the current command was reached through, outermost first. */
  via: readonly string[];
  depth: number;
  /** Standard input is a pipe or a redirect of an enclosing statement (`cat x | (python3)`). */
  piped?: boolean;
  /** Standard output feeds another command: a pipe, `$(…)`, `<(…)` (not the caller's output). */
  feeds?: boolean;
  /** The body of the shell function being defined, when the walk is inside one. */
  fn?: string | undefined;
  /** This part runs concurrently with the rest: a pipeline member or a backgrounded (`&`) statement. */
  concurrent?: boolean;
}

/** A simple command: its words (name first), the redirects that apply to it, and its stdin. */
export interface Simple {
  words: Word[];
  redirects: Node[];
  /** Its standard input is a pipe from the previous command of a pipeline. */
  piped: boolean;
  /** Its prefix assignments (`BASH_ENV=x bash`, `HOME=/ cd`): its environment, not the shell's. */
  env: ReadonlyMap<string, Word[]>;
}

export type Handler = (name: string, args: Word[], cmd: Simple, ctx: Ctx) => Finding | null;

export function found(ctx: Ctx, rule: string, what: string): Finding {
  return { rule, what, via: ctx.via };
}

/** The sentence a person reads: the rule, what was found, how it was reached, what happens now. */
export function reasonOf(f: Finding): string {
  const via = f.via.length > 0 ? ` (reached through ${f.via.map(code).join(', then ')})` : '';
  const next = isAskRule(f.rule) ? '; it is asked every time, and refused where nobody can be asked' : '';
  return `${f.rule}: ${f.what}${via}${next}.`;
}

/** The same walk one level further in: a wrapper, a shell body. */
export const through = (ctx: Ctx, via: string): Ctx => ({ ...ctx, via: [...ctx.via, via] });

/** A copy of the scope for code that runs in a child process or subshell: its `cd` stays there. */
export const childScope = (s: Scope): Scope => ({ cwd: s.cwd, oldpwd: s.oldpwd, vars: new Map(s.vars), aliases: new Map(s.aliases) });

/** Records an ask finding and lets the walk go on (a later blocked finding must still be found). */
export function settle(f: Finding | null, ctx: Ctx): Finding | null {
  if (f && isAskRule(f.rule)) {
    ctx.run.asks.push(f);
    return null;
  }
  return f;
}

/**
 * A working directory as a value: the one absolute place when the command can only be there,
 * `cwd` (the working directory, whichever it is) when it may be in several, `runtime` when it is
 * only known at run time.
 */
function placeOf(cwd: Cwd): { value: string } | 'cwd' | 'runtime' {
  if (cwd === null) return 'runtime';
  const [only] = cwd;
  return cwd.length === 1 && only !== undefined && only !== START ? { value: only } : 'cwd';
}

/**
 * Looks up what the command assigned to a variable so far (see VarLookup). `PWD` not assigned by
 * the command is the working directory; `OLDPWD` is the directory before the last `cd` (when there
 * was several, the working directory stands for it: after a `cd` it may be any of them, and the
 * places a command may be in only grow). CWD_KEY asks for the working directory itself (`$(pwd)`).
 */
export function lookupIn(scope: Scope): VarLookup {
  return (name) => {
    if (name === CWD_KEY) return placeOf(scope.cwd);
    const v = scope.vars.get(name);
    if (!v) {
      if (name === 'PWD') return placeOf(scope.cwd);
      if (name === 'OLDPWD' && scope.oldpwd !== undefined) return placeOf(scope.oldpwd);
      return undefined;
    }
    return v.value === null ? 'runtime' : { value: v.value };
  };
}
