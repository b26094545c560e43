/**
 * PostgreSQL restarted under load: two `memo serve` behind HAProxy (scripts/cluster.mjs) on one
 * throwaway PostgreSQL server, ten MCP clients calling a tool that reads the shared database, and the
 * server stopped like a crash and started again. While it is down every call ends with a clear
 * refusal (a `CODE: message` result, no HTTP 500, no stack trace, no password, no hang past the tool
 * timeout); once it is back, calls succeed again on both instances without restarting Memo.
 */
import { performance } from 'node:perf_hooks';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { requireFreshBuild } from '../helpers/dist.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait.js';
import { Cluster, recordingFetch } from './harness/cluster.js';

const CLIENTS = 10;
/** Longer than the tool timeout (120 s): a call still open then has hung. */
const CALL_TIMEOUT_MS = 130_000;

let pg: TestPostgres;
let cluster: Cluster;

beforeAll(async () => {
  requireFreshBuild();
  pg = await startPostgres();
  cluster = await Cluster.start({ instances: 2, databaseUrl: await pg.database('memo'), serveArgs: ['--rate-limit', 'off'] });
}, 300_000);

interface Call {
  sent: number;
  done: number;
  ok: boolean;
  instance: string | null;
  /** The result's text for a refusal, or the thrown error for a transport failure. */
  text: string;
  thrown: boolean;
}

describe('PostgreSQL restarted under load, two instances behind HAProxy', () => {
  it('refuses calls clearly while the server is down and serves them again on both instances once it is back, without restarting Memo', async () => {
    const pidsBefore = cluster.pids();
    const statuses: number[] = [];
    const calls: Call[] = [];
    let running = true;
    const clients = await Promise.all(
      Array.from({ length: CLIENTS }, async (_, i) => {
        const rec = recordingFetch();
        const client = new Client({ name: `pg-restart-${i}`, version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
        await client.connect(
          new StreamableHTTPClientTransport(new URL(cluster.info.url), {
            fetch: async (input, init) => {
              const res = await rec.fetch(input, init);
              statuses.push(res.status);
              return res;
            },
            requestInit: { headers: { Authorization: `Bearer ${cluster.info.token}` } },
          }),
        );
        return { client, rec };
      }),
    );
    const load = Promise.all(
      clients.map(async ({ client, rec }, i) => {
        for (let n = 0; running; n++) {
          const sent = performance.now();
          try {
            const r = await client.callTool({ name: 'vault_list_tasks', arguments: { limit: ((i * 7 + n) % 50) + 1 } }, { timeout: CALL_TIMEOUT_MS });
            const text = (r.content as Array<{ text?: string }>)[0]?.text ?? '';
            calls.push({ sent, done: performance.now(), ok: !r.isError, instance: rec.last()?.instance ?? null, text, thrown: false });
          } catch (err) {
            calls.push({
              sent,
              done: performance.now(),
              ok: false,
              instance: rec.last()?.instance ?? null,
              text: String((err as Error).message),
              thrown: true,
            });
          }
          await new Promise((r) => setTimeout(r, 50));
        }
      }),
    );
    let downAt = 0;
    let startingAt = 0;
    let upAt = 0;
    try {
      await waitFor(() => new Set(calls.filter((c) => c.ok).map((c) => c.instance)).size === 2, { what: 'both instances to answer before the restart' });
      await pg.stop();
      downAt = performance.now();
      // Every client makes a few calls against the stopped server.
      await waitFor(() => calls.filter((c) => c.sent > downAt).length >= 3 * CLIENTS, {
        what: 'calls while PostgreSQL is down',
        timeoutMs: 2 * CALL_TIMEOUT_MS,
      });
      // The server accepts connections before pg_ctl returns: "down" ends when the start begins.
      startingAt = performance.now();
      await pg.start();
      upAt = performance.now();
      await waitFor(
        () => {
          const back = calls.filter((c) => c.ok && c.sent > upAt);
          return back.some((c) => c.instance === 'memo-1') && back.some((c) => c.instance === 'memo-2');
        },
        { what: 'both instances to answer again after the restart', timeoutMs: 120_000 },
      );
      const seenAfter = calls.length;
      await waitFor(() => calls.length >= seenAfter + 3 * CLIENTS, { what: 'calls after the restart' });
    } finally {
      running = false;
      await load;
      await Promise.all(clients.map((c) => c.client.close().catch(() => {})));
    }

    const down = calls.filter((c) => c.sent > downAt && c.done < startingAt);
    const refusals = down.filter((c) => !c.ok);
    const after = calls.filter((c) => c.sent > upAt);
    const codes = [...new Set(refusals.map((c) => /^([A-Z_]+):/.exec(c.text)?.[1] ?? c.text.slice(0, 60)))];
    const longest = Math.max(...down.map((c) => c.done - c.sent));
    console.log(
      `PostgreSQL restart: ${calls.length} calls; ${down.length} while it was down (${refusals.length} refused: ${codes.join(', ')}; the slowest answer ${longest.toFixed(0)} ms); ` +
        `${after.length} after (${after.filter((c) => c.ok).length} answered); a refusal: ${refusals[0]?.text.slice(0, 300)}`,
    );
    expect(down.length).toBeGreaterThanOrEqual(3 * CLIENTS);
    // Nothing answered from the database while it was down, and every refusal is a clean result.
    expect(down.filter((c) => c.ok)).toEqual([]);
    expect(refusals.filter((c) => c.thrown)).toEqual([]);
    for (const c of refusals) {
      // It says what is wrong (the database cannot be reached or used), and that Memo reconnects by itself.
      expect(c.text).toMatch(/^[A-Z_]+: .*database .* cannot be (reached|used).*reconnects by itself/);
      expect(c.text).not.toMatch(/\n\s+at |\.ts:\d|\.js:\d/);
      expect(c.text).not.toContain(pg.password);
    }
    expect(statuses.filter((s) => s >= 500)).toEqual([]);
    // Recovered on its own: the same processes, and every call after the restart answered.
    expect(cluster.pids()).toEqual(pidsBefore);
    expect(after.filter((c) => !c.ok).length).toBeLessThanOrEqual(CLIENTS);
  }, 600_000);
});
