/**
 * Scheduling (`schedule`): leaving a command to run later, or outside the command and everything
 * that contains it (the process containment that ends what a command started, the OS sandbox):
 * `crontab` (listing with `-l` aside), `at` and `batch` (their queue listing and removal aside),
 * `launchctl load|bootstrap|submit`, and `systemd-run` (judged in wrappers.ts: what it would run is
 * judged first). Writes into cron and at spools and launchd agent folders are judged where files
 * are written (redirects.ts, paths.ts `scheduleDir`). What such a job would run is judged too when it is
 * given on the command line, so the message can name a worse rule.
 */
import { found, type Ctx, type Finding, type Handler } from '../context.js';
import { stdinOf } from '../redirects.js';
import { register } from '../registry.js';
import { judgeScript } from '../walk.js';
import { code } from '../words.js';

const SCHEDULE = 'schedule';

const scheduled = (ctx: Ctx, what: string): Finding => found(ctx, SCHEDULE, `${what}, outside the command and everything that contains it`);

/** `crontab -l` lists; anything else (a file, `-`, `-e`, `-r`, `-i`) replaces or removes the user's table. */
const judgeCrontab: Handler = (name, args, _cmd, ctx) => {
  const flags = args.filter((w) => /^-[a-zA-Z]+$/.test(w.text)).map((w) => w.text.slice(1));
  const operands = args.filter((w, i) => !w.text.startsWith('-') && !/^-[a-zA-Z]*[uc]$/.test(args[i - 1]?.text ?? ''));
  const lists = flags.some((f) => /l/.test(f)) && !flags.some((f) => /[eri]/.test(f)) && operands.length === 0;
  if (lists) return null;
  return scheduled(ctx, `${code(`${name} ${args.map((a) => a.source).join(' ')}`.trim())} changes the user's cron table: its jobs would run later`);
};

/** `at TIME`, `batch`: a job read from stdin or `-f FILE`; `at -l`/`-r`/`-d`/`-c` only look at or remove the queue. */
const judgeAt: Handler = (name, args, cmd, ctx) => {
  if (name === 'at' && args.some((w) => /^-[a-zA-Z]*[lrdc]$/.test(w.text)) && !args.some((w) => /^-[a-zA-Z]*f/.test(w.text))) return null;
  const stdin = stdinOf(cmd, ctx);
  if (stdin && 'script' in stdin) {
    const f = judgeScript(stdin.script, ctx, `${name} <<`);
    if (f) return f;
  }
  return scheduled(ctx, `${code(name)} queues a job to run later`);
};

/** `launchctl load|bootstrap|submit …` starts a job that launchd runs and keeps. */
const judgeLaunchctl: Handler = (name, args, _cmd, ctx) => {
  const verb = args.find((w) => !w.text.startsWith('-'));
  if (!verb || !/^(load|bootstrap|submit)$/i.test(verb.text)) return null;
  return scheduled(ctx, `${code(`${name} ${verb.text}`)} hands a job to launchd, which runs it on its own terms`);
};

register(['crontab'], judgeCrontab);
register(['at', 'batch'], judgeAt);
register(['launchctl'], judgeLaunchctl);
