/**
 * memo's own commands that only a person may run (`person-settings`): standing permissions,
 * approvals, settings, providers, enabling and configuring packs, opt-in skill folders, a pack's
 * consent and linking commands, token rotation. Run by a tool, they would let an agent grant itself
 * what the person is asked for. Recognised under every spelling the judge can see: `memo`,
 * `/path/bin/memo`, `npx memo`, `npm exec memo`, `node …/bin/memo`, `node …/dist/kernel/cli/main.js`,
 * `tsx kernel/cli/main.ts`, an alias, a variable holding the name, wrappers, `bash -c` bodies. A
 * memo whose subcommand is only known at run time (`memo "$@"` in a function) is refused too.
 * Read-only commands (`memo tools list`, `memo audit verify`, `memo --help`) are left alone. A
 * script file that runs memo is not read: the OS sandbox, where the data folder does not exist, is
 * the wall there.
 *
 * Rotating memo serve's token is a person's act too: SIGHUP sent by `kill` (to any pid, since which
 * process a pid is cannot be known before the command runs), by `pkill`/`killall` to a process named
 * memo or node, or matching memo serve's command line (see system-control.ts), and an HTTP request
 * to a URL whose path ends in `/rotate-token`.
 */
import { found, type Ctx, type Finding, type Handler } from '../context.js';
import { register, registerPattern } from '../registry.js';
import { judgeInner } from '../walk.js';
import { code, DYN, isLiteral, type Word } from '../words.js';

export const PERSON_SETTINGS = 'person-settings';

/** Command groups only a person may use, with the subcommands that are (`*`: the whole group). */
const PERSON_ONLY: Record<string, ReadonlySet<string> | '*'> = {
  permissions: '*',
  approvals: '*',
  settings: '*',
  provider: '*',
  providers: '*',
  plugins: new Set(['enable', 'disable', 'config']),
  skills: new Set(['folders']),
  calendar: new Set(['add', 'remove', 'consent']),
  routines: new Set(['run-now', 'pause', 'resume']),
  whatsapp: new Set(['link', 'unlink']),
  serve: new Set(['rotate-token']),
  console: new Set(['link']),
};
/** Subcommands of a person-only subcommand that are only a listing (`memo skills folders list`). */
const LISTING: Record<string, RegExp> = { 'skills folders': /^(list)?$/ };

/** memo's global options that take a value. */
const VALUE_OPTIONS = /^--(root|data|packs|skills)$/;

/** `memo [GLOBAL OPTIONS] GROUP [SUB …]`: refused when GROUP SUB is a person's, or only known at run time. */
const judgeMemo: Handler = (name, args, _cmd, ctx) => {
  const positional: Word[] = [];
  for (let i = 0; i < args.length; i++) {
    const w = args[i]!; // i < args.length
    if (w.opaque || (w.text.startsWith(DYN) && positional.length < 2)) return unknown(name, w, ctx);
    if (w.text === '--') continue;
    if (VALUE_OPTIONS.test(w.text)) {
      i++;
      continue;
    }
    if (w.text.startsWith('-')) continue;
    positional.push(w);
  }
  const [group, first] = positional;
  if (group === undefined) return null;
  if (!isLiteral(group)) return unknown(name, group, ctx);
  const only = PERSON_ONLY[group.text.toLowerCase()];
  if (only === undefined) return null;
  let sub = first;
  if (only !== '*') {
    if (first === undefined) return null;
    if (!isLiteral(first)) return unknown(name, first, ctx);
    // A group's own options may take a value (`memo serve --port 5 rotate-token`), which this judge
    // cannot tell from a subcommand: a person's subcommand named anywhere after the group counts.
    const at = positional.findIndex((w, i) => i > 0 && isLiteral(w) && only.has(w.text.toLowerCase()));
    if (at < 0) return null;
    sub = positional[at]!;
    const third = positional[at + 1];
    const listing = LISTING[`${group.text.toLowerCase()} ${sub.text.toLowerCase()}`];
    if (listing && (third === undefined || (isLiteral(third) && listing.test(third.text)))) return null;
  }
  const what = [group, ...(only === '*' ? [] : [sub])].map((w) => w!.text).join(' ');
  return found(ctx, PERSON_SETTINGS, `${code(`${name} ${what}`)} is a command only a person may run: from a tool it would let the agent decide for them`);
};

function unknown(name: string, w: Word, ctx: Ctx): Finding {
  return found(
    ctx,
    PERSON_SETTINGS,
    `${code(name)} is run with ${w.label ?? code(w.source)}, a subcommand only known at run time, which may be one only a person may run`,
  );
}

/** memo's entry points, run by an interpreter: `bin/memo`, `dist/kernel/cli/main.js`, `kernel/cli/main.ts`. */
export const isMemoEntry = (w: Word | undefined): boolean =>
  !!w && isLiteral(w) && /(^|\/)(bin\/memo|memo|(dist\/)?kernel\/cli\/main\.[cm]?[jt]s)$/i.test(w.text);

/** `tsx kernel/cli/main.ts permissions …`, `ts-node bin/memo …`: judged as memo. */
const judgeTsRunner: Handler = (name, args, cmd, ctx) => {
  const script = args.findIndex((w) => !w.text.startsWith('-'));
  return script >= 0 && isMemoEntry(args[script]) ? judgeInner([{ ...args[script]!, text: 'memo' }, ...args.slice(script + 1)], cmd, ctx, name) : null;
};

/** The path of a URL (`http://h:1/mcp/rotate-token?x`), percent-decoded and lower-cased. */
function urlPath(text: string): string | null {
  const m = /^(?:[a-z][a-z0-9+.-]*:\/\/)?[^/?#\s]*(\/[^?#\s]*)/i.exec(text.replace(/^[@<]/, ''));
  if (!m?.[1]) return null;
  try {
    return decodeURIComponent(m[1]).toLowerCase();
  } catch {
    return m[1].toLowerCase();
  }
}

/** An HTTP client naming memo serve's token-rotation endpoint (whatever the method: a config file may set it). */
const judgeHttpClient: Handler = (name, args, _cmd, ctx) => {
  const hit = args.find((w) => !w.opaque && /\/rotate-token\/*$/.test(urlPath(w.text) ?? ''));
  return hit ? found(ctx, PERSON_SETTINGS, `${code(name)} calls ${code(hit.source)}, memo serve's token rotation, which only a person may ask for`) : null;
};

register(['memo', 'memo-kernel'], judgeMemo);
registerPattern(/^memo(-kernel)?@/, judgeMemo);
register(['tsx', 'ts-node', 'ts-node-esm'], judgeTsRunner);
register(['curl', 'wget', 'wget2', 'http', 'https', 'httpie', 'xh', 'xhs', 'curlie', 'aria2c', 'lwp-request', 'post', 'get', 'fetch'], judgeHttpClient);
