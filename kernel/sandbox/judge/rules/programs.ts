/**
 * Programs with options that run a command: tar's `--to-command`, checkpoint actions and
 * compressors, ssh's `ProxyCommand`/`LocalCommand`, pagers and editors given on the command line,
 * zip's test command, sort's compressor, make's `SHELL=`, editors' startup commands, debuggers'
 * `-ex`. The command in such an option is judged as shell where it is shell; the command is then
 * asked (`option-runs-command`) unless it is a well-known harmless choice (`tar -I zstd`,
 * `man -P cat`, `rsync -e ssh`). Package runners (`npx`, `npm exec`) run a package's program:
 * judged by that program's name, so `npx jest` runs and `npx rimraf /` does not.
 */
import path from 'node:path';
import { DYNAMIC, found, type Ctx, type Finding, type Handler } from '../context.js';
import { kernelStateInside } from '../kernel-state-rule.js';
import { register, registerWrapper } from '../registry.js';
import { writeTarget } from '../redirects.js';
import { judgeInner, judgeScript } from '../walk.js';
import { code, isLiteral, syntheticWord, type Word } from '../words.js';
import { SHELLS } from './shells-and-builtins.js';

const RUNS = 'option-runs-command';

/** Compressors and pagers everyone uses: naming one is not running an arbitrary command. */
const COMPRESSOR =
  /^\s*(gzip|pigz|bzip2|pbzip2|lbzip2|xz|pxz|pixz|zstd|pzstd|lz4|lzip|plzip|lzop|lzma|brotli|compress|gunzip|unzstd|zstdmt)(\s+-[-\w=.]+)*\s*$/;
const PAGER = /^\s*(cat|less|more|most|bat|batcat)(\s+-[-\w=]+)*\s*$/;

/** Judges an option's command as shell, then asks unless it is on the harmless list. */
function commandOption(value: string, harmless: RegExp | null, ctx: Ctx, how: string): Finding | null {
  if (value.includes('\u0000')) return found(ctx, RUNS, `${code(how)} runs a command only known at run time`);
  const f = judgeScript(value, ctx, how);
  if (f) return f;
  if (harmless?.test(value)) return null;
  return found(ctx, RUNS, `${code(how + ' ' + value)} makes the program run that command`);
}

// --- tar --------------------------------------------------------------------------------------

const TAR_VALUED_SHORT = 'bCfFgHIKLNTVX';

const judgeTar: Handler = (name, args, _cmd, ctx) => {
  let extracting = false;
  let creating = false;
  const dirs: string[] = [];
  const operands: Word[] = [];
  for (let i = 0; i < args.length; i++) {
    const w = args[i]!; // i < args.length
    const t = w.text;
    if (!isLiteral(w)) continue;
    const long = /^--([a-z-]+)(?:=(.*))?$/s.exec(t);
    if (long) {
      const [, opt = '', attached] = long;
      const value = (): string => attached ?? args[++i]?.text ?? '';
      if (/^(extract|get)$/.test(opt)) extracting = true;
      else if (/^(create|append|update)$/.test(opt)) creating = true;
      else if (opt === 'to-command') return commandOption(value(), null, ctx, 'tar --to-command');
      else if (opt === 'checkpoint-action') {
        const v = value();
        if (/^(exec|ttyout|dot|bell|echo|sleep|wait|totals)=?/.test(v) && v.startsWith('exec='))
          return commandOption(v.slice(5), null, ctx, 'tar --checkpoint-action=exec');
      } else if (opt === 'use-compress-program') {
        const f = commandOption(value(), COMPRESSOR, ctx, 'tar --use-compress-program');
        if (f) return f;
      } else if (/^(info-script|new-volume-script|rsh-command|rmt-command)$/.test(opt)) return commandOption(value(), null, ctx, `tar --${opt}`);
      else if (opt === 'directory') dirs.push(value());
      continue;
    }
    // `tar -xzf a.tgz -C dir`, and the old style `tar xzf a.tgz`.
    const cluster = t.startsWith('-') ? t.slice(1) : i === 0 ? t : null;
    if (cluster === null) {
      operands.push(w);
      continue;
    }
    for (let j = 0; j < cluster.length; j++) {
      const c = cluster[j]!; // j < cluster.length
      if (c === 'x') extracting = true;
      if (c === 'c' || c === 'r' || c === 'u') creating = true;
      if (!TAR_VALUED_SHORT.includes(c)) continue;
      const attachedValue = t.startsWith('-') ? cluster.slice(j + 1) : '';
      const value = attachedValue || args[++i]?.text || '';
      if (c === 'I') {
        const f = commandOption(value, COMPRESSOR, ctx, 'tar -I');
        if (f) return f;
      } else if (c === 'F') return commandOption(value, null, ctx, 'tar -F');
      else if (c === 'C') dirs.push(value);
      if (attachedValue) break;
    }
  }
  if (creating) {
    // What goes into the archive, from the folder `-C` names, if any.
    const base = dirs.at(-1);
    const read = operands.map((w) => (base && !w.text.startsWith('/') && !w.text.startsWith('~') ? syntheticWord(path.posix.join(base, w.text), w.source) : w));
    const f = kernelStateInside(read, ctx, `${code(name + ' -c')} archiving`);
    if (f) return f;
  }
  if (!extracting) return null;
  for (const d of dirs) {
    const f = writeTarget(syntheticWord(d), ctx, `${code('tar -x')} extracts into`);
    if (f) return f;
  }
  return null;
};

