/**
 * Rotating memo serve's MCP token, and reading the admin lines, as whole processes (bin/memo, dist/):
 * `memo serve rotate-token` reaches the running server through its control socket, which writes the
 * admin line `token.rotate` by `cli` before it rotates; SIGHUP does the same by `signal`, and rotates
 * nothing when its line cannot be written. `memo audit verify` checks the admin lines like every
 * other line of the chain. (`memo audit tail --admin`: test/e2e/audit-admin.test.ts.)
 */
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { requireFreshBuild } from '../helpers/dist.js';
import { nth } from '../helpers/nth.js';
import { waitFor } from '../helpers/wait.js';
import { rawInitialize, ServeProcess, serveWorkspace, type ServeWorkspace as Workspace, memoGlobals, memoOn } from '../mcp/mcp-helpers.js';

beforeAll(requireFreshBuild);

const fsExt = createRequire(import.meta.url)('fs-ext') as { flockSync(this: void, fd: number, flags: 'ex' | 'un'): void };
const flock = fsExt.flockSync;

const memo = memoOn;
const globals = memoGlobals;

const trailFile = (w: Workspace) => path.join(w.data, 'agent-audit.jsonl');

function trail(w: Workspace): any[] {
  return fs
    .readFileSync(trailFile(w), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

/** The status an MCP initialize gets with `token`: 200 accepted, 401 refused. */
async function statusWith(url: string, token: string): Promise<number> {
  return (await rawInitialize(url, { Authorization: `Bearer ${token}` })).status;
}

/** memo serve in text mode, once its banner is out: its URL and token. */
async function serveText(w: Workspace): Promise<{ serve: ServeProcess; url: string; token: string }> {
  const serve = ServeProcess.start([...globals(w), 'serve']);
  await waitFor(() => serve.lines.some((l) => l.includes('/ui/login?code=')) || (serve.child.exitCode !== null && Promise.reject(new Error(serve.stderr))), {
    what: 'the banner',
  });
  const out = serve.lines.join('\n');
  return {
    serve,
    url: nth(/url: +(http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(out) ?? [], 1),
    token: nth(/token: +([A-Za-z0-9_-]{43})/.exec(out) ?? [], 1),
  };
}

/** The token in the first "Token rotated" line serve printed at or after line `from`. */
async function printedRotation(serve: ServeProcess, from: number): Promise<string> {
  const line = await waitFor(() => serve.lines.slice(from).find((l) => l.startsWith('Token rotated;')), { what: 'a "Token rotated" line from memo serve' });
  return nth(/New token: ([A-Za-z0-9_-]{43})$/.exec(line) ?? [], 1);
}

describe('memo serve rotate-token', () => {
  let w: Workspace;
  let serve: ServeProcess;
  let url: string;
  let token: string;

  beforeAll(async () => {
    w = serveWorkspace('memo-rotate-');
    ({ serve, url, token } = await serveText(w));
  });
  afterAll(async () => {
    expect(await serve.stop()).toBe(0);
  });

  it('names memo serve rotate-token first in the banner', () => {
    expect(serve.lines).toContain(
      `Rotate the token with memo --data ${JSON.stringify(w.data)} serve rotate-token (or kill -HUP ${serve.child.pid}, or POST ${url}/rotate-token with the token).`,
    );
  });

  it('rotates the running server’s token: the old one gets 401, the new one is accepted, and the trail has token.rotate by cli', async () => {
    const old = token;
    const before = serve.lines.length;
    const r = await memo(w, ['serve', 'rotate-token']);
    expect([r.code, r.stderr]).toEqual([0, '']);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toMatch(
      new RegExp(
        `^memo serve \\(pid ${serve.child.pid}, ${url.replace(/\./g, '\\.')}\\): Token rotated; the old one no longer works\\. New token: [A-Za-z0-9_-]{43}$`,
      ),
    );
    expect(lines[1]).toMatch(/^New web console link \(works once\): http:\/\/127\.0\.0\.1:\d+\/ui\/login\?code=[A-Za-z0-9_-]+$/);
    token = nth(/New token: (\S+)$/.exec(lines[0]!) ?? [], 1);
    expect(token).not.toBe(old);
    expect(await statusWith(url, old)).toBe(401);
    expect(await statusWith(url, token)).toBe(200);
    // memo serve says so where it runs, as it does on SIGHUP.
    expect(await printedRotation(serve, before)).toBe(token);
    expect(trail(w).at(-1)).toMatchObject({ event: 'admin', action: 'token.rotate', by: 'cli', pid: serve.child.pid });
    expect(fs.readFileSync(trailFile(w), 'utf8')).not.toContain(token);
  });

  it('prints the new token, console link, URL and pid as JSON with --json', async () => {
    const old = token;
    const r = await memo(w, ['serve', 'rotate-token', '--json']);
    expect(r.code).toBe(0);
    const printed = JSON.parse(r.stdout);
    expect(printed).toEqual({
      url,
      token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      console: expect.stringContaining('/ui/login?code='),
      pid: serve.child.pid,
    });
    token = printed.token;
    expect(await statusWith(url, old)).toBe(401);
    expect(await statusWith(url, token)).toBe(200);
  });

  it('refuses an option of memo serve’s own before the subcommand (usage, exit 2), and rotates nothing', async () => {
    const lines = trail(w).length;
    const r = await memo(w, ['serve', '--port', '5', 'rotate-token']);
    expect([r.code, r.stderr]).toEqual([2, 'memo: memo serve rotate-token takes only --json (and the global options); --port is for starting memo serve\n']);
    expect(await statusWith(url, token)).toBe(200);
    expect(trail(w)).toHaveLength(lines);
  });

  it('memo console link prints a new one-time login link after writing console.link by cli, and leaves the MCP token working', async () => {
    const r = await memo(w, ['console', 'link']);
    expect([r.code, r.stderr]).toEqual([0, '']);
    const link = nth(/^ {2}(http:\/\/127\.0\.0\.1:\d+\/ui\/login\?code=[A-Za-z0-9_-]+)$/m.exec(r.stdout) ?? [], 1);
    expect(r.stdout).toContain(`memo serve (pid ${serve.child.pid})`);
    expect(await statusWith(url, token)).toBe(200);
    expect(trail(w).at(-1)).toMatchObject({ event: 'admin', action: 'console.link', by: 'cli', pid: serve.child.pid });
    expect(fs.readFileSync(trailFile(w), 'utf8')).not.toContain(new URL(link).searchParams.get('code')!);
    // It logs in once: the second use is refused.
    expect((await fetch(link, { redirect: 'manual' })).status).toBe(303);
    expect((await fetch(link, { redirect: 'manual' })).status).not.toBe(303);
    const json = await memo(w, ['console', 'link', '--json']);
    expect(JSON.parse(json.stdout)).toEqual({ console: expect.stringContaining('/ui/login?code='), pid: serve.child.pid });
  });

  it('rotates on SIGHUP after writing token.rotate by signal', async () => {
    const old = token;
    const before = serve.lines.length;
    serve.child.kill('SIGHUP');
    token = await printedRotation(serve, before);
    expect(await statusWith(url, old)).toBe(401);
    expect(await statusWith(url, token)).toBe(200);
    expect(trail(w).at(-1)).toMatchObject({ event: 'admin', action: 'token.rotate', by: 'signal', pid: serve.child.pid });
  });

  it('leaves a trail memo audit verify passes, and fails as TAMPERED once an admin line’s by is edited', async () => {
    expect(await serve.stop()).toBe(0);
    const ok = await memo(w, ['audit', 'verify']);
    expect([ok.code, ok.stdout]).toEqual([0, expect.stringMatching(/^OK: /)]);
    const text = fs.readFileSync(trailFile(w), 'utf8');
    const lines = text.split('\n');
    const at = lines.findIndex((l) => l.includes('"action":"token.rotate"') && l.includes('"by":"cli"'));
    expect(at).toBeGreaterThanOrEqual(0);
    lines[at] = lines[at]!.replace('"by":"cli"', '"by":"console"');
    fs.writeFileSync(trailFile(w), lines.join('\n'));
    const bad = await memo(w, ['audit', 'verify']);
    expect([bad.code, bad.stdout]).toEqual([1, expect.stringMatching(/^TAMPERED: /)]);
  });
});

describe('memo serve rotate-token without a token to rotate', () => {
  it('says no memo serve runs on the data folder (exit 1)', async () => {
    const w = serveWorkspace('memo-rotate-none-');
    const r = await memo(w, ['serve', 'rotate-token']);
    expect([r.code, r.stdout]).toEqual([1, '']);
    expect(r.stderr).toBe(
      `memo: no memo serve runs on the data folder ${w.data}, so there is no MCP token to rotate (the token belongs to a running memo serve: pass its --data, or start one with memo serve)\n`,
    );
  });

  it('says a memo serve --stdio has no token (exit 1), and writes no admin line', async () => {
    const w = serveWorkspace('memo-rotate-stdio-');
    const serve = ServeProcess.start([...globals(w), 'serve', '--stdio']);
    try {
      await waitFor(() => serve.stderr.includes('over MCP stdio'), { what: 'memo serve --stdio to be serving' });
      const r = await memo(w, ['serve', 'rotate-token']);
      expect([r.code, r.stdout]).toEqual([1, '']);
      expect(r.stderr).toBe(`memo: this memo serve (pid ${serve.child.pid}) serves MCP over stdio, which has no token to rotate (NO_TOKEN)\n`);
      expect(trail(w).filter((e) => e.event === 'admin')).toEqual([]);
    } finally {
      expect(await serve.stop()).toBe(0);
    }
  });
});

describe('SIGHUP while the audit trail cannot be written', () => {
  it('logs why and keeps the token (the server waits 10 s for the trail’s lock before it gives up)', async () => {
    const w = serveWorkspace('memo-rotate-hup-');
    const { serve, url, token } = await serveText(w);
    try {
      // This process holds the trail's lock and does not let go: serve's line cannot be written.
      const fd = fs.openSync(path.join(w.data, 'agent-audit.lock'), 'a');
      flock(fd, 'ex');
      try {
        serve.child.kill('SIGHUP');
        await waitFor(() => serve.stderr.includes('SIGHUP: the MCP token was not rotated'), { what: 'the error on stderr' });
      } finally {
        flock(fd, 'un');
        fs.closeSync(fd);
      }
      expect(serve.stderr).toMatch(
        /SIGHUP: the MCP token was not rotated \(it is unchanged\): token\.rotate was not done: its audit line could not be written \(.*locked by another process/,
      );
      expect(await statusWith(url, token)).toBe(200);
      expect(serve.lines.some((l) => l.startsWith('Token rotated;'))).toBe(false);
      expect(trail(w).filter((e) => e.event === 'admin')).toEqual([]);
    } finally {
      expect(await serve.stop()).toBe(0);
    }
  });
});
