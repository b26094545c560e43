/**
 * awk and sed. Their programs are usually harmless text processing, so they are read rather than
 * asked: an awk program that calls `system()`, pipes to or from a command, or loads an extension,
 * and a sed script with the `e` command or `s///e` flag, run commands the judge cannot check
 * (`inline-code`). Files they write (`print > "f"`, sed `w f`, `sed -i`) are judged like any write.
 */
import { found, type Ctx, type Finding, type Handler } from '../context.js';
import { kernelStateWords } from '../kernel-state-rule.js';
import { getopt } from '../options.js';
import { register } from '../registry.js';
import { writeTarget } from '../redirects.js';
import { code, DYN, ifEmpty, isLiteral, syntheticWord } from '../words.js';

/** A file an awk or sed program writes to: a system path, a device, a kernel area. */
function programWrite(file: string, ctx: Ctx, how: string): Finding | null {
  if (/^\/dev\/(stdout|stderr|null|fd\/[012])$/.test(file) || file === '-') return null;
  const w = syntheticWord(file, file);
  return kernelStateWords([w], ctx, how) ?? writeTarget(w, ctx, how);
}

// --- awk ----------------------------------------------------------------------------------------

const judgeAwk: Handler = (name, args, _cmd, ctx) => {
  const parsed = getopt(args, {
    short: 'f:v:F:e:E:i:l:bcd::DghLMnNo::Op::PrSstVW:',
    long: [
      'file=',
      'assign=',
      'field-separator=',
      'source=',
      'exec=',
      'include=',
      'load=',
      'characters-as-bytes',
      'traditional',
      'dump-variables=?',
      'debug=?',
      'gen-pot',
      'help',
      'lint=?',
      'bignum',
      'use-lc-numeric',
      'non-decimal-data',
      'pretty-print=?',
      'optimize',
      'profile=?',
      'posix',
      're-interval',
      'no-optimize',
      'sandbox',
      'lint-old',
      'version',
      'csv',
    ],
  });
  if ('unknown' in parsed)
    return found(
      ctx,
      'inline-code',
      `${code(name)} with ${code(parsed.unknown.source)}, an option the judge does not know, runs an awk program it cannot check`,
    );
  if (parsed.options.has('l') || parsed.options.has('load'))
    return found(ctx, 'inline-code', `${code(name + ' -l')} loads a compiled extension the judge cannot check`);
  const sandbox = parsed.options.has('S') || parsed.options.has('sandbox');
  const sources = parsed.all.filter(([k]) => k === 'e' || k === 'source').map(([, v]) => String(v));
  const hasFile = parsed.options.has('f') || parsed.options.has('file') || parsed.options.has('E') || parsed.options.has('exec');
  const program = !hasFile && sources.length === 0 ? parsed.operands[0] : undefined;
  const texts = program ? [program] : sources.map((s) => syntheticWord(s, s));
  if (sandbox) return null;
  for (const p of texts) {
    if (p.opaque) return found(ctx, 'inline-code', `${code(name)} runs the program ${code(p.source)}, only known at run time`);
    const text = ifEmpty(p);
    const why = /\bsystem\s*\(/.test(text)
      ? 'calls `system()`'
      : /\|\s*getline|\|&/.test(text)
        ? 'reads the output of a command'
        : /\bprintf?\b[^;{}\n]*[^|]\|[^|]/.test(text)
          ? 'pipes its output into a command'
          : /@load|\bextension\s*\(/.test(text)
            ? 'loads an extension'
            : null;
    if (why) return found(ctx, 'inline-code', `The ${code(name)} program ${code(p.source)} ${why}, running commands the judge cannot check`);
    for (const m of text.matchAll(/\bprintf?\b[^;{}\n]*?>>?\s*("([^"]*)"|[^\s;})]+)/g)) {
      if (m[2] === undefined) return found(ctx, 'inline-code', `The ${code(name)} program writes to ${code(m[1] ?? '')}, a file only known at run time`);
      const f = programWrite(m[2], ctx, `The ${code(name)} program writes to`);
      if (f) return f;
    }
    if (p.text.includes(DYN)) return found(ctx, 'inline-code', `${code(name)} runs the program ${code(p.source)}, part of which is only known at run time`);
  }
  return null;
};

// --- sed ----------------------------------------------------------------------------------------

interface SedScan {
  exec: boolean;
  writes: string[];
  unreadable: boolean;
}

/** Reads a GNU sed script far enough to find `e` (run a command) and `w` (write a file). */
export function scanSed(s: string): SedScan {
  const out: SedScan = { exec: false, writes: [], unreadable: false };
  let i = 0;
  const toEol = (): string => {
    const start = i;
    while (i < s.length && s[i] !== '\n') i += s[i] === '\\' ? 2 : 1;
    return s.slice(start, i).trim();
  };
  const delimited = (d: string): boolean => {
    while (i < s.length && s[i] !== d) {
      if (s[i] === '\n') return false;
      i += s[i] === '\\' ? 2 : 1;
    }
    i++;
    return i <= s.length;
  };
  const address = (): boolean => {
    if (/[0-9]/.test(s[i] ?? '')) while (/[0-9~]/.test(s[i] ?? '')) i++;
    else if (s[i] === '$') i++;
    else if (s[i] === '/' || s[i] === '\\') {
      const d = s[i] === '\\' ? s[++i] : '/';
      i++;
      if (d === undefined || !delimited(d)) return false;
      while (/[IM]/.test(s[i] ?? '')) i++;
    }
    return true;
  };
  while (i < s.length) {
    while (/[\s;]/.test(s[i] ?? '')) i++;
    if (i >= s.length) break;
    if (!address()) return { ...out, unreadable: true };
    if (s[i] === ',') {
      i++;
      if (s[i] === '+' || s[i] === '~') i++;
      if (!address()) return { ...out, unreadable: true };
    }
    while (s[i] === ' ' || s[i] === '!') i++;
    const c = s[i++];
    if (c === undefined) break;
    if ('{}=dDgGhHnNpPxzF'.includes(c)) continue;
    if (c === '#' || c === ':' || 'aic'.includes(c) || 'rR'.includes(c)) toEol();
    else if (c === 'w' || c === 'W') out.writes.push(toEol());
    else if (c === 'e') {
      out.exec = true;
      toEol();
    } else if ('btT'.includes(c)) while (i < s.length && !/[;\n}]/.test(s[i] ?? '')) i++;
    else if ('lLqQv'.includes(c)) while (/[0-9 .]/.test(s[i] ?? '')) i++;
    else if (c === 's' || c === 'y') {
      const d = s[i++];
      if (d === undefined || d === '\n' || d === '\\' || !delimited(d) || !delimited(d)) return { ...out, unreadable: true };
      if (c === 'y') continue;
      while (i < s.length && !/[;\n}]/.test(s[i] ?? '')) {
        const flag = s[i++] ?? ''; // i < s.length
        if (flag === 'e') out.exec = true;
        else if (flag === 'w') {
          out.writes.push(toEol());
          break;
        } else if (!/[gpiImM0-9\s]/.test(flag)) return { ...out, unreadable: true };
      }
    } else return { ...out, unreadable: true };
  }
  return out;
}

