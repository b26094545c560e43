/**
 * Wrappers: programs that run another command given in their arguments. The command they run is
 * judged as if it stood alone. Their options are parsed exactly: an option the judge does not know
 * might take the command as its value or run one itself, so it fails closed (`dynamic-command`).
 * A program not listed anywhere is just a program; only listed wrappers are looked through.
 */
import { childScope, DYNAMIC, found, settle, type Ctx, type Finding, type Handler, type Simple } from '../context.js';
import { changeDir } from '../cwd.js';
import { envAssignment } from '../env-vars.js';
import { getopt, type OptSpec } from '../options.js';
import { registerWrapper } from '../registry.js';
import { judgeInner, judgeScript } from '../walk.js';
import { code, isLiteral, show, syntheticWord, type Word } from '../words.js';
import { judgeCode } from './shells-and-builtins.js';

interface WrapperDef {
  spec: OptSpec;
  /** Operands the wrapper takes before the command: timeout's duration, chroot's new root. */
  leading?: number;
  /** Options after which no command runs (`command -v` only looks a name up, `taskset -p` a pid). */
  noCommandWith?: readonly string[];
  /** Options whose value is shell code (`flock -c`, `script -c`). */
  codeOptions?: readonly string[];
  /** Options whose value becomes the command's working directory. */
  chdirOptions?: readonly string[];
  /** Options that switch user: the wrapper is then privilege escalation. */
  userOptions?: readonly string[];
  /** No command given: what happens (`script` starts an interactive shell). */
  bare?: 'shell';
  /** The command runs later or outside this one (`systemd-run`): refused as `schedule` once it is judged. */
  schedules?: boolean;
}

