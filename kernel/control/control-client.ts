/**
 * The CLI's side of the control socket: finds the `memo serve` running on the data folder, checks it
 * serves what the command would load (same data folder, pack and skill folders, and for a call the
 * same sandbox root), and sends it one request. Anything short of a proper answer is reported as a
 * reason, so the command can say why it did not go through the server and use a kernel of its own.
 */
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import type { PermissionRequest, Prompter } from '../permissions/prompter.js';
import type { ProgressUpdate } from '../tools/contract.js';
import {
  CONTROL_PROTOCOL_VERSION,
  fitsSocketPath,
  line,
  LineReader,
  MAX_REQUEST_LINE_BYTES,
  MAX_RESPONSE_LINE_BYTES,
  pointerFileIn,
  realDir,
  socketPathIn,
  type ServerHello,
} from './control-protocol.js';

/** How long a server gets to say hello before the CLI gives up on it. */
const HELLO_WAIT_MS = 10_000;

/** What the command would load on its own: the server must serve the same, or going through it changes the command's meaning. */
export interface ServerExpectation {
  dataDir: string;
  /** Omitted by commands whose meaning does not depend on the loaded packs and skills (approvals: whatever the server loaded is what waits). */
  packs?: string[];
  skills?: string[];
  /** For commands whose meaning depends on the sandbox root (tools call). */
  root?: string;
}

/** A server answered and serves what the command expects; or why the command does not go through it. Null: no server on this data folder. */
export type ServerReach = { server: ControlConnection } | { skipped: string } | null;

/** A request the server refused (code from the protocol), or a connection that broke (`DISCONNECTED`). */
export class ControlFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface CallEvents {
  /** Answers the call's permission prompts, here at the CLI. */
  prompter: Prompter;
  onProgress?: (update: ProgressUpdate) => void;
}

/** Where this data folder's server listens, or null when no socket file is there. */
function socketOf(dataDir: string): { socket: string; viaPointer: boolean } | null {
  const primary = socketPathIn(dataDir);
  if (fitsSocketPath(primary)) return fs.existsSync(primary) ? { socket: primary, viaPointer: false } : null;
  let text: string;
  try {
    text = fs.readFileSync(pointerFileIn(dataDir), 'utf8');
  } catch {
    return null;
  }
  try {
    const socket = (JSON.parse(text) as { socket?: unknown }).socket;
    if (typeof socket === 'string' && path.isAbsolute(socket) && fitsSocketPath(socket)) return { socket, viaPointer: true };
  } catch {
    // reported below
  }
  return { socket: pointerFileIn(dataDir), viaPointer: true };
}

/** Refuses a socket (and, under the temp folder, its folder) that another user could have put there or could reach. */
function ownershipProblem(socket: string, viaPointer: boolean): string | null {
  const st = fs.lstatSync(socket, { throwIfNoEntry: false });
  if (!st) return `${socket} is gone`;
  if (!st.isSocket()) return `${socket} is not a socket`;
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid) return `${socket} belongs to another user (uid ${st.uid})`;
  if (viaPointer) {
    const dir = fs.statSync(path.dirname(socket));
    if ((uid !== undefined && dir.uid !== uid) || (dir.mode & 0o077) !== 0) return `${path.dirname(socket)} is not a private folder of this user`;
  }
  return null;
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** Why the server's hello rules it out for this command (a phrase after "the running server (pid N)"), or null. */
function mismatch(hello: ServerHello, expect: ServerExpectation): string | null {
  if (hello.data !== realDir(expect.dataDir)) return `serves another data folder (${hello.data})`;
  if (expect.packs && !sameList(hello.packs, expect.packs.map(realDir)))
    return `loads packs from ${hello.packs.join(', ')} (pass the same --packs, or --no-server)`;
  if (expect.skills && !sameList(hello.skills, expect.skills.map(realDir)))
    return `loads skills from ${hello.skills.join(', ')} (pass the same --skills, or --no-server)`;
  if (expect.root !== undefined && hello.root !== realDir(expect.root))
    return `has the sandbox root ${hello.root}, and this command ${realDir(expect.root)} (pass --root ${hello.root}, or --no-server)`;
  return null;
}

/**
 * Connects to the server on `expect.dataDir` and reads its hello. Null when there is no socket file;
 * a reason when there is one but it does not lead to a server this command can use.
 */
