/**
 * git: settings and options that make git run commands (`-c core.sshCommand=…`, aliases, hooks
 * paths, helpers, `--upload-pack=`, `--exec=`, `--template`) are asked, since the judge cannot say
 * what they run; settings that only change output or behaviour (`-c user.name=…`) are not.
 * Commands git runs as shell (`rebase --exec`, `bisect run`, `filter-branch` filters) are judged.
 * `git clean -fdx` and `git stash -u` over a folder holding kernel state are refused.
 */
import { found, type Ctx, type Finding, type Handler, type Simple } from '../context.js';
import { kernelStateInside } from '../kernel-state-rule.js';
import { register } from '../registry.js';
import { judgeInner, judgeScript } from '../walk.js';
import { code, isLiteral, syntheticWord, type Word } from '../words.js';

const RUNS = 'option-runs-command';

/** Settings that never make git run anything. Anything else (core.pager, alias.*, …) is asked. */
const SAFE_KEY =
  /^(user\.|author\.|committer\.|color\.|advice\.|init\.defaultbranch$|safe\.directory$|core\.(quotepath|autocrlf|filemode|abbrev|ignorecase|longpaths|symlinks|eol|safecrlf|whitespace|compression|bigfilethreshold|precomposeunicode|untrackedcache|commitgraph|splitindex|preloadindex|fscache|logallrefupdates|sparsecheckout|checkstat|trustctime)$|commit\.(gpgsign|verbose|cleanup|status)$|tag\.(gpgsign|sort)$|pull\.(rebase|ff)$|push\.(default|autosetupremote|followtags)$|merge\.(conflictstyle|ff|log|renamelimit|stat)$|diff\.(noprefix|renames|algorithm|colormoved|mnemonicprefix|relative|indentheuristic|context|statgraphwidth|submodule|interhunkcontext)$|log\.(date|decorate|abbrevcommit|follow|showroot|showsignature)$|format\.pretty$|fetch\.(prune|prunetags|parallel|recursesubmodules|writecommitgraph)$|gc\.|rebase\.(autosquash|autostash|updaterefs|stat|missingcommitscheck)$|rerere\.|status\.|branch\.(sort|autosetupmerge|autosetuprebase)$|column\.|pack\.|index\.|feature\.|checkout\.|clone\.defaultremotename$|http\.(sslverify|version|postbuffer|lowspeedlimit|lowspeedtime)$|transfer\.fsckobjects$|submodule\.recurse$|grep\.|blame\.|i18n\.|versionsort\.|protocol\.version$|credential\.interactive$|am\.|apply\.|help\.autocorrect$)/i;

function checkKey(setting: string, ctx: Ctx, how: string): Finding | null {
  const key = setting.split('=')[0] ?? ''; // split always returns one element
  if (SAFE_KEY.test(key) && !setting.includes('\u0000')) return null;
  return found(ctx, RUNS, `${code(how + ' ' + setting)} sets ${code(key)}, a git setting that can make git run a command`);
}

const GLOBAL_VALUED = /^(-C|-c|--git-dir|--work-tree|--namespace|--super-prefix|--config-env|--list-cmds|--attr-source)$/;

/** Arguments of any subcommand that name a program git will run. */
const RUNNING_ARG =
  /^(--upload-pack|--receive-pack|--exec|--template|--to-cmd|--cc-cmd|--sendmail-cmd|--smtp-server|--access-hook|--open-files-in-pager|--extcmd|--tool|--ssh-command|--askpass|--stdin-packs-hook)(=|$)|^-O/;

