/**
 * rm: the destructive rules. `/`, system trees and top-level directories are refused outright; a
 * home directory, the working directory and its parent only when the delete is recursive, since
 * `rm ~/notes.txt` is ordinary and `rm -rf ~` is not. Targets are judged from where `cd` may have
 * taken the command, so `cd / && rm -rf usr` is `rm -rf /usr`.
 */
import { DYNAMIC, found, type Handler } from '../context.js';
import { kernelStateInside } from '../kernel-state-rule.js';
import type { PathClass } from '../paths.js';
import { register } from '../registry.js';
import { code, DYN, ifEmpty, show, type Word } from '../words.js';
import { describeTarget, noFlags, readFlag, targetClass } from './targets.js';

const RM_RULE: Record<PathClass, string> = { root: 'rm-root', system: 'rm-system', home: 'rm-home', cwd: 'rm-cwd' };

export const judgeRm: Handler = (name, args, _cmd, ctx) => {
  const flags = noFlags();
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
    const cls = targetClass(t, ctx);
    if (cls === 'unknown')
      return found(
        ctx,
        DYNAMIC,
        `${code(name)}${how} on ${code(t.source)}, a relative path from a working directory only known at run time (after a \`cd\` the judge cannot follow)`,
      );
    if (!cls) continue;
    // Root and system paths are refused outright; home and cwd only when the delete is recursive.
    if (cls === 'root' || cls === 'system' || recursive) return found(ctx, RM_RULE[cls], `${code(name)}${how} on ${describeTarget(t, cls)}`);
  }
  if (flags.recursive) {
    const f = kernelStateInside(targets, ctx, `${code(name + ' -r')} on`);
    if (f) return f;
  }
  if (opaque) return found(ctx, DYNAMIC, `${code(name)} with ${show(opaque)}, which may expand to any flags or paths at run time`);
  return null;
};

register(['rm'], judgeRm);
