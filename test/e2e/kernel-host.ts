import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import * as path from 'node:path';
import { killWhenDone } from '../helpers/cleanup.js';
import { WAIT_DEADLINE_MS } from '../helpers/wait.js';

/** Drives test/e2e/harness/kernel-host.mjs: a real host process around the compiled kernel. */
export class KernelHost {
  private buf = '';
  private seq = 0;
  readonly events: Array<{ event: string; pack: string; tools: string[] }> = [];
  private waiters: Array<{ test: (m: any) => boolean; resolve: (m: any) => void; reject: (e: Error) => void }> = [];
  private stderr = '';
  private constructor(private readonly child: ChildProcessWithoutNullStreams) {
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (d: string) => (this.stderr += d));
    // A host that dies fails every wait at once, with what it printed.
    child.once('close', (code, signal) => {
      for (const w of this.waiters.splice(0)) w.reject(new Error(`the kernel host exited (${code ?? signal}): ${this.stderr}`));
    });
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d: string) => {
      this.buf += d;
      let nl: number;
      while ((nl = this.buf.indexOf('\n')) >= 0) {
        const line = this.buf.slice(0, nl);
        this.buf = this.buf.slice(nl + 1);
        const msg = JSON.parse(line);
        if (msg.event) this.events.push(msg);
        for (const w of [...this.waiters])
          if (w.test(msg)) {
            this.waiters.splice(this.waiters.indexOf(w), 1);
            w.resolve(msg);
          }
      }
    });
  }

  static async start(root: string, data: string, packs: string, skills?: string): Promise<KernelHost> {
    const child = killWhenDone(
      spawn(process.execPath, [path.resolve('test/e2e/harness/kernel-host.mjs'), root, data, packs, ...(skills ? [skills] : [])], {
        stdio: ['pipe', 'pipe', 'pipe'],
      }),
    );
    const host = new KernelHost(child);
    await host.waitFor((m) => m.ready === true);
    return host;
  }

  /** Resolves with the first message (reply or event) that passes `test`; the deadline only bounds a failure. */
  waitFor(test: (m: any) => boolean, timeoutMs = WAIT_DEADLINE_MS): Promise<any> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting; events so far: ${JSON.stringify(this.events)}; stderr: ${this.stderr}`)), timeoutMs);
      this.waiters.push({
        test,
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
    });
  }

  /** Waits for the n-th registry event (1-based) overall. */
  async event(n: number): Promise<{ event: string; pack: string; tools: string[] }> {
    const nth = (): { event: string; pack: string; tools: string[] } => {
      const e = this.events[n - 1];
      if (e === undefined) throw new Error(`no registry event #${n}`);
      return e;
    };
    if (this.events.length >= n) return nth();
    return this.waitFor(() => this.events.length >= n).then(nth);
  }

  async request(op: string, extra: Record<string, unknown> = {}): Promise<any> {
    const id = ++this.seq;
    const reply = this.waitFor((m) => m.re === id);
    this.child.stdin.write(JSON.stringify({ op, id, ...extra }) + '\n');
    return reply;
  }

  async call(tool: string, args: Record<string, unknown> = {}): Promise<any> {
    return (await this.request('call', { tool, args })).result;
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((r) => this.child.once('exit', r));
    this.child.stdin.end();
    await exited;
  }
}