const NS = 'm::u::i::n::p::U::C::T::';
const WRAPPERS: Record<string, WrapperDef> = {
  command: { spec: { short: 'pvV' }, noCommandWith: ['v', 'V'] },
  builtin: { spec: {} },
  exec: { spec: { short: 'cla:' } },
  nice: { spec: { short: 'n:0123456789', long: ['adjustment='] } },
  timeout: { spec: { short: 's:k:v', long: ['signal=', 'kill-after=', 'preserve-status', 'foreground', 'verbose'] }, leading: 1 },
  nohup: { spec: {} },
  stdbuf: { spec: { short: 'i:o:e:', long: ['input=', 'output=', 'error='] } },
  time: { spec: { short: 'pf:o:avq', long: ['format=', 'output=', 'append', 'verbose', 'portability', 'quiet'] } },
  ionice: {
    spec: { short: 'c:n:p:P:u:t', long: ['class=', 'classdata=', 'pid=', 'pgid=', 'uid=', 'ignore'] },
    noCommandWith: ['p', 'P', 'u', 'pid', 'pgid', 'uid'],
  },
  setsid: { spec: { short: 'cfw', long: ['ctty', 'fork', 'wait'] } },
  chroot: { spec: { long: ['userspec=', 'groups=', 'skip-chdir'] }, leading: 1, userOptions: ['userspec'] },
  coproc: { spec: {} },
  strace: {
    spec: {
      short: 'cfFhiqrtTvVwxyzkCnDZYa:b:e:E:I:o:O:p:P:s:S:u:U:X:',
      long: [
        'output=',
        'trace=',
        'signal=',
        'status=',
        'string-limit=',
        'summary-only',
        'summary',
        'follow-forks',
        'output-separately',
        'attach=',
        'env=',
        'user=',
        'quiet=?',
        'decode-fds=?',
        'absolute-timestamps=?',
        'relative-timestamps=?',
        'syscall-times=?',
        'stack-trace',
        'seccomp-bpf',
        'no-abbrev',
        'verbose=?',
        'raw=?',
        'read=',
        'write=',
        'const-print-style=',
        'instruction-pointer',
        'timestamps=?',
        'summary-sort-by=',
        'summary-columns=',
        'successful-only',
        'failed-only',
        'columns=',
        'daemonize=?',
        'kill-on-exit',
        'tips=?',
      ],
    },
    noCommandWith: ['p', 'attach'],
    userOptions: ['u', 'user'],
  },
  ltrace: {
    spec: {
      short: 'bcCdDfhiLnrStTVwxa:A:e:F:l:n:o:p:s:u:w:x:',
      long: ['align=', 'debug=', 'demangle', 'library=', 'output=', 'indent=', 'help', 'version', 'config='],
    },
    noCommandWith: ['p'],
    userOptions: ['u'],
  },
  flock: {
    spec: {
      short: 'sxunoFVEw:c:',
      long: ['shared', 'exclusive', 'unlock', 'nonblock', 'nb', 'close', 'no-fork', 'verbose', 'timeout=', 'wait=', 'conflict-exit-code=', 'command=', 'fcntl'],
    },
    leading: 1,
    codeOptions: ['c', 'command'],
  },
  chrt: {
    spec: {
      short: 'bfiordmavRT:P:D:',
      long: [
        'batch',
        'fifo',
        'idle',
        'other',
        'rr',
        'deadline',
        'reset-on-fork',
        'all-tasks',
        'max',
        'pid',
        'verbose',
        'sched-runtime=',
        'sched-period=',
        'sched-deadline=',
      ],
    },
    leading: 1,
    noCommandWith: ['p', 'pid', 'm', 'max'],
  },
  taskset: { spec: { short: 'pca', long: ['pid', 'cpu-list', 'all-tasks'] }, leading: 1, noCommandWith: ['p', 'pid'] },
  prlimit: {
    spec: {
      short: 'p:o:A::c::d::e::f::i::l::m::n::q::r::s::t::u::v::x::y::',
      long: [
        'pid=',
        'output=',
        'noheadings',
        'raw',
        'verbose',
        'as=?',
        'core=?',
        'cpu=?',
        'data=?',
        'fsize=?',
        'locks=?',
        'memlock=?',
        'msgqueue=?',
        'nice=?',
        'nofile=?',
        'nproc=?',
        'rss=?',
        'rtprio=?',
        'rttime=?',
        'sigpending=?',
        'stack=?',
      ],
    },
    noCommandWith: ['p', 'pid'],
  },
  cgexec: { spec: { short: 'g:', long: ['sticky'] } },
  catchsegv: { spec: {} },
  'dbus-launch': {
    spec: {
      long: ['sh-syntax', 'csh-syntax', 'auto-syntax', 'binary-syntax', 'close-stderr', 'exit-with-session', 'exit-with-x11', 'autolaunch=', 'config-file='],
    },
  },
  'xvfb-run': {
    spec: {
      short: 'an:s:f:e:p:w:l',
      long: ['auto-servernum', 'server-num=', 'server-args=', 'auth-file=', 'error-file=', 'xauth-protocol=', 'wait=', 'listen-tcp', 'auto-display'],
    },
  },
  unshare: {
    spec: {
      short: `${NS}frcS:G:R:w:W:`,
      long: [
        'mount=?',
        'uts=?',
        'ipc=?',
        'net=?',
        'pid=?',
        'user=?',
        'cgroup=?',
        'time=?',
        'fork',
        'kill-child=?',
        'mount-proc=?',
        'map-root-user',
        'map-current-user',
        'map-user=',
        'map-group=',
        'map-users=',
        'map-groups=',
        'map-auto',
        'propagation=',
        'setgroups=',
        'keep-caps',
        'setuid=',
        'setgid=',
        'root=',
        'wd=',
        'monotonic=',
        'boottime=',
        'load-interp=',
      ],
    },
    chdirOptions: ['w', 'wd'],
    userOptions: ['S', 'setuid'],
  },
  nsenter: {
    spec: {
      short: `at:${NS}S:G:r::w::W::FZe`,
      long: [
        'all',
        'target=',
        'mount=?',
        'uts=?',
        'ipc=?',
        'net=?',
        'pid=?',
        'cgroup=?',
        'user=?',
        'time=?',
        'setuid=',
        'setgid=',
        'preserve-credentials',
        'root=?',
        'wd=?',
        'wdns=',
        'env',
        'no-fork',
        'follow-context',
        'user-parent',
        'keep-caps',
        'join-cgroup',
      ],
    },
    userOptions: ['S', 'setuid'],
  },
  setpriv: {
    spec: {
      short: 'd',
      long: [
        'dump',
        'reuid=',
        'regid=',
        'ruid=',
        'euid=',
        'rgid=',
        'egid=',
        'clear-groups',
        'keep-groups',
        'init-groups',
        'groups=',
        'inh-caps=',
        'ambient-caps=',
        'bounding-set=',
        'nnp',
        'no-new-privs',
        'securebits=',
        'pdeathsig=',
        'selinux-label=',
        'apparmor-profile=',
        'landlock-access=',
        'landlock-rule=',
        'reset-env',
        'list-caps',
      ],
    },
    userOptions: ['reuid', 'regid', 'ruid', 'euid', 'rgid', 'egid'],
  },
  'systemd-run': {
    spec: {
      short: 'u:p:E:dtPqGSrH:M:',
      long: [
        'unit=',
        'property=',
        'description=',
        'slice=',
        'slice-inherit',
        'setenv=',
        'uid=',
        'gid=',
        'nice=',
        'working-directory=',
        'same-dir',
        'pty',
        'pipe',
        'quiet',
        'collect',
        'shell',
        'user',
        'system',
        'scope',
        'wait',
        'remain-after-exit',
        'send-sighup',
        'service-type=',
        'no-block',
        'no-ask-password',
        'host=',
        'machine=',
        'on-active=',
        'on-boot=',
        'on-startup=',
        'on-unit-active=',
        'on-unit-inactive=',
        'on-calendar=',
        'on-clock-change',
        'on-timezone-change',
        'path-property=',
        'socket-property=',
        'timer-property=',
        'expand-environment=',
        'json=',
        'ignore-failure',
        'background=',
      ],
    },
    chdirOptions: ['working-directory'],
    userOptions: ['uid', 'gid'],
    schedules: true,
  },
  script: {
    spec: {
      short: 'aefqkc:t::T:B:I:O:E:o:',
      long: [
        'append',
        'command=',
        'echo=',
        'return',
        'flush',
        'force',
        'quiet',
        'timing=?',
        'log-in=',
        'log-out=',
        'log-io=',
        'log-timing=',
        'logging-format=',
        'output-limit=',
      ],
    },
    codeOptions: ['c', 'command'],
    bare: 'shell',
  },
  tini: { spec: { short: 'svgwlp:e:', long: [] } },
  'dumb-init': { spec: { short: 'cvr:', long: ['single-child', 'verbose', 'rewrite='] } },
  fakeroot: { spec: { short: 'l:s:i:u', long: ['lib=', 'faked=', 'unknown-is-real'] } },
  eatmydata: { spec: {} },
  chronic: { spec: { short: 'ev' } },
  nocache: { spec: {} },
  ifne: { spec: { short: 'n' } },
  torsocks: { spec: { short: 'idqau:p:P:', long: ['shell', 'isolate'] } },
  proxychains: { spec: { short: 'qf:' } },
  proxychains4: { spec: { short: 'qf:' } },
  faketime: { spec: { short: 'fm' }, leading: 1 },
  setarch: {
    spec: {
      short: 'vRFZLXBIST3',
      long: [
        'verbose',
        'addr-no-randomize',
        'fdpic-funcptrs',
        'mmap-page-zero',
        'addr-compat-layout',
        'read-implies-exec',
        '32bit',
        'short-inode',
        'whole-seconds',
        'sticky-timeouts',
        '3gb',
        '4gb',
        'uname-2.6',
        'list',
      ],
    },
    leading: 1,
  },
  linux32: { spec: { short: 'vRFZLXBIST3' } },
  linux64: { spec: { short: 'vRFZLXBIST3' } },
  numactl: {
    spec: {
      short: 'aC:N:m:p:i:l',
      long: ['all', 'interleave=', 'preferred=', 'membind=', 'cpunodebind=', 'physcpubind=', 'localalloc', 'weighted-interleave='],
    },
  },
  caffeinate: { spec: { short: 'dimsut:w:' }, noCommandWith: ['w'] },
  valgrind: {
    spec: {
      short: 'qvh',
      long: [
        'tool=',
        'leak-check=',
        'log-file=',
        'track-origins=',
        'show-leak-kinds=',
        'error-exitcode=',
        'trace-children=',
        'num-callers=',
        'suppressions=',
        'gen-suppressions=',
        'xml=',
        'xml-file=',
        'quiet',
        'verbose',
        'read-var-info=',
        'massif-out-file=',
        'callgrind-out-file=',
        'time-unit=',
        'vgdb=',
        'vgdb-error=',
      ],
    },
  },
  arch: { spec: { short: 'hie:d:', long: ['x86_64', 'arm64', 'arm64e', 'i386', 'x86_64h'] } },
  dotenv: { spec: { short: 'e:c:v:p:o', long: [] } },
};

