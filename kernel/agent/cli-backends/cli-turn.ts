import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { MASK } from '../../secrets/masking.js';
import { isMemoError, MemoError } from '../../errors.js';
import { createContainment, resolveContainment, UNSHARE_SIGKILL } from '../../sandbox/process-containment.js';
import { commandSandbox, prepareSandbox, type SandboxRun } from '../../sandbox/os-sandbox.js';
import type { AgentKernel as Kernel } from '../agent-kernel.js';
import type { AgentEvent, AgentStep, StopReason, TurnResult } from '../agent-loop.js';
import type { ChatMessage, ChatRequest, ChatResponse, ModelProvider } from '../../providers/provider.js';
import type { AccessMode as TurnMode, ItemRef } from '../../tools/contract.js';
import { offeredIn } from '../../tools/access-modes.js';
import { ProviderError } from '../../providers/provider.js';
import { agyPrompt, BACKENDS, buildInvocation, type AccessMode, type BackendId, type BackendSpec, type Effort, type McpAccess } from './backends.js';
import { CliDetector, type Detection } from './cli-detector.js';
import { CliStreamReader, type CliEvent } from './cli-stream.js';

/** How much of the earlier conversation a CLI turn is given, newest first (the CLI keeps no history of ours). */
const HISTORY_CHARS = 120_000;
const STDERR_TAIL = 2_000;

/** After the CLI exits, how long the rest of its stdout is waited for (something it left running may hold it). */
const STDOUT_GRACE_MS = 1_500;
/** After SIGTERM (the turn was stopped), how long before the CLI's process group is killed. */
const KILL_AFTER_MS = 5_000;

/** Process groups of CLIs still running: killed if this process exits first (a detached group would outlive it). */
const liveGroups = new Set<number>();
let exitHook = false;

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // The group is gone already.
  }
}

function watchProcessExit(): void {
  if (exitHook) return;
  exitHook = true;
  process.once('exit', () => {
    for (const pgid of liveGroups) signalGroup(pgid, 'SIGKILL');
  });
}

/** Environment variables of ours a spawned CLI must not inherit (a capability belongs to one turn). */
const PRIVATE_ENV = ['MEMO_WRITE_CAPABILITY'];

interface Endpoint {
  url: string;
  token: string;
}

export interface CliBackendsOptions {
  detector?: CliDetector;
  /** The environment the CLIs run with (default: this process's). */
  env?: NodeJS.ProcessEnv;
  /**
   * An MCP endpoint of this same kernel that is already running (`memo serve`'s, for the web
   * console): read at each turn, so a rotated token is picked up. Default: one started on first use.
   */
  endpoint?: () => { url: string; token: string };
  /**
   * Starts a loopback MCP endpoint of this kernel for the CLIs to call back (the faces pass the MCP
   * layer's `loopbackEndpoint`; the agent layer does not import the MCP server). Used on first use
   * when no `endpoint` is given.
   */
  start?: () => Promise<{ url: string; readonly token: string }>;
}

/**
 * The CLI backends of one kernel: detection (cached), and the loopback MCP endpoint the CLIs call
 * back into, started on first use with a token of its own and closed with the kernel. Writes need
 * the turn's capability, minted by this kernel, so the endpoint must be this kernel's.
 */
export class CliBackends {
  readonly detector: CliDetector;
  readonly env: NodeJS.ProcessEnv;
  private endpoint: Promise<Endpoint> | null = null;
  private readonly given: (() => Endpoint) | undefined;
  private readonly start: (() => Promise<Endpoint>) | undefined;

  constructor(
    readonly kernel: Kernel,
    options: CliBackendsOptions = {},
  ) {
    this.env = options.env ?? process.env;
    this.detector = options.detector ?? new CliDetector({ env: this.env });
    this.given = options.endpoint;
    this.start = options.start;
  }

  /** The endpoint's URL and token (started on first call; the kernel's shutdown closes it). */
  mcp(): Promise<Endpoint> {
    if (this.given) return Promise.resolve(this.given());
    const start = this.start;
    if (!start) return Promise.reject(new MemoError('VALIDATION', 'An agent CLI needs an MCP endpoint of this kernel to call its tools, and none was given.'));
    this.endpoint ??= start().catch((err: unknown) => {
      this.endpoint = null;
      throw err;
    });
    return this.endpoint;
  }

