/**
 * Destroying or overwriting files by other means than rm: `unlink`, `mv` (from or onto a system
 * path), `truncate`, `shred`, `cp`/`install`/`ln`/`tee` onto a system path or a disk device,
 * `rmdir`/`mkdir`/`touch` in system trees, and `rsync --delete` into `/`, a system tree, a home or
 * the working directory. Each target is judged where it lands (see redirects.ts writeTarget).
 */
import { DYNAMIC, found, type Ctx, type Finding, type Handler } from '../context.js';
import { kernelStateInside } from '../kernel-state-rule.js';
import { getopt, type OptSpec } from '../options.js';
import type { PathClass } from '../paths.js';
import { register } from '../registry.js';
import { SYSTEM_FILES, writeTarget } from '../redirects.js';
import { judgeScript } from '../walk.js';
import { code, isLiteral, show, syntheticWord, type Word } from '../words.js';
import { judgeRm } from './rm.js';
import { describeTarget, targetClass } from './targets.js';

/** Judges every word as a write (or destruction) target. */
function writes(words: readonly Word[], ctx: Ctx, how: string): Finding | null {
  for (const w of words) {
    const f = writeTarget(w, ctx, how);
    if (f) return f;
  }
  return null;
}

/** Parses the options of a file tool; an unknown one fails closed, since it might name a target. */
function operandsOf(
  name: string,
  args: Word[],
  spec: OptSpec,
  ctx: Ctx,
): { parsed: Extract<ReturnType<typeof getopt>, { all: unknown }> } | { finding: Finding } {
  const parsed = getopt(args, { ...spec, permute: true });
  if ('unknown' in parsed)
    return {
      finding: found(ctx, DYNAMIC, `${code(name)} with ${show(parsed.unknown)}, an option the judge does not know, so its targets cannot be determined`),
    };
  return { parsed };
}

/** The destination of cp/mv/install/ln: `-t DIR`, or the last operand when there are two or more. */
function destination(parsed: { options: Map<string, string | true>; operands: Word[] }): { dest: Word | null; sources: Word[] } {
  const t = parsed.options.get('t') ?? parsed.options.get('target-directory');
  if (typeof t === 'string') return { dest: syntheticWord(t), sources: parsed.operands };
  if (parsed.operands.length < 2) return { dest: null, sources: parsed.operands };
  return { dest: parsed.operands.at(-1)!, sources: parsed.operands.slice(0, -1) };
}

const simpleTargets =
  (spec: OptSpec, verb: string): Handler =>
  (name, args, _cmd, ctx) => {
    const r = operandsOf(name, args, spec, ctx);
    return 'finding' in r ? r.finding : writes(r.parsed.operands, ctx, `${code(name)} ${verb}`);
  };

const CP_SPEC: OptSpec = {
  short: 'abdfHiLlnPpRrSsTtuvxZS:t:',
  long: [
    'archive',
    'attributes-only',
    'backup=?',
    'copy-contents',
    'dereference',
    'force',
    'interactive',
    'link',
    'no-clobber',
    'no-dereference',
    'preserve=?',
    'no-preserve=',
    'parents',
    'recursive',
    'reflink=?',
    'remove-destination',
    'sparse=',
    'strip-trailing-slashes',
    'symbolic-link',
    'suffix=',
    'target-directory=',
    'no-target-directory',
    'update=?',
    'verbose',
    'one-file-system',
    'context=?',
    'debug',
    'keep-directory-symlink',
  ],
};
const MV_SPEC: OptSpec = {
  short: 'bfinTuvZS:t:',
  long: [
    'backup=?',
    'force',
    'interactive',
    'no-clobber',
    'no-copy',
    'strip-trailing-slashes',
    'suffix=',
    'target-directory=',
    'no-target-directory',
    'update=?',
    'verbose',
    'context',
    'exchange',
    'debug',
  ],
};
const INSTALL_SPEC: OptSpec = {
  short: 'bcCdDpsTvZg:m:o:S:t:',
  long: [
    'backup=?',
    'compare',
    'directory',
    'group=',
    'mode=',
    'owner=',
    'preserve-timestamps',
    'strip',
    'strip-program=',
    'suffix=',
    'target-directory=',
    'no-target-directory',
    'verbose',
    'preserve-context',
    'context=?',
    'debug',
  ],
};
const LN_SPEC: OptSpec = {
  short: 'bdFfinLPrsTvS:t:',
  long: [
    'backup=?',
    'directory',
    'force',
    'interactive',
    'logical',
    'no-dereference',
    'physical',
    'relative',
    'symbolic',
    'suffix=',
    'target-directory=',
    'no-target-directory',
    'verbose',
  ],
};

