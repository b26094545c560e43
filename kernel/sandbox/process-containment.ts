/**
 * Process containment for `runProcess`: whatever a command starts (including children that call
 * `setsid`, double-fork, `nohup … & disown`, or close their stdio) ends when the command ends, times
 * out or is cancelled.
 *
 * Two strategies, chosen once per process by a probe and cached:
 *
 * - **namespace** (Linux with util-linux `unshare`): the command runs as the init (pid 1) of a fresh
 *   PID namespace, `unshare --pid --fork --kill-child --mount-proc` (plus `--map-current-user` when not
 *   root, so the command keeps its uid and files it creates stay the invoking user's). When that init
 *   exits or is killed, the kernel kills every other process in the namespace; no way of leaving a
 *   process group or session leaves the namespace. `setpriv --pdeathsig KILL` in front ties the
 *   namespace to the calling process too: if memo itself dies, the command goes with it.
 * - **sweep** (no usable namespaces: not Linux, user namespaces disabled, no `unshare`): the child's
 *   environment carries a unique `MEMO_RUN_ID`; on timeout, cancellation and exit every process whose
 *   `/proc/<pid>/environ` carries it, whose process group or session is the command's, or whose parent
 *   is one of those, is killed, repeatedly until none is left. It cannot catch a process that cleared
 *   its environment (`env -i`) and also left the group, the session and the process tree (e.g.
 *   `setsid -f env -i sleep 1000`). Without `/proc` (not Linux) only the process group is killed.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import * as path from 'node:path';

export type ContainmentMode = 'namespace' | 'sweep';
/** `auto` probes for namespaces and falls back to the sweep. */
export type ContainmentChoice = ContainmentMode | 'auto';

export interface NamespacePlan {
  /** argv prefix put before the command's argv (ends with `--`). */
  prefix: string[];
  /** A user namespace is used (not root): the command keeps its uid through `--map-current-user` or similar. */
  userNamespace: boolean;
  /** `/proc` inside shows the namespace's own processes. */
  mountProc: boolean;
  /**
   * The namespace's init is a reaper that runs the command as its child (bwrap's): termination goes to
   * the command, and the init ends as it ends; otherwise the command itself is the init.
   */
  reaper?: boolean;
}

export interface ContainmentInfo {
  mode: ContainmentMode;
  /** For the namespace mode: the flags in use. */
  plan?: NamespacePlan;
  /** Why the namespace mode is not used (when it is not). */
  reason?: string;
}

/** What util-linux unshare prints (and exits 1) when the command it forked died of SIGKILL. */
export const UNSHARE_SIGKILL = /(^|\n)unshare: sigprocmask unblock failed: [^\n]*\n?$/;

/** The environment variable that marks a command's processes in the sweep mode. */
export const RUN_ID_VAR = 'MEMO_RUN_ID';

const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref?.());

/** The first executable file `name` in `extra`, then PATH's folders (null: none). */
export function findInPath(name: string, envPath: string | undefined, extra: string[] = []): string | null {
  const dirs = [...extra, ...(envPath ?? '').split(path.delimiter).filter(Boolean)];
  for (const dir of dirs) {
    const p = path.join(dir, name);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      if (fs.statSync(p).isFile()) return p;
    } catch {
      // next
    }
  }
  return null;
}

/** Whether argv[0] names an executable, resolved like execvp does (PATH from the child's env). */
export function executableExists(cmd: string, env: NodeJS.ProcessEnv): boolean {
  if (cmd.includes('/')) {
    try {
      fs.accessSync(cmd, fs.constants.X_OK);
      return fs.statSync(cmd).isFile();
    } catch {
      return false;
    }
  }
  return findInPath(cmd, env.PATH ?? '/usr/local/bin:/usr/bin:/bin') !== null;
}