  provider(id: BackendId, settings: { access?: AccessMode; effort?: Effort } = {}): CliBackendProvider {
    return new CliBackendProvider(this, id, settings.access ?? 'vault', settings.effort);
  }
}

/**
 * A CLI backend as a model provider: `chat()` is a one-shot request without tools (titles,
 * compaction summaries); an agent turn goes through `runCliTurn`, which `runChatTurn` picks when
 * it is given this provider.
 */
export class CliBackendProvider implements ModelProvider {
  readonly kind = 'cli-backend';
  readonly name: string;
  readonly spec: BackendSpec;

  constructor(
    readonly backends: CliBackends,
    readonly backend: BackendId,
    public access: AccessMode,
    public effort?: Effort,
  ) {
    this.spec = BACKENDS[backend];
    this.name = this.spec.provider;
  }

  async chat(request: ChatRequest): Promise<ChatResponse> {
    // No MCP server and (in Vault only) none of the CLI's own tools: a plain request.
    const run = await runCli(this, {
      history: request.messages.slice(0, -1),
      message: lastUser(request.messages),
      model: request.model,
      signal: request.signal,
      // A title or a summary needs no tools: Vault only (no MCP server either) wherever the CLI allows it.
      access: this.spec.vaultOnly ? 'vault' : this.access,
    });
    if (run.error) throw new ProviderError(run.error, null, false);
    return { content: run.answer, toolCalls: [], ...(run.usage ? { usage: run.usage } : {}) };
  }

  contextWindow(): number | undefined {
    // The CLI manages its own window; Memo sends a bounded slice of the history (HISTORY_CHARS).
    return undefined;
  }
}

export function isCliBackendProvider(p: ModelProvider): p is CliBackendProvider {
  return p instanceof CliBackendProvider;
}

function lastUser(messages: ChatMessage[]): string {
  const last = messages[messages.length - 1];
  return last ? last.content : '';
}

/**
 * The earlier conversation as text before the new message: the CLI starts fresh each turn, and the
 * conversation is Memo's (stored encrypted here, not in the CLI's own session files). Tool activity
 * is left out, as it is from every replay; a compaction summary comes first when there is one.
 */
export function renderPrompt(history: readonly ChatMessage[], message: string, maxBytes?: number): string {
  return fitPrompt(history, message, maxBytes) ?? message;
}

const HISTORY_HEAD = 'The conversation so far, for context:\n\n';
const HISTORY_TAIL = "\n\n[The person's new message, which you answer]\n";

/**
 * `renderPrompt` within a size in bytes (UTF-8), when one is given: older messages are left out
 * first. Null when the message alone does not fit.
 */
function fitPrompt(history: readonly ChatMessage[], message: string, maxBytes?: number): string | null {
  const bytes = (text: string) => Buffer.byteLength(text, 'utf8');
  if (maxBytes !== undefined && bytes(message) > maxBytes) return null;
  const parts: string[] = [];
  let size = 0;
  let total = bytes(HISTORY_HEAD) + bytes(HISTORY_TAIL) + bytes(message);
  for (let i = history.length - 1; i >= 0; i--) {
    const m = history[i]!;
    if (m.role === 'tool' || !m.content) continue;
    const who = m.role === 'system' ? 'Context' : m.role === 'user' ? 'User' : 'Assistant';
    const piece = `[${who}]\n${m.content}`;
    if (size + piece.length > HISTORY_CHARS) break;
    const pieceBytes = bytes(piece) + (parts.length ? 2 : 0);
    if (maxBytes !== undefined && total + pieceBytes > maxBytes) break;
    size += piece.length;
    total += pieceBytes;
    parts.unshift(piece);
  }
  if (parts.length === 0) return message;
  return `${HISTORY_HEAD}${parts.join('\n\n')}${HISTORY_TAIL}${message}`;
}

interface CliRun {
  answer: string;
  error?: string;
  /** The run could not start (the CLI vanished, lost its executable bit...). */
  startFailed?: boolean;
  model?: string;
  usage?: { inputTokens: number; outputTokens: number };
  steps: AgentStep[];
  reasoning: string[];
  cancelled: boolean;
}

