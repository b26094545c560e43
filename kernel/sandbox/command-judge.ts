/**
 * The shell command judge: refuses dangerous shell commands whatever permissions the caller holds,
 * and asks about what it cannot vouch for.
 *
 * It judges the parsed command, never the raw string: the command is parsed with tree-sitter's
 * bash grammar and every simple command in it is examined (lists, pipelines, subshells, groups,
 * `$(…)`, backticks, `<(…)`, substitutions inside arguments and strings, if/while/for/case bodies,
 * function bodies, and the bodies of `sh -c`, `bash -c`, `eval`, heredocs fed to a shell…).
 * Quoting, escapes and line continuations are resolved (`'rm'`, `r""m`, `\rm`, `r\⏎m` and
 * `$'\x72m'` are all `rm`), names are matched on their basename (`/bin/rm`), wrappers (`env`,
 * `timeout`, `strace`, `flock`, `unshare`…) are looked through, the working directory is followed
 * through `cd`, and what the command assigns to variables is remembered.
 *
 * Three verdicts, and when a command has several parts, blocked beats ask beats allowed:
 * - `blocked`: a rule of BLOCK_RULES matched, or the judge fails closed: `unparseable` (not
 *   complete, valid shell, or a construct it cannot reason about), `dynamic-command` (what decides
 *   the verdict is only known at run time), `empty-command`;
 * - `ask`: a rule of ASK_RULES matched: code in another language, a program fed its code on stdin,
 *   an option that runs a command; the judge cannot vouch for it, so a person must, every time;
 * - `allowed`: nothing matched.
 *
 * An allowed or asked command also says which of its programs use the network (`network`), for the
 * OS sandbox's decision and for the person reading `memo shell check`.
 *
 * It does not look inside script files named by path (`bash build.sh`, `make`, `npm test`).
 *
 * Layout: judge/parser (grammar loading), judge/words (quotes, escapes, braces, expansions),
 * judge/options (getopt), judge/walk (the tree, scopes), judge/variables (assignments, arithmetic),
 * judge/redirects, judge/cwd, judge/paths, judge/kernel-state-rule, judge/env-vars, judge/fork-bomb,
 * judge/network (programs that use the network), judge/secrets (secret files outside the root),
 * and one file per program family under judge/rules.
 */
import { inject, injectable } from '../di.js';
import { KernelState } from './kernel-state.js';
import { EMPTY, isAskRule, reasonOf, UNPARSEABLE, type Ctx, type Finding } from './judge/context.js';
import { loadParser } from './judge/parser.js';
import { code } from './judge/words.js';
import { START } from './judge/paths.js';
import './judge/rules/index.js';
import { judgeScript } from './judge/walk.js';

/** The command judge (the blacklist), parsed not string-matched: allowed, blocked with a rule, or ask. */
export interface Judge {
  judge(command: string, options?: JudgeOptions): Promise<CommandVerdict>;
}

export { ASK_RULES } from './judge/context.js';

export interface CommandVerdict {
  verdict: 'blocked' | 'ask' | 'allowed';
  /** A BLOCK_RULES or ASK_RULES id, or `unparseable` / `dynamic-command` / `empty-command`; null when allowed. */
  rule: string | null;
  /** One sentence naming the rule and what was found (or why the command is allowed). */
  reason: string;
  /**
   * For a command that is allowed or asked: the programs in it that use the network, once each, in
   * the order met (`curl`, `git fetch`, `npm install`, `npx`, `rsync` to a host). Absent when there
   * are none, and on a blocked command.
   */
  network?: { programs: string[] };
}

export interface JudgeOptions {
  /** The absolute, real working directory the command starts in. */
  cwd?: string;
  /**
   * The command runs in the OS sandbox, where the data folder and other kernel areas do not exist:
   * a recursive command over a folder that only incidentally holds one (`rm -rf *`, `grep -r foo .`,
   * `find . -name '*.pyc' -delete`, `tar c .`) is allowed, while a word naming kernel state
   * (`cat data/permissions.json`, `rm -r data`) is still refused. Default: false.
   */
  osSandbox?: boolean;
}