/** Runs the command a wrapper names, from the directory a chdir option gives it. */
function runInner(words: Word[], cmd: Simple, ctx: Ctx, via: string, chdir: string | null): Finding | null {
  if (chdir === null) return judgeInner(words, cmd, ctx, via);
  const inner: Ctx = { ...ctx, scope: childScope(ctx.scope) };
  changeDir(inner.scope, syntheticWord(chdir));
  return judgeInner(words, cmd, inner, via);
}

const unknownOption = (ctx: Ctx, name: string, w: Word): Finding =>
  w.opaque || !isLiteral(w)
    ? found(ctx, DYNAMIC, `${code(name)} with ${show(w)}, which may expand to anything at run time, so what it runs cannot be determined`)
    : found(ctx, DYNAMIC, `${code(name)} with ${show(w)}, an option the judge does not know, so the command it runs cannot be determined`);

const judgeWrapper: Handler = (name, args, cmd, ctx) => {
  const def = WRAPPERS[name];
  if (def === undefined) throw new Error(`judge: ${name} is registered as a wrapper without a definition`);
  const parsed = getopt(args, def.spec);
  if ('unknown' in parsed) return unknownOption(ctx, name, parsed.unknown);
  const user = def.userOptions?.find((o) => parsed.options.has(o));
  if (user) return found(ctx, 'su', `${code(name)} with ${code((user.length === 1 ? '-' : '--') + user)} runs a command as another user`);
  if (def.noCommandWith?.some((o) => parsed.options.has(o))) return null;
  const dir = def.chdirOptions?.map((o) => parsed.options.get(o)).find((v) => typeof v === 'string');
  for (const o of def.codeOptions ?? []) {
    const body = parsed.options.get(o);
    if (typeof body === 'string') return judgeCode(name, [syntheticWord(body, body)], ctx, `${name} -${o.length === 1 ? o : '-' + o}`);
  }
  // `strace -o '|cmd'` pipes its log into a command.
  const out = parsed.options.get('o') ?? parsed.options.get('output');
  if (typeof out === 'string' && /^[|!]/.test(out)) {
    const f = judgeScript(out.slice(1), ctx, `${name} -o`);
    if (f) return f;
  }
  let inner = parsed.operands.slice(def.leading ?? 0);
  // `flock FILE -c CMD`: options may also follow the leading operands.
  if (def.leading && inner[0]?.text.startsWith('-') && inner[0].text !== '--') {
    const again = getopt(inner, def.spec);
    if ('unknown' in again) return unknownOption(ctx, name, again.unknown);
    for (const o of def.codeOptions ?? []) {
      const body = again.options.get(o);
      if (typeof body === 'string') return judgeCode(name, [syntheticWord(body, body)], ctx, `${name} -${o.length === 1 ? o : '-' + o}`);
    }
    inner = again.operands;
  } else if (inner[0]?.text === '--') inner = inner.slice(1);
  if (inner.length === 0 && def.bare === 'shell')
    return found(ctx, DYNAMIC, `${code(name)} without a command starts an interactive shell reading commands the judge cannot see`);
  const f = runInner(inner, cmd, ctx, name, typeof dir === 'string' ? dir : null);
  if (f || !def.schedules) return f;
  return found(
    ctx,
    'schedule',
    `${code(name)} hands ${inner.length > 0 ? code(inner.map((w) => w.source).join(' ')) : 'a command'} to the service manager, which runs it outside the command and everything that contains it`,
  );
};