// --- ssh, scp, sftp ----------------------------------------------------------------------------

const SSH_RUNNING_KEY = /^(proxycommand|localcommand|permitlocalcommand|knownhostscommand|match|include|pkcs11provider|securitykeyprovider|sshaskpass)$/i;

const judgeSsh: Handler = (name, args, _cmd, ctx) => {
  const valued = name === 'ssh' ? 'BbcDEeFIiJLlmOoPpQRSWw' : name === 'scp' ? 'cDFiJlOoPSX' : 'BbcDFiJloPRSsX';
  const operands: Word[] = [];
  let recursive = false;
  for (let i = 0; i < args.length; i++) {
    const t = args[i]!.text; // i < args.length
    if (t === '--' || !t.startsWith('-')) {
      if (name === 'ssh') break; // the host: what follows runs remotely
      if (t !== '--') operands.push(args[i]!);
      continue;
    }
    if (/^-[a-zA-Z]*r/.test(t) && !valued.includes(t[1] ?? '')) recursive = true;
    const letter = t[1];
    if (letter === undefined || !valued.includes(letter)) continue;
    const value = t.length > 2 ? t.slice(2) : (args[++i]?.text ?? '');
    if (letter === 'o') {
      const [key = '', ...rest] = value.split(/[=\s]+/);
      if (SSH_RUNNING_KEY.test(key)) {
        if (/^permitlocalcommand$/i.test(key) && /^no$/i.test(rest.join(''))) continue;
        if (/^(proxycommand|localcommand|knownhostscommand)$/i.test(key) && rest.length > 0) {
          const f = judgeScript(rest.join(' ').replace(/%[a-zA-Z%]/g, 'X'), ctx, `${name} -o ${key}`);
          if (f) return f;
        }
        return found(ctx, RUNS, `${code(`${name} -o ${value}`)} makes ${name} run a local command`);
      }
    } else if (letter === 'F' && value !== '/dev/null')
      return found(ctx, RUNS, `${code(`${name} -F ${value}`)} reads a config file whose commands (ProxyCommand, LocalCommand) the judge cannot see`);
    else if (letter === 'S' && name !== 'ssh') return commandOption(value, /^\s*ssh\s*$/, ctx, `${name} -S`);
    else if (letter === 'D' && name === 'sftp') return found(ctx, RUNS, `${code('sftp -D ' + value)} runs a local program as the server`);
  }
  if (name === 'scp' && recursive) {
    const local = operands.slice(0, -1).filter((w) => !/^[^/]*:/.test(w.text));
    return kernelStateInside(local, ctx, `${code('scp -r')} of`);
  }
  return null;
};

// --- pagers, editors, debuggers ------------------------------------------------------------------