interface RunRequest {
  /** The earlier conversation and the new message, rendered into the CLI's prompt. */
  history: readonly ChatMessage[];
  message: string;
  model?: string;
  mcp?: McpAccess;
  systemPrompt?: string;
  signal?: AbortSignal;
  onEvent?: (e: AgentEvent) => void;
  detection?: Extract<Detection, { found: true }>;
  /** Overrides the provider's access for this run. */
  access?: AccessMode;
  /** Overrides the provider's effort for this run. */
  effort?: Effort;
  /** Called as soon as the CLI process exits (before the rest of its output is read). */
  onExit?: () => void;
  /** The items the result of the CLI's latest call of `tool` through Memo's endpoint named (the kernel saw the result; the CLI's output does not carry them). */
  itemsOf?: (tool: string) => ItemRef[] | undefined;
}

/** Why a file cannot be executed now, or null. */
function cannotExecute(file: string): string | null {
  try {
    const st = fs.statSync(file);
    if (!st.isFile()) return `${file} is not a file`;
    fs.accessSync(file, fs.constants.X_OK);
    return null;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return `${file} no longer exists`;
    if (code === 'EACCES') return `${file} is not executable`;
    return (err as Error).message;
  }
}

/** Runs the CLI once: files into a private folder, the prompt on stdin, the stream read as it comes. */
async function runCli(provider: CliBackendProvider, req: RunRequest): Promise<CliRun> {
  const spec = provider.spec;
  const out: CliRun = { answer: '', steps: [], reasoning: [], cancelled: false };
  const access = req.access ?? provider.access;
  const detection = req.detection ?? (await provider.backends.detector.detect(provider.backend));
  if (!detection.found) return { ...out, error: `${spec.label} is not available: ${detection.reason}`, startFailed: true };
  if (access === 'vault' && !spec.vaultOnly)
    return {
      ...out,
      error: `${spec.label} cannot be limited to Memo's tools: it has no documented flag that turns its own file and shell tools off. Send the turn with Computer access (--computer-access, or /computer) to use it knowingly.`,
    };
  const why = cannotExecute(detection.path);
  if (why) return { ...out, error: `${spec.label} failed to start: ${why}`, startFailed: true };

  let prompt = renderPrompt(req.history, req.message);
  if (spec.argvPromptBytes !== undefined) {
    // The prompt goes in argv: older messages are left out until it fits, and a message that cannot
    // fit by itself is refused here, before anything is started.
    const limit = spec.argvPromptBytes;
    const fitted = fitPrompt(req.history, req.message, limit - Buffer.byteLength(agyPrompt(req.systemPrompt, ''), 'utf8'));
    if (fitted === null) {
      const size = Buffer.byteLength(agyPrompt(req.systemPrompt, req.message), 'utf8');
      return {
        ...out,
        error: `${spec.label} takes the prompt as a command-line argument, limited here to ${limit} bytes (Linux refuses a single argument over 128 KiB): this message${req.systemPrompt ? " with Memo's instructions" : ''} is ${size} bytes. Shorten it, or use the claude or codex backend, which read the prompt on stdin.`,
      };
    }
    prompt = fitted;
  }

  // The OS sandbox, as for run_command: where it cannot start the turn is refused, unless a person
  // chose commands judged only (then the CLI runs with PID containment alone, as before).
  let sandbox: Awaited<ReturnType<typeof commandSandbox>>;
  try {
    sandbox = await commandSandbox();
  } catch (err) {
    return { ...out, error: `${spec.label} cannot run: ${(err as Error).message}` };
  }

  const root = provider.backends.kernel.config.root;
  const runDir = fs.mkdtempSync(path.join(os.tmpdir(), `memo-${spec.id}-`));
  fs.chmodSync(runDir, 0o700);
  let box: SandboxRun | null = null;
  try {
    const effort = req.effort ?? provider.effort;
    const inv = buildInvocation(provider.backend, {
      prompt,
      mode: access,
      runDir,
      cwd: root,
      ...(req.model ? { model: req.model } : {}),
      ...(req.mcp ? { mcp: req.mcp } : {}),
      ...(req.systemPrompt ? { systemPrompt: req.systemPrompt } : {}),
      ...(effort ? { effort } : {}),
    });
    for (const f of inv.files) {
      fs.mkdirSync(path.dirname(f.path), { recursive: true, mode: 0o700 });
      fs.writeFileSync(f.path, f.content, { mode: 0o600 });
    }
    const env: NodeJS.ProcessEnv = { ...provider.backends.env, ...inv.env };
    for (const k of PRIVATE_ENV) delete env[k];
    if (inv.env.HOME) fs.mkdirSync(inv.env.HOME, { recursive: true, mode: 0o700 });

    if (sandbox.sandboxed) {
      const home = env.HOME ?? os.homedir();
      const mcpTarget = req.mcp ? loopbackTarget(req.mcp.url) : null;
      box = await prepareSandbox(
        {
          // Vault only: nothing of the workspace is writable (the CLI's own tools are off anyway);
          // Computer access: the root, as for run_command. Its run folder and its own login files always.
          writable: [runDir, ...(access === 'computer' ? [root] : []), ...extraWritable()],
          own: spec.ownFiles.map((f) => path.join(home, f)),
          // The CLI's own install folder, read-only (it may live under the temp folder, which is private inside).
          // The workspace stays visible, read-only in Vault only (it may lie under the private /tmp).
          reveal: [installDir(detection.path), root],
          cwd: root,
          network: { domains: spec.domains },
          forward: mcpTarget ? [{ port: mcpTarget.port, to: mcpTarget }] : [],
          home: 'keep',
        },
        sandbox.status,
      );
    }

    watchProcessExit();
    const reader = new CliStreamReader(inv.format);
    const open = new Map<string, { tool: string; args: Record<string, unknown>; started: number }>();
    let stderr = '';
    let failed: string | undefined;
    let finished = false;
    let resultAnswer: string | undefined;
    const handle = (e: CliEvent) => {
      switch (e.type) {
        case 'model':
          out.model = e.model;
          break;
        case 'text_delta':
          req.onEvent?.({ type: 'text_delta', text: e.text });
          break;
        case 'message':
          out.answer = e.text;
          break;
        case 'reasoning':
          out.reasoning.push(e.text);
          break;
        case 'tool_start':
          open.set(e.id, { tool: e.tool, args: e.args, started: Date.now() });
          req.onEvent?.({ type: 'tool_start', iteration: 1, tool: e.tool, args: e.args });
          break;
        case 'tool_end': {
          const began = open.get(e.id);
          open.delete(e.id);
          const step: AgentStep = {
            iteration: 1,
            callId: e.id,
            tool: began?.tool ?? e.tool ?? '?',
            args: shortArgs(began?.args ?? {}),
            outcome: e.ok ? 'ok' : /PERMISSION_DENIED|PERMISSION_TIMEOUT/.test(e.summary) ? 'denied' : 'error',
            ...(e.ok ? {} : { code: /^([A-Z_]+):/.exec(e.summary)?.[1] ?? 'TOOL_FAILED' }),
            summary: e.summary,
            durationMs: began ? Date.now() - began.started : 0,
          };
          const items = e.ok ? req.itemsOf?.(step.tool) : undefined;
          if (items) step.items = items;
          out.steps.push(step);
          req.onEvent?.({ type: 'tool_end', step });
          break;
        }
        case 'usage':
          out.usage = { inputTokens: e.inputTokens, outputTokens: e.outputTokens };
          break;
        case 'done':
          finished = true;
          if (e.answer !== undefined) resultAnswer = e.answer;
          break;
        case 'failed':
          failed = e.message;
          break;
      }
    };

    // Contained like a shell command (process-containment.ts): where PID namespaces can be used the CLI
    // is the init of its own, tied to this process by a parent-death signal, so whatever it starts
    // (setsid, double fork) ends with the turn, and all of it ends if Memo itself is killed.
    // In the sandbox bwrap makes the PID namespace (its reaper is pid 1, the CLI pid 2); else unshare's.
    const containment = box
      ? createContainment({ mode: 'namespace', plan: { prefix: [], userNamespace: false, mountProc: true, reaper: true } })
      : createContainment(await resolveContainment());
    const sandboxed = box;
    let code = await new Promise<number | null | Error>((resolve) => {
      let child: ChildProcessWithoutNullStreams;
      try {
        const argv = [detection.path, ...inv.args];
        const [file, ...args] = sandboxed ? sandboxed.argv(argv) : containment.argv(argv);
        const childEnv = sandboxed ? sandboxed.env(env) : containment.env(env);
        // Its own process group as well: stopping the turn, or its end, reaches whatever the CLI started too.
        child = spawn(file!, args, { cwd: root, env: childEnv, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
      } catch (err) {
        resolve(err as Error);
        return;
      }
      const pgid = child.pid;
      if (pgid !== undefined) {
        liveGroups.add(pgid);
        containment.started(pgid);
      }
      let exited = false;
      let settled = false;
      let grace: NodeJS.Timeout | undefined;
      let markExited!: () => void;
      const exitSeen = new Promise<void>((r) => (markExited = r));
      const lines = readline.createInterface({ input: child.stdout, crlfDelay: Infinity });
      const finish = (result: number | null | Error) => {
        if (settled) return;
        settled = true;
        req.signal?.removeEventListener('abort', onAbort);
        clearTimeout(grace);
        // Whatever the CLI left running ends with the turn (it may hold stdout, or outlive it otherwise).
        if (pgid !== undefined) {
          signalGroup(pgid, 'SIGKILL');
          liveGroups.delete(pgid);
        }
        void containment.afterExit().catch(() => {});
        lines.close();
        child.stdout.destroy();
        child.stderr.destroy();
        resolve(result);
      };
      const onAbort = () => {
        // The CLI already exited with its answer: the turn only stops waiting for what it left behind.
        if (exited) return finish(child.exitCode);
        out.cancelled = true;
        // SIGTERM to all it started; a CLI that ignores it is killed after KILL_AFTER_MS, with everything
        // it started; the turn never waits on it.
        void containment.terminate(KILL_AFTER_MS, exitSeen).catch(() => {});
      };
      if (req.signal?.aborted) onAbort();
      req.signal?.addEventListener('abort', onAbort, { once: true });
      child.once('error', (err) => {
        // A failure to start (no exit follows); once the CLI has exited its exit decides.
        if (!exited) finish(err);
      });
      child.stdin.on('error', () => {
        // The CLI closed its stdin early (it exited): its exit says why.
      });
      child.stdin.end(inv.stdin);
      child.stderr.setEncoding('utf8');
      child.stderr.on('data', (d: string) => {
        stderr = (stderr + d).slice(-STDERR_TAIL);
      });
      lines.on('line', (line) => {
        for (const e of reader.line(line)) handle(e);
      });
      const stdoutDone = new Promise<void>((r) => lines.once('close', r));
      child.once('exit', (exit) => {
        exited = true;
        markExited();
        // The capability dies the moment the CLI exits, before the wait for the rest of its output.
        req.onExit?.();
        // The rest of stdout, unless something the CLI left running holds it open: then a short, bounded wait.
        void stdoutDone.then(() => finish(exit));
        grace = setTimeout(() => finish(exit), STDOUT_GRACE_MS);
      });
    });

    // What the CLI printed may echo its configuration: the endpoint token and the capability never reach a message.
    const hide = (text: string) => [req.mcp?.token, req.mcp?.capability].reduce<string>((t, secret) => (secret ? t.split(secret).join(MASK) : t), text);
    stderr = hide(stderr);
    // unshare cannot re-raise SIGKILL on itself when the CLI died of one (the OOM killer): it says so and exits 1.
    if (containment.mode === 'namespace' && code === 1 && UNSHARE_SIGKILL.test(stderr)) {
      code = null;
      stderr = stderr.replace(UNSHARE_SIGKILL, '$1');
    }
    if (failed) failed = hide(failed);
    if (code instanceof Error) {
      const reason = (code as NodeJS.ErrnoException).code === 'ENOENT' ? `${detection.path} no longer exists` : code.message;
      return { ...out, error: `${spec.label} failed to start: ${reason}`, startFailed: true };
    }
    for (const e of reader.end(code)) handle(e);
    if (!out.answer && resultAnswer) out.answer = resultAnswer;
    if (out.cancelled) return { ...out, error: 'The turn was stopped.' };
    if (failed) return { ...out, error: `${spec.label}: ${failed}` };
    if (code !== 0 || !finished) {
      const tail = stderr.trim().split('\n').slice(-3).join(' ').slice(0, 400);
      return { ...out, error: `${spec.label} exited with ${code === null ? 'a signal' : `code ${code}`}${tail ? `: ${tail}` : ''}` };
    }
    return out;
  } finally {
    await box?.dispose();
    fs.rmSync(runDir, { recursive: true, force: true });
  }
}

/** host:port of an MCP endpoint on this machine's loopback (the only kind bridged into the sandbox). */
function loopbackTarget(url: string): { host: string; port: number } | null {
  try {
    const u = new URL(url);
    const host = u.hostname.replace(/^\[|\]$/g, '');
    if (host !== '127.0.0.1' && host !== 'localhost' && host !== '::1') return null;
    return { host: host === 'localhost' ? '127.0.0.1' : host, port: Number(u.port || (u.protocol === 'https:' ? 443 : 80)) };
  } catch {
    return null;
  }
}

/** The folder the CLI's executable really lives in (npm installs link it in from its package). */
function installDir(file: string): string {
  try {
    return path.dirname(fs.realpathSync(file));
  } catch {
    return path.dirname(file);
  }
}

/**
 * Folders a person lets agent CLIs write besides their own files (MEMO_CLI_WRITABLE, a path list in
 * Memo's own environment, which no command or tool can set): where a CLI's logs should go, say.
 */
function extraWritable(): string[] {
  return (process.env.MEMO_CLI_WRITABLE ?? '').split(path.delimiter).filter((p) => path.isAbsolute(p) && fs.existsSync(p));
}

function shortArgs(args: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(args)) {
    if (typeof v === 'string') out[k] = v.length > 80 ? `${v.slice(0, 77)}…` : v;
    else if (typeof v === 'number' || typeof v === 'boolean' || v === null) out[k] = v;
    else out[k] = '…';
  }
  return out;
}

export interface CliTurnOptions {
  provider: CliBackendProvider;
  /** The model to ask the CLI for; empty: the CLI's own default. */
  model: string;
  conversationId: string;
  history: ChatMessage[];
  userMessage: string;
  systemPrompt?: string;
  signal?: AbortSignal;
  onEvent?: (event: AgentEvent) => void;
  /** This turn's effort (else the provider's). */
  effort?: Effort;
  /**
   * The turn's access mode (else the provider's access): Vault only runs the CLI without its own
   * tools and offers it, over MCP, the Vault-only tools alone; Computer access lets it use its own;
   * Web search only is refused (a CLI would be offered more than web_search).
   */
  mode?: TurnMode;
}

export interface CliTurnResult extends TurnResult {
  /** The model the CLI reported (else the one asked for). */
  model: string;
  access: AccessMode;
}

/**
 * One agent turn through a CLI: a write capability for this turn only, Memo's MCP endpoint handed
 * to the CLI through its per-run flags (or a temporary HOME), the CLI's stream read as it arrives,
 * and the capability destroyed when the CLI exits, so a replay of it is refused.
 */
export async function runCliTurn(kernel: Kernel, opts: CliTurnOptions): Promise<CliTurnResult> {
  const provider = opts.provider;
  const spec = provider.spec;
  const access: AccessMode = opts.mode ? (opts.mode === 'computer' ? 'computer' : 'vault') : provider.access;
  const emit = (e: AgentEvent) => opts.onEvent?.(e);
  const steps: AgentStep[] = [];
  const messages: ChatMessage[] = [{ role: 'user', content: opts.userMessage }];
  const finish = (r: Partial<CliRun> & { stop: StopReason; model?: string }): CliTurnResult => {
    emit({ type: 'turn_end', stopReason: r.stop });
    steps.push(...(r.steps ?? []));
    const answer = r.answer ?? '';
    if (answer) messages.push({ role: 'assistant', content: answer });
    return {
      stopReason: r.stop,
      answer,
      ...(r.error ? { error: r.error } : {}),
      steps,
      messages,
      iterations: answer || steps.length ? 1 : 0,
      usage: r.usage ?? { inputTokens: 0, outputTokens: 0 },
      reasoning: answer && r.reasoning?.length ? [{ message: 1, text: r.reasoning.join('\n\n') }] : [],
      model: r.model ?? opts.model,
      access,
    };
  };

  if (opts.mode === 'web')
    return finish({
      stop: 'error',
      error: `Web search only does not apply to ${spec.label}: it would be offered more than web_search. Switch to Vault only (/vault) or Computer access (/computer), or leave the CLI (/backend off).`,
    });
  const detection = await provider.backends.detector.detect(provider.backend);
  if (!detection.found) return finish({ stop: 'error', error: `${spec.label} is not available: ${detection.reason}` });
  // The capability carries the turn's mode to the endpoint: without one the CLI would be offered every
  // tool. A conversation that is not stored (deleted as the turn began) gets none, so the CLI never starts.
  const capability = await kernel.capabilities.mint(opts.conversationId, undefined, access).catch((err: unknown) => {
    if (isMemoError(err) && err.code === 'NOT_FOUND') return null;
    throw err;
  });
  if (!capability)
    return finish({
      stop: 'error',
      error: `${spec.label} was not started: the conversation ${JSON.stringify(opts.conversationId.slice(0, 100))} is not stored (deleted?), and a CLI turn runs only in a stored conversation, whose capability limits it to the turn's mode.`,
    });
  const revoke = () => kernel.capabilities.revoke(capability);
  // The endpoint reports each call made with the capability before the CLI sees its result: the
  // items of each, in call order per tool, wait here for the CLI's own report of that call.
  const reported = new Map<string, Array<ItemRef[] | undefined>>();
  kernel.capabilities.observe(capability, (call) => {
    const queue = reported.get(call.tool) ?? [];
    queue.push(call.ok ? call.items : undefined);
    reported.set(call.tool, queue);
  });
  const itemsOf = (tool: string) => reported.get(tool)?.shift();
  try {
    const tools = kernel.registry.list().filter((t) => offeredIn(t.spec, access));
    emit({ type: 'turn_start', conversationId: opts.conversationId, capability, tools: tools.map((t) => t.spec.name) });
    emit({ type: 'backend', backend: spec.id, label: spec.label, version: detection.version, access });
    // On the audit trail before the CLI starts: which CLI ran this turn, and whether its own tools
    // (unseen by this trail) were allowed. Committed before the CLI starts (a shared database's sink answers with a promise).
    await kernel.audit.note?.({
      event: 'agent-access',
      conversationId: opts.conversationId,
      backend: spec.id,
      ...(detection.version ? { version: detection.version } : {}),
      access,
    });
    if (access === 'computer') {
      // Said in the transcript and stored with the turn: these calls bypass this kernel's gate and audit.
      steps.push({
        iteration: 0,
        callId: `${spec.id}-access`,
        tool: `${spec.provider}:computer-access`,
        args: { access },
        outcome: 'ok',
        summary: `Computer access: ${spec.label} could use its own file, shell and web tools in this turn; those calls are not gated or audited by Memo.`,
        durationMs: 0,
      });
    }
    const endpoint = await provider.backends.mcp();
    const run = await runCli(provider, {
      history: opts.history,
      message: opts.userMessage,
      ...(opts.model ? { model: opts.model } : {}),
      mcp: { url: endpoint.url, token: endpoint.token, capability },
      ...(opts.systemPrompt ? { systemPrompt: opts.systemPrompt } : {}),
      ...(opts.signal ? { signal: opts.signal } : {}),
      ...(opts.onEvent ? { onEvent: opts.onEvent } : {}),
      ...(opts.effort ? { effort: opts.effort } : {}),
      detection,
      access,
      onExit: revoke,
      itemsOf,
    });
    const stop: StopReason = run.cancelled ? 'cancelled' : run.error ? 'error' : 'final';
    return finish({ ...run, stop });
  } finally {
    // The capability dies with the turn at the latest (on every error path too): the CLI, or anything
    // it left behind, cannot write after it.
    revoke();
  }
}