/** `env [-i] [-u NAME] [-C DIR] [NAME=VALUE]… COMMAND`, and `env -S 'COMMAND ARGS'` which splits a string. */
const judgeEnv: Handler = (name, args, cmd, ctx) => {
  const parsed = getopt(args, {
    short: 'iu:0C:S:vP:',
    long: [
      'ignore-environment',
      'null',
      'unset=',
      'chdir=',
      'split-string=',
      'debug',
      'default-signal=?',
      'ignore-signal=?',
      'block-signal=?',
      'list-signal-handling',
      'argv0=',
    ],
  });
  if ('unknown' in parsed) return unknownOption(ctx, name, parsed.unknown);
  let rest = parsed.operands;
  const env = new Map(cmd.env);
  while (rest[0] && !rest[0].opaque && /^[^=-][^=]*=/.test(rest[0].text)) {
    const w = rest[0];
    const eq = w.text.indexOf('=');
    const value = { ...w, text: w.text.slice(eq + 1) };
    const f = settle(envAssignment(w.text.slice(0, eq), [value], ctx, judgeScript), ctx); // asks are recorded
    if (f) return f;
    env.set(w.text.slice(0, eq), [value]);
    rest = rest.slice(1);
  }
  const split = parsed.options.get('S') ?? parsed.options.get('split-string');
  if (typeof split === 'string') {
    if (!isLiteral(syntheticWord(split)) || !rest.every(isLiteral)) return found(ctx, DYNAMIC, '`env -S` with a command only known at run time');
    return judgeScript([split, ...rest.map((w) => w.text)].join(' '), ctx, 'env -S');
  }
  const dir = parsed.options.get('C') ?? parsed.options.get('chdir');
  return runInner(rest, { ...cmd, env }, ctx, name, typeof dir === 'string' ? dir : null);
};