const judgeSed: Handler = (name, args, _cmd, ctx) => {
  const parsed = getopt(args, {
    short: 'ne:f:i::EsurzbSl:',
    long: [
      'quiet',
      'silent',
      'expression=',
      'file=',
      'in-place=?',
      'regexp-extended',
      'separate',
      'unbuffered',
      'null-data',
      'zero-terminated',
      'binary',
      'sandbox',
      'posix',
      'debug',
      'follow-symlinks',
      'line-length=',
      'help',
      'version',
    ],
    permute: true,
  });
  if ('unknown' in parsed) return found(ctx, 'inline-code', `${code(name)} with ${code(parsed.unknown.source)}, an option the judge does not know`);
  const scripts = parsed.all.filter(([k]) => k === 'e' || k === 'expression').map(([, v]) => syntheticWord(String(v)));
  const hasFile = parsed.options.has('f') || parsed.options.has('file');
  let files = parsed.operands;
  if (scripts.length === 0 && !hasFile && files[0]) {
    scripts.push(files[0]);
    files = files.slice(1);
  }
  if (parsed.options.has('i') || parsed.options.has('in-place')) {
    for (const f of files) {
      const g = writeTarget(f, ctx, `${code(name + ' -i')} rewrites`);
      if (g) return g;
    }
  }
  if (parsed.options.has('sandbox')) return null;
  for (const w of scripts) {
    if (w.opaque) return found(ctx, 'inline-code', `${code(name)} runs the script ${code(w.source)}, only known at run time`);
    const scan = scanSed(ifEmpty(w));
    if (scan.exec) return found(ctx, 'inline-code', `The ${code(name)} script ${code(w.source)} runs a command (\`e\`) the judge cannot check`);
    if (scan.unreadable && isLiteral(w))
      return found(ctx, 'inline-code', `The ${code(name)} script ${code(w.source)} is not one the judge can read, so what it runs cannot be checked`);
    for (const file of scan.writes) {
      const f = programWrite(file, ctx, `The ${code(name)} script writes to`);
      if (f) return f;
    }
  }
  return null;
};

register(['awk', 'gawk', 'mawk', 'nawk', 'busybox-awk', 'original-awk'], judgeAwk);
register(['sed', 'gsed'], judgeSed);
