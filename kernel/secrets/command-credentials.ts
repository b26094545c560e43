/**
 * Credentials written into command lines (`mysql -pX`, `curl -u user:X`, `sshpass -p X`,
 * `PGPASSWORD=X psql`, `--password=X`, `-H 'Authorization: Bearer X'`), found on the shell words
 * of a command rather than on its raw text, so quoting (`-p'my pass'`), wrappers (`sudo`,
 * `timeout 5`, `env`) and script bodies (`bash -c '...'`, `ssh host '...'`) do not hide them.
 *
 * The tokenizer is deliberately simple (quotes, backslashes, operators, substitutions as word
 * breaks): it is a masking aid for audit lines and messages, not the command judge. Every word
 * keeps the position of each of its characters in the original text, so a credential found in a
 * word (even one spread over several quoted parts) maps back to the exact span to mask.
 */
import { isSensitiveName } from './secret-names.js';

export interface Found {
  start: number;
  end: number;
  rule: string;
  /** The credential as the program sees it (quotes removed). */
  value: string;
}

interface Word {
  text: string;
  /** Original offset of each character of `text`. */
  pos: number[];
}

const OPERATORS = new Set([';', '&', '|', '(', ')', '<', '>', '`', '\n']);

/** Splits a command line into simple commands of words. Unbalanced quotes run to the end. */
export function shellWords(line: string, base: number[] | null = null): Word[][] {
  const at = (i: number): number => (base ? base[i]! : i); // base has one offset per character of line
  const commands: Word[][] = [];
  let words: Word[] = [];
  let text = '';
  let pos: number[] = [];
  let inWord = false;
  const endWord = () => {
    if (inWord) words.push({ text, pos });
    text = '';
    pos = [];
    inWord = false;
  };
  const endCommand = () => {
    endWord();
    if (words.length) commands.push(words);
    words = [];
  };
  const n = line.length;
  for (let i = 0; i < n; i++) {
    const c = line[i]!; // i < n
    if (c === ' ' || c === '\t' || c === '\r') {
      endWord();
    } else if (OPERATORS.has(c)) {
      endCommand();
    } else if (c === '\\') {
      if (i + 1 < n) {
        if (line[i + 1] === '\n') {
          i++; // line continuation
          continue;
        }
        text += line[i + 1];
        pos.push(at(i + 1));
        i++;
      }
      inWord = true;
    } else if (c === "'") {
      inWord = true;
      for (i++; i < n && line[i] !== "'"; i++) {
        text += line[i];
        pos.push(at(i));
      }
    } else if (c === '"') {
      inWord = true;
      for (i++; i < n && line[i] !== '"'; i++) {
        if (line[i] === '\\' && i + 1 < n && '"\\$`'.includes(line[i + 1]!)) i++;
        text += line[i];
        pos.push(at(i));
      }
    } else if (c === '$' && line[i + 1] === '(') {
      endCommand();
      i++;
    } else {
      text += c;
      pos.push(at(i));
      inWord = true;
    }
  }
  endCommand();
  return commands;
}

type Take = 'next' | 'attached' | 'both';
interface OptionRule {
  /** Short or long option spelled as on the command line: `-p`, `--password`. */
  flag: string;
  /** `next`: the next word; `attached`: only `-pVALUE` / `--opt=VALUE`; `both`. */
  take: Take;
  /** Which part of the value is secret. */
  part?: 'all' | 'after-colon' | 'after-percent' | 'after-comma' | 'after-pass-prefix';
}

interface ProgramRule {
  names: string[];
  options: OptionRule[];
  /** Only when one of these words follows the program (`docker login`). */
  subcommand?: string[];
}

const MYSQL = [
  'mysql',
  'mariadb',
  'mysqldump',
  'mysqladmin',
  'mysqlimport',
  'mysqlcheck',
  'mysqlshow',
  'mysqlpump',
  'mysqlsh',
  'mysqlbinlog',
  'mariadb-dump',
  'mariadb-admin',
  'mariadb-import',
  'mariadb-check',
  'mariadb-show',
];