/** Runs a probe argv; true when it printed `expect` and exited 0 within the deadline. */
function probeRun(argv: string[], expect: string, timeoutMs = 15_000): Promise<boolean> {
  return new Promise((resolve) => {
    let out = '';
    let done = false;
    const finish = (ok: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(ok);
    };
    let child: ReturnType<typeof spawn>;
    try {
      const [file = '', ...args] = argv; // an empty argv makes spawn throw, as before
      child = spawn(file, args, { stdio: ['ignore', 'pipe', 'ignore'], detached: true, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
    } catch {
      resolve(false);
      return;
    }
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // gone
      }
      finish(false);
    }, timeoutMs);
    timer.unref();
    child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    child.on('error', () => finish(false));
    child.on('close', (code) => finish(code === 0 && out.trim() === expect));
  });
}

let probed: Promise<ContainmentInfo> | null = null;

async function probeNamespace(): Promise<ContainmentInfo> {
  if (process.platform !== 'linux') return { mode: 'sweep', reason: `PID namespaces need Linux (this is ${process.platform})` };
  const sysDirs = ['/usr/bin', '/bin', '/usr/sbin', '/sbin'];
  const unshare = findInPath('unshare', process.env.PATH, sysDirs);
  if (!unshare) return { mode: 'sweep', reason: 'util-linux unshare not found' };
  const sh = fs.existsSync('/bin/sh') ? '/bin/sh' : findInPath('sh', process.env.PATH);
  if (!sh) return { mode: 'sweep', reason: 'no /bin/sh for the probe' };
  const setpriv = findInPath('setpriv', process.env.PATH, sysDirs);
  const root = process.geteuid?.() === 0;
  const uid = process.geteuid?.() ?? 0;
  const gid = process.getegid?.() ?? 0;
  const base = ['--pid', '--fork', '--kill-child'];
  // Most specific first: keep the uid (root needs no user namespace), a private /proc.
  const userVariants: { flags: string[]; userNamespace: boolean }[] = root
    ? [
        { flags: [], userNamespace: false },
        { flags: ['--map-current-user'], userNamespace: true },
      ]
    : [
        { flags: ['--map-current-user'], userNamespace: true },
        { flags: [`--map-user=${uid}`, `--map-group=${gid}`], userNamespace: true },
        // Older util-linux: the command sees uid 0, files it creates are still the user's on disk.
        { flags: ['--map-root-user'], userNamespace: true },
      ];
  // The mount namespace that `--mount-proc` needs is a slave of the host's, so mounts and unmounts
  // made outside while a command runs still reach it (and none made inside leak out).
  const procVariants: { flags: string[]; mountProc: boolean }[] = [
    { flags: ['--mount-proc', '--propagation', 'slave'], mountProc: true },
    { flags: ['--mount-proc'], mountProc: true },
    { flags: [], mountProc: false },
  ];
  const candidates: NamespacePlan[] = [];
  for (const p of procVariants) {
    for (const v of userVariants)
      candidates.push({ prefix: [unshare, ...v.flags, ...base, ...p.flags, '--'], userNamespace: v.userNamespace, mountProc: p.mountProc });
  }
  // `echo $$` is 1 only inside a fresh PID namespace.
  for (const plan of candidates) {
    if (!(await probeRun([...plan.prefix, sh, '-c', 'echo $$'], '1'))) continue;
    if (setpriv) {
      const withDeathSig = [setpriv, '--pdeathsig', 'KILL', ...plan.prefix];
      if (await probeRun([...withDeathSig, sh, '-c', 'echo $$'], '1')) return { mode: 'namespace', plan: { ...plan, prefix: withDeathSig } };
    }
    return { mode: 'namespace', plan };
  }
  return { mode: 'sweep', reason: 'unshare --pid failed (no privilege for PID namespaces and user namespaces unavailable)' };
}

/**
 * The containment a run uses: `choice` (per call) over `MEMO_PROCESS_CONTAINMENT` (environment) over
 * `auto`. The namespace probe runs once per process.
 */
