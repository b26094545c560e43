/**
 * Privilege escalation: running a command as another user or group. Refused outright, whatever it
 * runs; what it would run is judged too, so the message can say so.
 */
import { found, type Finding, type Handler } from '../context.js';
import { getopt, type OptSpec } from '../options.js';
import { register } from '../registry.js';
import { judgeInner, judgeScript } from '../walk.js';
import { code, DYN } from '../words.js';

interface EscalatorDef {
  rule: string;
  spec: OptSpec;
  /** The option whose value is shell code (`su -c CODE`). */
  codeOption?: readonly string[];
  /** Operands before the command (`runuser USER`, `gosu USER CMD`). */
  leading?: number;
  /** Never runs a command of its own words (`sudoedit`, `newgrp`). */
  noCommand?: boolean;
}

const ESCALATORS: Record<string, EscalatorDef> = {
  sudo: {
    rule: 'sudo',
    spec: {
      short: 'AbEeHiKklnPSsVvBNu:g:C:D:h:p:r:t:T:U:R:',
      long: [
        'user=',
        'group=',
        'login',
        'shell',
        'non-interactive',
        'preserve-env=?',
        'background',
        'askpass',
        'set-home',
        'chdir=',
        'chroot=',
        'close-from=',
        'prompt=',
        'role=',
        'type=',
        'command-timeout=',
        'other-user=',
        'host=',
      ],
    },
  },
  sudoedit: { rule: 'sudo', spec: {}, noCommand: true },
  doas: { rule: 'sudo', spec: { short: 'nsLu:C:' } },
  run0: {
    rule: 'sudo',
    spec: {
      short: 'u:g:',
      long: ['user=', 'group=', 'nice=', 'chdir=', 'setenv=', 'unit=', 'property=', 'description=', 'slice=', 'background=', 'machine=', 'no-ask-password'],
    },
  },
  please: { rule: 'sudo', spec: { short: 'u:d:nrw', long: ['target=', 'dir=', 'warm', 'purge', 'list', 'edit'] } },
  su: {
    rule: 'su',
    spec: {
      short: 'mplfPTc:s:g:G:w:',
      long: ['command=', 'session-command=', 'shell=', 'login', 'preserve-environment', 'group=', 'supp-group=', 'pty', 'no-pty', 'whitelist-environment='],
      dashIsOption: true,
    },
    codeOption: ['c', 'command', 'session-command'],
    noCommand: true,
  },
  runuser: {
    rule: 'su',
    spec: {
      short: 'u:g:G:lmpfc:s:w:P',
      long: [
        'user=',
        'group=',
        'supp-group=',
        'login',
        'preserve-environment',
        'command=',
        'session-command=',
        'shell=',
        'whitelist-environment=',
        'pty',
        'fast',
      ],
      dashIsOption: true,
    },
    codeOption: ['c', 'command', 'session-command'],
  },
  'su-exec': { rule: 'su', spec: {}, leading: 1 },
  gosu: { rule: 'su', spec: {}, leading: 1 },
  setuidgid: { rule: 'su', spec: {}, leading: 1 },
  's6-setuidgid': { rule: 'su', spec: {}, leading: 1 },
  sg: { rule: 'su', spec: { short: 'c:' }, codeOption: ['c'], leading: 1 },
  newgrp: { rule: 'su', spec: {}, noCommand: true },
  pkexec: { rule: 'pkexec', spec: { long: ['user=', 'disable-internal-agent', 'keep-cwd', 'help', 'version'] } },
};

/** Escalation is blocked outright; what it would run is judged too, so the message can say it. */
const judgeEscalator: Handler = (name, args, cmd, ctx) => {
  const def = ESCALATORS[name];
  if (def === undefined) throw new Error(`judge: ${name} is registered as an escalator without a definition`);
  const parsed = getopt(args, def.spec);
  let inner: Finding | null = null;
  let runs = '';
  if (!('unknown' in parsed)) {
    const body = def.codeOption?.map((o) => parsed.options.get(o)).find((v) => typeof v === 'string');
    const operands = parsed.operands.slice(def.leading ?? 0);
    if (typeof body === 'string' && !body.includes(DYN)) {
      inner = judgeScript(body, ctx, null, undefined);
      runs = body;
    } else if (!def.noCommand && operands.length > 0) {
      inner = judgeInner(operands, cmd, ctx, name);
      runs = operands.map((w) => w.source).join(' ');
    }
  }
  const what = runs ? `${code(name)} runs ${code(runs)} as another user` : `${code(name)} escalates privileges`;
  const also = inner ? `, and that command is refused on its own too: ${inner.what.charAt(0).toLowerCase()}${inner.what.slice(1)}` : '';
  return found(ctx, def.rule, what + also);
};

register(Object.keys(ESCALATORS), judgeEscalator);
