/**
 * Which programs of a command use the network: not a rule, a fact for whoever runs the command (the
 * OS sandbox decides from it whether the command gets a network; `memo shell check` prints it), and
 * for the `secret-exfiltration` rule, which refuses a command that reads a secret file and also runs
 * one of these. Programs are recognised by name, and for package managers and version control by
 * the subcommand that downloads or uploads (`git fetch`, `npm install`, `pip install`): `git
 * status` and `npm test` are local. Wrappers, `bash -c` bodies and the like are looked through as
 * for every rule; a script run by path (`node fetch.js`, `npm test`) is not looked into.
 */
import type { Ctx } from './context.js';
import { DYN, type Word } from './words.js';

/** Programs whose every use talks to the network. */
const ALWAYS = new Set([
  'curl',
  'wget',
  'wget2',
  'aria2c',
  'axel',
  'http',
  'https',
  'httpie',
  'xh',
  'xhs',
  'curlie',
  'lynx',
  'links',
  'w3m',
  'ssh',
  'scp',
  'sftp',
  'mosh',
  'autossh',
  'ssh-copy-id',
  'ssh-keyscan',
  'nc',
  'ncat',
  'netcat',
  'nc.traditional',
  'nc.openbsd',
  'socat',
  'telnet',
  'ftp',
  'lftp',
  'tftp',
  'ping',
  'ping6',
  'traceroute',
  'traceroute6',
  'tracepath',
  'mtr',
  'dig',
  'nslookup',
  'host',
  'whois',
  'nmap',
  'uvx',
  'gh',
  'hub',
  'yt-dlp',
  'youtube-dl',
  'rclone',
  's3cmd',
  'gsutil',
  'aws',
  'gcloud',
  'az',
  'kubectl',
  'helm',
  'twine',
  'ngrok',
  'cloudflared',
]);

/** Subcommands that download or upload, by program. */
const SUBCOMMANDS: Record<string, ReadonlySet<string>> = {
  git: new Set(['fetch', 'pull', 'push', 'clone', 'ls-remote', 'send-email', 'request-pull', 'submodule', 'remote', 'lfs']),
  npm: new Set([
    'install',
    'i',
    'in',
    'ins',
    'inst',
    'insta',
    'instal',
    'isnt',
    'isnta',
    'isntal',
    'isntall',
    'add',
    'ci',
    'clean-install',
    'ic',
    'install-clean',
    'isntall-clean',
    'install-ci-test',
    'cit',
    'install-test',
    'it',
    'update',
    'up',
    'upgrade',
    'udpate',
    'publish',
    'unpublish',
    'view',
    'info',
    'show',
    'v',
    'outdated',
    'audit',
    'search',
    'find',
    'login',
    'logout',
    'adduser',
    'whoami',
    'ping',
    'doctor',
    'dist-tag',
    'deprecate',
    'owner',
    'access',
    'token',
    'star',
    'unstar',
    'init',
    'create',
  ]),
  yarn: new Set(['', 'install', 'add', 'upgrade', 'up', 'upgrade-interactive', 'dlx', 'publish', 'info', 'npm', 'create', 'global', 'outdated', 'audit']),
  pnpm: new Set(['install', 'i', 'add', 'update', 'up', 'upgrade', 'dlx', 'publish', 'fetch', 'outdated', 'audit', 'create', 'install-test', 'it']),
  bun: new Set(['install', 'i', 'add', 'a', 'update', 'create', 'upgrade', 'publish', 'outdated']),
  pip: new Set(['install', 'download', 'search', 'index', 'wheel']),
  pipx: new Set(['install', 'run', 'upgrade', 'upgrade-all', 'reinstall', 'inject']),
  uv: new Set(['add', 'sync', 'lock', 'pip', 'tool', 'run', 'python', 'publish']),
  poetry: new Set(['install', 'add', 'update', 'lock', 'publish', 'search']),
  apt: new Set(['install', 'update', 'upgrade', 'dist-upgrade', 'full-upgrade', 'download', 'source', 'build-dep', 'reinstall']),
  dnf: new Set(['install', 'update', 'upgrade', 'download', 'makecache', 'reinstall', 'check-update']),
  zypper: new Set(['install', 'in', 'refresh', 'ref', 'update', 'up', 'dup', 'dist-upgrade', 'download']),
  apk: new Set(['add', 'update', 'upgrade', 'fetch']),
  brew: new Set(['install', 'update', 'upgrade', 'fetch', 'tap', 'reinstall', 'search']),
  snap: new Set(['install', 'refresh', 'download']),
  flatpak: new Set(['install', 'update', 'remote-add']),
  docker: new Set(['pull', 'push', 'login', 'search', 'compose']),
  cargo: new Set(['install', 'fetch', 'update', 'search', 'publish', 'login', 'add']),
  go: new Set(['get', 'mod']),
  gem: new Set(['install', 'update', 'fetch', 'push', 'search']),
  bundle: new Set(['install', 'update', 'add']),
  composer: new Set(['install', 'update', 'require', 'create-project']),
  conda: new Set(['install', 'create', 'update', 'search']),
  deno: new Set(['install', 'cache', 'add']),
  terraform: new Set(['init', 'plan', 'apply', 'destroy', 'import', 'refresh']),
  svn: new Set(['checkout', 'co', 'update', 'up', 'commit', 'ci', 'export', 'import']),
  hg: new Set(['pull', 'push', 'clone', 'incoming', 'outgoing']),
  openssl: new Set(['s_client']),
};
const SAME_AS: Record<string, string> = {
  'apt-get': 'apt',
  aptitude: 'apt',
  yum: 'dnf',
  microdnf: 'dnf',
  podman: 'docker',
  mamba: 'conda',
  micromamba: 'conda',
  bundler: 'bundle',
  pip3: 'pip',
};

