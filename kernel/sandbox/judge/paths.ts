/**
 * Paths: which protected place a target names. Judged lexically (`..` resolved, links ignored),
 * relative to the working directories the command may be in at that point, because rules must
 * give the same answer whether or not the target exists yet.
 */
import os from 'node:os';
import path from 'node:path';

export type PathClass = 'root' | 'system' | 'home' | 'cwd';

/** Trees whose every path belongs to the system. */
const SYSTEM_TREES = new Set([
  'bin',
  'boot',
  'dev',
  'etc',
  'lib',
  'lib32',
  'lib64',
  'libx32',
  'nix',
  'proc',
  'root',
  'run',
  'sbin',
  'snap',
  'sys',
  'usr',
  'var',
  'System',
  'Library',
  'private',
]);
/** Top-level directories that are protected themselves, though what is inside belongs to someone. */
const SYSTEM_ROOTS = new Set(['home', 'Users', 'opt', 'srv', 'mnt', 'media', 'Volumes', 'Applications']);
/** Top-level directories whose direct children are home directories. */
const HOME_PARENTS = new Set(['home', 'Users']);
/** Scratch space inside system trees (what is under them is not the system's). */
const SCRATCH = ['var/tmp', 'var/folders', 'private/tmp', 'private/var/folders', 'private/var/tmp', 'dev/shm', 'run/user', 'run/shm'];

const hasGlob = (component: string): boolean => /[*?[]/.test(component);
/** A glob that matches (nearly) every name: `*`, `.*`, `?*`, `[a-z]*`. */
export const isCatchAll = (component: string): boolean => hasGlob(component) && component.replace(/\[[^\]]*\]|[*?.]/g, '') === '';

/** The components of a path once `.` and `..` are applied; `up` counts `..` that climb above the start. */
function components(rest: string): { stack: string[]; up: number } {
  const stack: string[] = [];
  let up = 0;
  for (const c of rest.split('/')) {
    if (c === '' || c === '.') continue;
    if (c !== '..') stack.push(c);
    else if (stack.length > 0) stack.pop();
    else up++;
  }
  return { stack, up };
}

/** Classifies a path lexically; relative paths are judged on their own (`.`, `..`, `*`). Null: nothing protected. */
export function classifyPath(text: string): PathClass | null {
  if (text === '') return null;
  const base = text.startsWith('/') ? 'abs' : text.startsWith('~') ? 'home' : 'rel';
  const rest = base === 'home' ? text.replace(/^~[^/]*/, '') : text;
  const { stack, up } = components(rest);
  const firstGlob = stack.findIndex(hasGlob);
  const everything = stack.length === 0 || (firstGlob === 0 && isCatchAll(stack[0] ?? ''));
  if (base === 'abs') return classifyAbsolute(stack, firstGlob);
  if (base === 'home') return up > 0 || everything ? 'home' : null; // `~/..` is above a home directory
  return everything || (up > 0 && stack.length === 0) ? 'cwd' : null;
}

function classifyAbsolute(stack: string[], firstGlob: number): PathClass | null {
  if (stack.length === 0 || firstGlob === 0) return 'root'; // `/`, or a pattern over top-level names
  const top = stack[0]!; // not empty: returned above
  const joined = stack.join('/');
  if (SCRATCH.some((s) => joined === s || joined.startsWith(s + '/'))) return null;
  if (SYSTEM_TREES.has(top)) return 'system';
  const justTheRoot = firstGlob === -1 ? stack.length === 1 : firstGlob === 1;
  if (SYSTEM_ROOTS.has(top) && justTheRoot) return 'system';
  // `/home/me`, `/home/me/*`: a whole home directory.
  const home = HOME_PARENTS.has(top) && (stack.length === 2 || (stack.length === 3 && isCatchAll(stack[2] ?? '')));
  if (home && firstGlob !== 1) return 'home';
  const mine = os.homedir().split('/').filter(Boolean);
  if (
    mine.length > 0 &&
    (stack.length === mine.length || (stack.length === mine.length + 1 && isCatchAll(stack.at(-1)!))) &&
    mine.every((c, i) => c === stack[i])
  )
    return 'home';
  return null;
}

/**
 * Where the command may be running at some point: a set of candidate directories, each an absolute
 * path, a `~`-based path, or START (the directory the command starts in, when the caller did not say
 * which). `null` means anywhere: a `cd` to a target only known at run time.
 */
export type Cwd = readonly string[] | null;
export const START = '\u0002start';

/** Joins a relative path onto a candidate directory; null when the directory is START. */
function join(dir: string, rel: string): string | null {
  if (dir === START) return null;
  if (dir.startsWith('~')) return '~' + path.posix.join(dir.slice(1) || '/', rel).replace(/\/$/, '');
  return path.posix.join(dir, rel);
}

/** Every absolute (or `~`-based) path a word may name from the given working directories; null: unknowable. */
export function candidates(text: string, cwd: Cwd): string[] | null {
  if (text.startsWith('/') || text.startsWith('~')) return [text];
  if (cwd === null) return null;
  const out: string[] = [];
  for (const dir of cwd) {
    const joined = join(dir, text);
    if (joined !== null) out.push(joined);
  }
  return out;
}

