/**
 * `serve.rotate-token` on the control socket, in one process: a real kernel and audit trail, a real
 * Unix socket, the CLI's client module, and a stand-in for memo serve's endpoint (what it rotates).
 * The admin line goes first; a rotation whose line cannot be written is refused and not made. The
 * whole-process path (bin/memo against memo serve) is test/e2e/rotate-token.test.ts.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createRequire } from 'node:module';
import { AuditLog } from '../../../kernel/audit/audit-log.js';
import { ControlFailure, reachServer } from '../../../kernel/control/control-client.js';
import { ControlServer, type RotatedToken } from '../../../kernel/control/control-server.js';
import { atTeardown } from '../../helpers/cleanup.js';
import { makeKernel, type Fixture } from '../../helpers/kernel-fixture.js';

const fsExt = createRequire(import.meta.url)('fs-ext') as { flockSync(this: void, fd: number, flags: 'ex' | 'un'): void };
const flock = fsExt.flockSync;

interface Running {
  fx: Fixture;
  server: ControlServer;
  /** The tokens the stand-in endpoint handed out, in order. */
  rotations: RotatedToken[];
}

/** A kernel whose file trail gives up on its lock after 200 ms (the default waits 10 s), and its control socket. */
async function running(): Promise<Running> {
  const fx = makeKernel({
    services: {
      auditSink: (config) => {
        const log = new AuditLog(path.join(config.dataDir, 'agent-audit.jsonl'), { lockTimeoutMs: 200 });
        log.open();
        return log;
      },
    },
  });
  const server = await ControlServer.start({ kernel: fx.kernel, packFolders: [], skillFolders: [], logger: fx.logger });
  if (!server) throw new Error(`no control server: ${JSON.stringify(fx.logger.lines)}`);
  atTeardown(() => server.close());
  return { fx, server, rotations: [] };
}

function endpoint(r: Running): void {
  r.server.setTokenRotation({
    rotate: () => {
      const next = {
        url: 'http://127.0.0.1:1/mcp',
        token: `token-${r.rotations.length + 1}`,
        console: `http://127.0.0.1:1/ui/login?code=${r.rotations.length + 1}`,
      };
      r.rotations.push(next);
      return next;
    },
  });
}

async function rotate(r: Running): Promise<unknown> {
  const reach = await reachServer({ dataDir: r.fx.dataDir });
  if (!reach || !('server' in reach)) throw new Error(`not reached: ${JSON.stringify(reach)}`);
  return reach.server.request('serve.rotate-token').catch((err: unknown) => err);
}

function adminLines(r: Running): Array<Record<string, unknown>> {
  return fs
    .readFileSync(path.join(r.fx.dataDir, 'agent-audit.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((e) => e.event === 'admin');
}

describe('serve.rotate-token on the control socket', () => {
  it('writes the admin line token.rotate by cli, then rotates, and answers the new token and console link', async () => {
    const r = await running();
    endpoint(r);
    expect(await rotate(r)).toEqual({ url: 'http://127.0.0.1:1/mcp', token: 'token-1', console: 'http://127.0.0.1:1/ui/login?code=1' });
    expect(adminLines(r)).toEqual([expect.objectContaining({ event: 'admin', action: 'token.rotate', by: 'cli', pid: process.pid })]);
    expect(JSON.stringify(adminLines(r))).not.toContain('token-1');
  });

  it('refuses with AUDIT_UNAVAILABLE and leaves the token as it was when the admin line cannot be written', async () => {
    const r = await running();
    endpoint(r);
    // Another holder of the trail's lock that does not let go: the line cannot be written.
    const fd = fs.openSync(path.join(r.fx.dataDir, 'agent-audit.lock'), 'a');
    flock(fd, 'ex');
    let failure: unknown;
    try {
      failure = await rotate(r);
    } finally {
      flock(fd, 'un');
      fs.closeSync(fd);
    }
    expect(failure).toBeInstanceOf(ControlFailure);
    expect(failure).toMatchObject({
      code: 'AUDIT_UNAVAILABLE',
      message: expect.stringMatching(
        /^the token was not rotated \(it is unchanged\): token\.rotate was not done: its audit line could not be written \(.*locked/,
      ),
    });
    expect(r.rotations).toEqual([]);
    expect(adminLines(r)).toEqual([]);
    // Once the trail can be written again, the next rotation goes through, on the record.
    expect(await rotate(r)).toMatchObject({ token: 'token-1' });
    expect(adminLines(r)).toEqual([expect.objectContaining({ action: 'token.rotate', by: 'cli' })]);
  });

  it('refuses with NO_TOKEN, writing nothing, when memo serve has no endpoint to rotate (stdio)', async () => {
    const r = await running();
    expect(await rotate(r)).toMatchObject({ code: 'NO_TOKEN', message: `this memo serve (pid ${process.pid}) has no MCP endpoint yet` });
    r.server.setTokenRotation({ none: 'this memo serve serves MCP over stdio, which has no token to rotate' });
    expect(await rotate(r)).toMatchObject({ code: 'NO_TOKEN', message: 'this memo serve serves MCP over stdio, which has no token to rotate' });
    expect(adminLines(r)).toEqual([]);
  });
});
