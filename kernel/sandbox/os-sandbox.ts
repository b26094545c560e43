/**
 * The OS wall under every command Memo runs for an agent (run_command, SKILL.md command tools, the
 * processes of agent CLI backends, and `runProcess` of third-party packs): bubblewrap on Linux.
 *
 * The command judge guesses what a shell will do; this decides what it can do. Inside the sandbox:
 * - the file system is the host's, read-only, except the folders the call may write (the sandbox
 *   root), a private temp folder (`/tmp`, removed after the call) and a private HOME inside it;
 * - the kernel's areas closed to every access (the data folder with its audit key, permissions,
 *   settings, databases and control socket; pack and skill folders) do not exist: each is an empty,
 *   read-only folder. The kernel's code and dependencies are read-only even inside a writable root;
 * - a person's credentials outside the root (ssh keys, cloud and registry credentials, the agent
 *   CLIs' logins, /etc/shadow) are masked the same way, and /run (the host's service sockets, Docker's
 *   among them) is empty;
 * - the network is a namespace of its own with only its own loopback: nothing of the host is
 *   reachable (the kernel's MCP, console and control endpoints included). A call allowed network gets
 *   an HTTP(S) proxy inside (sandbox-bridge.mjs) whose only way out is the kernel's filtering proxy
 *   (network-proxy.ts), which refuses loopback, link-local and private addresses and, when the grant
 *   names domains, every other domain;
 * - processes are limited (a pids cgroup where one can be made, RLIMIT_NPROC otherwise) and die with
 *   the call: the command runs in a PID namespace of its own (bwrap's reaper is its pid 1), tied to
 *   Memo by --die-with-parent;
 * - no capabilities, even when Memo runs as root (bwrap keeps them for root unless told).
 *
 * Where bubblewrap cannot run (not installed, user namespaces off, not Linux) nothing is silently
 * unsandboxed: a person's setting (`memo settings sandbox refuse|judged`) decides between refusing
 * commands (the default, naming `apt-get install bubblewrap`) and running them judged only.
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { toDisposable, type Disposable } from '../disposable.js';
import { MemoError } from '../errors.js';
import type { KernelArea } from './kernel-state.js';
import { findInPath } from './process-containment.js';
import { startNetworkProxy, type NetworkGrant, type NetworkProxy } from './network-proxy.js';

export type { NetworkGrant } from './network-proxy.js';

/** Names bwrap's path; tests point it at a missing file (the lookup also searches the system folders). */
export const BWRAP_ENV = 'MEMO_BWRAP';
export const INSTALL_HINT = 'install bubblewrap (apt-get install bubblewrap)';

/** What to do with a command when the sandbox cannot start: refuse it, or run it with the judge as the only wall. */
export type SandboxFallback = 'refuse' | 'judged';
export const DEFAULT_SANDBOX_FALLBACK: SandboxFallback = 'refuse';

export type ProcessLimit = { kind: 'cgroup'; version: 1 | 2; dir: string; max: number } | { kind: 'rlimit'; max: number } | { kind: 'none'; reason: string };

export interface OsSandboxStatus {
  available: boolean;
  /** The bwrap binary in use (or the one that failed). */
  bwrap: string | null;
  /** Why it cannot be used, when it cannot. */
  reason?: string;
  processLimit: ProcessLimit;
}

/** How many processes (threads included) one sandboxed command may have at once. */
export const MAX_PROCESSES = 1024;

const SYSTEM_DIRS = ['/usr/bin', '/bin', '/usr/sbin', '/sbin', '/usr/local/bin'];

/** An executable on PATH or in the system folders (bwrap and prlimit live there even when PATH is narrow). */
function findExecutable(name: string): string | null {
  return findInPath(name, process.env.PATH, SYSTEM_DIRS);
}

const isRoot = () => process.geteuid?.() === 0;

/** bwrap's flags that every run uses, before the mounts. */
function baseFlags(): string[] {
  return [
    '--die-with-parent',
    '--new-session',
    '--unshare-pid',
    '--unshare-net',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    // As root bwrap keeps every capability inside: CAP_SYS_ADMIN could unmount the masks.
    ...(isRoot() ? ['--cap-drop', 'ALL'] : []),
  ];
}

