/**
 * Shared by the rules that destroy or change files: how a target word is classified, and the
 * flag reading of rm/chmod/chown style programs.
 */
import { DYNAMIC, found, type Ctx, type Finding } from '../context.js';
import { classifyTarget, type PathClass } from '../paths.js';
import { code, DYN, ifEmpty, type Word } from '../words.js';

export const PLACE: Record<PathClass, string> = {
  root: 'the filesystem root',
  system: 'a system path',
  home: 'a home directory',
  cwd: 'the working directory or its parent',
};

export interface Flags {
  recursive: boolean;
  force: boolean;
  /** A flag word with run-time parts (`-$X`): it may mean anything. */
  unknownFlags: boolean;
  noPreserveRoot: boolean;
}

export const noFlags = (): Flags => ({ recursive: false, force: false, unknownFlags: false, noPreserveRoot: false });

/** Reads rm/chmod/chown style flags from one word; returns false when the word is not an option. */
export function readFlag(w: Word, flags: Flags, shortRecursive: RegExp, longNames: Record<string, keyof Flags>): boolean {
  const t = w.text;
  if (!t.startsWith('-') || t === '-' || t === '--') return false;
  if (t.includes(DYN)) {
    flags.unknownFlags = true;
    return true;
  }
  if (t.startsWith('--')) {
    const given = t.slice(2).split('=')[0] ?? ''; // split always returns one element
    const matches = Object.keys(longNames).filter((n) => given !== '' && n.startsWith(given));
    const only = matches.length === 1 ? matches[0] : undefined;
    const key = longNames[given] ?? (only === undefined ? undefined : longNames[only]);
    if (key) flags[key] = true;
    return true;
  }
  if (shortRecursive.test(t)) flags.recursive = true;
  if (/f/.test(t)) flags.force = true;
  return true;
}

/** The protected place a target names, also when its run-time parts are empty (`"$DIR/"` is `/`). */
export function describeTarget(t: Word, cls: PathClass): string {
  const empty = ifEmpty(t);
  const note = t.text.includes(DYN) ? `, which is ${code(empty)} when its variables are empty` : '';
  return `${code(t.source)} (${PLACE[cls]}${note})`;
}

/** The class of a target from where the command is; `unknown` for a relative one from an unknown directory. */
export const targetClass = (t: Word, ctx: Ctx): PathClass | 'unknown' | null => classifyTarget(ifEmpty(t), ctx.scope.cwd, ctx.run.start);

/** Refuses targets in `/` or a system tree (and, with `homeToo`, a whole home directory). */
export function systemTargets(name: string, targets: Word[], recursive: boolean, rule: string, ctx: Ctx, homeToo = false): Finding | null {
  for (const t of targets) {
    if (t.opaque) continue;
    const empty = ifEmpty(t);
    if (empty === '' && recursive) return found(ctx, DYNAMIC, `${code(name)} with recursive on ${code(t.source)}, a target only known at run time`);
    const cls = targetClass(t, ctx);
    if (cls === 'unknown') return found(ctx, DYNAMIC, `${code(name)} on ${code(t.source)}, a relative path from a working directory only known at run time`);
    if (cls === 'root' || cls === 'system' || (homeToo && cls === 'home'))
      return found(ctx, rule, `${code(name)}${recursive ? ' with recursive' : ''} on ${describeTarget(t, cls)}`);
  }
  return null;
}
