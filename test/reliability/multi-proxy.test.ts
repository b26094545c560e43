/**
 * Two `memo serve` instances behind HAProxy (scripts/cluster.mjs) on a throwaway PostgreSQL server
 * named in a 0600 --database-url-file: the database password on no process's command line, each
 * caller's own budget (`--rate-limit 5`) granted exactly once across both instances, and the web
 * console used through the proxy (its login sessions live in one instance's memory, so the proxy
 * keeps a browser on one instance while /mcp stays round-robin).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { requireFreshBuild } from '../helpers/dist.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { Cluster, commandLinesHolding, processTree, recordingFetch, run } from './harness/cluster.js';

const BUDGET = 5;
const CALLS = 12;

let pg: TestPostgres;
let cluster: Cluster;

beforeAll(async () => {
  requireFreshBuild();
  pg = await startPostgres();
  // Each caller 5 calls a minute; the machine-wide ceiling stays 300, out of reach of the 36 calls here.
  cluster = await Cluster.start({ instances: 2, databaseUrl: await pg.database('memo'), viaFile: true, serveArgs: ['--rate-limit', String(BUDGET)] });
}, 300_000);

describe('the database URL of scripts/cluster.mjs', () => {
  it('is refused on the command line, with the reason and without echoing the password', async () => {
    const r = await run(['start', '--dir', path.join(os.tmpdir(), 'memo-never-made'), '--database-url', 'postgres://memo:hunter2secret@127.0.0.1:1/memo']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--database-url is not accepted.*MEMO_DATABASE_URL.*--database-url-file/);
    expect(r.stderr).not.toContain('hunter2secret');
    expect(fs.existsSync(path.join(os.tmpdir(), 'memo-never-made'))).toBe(false);
  });

  it('is refused from a --database-url-file others may read, naming the file and the fix', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memo-dburl-'));
    try {
      const file = path.join(dir, 'url');
      fs.writeFileSync(file, 'postgres://memo:hunter2secret@127.0.0.1:1/memo\n', { mode: 0o644 });
      fs.chmodSync(file, 0o644);
      const r = await run(['start', '--dir', path.join(dir, 'cluster'), '--database-url-file', file]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`--database-url-file ${file} may be read by others (mode 644): chmod 600 ${file}`);
      expect(r.stderr).not.toContain('hunter2secret');
      expect(fs.existsSync(path.join(dir, 'cluster'))).toBe(false);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reaches every instance while no process started for the cluster has the password on its command line', async () => {
    const tree = processTree(cluster.child.pid!);
    // The supervisor, both instances and HAProxy are running (and are what the scan below covers).
    for (const pid of [...cluster.pids(), cluster.info.proxy.pid]) expect(tree).toContain(pid);
    // Raw and as the URL spells it (the test server's password needs %-escapes).
    for (const secret of [pg.password, encodeURIComponent(pg.password)]) expect(commandLinesHolding(secret)).toEqual([]);
    expect(cluster.info.database).not.toContain(pg.password);
    expect((await cluster.status()).status.instances.map((i) => i.healthy)).toEqual([true, true]);
  });
});

describe('a caller budget (memo serve --rate-limit 5) across two instances behind the proxy', () => {
  it('grants each of three fast clients exactly its 5 calls in the window, over both instances, and refuses the rest as RATE_LIMITED', async () => {
    const results = await Promise.all(
      [0, 1, 2].map(async (c) => {
        const rec = recordingFetch();
        const client = new Client({ name: `budget-${c}`, version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
        await client.connect(
          new StreamableHTTPClientTransport(new URL(cluster.info.url), {
            fetch: rec.fetch,
            requestInit: { headers: { Authorization: `Bearer ${cluster.info.token}` } },
          }),
        );
        const outcomes: Array<{ outcome: string; instance: string | null }> = [];
        try {
          for (let n = 0; n < CALLS; n++) {
            // Different arguments each time: the identical-call cooldown is not what is tested.
            const r = await client.callTool({ name: 'vault_list_tasks', arguments: { limit: n + 1 } });
            const text = (r.content as Array<{ text?: string }>)[0]?.text ?? '';
            outcomes.push({
              outcome: !r.isError ? 'ok' : text.startsWith('RATE_LIMITED:') ? 'limited' : `error: ${text.slice(0, 200)}`,
              instance: rec.last()?.instance ?? null,
            });
          }
        } finally {
          await client.close();
        }
        return outcomes;
      }),
    );
    for (const outcomes of results) {
      expect(outcomes.filter((o) => o.outcome.startsWith('error'))).toEqual([]);
      // Both instances answered this client's calls, and together granted its budget once.
      expect(new Set(outcomes.map((o) => o.instance))).toEqual(new Set(['memo-1', 'memo-2']));
      expect(outcomes.filter((o) => o.outcome === 'ok')).toHaveLength(BUDGET);
      expect(outcomes.filter((o) => o.outcome === 'limited')).toHaveLength(CALLS - BUDGET);
      // The budget is granted first, then refused: calls in order.
      expect(outcomes.map((o) => o.outcome)).toEqual([...Array<string>(BUDGET).fill('ok'), ...Array<string>(CALLS - BUDGET).fill('limited')]);
    }
  }, 120_000);
});

describe('the web console through the proxy', () => {
  /** The cookies a browser would send back: name=value of each Set-Cookie, by name. */
  const jar = new Map<string, string>();
  const remember = (res: Response) => {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      jar.set(pair!.slice(0, eq).trim(), pair!.slice(eq + 1).trim());
    }
  };
  const cookie = () => [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
  const proxy = () => `http://127.0.0.1:${cluster.info.proxy.port}`;

  it('logs in with the link of the second instance and then serves every page and API request of that session, while /mcp stays round-robin', async () => {
    const memo2 = cluster.info.instances.find((i) => i.name === 'memo-2')!;
    const link = new URL(memo2.console!);
    expect(link.port).toBe(String(cluster.info.proxy.port));
    const login = await fetch(link, { redirect: 'manual' });
    expect(login.status).toBe(303);
    expect(login.headers.get('x-memo-instance')).toBe('memo-2');
    remember(login);
    expect([...jar.keys()].some((k) => k.startsWith('memo_console_'))).toBe(true);
    expect(jar.get('MEMO_SERVER')).toBe('memo-2');

    const served: Array<{ path: string; status: number; instance: string | null }> = [];
    for (const p of [
      '/ui/',
      '/ui/api/session',
      '/ui/api/approvals',
      '/ui/api/packs',
      '/ui/api/mcp',
      '/ui/api/permissions',
      '/ui/api/session',
      '/ui/api/audit',
    ]) {
      const res = await fetch(proxy() + p, { headers: { Cookie: cookie() } });
      await res.arrayBuffer();
      served.push({ path: p, status: res.status, instance: res.headers.get('x-memo-instance') });
    }
    const verify = await fetch(`${proxy()}/ui/api/audit/verify`, {
      method: 'POST',
      headers: { Cookie: cookie(), Origin: proxy(), 'Content-Type': 'application/json' },
      body: '{}',
    });
    await verify.arrayBuffer();
    served.push({ path: '/ui/api/audit/verify', status: verify.status, instance: verify.headers.get('x-memo-instance') });
    expect(served.filter((s) => s.status !== 200 || s.instance !== 'memo-2')).toEqual([]);

    // /mcp carries no stickiness: the same browser cookie does not pin MCP requests.
    const answered = new Set<string | null>();
    for (let n = 0; n < 4; n++) {
      const res = await fetch(`${proxy()}/healthz`, { headers: { Cookie: cookie() } });
      await res.arrayBuffer();
      answered.add(res.headers.get('x-memo-instance'));
    }
    expect(answered).toEqual(new Set(['memo-1', 'memo-2']));
  }, 60_000);
});
