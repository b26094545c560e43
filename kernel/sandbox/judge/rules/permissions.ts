/**
 * Permission changes: modes that let everyone write and execute, and any change of owner, mode,
 * ACL or attribute on `/` or a system tree (a broken `/usr` or `/etc/sudoers` mode can lock the
 * machine or open it up).
 */
import { DYNAMIC, found, type Handler } from '../context.js';
import { kernelStateInside } from '../kernel-state-rule.js';
import { register } from '../registry.js';
import { code, DYN, show, type Word } from '../words.js';
import { noFlags, readFlag, systemTargets } from './targets.js';

/** Does a chmod mode leave everyone else able to write and execute (the danger of 777)? null: not a mode. */
function grantsWorldWriteExec(mode: string): boolean | null {
  if (/^[0-7]{1,4}$/.test(mode)) return (parseInt(mode.slice(-1), 8) & 3) === 3;
  const clauses = mode.split(',');
  if (!clauses.every((c) => /^[ugoa]*([-+=]([ugo]|[rwxXst]*))+$/.test(c))) return null;
  let write = false;
  let exec = false;
  for (const clause of clauses) {
    const who = /^[ugoa]*/.exec(clause)![0];
    // No `who` means all, less the umask, which the judge cannot know: assume it lets it through.
    if (who !== '' && !/[ao]/.test(who)) continue;
    for (const [, op, perms = ''] of clause.slice(who.length).matchAll(/([-+=])([ugo]|[rwxXst]*)/g)) {
      const copies = /^[ugo]$/.test(perms); // `o=u` copies another class: assume it has everything
      const w = copies || perms.includes('w');
      const x = copies || /[xX]/.test(perms);
      if (op === '=') [write, exec] = [w, x];
      else if (op === '+') [write, exec] = [write || w, exec || x];
      else [write, exec] = [write && !w, exec && !x];
    }
  }
  return write && exec;
}

const isChmodMode = (t: string): boolean => grantsWorldWriteExec(t) !== null;

const judgeChmod: Handler = (name, args, _cmd, ctx) => {
  const flags = noFlags();
  let mode: Word | null = null;
  let reference = false;
  const targets: Word[] = [];
  let endOfOptions = false;
  for (const w of args) {
    if (w.opaque) return found(ctx, DYNAMIC, `${code(name)} with ${show(w)}, which may expand to any mode or paths at run time`);
    if (!endOfOptions && w.text === '--') {
      endOfOptions = true;
      continue;
    }
    if (!endOfOptions && /^--ref/.test(w.text)) reference = true;
    const modeLike = mode === null && !reference && isChmodMode(w.text); // `-x` and `-rwx` are modes
    if (!endOfOptions && !modeLike && readFlag(w, flags, /R/, { recursive: 'recursive' })) continue;
    if (mode === null && !reference) mode = w;
    else targets.push(w);
  }
  if (mode && mode.text.includes(DYN)) return found(ctx, DYNAMIC, `${code(name)} with the mode ${code(mode.source)}, only known at run time`);
  if (mode && grantsWorldWriteExec(mode.text)) {
    const on = targets.map((t) => t.source).join(' ');
    return found(ctx, 'chmod-777', `${code(name + ' ' + mode.source)} lets everyone write and execute ${on ? code(on) : 'the files'}`);
  }
  const recursive = flags.recursive || flags.unknownFlags;
  return systemTargets(name, targets, recursive, 'chmod-system', ctx) ?? (recursive ? kernelStateInside(targets, ctx, `${code(name + ' -R')} on`) : null);
};

/** chown/chgrp OWNER FILE…: refused on `/` and system paths. */
const judgeChown: Handler = (name, args, _cmd, ctx) => {
  const flags = noFlags();
  const operands: Word[] = [];
  let reference = false;
  let endOfOptions = false;
  for (const w of args) {
    if (w.opaque) return found(ctx, DYNAMIC, `${code(name)} with ${show(w)}, which may expand to any owner or paths at run time`);
    if (!endOfOptions && w.text === '--') {
      endOfOptions = true;
      continue;
    }
    if (!endOfOptions && /^--ref/.test(w.text)) reference = true;
    if (!endOfOptions && readFlag(w, flags, /R/, { recursive: 'recursive' })) continue;
    operands.push(w);
  }
  const targets = reference ? operands : operands.slice(1);
  const recursive = flags.recursive || flags.unknownFlags;
  return systemTargets(name, targets, recursive, 'chown-system', ctx) ?? (recursive ? kernelStateInside(targets, ctx, `${code(name + ' -R')} on`) : null);
};

/** setfacl [-bkndRLP] [-m|-x ACL] [-M|-X FILE] FILE…: ACLs are permissions too. */
const judgeSetfacl: Handler = (name, args, _cmd, ctx) => {
  const targets: Word[] = [];
  let recursive = false;
  for (let i = 0; i < args.length; i++) {
    const w = args[i]!; // i < args.length
    const t = w.text;
    if (/^-[^-]*[mMxX]$/.test(t))
      i++; // the ACL or file follows
    else if (/^--(set|modify|remove|set-file|modify-file|remove-file|restore)$/.test(t)) i++;
    if (/^-[^-]*R/.test(t) || t === '--recursive') recursive = true;
    if (/^--restore/.test(t)) return found(ctx, DYNAMIC, `${code(name + ' --restore')} applies ACLs to the paths listed in a file the judge cannot see`);
    if (!t.startsWith('-')) targets.push(w);
  }
  return systemTargets(name, targets, recursive, 'chmod-system', ctx);
};

/** chattr [-RVf] [+-=ATTRS] FILE…: `+i` on a system file, `-R` over `/etc`. */
const judgeChattr: Handler = (name, args, _cmd, ctx) => {
  const targets = args.filter((w, i) => !/^[-+=]/.test(w.text) && args[i - 1]?.text !== '-v' && args[i - 1]?.text !== '-p');
  const recursive = args.some((w) => /^-[RVf]*R/.test(w.text));
  return systemTargets(name, targets, recursive, 'chmod-system', ctx);
};

register(['chmod'], judgeChmod);
register(['chown', 'chgrp'], judgeChown);
register(['setfacl'], judgeSetfacl);
register(['chattr', 'chflags'], judgeChattr);
