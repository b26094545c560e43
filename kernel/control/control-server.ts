/**
 * The control socket of `memo serve`: CLI commands on the same data folder (`plugins list|info`,
 * `tools list|call`) reach the running kernel through it, so they see its state (hot-loaded packs,
 * rate limiter, audit) instead of booting a second kernel that knows none of it. `memo approvals
 * list|answer` reach its approval broker: the requests waiting there (from MCP clients, routines,
 * pack services) are listed, watched and answered, as `cli`.
 *
 * Who may connect: the socket file is mode 0600 from the moment it has its name (it is bound in a
 * private 0700 folder, narrowed, then hard-linked into the data folder), so only the user running
 * memo serve (and root) can connect. Node does not expose the peer's credentials (SO_PEERCRED), so
 * the file mode is the check.
 *
 * A call goes through `kernel.invoke` like every other call, as caller `cli`; its permission prompt
 * is put to the person at the CLI that made it (a prompter for that call only), and a CLI that
 * cancels or goes away cancels its call. Request arguments are never logged.
 *
 * `memo serve rotate-token` rotates the MCP endpoint's token through it (`serve.rotate-token`): the
 * admin line `token.rotate` by `cli` is written first, and a rotation whose line cannot be written is
 * not made (AUDIT_UNAVAILABLE); the answer carries the new token and a new one-time console link,
 * which is why only the socket's owner may ask.
 */
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Disposable } from '../disposable.js';
import type { Kernel } from '../kernel.js';
import type { Logger } from '../logger.js';
import type { ApprovalEvent } from '../permissions/approval-broker.js';
import { isMemoError } from '../errors.js';
import { isPermissionAnswer, type ApprovalReply, type PermissionRequest, type Prompter } from '../permissions/prompter.js';
import { writeFileAtomic } from '../util/atomic-file.js';
import { MAX_JSON_DEPTH, parseBoundedJson } from '../util/bounded-json.js';
import {
  CONTROL_PROTOCOL_VERSION,
  fitsSocketPath,
  line,
  LineReader,
  MAX_REQUEST_LINE_BYTES,
  pointerFileIn,
  realDir,
  socketPathIn,
  type ServerHello,
} from './control-protocol.js';
import {
  approvalList,
  approvalView,
  CONTROL_CALL_SESSION,
  goneMessage,
  packInfo,
  packList,
  toolList,
  toolSearchView,
  type ApprovalView,
} from './kernel-views.js';
import { listen } from '../util/listen.js';
import { chooseProfile, servesEverything } from '../mcp/mcp-profile.js';
// The MCP server modules load the SDK (about 0.3 s): imported when a stdio front first joins, not by every CLI command.
import type { McpStdioServer } from '../mcp/mcp-stdio.js';

/** A connection that sends no request within this long is closed. */
const REQUEST_WAIT_MS = 30_000;
/** How long a probe of an existing socket waits for an answer before calling it live anyway. */
const PROBE_WAIT_MS = 2_000;
/** At close, how long answered connections get to flush before they are cut. */
const CLOSE_GRACE_MS = 2_000;
const OPS = [
  'plugins.list',
  'plugins.info',
  'tools.list',
  'tools.search',
  'tools.call',
  'approvals.list',
  'approvals.watch',
  'approvals.answer',
  'serve.rotate-token',
  'console.link',
  'mcp.stdio',
];
/** The built-in pack that serves the web console (its mount offers the one-time login link). */
const CONSOLE_LINK_PACK = 'console';
/** The shortest id prefix `approvals.answer` takes for a whole id (the list prints whole ids; a prefix saves typing). */
const MIN_ID_PREFIX = 4;

export interface ControlServerOptions {
  kernel: Kernel;
  /** The folders the kernel loads packs and skills from (the CLI compares them with its own). */
  packFolders: string[];
  skillFolders: string[];
  logger: Logger;
}

