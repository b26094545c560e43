/**
 * Which rule judges which program. Rule files register their handlers here; the walker looks a
 * program up by the basename it runs (lower-cased, since a case-insensitive file system runs
 * `SUDO` as `sudo`). Kept apart from the walker so rule files can register at load time.
 */
import type { Handler } from './context.js';

const byName = new Map<string, Handler>();
const byPattern: Array<[RegExp, Handler]> = [];
const wrappers = new Set<string>();

export function register(names: readonly string[], handler: Handler): void {
  for (const n of names) byName.set(n, handler);
}

/** For families of names: `mkfs.ext4`, `python3.12`, `perl5.36`. */
export function registerPattern(pattern: RegExp, handler: Handler): void {
  byPattern.push([pattern, handler]);
}

export function handlerFor(name: string): Handler | undefined {
  return byName.get(name) ?? byPattern.find(([re]) => re.test(name))?.[1];
}

/** Programs that run a command given in their arguments: what they name is judged with the command they run. */
export function registerWrapper(names: readonly string[], handler: Handler): void {
  register(names, handler);
  for (const n of names) wrappers.add(n);
}

export const isWrapper = (name: string): boolean => wrappers.has(name);