export async function resolveContainment(choice?: ContainmentChoice): Promise<ContainmentInfo> {
  const fromEnv = process.env.MEMO_PROCESS_CONTAINMENT;
  const wanted: ContainmentChoice = choice ?? (fromEnv === 'sweep' || fromEnv === 'namespace' ? fromEnv : 'auto');
  if (wanted === 'sweep') return { mode: 'sweep', reason: 'sweep requested' };
  probed ??= probeNamespace();
  const info = await probed;
  if (wanted === 'namespace' && info.mode !== 'namespace') throw new Error(`PID namespace containment is not available: ${info.reason}`);
  return info;
}

/** What `runProcess` uses on this machine (probes once). */
export function containmentInfo(): Promise<ContainmentInfo> {
  return resolveContainment('auto');
}

// ---------------------------------------------------------------------------------------------
// /proc helpers

interface ProcStat {
  pid: number;
  state: string;
  ppid: number;
  pgid: number;
  sid: number;
  /** Start time in clock ticks since boot. */
  start: number;
}

function parseStat(pid: number, text: string): ProcStat | null {
  // comm may contain spaces and parentheses: the fields start after the last ')'.
  const close = text.lastIndexOf(')');
  if (close < 0) return null;
  const f = text.slice(close + 2).split(' ');
  return { pid, state: f[0] ?? '', ppid: Number(f[1]), pgid: Number(f[2]), sid: Number(f[3]), start: Number(f[19]) };
}

async function listPids(): Promise<number[]> {
  try {
    return (await fsp.readdir('/proc')).filter((n) => /^\d+$/.test(n)).map(Number);
  } catch {
    return [];
  }
}

