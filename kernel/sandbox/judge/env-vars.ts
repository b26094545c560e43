/**
 * Environment variables that run code. Some hold a shell command a program will run (`PAGER`,
 * `GIT_SSH_COMMAND`, `LESSOPEN`): a literal one is judged as shell, like a `bash -c` body. Others
 * make a program load a file or library the judge cannot see (`BASH_ENV`, `LD_PRELOAD`,
 * `NODE_OPTIONS=--require`): those are asked, since that file may hold anything.
 */
import { found, type Ctx, type Finding, type Scope } from './context.js';
import { code, isLiteral, type Word } from './words.js';

type ScriptJudge = (text: string, ctx: Ctx, via: string | null, scope?: Scope) => Finding | null;

const RUNS_OPTION = 'option-runs-command';

/** Variables whose value is a command line that some program runs through a shell. */
const SHELL_VALUED = new Set([
  'GIT_SSH_COMMAND',
  'GIT_SSH',
  'GIT_PAGER',
  'PAGER',
  'MANPAGER',
  'SYSTEMD_PAGER',
  'GIT_EDITOR',
  'EDITOR',
  'VISUAL',
  'SUDO_EDITOR',
  'GIT_SEQUENCE_EDITOR',
  'GIT_EXTERNAL_DIFF',
  'GIT_ASKPASS',
  'SSH_ASKPASS',
  'SUDO_ASKPASS',
  'LESSOPEN',
  'LESSCLOSE',
  'BROWSER',
  'GIT_PROXY_COMMAND',
  'RSYNC_RSH',
  'CVS_RSH',
  'FCEDIT',
  'PROMPT_COMMAND',
  'DIFF_PAGER',
  'DELTA_PAGER',
]);

/** Variables that load a file, a library or options carrying code, with the test that says when. */
const LOADS_CODE: ReadonlyArray<[RegExp, (value: string) => boolean, string]> = [
  [/^(BASH_ENV|ENV)$/, (v) => v !== '' && v !== '/dev/null', 'makes every shell it starts run that file first'],
  [/^(LD_PRELOAD|LD_AUDIT|DYLD_INSERT_LIBRARIES)$/, (v) => v !== '', 'loads that library into every program it starts'],
  [/^BASH_FUNC_/, () => true, 'defines a shell function every bash it starts imports'],
  [/^(PERL5OPT)$/, (v) => v !== '', 'adds options (modules to load) to every perl it starts'],
  [
    /^(NODE_OPTIONS)$/,
    (v) => /(^|\s)(-r|--require|--import|--loader|--experimental-loader|--experimental-import-meta-resolve)\b/.test(v),
    'makes every node it starts load that module first',
  ],
  [/^(RUBYOPT)$/, (v) => /(^|\s)-r/.test(v), 'makes every ruby it starts load that library first'],
  [/^(JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|JDK_JAVA_OPTIONS)$/, (v) => /-javaagent|-agentpath|-agentlib/.test(v), 'loads an agent into every JVM it starts'],
  [
    /^(GIT_CONFIG_PARAMETERS|GIT_CONFIG_COUNT|GIT_CONFIG_KEY_\d+|GIT_CONFIG|GIT_CONFIG_GLOBAL|GIT_CONFIG_SYSTEM|GIT_EXEC_PATH|GIT_TEMPLATE_DIR)$/,
    (v) => v !== '' && v !== '/dev/null',
    'gives git settings (aliases, hooks, helpers) that can run commands',
  ],
  [
    /^(TAR_OPTIONS)$/,
    (v) => /to-command|checkpoint-action|use-compress-program|info-script|new-volume-script|rsh-command|(^|\s)-[A-Za-z]*[IF]/.test(v),
    'gives tar an option that runs a command',
  ],
  [/^PS4$/, (v) => /\$\(|`/.test(v), 'runs a command substitution on every traced line'],
];

/** Judges assigning `words` to `name` (a statement, a prefix, `env NAME=…`, `export NAME=…`). */
export function envAssignment(name: string, words: readonly Word[], ctx: Ctx, judgeScript: ScriptJudge): Finding | null {
  if (SHELL_VALUED.has(name)) {
    if (words.length === 0) return null;
    if (!words.every(isLiteral))
      return found(
        ctx,
        RUNS_OPTION,
        `${code(name + '=')} is set to ${code(words.map((w) => w.source).join(' '))}, a command only known at run time that programs will run`,
      );
    const value = words
      .map((w) => w.text)
      .join(' ')
      .replace(/^\|\|?/, '')
      .replace(/%s/g, 'FILE');
    return judgeScript(value, ctx, `${name}=`);
  }
  const rule = LOADS_CODE.find(([re]) => re.test(name));
  if (!rule) return null;
  const value = words.map((w) => w.text).join(' ');
  if (words.every(isLiteral) && !rule[1](value)) return null;
  return found(
    ctx,
    RUNS_OPTION,
    `${code(`${name}=${words.map((w) => (isLiteral(w) ? w.text : w.source)).join(' ')}`)} ${rule[2]}, and the judge cannot see what that code does`,
  );
}