/** `xargs CMD ARGS…` appends words read from stdin: they are unknown, so they join as an opaque word. */
const judgeXargs: Handler = (name, args, cmd, ctx) => {
  const parsed = getopt(args, {
    short: '0a:d:E:e::I:i::L:l::n:P:s:rtpxo',
    long: [
      'null',
      'arg-file=',
      'delimiter=',
      'eof=?',
      'replace=?',
      'max-lines=?',
      'max-args=',
      'max-procs=',
      'max-chars=',
      'interactive',
      'verbose',
      'exit',
      'no-run-if-empty',
      'open-tty',
      'process-slot-var=',
      'show-limits',
    ],
  });
  if ('unknown' in parsed) return unknownOption(ctx, name, parsed.unknown);
  const replaceOpt = parsed.options.get('I') ?? parsed.options.get('i') ?? parsed.options.get('replace');
  const inner = parsed.operands.length > 0 ? parsed.operands : [syntheticWord('echo')];
  if (replaceOpt === undefined)
    return judgeInner([...inner, { ...syntheticWord('\u0000', ''), opaque: true, label: 'arguments read from stdin' }], cmd, ctx, name);
  // With -I each input line replaces the marker inside a word, which stays one word.
  const marker = replaceOpt === true ? '{}' : replaceOpt;
  return judgeInner(
    inner.map((w) => (marker !== '' && w.text.includes(marker) ? { ...w, text: w.text.split(marker).join('\u0000') } : w)),
    cmd,
    ctx,
    name,
  );
};