async function readStat(pid: number): Promise<ProcStat | null> {
  try {
    return parseStat(pid, await fsp.readFile(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null;
  }
}

const alive = (s: ProcStat) => s.state !== 'Z' && s.state !== 'X';

function signal(pid: number, sig: NodeJS.Signals): void {
  if (pid <= 1 || pid === process.pid) return;
  try {
    process.kill(pid, sig);
  } catch {
    // gone, or not ours
  }
}

/** A signal to the process group led by `pid`. */
function signalGroup(pid: number, sig: NodeJS.Signals): void {
  if (pid <= 1 || pid === process.pid) return;
  try {
    process.kill(-pid, sig);
  } catch {
    // gone
  }
}

async function readNs(pid: number | 'self', which: 'pid' | 'pid_for_children'): Promise<string | null> {
  try {
    return await fsp.readlink(`/proc/${pid}/ns/${which}`);
  } catch {
    return null;
  }
}

let ownPidNs: Promise<string | null> | null = null;

interface NsMember {
  pid: number;
  /** The pid inside the namespace (1 = its init). */
  nsPid: number;
  catchesTerm: boolean;
  state: string;
}

async function nsMembers(nsId: string): Promise<NsMember[]> {
  const out: NsMember[] = [];
  await Promise.all(
    (await listPids()).map(async (pid) => {
      if ((await readNs(pid, 'pid')) !== nsId) return;
      try {
        const status = await fsp.readFile(`/proc/${pid}/status`, 'utf8');
        const nsPid = Number(/^NSpid:\s*(.*)$/m.exec(status)?.[1]?.trim().split(/\s+/).at(-1) ?? NaN);
        const sigCgt = BigInt(`0x${/^SigCgt:\s*([0-9a-f]+)/m.exec(status)?.[1] ?? '0'}`);
        const state = /^State:\s*(\S)/m.exec(status)?.[1] ?? '?';
        out.push({ pid, nsPid, catchesTerm: (sigCgt & (1n << 14n)) !== 0n, state });
      } catch {
        // gone
      }
    }),
  );
  return out;
}

// ---------------------------------------------------------------------------------------------
// Per-run containment

export interface Containment {
  readonly mode: ContainmentMode;
  /** argv to spawn instead of the command's. */
  argv(cmd: string[]): string[];
  /** Environment to spawn with. */
  env(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
  /** Set once the spawned process has a pid. */
  started(pid: number): void;
  /**
   * Timeout or cancellation: SIGTERM to everything the command started, then after `graceMs` (or
   * sooner when nothing but a frozen init is left) SIGKILL to all. Resolves when the kill is sent.
   */
  terminate(graceMs: number, exited: Promise<void>): Promise<void>;
  /** The spawned process exited: make sure nothing it started is left. */
  afterExit(): Promise<void>;
}

/** PID namespace: the command is the namespace's init; killing it (or its `unshare` parent) ends all. */
class NamespaceContainment implements Containment {
  readonly mode = 'namespace' as const;
  private pid = 0;
  private exitedFlag = false;
  constructor(private readonly plan: NamespacePlan) {}
  argv(cmd: string[]): string[] {
    return [...this.plan.prefix, ...cmd];
  }
  env(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
    return env;
  }
  started(pid: number): void {
    this.pid = pid;
  }
  private async nsId(): Promise<string | null> {
    const ns = await readNs(this.pid, 'pid_for_children');
    ownPidNs ??= readNs('self', 'pid');
    const own = await ownPidNs;
    if (ns && ns !== own) return ns;
    // bwrap (the OS sandbox) clones its child straight into the new namespace: the child's is the one.
    for (const s of await Promise.all((await listPids()).map(readStat))) {
      if (s?.ppid !== this.pid) continue;
      const child = await readNs(s.pid, 'pid');
      if (child && child !== own) return child;
    }
    return null;
  }
  /**
   * SIGKILL to the `unshare` parent first (so its exit status says SIGKILL), then to the init. The
   * parent is frozen while the init is looked up, so it cannot fork one in between.
   */
  private async hardKill(): Promise<void> {
    signal(this.pid, 'SIGSTOP');
    const nsId = await this.nsId();
    const inits = nsId ? (await nsMembers(nsId)).filter((m) => m.nsPid === 1) : [];
    signal(this.pid, 'SIGKILL');
    for (const m of inits) signal(m.pid, 'SIGKILL');
  }
  async terminate(graceMs: number, exited: Promise<void>): Promise<void> {
    void exited.then(() => (this.exitedFlag = true));
    if (!this.pid) return;
    const nsId = await this.nsId();
    // Not set up yet (unshare has not forked): nothing of the command runs; kill unshare.
    if (!nsId) return this.hardKill();
    const members = await nsMembers(nsId);
    if (members.length === 0) return this.hardKill();
    const init = members.find((m) => m.nsPid === 1);
    // A namespace's init only receives the signals it handles. One that would ignore SIGTERM is
    // frozen instead, so it does not go on with its script during the grace; the others get SIGTERM.
    const frozen = init !== undefined && !init.catchesTerm && this.plan.reaper !== true;
    if (frozen) signal(init.pid, 'SIGSTOP');
    // The init first: its signal is pending before any child of it dies of its own. Signalled after, a
    // script waiting on that child (`sleep & wait`) could already have ended normally, its trap never run.
    if (init) signal(init.pid, 'SIGTERM');
    for (const m of members) if (m !== init) signal(m.pid, 'SIGTERM');
    const deadline = performance.now() + graceMs;
    while (!this.exitedFlag && performance.now() < deadline) {
      await Promise.race([exited, delay(50)]);
      if (this.exitedFlag) return;
      if (frozen) {
        const others = (await nsMembers(nsId)).filter((m) => m.nsPid !== 1 && m.state !== 'Z' && m.state !== 'X');
        if (others.length === 0) break;
      }
    }
    if (!this.exitedFlag) await this.hardKill();
  }
  async afterExit(): Promise<void> {
    // The init's exit (or death by --kill-child when unshare died) takes the namespace down.
  }
}

/** Sweep: a unique environment marker plus process group, session and parent links. */
class SweepContainment implements Containment {
  readonly mode = 'sweep' as const;
  readonly token = randomUUID();
  private pid = 0;
  /** The spawned process's start time: anything of the run started at or after it. */
  private start = 0;
  private readonly hasProc = process.platform === 'linux' && fs.existsSync('/proc/self/stat');
  argv(cmd: string[]): string[] {
    return cmd;
  }
  env(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
    return { ...env, [RUN_ID_VAR]: this.token };
  }
  started(pid: number): void {
    this.pid = pid;
    if (!this.hasProc) return;
    try {
      this.start = parseStat(pid, fs.readFileSync(`/proc/${pid}/stat`, 'utf8'))?.start ?? 0;
    } catch {
      // already gone: scan everything
    }
  }
  /** Every live process that belongs to this run. */
  async scan(): Promise<number[]> {
    if (!this.hasProc) return [];
    const marker = Buffer.from(`${RUN_ID_VAR}=${this.token}\0`);
    const stats = (await Promise.all((await listPids()).map(readStat))).filter((s): s is ProcStat => s !== null && alive(s));
    const found = new Set<number>();
    await Promise.all(
      stats.map(async (s) => {
        // Nothing started before the command can belong to it (and reading its environment is the costly part).
        if (s.pid === process.pid || s.pid <= 1 || s.start < this.start) return;
        if (this.pid && (s.pgid === this.pid || s.sid === this.pid || s.pid === this.pid)) {
          found.add(s.pid);
          return;
        }
        try {
          if ((await fsp.readFile(`/proc/${s.pid}/environ`)).includes(marker)) found.add(s.pid);
        } catch {
          // another user's process, or gone
        }
      }),
    );
    // Children of anything found belong to the run too (e.g. an `env -i` child still attached).
    for (let grew = true; grew;) {
      grew = false;
      for (const s of stats) {
        if (!found.has(s.pid) && found.has(s.ppid) && s.pid !== process.pid && s.pid > 1) {
          found.add(s.pid);
          grew = true;
        }
      }
    }
    return [...found];
  }
  /** SIGKILL everything of the run, again and again until a scan finds nothing (bounded). */
  async sweep(): Promise<void> {
    if (this.pid) signalGroup(this.pid, 'SIGKILL');
    for (let round = 0; round < 100; round++) {
      const found = await this.scan();
      if (found.length === 0) return;
      // Freeze first so nothing forks between the kills, then kill.
      for (const pid of found) signal(pid, 'SIGSTOP');
      for (const pid of found) signal(pid, 'SIGKILL');
      await delay(round < 5 ? 1 : 20);
    }
  }
  async terminate(graceMs: number, exited: Promise<void>): Promise<void> {
    if (!this.pid) return;
    let exitedFlag = false;
    void exited.then(() => (exitedFlag = true));
    signalGroup(this.pid, 'SIGTERM');
    for (const pid of await this.scan()) signal(pid, 'SIGTERM');
    await Promise.race([exited, delay(graceMs)]);
    if (!exitedFlag) signalGroup(this.pid, 'SIGKILL');
    await this.sweep();
  }
  afterExit(): Promise<void> {
    return this.sweep();
  }
}

/** No containment: spawn as is (used only when the command cannot be started at all). */
class PlainContainment implements Containment {
  readonly mode = 'sweep' as const;
  private pid = 0;
  argv(cmd: string[]): string[] {
    return cmd;
  }
  env(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
    return env;
  }
  started(pid: number): void {
    this.pid = pid;
  }
  terminate(): Promise<void> {
    if (this.pid) signalGroup(this.pid, 'SIGKILL'); // never throws
    return Promise.resolve();
  }
  async afterExit(): Promise<void> {}
}

export function createContainment(info: ContainmentInfo): Containment {
  return info.mode === 'namespace' && info.plan ? new NamespaceContainment(info.plan) : new SweepContainment();
}

/** For a command that does not exist: spawned plainly so the error is the runtime's own. */
export function plainContainment(): Containment {
  return new PlainContainment();
}
