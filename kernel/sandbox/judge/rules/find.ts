/**
 * find: `-delete` and `-exec`/`-execdir`/`-ok` act on every path found. The `{}` of an exec is a
 * found path; when a start path is itself protected (`/`, a system tree, a home), `{}` stands for
 * that path, since the start path is among the results. A start that holds a kernel area is refused
 * with `-delete`, `-exec` (the walk deletes or reads inside the area), or when the list of files
 * feeds another command (`find . -type f | xargs cat`, `cat $(find .)`), outside the OS sandbox.
 */
import { type Handler } from '../context.js';
import { kernelStateInside } from '../kernel-state-rule.js';
import { register } from '../registry.js';
import { writeTarget } from '../redirects.js';
import { judgeInner } from '../walk.js';
import { code, syntheticWord, type Word } from '../words.js';
import { targetClass } from './targets.js';

const judgeFind: Handler = (name, args, cmd, ctx) => {
  let i = 0;
  while (/^-([HLP]|O\d*|D)$/.test(args[i]?.text ?? '')) i += args[i]?.text === '-D' ? 2 : 1;
  const starts: Word[] = [];
  for (let w = args[i]; w && !/^[-(!),]/.test(w.text); w = args[++i]) starts.push(w);
  if (starts.length === 0) starts.push(syntheticWord('.', '.'));
  // Running a program on every file found, or handing the names to another command, reads the files.
  const execs = args.slice(i).find((w) => /^-(exec|execdir|ok|okdir)$/.test(w.text));
  if (execs || ctx.feeds) {
    const f = kernelStateInside(
      starts,
      ctx,
      execs ? `${code('find ' + execs.text)} under` : `${code('find')}, whose list of files another command reads, under`,
    );
    if (f) return f;
  }
  const protectedStarts = starts.filter((s) => {
    const cls = s.opaque ? null : targetClass(s, ctx);
    return cls !== null && cls !== 'cwd';
  });
  for (; i < args.length; i++) {
    const t = args[i]!.text; // i < args.length
    if (t === '-delete') {
      const f = kernelStateInside(starts, ctx, `${code('find -delete')} under`);
      if (f) return f;
      for (const s of protectedStarts) {
        const g = judgeInner([syntheticWord('rm'), syntheticWord('-r', '-delete'), s], cmd, ctx, 'find -delete');
        if (g) return g;
      }
    }
    const written = args[i + 1];
    if (/^-(fprint|fprint0|fprintf|fls)$/.test(t) && written) {
      const f = writeTarget(written, ctx, `${code('find ' + t)} writes to`);
      if (f) return f;
    }
    if (!['-exec', '-execdir', '-ok', '-okdir'].includes(t)) continue;
    const end = args.findIndex((w, j) => j > i && (w.text === ';' || w.text === '+'));
    const inner = args.slice(i + 1, end < 0 ? undefined : end);
    const fillings = protectedStarts.length > 0 ? protectedStarts : [null];
    for (const start of fillings) {
      const words = inner.map((w) => (start && w.text === '{}' ? start : w));
      const g = judgeInner(words, cmd, ctx, `find ${t}`);
      if (g) return g;
    }
    i = end < 0 ? args.length : end;
  }
  return null;
};

register(['find', 'gfind'], judgeFind);