const PROGRAMS: ProgramRule[] = [
  // `-p` alone and `--password` alone make mysql prompt: only an attached value is a password.
  {
    names: MYSQL,
    options: [
      { flag: '-p', take: 'attached' },
      { flag: '--password', take: 'attached' },
    ],
  },
  {
    names: ['curl'],
    options: [
      { flag: '-u', take: 'both', part: 'after-colon' },
      { flag: '--user', take: 'both', part: 'after-colon' },
      { flag: '-U', take: 'both', part: 'after-colon' },
      { flag: '--proxy-user', take: 'both', part: 'after-colon' },
    ],
  },
  { names: ['sshpass'], options: [{ flag: '-p', take: 'both' }] },
  { names: ['redis-cli', 'valkey-cli', 'keydb-cli'], options: [{ flag: '-a', take: 'both' }] },
  { names: ['mongo', 'mongosh', 'mongodump', 'mongorestore', 'mongoexport', 'mongoimport', 'mongostat', 'mongotop'], options: [{ flag: '-p', take: 'both' }] },
  { names: ['sqlcmd', 'bcp', 'osql', 'isql'], options: [{ flag: '-P', take: 'both' }] },
  { names: ['zip', 'unzip', 'zipcloak', 'funzip'], options: [{ flag: '-P', take: 'both' }] },
  { names: ['7z', '7za', '7zr', 'rar', 'unrar'], options: [{ flag: '-p', take: 'attached' }] },
  {
    names: ['ssh-keygen'],
    options: [
      { flag: '-P', take: 'both' },
      { flag: '-N', take: 'both' },
    ],
  },
  {
    names: ['ldapsearch', 'ldapmodify', 'ldapadd', 'ldapdelete', 'ldapwhoami', 'ldapcompare', 'ldapmodrdn', 'ldapexop', 'ldappasswd'],
    options: [
      { flag: '-w', take: 'both' },
      { flag: '-s', take: 'both' },
    ],
  },
  {
    names: ['openssl'],
    options: [
      { flag: '-pass', take: 'next', part: 'after-pass-prefix' },
      { flag: '-passin', take: 'next', part: 'after-pass-prefix' },
      { flag: '-passout', take: 'next', part: 'after-pass-prefix' },
      { flag: '-k', take: 'next' },
    ],
  },
  { names: ['docker', 'podman', 'nerdctl', 'buildah', 'skopeo', 'helm', 'oras', 'crane'], subcommand: ['login'], options: [{ flag: '-p', take: 'both' }] },
  { names: ['az'], subcommand: ['login'], options: [{ flag: '-p', take: 'both' }] },
  {
    names: ['smbclient', 'rpcclient', 'smbmap', 'smbget'],
    options: [
      { flag: '-U', take: 'both', part: 'after-percent' },
      { flag: '--user', take: 'both', part: 'after-percent' },
    ],
  },
  { names: ['lftp'], options: [{ flag: '-u', take: 'both', part: 'after-comma' }] },
];

const BY_NAME = new Map<string, ProgramRule>();
for (const rule of PROGRAMS) for (const n of rule.names) BY_NAME.set(n, rule);

/** Long options whose name ends in a secret word take their value as a secret: `--api-key X`, `--token=X`. */
function sensitiveLongOption(word: string): string | null {
  if (!word.startsWith('--') || word.length < 4) return null;
  const eq = word.indexOf('=');
  const name = eq === -1 ? word.slice(2) : word.slice(2, eq);
  return isSensitiveName(name) ? name : null;
}

function basename(word: string): string {
  const slash = word.lastIndexOf('/');
  return slash === -1 ? word : word.slice(slash + 1);
}

function secretPart(value: string, part: OptionRule['part']): [number, number] | null {
  let from = 0;
  switch (part) {
    case 'after-colon':
      from = value.indexOf(':') + 1;
      if (from === 0) return null; // curl -u user prompts for the password
      break;
    case 'after-percent':
      from = value.indexOf('%') + 1;
      if (from === 0) return null;
      break;
    case 'after-comma':
      from = value.indexOf(',') + 1;
      if (from === 0) return null;
      break;
    case 'after-pass-prefix':
      if (!value.startsWith('pass:')) return null; // env:VAR, file:path, fd:N, stdin name no secret
      from = 5;
      break;
    default:
      break;
  }
  return from < value.length ? [from, value.length] : null;
}

const ASSIGNERS = new Set(['export', 'env', 'declare', 'local', 'readonly', 'typeset', 'set']);
const ASSIGNMENT = /^([A-Za-z_][A-Za-z0-9_]*)=(.+)$/s;
const HEADER = /^([A-Za-z0-9_-]{2,64})\s*:\s*(.+)$/s;