const RANK: Record<PathClass, number> = { root: 4, system: 3, home: 2, cwd: 1 };
const worst = (a: PathClass | null, b: PathClass | null): PathClass | null => (a === null ? b : b === null ? a : RANK[a] >= RANK[b] ? a : b);

/**
 * The directory the command starts in, when it may hold the user's own work even though it lies in
 * a tree the judge protects (`/root/proj`, `/var/www/app`, `/srv/site`): paths inside it are the
 * project's. Not so for the trees that are the system itself (`/usr/lib`, `/etc/x`).
 */
export function workspace(start: string | null): string | null {
  if (!start || !start.startsWith('/')) return null;
  const parts = start.split('/').filter(Boolean);
  return parts.length >= 2 && !/^(bin|boot|dev|etc|lib\w*|proc|sbin|sys|usr|run|snap|nix|System|Library)$/.test(parts[0] ?? '') ? normalize(start) : null;
}

function classifyResolved(p: string, ws: string | null): PathClass | null {
  if (ws && p.startsWith('/')) {
    const n = normalize(p);
    if (n === ws) return 'cwd';
    if (n.startsWith(ws + '/') && !/[*?[]/.test(n.slice(ws.length + 1).split('/')[0] ?? '')) return null;
  }
  return classifyPath(p);
}

/**
 * The worst protected place a target may name from any of the working directories, `unknown` when
 * it is relative and the directory is only known at run time, or null. `start` is the directory
 * the command starts in (see workspace()).
 */
export function classifyTarget(text: string, cwd: Cwd, start: string | null = null): PathClass | 'unknown' | null {
  if (text === '') return null;
  const ws = workspace(start);
  if (text.startsWith('/') || text.startsWith('~')) return classifyResolved(text, ws);
  let cls = classifyPath(text);
  if (cwd === null) return cls ?? 'unknown';
  for (const dir of cwd) {
    if (dir === START) {
      // From an unknown start, `../../usr` may well be `/usr`: climbing out and naming a system tree.
      const { stack, up } = components(text);
      if (up > 0 && stack.length > 0 && SYSTEM_TREES.has(stack[0] ?? '')) cls = worst(cls, 'system');
      continue;
    }
    const joined = join(dir, text);
    if (joined !== null) cls = worst(cls, classifyResolved(joined, ws));
  }
  return cls;
}

/** A path with `//`, `/./` and `..` folded away, as the kernel resolves it (links aside). */
export function normalize(p: string): string {
  return p.startsWith('/') ? path.posix.normalize(p).replace(/(.)\/$/, '$1') : p;
}

/** Whole-disk and partition devices, where a raw write destroys the filesystem. */
const DISK_DEVICE =
  /^\/dev\/(sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|disk\d|rdisk\d|md\d|md\/|dm-\d|mapper\/|disk\/|loop\d|nbd\d|sr\d|zd\d|rbd\d|bcache\d|mtd|ubi\d|root$|block\/)/;
/** Kernel memory and control files: a write changes the running kernel or the machine. */
const KERNEL_INTERFACE =
  /^\/(dev\/(mem|kmem|port|kcore|kmsg|watchdog\d*|cpu\/|mcelog|efi|hpet)|proc\/(sysrq-trigger|sys\/|kcore|\d+\/mem|self\/mem|kmsg|acpi\/|irq\/|bus\/)|sys(\/|$))/;
/** Device files writes to which harm nothing. */
const HARMLESS_DEVICE =
  /^\/dev\/(null|zero|full|random|urandom|stdout|stderr|stdin|tty|ptmx|pts\/\d+|fd\/\d+|shm\/.*|mqueue\/.*)$|^\/proc\/(self|\d+)\/fd\/\d+$/;

export type DeviceKind = 'disk' | 'kernel' | 'harmless' | null;

/** What an absolute path names among devices and kernel interfaces. */
export function deviceKind(absolute: string): DeviceKind {
  const p = normalize(absolute);
  if (HARMLESS_DEVICE.test(p)) return 'harmless';
  if (DISK_DEVICE.test(p)) return 'disk';
  if (KERNEL_INTERFACE.test(p)) return 'kernel';
  return null;
}

/** `/dev/tcp/HOST/PORT` and `/dev/udp/…`: bash opens a network connection instead of a file. */
export const isNetworkPath = (absolute: string): boolean => /^\/dev\/(tcp|udp)\//.test(normalize(absolute));

/** A folder whose files are jobs cron, at or launchd runs: writing there schedules a command. */
export function scheduleDir(abs: string): boolean {
  return (
    /^\/(etc\/cron[^/]*|etc\/anacrontab|var\/spool\/(cron|anacron|at|atjobs|atspool)|var\/at|private\/var\/at|usr\/lib\/cron\/tabs|var\/cron)(\/|$)/.test(
      abs,
    ) ||
    /^(~|\/Users\/[^/]+|\/home\/[^/]+)?\/Library\/Launch(Agents|Daemons)(\/|$)/.test(abs) ||
    /^\/System\/Library\/Launch(Agents|Daemons)(\/|$)/.test(abs)
  );
}
