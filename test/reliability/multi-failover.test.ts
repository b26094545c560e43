/**
 * Two `memo serve` instances behind HAProxy, started by scripts/cluster.mjs with its own PostgreSQL
 * (the deployment the README shows): one bearer token for both, stateless calls spread over both, a
 * 2025-11-25 session kept on its instance, kill -9 of an instance under load (the other keeps
 * serving, the restarted one takes calls again), and `status`/`stop` as a person runs them.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { requireFreshBuild } from '../helpers/dist.js';
import { waitFor } from '../helpers/wait.js';
import { rawInitialize } from '../mcp/mcp-helpers.js';
import { Cluster, commandLinesHolding, processTree, recordingFetch, run } from './harness/cluster.js';

let cluster: Cluster;
let token: string;

beforeAll(async () => {
  requireFreshBuild();
  // No rate limits: this file is about which instance answers, not about budgets.
  cluster = await Cluster.start({ instances: 2, serveArgs: ['--rate-limit', 'off'] });
  token = cluster.info.token;
}, 300_000);

const headers = () => ({ Authorization: `Bearer ${token}` });

async function statelessClient(name: string) {
  const rec = recordingFetch();
  const client = new Client({ name, version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(cluster.info.url), { fetch: rec.fetch, requestInit: { headers: headers() } }));
  return { client, rec };
}

async function sessionClient(name: string) {
  const rec = recordingFetch();
  const client = new V1Client({ name, version: '1.0.0' });
  const transport = new V1Transport(new URL(cluster.info.url), { fetch: rec.fetch, requestInit: { headers: headers() } });
  await client.connect(transport);
  return { client, transport, rec };
}

/** A process that ended is gone from /proc, or a zombie (state Z) waiting for its parent. */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

const listTasks = (n: number) => ({ name: 'vault_list_tasks', arguments: { limit: (n % 50) + 1 } });