const judgeGit: Handler = (name, args, cmd, ctx) => {
  let i = 0;
  for (; i < args.length; i++) {
    const w = args[i]!; // i < args.length
    const t = w.text;
    if (!t.startsWith('-')) break;
    if (!isLiteral(w)) return found(ctx, RUNS, `${code(name)} with ${code(w.source)}, an option only known at run time`);
    if (t === '-c' || t.startsWith('-c')) {
      const setting = t === '-c' ? (args[++i]?.text ?? '') : t.slice(2);
      const f = checkKey(setting, ctx, 'git -c');
      if (f) return f;
    } else if (t.startsWith('--config-env')) {
      const setting = t.includes('=') ? t.slice(t.indexOf('=') + 1) : (args[++i]?.text ?? '');
      const f = checkKey(setting, ctx, 'git --config-env');
      if (f) return f;
    } else if (t.startsWith('--exec-path') && t.includes('='))
      return found(ctx, RUNS, `${code(name + ' ' + t)} makes git run its subcommands from another folder`);
    else if (GLOBAL_VALUED.test(t)) i++;
  }
  const sub = args[i]?.text;
  const rest = args.slice(i + 1);
  if (sub === undefined) return null;
  const running = rest.find(
    (w) => RUNNING_ARG.test(w.text) || ((sub === 'clone' || sub === 'fetch' || sub === 'ls-remote' || sub === 'pull') && w.text === '-u'),
  );
  if (running) return found(ctx, RUNS, `${code(`git ${sub} ${running.source}`)} names a program or hook folder git will run`);
  switch (sub) {
    case 'clone':
    case 'init':
    case 'submodule': {
      for (let j = 0; j < rest.length; j++) {
        const t = rest[j]!.text; // j < rest.length
        if (t === '-c' || t === '--config') {
          const f = checkKey(rest[j + 1]?.text ?? '', ctx, `git ${sub} -c`);
          if (f) return f;
        } else if (/^--config=/.test(t)) {
          const f = checkKey(t.slice(9), ctx, `git ${sub} --config`);
          if (f) return f;
        }
      }
      if (sub === 'submodule' && rest.some((w) => w.text === 'foreach')) {
        const body = rest.slice(rest.findIndex((w) => w.text === 'foreach') + 1).filter((w) => !/^--(recursive|quiet)$/.test(w.text));
        const f = body.every(isLiteral) ? judgeScript(body.map((w) => w.text).join(' '), ctx, 'git submodule foreach') : null;
        return f ?? found(ctx, RUNS, '`git submodule foreach` runs a shell command in every submodule');
      }
      return null;
    }
    case 'config':
      return judgeConfig(rest, ctx);
    case 'bisect':
      return rest[0]?.text === 'run' ? judgeInner(rest.slice(1), cmd, ctx, 'git bisect run') : null;
    case 'rebase':
      return judgeShellOptions(rest, /^(-x|--exec)$/, /^--exec=/, ctx, 'git rebase --exec');
    case 'filter-branch':
      return judgeShellOptions(rest, /^--(env|tree|index|parent|msg|commit|tag-name)-filter$/, /^$/, ctx, 'git filter-branch');
    case 'filter-repo':
      return rest.some((w) => /callback/.test(w.text))
        ? found(ctx, 'inline-code', '`git filter-repo` with a callback runs Python code the judge cannot check')
        : null;
    case 'clean':
      return cleanOrStash(rest, cmd, ctx, /^-[a-zA-Z]*f|^--force$/, 'git clean -f');
    case 'stash':
      return cleanOrStash(rest, cmd, ctx, /^-[a-zA-Z]*[ua]|^--(include-untracked|all)$/, 'git stash -u');
    default:
      return null;
  }
};

/** `git config KEY VALUE`, `git config set KEY VALUE`, `--add`: setting a running key is asked. */
function judgeConfig(rest: Word[], ctx: Ctx): Finding | null {
  const operands: Word[] = [];
  let reading = false;
  for (let j = 0; j < rest.length; j++) {
    const w = rest[j]!; // j < rest.length
    const t = w.text;
    if (/^--(get|get-all|get-regexp|get-urlmatch|list|unset|unset-all|remove-section|rename-section|show-origin|show-scope|name-only)$|^-l$/.test(t))
      reading = true;
    else if (/^(-f|--file|--blob|--type|--default|--comment)$/.test(t)) j++;
    else if (!t.startsWith('-')) operands.push(w);
  }
  if (reading) return null;
  if (['get', 'list', 'unset', 'remove-section', 'rename-section', 'edit'].includes(operands[0]?.text ?? '')) return null;
  const key = operands[0]?.text === 'set' ? operands[1] : operands[0];
  const value = operands[0]?.text === 'set' ? operands[2] : operands[1];
  if (!key || !value) return null;
  return checkKey(key.text, ctx, 'git config');
}

/** Options whose value is shell code git runs (`rebase --exec CMD`): judged like `sh -c`. */
function judgeShellOptions(rest: Word[], separate: RegExp, attached: RegExp, ctx: Ctx, via: string): Finding | null {
  for (let j = 0; j < rest.length; j++) {
    const t = rest[j]!.text; // j < rest.length
    const body = separate.test(t) ? rest[++j] : attached.test(t) ? syntheticWord(t.slice(t.indexOf('=') + 1)) : undefined;
    if (!body) continue;
    if (!isLiteral(body)) return found(ctx, RUNS, `${code(via)} runs ${code(body.source)}, a command only known at run time`);
    const f = judgeScript(body.text, ctx, via);
    if (f) return f;
  }
  return null;
}

/** `git clean -fdx`, `git stash -u` delete untracked files: refused over a folder holding kernel state. */
function cleanOrStash(rest: Word[], _cmd: Simple, ctx: Ctx, trigger: RegExp, what: string): Finding | null {
  if (!rest.some((w) => trigger.test(w.text))) return null;
  const paths = rest.filter((w) => !w.text.startsWith('-') && !['push', 'save'].includes(w.text));
  return kernelStateInside(paths.length > 0 ? paths : [syntheticWord('.')], ctx, `${code(what)} over`);
}

register(['git'], judgeGit);