/** Finds credentials in a command line (or any text that may hold one). */
export function findCommandCredentials(line: string): Found[] {
  const found: Found[] = [];
  scan(line, null, found, 0);
  return found;
}

function scan(line: string, base: number[] | null, found: Found[], depth: number): void {
  for (const words of shellWords(line, base)) scanCommand(words, found, depth);
}

/**
 * A reference (`-p"$DB_PASS"`) or a command substitution (`-p$(cat f)`) is not a secret, and an
 * audit line must keep showing what a command would run: neither is masked.
 */
const NOT_A_LITERAL = /^\$\{?[A-Za-z_][A-Za-z0-9_]*\}?$|\$\(|`/;

function report(found: Found[], w: Word, from: number, to: number, rule: string): void {
  if (to <= from || NOT_A_LITERAL.test(w.text.slice(from, to))) return;
  // pos has one offset per character of text, and 0 <= from < to <= text.length
  found.push({ start: w.pos[from]!, end: w.pos[to - 1]! + 1, rule, value: w.text.slice(from, to) });
}

function scanCommand(words: Word[], found: Found[], depth: number): void {
  let program: ProgramRule | null = null;
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!; // i < words.length
    const t = w.text;

    // NAME=value with a secret name: prefix assignments, `export`, `env`, make variables. A value
    // with blanks counts only where an assignment can stand (`ssh host "PGPASSWORD=x pg_dump"` is a
    // script body, read below).
    const assign = ASSIGNMENT.exec(t);
    const prev = words[i - 1];
    const assignable = prev === undefined || ASSIGNERS.has(prev.text) || ASSIGNMENT.test(prev.text);
    const [, assignName = '', assignValue = ''] = assign ?? [];
    if (assign && isSensitiveName(assignName) && (assignable || !/\s/.test(assignValue))) {
      report(found, w, assignName.length + 1, t.length, 'command-assignment');
      continue;
    }

    // `--token=X`, `--api-key X`, `--password X` (programs whose option may stand alone are handled below).
    const longName = sensitiveLongOption(t);
    if (longName !== null && !(program && program.options.some((o) => o.flag === `--${longName}` && o.take === 'attached'))) {
      const eq = t.indexOf('=');
      const next = words[i + 1];
      if (eq !== -1) report(found, w, eq + 1, t.length, 'command-option');
      else if (next !== undefined && !next.text.startsWith('-')) {
        report(found, next, 0, next.text.length, 'command-option');
        i++;
      }
      continue;
    }

    // `Authorization: Bearer X`, `X-Api-Key: X` as a header word (curl -H, httpie, wget --header).
    const header = HEADER.exec(t);
    const [, headerName = '', headerValue = ''] = header ?? [];
    if (header && isSensitiveName(headerName)) {
      report(found, w, t.length - headerValue.length, t.length, 'command-header');
      continue;
    }

    // The program of this command (after wrappers such as sudo, env, timeout: any word may start one).
    const rule = BY_NAME.get(basename(t));
    if (rule && (!rule.subcommand || words.slice(i + 1).some((x) => rule.subcommand!.includes(x.text)))) {
      program = rule;
      continue;
    }

    if (program && t.startsWith('-')) {
      for (const o of program.options) {
        const long = o.flag.startsWith('--');
        if (t === o.flag) {
          if (o.take === 'attached') break;
          // The option requires a value: the next word is it, whatever it looks like.
          const next = words[i + 1];
          if (next) {
            const span = secretPart(next.text, o.part);
            if (span) report(found, next, span[0], span[1], 'command-option');
            i++;
          }
          break;
        }
        const joined = long ? `${o.flag}=` : o.flag;
        if (o.take !== 'next' && t.startsWith(joined) && t.length > joined.length) {
          // Short options may be bundled before a value only as the last letter; `-pX` is the value X.
          const value = t.slice(joined.length);
          const span = secretPart(value, o.part);
          if (span) report(found, w, joined.length + span[0], joined.length + span[1], 'command-option');
          break;
        }
      }
    }

    // Script bodies and remote commands: `bash -c '...'`, `ssh host '...'`, `su -c "..."`.
    if (depth < 3 && /[\s;&|]/.test(t) && t.length <= 100_000) scan(t, w.pos, found, depth + 1);
  }
}