/** A new MCP token, as `serve.rotate-token` answers it (control-protocol.ts). */
export interface RotatedToken {
  url: string;
  token: string;
  /** A new one-time web console login link (the one before stops working); null while the console pack is disabled or not loaded. */
  console: string | null;
}

/**
 * What `serve.rotate-token` rotates: memo serve's HTTP endpoint once it listens (`rotate` replaces
 * the token, prints it where memo serve runs and answers the new one), or why there is none.
 */
export type TokenRotation = { rotate: () => RotatedToken } | { none: string };

type Probe = { state: 'none' } | { state: 'stale' } | { state: 'live'; pid: number | null } | { state: 'unusable'; reason: string };

/** Whether something answers on `socket`: a live server (with its pid when it says hello), a stale file, or neither. */
function probe(socket: string): Promise<Probe> {
  let st: fs.Stats;
  try {
    st = fs.lstatSync(socket);
  } catch {
    return Promise.resolve({ state: 'none' });
  }
  if (!st.isSocket()) return Promise.resolve({ state: 'unusable', reason: `${socket} exists and is not a socket` });
  return new Promise((resolve) => {
    const conn = net.connect(socket);
    let buf = '';
    const done = (p: Probe) => {
      clearTimeout(timer);
      conn.destroy();
      resolve(p);
    };
    const timer = setTimeout(() => done({ state: 'live', pid: null }), PROBE_WAIT_MS);
    conn.setEncoding('utf8');
    conn.on('data', (d: string) => {
      buf += d;
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      let pid: number | null = null;
      try {
        const hello = JSON.parse(buf.slice(0, nl)) as Partial<ServerHello>;
        if (typeof hello.pid === 'number') pid = hello.pid;
      } catch {
        // something listens, but not a Memo server: still live
      }
      done({ state: 'live', pid });
    });
    conn.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ECONNREFUSED') done({ state: 'stale' });
      else if (err.code === 'ENOENT') done({ state: 'none' });
      else done({ state: 'unusable', reason: `${socket} cannot be reached (${err.code ?? err.message})` });
    });
  });
}

/** Puts a call's permission prompts to the CLI that made it, over its connection. Lives as long as the call. */
class SocketPrompter implements Prompter {
  private seq = 0;
  private readonly waiting = new Map<string, (answer: ApprovalReply | Error) => void>();

  constructor(private readonly send: (message: Record<string, unknown>) => void) {}

  ask(request: PermissionRequest, signal: AbortSignal): Promise<ApprovalReply> {
    const id = String(++this.seq);
    return new Promise<ApprovalReply>((resolve, reject) => {
      const settle = (answer: ApprovalReply | Error) => {
        this.waiting.delete(id);
        signal.removeEventListener('abort', onAbort);
        if (answer instanceof Error) reject(answer);
        else resolve(answer);
      };
      // The gate stopped waiting (timeout, cancellation): tell the CLI to stop asking.
      const onAbort = () => {
        this.send({ type: 'withdrawn', id });
        settle(new Error('the question was withdrawn'));
      };
      if (signal.aborted) return reject(new Error('the question was withdrawn'));
      this.waiting.set(id, settle);
      signal.addEventListener('abort', onAbort, { once: true });
      this.send({ type: 'prompt', id, request });
    });
  }

  answer(id: unknown, answer: unknown, refused: unknown): void {
    const settle = typeof id === 'string' ? this.waiting.get(id) : undefined;
    if (!settle) return;
    if (isPermissionAnswer(answer)) settle(answer);
    // The terminal's `e`: edited arguments, for a tool that takes them (the gate checks and asks again).
    else if (isEdit(answer)) settle({ edit: answer.edit });
    else settle(new Error(typeof refused === 'string' && refused ? refused.slice(0, 300) : 'the CLI sent no valid answer'));
  }

  goneAway(): void {
    for (const settle of [...this.waiting.values()]) settle(new Error('the CLI that made the call went away'));
  }
}

