/**
 * Redirects: where a command's output goes and its input comes from. A write is judged on the path
 * it lands on (`//`, `/./`, `..` and the working directory resolved): a disk device, a kernel
 * interface, a system file, a cron or launchd job folder, or bash's `/dev/tcp` sockets. Reads of
 * ordinary files are not its business.
 */
import type { Node } from 'web-tree-sitter';
import { DYNAMIC, found, lookupIn, type Ctx, type Finding, type Simple } from './context.js';
import { kernelStateWords } from './kernel-state-rule.js';
import { candidates, classifyTarget, deviceKind, isNetworkPath, normalize, scheduleDir } from './paths.js';
import { code, ifEmpty, isLiteral, wordsOf, type Word } from './words.js';

export const SYSTEM_FILES = 'system-files';
export const KERNEL_INTERFACE = 'kernel-interface';

/** What writing `w` (a file operand or redirect target) may destroy, or null. `how` names the writer. */
export function writeTarget(w: Word, ctx: Ctx, how: string, content?: readonly Word[]): Finding | null {
  if (w.opaque) return null; // `> $LOG`: only known at run time, like any file name
  const kernel = kernelStateWords([w], ctx, how, 'change');
  if (kernel) return kernel;
  const text = ifEmpty(w);
  if (text === '' || (!isLiteral(w) && !text.startsWith('/'))) return null;
  const all = candidates(text, ctx.scope.cwd);
  let harmless = all !== null && all.length > 0;
  for (const raw of all ?? []) {
    const abs = normalize(raw);
    if (scheduleDir(abs)) return found(ctx, 'schedule', `${how} ${code(w.source)}, where cron, at or launchd pick up jobs to run later, outside the command`);
    if (raw.startsWith('~')) {
      harmless = false;
      continue;
    }
    if (isNetworkPath(abs)) return found(ctx, 'bash-interactive', `${how} ${code(w.source)}, which opens a network connection from the shell`);
    const kind = deviceKind(abs);
    if (kind === 'disk') return found(ctx, 'dd', `${how} the disk device ${code(w.source)}, overwriting the disk with raw data`);
    if (kind === 'kernel') return kernelWrite(abs, w, ctx, how, content);
    if (kind !== 'harmless') harmless = false;
  }
  if (harmless) return null;
  const cls = classifyTarget(text, ctx.scope.cwd, ctx.run.start);
  if (cls === 'unknown') return found(ctx, DYNAMIC, `${how} ${code(w.source)}, a relative path from a working directory only known at run time`);
  if (cls === 'root' || cls === 'system')
    return found(ctx, SYSTEM_FILES, `${how} ${code(w.source)}, ${cls === 'root' ? 'the filesystem root' : 'a system path'}`);
  return null;
}

/** `echo b > /proc/sysrq-trigger` reboots; other writes to kernel interfaces change the running kernel. */
function kernelWrite(abs: string, w: Word, ctx: Ctx, how: string, content?: readonly Word[]): Finding {
  if (abs === '/proc/sysrq-trigger') {
    const key = content?.find((c) => isLiteral(c) && !/^-[neE]+$/.test(c.text))?.text.trim()[0];
    const rule = key === 'b' || key === 'c' ? 'reboot' : key === 'o' ? 'poweroff' : null;
    if (rule)
      return found(
        ctx,
        rule,
        `Writing ${code(key!)} to ${code(w.source)} makes the kernel ${rule === 'poweroff' ? 'power the machine off' : 'restart the machine'} at once`,
      );
  }
  return found(ctx, KERNEL_INTERFACE, `${how} ${code(w.source)}, a kernel interface that changes the running system`);
}

const writes = (r: Node): boolean => r.children.some((c) => c !== null && !c.isNamed && />/.test(c.type));

/** The words a redirect points at (not `2>&1` duplications). */
export function redirectDestinations(r: Node, ctx: Ctx): Word[] {
  if (r.type !== 'file_redirect') return [];
  const out: Word[] = [];
  for (const dest of r.childrenForFieldName('destination')) {
    if (dest.type === 'number' && r.children.some((c) => c?.type === '>&' || c?.type === '<&')) continue;
    out.push(...wordsOf(dest, lookupIn(ctx.scope)));
  }
  return out;
}

/** Judges a command's redirects; `cmd` (when it is a simple command) tells what it writes. */
export function judgeRedirects(redirects: readonly Node[], ctx: Ctx, cmd: Simple | null): Finding | null {
  for (const r of redirects) {
    if (r.type !== 'file_redirect') continue;
    const write = writes(r);
    for (const w of redirectDestinations(r, ctx)) {
      if (!write) {
        if (isLiteral(w) && isNetworkPath(normalize(w.text)))
          return found(ctx, 'bash-interactive', `A redirect from ${code(w.source)} opens a network connection from the shell`);
        continue;
      }
      const f = writeTarget(w, ctx, 'A redirect writes to', cmd && /^(echo|printf)$/.test(cmd.words[0]?.text ?? '') ? cmd.words.slice(1) : undefined);
      if (f) return f;
    }
  }
  return null;
}

type StdinSource = { script: string } | { unknown: string } | { file: Word } | null;

/** Where a command's standard input comes from, as far as its own redirects say. */
export function stdinOf(cmd: Simple, ctx: Ctx): StdinSource {
  for (const r of cmd.redirects) {
    if (r.type === 'heredoc_redirect') {
      const start = r.namedChildren.find((c) => c?.type === 'heredoc_start');
      const body = r.namedChildren.find((c) => c?.type === 'heredoc_body');
      if (!body) return { script: '' };
      const quoted = /['"\\]/.test(start?.text ?? '');
      if (quoted) return { script: body.text };
      if (body.namedChildren.some((c) => c?.type !== 'heredoc_content')) return { unknown: 'a heredoc with expansions' };
      return { script: body.text.replace(/\\([$`\\])/g, '$1').replace(/\\\n/g, '') };
    }
    if (r.type === 'herestring_redirect') {
      const arg = r.namedChildren.find((c) => c !== null && c.type !== 'file_descriptor');
      const words = arg ? wordsOf(arg, lookupIn(ctx.scope)) : [];
      const w = words[0];
      if (words.length !== 1 || !w || !isLiteral(w)) return { unknown: `the here-string ${code(arg?.text ?? '')}` };
      return { script: w.text };
    }
    if (r.type === 'file_redirect') {
      const fd = r.childForFieldName('descriptor')?.text ?? '0';
      const reads = r.children.some((c) => c !== null && (c.type === '<' || c.type === '<&' || c.type === '<>'));
      if (!reads || fd !== '0') continue;
      const dest = redirectDestinations(r, ctx)[0];
      if (!dest || dest.procSub || !isLiteral(dest)) return { unknown: `${code(r.text)}, generated at run time` };
      return { file: dest };
    }
  }
  return null;
}
