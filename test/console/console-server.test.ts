/**
 * The web console's server over real loopback HTTP: the one-time login link, the session cookie,
 * expiry and logout, the CSRF and Host checks, and the approvals API answering real calls that
 * wait in the approval broker through the pipeline.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import * as zlib from 'node:zlib';
import { createHash } from 'node:crypto';
import type { PackApi } from '../../kernel/packs/pack-api.js';
import type { AuditRecord } from '../../kernel/audit/audit-record.js';
import type { AuditSink } from '../../kernel/audit/audit-sink.js';
import { echoPack, tempDir, tool } from '../helpers/kernel-fixture.js';
import { waitFor } from '../helpers/wait.js';
import { MemoryLogger } from '../../kernel/logger.js';
import { PermissionStore } from '../../kernel/permissions/permission-store.js';
import { nestedJson, uploadPastLimit } from '../mcp/mcp-helpers.js';
import { consoleFixture, openEvents, post, raw, type ConsoleFixture } from './console-helpers.js';

const editable = {
  id: 'editor-pack',
  version: '1.0.0',
  tools: [{ spec: tool('echo_edit', 'medium', 'write', { editable: true }), impl: (args: Record<string, unknown>) => ({ echoed: args }) }],
};

describe('web console: login, session and cross-site checks', () => {
  let c: ConsoleFixture;
  beforeAll(async () => {
    c = await consoleFixture();
  });
  afterAll(() => c.close());

  it('exchanges the printed login code once for an HttpOnly, SameSite=Strict session cookie scoped to /ui, then refuses the code', async () => {
    const link = c.link();
    expect(link).toMatch(new RegExp(`^${c.origin}/ui/login\\?code=[A-Za-z0-9_-]{43}$`));
    const first = await raw(link);
    expect(first.status).toBe(303);
    expect(first.headers.location).toBe('/ui/');
    const port = new URL(c.origin).port;
    expect(first.headers['set-cookie']).toEqual([
      expect.stringMatching(new RegExp(`^memo_console_${port}=[A-Za-z0-9_-]{43}; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=43200$`)),
    ]);
    const cookie = first.headers['set-cookie']![0]!.split(';')[0]!;
    expect((await raw(`${c.origin}/ui/api/session`, { headers: { Cookie: cookie } })).status).toBe(200);

    const again = await raw(link);
    expect(again.status).toBe(403);
    expect(again.headers['set-cookie']).toBeUndefined();
    expect(again.body).toContain('This console link does not work');
  });

  it('makes the previous link useless when a new one is printed', async () => {
    const old = c.link();
    const fresh = c.link();
    expect((await raw(old)).status).toBe(403);
    expect((await raw(fresh)).status).toBe(303);
  });

  it('gives an API request without a session, with a forged cookie or with a made-up code nothing but 401/403', async () => {
    const port = new URL(c.origin).port;
    for (const headers of [{}, { Cookie: `memo_console_${port}=${'A'.repeat(43)}` }, { Cookie: `memo_console_${port}=` }]) {
      const r = await raw(`${c.origin}/ui/api/approvals`, { headers });
      expect([r.status, JSON.parse(r.body).error]).toEqual([401, 'UNAUTHENTICATED']);
    }
    expect((await raw(`${c.origin}/ui/login?code=${'x'.repeat(43)}`)).status).toBe(403);
    expect((await raw(`${c.origin}/ui/login`)).status).toBe(403);
  });

  it('ends a session when it expires by the kernel clock, and at logout', async () => {
    const cookie = await c.login();
    expect((await raw(`${c.origin}/ui/api/session`, { headers: { Cookie: cookie } })).status).toBe(200);
    c.fx.clock.advance(12 * 60 * 60_000);
    expect((await raw(`${c.origin}/ui/api/session`, { headers: { Cookie: cookie } })).status).toBe(401);

    const other = await c.login();
    const out = await post(c.origin, '/ui/logout', other, {});
    expect(out.status).toBe(200);
    expect(out.headers['set-cookie']?.[0]).toMatch(/=; Path=\/ui; HttpOnly; SameSite=Strict; Max-Age=0$/);
    expect((await raw(`${c.origin}/ui/api/session`, { headers: { Cookie: other } })).status).toBe(401);
  });

  it('refuses a state-changing request from another origin, without an Origin, from a cross-site fetch, or not in JSON', async () => {
    const cookie = await c.login();
    const port = Number(new URL(c.origin).port);
    const refused = [
      { Origin: 'http://evil.example' },
      { Origin: `http://127.0.0.1:${port === 65535 ? 1 : port + 1}` },
      { Origin: `http://localhost:${port}` },
      { Origin: '' },
      { 'Sec-Fetch-Site': 'cross-site' },
    ];
    for (const headers of refused) {
      const r = await post(c.origin, '/ui/logout', cookie, {}, headers);
      expect(r.status).toBe(403);
    }
    const noOrigin = await raw(`${c.origin}/ui/logout`, { method: 'POST', headers: { Cookie: cookie, 'Content-Type': 'application/json' }, body: '{}' });
    expect([noOrigin.status, JSON.parse(noOrigin.body).error]).toEqual([403, 'CROSS_ORIGIN']);
    const form = await post(c.origin, '/ui/api/approvals/x', cookie, {}, { 'Content-Type': 'text/plain' });
    expect(form.status).toBe(415);
    // None of them logged the session out.
    expect((await raw(`${c.origin}/ui/api/session`, { headers: { Cookie: cookie } })).status).toBe(200);
  });

  it('refuses a foreign Host (DNS rebinding) on every console path', async () => {
    for (const p of ['/ui/', '/ui/login?code=x', '/ui/api/session']) {
      const r = await raw(`${c.origin}${p}`, { headers: { Host: 'evil.example' } });
      expect(r.status).toBe(403);
    }
  });

  it('serves its files compressed (Brotli or gzip, as the browser accepts), each with an ETag that answers 304 while unchanged, and an icon', async () => {
    const get = (file: string, headers: Record<string, string> = {}) =>
      new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
        http
          .get(`${c.origin}${file}`, { headers }, (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (d: Buffer) => chunks.push(d));
            res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
          })
          .on('error', reject);
      });
    const plain = await get('/ui/vendor/marked.mjs');
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers.vary).toBe('Accept-Encoding');
    expect(plain.headers['cache-control']).toBe('no-cache');
    const etag = plain.headers.etag!;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{22}"$/);
    const br = await get('/ui/vendor/marked.mjs', { 'Accept-Encoding': 'gzip, deflate, br' });
    expect(br.headers['content-encoding']).toBe('br');
    expect(zlib.brotliDecompressSync(br.body).equals(plain.body)).toBe(true);
    expect(br.body.length).toBeLessThan(plain.body.length / 2);
    const gz = await get('/ui/vendor/marked.mjs', { 'Accept-Encoding': 'gzip, br;q=0' });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(zlib.gunzipSync(gz.body).equals(plain.body)).toBe(true);
    // Any representation's ETag revalidates: 304, no body, the console's headers still on it.
    for (const tag of [etag, br.headers.etag!, gz.headers.etag!]) {
      const again = await get('/ui/vendor/marked.mjs', { 'If-None-Match': tag, 'Accept-Encoding': 'br' });
      expect([again.status, again.body.length]).toEqual([304, 0]);
      expect(again.headers['content-security-policy']).toBeDefined();
    }
    expect((await get('/ui/vendor/marked.mjs', { 'If-None-Match': '"something-else"' })).status).toBe(200);
    // The page names its icon (no /favicon.ico is asked for), served as SVG.
    const page = await get('/ui/', { 'Accept-Encoding': 'identity' });
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.body.toString()).toContain('<link rel="icon" href="/ui/favicon.svg" type="image/svg+xml" />');
    const icon = await get('/ui/favicon.svg');
    expect([icon.status, icon.headers['content-type']]).toEqual([200, 'image/svg+xml']);
  });

  it('serves the page with a strict CSP that admits only its own import map, and Preact from the package, with no token or CDN in them', async () => {
    const page = await raw(`${c.origin}/ui/`);
    expect(page.status).toBe(200);
    const map = /<script type="importmap">(.*?)<\/script>/.exec(page.body)![1]!;
    const hash = createHash('sha256').update(map, 'utf8').digest('base64');
    expect(page.headers['content-security-policy']).toBe(
      `default-src 'none'; script-src 'self' 'sha256-${hash}'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'`,
    );
    expect(page.headers['x-frame-options']).toBe('DENY');
    for (const file of [
      '/ui/app.js',
      '/ui/preview.js',
      '/ui/style.css',
      '/ui/vendor/preact.mjs',
      '/ui/vendor/hooks.mjs',
      '/ui/vendor/htm.mjs',
      '/ui/vendor/htm-preact.mjs',
    ]) {
      const r = await raw(`${c.origin}${file}`);
      expect([file, r.status]).toEqual([file, 200]);
      expect(r.body).not.toContain(c.endpoint.token);
      // Nothing is loaded from elsewhere (the vendor files name XML namespaces, which are no fetch).
      expect(r.body).not.toMatch(/(from\s*|import\s*\(\s*|src=|href=|url\()["']?(https?:)?\/\//i);
      if (!file.includes('/vendor/')) expect(r.body).not.toMatch(/https?:\/\//);
    }
    expect((await raw(`${c.origin}/ui`)).headers.location).toBe('/ui/');
    expect((await raw(`${c.origin}/ui/../package.json`)).status).not.toBe(200);
    expect((await raw(`${c.origin}/ui/nothing.js`)).status).toBe(404);
  });

  it('shows the MCP URL and client snippets without the token, and rotates the token on request', async () => {
    const cookie = await c.login();
    const r = await raw(`${c.origin}/ui/api/mcp`, { headers: { Cookie: cookie } });
    const view = JSON.parse(r.body);
    expect(view.url).toBe(c.endpoint.url);
    expect(view.snippets.map((s: any) => s.id)).toEqual(['stdio', 'http', 'remote']);
    expect(r.body).not.toContain(c.endpoint.token);
    expect(r.body).toContain('<TOKEN printed by memo serve>');
    const old = c.endpoint.token;
    const rotated = await post(c.origin, '/ui/api/mcp/rotate-token', cookie, {});
    expect(rotated.status).toBe(200);
    expect(rotated.body).not.toContain(c.endpoint.token);
    expect(c.endpoint.token).not.toBe(old);
    expect(
      (await raw(c.endpoint.url, { method: 'POST', headers: { Authorization: `Bearer ${old}`, 'Content-Type': 'application/json' }, body: '{}' })).status,
    ).toBe(401);
    expect((await post(c.origin, '/ui/api/mcp/rotate-token', cookie, {}, { Origin: 'http://evil.example' })).status).toBe(403);
  });

  it('says whether commands run in the OS sandbox, and that they are refused where bubblewrap is missing', async () => {
    const cookie = await c.login();
    const ok = JSON.parse((await raw(`${c.origin}/ui/api/sandbox`, { headers: { Cookie: cookie } })).body);
    expect(ok).toMatchObject({ available: true, fallback: 'refuse', line: expect.stringContaining('commands run in the OS sandbox') });
    const saved = process.env.MEMO_BWRAP;
    process.env.MEMO_BWRAP = '/nonexistent/bwrap';
    try {
      const missing = JSON.parse((await raw(`${c.origin}/ui/api/sandbox`, { headers: { Cookie: cookie } })).body);
      expect(missing).toMatchObject({ available: false, line: expect.stringMatching(/commands are refused.*apt-get install bubblewrap/) });
    } finally {
      if (saved === undefined) delete process.env.MEMO_BWRAP;
      else process.env.MEMO_BWRAP = saved;
    }
  });

  it('leaves /mcp behind its bearer token: a console session is no MCP credential', async () => {
    const cookie = await c.login();
    const r = await raw(c.endpoint.url, { method: 'POST', headers: { Cookie: cookie, 'Content-Type': 'application/json' }, body: '{}' });
    expect(r.status).toBe(401);
  });
});

describe('web console: the approvals inbox answers calls waiting in the broker', () => {
  let c: ConsoleFixture;
  let cookie: string;
  beforeAll(async () => {
    c = await consoleFixture({ packs: [echoPack(), editable] });
    cookie = await c.login();
  });
  afterAll(() => c.close());

  const invoke = (name: string, args: Record<string, unknown>) => c.fx.kernel.invoke({ tool: name, args, caller: { kind: 'host', id: 'console-test' } });
  const audit = () =>
    fs
      .readFileSync(path.join(c.fx.dataDir, 'agent-audit.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));

  it('while no console watches, a call that needs approval is refused at once (nobody is asked)', async () => {
    const r = await invoke('echo_medium', { text: 'unwatched' });
    expect(r).toMatchObject({ ok: false, error: { code: 'PERMISSION_DENIED' } });
  });

  it('streams a waiting call with masked arguments; allow-once from the console runs it, and the stream says who answered', async () => {
    const stream = openEvents(c.origin, cookie);
    try {
      expect(await stream.status).toBe(200);
      await waitFor(() => stream.events.some((e) => e.event === 'pending'), { what: 'the pending list' });
      expect(stream.events[0]).toEqual({ event: 'pending', data: [] });
      const secret = `ghp_${'a1B2c3D4e5'.repeat(3)}123456`;
      const result = invoke('echo_medium', { text: `push with ${secret}` });
      const asked = await waitFor(() => stream.events.find((e) => e.event === 'asked'), { what: 'the asked event' });
      expect(asked.data).toMatchObject({
        tool: 'echo_medium',
        plugin: 'echo-pack',
        danger: 'medium',
        effect: 'write',
        caller: { kind: 'host', id: 'console-test' },
      });
      expect(JSON.stringify(asked.data)).not.toContain(secret);
      const listed = JSON.parse((await raw(`${c.origin}/ui/api/approvals`, { headers: { Cookie: cookie } })).body);
      expect(listed.map((a: any) => a.id)).toEqual([asked.data.id]);

      const answered = await post(c.origin, `/ui/api/approvals/${asked.data.id}`, cookie, { answer: 'allow-once' });
      expect([answered.status, JSON.parse(answered.body)]).toEqual([200, { id: asked.data.id, tool: 'echo_medium', reply: 'allow-once' }]);
      expect(await result).toMatchObject({ ok: true, value: { echoed: { text: `push with ${secret}` } } });
      await waitFor(() => stream.events.find((e) => e.event === 'settled'), { what: 'the settled event' });
      expect(stream.events.find((e) => e.event === 'settled')!.data).toEqual({ id: asked.data.id, outcome: 'answered', by: 'console', reply: 'allow-once' });
      expect(audit().at(-1)).toMatchObject({ tool: 'echo_medium', decision: 'allow:once', outcome: 'ok' });
      // Answered: it is gone, and a second answer says so.
      const late = await post(c.origin, `/ui/api/approvals/${asked.data.id}`, cookie, { answer: 'allow-once' });
      expect([late.status, JSON.parse(late.body).error]).toEqual([404, 'NOT_PENDING']);
    } finally {
      stream.close();
    }
  });

  it('denies with deny-once, and refuses an answer the request does not offer (a delete takes no standing allow)', async () => {
    const stream = openEvents(c.origin, cookie);
    try {
      await waitFor(() => stream.events.some((e) => e.event === 'pending'), { what: 'the pending list' });
      const del = invoke('echo_delete', { text: 'gone' });
      const asked = await waitFor(() => stream.events.find((e) => e.event === 'asked'), { what: 'the delete to be asked' });
      expect(asked.data.answers).toEqual(['allow-once', 'deny-once', 'deny-forever']);
      const wrong = await post(c.origin, `/ui/api/approvals/${asked.data.id}`, cookie, { answer: 'allow-forever' });
      expect([wrong.status, JSON.parse(wrong.body).error]).toEqual([400, 'ANSWER_NOT_OFFERED']);
      const notEditable = await post(c.origin, `/ui/api/approvals/${asked.data.id}`, cookie, { edit: { text: 'other' } });
      expect([notEditable.status, JSON.parse(notEditable.body).error]).toEqual([400, 'NOT_EDITABLE']);
      expect((await post(c.origin, `/ui/api/approvals/${asked.data.id}`, cookie, { answer: 'deny-once' })).status).toBe(200);
      expect(await del).toMatchObject({ ok: false, error: { code: 'PERMISSION_DENIED' } });
      expect(audit().at(-1)).toMatchObject({ tool: 'echo_delete', decision: 'deny:once' });
    } finally {
      stream.close();
    }
  });

  it('an edit is asked again as revision 2 (edited by console) and runs as edited once allowed; an edit that breaks the schema keeps the request as it was', async () => {
    const stream = openEvents(c.origin, cookie);
    try {
      await waitFor(() => stream.events.some((e) => e.event === 'pending'), { what: 'the pending list' });
      const result = invoke('echo_edit', { text: 'draft', n: 1 });
      const first = await waitFor(() => stream.events.find((e) => e.event === 'asked'), { what: 'revision 1' });
      expect(first.data).toMatchObject({ editable: true, revision: 1 });

      const bad = await post(c.origin, `/ui/api/approvals/${first.data.id}`, cookie, { edit: { text: 'draft', n: -1 } });
      expect(bad.status).toBe(200);
      const problem = await waitFor(() => stream.events.filter((e) => e.event === 'asked')[1], { what: 'the refused edit' });
      expect(problem.data).toMatchObject({ revision: 1, args: { text: 'draft', n: 1 }, editProblem: expect.stringContaining('n') });

      expect((await post(c.origin, `/ui/api/approvals/${first.data.id}`, cookie, { edit: { text: 'final', n: 2 } })).status).toBe(200);
      const second = await waitFor(() => stream.events.filter((e) => e.event === 'asked').find((e) => e.data.revision === 2), { what: 'revision 2' });
      expect(second.data).toMatchObject({ args: { text: 'final', n: 2 }, editedBy: 'console' });
      const settledEdit = stream.events.find((e) => e.event === 'settled' && e.data.reply === 'edit');
      expect(settledEdit?.data).toEqual({ id: first.data.id, outcome: 'answered', by: 'console', reply: 'edit' });

      expect((await post(c.origin, `/ui/api/approvals/${second.data.id}`, cookie, { answer: 'allow-once' })).status).toBe(200);
      expect(await result).toMatchObject({ ok: true, value: { echoed: { text: 'final', n: 2 } } });
    } finally {
      stream.close();
    }
  });

  it('ends the event stream at logout, and nobody watches any more', async () => {
    const session = await c.login();
    const stream = openEvents(c.origin, session);
    await waitFor(() => stream.events.some((e) => e.event === 'pending'), { what: 'the pending list' });
    expect((await post(c.origin, '/ui/logout', session, {})).status).toBe(200);
    await stream.ended;
    expect(await invoke('echo_medium', { text: 'after logout' })).toMatchObject({ ok: false, error: { code: 'PERMISSION_DENIED' } });
  });

  it('ends the event stream when its session expires', async () => {
    const short = await c.login();
    const stream = openEvents(c.origin, short);
    await waitFor(() => stream.events.some((e) => e.event === 'pending'), { what: 'the pending list' });
    c.fx.clock.advance(12 * 60 * 60_000);
    await stream.ended;
    // Nobody watches any more: a call that needs approval is refused at once, not left waiting.
    expect(await invoke('echo_medium', { text: 'after expiry' })).toMatchObject({ ok: false, error: { code: 'PERMISSION_DENIED' } });
    expect(stream.events.filter((e) => e.event === 'asked')).toEqual([]);
    cookie = await c.login();
  });
});

describe('web console: audit, packs and stored permissions', () => {
  let c: ConsoleFixture;
  let cookie: string;
  beforeAll(async () => {
    c = await consoleFixture();
    await c.fx.kernel.packs.load([{ dir: path.resolve('test/fixtures/packs'), source: 'extra', only: ['echo-tools'] }]);
    cookie = await c.login();
  });
  afterAll(() => c.close());
  const get = async (p: string) => {
    const r = await raw(`${c.origin}/ui/api${p}`, { headers: { Cookie: cookie } });
    return { status: r.status, body: JSON.parse(r.body) };
  };
  const invoke = (name: string, args: Record<string, unknown>, id = 'console-test') => c.fx.kernel.invoke({ tool: name, args, caller: { kind: 'host', id } });

  it('filters the audit trail by tool, caller, outcome and time, and verifies the chain', async () => {
    await invoke('echo_safe', { text: 'one' }, 'alpha');
    await invoke('echo_safe', { text: 'two' }, 'beta');
    await invoke('echo_medium', { text: 'refused' }, 'alpha');
    expect((await get('/audit?tool=echo_safe')).body.entries.map((e: any) => e.args.text)).toEqual(['two', 'one']);
    // A prefix finds every tool it starts; the total counts the whole trail's matches.
    expect((await get('/audit?tool=echo_&kind=calls')).body).toMatchObject({ total: 3, newerCount: 0, newer: null });
    expect((await get('/audit?text=REFUSED')).body.entries.map((e: any) => e.args.text)).toEqual(['refused']);
    expect((await get('/audit?caller=beta')).body.entries.map((e: any) => e.args.text)).toEqual(['two']);
    expect((await get('/audit?outcome=denied')).body.entries.map((e: any) => [e.tool, e.decision])).toEqual([['echo_medium', 'deny:unattended']]);
    expect((await get(`/audit?since=${encodeURIComponent(new Date(Date.now() + 3_600_000).toISOString())}`)).body.entries).toEqual([]);
    expect((await get('/audit?limit=1')).body.entries).toHaveLength(1);
    expect(await get('/audit?since=yesterday')).toEqual({ status: 400, body: { error: 'BAD_REQUEST', message: 'since must be a date and time (ISO 8601).' } });
    const exported = await raw(`${c.origin}/ui/api/audit/export?tool=echo_safe`, { headers: { Cookie: cookie } });
    expect([exported.status, exported.headers['content-type'], exported.headers['content-disposition']]).toEqual([
      200,
      'application/x-ndjson; charset=utf-8',
      expect.stringMatching(/^attachment; filename="memo-audit-\d{4}-\d\d-\d\d\.jsonl"$/),
    ]);
    expect(
      exported.body
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l).args.text),
    ).toEqual(['one', 'two']);
    const verify = await post(c.origin, '/ui/api/audit/verify', cookie, {});
    expect([verify.status, JSON.parse(verify.body)]).toEqual([200, expect.objectContaining({ ok: true, entries: expect.any(Number) })]);
  });

  it('streams new audit entries to an open console', async () => {
    const stream = openEvents(c.origin, cookie);
    try {
      await waitFor(() => stream.events.some((e) => e.event === 'pending'), { what: 'the stream to open' });
      await invoke('echo_safe', { text: 'live' });
      const audit = await waitFor(() => stream.events.find((e) => e.event === 'audit'), { what: 'an audit event' });
      expect(audit.data).toEqual([expect.objectContaining({ tool: 'echo_safe', args: { text: 'live' }, decision: 'auto' })]);
    } finally {
      stream.close();
    }
  });

  it("streams audit entries from a host's own audit sink that has no change feed (polled)", async () => {
    const records: AuditRecord[] = [];
    const sink: AuditSink = {
      append: (r) => records.push(r),
      tail: (filter) => records.slice(-(filter?.limit ?? records.length)),
      close: () => {},
    };
    const own = await consoleFixture({ services: { auditSink: sink } });
    try {
      const stream = openEvents(own.origin, await own.login());
      try {
        await waitFor(() => stream.events.some((e) => e.event === 'pending'), { what: 'the stream to open' });
        await own.fx.kernel.invoke({ tool: 'echo_safe', args: { text: 'polled' }, caller: { kind: 'cli' } });
        const audit = await waitFor(() => stream.events.find((e) => e.event === 'audit'), { what: 'an audit event' });
        expect(audit.data).toEqual([expect.objectContaining({ tool: 'echo_safe', args: { text: 'polled' } })]);
      } finally {
        stream.close();
      }
    } finally {
      await own.close();
    }
  });

  it('lists packs with their config schema and settings; disabling one takes its tools away, enabling brings them back', async () => {
    const packs = (await get('/packs')).body;
    const echo = packs.find((p: any) => p.id === 'echo-tools');
    expect(echo).toMatchObject({ status: 'loaded', enabled: true, config: { prefix: '', repeat: 1 }, configSchema: { type: 'object' } });
    expect(echo.tools.map((t: any) => t.name)).toContain('echo');
    expect((await post(c.origin, '/ui/api/packs/echo-tools/disable', cookie, {})).status).toBe(200);
    expect(c.fx.kernel.registry.list().some((t) => t.spec.name === 'echo')).toBe(false);
    expect(await invoke('echo', { text: 'x' })).toMatchObject({ ok: false, error: { code: 'TOOL_DISABLED' } });
    expect((await get('/packs')).body.find((p: any) => p.id === 'echo-tools').enabled).toBe(false);
    expect((await post(c.origin, '/ui/api/packs/echo-tools/enable', cookie, {})).status).toBe(200);
    expect(c.fx.kernel.registry.list().some((t) => t.spec.name === 'echo')).toBe(true);
  });

  it('saves settings that fit the pack schema and refuses ones that do not, naming the field', async () => {
    const ok = await post(c.origin, '/ui/api/packs/echo-tools/config', cookie, { changes: { prefix: '>> ', repeat: 2 } });
    expect([ok.status, JSON.parse(ok.body).config]).toEqual([200, { prefix: '>> ', repeat: 2 }]);
    expect(c.fx.kernel.packs.config('echo-tools')).toMatchObject({ prefix: '>> ', repeat: 2 });
    const bad = await post(c.origin, '/ui/api/packs/echo-tools/config', cookie, { changes: { repeat: 9 } });
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body)).toEqual({
      error: 'VALIDATION',
      message: 'Invalid settings for pack "echo-tools": repeat must be <= 5.',
      fields: { repeat: 'must be <= 5' },
    });
    expect(c.fx.kernel.packs.config('echo-tools')).toMatchObject({ repeat: 2 });
    expect((await post(c.origin, '/ui/api/packs/nope/disable', cookie, {})).status).toBe(404);
  });

  it('refuses an unknown setting saying which are accepted, and never repeats a refused value', async () => {
    const unknown = await post(c.origin, '/ui/api/packs/echo-tools/config', cookie, { changes: { colour: 'red', repeat: 0 } });
    expect(unknown.status).toBe(400);
    expect(JSON.parse(unknown.body).fields).toEqual({ colour: 'is not an accepted field (accepted: prefix, repeat)', repeat: 'must be >= 1' });
    // A value that may be a secret (a key pasted in the wrong field) is not in the answer.
    const secret = 'sk-live-0123456789abcdefghijklmnop';
    const long = await post(c.origin, '/ui/api/packs/echo-tools/config', cookie, { changes: { prefix: secret } });
    expect(long.status).toBe(400);
    expect(JSON.parse(long.body).fields).toEqual({ prefix: 'must NOT have more than 20 characters' });
    expect(long.body).not.toContain(secret);
    expect(c.fx.kernel.packs.config('echo-tools')).toMatchObject({ prefix: '>> ', repeat: 2 });
  });

  it('lists skills with their status, and a broken SKILL.md with its error', async () => {
    const dir = tempDir('memo-console-skills-');
    fs.mkdirSync(path.join(dir, 'good-skill'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'good-skill', 'SKILL.md'), '---\nname: good-skill\ndescription: does a good thing\n---\nBody.\n');
    fs.mkdirSync(path.join(dir, 'bad-skill'));
    fs.writeFileSync(path.join(dir, 'bad-skill', 'SKILL.md'), '---\nname: [broken\n---\n');
    await c.fx.kernel.skills.load([{ dir, source: 'extra' }]);
    const skills = (await get('/skills')).body;
    expect(skills).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'good-skill', status: 'loaded', description: 'does a good thing' }),
        expect.objectContaining({ status: 'failed', error: expect.any(String) }),
      ]),
    );
  });

  it('switches global always-allow on and off as a person would with memo permissions always-allow', async () => {
    const on = await post(c.origin, '/ui/api/permissions/always-allow', cookie, { on: true });
    expect([on.status, JSON.parse(on.body)]).toEqual([200, { alwaysAllow: true }]);
    expect(c.fx.kernel.permissions.alwaysAllow).toBe(true);
    expect((await post(c.origin, '/ui/api/permissions/always-allow', cookie, { on: 'yes' })).status).toBe(400);
    expect((await post(c.origin, '/ui/api/permissions/always-allow', cookie, { on: false }, { Origin: 'http://evil.example' })).status).toBe(403);
    expect(c.fx.kernel.permissions.alwaysAllow).toBe(true);
    await post(c.origin, '/ui/api/permissions/always-allow', cookie, { on: false });
    expect(c.fx.kernel.permissions.alwaysAllow).toBe(false);
  });

  it('turns external writes on for one client name and for all, and off, as memo permissions external-writes does; each an admin line by the console', async () => {
    const route = '/ui/api/permissions/external-writes';
    const named = await post(c.origin, route, cookie, { on: true, client: 'claude-ai' });
    expect([named.status, JSON.parse(named.body)]).toEqual([200, { externalWrites: { all: false, clients: ['claude-ai'] } }]);
    expect(c.fx.kernel.permissions.externalWritesFor('claude-ai')).toBe(true);
    expect(c.fx.kernel.permissions.externalWritesFor('cursor')).toBe(false);
    const listed = await raw(`${c.origin}/ui/api/permissions`, { headers: { Cookie: cookie } });
    expect(JSON.parse(listed.body)).toMatchObject({ externalWrites: { all: false, clients: ['claude-ai'] } });
    for (const bad of [{ on: 'yes' }, { on: true, client: '' }, { on: true, client: 'x'.repeat(65) }, { on: true, client: 'a\nb' }, { on: true, client: 7 }])
      expect((await post(c.origin, route, cookie, bad)).status).toBe(400);
    expect((await post(c.origin, route, cookie, { on: true }, { Origin: 'http://evil.example' })).status).toBe(403);
    expect(c.fx.kernel.permissions.externalWrites).toEqual({ all: false, clients: ['claude-ai'] });
    await post(c.origin, route, cookie, { on: true });
    expect(c.fx.kernel.permissions.externalWritesFor('cursor')).toBe(true);
    await post(c.origin, route, cookie, { on: false });
    expect(c.fx.kernel.permissions.externalWrites).toEqual({ all: false, clients: [] });
    const lines = fs
      .readFileSync(path.join(c.fx.dataDir, 'agent-audit.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { event?: string; action?: string; target?: string; by?: string })
      .filter((l) => l.event === 'admin' && l.action?.startsWith('external-writes'));
    expect(lines.map((l) => `${l.action} ${l.target ?? '-'} by ${l.by}`)).toEqual([
      'external-writes.on claude-ai by console',
      'external-writes.on - by console',
      'external-writes.off - by console',
    ]);
  });

  it('lists providers with stored keys masked, and switches the active one', async () => {
    const key = `sk-${'x9'.repeat(24)}`;
    c.fx.kernel.providerSettings.put({ name: 'hosted', kind: 'openai', model: 'gpt-test', apiKey: key });
    c.fx.kernel.providerSettings.put({ name: 'local', kind: 'openai', model: 'small', apiKeyEnv: 'MEMO_TEST_NO_SUCH_KEY' });
    const r = await raw(`${c.origin}/ui/api/providers`, { headers: { Cookie: cookie } });
    expect(r.body).not.toContain(key);
    expect(JSON.parse(r.body)).toEqual({
      active: 'hosted',
      providers: [
        expect.objectContaining({ name: 'hosted', model: 'gpt-test', apiKey: '[stored, masked]', active: true }),
        expect.objectContaining({ name: 'local', apiKey: 'from $MEMO_TEST_NO_SUCH_KEY (not set)', active: false }),
      ],
      // No providers pack in this kernel: no form to add one with.
      form: null,
    });
    expect((await post(c.origin, '/ui/api/providers/local/use', cookie, {})).status).toBe(200);
    expect(c.fx.kernel.providerSettings.active()?.name).toBe('local');
    expect((await post(c.origin, '/ui/api/providers/nope/use', cookie, {})).status).toBe(404);
  });

  it('lists stored permissions and revokes one, after which the tool is asked again', async () => {
    c.fx.kernel.permissions.set({ tool: 'echo_medium', decision: 'allow', plugin: 'echo-pack', scope: 'forever' }, new Date());
    expect(await invoke('echo_medium', { text: 'stored' })).toMatchObject({ ok: true });
    const list = (await get('/permissions')).body;
    expect(list).toMatchObject({ alwaysAllow: false, decisions: [expect.objectContaining({ tool: 'echo_medium', decision: 'allow', scope: 'forever' })] });
    const revoked = await post(c.origin, '/ui/api/permissions/echo_medium/revoke', cookie, {});
    expect([revoked.status, JSON.parse(revoked.body)]).toEqual([200, { revoked: 'echo_medium' }]);
    expect((await get('/permissions')).body.decisions).toEqual([]);
    expect(await invoke('echo_medium', { text: 'asked again' })).toMatchObject({ ok: false, error: { code: 'PERMISSION_DENIED' } });
    expect((await post(c.origin, '/ui/api/permissions/echo_medium/revoke', cookie, {})).status).toBe(404);
  });

  it("lists every tool with the rule in force, and stores a rule with memo permissions allow's limits, which the next call follows", async () => {
    const rows = (await get('/tools')).body.tools as Array<{ name: string; rule: string; ruleText: string; canAllow: boolean }>;
    const row = (name: string) => rows.find((t) => t.name === name);
    expect([row('echo_safe'), row('echo_medium'), row('echo_delete'), row('echo_confirm')]).toEqual([
      expect.objectContaining({ rule: 'runs', ruleText: 'Runs without asking (safe)', canAllow: false }),
      expect.objectContaining({ rule: 'asked', ruleText: 'Asked each time', canAllow: true }),
      expect.objectContaining({ rule: 'asked-every-time', ruleText: 'Asked every time: it deletes', canAllow: false }),
      expect.objectContaining({ rule: 'asked-every-time', ruleText: 'Asked every time: it is declared confirm: always', canAllow: false }),
    ]);
    const refused = async (body: unknown) => {
      const r = await post(c.origin, '/ui/api/permissions', cookie, body);
      return [r.status, JSON.parse(r.body).message];
    };
    expect(await refused({ tool: 'echo_delete', decision: 'allow' })).toEqual([
      400,
      'echo_delete cannot be allowed ahead of time: it deletes, so it is asked every time (the approval rules take no standing answer for it).',
    ]);
    expect(await refused({ tool: 'echo_confirm', decision: 'allow' })).toEqual([400, expect.stringContaining('it is declared confirm: always')]);
    expect(await refused({ tool: 'echo_safe', decision: 'allow' })).toEqual([400, 'echo_safe is safe: it runs without asking already. Nothing was stored.']);
    expect(await refused({ tool: 'wirte_file', decision: 'allow' })).toEqual([404, 'There is no tool named wirte_file (the Tools page lists them).']);
    expect(await refused({ tool: 'echo_medium', decision: 'allow', minutes: 0.5 })).toEqual([400, expect.stringContaining('minutes must be a whole number')]);
    expect(await refused({ tool: 'echo_medium', decision: 'maybe' })).toEqual([400, expect.stringContaining('"decision": "allow" or "deny"')]);
    expect(c.fx.kernel.permissions.list()).toEqual([]);

    const allowed = await post(c.origin, '/ui/api/permissions', cookie, { tool: 'echo_medium', decision: 'allow', minutes: 60 });
    const expiresAt = new Date(c.fx.clock.now() + 3_600_000).toISOString();
    expect([allowed.status, JSON.parse(allowed.body).decisions]).toEqual([201, [expect.objectContaining({ decision: 'allow', scope: 'until', expiresAt })]]);
    expect(await invoke('echo_medium', { text: 'allowed ahead' })).toMatchObject({ ok: true });
    expect(row('echo_medium')).toBeDefined();
    expect(((await get('/tools')).body.tools as typeof rows).find((t) => t.name === 'echo_medium')).toMatchObject({
      rule: 'allowed',
      ruleText: `Allowed for every caller until ${expiresAt}`,
    });
    // An hour later the allow has lapsed: asked again (and refused, nobody watching).
    c.fx.clock.advance(3_600_001);
    expect(await invoke('echo_medium', { text: 'lapsed' })).toMatchObject({ ok: false, error: { code: 'PERMISSION_DENIED' } });

    expect((await post(c.origin, '/ui/api/permissions', cookie, { tool: 'echo_safe', decision: 'deny' })).status).toBe(201);
    expect(await invoke('echo_safe', { text: 'denied' })).toMatchObject({ ok: false, error: { code: 'PERMISSION_DENIED' } });
    const admin = fs
      .readFileSync(path.join(c.fx.dataDir, 'agent-audit.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { event?: string; action?: string; target?: string; by?: string })
      .filter((l) => l.event === 'admin' && (l.action === 'permission.allow' || l.action === 'permission.deny'));
    expect(admin.map((l) => `${l.action} ${l.target} by ${l.by}`)).toEqual(['permission.allow echo_medium by console', 'permission.deny echo_safe by console']);
    await post(c.origin, '/ui/api/permissions/echo_safe/revoke', cookie, {});
    await post(c.origin, '/ui/api/permissions/echo_medium/revoke', cookie, {});
  });

  it('tells an open page when permissions change in another process (as memo permissions allow does)', async () => {
    const stream = openEvents(c.origin, cookie);
    try {
      await waitFor(() => stream.events.some((e) => e.event === 'pending'), { what: 'the stream to open' });
      // The CLI's own store on the same file, in effect another process.
      const other = new PermissionStore(c.fx.kernel.permissions.file, new MemoryLogger());
      other.set({ tool: 'echo_medium', decision: 'deny', plugin: 'echo-pack', scope: 'forever' }, new Date());
      await other.saved();
      const settings = await waitFor(() => stream.events.find((e) => e.event === 'settings'), { what: 'a settings event' });
      expect(settings.data).toEqual({ changed: ['permissions'] });
      expect((await get('/permissions')).body.decisions).toEqual([expect.objectContaining({ tool: 'echo_medium', decision: 'deny' })]);
    } finally {
      stream.close();
      await post(c.origin, '/ui/api/permissions/echo_medium/revoke', cookie, {});
    }
  });
});

describe('web console: pack panels', () => {
  let c: ConsoleFixture;
  let cookie: string;
  const panelPack = {
    id: 'panel-pack',
    version: '1.0.0',
    tools: [{ spec: tool('panel_echo', 'safe', 'read'), impl: (args: Record<string, unknown>) => ({ echoed: args }) }],
    activate: (api: PackApi) => {
      api.panels.register({ id: 'tools', title: 'Tools', actions: [{ id: 'say', label: 'Say', tool: 'panel_echo', args: { n: 7 } }] });
    },
  };
  beforeAll(async () => {
    c = await consoleFixture({ packs: [echoPack(), panelPack] });
    cookie = await c.login();
  });
  afterAll(() => c.close());

  it('lists panels with each action’s argument schema, and runs an action through the pipeline as host "console" with its fixed arguments winning', async () => {
    await waitFor(() => c.fx.kernel.panels.list().length > 0, { what: 'the panel to be registered' });
    const panels = JSON.parse((await raw(`${c.origin}/ui/api/panels`, { headers: { Cookie: cookie } })).body);
    expect(panels).toEqual([
      expect.objectContaining({
        pack: 'panel-pack',
        id: 'tools',
        actions: [expect.objectContaining({ id: 'say', available: true, danger: 'safe', parameters: expect.objectContaining({ type: 'object' }) })],
      }),
    ]);
    const r = await post(c.origin, '/ui/api/panels/panel-pack/tools/say', cookie, { args: { text: 'hi', n: 1 } });
    expect([r.status, JSON.parse(r.body)]).toEqual([200, expect.objectContaining({ ok: true, value: { echoed: { text: 'hi', n: 7 } } })]);
    expect(c.fx.kernel.audit.tail().at(-1)).toMatchObject({ tool: 'panel_echo', caller: { kind: 'host', id: 'console' } });
    expect((await post(c.origin, '/ui/api/panels/panel-pack/tools/nope', cookie, {})).status).toBe(404);
    expect((await post(c.origin, '/ui/api/panels/panel-pack/tools/say', cookie, { args: [] })).status).toBe(400);
  });
});

describe('web console: bounded request bodies', () => {
  let c: ConsoleFixture;
  let cookie: string;
  // A panel action whose tool takes any arguments: deep ones would reach the kernel's recursive code.
  const openPack = {
    id: 'open-pack',
    version: '1.0.0',
    tools: [
      {
        spec: { ...tool('open_echo', 'safe', 'read'), parameters: { type: 'object' } },
        impl: (args: Record<string, unknown>) => `got ${Object.keys(args).join(',')}`,
      },
    ],
    activate: (api: PackApi) => {
      api.panels.register({ id: 'tools', title: 'Tools', actions: [{ id: 'run', label: 'Run', tool: 'open_echo' }] });
    },
  };
  beforeAll(async () => {
    c = await consoleFixture({ packs: [echoPack(), openPack] });
    cookie = await c.login();
  });
  afterAll(() => c.close());

  const send = (route: string, body: string) =>
    raw(`${c.origin}/ui/api${route}`, { method: 'POST', headers: { Cookie: cookie, Origin: c.origin, 'Content-Type': 'application/json' }, body });

  it('answers a 20,000-level nested body with 400 naming the limit on every endpoint that reads one, and keeps serving', async () => {
    await waitFor(() => c.fx.kernel.panels.list().length > 0, { what: 'the panel to be registered' });
    const routes = [
      '/panels/open-pack/tools/run',
      '/approvals/some-id',
      '/packs/echo-pack/config',
      '/providers',
      '/providers/some-provider/probe',
      '/permissions/always-allow',
      '/permissions/external-writes',
      '/chat/conversations',
      '/chat/conversations/some-id/turns',
    ];
    for (const route of routes)
      for (const shape of ['array', 'object'] as const) {
        const r = await send(route, `{"args":{"deep":${nestedJson(20_000, shape)}}}`);
        expect([route, shape, r.status, JSON.parse(r.body)]).toEqual([
          route,
          shape,
          400,
          { error: 'BAD_REQUEST', message: 'The request body is nested deeper than 64 levels.' },
        ]);
      }
    // As deep as the limit allows (64 with the body's two levels), the action runs; one level more is
    // refused. Only the call that ran is audited.
    const ok = await send('/panels/open-pack/tools/run', `{"args":{"deep":${nestedJson(62, 'object')}}}`);
    expect([ok.status, JSON.parse(ok.body)]).toEqual([200, expect.objectContaining({ ok: true, value: 'got deep' })]);
    expect((await send('/panels/open-pack/tools/run', `{"args":{"deep":${nestedJson(63, 'object')}}}`)).status).toBe(400);
    expect(c.fx.kernel.audit.tail({ tool: 'open_echo' }).map((e) => e.outcome)).toEqual(['ok']);
    expect(c.fx.logger.lines.map((l) => l.message).join('\n')).not.toMatch(/Maximum call stack|\n\s+at /);
  });

  it('answers a 10 MB body with 413 and Connection: close while the page is still uploading, and reads the rest instead of cutting the connection', async () => {
    const MiB = 1024 * 1024;
    const up = await uploadPastLimit(`${c.origin}/ui/api/providers`, { Cookie: cookie, Origin: c.origin }, 2 * MiB, 8 * MiB);
    expect({ status: up.status, connection: up.headers.connection, body: up.body, answeredMidUpload: up.answeredMidUpload, error: up.error }).toEqual({
      status: 413,
      connection: 'close',
      body: JSON.stringify({ error: 'BAD_REQUEST', message: 'The request body is over 1048576 bytes.' }),
      answeredMidUpload: true,
      error: undefined,
    });
    expect((await raw(`${c.origin}/ui/api/session`, { headers: { Cookie: cookie } })).status).toBe(200);
  });
});

describe('web console: the console pack disabled and enabled again', () => {
  let c: ConsoleFixture;
  beforeAll(async () => {
    c = await consoleFixture({ packs: [echoPack()] });
  });
  afterAll(() => c.close());

  const invoke = (text: string) => c.fx.kernel.invoke({ tool: 'echo_medium', args: { text }, caller: { kind: 'host', id: 'console-test' } });

  it('ends open event streams when the pack is disabled (nobody watches the approvals any more), answers 404, and serves the same session once enabled', async () => {
    const cookie = await c.login();
    const stream = openEvents(c.origin, cookie);
    await waitFor(() => stream.events.some((e) => e.event === 'pending'), { what: 'the pending list' });
    await c.fx.kernel.admin.setPackEnabled('console', false);
    await stream.ended;
    expect(await invoke('while the console is off')).toMatchObject({ ok: false, error: { code: 'PERMISSION_DENIED' } });
    const off = await raw(`${c.origin}/ui/api/session`, { headers: { Cookie: cookie } });
    expect([off.status, JSON.parse(off.body).message]).toEqual([
      404,
      'The console pack is disabled, so nothing is served at /ui. Turn it back on with: memo plugins enable console',
    ]);
    // No login link while it is off.
    expect(c.fx.kernel.http.link('console')).toBeUndefined();
    await c.fx.kernel.admin.setPackEnabled('console', true);
    expect((await raw(`${c.origin}/ui/api/session`, { headers: { Cookie: cookie } })).status).toBe(200);
    expect(c.fx.kernel.http.link('console')).toMatch(/\/ui\/login\?code=/);
  });

  it("records the console's changes as made by the console, through the administration view", async () => {
    const cookie = await c.login();
    expect((await post(c.origin, '/ui/api/permissions/always-allow', cookie, { on: true })).status).toBe(200);
    const lines = fs
      .readFileSync(path.join(c.fx.dataDir, 'agent-audit.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .filter((l) => l.event === 'admin');
    expect(lines.map((l) => `${l.action} ${l.target ?? '-'} by ${l.by}`)).toEqual([
      'pack.disable console by host',
      'pack.enable console by host',
      'always-allow.on - by console',
    ]);
  });
});
