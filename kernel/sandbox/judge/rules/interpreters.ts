/**
 * Interpreters of other languages. The judge reads shell, not Python or Perl: code handed to an
 * interpreter on the command line (`python3 -c`, `perl -e`, `node -e`…) or fed to it on standard
 * input (`curl … | python3`, `python3 < x`) is something it cannot vouch for, so such a command is
 * asked (`inline-code`, `interpreter-pipe`). A script named by path is run like any program.
 */
import { found, type Ctx, type Finding, type Handler, type Simple } from '../context.js';
import { register, registerPattern } from '../registry.js';
import { stdinOf, writeTarget } from '../redirects.js';
import { judgeInner } from '../walk.js';
import { code, isLiteral, type Word } from '../words.js';
import { isMemoEntry } from './memo.js';

interface Scan {
  /** The option that carries inline code, if any. */
  inline?: string | undefined;
  /** The index of the script operand (or args.length when there is none). */
  script: number;
  /** A module or subcommand runs instead of a script (`python3 -m`, `deno run`): no stdin program. */
  noStdin?: boolean;
  /** Perl and Ruby's in-place edit: the operands after the script are rewritten. */
  inPlace?: boolean;
  /** Where the file operands start (after the script, or after the inline code). */
  files?: number;
}

/**
 * Scans getopt-like clusters: `inline` letters carry code; `rest` letters take the rest of the
 * word (or the next word when nothing follows); `valued` long options take the next word.
 */
function clusters(args: readonly Word[], inline: string, rest: string, long: { inline?: RegExp; valued?: RegExp; module?: RegExp } = {}): Scan {
  let inPlace = false;
  for (let i = 0; i < args.length; i++) {
    const t = args[i]!.text; // i < args.length
    if (t === '--') return { script: i + 1, inPlace };
    if (t === '-' || !t.startsWith('-')) return { script: i, inPlace };
    if (long.module?.test(t)) return { script: args.length, noStdin: true };
    if (t.startsWith('--')) {
      if (long.inline?.test(t)) return { inline: t.split('=')[0], script: args.length, inPlace };
      if (long.valued?.test(t) && !t.includes('=')) i++;
      continue;
    }
    for (let j = 1; j < t.length; j++) {
      const c = t[j]!; // j < t.length
      if (inline.includes(c)) {
        // The code is the rest of the word, or the next word; options and files may follow it.
        const next = j === t.length - 1 ? i + 2 : i + 1;
        const more = clusters(args.slice(next), inline, rest, long);
        return { inline: '-' + c, script: args.length, inPlace: inPlace || !!more.inPlace, files: next + (more.files ?? more.script) };
      }
      if (c === 'i') inPlace = true;
      if (c === '0' || c === 'l') {
        while (/[0-9]/.test(t[j + 1] ?? '')) j++; // `-l`, `-0777`: digits only
        continue;
      }
      if (rest.includes(c)) {
        if (j === t.length - 1 && !'i0lx'.includes(c)) i++; // the value is the next word
        break;
      }
    }
  }
  return { script: args.length, inPlace };
}

type Scanner = (args: readonly Word[]) => Scan;

const SCANNERS = {
  python: (a) => clusters(a, 'c', 'mWXQ', { module: /^-m/ }),
  perl: (a) => clusters(a, 'eE', 'iImMxCdDF'),
  ruby: (a) => clusters(a, 'e', 'iIrEFCxKWT'),
  node: (a) =>
    clusters(a, 'ep', 'rC', {
      inline: /^--(eval|print)(=|$)/,
      valued:
        /^--(require|import|loader|experimental-loader|conditions|env-file|input-type|title|disable-warning|test-reporter|test-reporter-destination|watch-path|inspect-port|redirect-warnings|stack-trace-limit)$/,
    }),
  bun: (a) =>
    ['run', 'test', 'install', 'add', 'remove', 'build', 'x', 'create', 'init', 'pm', 'link', 'upgrade', 'update', 'outdated', 'publish'].includes(
      a[0]?.text ?? '',
    )
      ? { script: a.length, noStdin: true }
      : clusters(a, 'ep', 'r', { inline: /^--(eval|print)(=|$)/ }),
  deno: (a) =>
    a[0]?.text === 'eval'
      ? { inline: 'eval', script: a.length }
      : a[0]?.text === 'repl' && a.some((w) => /^--eval/.test(w.text))
        ? { inline: 'repl --eval', script: a.length }
        : { script: a.length, noStdin: true },
  php: (a) => clusters(a, 'rRBE', 'dcfztSn', {}),
  lua: (a) => clusters(a, 'e', 'l'),
  rscript: (a) => clusters(a, 'e', '', { inline: /^--(expr|eval)/ }),
  r: (a) => (a[0]?.text === 'CMD' ? { script: a.length, noStdin: true } : clusters(a, 'e', '', {})),
  osascript: (a) => clusters(a, 'e', 'lis'),
  expect: (a) => clusters(a, 'c', 'fD'),
  julia: (a) => clusters(a, 'eE', 'LJCOtpM', { inline: /^--(eval|print)(=|$)/ }),
  pwsh: (a) => {
    const i = a.findIndex((w) => /^-(c|command|e|ec|encodedcommand)$/i.test(w.text));
    return i >= 0 ? { inline: a[i]?.text, script: a.length } : { script: a.length, noStdin: a.length > 0 };
  },
  lisp: (a) => clusters(a, '', '', { inline: /^--(eval|load-code)(=|$)/ }),
  guile: (a) => clusters(a, 'ce', 'lLx'),
  racket: (a) => clusters(a, 'e', 'tlfr', { inline: /^--(eval|require-script)/ }),
  groovy: (a) => clusters(a, 'e', 'cl'),
  elixir: (a) => clusters(a, 'e', 'r', { inline: /^--eval/ }),
  erl: (a) => ({ inline: a.find((w) => /^-(eval|s|run)$/.test(w.text))?.text, script: a.length, noStdin: true }),
  repl: (a) => (a.some((w) => /^-(e|-expression)/.test(w.text)) ? { inline: '-e', script: a.length } : { script: a.length, noStdin: a.length > 0 }),
} satisfies Record<string, Scanner>;