/** `less '+!cmd'`: a `+` command with a shell escape or pipe. */
const judgeLess: Handler = (name, args, _cmd, ctx) => {
  const escape = args.find((w) => /^\+.*[!|]/.test(w.text) || /^--(lesskey-file|lesskey-src)/.test(w.text));
  return escape ? found(ctx, RUNS, `${code(name + ' ' + escape.source)} runs a command from inside ${name}`) : null;
};

const judgeMan: Handler = (name, args, _cmd, ctx) => {
  for (let i = 0; i < args.length; i++) {
    const t = args[i]!.text; // i < args.length
    const m = /^(?:-P|--pager=?|-H|--html=?)(.*)$/s.exec(t);
    if (!m) continue;
    const value = m[1] ? m[1] : /^(-P|--pager)$/.test(t) ? (args[++i]?.text ?? '') : '';
    if (value === '') continue;
    return commandOption(value, PAGER, ctx, `${name} ${t.startsWith('-P') || t.startsWith('--pager') ? '-P' : '-H'}`);
  }
  return null;
};

/** vim `-c CMD`, `+CMD`, `--cmd CMD`, `-S FILE`, `-u FILE`, `-s FILE`: editor commands (`:!sh`) the judge cannot read. */
const judgeVim: Handler = (name, args, _cmd, ctx) => {
  const opt = args.find(
    (w) => /^(-c|--cmd|-S|-s|-u|-U|--startuptime)$/.test(w.text) || /^-c./.test(w.text) || (/^\+./.test(w.text) && !/^\+(\d+|\/.*)$/.test(w.text)),
  );
  return opt ? found(ctx, RUNS, `${code(name + ' ' + opt.source)} runs editor commands, which can run shell commands, that the judge cannot check`) : null;
};

const judgeEmacs: Handler = (name, args, _cmd, ctx) => {
  const opt = args.find((w) => /^(--eval|-l|--load|-f|--funcall|--script|-x)(=|$)/.test(w.text));
  return opt ? found(ctx, 'inline-code', `${code(name + ' ' + opt.source)} runs Lisp code the judge cannot check`) : null;
};

const judgeGdb: Handler = (name, args, _cmd, ctx) => {
  const opt = args.find((w) => /^(-ex|-iex|-x|-ix|--eval-command|--init-eval-command|--command|--init-command|-command)(=|$)/.test(w.text));
  return opt
    ? found(ctx, 'inline-code', `${code(name + ' ' + opt.source)} runs debugger commands, which can run shell commands, that the judge cannot check`)
    : null;
};

// --- zip, sort, make ----------------------------------------------------------------------------

const judgeZip: Handler = (name, args, _cmd, ctx) => {
  let recursive = false;
  const operands: Word[] = [];
  for (let i = 0; i < args.length; i++) {
    const t = args[i]!.text; // i < args.length
    if (t === '-TT' || t === '--unzip-command') return commandOption(args[i + 1]?.text ?? '', /^\s*unzip(\s+-[-\w]+)*\s*$/, ctx, `${name} ${t}`);
    if (/^--unzip-command=/.test(t)) return commandOption(t.slice(16), /^\s*unzip(\s+-[-\w]+)*\s*$/, ctx, `${name} --unzip-command`);
    if (/^(-x|-i|--exclude|--include)$/.test(t)) break; // patterns follow
    if (/^(-b|-n|-t|-tt|-P|-O|--temp-path|--suffixes|--password|--output-file)$/.test(t)) i++;
    else if (/^-[a-zA-Z0-9]*[rR]/.test(t) || /^--recurse-(paths|patterns)$/.test(t)) recursive = true;
    else if (!t.startsWith('-')) operands.push(args[i]!);
  }
  return recursive ? kernelStateInside(operands.slice(1), ctx, `${code(name + ' -r')} archiving`) : null;
};

const judgeSort: Handler = (name, args, _cmd, ctx) => {
  for (let i = 0; i < args.length; i++) {
    const t = args[i]!.text; // i < args.length
    const m = /^--compress-program(?:=(.*))?$/.exec(t);
    if (m) return commandOption(m[1] ?? args[i + 1]?.text ?? '', COMPRESSOR, ctx, `${name} --compress-program`);
  }
  return null;
};