export const BLOCK_RULES: ReadonlyArray<{ id: string; category: string; description: string }> = Object.freeze([
  {
    id: 'rm-root',
    category: 'Destructive',
    description:
      'rm of `/` or of everything under it (`/`, `/*`, `/..`, `"$EMPTY/"`, `cd / && rm -rf *`), rsync `--delete` into `/`, or rm with `--no-preserve-root`.',
  },
  {
    id: 'rm-home',
    category: 'Destructive',
    description:
      'Recursive rm of a home directory or all of its contents (`~`, `~/`, `~/*`, `$HOME`, `${HOME}`, `~user`, `/home/me`), or rsync `--delete` into one.',
  },
  {
    id: 'rm-cwd',
    category: 'Destructive',
    description:
      'Recursive rm of the working directory, its parent, or all of their contents (`.`, `./`, `./*`, `*`, `.*`, `..`), or rsync `--delete` into one.',
  },
  {
    id: 'rm-system',
    category: 'Destructive',
    description:
      'rm of a path in a system tree (`/etc`, `/usr`, `/bin`, `/var`…) or of a top-level directory such as `/home` or `/opt`, also reached by `cd` or `../` chains.',
  },
  {
    id: 'system-files',
    category: 'Destructive',
    description:
      'Destroying or overwriting system files by other means: `unlink`, `mv` from or onto system paths, `truncate`, `shred`, `sed -i`/`perl -i`, `cp`/`install`/`ln`/`tee`/`>` onto system paths, `rmdir`/`mkdir`/`touch` in system trees, `tar -x -C /etc`, or moving a home directory away.',
  },
  {
    id: 'kernel-state',
    category: 'Kernel state',
    description:
      'A command whose words (arguments, redirect targets, `cd` targets, assigned values, `--opt=PATH`; `$PWD`, `~+`, `$(pwd)`, `~-` resolved) point into a kernel-owned area: the data folder, pack and skill folders; or, outside the OS sandbox, a recursive command over a folder holding one (`rm -rf *`, `find . -delete`, `grep -r x .`, `tar c .`).',
  },
  {
    id: 'person-settings',
    category: 'Kernel state',
    description:
      "memo's person-only commands, in any spelling (`memo`, `…/bin/memo`, `npx memo`, `npm exec memo`, `node …/bin/memo`, an alias, a variable, wrappers): `permissions`, `approvals`, `settings`, `provider`, `plugins enable|disable|config`, `skills folders add|remove`, `calendar add|remove|consent`, `routines run-now|pause|resume`, `whatsapp link|unlink`, `serve rotate-token`, `console link`, or memo with a subcommand only known at run time; and rotating memo serve's token: SIGHUP by `kill` (to any pid), `pkill`/`killall` (of memo or node), an HTTP request to `…/rotate-token`.",
  },
  {
    id: 'dd',
    category: 'Disk',
    description:
      '`dd` and raw copiers (raw block copies that can overwrite a disk), or any write to a disk device (`> /dev/sda`, `tee /dev/nvme0n1`, `cp x /dev/sdb`, `/dev//sda`, `/dev/disk/by-id/…`).',
  },
  {
    id: 'mkfs',
    category: 'Disk',
    description:
      'Creating or wiping a filesystem: `mkfs`, `mkfs.ext4` and kin, `mke2fs`, `mkswap`, `wipefs`, `newfs`, `blkdiscard`, `badblocks -w`, `mdadm --create`.',
  },
  {
    id: 'format',
    category: 'Disk',
    description:
      '`format`, `diskutil` erasing or repartitioning a disk, `nvme format`, `cryptsetup luksFormat`, `hdparm --security-erase`, LVM and ZFS destruction.',
  },
  { id: 'fdisk', category: 'Disk', description: 'Partition table editors: `fdisk`, `sfdisk`, `cfdisk`, `gdisk`, `sgdisk`.' },
  { id: 'parted', category: 'Disk', description: 'The `parted` / `gparted` partition editors.' },
  {
    id: 'chmod-777',
    category: 'Permission changes',
    description: 'chmod with a mode that lets everyone write and execute (`777`, `0777`, `1777`, `a=rwx`, `a+rwx`, `o+wx`, `+rwx`…), recursive or not.',
  },
  {
    id: 'chmod-system',
    category: 'Permission changes',
    description: 'chmod, `setfacl` or `chattr` of `/` or of a path in a system tree (`/etc`, `/usr`, `/bin`…), e.g. `chmod -R 755 /usr`.',
  },
  { id: 'chown-system', category: 'Permission changes', description: 'chown or chgrp of `/` or of a path in a system tree, e.g. `chown root /etc/passwd`.' },
  { id: 'sudo', category: 'Privilege escalation', description: 'Running a command as another user with `sudo`, `sudoedit`, `doas`, `run0` or `please`.' },
  {
    id: 'su',
    category: 'Privilege escalation',
    description: 'Switching user or group: `su`, `runuser`, `su-exec`, `gosu`, `sg`, `newgrp`, `setpriv --reuid`, `capsh --user`, wrappers with a user option.',
  },
  { id: 'pkexec', category: 'Privilege escalation', description: "Running a command as another user with polkit's `pkexec`." },
  {
    id: 'fork-bomb',
    category: 'Fork bombs',
    description: 'A function that runs itself concurrently (piped into itself or in the background): `:(){ :|:& };:` and renamed variants.',
  },
  {
    id: 'nc-exec',
    category: 'Reverse shells',
    description:
      'netcat (`nc`, `ncat`, `netcat`) with `-e`/`-c`/`--exec`/`--sh-exec`, or `socat` with an `EXEC:`/`SYSTEM:` address: a program wired to a socket.',
  },
  {
    id: 'bash-interactive',
    category: 'Reverse shells',
    description: "An interactive shell (`bash -i`, `sh -i`), or a redirect to bash's `/dev/tcp/` or `/dev/udp/` network sockets.",
  },
  { id: 'mkfifo', category: 'Reverse shells', description: 'Creating a named pipe (`mkfifo`, `mknod NAME p`), the plumbing of a netcat reverse shell.' },
  {
    id: 'secret-exfiltration',
    category: 'Secrets',
    description:
      'A command that reads a secret file outside the root (`~/.ssh` keys, `id_rsa`…, `~/.aws`, `~/.config/gcloud`, `~/.azure`, `~/.kube/config`, `~/.docker/config.json`, `~/.netrc`, `~/.npmrc`, `~/.pypirc`, `~/.git-credentials`, `~/.gnupg`, `/etc/shadow`, SSH host keys, or a folder holding them) and also runs a program that uses the network: `curl -F f=@~/.ssh/id_rsa …`, `tar c ~/.ssh | ssh host`, `cat ~/.aws/credentials | curl -d @- …`.',
  },
  {
    id: 'shutdown',
    category: 'System control',
    description:
      '`shutdown`, or taking the machine out of service: `systemctl suspend|hibernate|rescue|emergency`, `systemctl isolate rescue.target`, `init 1`, `pm-suspend`, logind over D-Bus.',
  },
  {
    id: 'reboot',
    category: 'System control',
    description:
      "`reboot`, `systemctl reboot|kexec|soft-reboot`, `systemctl start reboot.target`, `init 6`, `kexec`, `echo b > /proc/sysrq-trigger`, logind's Reboot over D-Bus.",
  },
  { id: 'halt', category: 'System control', description: '`halt`, `systemctl halt`, `systemctl isolate halt.target`.' },
  {
    id: 'poweroff',
    category: 'System control',
    description: "`poweroff`, `systemctl poweroff`, `init 0`, `echo o > /proc/sysrq-trigger`, logind's PowerOff over D-Bus.",
  },
  {
    id: 'kill-all',
    category: 'System control',
    description: 'Killing every process at once: `kill -9 -1`, `kill -- -1`, `kill 1`, `killall5`, `pkill -u USER`, `pkill -f .`.',
  },
  {
    id: 'kernel-interface',
    category: 'System control',
    description: 'Writing to a kernel interface: `/proc/sysrq-trigger`, `/proc/sys/…`, `/sys/…`, `/dev/mem`, `/dev/kmem`, `/dev/port`.',
  },
  {
    id: 'schedule',
    category: 'System control',
    description:
      'Leaving a command to run later or outside the command: `crontab` (but `crontab -l`), `at`, `batch`, `systemd-run`, `launchctl load|bootstrap|submit`, and writes into cron and at spools (`/etc/cron*`, `/etc/anacrontab`, `/var/spool/cron`, `/var/spool/at`) or launchd agent folders (`~/Library/LaunchAgents`).',
  },
]);

