/**
 * System control: taking the machine down (shutdown, reboot, halt, poweroff, suspend, rescue) by any
 * of its doors (systemd verbs and targets, runlevels, kexec, D-Bus calls to logind or systemd), and
 * killing every process at once (`kill -9 -1`, `killall5`, `pkill -u`), which takes the kernel and
 * the user's session with it. SIGHUP, which makes memo serve rotate its token, is `person-settings`.
 */
import { DYNAMIC, found, type Ctx, type Finding, type Handler } from '../context.js';
import { register } from '../registry.js';
import { code, DYN, isLiteral } from '../words.js';
import { blockName } from './disk.js';
import { PERSON_SETTINGS } from './memo.js';

const POWER_VERBS: Record<string, string> = {
  poweroff: 'poweroff',
  reboot: 'reboot',
  'soft-reboot': 'reboot',
  kexec: 'reboot',
  halt: 'halt',
  suspend: 'shutdown',
  hibernate: 'shutdown',
  'hybrid-sleep': 'shutdown',
  'suspend-then-hibernate': 'shutdown',
  sleep: 'shutdown',
  rescue: 'shutdown',
  emergency: 'shutdown',
  shutdown: 'shutdown',
  exit: 'shutdown',
  'ctrl-alt-del': 'reboot',
  final: 'shutdown',
  runlevel0: 'poweroff',
  runlevel1: 'shutdown',
  runlevel6: 'reboot',
};
const START_VERBS = new Set([
  'start',
  'isolate',
  'restart',
  'try-restart',
  'reload-or-restart',
  'try-reload-or-restart',
  'enable',
  'reenable',
  'link',
  'set-default',
]);

/** The power action a unit name stands for: `reboot.target`, `systemd-reboot.service`, `runlevel6.target`. */
function unitAction(unit: string): string | undefined {
  const m = /^(?:systemd-)?([a-z0-9-]+)\.(target|service)$/.exec(unit);
  const verb = m?.[1];
  return verb === undefined ? undefined : POWER_VERBS[verb];
}

/** `systemctl poweroff`, `systemctl isolate reboot.target`, `systemctl start systemd-reboot.service`, `loginctl reboot`. */
const judgeSystemctl: Handler = (name, args, _cmd, ctx) => {
  const operands: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const t = args[i]!.text; // i < args.length
    if (/^-[HMtpsnoP]$/.test(t))
      i++; // an option that takes the next word as its value
    else if (!t.startsWith('-')) operands.push(t.toLowerCase());
  }
  const [verb, ...units] = operands;
  if (verb === undefined) return null;
  const direct = POWER_VERBS[verb];
  if (direct && !verb.startsWith('runlevel') && verb !== 'final' && verb !== 'ctrl-alt-del')
    return found(ctx, direct, `${code(name + ' ' + verb)} takes the machine down`);
  if (!START_VERBS.has(verb)) return null;
  const unit = units.find((u) => unitAction(u) !== undefined);
  return unit ? found(ctx, unitAction(unit)!, `${code(`${name} ${verb} ${unit}`)} takes the machine down`) : null;
};

const RUNLEVELS: Record<string, string> = { '0': 'poweroff', '6': 'reboot', '1': 'shutdown', s: 'shutdown', S: 'shutdown', single: 'shutdown' };

const judgeInit: Handler = (name, args, _cmd, ctx) => {
  const level = args.find((w) => !w.text.startsWith('-'))?.text;
  const rule = level === undefined ? undefined : RUNLEVELS[level];
  return rule ? found(ctx, rule, `${code(name + ' ' + level)} switches the machine to runlevel ${level}`) : null;
};

const DBUS_POWER: Record<string, string> = {
  PowerOff: 'poweroff',
  Reboot: 'reboot',
  Halt: 'halt',
  KExec: 'reboot',
  SoftReboot: 'reboot',
  Suspend: 'shutdown',
  Hibernate: 'shutdown',
  HybridSleep: 'shutdown',
  SuspendThenHibernate: 'shutdown',
  ScheduleShutdown: 'shutdown',
  Exit: 'shutdown',
};

