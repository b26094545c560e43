/**
 * Which rule judges which program. Rule files register their handlers here; the walker looks a
 * program up by the basename it runs (lower-cased, since a case-insensitive file system runs
 * `SUDO` as `sudo`). Kept apart from the walker so rule files can register at load time.
 */
import type { Handler } from './context.js';

const byName = new Map<string, Handler>();
const byPattern: Array<[RegExp, Handler]> = [];

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