/** Judges an interpreter run: inline code is asked; a program read from stdin is asked; a script runs. */
function judgeInterpreter(name: string, args: Word[], cmd: Simple, ctx: Ctx, scan: Scan): Finding | null {
  if (scan.inPlace) {
    // `perl -pi -e … /etc/passwd` rewrites system files whatever the code says.
    for (const w of args.slice(scan.files ?? scan.script + 1).filter((x) => !x.text.startsWith('-'))) {
      const f = writeTarget(w, ctx, `${code(name + ' -i')} rewrites`);
      if (f) return f;
    }
  }
  if (scan.inline) return found(ctx, 'inline-code', `${code(name + ' ' + scan.inline)} runs inline code the judge cannot check`);
  if (scan.noStdin) return null;
  const script = args[scan.script];
  if (script && script.procSub) return found(ctx, 'interpreter-pipe', `${code(name)} runs ${code(script.source)}, a program generated at run time`);
  if (script && !(isLiteral(script) && /^(-|\/dev\/stdin|\/dev\/fd\/0|\/proc\/self\/fd\/0)$/.test(script.text))) return null;
  const stdin = stdinOf(cmd, ctx);
  if (stdin === null && !cmd.piped && !ctx.piped) return null; // an interactive prompt with nothing to read
  const from = stdin === null ? 'a pipe' : 'script' in stdin ? 'a heredoc or here-string' : 'file' in stdin ? code(stdin.file.source) : stdin.unknown;
  return found(ctx, 'interpreter-pipe', `${code(name)} reads its program from ${from} on standard input, which the judge cannot check`);
}

const handler =
  (kind: keyof typeof SCANNERS): Handler =>
  (name, args, cmd, ctx) =>
    judgeInterpreter(name, args, cmd, ctx, SCANNERS[kind](args));

/** `node …/bin/memo ARGS`, `node dist/kernel/cli/main.js ARGS`: memo itself, judged as `memo ARGS`. */
const jsHandler =
  (kind: 'node' | 'bun'): Handler =>
  (name, args, cmd, ctx) => {
    const scan = SCANNERS[kind](args);
    const script = args[scan.script];
    if (!scan.inline && script && isMemoEntry(script)) return judgeInner([{ ...script, text: 'memo' }, ...args.slice(scan.script + 1)], cmd, ctx, name);
    return judgeInterpreter(name, args, cmd, ctx, scan);
  };

register(['python', 'python2', 'python3', 'pypy', 'pypy3', 'py'], handler('python'));
registerPattern(/^(python|pypy)\d+(\.\d+)*$/, handler('python'));
register(['perl', 'cperl'], handler('perl'));
registerPattern(/^perl\d+(\.\d+)*$/, handler('perl'));
register(['ruby', 'jruby', 'truffleruby'], handler('ruby'));
register(['node', 'nodejs'], jsHandler('node'));
register(['bun'], jsHandler('bun'));
register(['deno'], handler('deno'));
register(['php', 'php-cli'], handler('php'));
registerPattern(/^php\d+(\.\d+)*$/, handler('php'));
register(['lua', 'luajit', 'lua5.1', 'lua5.2', 'lua5.3', 'lua5.4', 'texlua'], handler('lua'));
register(['rscript'], handler('rscript'));
register(['r'], handler('r'));
register(['osascript'], handler('osascript'));
register(['expect', 'tclsh', 'wish'], handler('expect'));
register(['julia'], handler('julia'));
register(['pwsh', 'powershell'], handler('pwsh'));
register(['sbcl', 'clisp', 'ccl', 'ecl'], handler('lisp'));
register(['guile'], handler('guile'));
register(['racket'], handler('racket'));
register(['groovy', 'scala', 'kotlinc'], handler('groovy'));
register(['elixir', 'iex'], handler('elixir'));
register(['erl'], handler('erl'));
register(['irb', 'jshell', 'ghci', 'dc'], handler('repl'));