/** `busctl call org.freedesktop.login1 … Reboot`, `dbus-send --dest=org.freedesktop.login1 ….Manager.PowerOff`. */
const judgeDbus: Handler = (name, args, _cmd, ctx) => {
  const text = args.map((w) => w.text).join(' ');
  if (!/org\.freedesktop\.(login1|systemd1)|\/org\/freedesktop\/(login1|systemd1)/.test(text)) return null;
  if (!args.every(isLiteral)) return found(ctx, DYNAMIC, `${code(name)} calls logind or systemd with arguments only known at run time`);
  for (const w of args) {
    const method = w.text.split('.').pop()!;
    const rule = DBUS_POWER[method];
    if (rule) return found(ctx, rule, `${code(name)} asks ${/login1/.test(text) ? 'logind' : 'systemd'} to ${method}, taking the machine down`);
    if (/^(StartUnit|StartUnitReplace|RestartUnit)$/.test(method)) {
      const unit = args.map((a) => a.text.toLowerCase()).find((u) => unitAction(u) !== undefined);
      if (unit) return found(ctx, unitAction(unit)!, `${code(name)} asks systemd to start ${code(unit)}, taking the machine down`);
    }
  }
  return null;
};

/** A signal name or number is SIGHUP (`HUP`, `SIGHUP`, `hup`, `1`). */
const isHup = (signal: string): boolean => /^(sig)?hup$|^0*1$/i.test(signal);

/** SIGHUP makes memo serve rotate its token: only a person may ask for that. */
const hupFinding = (ctx: Ctx, subject: string, maybe: boolean): Finding =>
  found(ctx, PERSON_SETTINGS, `${subject} ${maybe ? 'may send' : 'sends'} SIGHUP, which makes memo serve rotate its token, a step only a person may take`);

/**
 * kill with pid -1 (every process the user may signal) or 1 (init); and SIGHUP to any pid (which
 * process a pid is, memo serve or another, cannot be known before the command runs), not to a job.
 */
const judgeKill: Handler = (name, args, _cmd, ctx) => {
  let i = 0;
  let signalSeen = false;
  let signal: string | null = null;
  for (; i < args.length; i++) {
    const t = args[i]!.text; // i < args.length
    if (t === '--') {
      i++;
      break;
    }
    if (signalSeen || !t.startsWith('-') || t === '-') break;
    if (/^-[lL]$|^--(list|table)/.test(t)) return null;
    if (/^(-s|-n|--signal)$/.test(t)) signal = args[i + 1]?.text ?? '';
    else if (/^--signal=/.test(t)) signal = t.slice(9);
    else if (/^-s./.test(t)) signal = t.slice(2);
    else if (!/^(-q|--queue|--timeout|--verbose|-p|--pid)$/.test(t)) signal = t.slice(1);
    if (/^(-s|-n|--signal|-q|--queue|--timeout)$/.test(t)) i += t === '--timeout' ? 2 : 1;
    signalSeen = true;
  }
  const targets = args.slice(i);
  // `kill $SIG PID`, `kill -$SIG PID`: a first word only known at run time may be any signal.
  if (signal === null && targets.length > 1 && !isLiteral(targets[0]!)) signal = DYN;
  const all = targets.find((w) => w.text === '-1' || w.text === '1');
  if (all)
    return found(
      ctx,
      'kill-all',
      all.text === '1'
        ? `${code(name + ' 1')} signals init, which takes the whole system down`
        : `${code(name)} of pid ${code('-1')} signals every process the user owns, the kernel included`,
    );
  if (signal !== null && (signal.includes(DYN) || isHup(signal)) && targets.some((w) => !/^%/.test(w.text)))
    return hupFinding(
      ctx,
      `${code(`${name} ${args.map((a) => a.source).join(' ')}`)}${signal.includes(DYN) ? ', whose signal is only known at run time,' : ''}`,
      signal.includes(DYN),
    );
  return null;
};

/** A pattern that matches every process name. */
function catchAll(pattern: string): boolean {
  try {
    const re = new RegExp(pattern);
    return ['a', 'node', 'sshd', 'systemd', 'Z9', 'x-y'].every((n) => re.test(n));
  } catch {
    return false;
  }
}