export async function reachServer(expect: ServerExpectation): Promise<ServerReach> {
  if (process.platform === 'win32') return null;
  const found = socketOf(expect.dataDir);
  if (!found) return null;
  const { socket, viaPointer } = found;
  if (viaPointer && socket === pointerFileIn(expect.dataDir)) return { skipped: `${socket} does not name a usable socket` };
  const problem = ownershipProblem(socket, viaPointer);
  if (problem) return { skipped: problem };

  const conn = net.connect(socket);
  const hello = await new Promise<ServerHello | string>((resolve) => {
    const done = (v: ServerHello | string) => {
      clearTimeout(timer);
      conn.off('data', onData);
      conn.off('error', onError);
      conn.off('close', onClose);
      resolve(v);
    };
    const timer = setTimeout(() => done(`the server on ${socket} did not answer within ${HELLO_WAIT_MS / 1000} s`), HELLO_WAIT_MS);
    const reader = new LineReader(
      MAX_RESPONSE_LINE_BYTES,
      (text) => {
        let msg: Partial<ServerHello>;
        try {
          msg = JSON.parse(text) as Partial<ServerHello>;
        } catch {
          return done(`${socket} does not speak the Memo control protocol`);
        }
        if (msg.type !== 'hello' || typeof msg.pid !== 'number') return done(`${socket} does not speak the Memo control protocol`);
        if (msg.v !== CONTROL_PROTOCOL_VERSION)
          return done(`the server (pid ${msg.pid}) speaks control protocol v${String(msg.v)}, this CLI speaks v${CONTROL_PROTOCOL_VERSION}`);
        done(msg as ServerHello);
      },
      () => done(`${socket} sent a line too long to read`),
    );
    const onData = (d: Buffer) => reader.push(d);
    const onError = (err: NodeJS.ErrnoException) =>
      done(
        err.code === 'ECONNREFUSED'
          ? `${socket} is stale: nothing listens on it (memo serve stopped without removing it; the next memo serve removes it)`
          : `cannot connect to ${socket} (${err.code ?? err.message})`,
      );
    const onClose = () => done(`the server on ${socket} closed the connection before saying hello`);
    conn.on('data', onData);
    conn.on('error', onError);
    conn.on('close', onClose);
  });
  // Nothing more comes before the request; paused so no byte is lost between the two readers.
  conn.pause();
  if (typeof hello === 'string') {
    conn.destroy();
    return { skipped: hello };
  }
  const why = mismatch(hello, expect);
  if (why) {
    conn.destroy();
    return { skipped: `the running server (pid ${hello.pid}) ${why}` };
  }
  return { server: new ControlConnection(conn, hello.pid) };
}

/** One connection to a server that said hello; carries one request. */
export class ControlConnection {
  private prompts = new Map<string, AbortController>();

  constructor(
    private readonly conn: net.Socket,
    readonly pid: number,
  ) {}

  /** Sends one request; resolves with the result's value, rejects with a ControlFailure. */
  request(op: string, fields: Record<string, unknown> = {}, events?: CallEvents): Promise<unknown> {
    const conn = this.conn;
    return new Promise<unknown>((resolve, reject) => {
      let settled = false;
      const done = (fn: () => void) => {
        if (settled) return;
        settled = true;
        for (const p of this.prompts.values()) p.abort();
        this.prompts.clear();
        conn.destroy();
        fn();
      };
      const onMessage = (text: string) => {
        let msg: Record<string, unknown>;
        try {
          msg = JSON.parse(text) as Record<string, unknown>;
        } catch {
          return done(() => reject(new ControlFailure('DISCONNECTED', 'the server sent a line that is not JSON')));
        }
        switch (msg.type) {
          case 'result':
            return done(() => resolve(msg.value));
          case 'error':
            return done(() => reject(new ControlFailure(String(msg.code), String(msg.message))));
          case 'progress':
            events?.onProgress?.(msg.update as ProgressUpdate);
            return;
          case 'prompt':
            if (events && typeof msg.id === 'string') this.answer(msg.id, msg.request as PermissionRequest, events.prompter);
            return;
          case 'withdrawn':
            if (typeof msg.id === 'string') this.prompts.get(msg.id)?.abort();
            return;
          default:
            return;
        }
      };
      const reader = new LineReader(MAX_RESPONSE_LINE_BYTES, onMessage, () =>
        done(() => reject(new ControlFailure('DISCONNECTED', 'the server sent a line too long to read'))),
      );
      conn.on('data', (d: Buffer) => reader.push(d));
      conn.on('error', () => {
        // 'close' follows
      });
      conn.on('close', () =>
        done(() => reject(new ControlFailure('DISCONNECTED', `the connection to the server (pid ${this.pid}) closed before it answered`))),
      );
      conn.write(line({ op, ...fields }));
      conn.resume();
    });
  }