/** A secret file read by a command that also runs a program using the network. */
function secretExfiltration(ctx: Ctx): Finding | null {
  const [secret] = ctx.run.secrets;
  const [sender] = ctx.run.network;
  if (!secret || sender === undefined) return null;
  return {
    rule: 'secret-exfiltration',
    what: `${code(secret.program)} reads ${code(secret.word)} (${secret.what}), and the command also runs ${code(sender)}, which can send it over the network`,
    via: [],
  };
}

/** Judges shell commands before they run; see the module comment for what it refuses and why. */
@injectable()
export class CommandJudge implements Judge {
  constructor(@inject(KernelState) private readonly state?: KernelState) {}

  async judge(command: string, options: JudgeOptions = {}): Promise<CommandVerdict> {
    if (command.trim() === '') return { verdict: 'blocked', rule: EMPTY, reason: `${EMPTY}: the command is empty: there is nothing to run.` };
    // eslint-disable-next-line no-control-regex -- finding NUL and control characters is the point: a shell command cannot hold them
    if (/[\u0000-\u0002]/.test(command))
      return {
        verdict: 'blocked',
        rule: UNPARSEABLE,
        reason: `${UNPARSEABLE}: the command contains NUL or control characters that a shell command cannot hold.`,
      };
    let parser;
    try {
      parser = await loadParser();
    } catch (err) {
      return {
        verdict: 'blocked',
        rule: UNPARSEABLE,
        reason: `${UNPARSEABLE}: the shell parser could not be loaded (${(err as Error).message}), so nothing can be checked.`,
      };
    }
    const start = typeof options.cwd === 'string' && options.cwd.startsWith('/') ? options.cwd : null;
    const ctx: Ctx = {
      run: {
        parser,
        asks: [],
        state: this.state ?? null,
        start,
        real: new Map(),
        osSandbox: options.osSandbox === true,
        network: [],
        secrets: [],
        functions: new Map(),
      },
      scope: { cwd: [start ?? START], vars: new Map(), aliases: new Map() },
      via: [],
      depth: 0,
    };
    let finding: Finding | null;
    try {
      finding = judgeScript(command, ctx, null);
    } catch (err) {
      // A judge that trips over its input must not let the input through.
      return { verdict: 'blocked', rule: UNPARSEABLE, reason: `${UNPARSEABLE}: the command could not be analysed (${(err as Error).message}).` };
    }
    if (finding && !isAskRule(finding.rule)) return { verdict: 'blocked', rule: finding.rule, reason: reasonOf(finding) };
    const exfiltration = secretExfiltration(ctx);
    if (exfiltration) return { verdict: 'blocked', rule: exfiltration.rule, reason: reasonOf(exfiltration) };
    const network = ctx.run.network.length > 0 ? { network: { programs: [...ctx.run.network] } } : {};
    const ask = finding ?? ctx.run.asks[0];
    if (ask) return { verdict: 'ask', rule: ask.rule, reason: reasonOf(ask), ...network };
    return { verdict: 'allowed', rule: null, reason: 'No rule matched any command in it.', ...network };
  }
}
