import * as fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { DEFAULT_RATE_LIMITS } from '../../kernel/rate-limit/rate-limiter.js';
import { requireFreshBuild } from '../helpers/dist.js';
import { ServeProcess, serveWorkspace } from '../mcp/mcp-helpers.js';

beforeAll(requireFreshBuild);

/**
 * 200 MCP clients (the SDK's, on the stateless 2026-07-28 revision, each with its own name and so its
 * own rate-limit budget) call one `memo serve` (a child process, default limits) about once a second
 * each for 15 s in `npm test`
 * and a minute in `npm run test:load` (MEMO_LOAD_SECONDS). Every call ends as a result or a clean
 * RATE_LIMITED refusal, none as a transport or server error; no limit is granted twice (checked
 * soundly from the clients' side, below); the server's resident memory stays under 400 MB. The
 * figures (calls, p50/p99, peak RSS) are printed for README.
 */

const CLIENTS = 200;
/** 15 s in `npm test`; `npm run test:load` (its own step in .ci/run) holds the load for a minute. */
const SECONDS = Number(process.env.MEMO_LOAD_SECONDS ?? 15);
/** Clients connect this many at a time (the load itself starts once all 200 are connected). */
const CONNECT_BATCH = 20;
const RSS_LIMIT_MB = 400;
const WINDOW_MS = DEFAULT_RATE_LIMITS.windowMs;

interface Call {
  client: number;
  sent: number;
  done: number;
  outcome: 'ok' | 'limited' | 'error';
  detail?: string;
}

function rssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0) / 1024;
}

/**
 * A limit granted twice, proven from outside: the server admitted a call somewhere between its
 * send and done times. If `limit + 1` granted calls all sent at or after `sent[k]` finished before
 * `sent[k] + window`, the server admitted `limit + 1` calls within one window. Returns the proof.
 */
function overGranted(calls: Call[], limit: number): string | null {
  const granted = calls.filter((c) => c.outcome === 'ok').sort((a, b) => a.sent - b.sent);
  for (let k = 0; k + limit < granted.length; k++) {
    const group = granted.slice(k, k + limit + 1);
    const lastDone = Math.max(...group.map((c) => c.done));
    if (lastDone - granted[k]!.sent < WINDOW_MS) return `${limit + 1} calls granted within ${Math.round(lastDone - granted[k]!.sent)} ms`;
  }
  return null;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;
}

describe('200 concurrent MCP clients against one memo serve', () => {
  it(
    `answers every call of 200 clients for ${SECONDS} s with a result or a clean refusal, grants no limit twice, and stays under ${RSS_LIMIT_MB} MB`,
    async () => {
      const w = serveWorkspace('memo-load-');
      const serve = ServeProcess.start(['--packs', w.packs, '--root', w.root, '--data', w.data, 'serve', '--json']);
      const info: { url: string; token: string } = await serve.json(0);
      const pid = serve.child.pid!;
      const clients: Client[] = [];
      const calls: Call[] = [];
      let peakRss = rssMb(pid);
      const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssMb(pid))), 500);
      try {
        for (let from = 0; from < CLIENTS; from += CONNECT_BATCH) {
          const batch = Array.from({ length: Math.min(CONNECT_BATCH, CLIENTS - from) }, (_, k) => from + k);
          clients.push(
            ...(await Promise.all(
              batch.map(async (i) => {
                const client = new Client({ name: `load-${i}`, version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
                await client.connect(
                  new StreamableHTTPClientTransport(new URL(info.url), { requestInit: { headers: { Authorization: `Bearer ${info.token}` } } }),
                );
                return client;
              }),
            )),
          );
        }
        const start = performance.now();
        await Promise.all(
          clients.map(async (client, i) => {
            // Spread the clients over the first second, then one call a second each.
            // A count, not a time bound: a start time plus 1000 added sixty times can fall a hair short of
            // the end, and that client then made a 61st call (12001 calls, seen on a busy machine's run).
            for (let n = 0; n < SECONDS; n++) {
              const next = start + (i * 1000) / CLIENTS + n * 1000;
              const wait = next - performance.now();
              if (wait > 0) await new Promise((r) => setTimeout(r, wait));
              const sent = performance.now();
              try {
                const r = await client.callTool({ name: 'echo', arguments: { text: `${i}:${n}` } });
                const text = (r.content as Array<{ text?: string }>)[0]?.text ?? '';
                const outcome = !r.isError ? 'ok' : text.startsWith('RATE_LIMITED:') ? 'limited' : 'error';
                calls.push({ client: i, sent, done: performance.now(), outcome, ...(outcome === 'error' ? { detail: text.slice(0, 200) } : {}) });
              } catch (err) {
                // fetch's own message is "fetch failed"; the cause says what the socket did.
                const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
                const why = [String((err as Error)?.message ?? err), cause?.code, cause?.message].filter(Boolean).join(': ');
                calls.push({ client: i, sent, done: performance.now(), outcome: 'error', detail: why.slice(0, 200) });
              }
            }
          }),
        );
      } finally {
        clearInterval(sampler);
        await Promise.all(clients.map((c) => c.close().catch(() => {})));
      }
      peakRss = Math.max(peakRss, rssMb(pid));
      expect(await serve.stop()).toBe(0);

      const errors = calls.filter((c) => c.outcome === 'error');
      const latencies = calls.map((c) => c.done - c.sent).sort((a, b) => a - b);
      const ok = calls.filter((c) => c.outcome === 'ok').length;
      console.log(
        `load: ${CLIENTS} clients, ${SECONDS} s: ${calls.length} calls (${ok} results, ${calls.length - ok - errors.length} RATE_LIMITED, ${errors.length} errors), ` +
          `p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms, peak RSS ${peakRss.toFixed(0)} MB`,
      );
      expect(errors.slice(0, 5)).toEqual([]);
      // Every call of every client came back (none hung or was lost), and the limits let some through.
      expect(calls.length).toBe(CLIENTS * SECONDS);
      expect(ok).toBeGreaterThan(0);
      // No limit granted twice: each client's own 30 a minute, and the machine-wide 300 a minute.
      for (let i = 0; i < CLIENTS; i++)
        expect(
          overGranted(
            calls.filter((c) => c.client === i),
            DEFAULT_RATE_LIMITS.maxCalls,
          ),
        ).toBeNull();
      expect(overGranted(calls, DEFAULT_RATE_LIMITS.globalMaxCalls)).toBeNull();
      expect(peakRss).toBeLessThan(RSS_LIMIT_MB);
    },
    (SECONDS + 180) * 1000,
  );
});