const judgeMake: Handler = (name, args, _cmd, ctx) => {
  for (let i = 0; i < args.length; i++) {
    const w = args[i]!; // i < args.length
    const t = w.text;
    if (/^(--eval(=|$)|-E)/.test(t))
      return found(ctx, 'inline-code', `${code(name + ' ' + t)} evaluates makefile text, whose recipes run commands, given on the command line`);
    const shell = /^(SHELL|\.SHELLFLAGS|MAKESHELL)=(.*)$/s.exec(t);
    if (shell && !(shell[1] === 'SHELL' && isLiteral(w) && SHELLS.includes((shell[2] ?? '').split('/').pop()!)))
      return found(ctx, RUNS, `${code(name + ' ' + t)} makes every recipe run through that program`);
  }
  return null;
};

/** sqlite3's dot-commands `.shell`, `.system`, `.once |cmd`, `.output |cmd`, `.import '|cmd'` run commands. */
const judgeSqlite: Handler = (name, args, _cmd, ctx) => {
  const dot = args.find((w) => /(^|\n|;)\s*\.(shell|system|once\s+['"]?\||output\s+['"]?\||import\s+['"]?\||load\b)/.test(w.text));
  return dot ? found(ctx, 'inline-code', `${code(name + ' ' + dot.source)} runs a dot-command that runs a command or loads code`) : null;
};

// --- package runners ----------------------------------------------------------------------------

/** `npx PKG ARGS`, `npm exec [--] PKG`, `pnpm exec`, `yarn exec|dlx`, `bunx`: judged as `PKG ARGS`. */
const judgePackageRunner: Handler = (name, args, cmd, ctx) => {
  const scriptShell = args.find((w) => /^--script-shell/.test(w.text));
  if (scriptShell) return found(ctx, RUNS, `${code(name + ' ' + scriptShell.source)} makes every package script run through that program`);
  let rest = args;
  if (['npm', 'pnpm', 'yarn', 'bun'].includes(name)) {
    const sub = rest.findIndex((w) => !w.text.startsWith('-'));
    if (sub < 0) return null;
    const word = rest[sub]!.text;
    // `yarn memo …`, `pnpm run memo …`: yarn, pnpm and bun run a package's program by its name too.
    const bin = word === 'run' ? rest[sub + 1] : rest[sub];
    if (name !== 'npm' && bin && /^memo(-kernel)?$/i.test(bin.text)) return judgeInner(rest.slice(rest.indexOf(bin)), cmd, ctx, name);
    if (!['exec', 'x', 'dlx'].includes(word)) return null;
    rest = rest.slice(sub + 1);
  }
  for (let i = 0; i < rest.length; i++) {
    const t = rest[i]!.text; // i < rest.length
    if (t === '-c' || t === '--call') {
      const body = rest[i + 1];
      if (!body || !isLiteral(body)) return found(ctx, DYNAMIC, `${code(name + ' ' + t)} runs a command only known at run time`);
      return judgeScript(body.text, ctx, `${name} ${t}`);
    }
    if (t === '--') return rest[i + 1] ? judgeInner(rest.slice(i + 1), cmd, ctx, name) : null;
    if (/^(-p|--package)$/.test(t)) i++;
    else if (!t.startsWith('-')) return judgeInner(rest.slice(i), cmd, ctx, name);
  }
  return null;
};

register(['tar', 'gtar', 'bsdtar'], judgeTar);
register(['sqlite3', 'sqlite'], judgeSqlite);
register(['ssh', 'scp', 'sftp'], judgeSsh);
register(['less', 'more', 'most'], judgeLess);
register(['man'], judgeMan);
register(['vim', 'vi', 'nvim', 'view', 'ex', 'gvim', 'rvim', 'vimdiff', 'evim'], judgeVim);
register(['emacs', 'emacsclient'], judgeEmacs);
register(['gdb', 'lldb'], judgeGdb);
register(['zip'], judgeZip);
register(['sort', 'gsort'], judgeSort);
register(['make', 'gmake', 'bmake'], judgeMake);
registerWrapper(['npx', 'pnpx', 'bunx', 'npm', 'pnpm', 'yarn', 'bun-x'], judgePackageRunner);
