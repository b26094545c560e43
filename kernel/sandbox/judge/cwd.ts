/**
 * Where `cd` (and wrappers with a chdir option) take a command. A `cd` may fail, so the directory
 * before it stays possible: the scope keeps the set of places the command may be in, and a rule
 * judges a relative target from each. A target only known at run time (`cd "$(…)"`, `popd`,
 * `CDPATH`, `cd -` before any other `cd`) makes the place unknown, and relative destructive targets
 * then fail closed. Each `cd` records where the command was before it (bash's OLDPWD, `~-`, `cd -`).
 */
import type { Scope } from './context.js';
import { candidates, normalize } from './paths.js';
import { isLiteral, type Word } from './words.js';

/** More possible places than this and the judge stops counting: the directory is unknown. */
const MAX_PLACES = 8;

/** Moves the scope to `target` (`home` for a bare `cd`, null for a place only known at run time). */
export function changeDir(scope: Scope, target: Word | 'home' | null, env?: ReadonlyMap<string, Word[]>): void {
  const before = scope.cwd;
  // `cd -` goes back to OLDPWD: the places the command was in before its last `cd`, when known.
  const back = target !== null && target !== 'home' && isLiteral(target) && target.text === '-' ? scope.oldpwd : undefined;
  scope.oldpwd = before;
  if (before === null) return;
  if (back !== undefined) {
    const next = back === null ? null : [...new Set([...before, ...back])];
    scope.cwd = next === null || next.length > MAX_PLACES ? null : next;
    return;
  }
  let text: string;
  if (target === 'home') {
    const home = env?.get('HOME') ?? (scope.vars.has('HOME') ? null : undefined);
    if (home === null) return void (scope.cwd = null);
    if (home !== undefined) {
      const [only] = home;
      if (home.length !== 1 || only === undefined || !isLiteral(only)) return void (scope.cwd = null);
      text = only.text;
    } else text = '~';
  } else {
    if (target === null || !isLiteral(target) || target.glob || target.text === '-' || target.text === '') return void (scope.cwd = null);
    text = target.text;
  }
  // With CDPATH set by the command, `cd usr` may land in any directory it lists.
  const cdpath = env?.has('CDPATH') || scope.vars.has('CDPATH');
  if (cdpath && !/^(\/|\.\/|\.\.\/|\.$|\.\.$|~)/.test(text)) return void (scope.cwd = null);
  const places = candidates(text, before);
  if (places === null) return void (scope.cwd = null);
  // From an unknown start (the caller gave no cwd), a relative `cd` leads somewhere unknown too:
  // keep it relative to START by refusing to resolve it, which candidates() already does.
  const startRelative = places.length < before.length && !text.startsWith('/') && !text.startsWith('~');
  if (startRelative && /(^|\/)\.\.(\/|$)/.test(text)) return void (scope.cwd = null);
  const next = [...new Set([...before, ...places.map(normalize)])];
  scope.cwd = next.length > MAX_PLACES ? null : next;
}