describe('two memo serve instances behind HAProxy (scripts/cluster.mjs, its own PostgreSQL)', () => {
  it("keep the generated database password in D/pg-password (0600) and off every started process's command line", () => {
    const file = path.join(cluster.info.dir, 'pg-password');
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const password = fs.readFileSync(file, 'utf8').trim();
    expect(password.length).toBeGreaterThanOrEqual(24);
    const tree = processTree(cluster.child.pid!);
    for (const pid of [...cluster.pids(), cluster.info.proxy.pid]) expect(tree).toContain(pid);
    expect(commandLinesHolding(password)).toEqual([]);
  });

  it('accept the one token on every instance and at the proxy; rotate-token replaces it on all of them at once', async () => {
    // The keys every instance must share are the same file in every data folder (private to its owner).
    for (const name of ['agent.key', 'kernel.key', 'audit.key']) {
      const copies = cluster.info.instances.map((i) => fs.readFileSync(path.join(i.data, name), 'utf8'));
      expect(new Set(copies).size).toBe(1);
      for (const i of cluster.info.instances) expect(fs.statSync(path.join(i.data, name)).mode & 0o077).toBe(0);
    }
    const direct = cluster.info.instances.map((i) => `http://127.0.0.1:${i.port}/mcp`);
    for (const url of [...direct, cluster.info.url]) {
      expect((await rawInitialize(url, headers())).status).toBe(200);
      expect((await rawInitialize(url, { Authorization: 'Bearer not-the-token' })).status).toBe(401);
    }
    const old = token;
    const rotated = await run(['rotate-token', '--dir', cluster.info.dir]);
    expect(rotated.code).toBe(0);
    token = fs.readFileSync(cluster.info.tokenFile, 'utf8').trim();
    expect(token).not.toBe(old);
    // Each instance re-reads the file on SIGHUP: wait until both refuse the old token.
    for (const url of direct)
      await waitFor(async () => (await rawInitialize(url, { Authorization: `Bearer ${old}` })).status === 401, { what: `${url} to refuse the old token` });
    for (const url of [...direct, cluster.info.url]) expect((await rawInitialize(url, headers())).status).toBe(200);
  });

  it('spread stateless calls over both instances and keep a 2025-11-25 session on the instance that opened it', async () => {
    const { client, rec } = await statelessClient('spread');
    const served: string[] = [];
    for (let n = 0; n < 8; n++) {
      const r = await client.callTool(listTasks(n));
      expect(r.isError).toBeFalsy();
      served.push(rec.last()!.instance!);
    }
    await client.close();
    expect(new Set(served)).toEqual(new Set(['memo-1', 'memo-2']));

    const s = await sessionClient('sticky');
    for (let n = 0; n < 6; n++) expect((await s.client.callTool(listTasks(n))).isError).toBeFalsy();
    const instances = new Set(s.rec.all.map((a) => a.instance));
    expect(instances.size).toBe(1);
    expect(s.transport.sessionId).toBeDefined();
    await s.transport.terminateSession();
    await s.client.close();
  });

  it('answer a 2025-11-25 session whose instance was killed with 404, the signal to initialise again, and serve the new session', async () => {
    // A 2025-11-25 session on memo-1 (sessions open round-robin: a few tries at most).
    let session: Awaited<ReturnType<typeof sessionClient>> | undefined;
    for (let tries = 0; tries < 6 && !session; tries++) {
      const s = await sessionClient(`session-${tries}`);
      if (s.rec.last()?.instance === 'memo-1') session = s;
      else await s.client.close();
    }
    expect(session).toBeDefined();
    const victimPid = cluster.state().instances.find((i) => i.name === 'memo-1')!.pid;

    // A pid of 0 would signal this whole process group.
    expect(victimPid).toBeGreaterThan(1);
    process.kill(victimPid, 'SIGKILL');
    await waitFor(() => !alive(victimPid), { what: 'memo-1 to be gone', intervalMs: 5 });
    // The proxy closes the client connections that carried memo-1's answers (the session's event
    // stream among them); the client's pool hands a closed one to the next request for a moment
    // ("fetch failed"). Once the proxy has taken memo-1 out (or it is back), the session's next
    // request is answered 404, by the other instance or by memo-1 started again: the signal to
    // initialise again, never a hang.
    await waitFor(
      async () => {
        const { status } = await cluster.status();
        const m1 = status.instances.find((i) => i.name === 'memo-1')!;
        return m1.proxy === 'down' || (m1.pid !== 0 && m1.pid !== victimPid);
      },
      { what: 'the proxy to take memo-1 out, or memo-1 to be back', intervalMs: 100 },
    );
    const lost = await session!.client.callTool(listTasks(7), undefined, { timeout: 130_000 }).then(
      () => null,
      (err: unknown) => err as { code?: number; message: string },
    );
    expect(lost).toMatchObject({ code: 404 });
    expect(lost!.message).toMatch(/Session not found.*Initialize a new session/);
    await session!.client.close();
    const again = await sessionClient('session-again');
    expect((await again.client.callTool(listTasks(8))).isError).toBeFalsy();
    await again.client.close();
    await waitFor(
      async () => {
        const pid = cluster.state().instances.find((i) => i.name === 'memo-1')!.pid;
        return pid !== 0 && pid !== victimPid && (await cluster.status()).code === 0;
      },
      { what: 'memo-1 to be started again and healthy', timeoutMs: 180_000, intervalMs: 250 },
    );
  }, 300_000);

  it('keeps serving through the other instance when one is killed with SIGKILL, and sends calls to the restarted one once it is back', async () => {
    const victim = cluster.info.instances.find((i) => i.name === 'memo-1')!;
    const victimPid = cluster.state().instances.find((i) => i.name === 'memo-1')!.pid;
    interface Call {
      sent: number;
      done: number;
      ok: boolean;
      instance: string | null;
      detail?: string;
    }
    const calls: Call[] = [];
    let running = true;
    const clients = await Promise.all(Array.from({ length: 8 }, (_, i) => statelessClient(`failover-${i}`)));
    const load = Promise.all(
      clients.map(async ({ client, rec }, i) => {
        for (let n = i * 1000; running; n++) {
          const sent = performance.now();
          try {
            const r = await client.callTool(listTasks(n), { timeout: 130_000 });
            const text = (r.content as Array<{ text?: string }>)[0]?.text ?? '';
            calls.push({
              sent,
              done: performance.now(),
              ok: !r.isError,
              instance: rec.last()?.instance ?? null,
              ...(r.isError ? { detail: text.slice(0, 200) } : {}),
            });
          } catch (err) {
            calls.push({
              sent,
              done: performance.now(),
              ok: false,
              instance: rec.last()?.instance ?? null,
              detail: String((err as Error).message).slice(0, 200),
            });
          }
          await new Promise((r) => setTimeout(r, 20));
        }
      }),
    );
    try {
      await waitFor(() => calls.filter((c) => c.ok && c.instance === 'memo-1').length >= 5, { what: 'memo-1 to serve calls before the kill' });
      expect(victimPid).toBeGreaterThan(1);
      process.kill(victimPid, 'SIGKILL');
      // SIGKILL takes effect a moment later: until then the instance still accepts connections, and
      // a call sent then is in flight when it dies. "After the kill" starts once it is gone.
      await waitFor(() => !alive(victimPid), { what: 'memo-1 to be gone', intervalMs: 5 });
      const killedAt = performance.now();
      // The proxy closes the client connections that carried memo-1's answers, and a client's pool may
      // hand one of them to a new call in that moment ("fetch failed"): settled once the proxy has
      // taken memo-1 out (or it is back).
      await waitFor(
        async () => {
          const m1 = (await cluster.status()).status.instances.find((i) => i.name === 'memo-1')!;
          return m1.proxy === 'down' || (m1.pid !== 0 && m1.pid !== victimPid);
        },
        { what: 'the proxy to take memo-1 out, or memo-1 to be back', intervalMs: 100 },
      );
      const settledAt = performance.now();

      // The supervisor starts memo-1 again on its port; the proxy's health check takes it back.
      await waitFor(
        async () => {
          const pid = cluster.state().instances.find((i) => i.name === 'memo-1')!.pid;
          const { code } = await cluster.status();
          return pid !== 0 && pid !== victimPid && code === 0;
        },
        { what: 'memo-1 to be started again and healthy', timeoutMs: 180_000, intervalMs: 250 },
      );
      const backAt = performance.now();
      await waitFor(() => calls.some((c) => c.ok && c.instance === 'memo-1' && c.sent > backAt), {
        what: 'the restarted memo-1 to serve calls through the proxy',
        timeoutMs: 60_000,
      });
      running = false;
      await load;

      const during = calls.filter((c) => c.sent > killedAt && c.sent < backAt);
      const errors = calls.filter((c) => !c.ok);
      console.log(
        `failover: ${calls.length} calls, ${errors.length} failed (${errors.filter((c) => c.sent < killedAt).length} in flight on memo-1 when it was killed, the others sent before the proxy took it out, ${((settledAt - killedAt) / 1000).toFixed(1)} s), ` +
          `${during.length} sent while memo-1 was down or starting (${during.filter((c) => c.ok).length} answered, by ${[...new Set(during.filter((c) => c.ok).map((c) => c.instance))].join(', ')}), ` +
          `memo-1 back after ${((backAt - killedAt) / 1000).toFixed(1)} s${errors[0] ? `; the failure: ${errors[0].detail}` : ''}`,
      );
      // The other instance kept serving while memo-1 was gone.
      expect(during.filter((c) => c.ok && c.instance === 'memo-2').length).toBeGreaterThan(0);
      // Only calls around the death failed: in flight on memo-1, or handed a connection the proxy was
      // closing (a refused connection is tried on the other instance; a call is never sent twice).
      // None sent once the proxy had taken memo-1 out, and at most two per client.
      expect(errors.filter((c) => c.sent > settledAt)).toEqual([]);
      expect(errors.length).toBeLessThanOrEqual(2 * clients.length);
      expect(victim.port).toBe(cluster.state().instances.find((i) => i.name === 'memo-1')!.port);
    } finally {
      running = false;
      await load;
      await Promise.all(clients.map((c) => c.client.close().catch(() => {})));
    }
  }, 400_000);

  it('status reports every part healthy, and stop ends the instances, HAProxy and its own PostgreSQL', async () => {
    const { code, status } = await cluster.status();
    expect(code).toBe(0);
    expect(status).toMatchObject({ running: true, proxyHealthy: true });
    expect(status.instances.map((i) => [i.name, i.healthy, i.proxy])).toEqual([
      ['memo-1', true, 'up'],
      ['memo-2', true, 'up'],
    ]);
    const pids = [...cluster.pids(), cluster.info.proxy.pid];
    const pgPid = Number(fs.readFileSync(path.join(cluster.info.dir, 'pg', 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
    expect(await cluster.stop()).toBe(0);
    expect([...pids, pgPid].filter(alive)).toEqual([]);
    expect(fs.existsSync(path.join(cluster.info.dir, 'pg', 'data', 'postmaster.pid'))).toBe(false);
    const after = await cluster.status();
    expect(after.code).toBe(3);
    expect(after.status.running).toBe(false);
  }, 120_000);
});