const judgeCopy =
  (spec: OptSpec): Handler =>
  (name, args, _cmd, ctx) => {
    const r = operandsOf(name, args, spec, ctx);
    if ('finding' in r) return r.finding;
    if (name === 'install' && (r.parsed.options.has('d') || r.parsed.options.has('directory')))
      return writes(r.parsed.operands, ctx, `${code(name + ' -d')} creates`);
    const { dest, sources } = destination(r.parsed);
    const o = r.parsed.options;
    if ((name === 'cp' || name === 'gcp') && ['r', 'R', 'a', 'recursive', 'archive'].some((k) => o.has(k))) {
      const f = kernelStateInside(sources, ctx, `${code(name + ' -r')} of`);
      if (f) return f;
    }
    return dest ? writeTarget(dest, ctx, `${code(name)} writes onto`) : null;
  };

/** mv destroys its sources where they were, and writes its destination. */
const judgeMv: Handler = (name, args, _cmd, ctx) => {
  const r = operandsOf(name, args, MV_SPEC, ctx);
  if ('finding' in r) return r.finding;
  const { dest, sources } = destination(r.parsed);
  for (const s of sources) {
    const cls = s.opaque ? null : targetClass(s, ctx);
    if (cls === 'home') return found(ctx, SYSTEM_FILES, `${code(name)} moves ${describeTarget(s, cls)} away`);
  }
  return (
    writes(sources, ctx, `${code(name)} moves away`) ??
    kernelStateInside(sources, ctx, `${code(name)} of`) ??
    (dest ? writeTarget(dest, ctx, `${code(name)} writes onto`) : null)
  );
};

const RM_RULE: Record<PathClass, string> = { root: 'rm-root', system: 'rm-system', home: 'rm-home', cwd: 'rm-cwd' };