/** Subcommands whose own subcommand decides (`git submodule update` fetches, `git submodule status` does not). */
const SECOND_LEVEL: Record<string, RegExp> = {
  'git submodule': /^(update|add)$/,
  'git remote': /^(update|prune|show)$/,
  'git lfs': /^(fetch|pull|push|clone)$/,
  'go mod': /^(download|tidy)$/,
  'docker compose': /^(pull|push)$/,
  'uv pip': /^(install|sync|compile|download)$/,
  'uv tool': /^(install|run|upgrade)$/,
  'uv python': /^(install)$/,
  'yarn global': /^(add|upgrade)$/,
  'yarn npm': /^(publish|login|info|audit)$/,
};

/** Options (by program) that take the next word as their value, so it is not the subcommand. */
const VALUED: Record<string, RegExp> = {
  git: /^(-C|-c|--git-dir|--work-tree|--namespace|--super-prefix|--config-env|--exec-path)$/,
  npm: /^(--prefix|-w|--workspace|-C|--userconfig|--registry|--cache)$/,
  docker: /^(-H|--host|--config|--context|-c|--log-level)$/,
  go: /^(-C)$/,
  cargo: /^(-Z|--config|--color)$/,
};

/** The first operand: the subcommand, skipping options and the values of options that take one. */
function subcommand(program: string, args: readonly Word[]): Word | undefined {
  const valued = VALUED[program];
  for (let i = 0; i < args.length; i++) {
    const w = args[i]!; // i < args.length
    if (w.opaque) return w;
    if (!w.text.startsWith('-') || w.text === '-') return w;
    if (valued?.test(w.text)) i++;
  }
  return undefined;
}

/** What the program does over the network, as a short label (`curl`, `git fetch`), or null. */
function networkUse(name: string, args: readonly Word[]): string | null {
  if (ALWAYS.has(name)) return name;
  const family = SAME_AS[name] ?? (/^pip\d+(\.\d+)*$/.test(name) ? 'pip' : name);
  if (family === 'rsync') {
    const remote = args.find((w) => !w.text.startsWith('-') && (/^rsync:\/\//.test(w.text) || /^[^/=]*[^/\\=]:/.test(w.text)));
    return remote ? 'rsync' : null;
  }
  if (family === 'pacman') return args.some((w) => /^(-S|--sync)/.test(w.text)) ? 'pacman -S' : null;
  if (/^(python|pypy)(\d+(\.\d+)*)?$/.test(family)) {
    const m = args.findIndex((w) => w.text === '-m');
    const module = args[m + 1]?.text;
    if (m < 0 || (module !== 'pip' && module !== 'pip3')) return null;
    const sub = subcommand('pip', args.slice(m + 2));
    return sub && SUBCOMMANDS['pip']!.has(sub.text) ? `${name} -m pip ${sub.text}` : null;
  }
  const subs = SUBCOMMANDS[family];
  if (!subs) return null;
  const sub = subcommand(family, args);
  if (sub === undefined) return subs.has('') ? name : null;
  if (sub.opaque || sub.text.includes(DYN)) return null;
  const second = SECOND_LEVEL[`${family} ${sub.text}`];
  if (second) {
    const next = subcommand(family, args.slice(args.indexOf(sub) + 1));
    return next && second.test(next.text) ? `${name} ${sub.text} ${next.text}` : null;
  }
  return subs.has(sub.text) ? `${name} ${sub.text}` : null;
}

/** Records the network use of a program the walk meets. */
export function noteNetwork(name: string, args: readonly Word[], ctx: Ctx): void {
  const use = networkUse(name, args);
  if (use !== null && !ctx.run.network.includes(use)) ctx.run.network.push(use);
}