/** What memo serve looks like to pkill and killall: its process names and command lines. */
const MEMO_PROCESSES = ['memo', 'node', 'memo serve', 'node /usr/lib/node_modules/memo-kernel/bin/memo serve --http', 'node dist/kernel/cli/main.js serve'];

/** Would a pkill/killall pattern pick memo serve? `full`: matched against the command line (`pkill -f`). */
function picksMemo(pattern: string, full: boolean, exact: boolean): boolean {
  if (pattern.includes(DYN)) return true;
  const names = full ? MEMO_PROCESSES : MEMO_PROCESSES.filter((n) => !n.includes(' '));
  if (exact) return names.some((n) => n.toLowerCase() === pattern.toLowerCase() || n.endsWith('/' + pattern));
  try {
    const re = new RegExp(pattern, 'i');
    return names.some((n) => re.test(n));
  } catch {
    return true;
  }
}

/**
 * `pkill -u USER` with no pattern (or `.`), `pkill -f .`, `killall -u USER`, `killall -r .`; and
 * SIGHUP to memo serve (`pkill -HUP -f 'memo serve'`, `killall -HUP node`).
 */
const judgePkill: Handler = (name, args, _cmd, ctx) => {
  let byUser = false;
  let full = false;
  let regex = name !== 'killall';
  let signal: string | null = null;
  const patterns: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const t = args[i]!.text; // i < args.length
    if (name === 'killall' && /^(-s|--signal)$/.test(t)) signal = args[++i]?.text ?? '';
    else if (/^--signal=/.test(t)) signal = t.slice(9);
    else if (name !== 'killall' && t === '--signal') signal = args[++i]?.text ?? '';
    else if (/^(-[uUGgstP]|--(euid|uid|group|pgroup|session|terminal|parent|user))$/.test(t)) {
      byUser = true;
      i++;
    } else if (/^-[uUGgstP].|^--(euid|uid|group|user)=/.test(t)) byUser = true;
    else if (/^(-[FnoOcqw]|--(pidfile|signal|ns|nslist|older-than|younger-than|wait|context)|-[a-zA-Z]*[sSV]$)$/.test(t) && !/^-\d/.test(t)) i++;
    else if (t === '-f' || t === '--full') full = true;
    else if (t === '-r' || t === '--regexp') regex = true;
    else if (/^-(\d+|[A-Z][A-Z0-9+-]*)$/.test(t) || (/^-[a-z]+$/.test(t) && /^-(sig)?hup$/i.test(t))) signal = t.slice(1);
    else if (!t.startsWith('-') || t === '-') patterns.push(t);
  }
  const everything = name === 'killall5' || (patterns.length === 0 && byUser) || patterns.some(catchAll);
  if (everything)
    return found(
      ctx,
      'kill-all',
      `${code(name + (args.length ? ' ' + args.map((a) => a.source).join(' ') : ''))} kills every process${byUser ? ' of a user' : ''}, the kernel and the session included`,
    );
  if (signal !== null && (signal.includes(DYN) || isHup(signal)) && (patterns.length === 0 || patterns.some((p) => picksMemo(p, full, !regex))))
    return hupFinding(ctx, `${code(`${name} ${args.map((a) => a.source).join(' ')}`)}, which may pick memo serve,`, signal.includes(DYN));
  return null;
};

register(['shutdown', 'openrc-shutdown'], blockName('shutdown', ' takes the machine down'));
register(['pm-suspend', 'pm-hibernate', 'pm-suspend-hybrid', 'zzz', 'rtcwake'], blockName('shutdown', ' suspends the machine'));
register(['reboot'], blockName('reboot', ' restarts the machine'));
register(['kexec', 'coldreboot'], blockName('reboot', ' boots another kernel in place of the running one'));
register(['halt'], blockName('halt', ' halts the machine'));
register(['poweroff'], blockName('poweroff', ' powers the machine off'));
register(['systemctl', 'loginctl'], judgeSystemctl);
register(['init', 'telinit', 'runit-init'], judgeInit);
register(['busctl', 'dbus-send', 'gdbus', 'qdbus', 'dbus'], judgeDbus);
register(['kill'], judgeKill);
register(['pkill', 'killall', 'killall5', 'skill', 'slay'], judgePkill);