/** rsync: `--delete` empties the destination of what the source lacks; `-e` runs a command. */
const judgeRsync: Handler = (name, args, _cmd, ctx) => {
  let rsh: string | null = null;
  let del = false;
  let removeSources = false;
  let recursive = false;
  const operands: Word[] = [];
  for (let i = 0; i < args.length; i++) {
    const w = args[i]!; // i < args.length
    const t = w.text;
    if (t === '--') {
      operands.push(...args.slice(i + 1));
      break;
    }
    if (/^-[a-zA-Z]*[ra]/.test(t) || /^--(recursive|archive)$/.test(t)) recursive = true;
    if (/^-[a-zA-Z]*e$/.test(t) || t === '--rsh') rsh = args[++i]?.text ?? '';
    else if (/^-[a-zA-Z]*e./.test(t) && !t.startsWith('--')) rsh = t.slice(t.indexOf('e') + 1);
    else if (t.startsWith('--rsh=')) rsh = t.slice(6);
    else if (/^--rsync-path(=|$)/.test(t)) return found(ctx, 'option-runs-command', `${code(name + ' --rsync-path')} names a program to run for the copy`);
    else if (/^--(delete|del$|delete-|remove-source-files)/.test(t)) {
      if (t === '--remove-source-files') removeSources = true;
      else del = true;
    } else if (
      /^--(exclude|include|filter|files-from|exclude-from|include-from|link-dest|compare-dest|copy-dest|backup-dir|suffix|log-file|partial-dir|temp-dir|chmod|chown|usermap|groupmap|password-file|out-format|timeout|bwlimit|max-size|min-size|port|sockopts|protocol|iconv|checksum-choice|compress-choice|write-batch|read-batch|only-write-batch|max-delete|modify-window|block-size|info|debug|outbuf)$/.test(
        t,
      )
    )
      i++;
    else if (!t.startsWith('-')) operands.push(w);
  }
  if (rsh !== null) {
    const f = rsh.includes('\u0000')
      ? found(ctx, DYNAMIC, `${code(name + ' -e')} runs ${code(rsh)}, a command only known at run time`)
      : judgeScript(rsh, ctx, `${name} -e`);
    if (f) return f;
    if (!/^\s*(ssh|rsh)(\s+-[\w-]+(\s+[\w.@/:=-]+)?)*\s*$/.test(rsh))
      return found(ctx, 'option-runs-command', `${code(name + ' -e ' + rsh)} runs a remote-shell command the judge cannot vouch for`);
  }
  const local = operands.filter((w) => !/^[^/]*:/.test(w.text) && !/^rsync:\/\//.test(w.text));
  const dest = operands.length >= 2 ? operands.at(-1)! : null;
  if (recursive) {
    const f = kernelStateInside(
      local.filter((w) => w !== dest),
      ctx,
      `${code(name + ' -r')} of`,
    );
    if (f) return f;
  }
  if (dest && local.includes(dest)) {
    if (del) {
      const cls = targetClass(dest, ctx);
      if (cls === 'unknown')
        return found(ctx, DYNAMIC, `${code(name + ' --delete')} into ${code(dest.source)}, a relative path from a working directory only known at run time`);
      if (cls) return found(ctx, RM_RULE[cls], `${code(name + ' --delete')} into ${describeTarget(dest, cls)} deletes everything there the source lacks`);
      const f = kernelStateInside([dest], ctx, `${code(name + ' --delete')} into`);
      if (f) return f;
    }
    const f = writeTarget(dest, ctx, `${code(name)} writes into`);
    if (f) return f;
  }
  return removeSources
    ? writes(
        local.filter((w) => w !== dest),
        ctx,
        `${code(name + ' --remove-source-files')} deletes`,
      )
    : null;
};

/** rimraf is `rm -rf` as an npm package. */
const judgeRimraf: Handler = (name, args, cmd, ctx) =>
  judgeRm(name, [syntheticWord('-rf'), ...args.filter((w) => !w.text.startsWith('-') || !isLiteral(w))], cmd, ctx);

register(['unlink'], simpleTargets({}, 'deletes'));
register(['rmdir'], simpleTargets({ short: 'pv', long: ['ignore-fail-on-non-empty', 'parents', 'verbose'] }, 'removes'));
register(['truncate'], simpleTargets({ short: 'cors:', long: ['no-create', 'io-blocks', 'reference=', 'size='] }, 'truncates'));
register(
  ['shred'],
  simpleTargets({ short: 'fn:s:uvxz', long: ['force', 'iterations=', 'random-source=', 'size=', 'remove=?', 'verbose', 'exact', 'zero'] }, 'overwrites'),
);
register(['touch'], simpleTargets({ short: 'acfhmd:r:t:', long: ['no-create', 'date=', 'no-dereference', 'reference=', 'time='] }, 'creates or touches'));
register(['mkdir'], simpleTargets({ short: 'pvZm:', long: ['mode=', 'parents', 'verbose', 'context=?'] }, 'creates'));
register(['tee'], simpleTargets({ short: 'aip', long: ['append', 'ignore-interrupts', 'output-error=?'] }, 'writes to'));
register(['cp', 'gcp'], judgeCopy(CP_SPEC));
register(['install', 'ginstall'], judgeCopy(INSTALL_SPEC));
register(['ln', 'gln'], judgeCopy(LN_SPEC));
register(['mv', 'gmv'], judgeMv);
register(['rsync'], judgeRsync);
register(['rimraf'], judgeRimraf);