  /**
   * Sends a request whose answer is a stream (`approvals.watch`): every line but the hello goes to
   * `onMessage` until the server ends it (resolves with its last line: an `error` or a `result`) or
   * the connection closes (rejects with DISCONNECTED). `close()` ends it from this side.
   */
  stream(op: string, onMessage: (message: Record<string, unknown>) => void): Promise<Record<string, unknown>> {
    const conn = this.conn;
    return new Promise((resolve, reject) => {
      let settled = false;
      const done = (fn: () => void) => {
        if (settled) return;
        settled = true;
        conn.destroy();
        fn();
      };
      const reader = new LineReader(
        MAX_RESPONSE_LINE_BYTES,
        (text) => {
          let msg: Record<string, unknown>;
          try {
            msg = JSON.parse(text) as Record<string, unknown>;
          } catch {
            return done(() => reject(new ControlFailure('DISCONNECTED', 'the server sent a line that is not JSON')));
          }
          if (msg.type === 'result' || msg.type === 'error') return done(() => resolve(msg));
          onMessage(msg);
        },
        () => done(() => reject(new ControlFailure('DISCONNECTED', 'the server sent a line too long to read'))),
      );
      conn.on('data', (d: Buffer) => reader.push(d));
      conn.on('error', () => {
        // 'close' follows
      });
      conn.on('close', () => done(() => reject(new ControlFailure('DISCONNECTED', `the connection to the server (pid ${this.pid}) closed`))));
      conn.write(line({ op }));
      conn.resume();
    });
  }

  /**
   * Hands the connection over to another protocol (`mcp.stdio`): sends the request and resolves,
   * once the server says `{"type":"upgraded"}`, with the socket itself, paused, whatever came after
   * that line put back to be read first. Rejects with a ControlFailure (the server's refusal, or
   * DISCONNECTED).
   */
  upgrade(op: string, fields: Record<string, unknown> = {}): Promise<net.Socket> {
    const conn = this.conn;
    return new Promise<net.Socket>((resolve, reject) => {
      let buffered = Buffer.alloc(0);
      const finish = (fn: () => void) => {
        conn.off('data', onData);
        conn.off('close', onClose);
        fn();
      };
      const onClose = () =>
        finish(() => reject(new ControlFailure('DISCONNECTED', `the connection to the server (pid ${this.pid}) closed before it answered`)));
      const onData = (d: Buffer) => {
        buffered = Buffer.concat([buffered, d]);
        const nl = buffered.indexOf(10);
        if (nl < 0) {
          if (buffered.length > MAX_REQUEST_LINE_BYTES)
            finish(() => (conn.destroy(), reject(new ControlFailure('DISCONNECTED', 'the server sent a line too long to read'))));
          return;
        }
        let msg: Record<string, unknown> = {};
        try {
          msg = JSON.parse(buffered.subarray(0, nl).toString('utf8')) as Record<string, unknown>;
        } catch {
          // reported below
        }
        const rest = buffered.subarray(nl + 1);
        finish(() => {
          if (msg.type === 'upgraded') {
            conn.pause();
            if (rest.length) conn.unshift(rest);
            return resolve(conn);
          }
          conn.destroy();
          if (msg.type === 'error') return reject(new ControlFailure(String(msg.code), String(msg.message)));
          reject(new ControlFailure('DISCONNECTED', 'the server answered with something other than an upgrade'));
        });
      };
      conn.on('error', () => {
        // 'close' follows
      });
      conn.on('data', onData);
      conn.on('close', onClose);
      conn.write(line({ op, ...fields }));
      conn.resume();
    });
  }

  /** Asks the server to cancel the running call (its result still arrives: CANCELLED). */
  cancel(): void {
    if (this.conn.writable) this.conn.write(line({ type: 'cancel' }));
  }

  /** Drops a connection whose request will not be sent. */
  close(): void {
    this.conn.destroy();
  }

  private answer(id: string, request: PermissionRequest, prompter: Prompter): void {
    const controller = new AbortController();
    this.prompts.set(id, controller);
    const reply = (message: Record<string, unknown>) => {
      this.prompts.delete(id);
      if (!controller.signal.aborted && this.conn.writable) this.conn.write(line({ type: 'answer', id, ...message }));
    };
    prompter.ask(request, controller.signal).then(
      (answer) => reply({ answer }),
      (err: unknown) => reply({ refused: (err as Error)?.message ?? String(err) }),
    );
  }
}