/** `busybox APPLET ARGS…` runs the applet. */
const judgeBusybox: Handler = (name, args, cmd, ctx) => {
  if (args[0] && !args[0].opaque && args[0].text.startsWith('-')) return null; // --list, --install, --help
  return judgeInner(args, cmd, ctx, name);
};

/** `watch [-n SECS] CMD…` runs its words through `sh -c` (or directly with `-x`). */
const judgeWatch: Handler = (name, args, cmd, ctx) => {
  const parsed = getopt(args, {
    short: 'n:d::tbegcxpwhvq:',
    long: [
      'interval=',
      'differences=?',
      'no-title',
      'beep',
      'errexit',
      'chgexit',
      'equexit=',
      'exec',
      'color',
      'no-color',
      'precise',
      'no-wrap',
      'no-linewrap',
      'help',
      'version',
    ],
  });
  if ('unknown' in parsed) return unknownOption(ctx, name, parsed.unknown);
  if (parsed.options.has('x') || parsed.options.has('exec')) return judgeInner(parsed.operands, cmd, ctx, name);
  return judgeCode(name, parsed.operands, ctx, name);
};

/** `capsh [--OPT…] -- ARGS` runs `bash ARGS` (or the `--shell=`); `--user=` switches user. */
const judgeCapsh: Handler = (name, args, cmd, ctx) => {
  let shell = 'bash';
  for (let i = 0; i < args.length; i++) {
    const w = args[i]!; // i < args.length
    const t = w.text;
    if (t === '--') return judgeInner([syntheticWord(shell), ...args.slice(i + 1)], cmd, ctx, name);
    if (/^--(user|uid|gid)=/.test(t)) return found(ctx, 'su', `${code(name + ' ' + t)} runs a command as another user`);
    const sh = /^--shell=(.*)$/.exec(t);
    if (sh) shell = sh[1]!;
    else if (!/^--[a-z-]+(=.*)?$/.test(t) || t === '==' || !isLiteral(w)) return unknownOption(ctx, name, w);
  }
  return null;
};

/** bwrap options take 0, 1 or 2 values; the first word that is not an option starts the command. */
const BWRAP_ARGS: Record<string, number> = {
  '--args': 1,
  '--argv0': 1,
  '--uid': 1,
  '--gid': 1,
  '--hostname': 1,
  '--chdir': 1,
  '--setenv': 2,
  '--unsetenv': 1,
  '--lock-file': 1,
  '--sync-fd': 1,
  '--bind': 2,
  '--bind-try': 2,
  '--dev-bind': 2,
  '--dev-bind-try': 2,
  '--ro-bind': 2,
  '--ro-bind-try': 2,
  '--remount-ro': 1,
  '--exec-label': 1,
  '--file-label': 1,
  '--proc': 1,
  '--dev': 1,
  '--tmpfs': 1,
  '--mqueue': 1,
  '--dir': 1,
  '--file': 2,
  '--bind-data': 2,
  '--ro-bind-data': 2,
  '--symlink': 2,
  '--seccomp': 1,
  '--add-seccomp-fd': 1,
  '--block-fd': 1,
  '--userns-block-fd': 1,
  '--info-fd': 1,
  '--json-status-fd': 1,
  '--userns': 1,
  '--userns2': 1,
  '--pidns': 1,
  '--cap-add': 1,
  '--cap-drop': 1,
  '--perms': 1,
  '--size': 1,
  '--chmod': 2,
  '--overlay-src': 1,
  '--overlay': 3,
  '--tmp-overlay': 1,
  '--ro-overlay': 1,
  '--unshare-all': 0,
  '--share-net': 0,
  '--unshare-user': 0,
  '--unshare-user-try': 0,
  '--unshare-ipc': 0,
  '--unshare-pid': 0,
  '--unshare-net': 0,
  '--unshare-uts': 0,
  '--unshare-cgroup': 0,
  '--unshare-cgroup-try': 0,
  '--die-with-parent': 0,
  '--as-pid-1': 0,
  '--new-session': 0,
  '--clearenv': 0,
  '--disable-userns': 0,
  '--assert-userns-disabled': 0,
  '--level-prefix': 0,
};
const judgeBwrap: Handler = (name, args, cmd, ctx) => {
  for (let i = 0; i < args.length; i++) {
    const w = args[i]!; // i < args.length
    const t = w.text;
    if (t === '--') return judgeInner(args.slice(i + 1), cmd, ctx, name);
    if (!t.startsWith('-')) return judgeInner(args.slice(i), cmd, ctx, name);
    const n = BWRAP_ARGS[t];
    if (n === undefined || !isLiteral(w)) return unknownOption(ctx, name, w);
    i += n;
  }
  return null;
};