function runQuiet(argv: string[], timeoutMs = 15_000): Promise<{ ok: boolean; out: string; err: string }> {
  return new Promise((resolve) => {
    let out = '';
    let err = '';
    let child;
    try {
      const [file = '', ...args] = argv;
      child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
    } catch (e) {
      resolve({ ok: false, out: '', err: (e as Error).message });
      return;
    }
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    timer.unref();
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('error', (e) => {
      clearTimeout(timer);
      resolve({ ok: false, out, err: err || e.message });
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ ok: code === 0, out, err });
    });
  });
}

// ---------------------------------------------------------------------------------------------
// The process limit

interface MountEntry {
  mountPoint: string;
  fsType: string;
  superOptions: string[];
}

function readMounts(): MountEntry[] {
  try {
    return fs
      .readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        const [before = '', after = ''] = line.split(' - ');
        const f = before.split(' ');
        const a = after.split(' ');
        return { mountPoint: (f[4] ?? '').replace(/\\040/g, ' '), fsType: a[0] ?? '', superOptions: (a[2] ?? '').split(',') };
      });
  } catch {
    return [];
  }
}

/** The pids cgroup folder this process is in, v1 (a `pids` hierarchy) or v2 (the unified one), if any. */
function ownPidsCgroup(): { version: 1 | 2; dir: string }[] {
  let lines: string[];
  try {
    lines = fs.readFileSync('/proc/self/cgroup', 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
  const mounts = readMounts();
  const out: { version: 1 | 2; dir: string }[] = [];
  for (const line of lines) {
    const [, controllers = '', rel = '/'] = /^(?:\d+):([^:]*):(.*)$/.exec(line) ?? [];
    if (controllers.split(',').includes('pids')) {
      const m = mounts.find((x) => x.fsType === 'cgroup' && x.superOptions.includes('pids'));
      if (m) out.push({ version: 1, dir: path.join(m.mountPoint, rel) });
    } else if (controllers === '' && line.startsWith('0::')) {
      const m = mounts.find((x) => x.fsType === 'cgroup2');
      if (m) out.push({ version: 2, dir: path.join(m.mountPoint, rel) });
    }
  }
  return out;
}

const CGROUP_PARENT = 'memo-sandbox';

/** Makes `<own cgroup>/memo-sandbox/<name>` with pids.max set; throws when it cannot. */
function makeCgroup(base: { version: 1 | 2; dir: string }, name: string, max: number): string {
  const parent = path.join(base.dir, CGROUP_PARENT);
  fs.mkdirSync(parent, { recursive: true });
  if (base.version === 2) {
    // v2: the controller must be handed down from each level (fails on a busy non-root cgroup).
    fs.writeFileSync(path.join(parent, 'cgroup.subtree_control'), '+pids');
  }
  const dir = path.join(parent, name);
  fs.mkdirSync(dir);
  try {
    fs.writeFileSync(path.join(dir, 'pids.max'), String(max));
  } catch (err) {
    fs.rmdirSync(dir);
    throw err;
  }
  return dir;
}

/** Empty run groups of Memo processes that died (a group is removed once the run ended; a crash leaves it). */
function sweepStaleCgroups(base: { dir: string }): void {
  const parent = path.join(base.dir, CGROUP_PARENT);
  let names: string[];
  try {
    names = fs.readdirSync(parent);
  } catch {
    return;
  }
  for (const name of names) {
    const owner = Number(/^(\d+)-/.exec(name)?.[1]);
    if (!owner || owner === process.pid) continue;
    try {
      process.kill(owner, 0);
      continue; // its Memo still runs
    } catch {
      // gone
    }
    try {
      fs.rmdirSync(path.join(parent, name)); // fails while a process is still in it: left alone
    } catch {
      // busy or gone
    }
  }
}

function probeProcessLimit(): ProcessLimit {
  if (process.platform !== 'linux') return { kind: 'none', reason: `process limits need Linux (this is ${process.platform})` };
  const problems: string[] = [];
  for (const base of ownPidsCgroup()) {
    try {
      sweepStaleCgroups(base);
      const dir = makeCgroup(base, `${process.pid}-probe-${randomUUID().slice(0, 8)}`, MAX_PROCESSES);
      fs.rmdirSync(dir);
      return { kind: 'cgroup', version: base.version, dir: path.join(base.dir, CGROUP_PARENT), max: MAX_PROCESSES };
    } catch (err) {
      problems.push(`cgroup v${base.version} at ${base.dir}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  }
  // RLIMIT_NPROC counts the user's processes, and root's are never counted.
  if (!isRoot() && findExecutable('prlimit')) return { kind: 'rlimit', max: MAX_PROCESSES };
  return {
    kind: 'none',
    reason: `no pids cgroup could be made (${problems.join('; ') || 'none found'})${isRoot() ? ' and RLIMIT_NPROC does not hold for root' : ' and prlimit was not found'}`,
  };
}

// ---------------------------------------------------------------------------------------------
// The probe

const probes = new Map<string, Promise<OsSandboxStatus>>();

/** Whether commands can run in the OS sandbox here, and with which process limit (probed once per bwrap path). */
export function osSandboxStatus(): Promise<OsSandboxStatus> {
  const named = process.env[BWRAP_ENV];
  const key = named ?? '';
  let p = probes.get(key);
  if (!p) {
    p = probe(named);
    probes.set(key, p);
  }
  return p;
}

async function probe(named: string | undefined): Promise<OsSandboxStatus> {
  const processLimit = probeProcessLimit();
  if (process.platform !== 'linux')
    return { available: false, bwrap: null, reason: `the OS sandbox uses bubblewrap, which needs Linux (this is ${process.platform})`, processLimit };
  const bwrap = named !== undefined && named !== '' ? named : findExecutable('bwrap');
  if (!bwrap) return { available: false, bwrap: null, reason: `bubblewrap (bwrap) was not found: ${INSTALL_HINT}`, processLimit };
  if (!fs.existsSync(bwrap)) return { available: false, bwrap, reason: `${BWRAP_ENV} names ${bwrap}, which does not exist: ${INSTALL_HINT}`, processLimit };
  const sh = fs.existsSync('/bin/sh') ? '/bin/sh' : findExecutable('sh');
  if (!sh) return { available: false, bwrap, reason: 'no /bin/sh to check the sandbox with', processLimit };
  const r = await runQuiet([bwrap, ...baseFlags(), '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp', '--', sh, '-c', 'echo $$']);
  if (!r.ok || r.out.trim() !== '2') {
    const why = r.err.trim().split('\n').at(-1) || `it printed ${JSON.stringify(r.out.trim())}`;
    return {
      available: false,
      bwrap,
      reason: `bubblewrap (${bwrap}) cannot make a sandbox here: ${why} (user namespaces may be turned off: kernel.unprivileged_userns_clone or user.max_user_namespaces)`,
      processLimit,
    };
  }
  return { available: true, bwrap, processLimit };
}

/** One line for start-up, `memo doctor` and the console. */
export function describeSandbox(status: OsSandboxStatus, fallback: SandboxFallback): string {
  if (!status.available) {
    return fallback === 'refuse'
      ? `commands are refused: the OS sandbox cannot start (${status.reason}); \`memo settings sandbox judged\` runs them with the command judge as the only wall`
      : `commands run WITHOUT the OS sandbox, judged only (memo settings sandbox judged): ${status.reason}`;
  }
  const limit =
    status.processLimit.kind === 'cgroup'
      ? `${status.processLimit.max} processes a command (pids cgroup v${status.processLimit.version})`
      : status.processLimit.kind === 'rlimit'
        ? `${status.processLimit.max} processes a command (RLIMIT_NPROC)`
        : `no process limit (${status.processLimit.reason}); a fork bomb still ends with its call`;
  return `commands run in the OS sandbox (bubblewrap ${status.bwrap}): kernel state masked, network off unless allowed, ${limit}`;
}

// ---------------------------------------------------------------------------------------------
// What the kernels of this process hide from every command

interface KernelEntry {
  areas: () => readonly KernelArea[];
  fallback: () => SandboxFallback;
}

const kernels = new Set<KernelEntry>();

/**
 * A kernel's areas are hidden from every sandboxed command of this process, whichever kernel or pack
 * started it (several kernels can live in one process); its fallback setting counts too: a command is
 * run judged-only only when every live kernel allows it.
 */
export function registerKernelAreas(entry: KernelEntry): Disposable {
  kernels.add(entry);
  return toDisposable(() => kernels.delete(entry));
}

/** `judged` only when every live kernel says so (none: the default, refuse). */
export function sandboxFallback(): SandboxFallback {
  if (kernels.size === 0) return DEFAULT_SANDBOX_FALLBACK;
  for (const k of kernels) if (k.fallback() !== 'judged') return 'refuse';
  return 'judged';
}

/** A person's credentials under their home folder, masked from every command (folders and files). */
const HOME_SECRETS = [
  '.ssh',
  '.aws',
  '.azure',
  '.gnupg',
  '.kube',
  '.docker',
  '.config/gcloud',
  '.config/gh',
  '.config/hub',
  '.netrc',
  '.git-credentials',
  '.npmrc',
  '.pypirc',
  '.claude',
  '.claude.json',
  '.codex',
  '.gemini',
  '.config/memo',
];
const SYSTEM_SECRETS = ['/etc/shadow', '/etc/gshadow', '/etc/shadow-', '/etc/gshadow-', '/etc/sudoers', '/etc/ssh', '/root/.ssh'];

// ---------------------------------------------------------------------------------------------
// One sandboxed run

export interface SandboxRequest {
  /** Folders the command may write (the sandbox root; for a plain runProcess, its working directory). */
  writable: string[];
  /** Network: off (null/undefined), or through the filtering proxy for these domains ("any": every public one). */
  network?: NetworkGrant | null;
  /** Folders inside a masked area shown again, read-only (a skill's own folder, for its bundled scripts). */
  reveal?: string[];
  /** Folders masked by default (a person's credentials) that this run may read and write (an agent CLI's login folder). */
  own?: string[];
  /**
   * TCP ports on the sandbox's own loopback bridged to endpoints outside (an agent CLI's MCP endpoint):
   * the command reaches exactly these and nothing else of the host.
   */
  forward?: { port: number; to: { host: string; port: number } }[];
  /**
   * Where the command starts inside (bwrap's --chdir): it must be visible there (writable, revealed, or
   * outside the private and masked folders); bwrap fails the run rather than start it elsewhere.
   */
  cwd?: string;
  /** `private` (default): HOME is a fresh folder in the private /tmp; `keep`: the environment's own (read-only but for `own`). */
  home?: 'private' | 'keep';
}

export interface SandboxRun {
  /** argv to spawn instead of the command's. */
  argv(cmd: string[]): string[];
  /** The environment inside: HOME and TMPDIR private, proxy variables when network is allowed. */
  env(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
  /** Removes the private temp folder, the process group and the proxy. */
  dispose(): Promise<void>;
}

const BRIDGE = fileURLToPath(new URL('./sandbox-bridge.mjs', import.meta.url));
/** The proxy port inside the sandbox's own network namespace (another when a forward takes it). */
const PROXY_PORT = 3128;

function exists(p: string): fs.Stats | null {
  try {
    return fs.statSync(p);
  } catch {
    return null;
  }
}

function realOr(p: string): string {
  try {
    return fs.realpathSync.native(p);
  } catch {
    return path.resolve(p);
  }
}

const inside = (parent: string, child: string) => child === parent || child.startsWith(parent.endsWith('/') ? parent : `${parent}/`);

type Op = { kind: 'bind' | 'ro-bind' | 'mask' | 'mask-file'; src?: string; dest: string };

/**
 * The mounts in the order bwrap needs them: a folder before what is mounted inside it, and every
 * mask's read-only remount after everything inside it is in place.
 */
function mountArgs(ops: Op[]): string[] {
  const depth = (p: string) => p.split('/').length;
  const sorted = [...ops].sort((a, b) => depth(a.dest) - depth(b.dest));
  const args: string[] = [];
  const remount: string[] = [];
  for (const op of sorted) {
    if (op.kind === 'bind') args.push('--bind', op.src ?? op.dest, op.dest);
    else if (op.kind === 'ro-bind') args.push('--ro-bind', op.src ?? op.dest, op.dest);
    else if (op.kind === 'mask-file') args.push('--ro-bind', '/dev/null', op.dest);
    else {
      args.push('--tmpfs', op.dest);
      remount.unshift(op.dest);
    }
  }
  // Deepest first, so a mask inside another is sealed before its parent is.
  for (const dest of remount) args.push('--remount-ro', dest);
  return args;
}

/** Everything a command must not see: the kernels' areas and a person's credentials, less what this run owns. */
function masksFor(req: SandboxRequest): { ops: Op[]; writable: string[] } {
  const ops: Op[] = [];
  const writable = [...new Set(req.writable.map(realOr))];
  const own = (req.own ?? []).map(realOr);
  const reveal = (req.reveal ?? []).map(realOr);
  for (const w of writable) ops.push({ kind: 'bind', dest: w });
  const masked = new Set<string>();
  const mask = (p: string) => {
    const real = realOr(p);
    if (masked.has(real) || own.some((o) => inside(o, real) || inside(real, o))) return;
    // A mask over a writable folder's ancestor would hide the folder: mask only what lies inside it.
    if (writable.some((w) => inside(real, w) && real !== w)) return;
    const st = exists(real);
    if (!st) return;
    masked.add(real);
    ops.push({ kind: st.isDirectory() ? 'mask' : 'mask-file', dest: real });
  };
  for (const k of kernels) {
    for (const area of k.areas()) {
      if (area.reach === 'all') mask(area.dir);
      else {
        // Code: read-only even inside a writable root, and visible wherever it lies (under /tmp too).
        const real = realOr(area.dir);
        if (exists(real)) ops.push({ kind: 'ro-bind', dest: real });
      }
    }
  }
  // Memo's own package (its CLI, compiled code, dependencies, the bridge) and Node itself stay visible,
  // read-only, where the private /tmp would hide them (a checkout or a Node install under /tmp).
  for (const dir of [PACKAGE_ROOT, NODE_PREFIX]) if (dir && exists(dir) && !writable.some((w) => inside(w, dir))) ops.push({ kind: 'ro-bind', dest: dir });
  const home = os.homedir();
  for (const rel of HOME_SECRETS) mask(path.join(home, rel));
  for (const p of SYSTEM_SECRETS) mask(p);
  // The host's service sockets (Docker's, D-Bus's, databases'): a socket is a way out of every namespace.
  if (!writable.some((w) => inside('/run', w))) mask('/run');
  // A folder both revealed and writable stays writable (a CLI's workspace with Computer access).
  for (const r of reveal) if (exists(r) && !writable.includes(r)) ops.push({ kind: 'ro-bind', dest: r });
  for (const o of own) if (exists(o)) ops.push({ kind: 'bind', dest: o });
  return { ops, writable };
}

let cgroupSeq = 0;

let sweptRunDirs: Promise<void> | null = null;

/**
 * The private temp folders of calls whose Memo died before it could remove them (killed with
 * SIGKILL mid-call): `memo-sandbox-<pid>-*` in the temp folder, for a pid that no longer exists.
 * Done once per process, before its first sandboxed call.
 */
async function sweepStaleRunDirs(): Promise<void> {
  const dir = os.tmpdir();
  let names: string[];
  try {
    names = await fsp.readdir(dir);
  } catch {
    return;
  }
  await Promise.all(
    names.map(async (name) => {
      const owner = Number(/^memo-sandbox-(\d+)-/.exec(name)?.[1]);
      if (!owner || owner === process.pid) return;
      try {
        process.kill(owner, 0);
        return; // its Memo still runs (or the pid was reused: left alone)
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ESRCH') return;
      }
      await fsp.rm(path.join(dir, name), { recursive: true, force: true }).catch(() => undefined);
    }),
  );
}

/** The folder of memo's package.json (null outside a package). */
function packageRoot(from: string): string | null {
  for (let dir = from; dir !== path.dirname(dir); dir = path.dirname(dir)) if (fs.existsSync(path.join(dir, 'package.json'))) return realOr(dir);
  return null;
}
const PACKAGE_ROOT = packageRoot(path.dirname(fileURLToPath(import.meta.url)));
/** Node's install prefix when it lives under a temp folder (the private /tmp would hide it); null otherwise. */
const NODE_PREFIX = ((): string | null => {
  const prefix = path.dirname(path.dirname(realOr(process.execPath)));
  return inside('/tmp', prefix) || inside(realOr(os.tmpdir()), prefix) ? prefix : null;
})();

/** The refusal of a command that would have to run without the OS sandbox. */
export function unavailable(status: OsSandboxStatus): MemoError {
  return new MemoError(
    'COMMAND_BLOCKED',
    `Commands are refused: the OS sandbox cannot start (${status.reason ?? 'unknown'}). Install bubblewrap (apt-get install bubblewrap), or let a person run commands with the command judge as the only wall: memo settings sandbox judged.`,
    { details: { rule: 'sandbox-unavailable' } },
  );
}

/**
 * How a command will run now: in the OS sandbox, or judged only (the sandbox cannot start and every
 * kernel's setting allows it). Throws the refusal otherwise, so nobody is asked about a command that
 * could not run.
 */
export async function commandSandbox(): Promise<{ sandboxed: true; status: OsSandboxStatus } | { sandboxed: false; status: OsSandboxStatus }> {
  const status = await osSandboxStatus();
  if (status.available) return { sandboxed: true, status };
  if (sandboxFallback() === 'judged') return { sandboxed: false, status };
  throw unavailable(status);
}

/**
 * Prepares one sandboxed run: its private temp folder, its process group and, when network is
 * allowed or ports are forwarded, the proxy. Throws SANDBOX_UNAVAILABLE when the sandbox cannot
 * start; the caller decides (sandboxFallback) whether to run the command judged only instead.
 */
export async function prepareSandbox(req: SandboxRequest, status: OsSandboxStatus): Promise<SandboxRun> {
  if (!status.available || !status.bwrap) throw unavailable(status);
  sweptRunDirs ??= sweepStaleRunDirs();
  await sweptRunDirs;
  // Named after this process: a Memo killed mid-call leaves its folder, and the next one removes it.
  const runDir = await fsp.mkdtemp(path.join(os.tmpdir(), `memo-sandbox-${process.pid}-`));
  let cgroup: string | null = null;
  let proxy: NetworkProxy | null = null;
  const dispose = async () => {
    await proxy?.close().catch(() => undefined);
    await fsp.rm(runDir, { recursive: true, force: true }).catch(() => undefined);
    // The group empties a moment after bwrap exits: removed in the background, not on the call's time.
    if (cgroup) void removeCgroup(cgroup);
  };
  try {
    const tmp = path.join(runDir, 'tmp');
    await fsp.mkdir(path.join(tmp, 'home'), { recursive: true, mode: 0o700 });
    if (status.processLimit.kind === 'cgroup') {
      const name = `${process.pid}-${++cgroupSeq}-${randomUUID().slice(0, 8)}`;
      cgroup = makeCgroup({ version: status.processLimit.version, dir: path.dirname(status.processLimit.dir) }, name, status.processLimit.max);
    }
    const forwards: string[] = [];
    let proxyPort = PROXY_PORT;
    while (req.forward?.some((f) => f.port === proxyPort)) proxyPort++;
    const sockDir = path.join(runDir, 'net');
    if (req.network || (req.forward?.length ?? 0) > 0) {
      await fsp.mkdir(sockDir, { mode: 0o700 });
      proxy = await startNetworkProxy({ socketDir: sockDir, grant: req.network ?? null, forward: req.forward ?? [] });
      if (req.network) forwards.push(`${proxyPort}=${proxy.proxySocket}`);
      for (const f of proxy.forwardSockets) forwards.push(`${f.port}=${f.socket}`);
    }
    const { ops } = masksFor(req);
    const mounts = [
      '--ro-bind',
      '/',
      '/',
      '--dev',
      '/dev',
      '--proc',
      '/proc',
      // The private temp folder first: a writable root under /tmp is mounted inside it after.
      '--bind',
      tmp,
      '/tmp',
      ...(exists('/var/tmp') ? ['--tmpfs', '/var/tmp'] : []),
      ...(proxy ? ['--ro-bind', sockDir, sockDir] : []),
      ...mountArgs(ops),
    ];
    // The host's temp folder when it is not /tmp (TMPDIR=/var/tmp/x): its sockets and files stay outside.
    const hostTmp = realOr(os.tmpdir());
    if (!inside('/tmp', hostTmp) && !req.writable.some((w) => inside(hostTmp, realOr(w)))) mounts.push('--tmpfs', hostTmp);
    const prefix: string[] = [];
    if (cgroup) prefix.push('/bin/sh', '-c', 'echo $$ > "$1" || exit 125; shift; exec "$@"', 'memo-sandbox', path.join(cgroup, 'cgroup.procs'));
    // RLIMIT_NPROC set inside: there it counts the processes of the sandbox's own user namespace only
    // (outside it would count every process of the user, and a busy desktop could not start bwrap).
    const inner = status.processLimit.kind === 'rlimit' ? [findExecutable('prlimit') ?? 'prlimit', `--nproc=${status.processLimit.max}`, '--'] : [];
    const bridge = forwards.length > 0 ? [process.execPath, BRIDGE, ...forwards.flatMap((f) => ['--forward', f]), '--'] : [];
    return {
      argv: (cmd) => [...prefix, status.bwrap!, ...baseFlags(), ...mounts, ...(req.cwd ? ['--chdir', realOr(req.cwd)] : []), '--', ...inner, ...bridge, ...cmd],
      env: (env) => {
        const out: NodeJS.ProcessEnv = { ...env, TMPDIR: '/tmp' };
        if (req.home !== 'keep') out.HOME = '/tmp/home';
        for (const k of ['TMP', 'TEMP', 'XDG_RUNTIME_DIR', 'DBUS_SESSION_BUS_ADDRESS', 'SSH_AUTH_SOCK', 'GPG_AGENT_INFO']) delete out[k];
        // git still knows who commits: the person's own git config, read-only.
        const gitconfig = path.join(os.homedir(), '.gitconfig');
        if (!out.GIT_CONFIG_GLOBAL && exists(gitconfig)) out.GIT_CONFIG_GLOBAL = gitconfig;
        for (const k of ['HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'NO_PROXY', 'http_proxy', 'https_proxy', 'all_proxy', 'no_proxy']) delete out[k];
        if (req.network) {
          const url = `http://127.0.0.1:${proxyPort}`;
          for (const k of ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy']) out[k] = url;
          // The forwarded endpoints live on the sandbox's own loopback: reached directly, never through the proxy.
          out.NO_PROXY = out.no_proxy = req.forward?.length ? '127.0.0.1,localhost,::1' : '';
        }
        return out;
      },
      dispose,
    };
  } catch (err) {
    await dispose();
    throw err;
  }
}

async function removeCgroup(dir: string): Promise<void> {
  // The namespace's processes are gone when bwrap exits; the cgroup may still count them for a moment.
  for (let i = 0; i < 50; i++) {
    try {
      await fsp.rmdir(dir);
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      await new Promise((r) => setTimeout(r, i < 10 ? 5 : 50));
    }
  }
  // Still busy: swept by the next Memo that probes (sweepStaleCgroups), once this one is gone.
}

/** The version bwrap reports, for `memo doctor`. */
export function bwrapVersion(bwrap: string): string | null {
  try {
    return execFileSync(bwrap, ['--version'], { encoding: 'utf8', timeout: 5000 }).trim();
  } catch {
    return null;
  }
}