export class ControlServer {
  private readonly connections = new Set<net.Socket>();
  private readonly calls = new Set<AbortController>();
  /** Ends each `approvals.watch` stream (at close). */
  private readonly watches = new Set<(message: Record<string, unknown>) => void>();
  /** The MCP clients joined through the socket (`memo serve --stdio` beside this server), each its own connection. */
  private readonly fronts = new Set<McpStdioServer>();
  private closing: Promise<void> | undefined;
  private tokens: TokenRotation = { none: `this memo serve (pid ${process.pid}) has no MCP endpoint yet` };

  private constructor(
    private readonly server: net.Server,
    /** Where CLI commands find the server: `<data>/control.sock`, or a socket under the temp folder named by `<data>/control-socket.json`. */
    readonly socketPath: string,
    private readonly removeFiles: () => void,
  ) {}

  /**
   * Listens on the data folder's control socket. Returns null, after a warning, when it cannot: another
   * memo serve already answers on this data folder (this one then runs without a socket, and CLI
   * commands keep going to the first), or the path cannot be used. A stale socket (nothing listening)
   * is removed first.
   */
  static async start(options: ControlServerOptions): Promise<ControlServer | null> {
    const { kernel, logger } = options;
    const dataDir = kernel.config.dataDir;
    const primary = socketPathIn(dataDir);
    const pointer = pointerFileIn(dataDir);
    const without = (why: string) => {
      logger.warn(`${why}; running without a control socket, so CLI commands on this data folder use kernels of their own`);
      return null;
    };

    for (const candidate of [primary, readPointer(pointer)]) {
      if (candidate === null) continue;
      const found = await probe(candidate);
      if (found.state === 'live') return without(`another memo serve${found.pid !== null ? ` (pid ${found.pid})` : ''} already answers on ${candidate}`);
      if (found.state === 'unusable') return without(found.reason);
      if (found.state === 'none' && candidate !== primary) fs.rmSync(pointer, { force: true });
      if (found.state === 'stale') {
        logger.info(`removing the stale control socket ${candidate} (nothing listens on it)`);
        removeSocket(candidate, candidate === primary ? null : pointer);
      }
    }

    // A serve killed between binding and linking leaves its private folder: removed once nothing listens in it.
    for (const name of fs.readdirSync(dataDir).filter((n) => n.startsWith('.c-'))) {
      const leftover = path.join(dataDir, name);
      if ((await probe(path.join(leftover, 's'))).state !== 'live') fs.rmSync(leftover, { recursive: true, force: true });
    }

    const server = net.createServer();
    let created: ControlServer;
    if (fitsSocketPath(primary)) {
      // Bound in a private folder and narrowed there, then linked to its name: the name never
      // points at a socket with a wider mode, and link() fails rather than replace a socket another
      // serve has just made.
      const privateDir = fs.mkdtempSync(path.join(dataDir, '.c-'));
      const inner = path.join(privateDir, 's');
      try {
        await listen(server, inner);
        fs.chmodSync(inner, 0o600);
        fs.linkSync(inner, primary);
      } catch (err) {
        server.close();
        fs.rmSync(privateDir, { recursive: true, force: true });
        const code = (err as NodeJS.ErrnoException).code;
        return without(code === 'EEXIST' ? `another memo serve took ${primary} a moment ago` : `cannot create ${primary} (${code ?? (err as Error).message})`);
      }
      fs.rmSync(privateDir, { recursive: true, force: true });
      const ino = fs.lstatSync(primary).ino;
      created = new ControlServer(server, primary, () => {
        // Only our own socket: never one a later serve put there.
        if (fs.lstatSync(primary, { throwIfNoEntry: false })?.ino === ino) fs.rmSync(primary, { force: true });
      });
    } else {
      // The data folder's path is too long for a socket path: a private folder under the temp
      // folder holds it, and a small file in the data folder names it.
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memo-ctl-'));
      const socket = path.join(dir, 'control.sock');
      if (!fitsSocketPath(socket)) {
        fs.rmSync(dir, { recursive: true, force: true });
        return without(`both ${primary} and ${socket} are longer than a Unix socket path may be`);
      }
      let protectedDir: Disposable;
      try {
        await listen(server, socket);
        fs.chmodSync(socket, 0o600);
        writeFileAtomic(pointer, JSON.stringify({ v: CONTROL_PROTOCOL_VERSION, socket, pid: process.pid }) + '\n');
        // Outside the data folder, so it is added to the folders no tool may reach.
        protectedDir = kernel.state.add(dir, 'the control socket folder');
      } catch (err) {
        server.close();
        fs.rmSync(dir, { recursive: true, force: true });
        return without(`cannot create ${socket} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
      }
      created = new ControlServer(server, socket, () => {
        protectedDir.dispose();
        if (readPointer(pointer) === socket) fs.rmSync(pointer, { force: true });
        fs.rmSync(dir, { recursive: true, force: true });
      });
    }
    server.on('connection', (conn) => created.serve(conn, options));
    logger.info(`CLI commands on this data folder reach this server through ${created.socketPath}`);
    return created;
  }

  /**
   * Removes the socket (new CLI commands use kernels of their own from now on), cancels the calls
   * still running (their CLIs get CANCELLED), and closes every connection.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      try {
        this.removeFiles();
      } catch {
        // already gone
      }
      const stopped = new Promise<void>((resolve) => this.server.close(() => resolve()));
      for (const call of this.calls) call.abort(new Error('memo serve is stopping'));
      for (const end of [...this.watches]) end({ type: 'error', code: 'SERVER_STOPPING', message: 'memo serve is stopping' });
      // Their calls are cancelled with them; each connection then ends, and its stdio process exits.
      await Promise.all([...this.fronts].map((f) => f.close()));
      const idle = Promise.all([...this.connections].map((c) => new Promise<void>((resolve) => (c.closed ? resolve() : c.once('close', () => resolve())))));
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([idle, new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_GRACE_MS)))]);
      clearTimeout(timer);
      for (const c of this.connections) c.destroy();
      await stopped;
    })();
    return this.closing;
  }

  /** Sets what `serve.rotate-token` rotates (memo serve calls it once its endpoint listens, or says why it has none). */
  setTokenRotation(rotation: TokenRotation): void {
    this.tokens = rotation;
  }

  /** Writes the admin line `token.rotate` by `cli`, then rotates; a rotation whose line cannot be written is not made. */
  private async rotateToken(kernel: Kernel): Promise<{ value: RotatedToken } | Refusal> {
    const tokens = this.tokens;
    if ('none' in tokens) return { code: 'NO_TOKEN', message: tokens.none };
    try {
      await kernel.admin.record({ action: 'token.rotate', by: 'cli' });
    } catch (err) {
      const message = `the token was not rotated (it is unchanged): ${(err as Error)?.message ?? String(err)}`;
      return { code: isMemoError(err) && err.details?.decision === 'deny:audit-unavailable' ? 'AUDIT_UNAVAILABLE' : 'FAILED', message };
    }
    try {
      return { value: tokens.rotate() };
    } catch (err) {
      return { code: 'FAILED', message: `the token could not be rotated: ${(err as Error)?.message ?? String(err)}` };
    }
  }

  /**
   * A new one-time web console login link (`memo console link`), the MCP token untouched: the admin
   * line `console.link` by `cli` first (a link is a way into the console); NO_CONSOLE while the
   * console pack is off or memo serve's endpoint does not listen yet.
   */
  private async consoleLink(kernel: Kernel): Promise<{ value: { console: string } } | Refusal> {
    if (!kernel.http.offersLink(CONSOLE_LINK_PACK))
      return {
        code: 'NO_CONSOLE',
        message: 'memo serve serves no web console now: the console pack is disabled or did not load (memo plugins list says which)',
      };
    try {
      await kernel.admin.record({ action: 'console.link', by: 'cli' });
    } catch (err) {
      const message = `no link was made: ${(err as Error)?.message ?? String(err)}`;
      return { code: isMemoError(err) && err.details?.decision === 'deny:audit-unavailable' ? 'AUDIT_UNAVAILABLE' : 'FAILED', message };
    }
    const link = kernel.http.link(CONSOLE_LINK_PACK);
    if (!link) return { code: 'NO_CONSOLE', message: 'the console pack went off while the link was being made' };
    return { value: { console: link } };
  }

  /** The pending request `id` names: its whole id, or a prefix only one pending id starts with. */
  private pendingById(kernel: Kernel, id: unknown): { view: ApprovalView } | Refusal {
    if (typeof id !== 'string' || !id) return { code: 'BAD_REQUEST', message: 'approvals.answer needs "id": the id memo approvals list shows' };
    const pending = approvalList(kernel);
    const exact = pending.find((p) => p.id === id);
    const matches = exact ? [exact] : id.length >= MIN_ID_PREFIX ? pending.filter((p) => p.id.startsWith(id)) : [];
    if (matches.length > 1) return { code: 'AMBIGUOUS', message: `${matches.length} pending requests start with ${id}: give more of the id` };
    const view = matches[0];
    if (!view) return { code: 'NOT_PENDING', message: notPending(id) };
    // Its instance stopped beating: say so (as the console does), not that a memo tools call asked it.
    if (view.gone) return { code: 'GONE', message: goneMessage(view.instance) };
    if (!view.answerable)
      return {
        code: 'NOT_ANSWERABLE',
        message: `${view.tool} (${view.id}) was asked by a memo tools call, at its own terminal; it can be answered only there`,
      };
    return { view };
  }

  private hello(options: ControlServerOptions): ServerHello {
    const { kernel } = options;
    return {
      v: CONTROL_PROTOCOL_VERSION,
      type: 'hello',
      pid: process.pid,
      data: realDir(kernel.config.dataDir),
      root: kernel.config.root,
      packs: options.packFolders.map(realDir),
      skills: options.skillFolders.map(realDir),
    };
  }

  /** One connection, one request. */
  private serve(conn: net.Socket, options: ControlServerOptions): void {
    const { kernel } = options;
    this.connections.add(conn);
    let prompter: SocketPrompter | undefined;
    let call: AbortController | undefined;
    let requested = false;
    let unwatch: (() => void) | undefined;
    let front: McpStdioServer | undefined;
    conn.on('error', () => {
      // 'close' follows; a CLI that vanished is not the server's fault
    });
    conn.on('close', () => {
      this.connections.delete(conn);
      // A CLI that disconnects (Ctrl-C twice, killed, its terminal closed) cancels its call.
      call?.abort(new Error('the CLI went away'));
      prompter?.goneAway();
      unwatch?.();
      // An MCP client that went away (its stdio process ended): its waiting requests are withdrawn.
      void front?.close();
    });
    const send = (message: object) => {
      if (conn.writable) conn.write(line(message));
    };
    const finish = (message: Record<string, unknown>) => {
      reader.stop();
      if (conn.writable) conn.end(line(message));
      // A peer that never closes its side is cut after a while.
      conn.setTimeout(CLOSE_GRACE_MS, () => conn.destroy());
    };
    const refuse = (code: string, message: string) => finish({ type: 'error', code, message });
    const reader = new LineReader(
      MAX_REQUEST_LINE_BYTES,
      (text) => {
        if (!requested) {
          requested = true;
          conn.setTimeout(0);
          void request(text);
        } else if (prompter && call) {
          message(text);
        }
      },
      () => refuse('TOO_LARGE', `a line is longer than ${MAX_REQUEST_LINE_BYTES} bytes`),
    );

    const parse = (text: string): { request: Record<string, unknown> } | Refusal => {
      // Checked before parsing, without recursion: the kernel walks arguments recursively (validation, masking, the audit).
      const parsed = parseBoundedJson(text);
      // The parser's message quotes the input, which may hold arguments: not repeated.
      if ('error' in parsed)
        return parsed.error === 'too-deep'
          ? { code: 'TOO_DEEP', message: `the line is nested deeper than ${MAX_JSON_DEPTH} levels` }
          : { code: 'BAD_REQUEST', message: 'the line is not JSON' };
      const value = parsed.value;
      if (typeof value !== 'object' || value === null || Array.isArray(value)) return { code: 'BAD_REQUEST', message: 'the line is not a JSON object' };
      return { request: value as Record<string, unknown> };
    };

    const request = async (text: string) => {
      const parsed = parse(text);
      if (!('request' in parsed)) return refuse(parsed.code, `${parsed.message}; a request is one JSON object on one line, like {"v":1,"op":"tools.list"}`);
      const req = parsed.request;
      if (req.v !== CONTROL_PROTOCOL_VERSION)
        return refuse(
          'UNSUPPORTED_VERSION',
          `this server speaks control protocol v${CONTROL_PROTOCOL_VERSION}; the request says ${req.v === undefined ? 'no version' : `v${JSON.stringify(req.v).slice(0, 20)}`}`,
        );
      // `memo plugins disable X` then `memo tools call ...` through this server: the CLI wrote
      // data/packs.json a moment ago, and the watcher's poll may not have seen it yet. One stat of
      // the file makes the change count at once for the commands that show or use the packs.
      if (typeof req.op === 'string' && (req.op.startsWith('plugins.') || req.op.startsWith('tools.'))) kernel.packs.applySettings();
      switch (req.op) {
        case 'plugins.list':
          return finish({ type: 'result', value: packList(kernel) });
        case 'tools.list':
          return finish({ type: 'result', value: toolList(kernel) });
        case 'tools.search': {
          if (typeof req.query !== 'string') return refuse('BAD_REQUEST', 'tools.search needs "query": the words to search for');
          const mode = req.mode === 'vault' || req.mode === 'computer' || req.mode === 'web' ? req.mode : undefined;
          const limit = typeof req.limit === 'number' && Number.isInteger(req.limit) && req.limit > 0 ? req.limit : undefined;
          return finish({ type: 'result', value: toolSearchView(kernel, req.query, { ...(limit ? { limit } : {}), ...(mode ? { mode } : {}) }) });
        }
        case 'plugins.info':
          if (typeof req.id !== 'string') return refuse('BAD_REQUEST', 'plugins.info needs "id": a pack id');
          return finish({ type: 'result', value: packInfo(kernel, req.id) });
        case 'tools.call': {
          if (typeof req.tool !== 'string') return refuse('BAD_REQUEST', 'tools.call needs "tool": a tool name');
          const controller = new AbortController();
          const asker = new SocketPrompter(send);
          call = controller;
          prompter = asker;
          this.calls.add(controller);
          // Its own session: an allow-session answer covers this call's command, as it does when the CLI runs its own kernel.
          const sessionId = `${CONTROL_CALL_SESSION}${randomUUID()}`;
          const result = await kernel.invoke(
            {
              tool: req.tool,
              args: req.args,
              caller: { kind: 'cli', id: 'memo tools call', sessionId },
              signal: controller.signal,
              onProgress: (update) => send({ type: 'progress', update }),
            },
            { prompter: asker },
          );
          kernel.gate.clearSession(sessionId);
          this.calls.delete(controller);
          call = undefined;
          prompter = undefined;
          return finish({ type: 'result', value: result });
        }
        case 'approvals.list':
          return finish({ type: 'result', value: approvalList(kernel) });
        case 'approvals.watch': {
          // The pending requests now, then one line per change, until the CLI closes or the server stops.
          const listening = kernel.approvals.onChange((event) => send({ type: 'approval', ...eventView(event) }));
          const end = (last: Record<string, unknown>) => {
            unwatch?.();
            finish(last);
          };
          unwatch = () => {
            listening.dispose();
            this.watches.delete(end);
          };
          this.watches.add(end);
          return send({ type: 'approvals', pending: approvalList(kernel) });
        }
        case 'approvals.answer': {
          const found = this.pendingById(kernel, req.id);
          if ('code' in found) return refuse(found.code, found.message);
          const reply = replyOf(req, found.view);
          if ('code' in reply) return refuse(reply.code, reply.message);
          // Waiting here or, with a shared database, on another instance: exactly one answer counts.
          const answered = await kernel.approvals.answerAnywhere(found.view.id, reply.reply, 'cli');
          if (!answered.ok) return refuse(answered.code, answered.code === 'NOT_PENDING' ? notPending(String(req.id)) : answered.message);
          return finish({ type: 'result', value: { id: found.view.id, tool: found.view.tool, reply: typeof reply.reply === 'string' ? reply.reply : 'edit' } });
        }
        case 'mcp.stdio': {
          // `memo serve --stdio` started beside this server: from the `upgraded` line on, the connection carries MCP
          // (one JSON-RPC message per line, both ways), served by this kernel as an external MCP client.
          let profile;
          try {
            profile = chooseProfile(
              {
                ...(typeof req.tools === 'string' ? { tools: req.tools } : {}),
                ...(typeof req.profile === 'string' ? { profile: req.profile } : {}),
                search: req.search === true,
              },
              kernel.settings.read().mcpProfiles ?? {},
            );
          } catch (err) {
            return refuse('USAGE', (err as Error).message);
          }
          const { McpStdioServer } = await import('../mcp/mcp-stdio.js');
          if (conn.destroyed || this.closing) return void conn.destroy();
          reader.stop();
          conn.off('data', onData);
          const capability = typeof req.capability === 'string' && req.capability ? req.capability : undefined;
          const joined = new McpStdioServer(kernel, {
            stdin: conn,
            stdout: conn,
            logger: options.logger,
            ...(servesEverything(profile) ? {} : { profile }),
            ...(capability ? { capability } : {}),
          });
          front = joined;
          this.fronts.add(joined);
          void joined.closed.then(() => {
            this.fronts.delete(joined);
            if (!conn.destroyed) conn.end();
            conn.setTimeout(CLOSE_GRACE_MS, () => conn.destroy());
          });
          send({ type: 'upgraded', pid: process.pid, profile: profile.name });
          await joined.start();
          options.logger.info(`an MCP client joined over stdio through the control socket (${this.fronts.size} joined now)`);
          return;
        }
        case 'serve.rotate-token': {
          const rotated = await this.rotateToken(kernel);
          if ('code' in rotated) return refuse(rotated.code, rotated.message);
          return finish({ type: 'result', value: rotated.value });
        }
        case 'console.link': {
          const made = await this.consoleLink(kernel);
          if ('code' in made) return refuse(made.code, made.message);
          return finish({ type: 'result', value: made.value });
        }
        default:
          return refuse(
            'BAD_REQUEST',
            `unknown op ${req.op === undefined ? '(none)' : JSON.stringify(req.op).slice(0, 60)}; this server answers ${OPS.join(', ')}`,
          );
      }
    };

    const message = (text: string) => {
      const parsed = parse(text);
      // Mid-call lines are answers and cancellations; anything else is ignored rather than ending the call.
      if (!('request' in parsed) || parsed.request.v !== CONTROL_PROTOCOL_VERSION) return;
      const msg = parsed.request;
      if (msg.type === 'cancel') call?.abort(new Error('cancelled at the CLI'));
      else if (msg.type === 'answer') prompter?.answer(msg.id, msg.answer, msg.refused);
    };

    const onData = (d: Buffer) => reader.push(d);
    conn.on('data', onData);
    conn.setTimeout(REQUEST_WAIT_MS, () => refuse('TIMEOUT', `no request arrived within ${REQUEST_WAIT_MS / 1000} s`));
    if (this.closing) return void conn.destroy();
    send(this.hello(options));
  }
}

type Refusal = { code: string; message: string };

function notPending(id: string): string {
  return `no request ${JSON.stringify(id.slice(0, 80))} is waiting for an answer (it was answered, expired or cancelled, or never existed; see memo approvals list)`;
}

function isEdit(value: unknown): value is { edit: Record<string, unknown> } {
  const edit = (value as { edit?: unknown } | null)?.edit;
  return typeof value === 'object' && value !== null && typeof edit === 'object' && edit !== null && !Array.isArray(edit);
}

/** What an `approvals.answer` request replies to `view`, or why it cannot: an answer the request offers, or an edit of a tool that takes edits. */
function replyOf(req: Record<string, unknown>, view: ApprovalView): { reply: ApprovalReply } | Refusal {
  if (req.edit !== undefined) {
    if (req.answer !== undefined) return { code: 'BAD_REQUEST', message: 'approvals.answer takes "answer" or "edit", not both' };
    if (!isEdit({ edit: req.edit })) return { code: 'BAD_REQUEST', message: '"edit" must be a JSON object: the arguments as edited' };
    if (!view.editable)
      return { code: 'NOT_EDITABLE', message: `${view.tool} does not accept edited arguments; answer with one of ${view.answers.join(', ')}` };
    return { reply: { edit: req.edit as Record<string, unknown> } };
  }
  if (!isPermissionAnswer(req.answer)) return { code: 'BAD_REQUEST', message: 'approvals.answer needs "answer" (allow-once, deny-once, ...) or "edit"' };
  const answer = req.answer;
  const offered = view.answers.some((a) => a === answer || (a === 'allow-minutes:N' && answer.startsWith('allow-minutes:')));
  // An answer the request does not offer would be taken as something narrower (a delete's allow-forever as allow-once): refused, not reinterpreted.
  if (!offered) return { code: 'ANSWER_NOT_OFFERED', message: `${answer} does not apply to this ${view.tool} request; it takes ${view.answers.join(', ')}` };
  return { reply: answer };
}

/** A broker event as the watch stream carries it: a settled edit says `edit`, never the edited arguments (they are not masked). */
function eventView(event: ApprovalEvent): Record<string, unknown> {
  if (event.kind === 'asked') return { event: 'asked', approval: approvalView(event.approval) };
  if (event.outcome === 'answered')
    return { event: 'settled', id: event.id, outcome: 'answered', by: event.by, reply: typeof event.reply === 'string' ? event.reply : 'edit' };
  return { event: 'settled', id: event.id, outcome: event.outcome, ...(event.reason ? { reason: event.reason } : {}) };
}

/** The socket a pointer file names, or null (no file, or not one of ours). */
function readPointer(pointer: string): string | null {
  try {
    const parsed = JSON.parse(fs.readFileSync(pointer, 'utf8')) as { socket?: unknown };
    return typeof parsed.socket === 'string' && path.isAbsolute(parsed.socket) ? parsed.socket : null;
  } catch {
    return null;
  }
}

/** Removes a stale socket; one under the temp folder takes its private folder and the pointer file with it. */
function removeSocket(socket: string, pointer: string | null): void {
  fs.rmSync(socket, { force: true });
  if (pointer === null) return;
  fs.rmSync(pointer, { force: true });
  const dir = path.dirname(socket);
  // Only a folder this server kind makes: memo-ctl-* right under the temp folder.
  if (path.dirname(dir) === os.tmpdir() && path.basename(dir).startsWith('memo-ctl-')) fs.rmSync(dir, { recursive: true, force: true });
}
