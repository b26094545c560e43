/**
 * The web console is the built-in pack `console`, and an administrator disables it like any pack,
 * as whole processes (bin/memo, dist/): `memo plugins disable console` makes a running memo serve
 * stop serving `/ui/` within 3 s (404 saying the pack is disabled), `memo plugins enable console`
 * brings it back with a new link; a memo serve started with the console disabled serves MCP as
 * always, prints no console link but a line saying why, and its token rotation says so too.
 */
import { requireFreshBuild } from '../helpers/dist.js';
import { waitFor } from '../helpers/wait.js';
import { connect, raw, rawInitialize, ServeProcess, serveWorkspace, type ServeWorkspace as Workspace, memoGlobals, memoOn } from '../mcp/mcp-helpers.js';

beforeAll(requireFreshBuild);

/** How soon a running memo serve must follow `memo plugins disable|enable console`. */
const FOLLOWS_WITHIN_MS = 3_000;

const memo = memoOn;
const globals = memoGlobals;

/** What `/ui/` answers a browser now: its status and body. */
const page = (origin: string) => raw(`${origin}/ui/`, { headers: { Accept: 'text/html' } });

describe('the console pack in a running memo serve', () => {
  let w: Workspace;
  let serve: ServeProcess;
  let info: { url: string; token: string; console: string | null; pid: number };
  let origin: string;

  beforeAll(async () => {
    w = serveWorkspace('memo-console-pack-');
    serve = ServeProcess.start([...globals(w), 'serve', '--json']);
    info = await serve.json(0);
    origin = new URL(info.url).origin;
  });
  afterAll(async () => expect(await serve.stop()).toBe(0));

  it('is a built-in pack with no tools, listed and enabled by default', async () => {
    const list = await memo(w, ['plugins', 'list', '--json']);
    const entry = JSON.parse(list.stdout).find((p: { id: string }) => p.id === 'console');
    expect(entry).toMatchObject({ id: 'console', source: 'builtin', enabled: true, tools: 0, status: 'loaded' });
    expect(info.console).toMatch(new RegExp(`^${origin}/ui/login\\?code=[A-Za-z0-9_-]{43}$`));
    expect((await page(origin)).status).toBe(200);
  });

  it('stops answering /ui/ within 3 s of memo plugins disable console, says why, and serves MCP as before', async () => {
    const login = await raw(info.console!);
    expect(login.status).toBe(303);
    const cookie = login.headers['set-cookie']![0]!.split(';')[0]!;
    expect((await memo(w, ['plugins', 'disable', 'console'])).code).toBe(0);
    const off = await waitFor(
      async () => {
        const r = await page(origin);
        return r.status === 404 ? r : undefined;
      },
      { timeoutMs: FOLLOWS_WITHIN_MS, intervalMs: 50, what: '/ui/ to stop answering after memo plugins disable console' },
    );
    expect(off.body).toContain('The console pack is disabled, so nothing is served at /ui. Turn it back on with: memo plugins enable console');
    // Nothing of the console answers: not its API (a session made before included), not its login.
    const api = await raw(`${origin}/ui/api/approvals`, { headers: { Cookie: cookie } });
    expect([api.status, JSON.parse(api.body).error]).toEqual([404, 'NOT_FOUND']);
    expect((await raw(`${origin}/ui/login?code=x`)).status).toBe(404);
    // memo serve says the console is off (a supervisor's line: no link).
    expect(await serve.json(1)).toMatchObject({ url: info.url, token: info.token, console: null });
    const mcp = await connect(info.url, info.token, { name: 'console-off' });
    expect((await mcp.client.listTools()).tools.length).toBeGreaterThan(0);
    await mcp.close();
  });

  it('answers /ui/ again within 3 s of memo plugins enable console, with a new link printed', async () => {
    expect((await memo(w, ['plugins', 'enable', 'console'])).code).toBe(0);
    await waitFor(async () => (await page(origin)).status === 200, {
      timeoutMs: FOLLOWS_WITHIN_MS,
      intervalMs: 50,
      what: '/ui/ to answer again after memo plugins enable console',
    });
    const again = await serve.json(2);
    expect(again).toMatchObject({ url: info.url, token: info.token });
    expect(again.console).toMatch(new RegExp(`^${origin}/ui/login\\?code=[A-Za-z0-9_-]{43}$`));
    expect((await raw(again.console)).status).toBe(303);
  });
});

describe('memo serve with the console pack disabled', () => {
  it('serves MCP, prints a line saying the console is off instead of a link, and /ui/ answers 404', async () => {
    const w = serveWorkspace('memo-console-off-');
    // No server runs yet: the choice is stored in data/packs.json, and the start reads it.
    expect((await memo(w, ['plugins', 'disable', 'console'])).code).toBe(0);
    const serve = ServeProcess.start([...globals(w), 'serve']);
    try {
      const line = await waitFor(
        () => serve.lines.find((l) => l.startsWith('Web console')) ?? (serve.child.exitCode !== null && Promise.reject(new Error(serve.stderr))),
        {
          what: 'the console line of the banner',
        },
      );
      expect(line).toBe('Web console: off (the console pack is disabled; memo plugins enable console turns it on, and memo serve prints its link then).');
      const out = serve.lines.join('\n');
      expect(out).not.toContain('/ui/login');
      expect(out).toMatch(/packs: .*console \(disabled\)/);
      const url = /url: +(http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(out)![1]!;
      const token = /token: +([A-Za-z0-9_-]{43})/.exec(out)![1]!;
      expect((await rawInitialize(url, { Authorization: `Bearer ${token}` })).status).toBe(200);
      expect((await page(new URL(url).origin)).status).toBe(404);

      const rotated = await memo(w, ['serve', 'rotate-token']);
      expect(rotated.code).toBe(0);
      expect(rotated.stdout).toContain('No web console link: the console pack is disabled or did not load (memo plugins list says which).');
      const json = await memo(w, ['serve', 'rotate-token', '--json']);
      expect(JSON.parse(json.stdout)).toMatchObject({ console: null });
    } finally {
      expect(await serve.stop()).toBe(0);
    }
  });
});