/** firejail takes only `--name` or `--name=value` options, then the command. */
const judgeFirejail: Handler = (name, args, cmd, ctx) => {
  const at = args.findIndex((w) => !w.text.startsWith('-'));
  const bad = args.slice(0, at < 0 ? undefined : at).find((w) => !isLiteral(w) || !/^--[a-z0-9-]+(=.*)?$/.test(w.text));
  if (bad) return unknownOption(ctx, name, bad);
  return at < 0
    ? found(ctx, DYNAMIC, `${code(name)} without a command starts a shell reading commands the judge cannot see`)
    : judgeInner(args.slice(at), cmd, ctx, name);
};

/** `parallel CMD ::: ARGS`: the command template runs through a shell; without one, stdin lines are commands. */
const judgeParallel: Handler = (name, args, cmd, ctx) => {
  const sep = args.findIndex((w) => /^:::+\+?$/.test(w.text));
  const head = sep < 0 ? args : args.slice(0, sep);
  const parsed = getopt(head, {
    short: 'j:kquvn:N:P:S:I:0a:d:Ee:rX',
    long: [
      'jobs=',
      'keep-order',
      'quote',
      'verbose',
      'halt=',
      'max-args=',
      'arg-file=',
      'delimiter=',
      'null',
      'dry-run',
      'tag',
      'bar',
      'progress',
      'eta',
      'line-buffer',
      'group',
      'ungroup',
      'results=',
      'joblog=',
      'timeout=',
      'retries=',
      'load=',
      'memfree=',
      'delay=',
      'no-notice',
      'will-cite',
      'colsep=',
      'header=',
      'shuf',
      'xargs',
      'pipe',
      'block=',
      'recend=',
      'recstart=',
      'lb',
      'nice=',
      'sshlogin=',
      'ssh=',
    ],
  });
  if ('unknown' in parsed) return unknownOption(ctx, name, parsed.unknown);
  if (parsed.operands.length === 0)
    return found(ctx, 'interpreter-pipe', `${code(name)} without a command runs the lines of its input as commands, which the judge cannot see`);
  const template = parsed.operands.map((w) => (w.text.includes('{') ? { ...w, text: w.text.replace(/\{[^}]*\}/g, '\u0000') } : w));
  if (template.some((w) => !w.opaque && w.text.includes('\u0000'))) return judgeInner(template, cmd, ctx, name);
  return judgeInner([...template, { ...syntheticWord('\u0000', ''), opaque: true, label: 'arguments from the input' }], cmd, ctx, name);
};

registerWrapper(Object.keys(WRAPPERS), judgeWrapper);
registerWrapper(['env'], judgeEnv);
registerWrapper(['xargs'], judgeXargs);
registerWrapper(['busybox'], judgeBusybox);
registerWrapper(['watch'], judgeWatch);
registerWrapper(['capsh'], judgeCapsh);
registerWrapper(['bwrap', 'bubblewrap'], judgeBwrap);
registerWrapper(['firejail'], judgeFirejail);
registerWrapper(['parallel', 'sem'], judgeParallel);
