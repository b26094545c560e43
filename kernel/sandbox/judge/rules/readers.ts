/**
 * Recursive readers: programs that read every file under a folder (`grep -r`, `rg`, `ag`, `ack`,
 * `diff -r`; `tar c`, `zip -r`, `cp -r`, `rsync -r`, `scp -r` and `find -exec` are judged in their
 * own files). Over a folder that holds a kernel area (the root, with the data folder inside it) they
 * read the kernel's files too, and what they print can be turned into something the secret
 * scrubber no longer recognises (`grep -r . . | rev`): refused as `kernel-state`, except in the OS
 * sandbox, where the areas do not exist (see kernel-state-rule.ts).
 */
import type { Handler } from '../context.js';
import { kernelStateInside } from '../kernel-state-rule.js';
import { register } from '../registry.js';
import { code, syntheticWord, type Word } from '../words.js';

/** The folders a search reads: its operands after the pattern, or `.` when it has none. */
function searched(args: readonly Word[], valued: RegExp, patternOption: RegExp, listsOnly: RegExp | null): Word[] {
  const operands: Word[] = [];
  let patternGiven = false;
  for (let i = 0; i < args.length; i++) {
    const w = args[i]!; // i < args.length
    const t = w.text;
    if (t === '--') {
      operands.push(...args.slice(i + 1));
      break;
    }
    if (!t.startsWith('-') || t === '-') {
      operands.push(w);
      continue;
    }
    if (patternOption.test(t) || listsOnly?.test(t)) patternGiven = true;
    if (valued.test(t)) i++;
  }
  const paths = patternGiven ? operands : operands.slice(1);
  return paths.length > 0 ? paths : [syntheticWord('.', '.')];
}

const GREP_VALUED =
  /^(-[a-zA-Z]*[efmABCdD]|--(regexp|file|max-count|after-context|before-context|context|directories|devices|label|binary-files|include|exclude|exclude-dir|exclude-from|group-separator|color|colour))$/;

/** `grep -r PATTERN DIR`, `grep -R`, `-d recurse`: recursive only with those; with no DIR, the working directory. */
const judgeGrep: Handler = (name, args, _cmd, ctx) => {
  const recursive = args.some(
    (w, i) =>
      /^-[a-zA-Z]*[rR]/.test(w.text) ||
      /^--(recursive|dereference-recursive|directories=recurse)$/.test(w.text) ||
      /^-d ?recurse$/.test(w.text) ||
      (/^(-d|--directories)$/.test(w.text) && args[i + 1]?.text === 'recurse'),
  );
  if (!recursive) return null;
  return kernelStateInside(searched(args, GREP_VALUED, /^(-[a-zA-Z]*[ef]|--(regexp|file)(=|$))/, null), ctx, `${code(name + ' -r')} over`);
};

const RG_VALUED =
  /^(-[a-zA-Z]*[efgtTmABCjMEr]|--(regexp|file|glob|iglob|type|type-not|type-add|max-count|after-context|before-context|context|threads|max-columns|encoding|replace|max-depth|max-filesize|ignore-file|pre|pre-glob|sort|sortr|color|colors|path-separator|context-separator|field-match-separator|engine|dfa-size-limit|regex-size-limit))$/;

/** rg, ag, ack: recursive by default. */
const judgeSearcher: Handler = (name, args, _cmd, ctx) =>
  kernelStateInside(searched(args, RG_VALUED, /^(-[a-zA-Z]*[ef]|--(regexp|file)(=|$))/, /^--files$/), ctx, `${code(name)} searching`);

/** `diff -r A B` reads both trees. */
const judgeDiff: Handler = (name, args, _cmd, ctx) => {
  if (!args.some((w) => /^-[a-zA-Z]*r/.test(w.text) || w.text === '--recursive')) return null;
  return kernelStateInside(
    args.filter((w) => !w.text.startsWith('-')),
    ctx,
    `${code(name + ' -r')} of`,
  );
};

register(['grep', 'egrep', 'fgrep', 'zgrep', 'ugrep'], judgeGrep);
register(['rg', 'ripgrep', 'ag', 'ack', 'ack-grep', 'pt', 'ug'], judgeSearcher);
register(['diff', 'colordiff'], judgeDiff);
