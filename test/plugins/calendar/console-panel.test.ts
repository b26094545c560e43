/**
 * The calendar pack's consent panel in the web console, over real loopback HTTP with the real pack:
 * consent is the person's answer, so the panel runs `memo calendar consent` for the logged-in
 * person (a pack command, never a tool an agent could call), and its answer is the one the read
 * tools then obey.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { consoleFixture, post, raw, type ConsoleFixture } from '../../console/console-helpers.js';

describe('calendar consent in the web console', () => {
  let c: ConsoleFixture;
  let cookie: string;
  beforeAll(async () => {
    c = await consoleFixture({ packs: [] });
    const loaded = await c.fx.kernel.loadPacks([{ dir: path.resolve('plugins'), source: 'builtin', only: ['calendar'] }]);
    expect(loaded.find((s) => s.id === 'calendar')?.status).toBe('loaded');
    c.fx.kernel.packs.setConfig('calendar', { timeZone: 'UTC' });
    cookie = await c.login();
  });
  afterAll(() => c.close());

  const run = async (id: string, args: Record<string, unknown> = {}) => {
    const r = await post(c.origin, `/ui/api/panels/calendar/consent/${id}`, cookie, { args });
    return { status: r.status, body: JSON.parse(r.body) };
  };

  it('offers the consent commands as a panel, with the command’s arguments as the form', async () => {
    const panels = JSON.parse((await raw(`${c.origin}/ui/api/panels`, { headers: { Cookie: cookie } })).body);
    const consent = panels.find((p: any) => p.pack === 'calendar' && p.id === 'consent');
    expect(consent.commands.map((x: any) => [x.id, x.command, x.available, x.args ?? null])).toEqual([
      ['answers', 'calendar consent', true, null],
      ['allow', 'calendar consent', true, { answer: 'allow' }],
      ['deny', 'calendar consent', true, { answer: 'deny' }],
    ]);
    expect(Object.keys(consent.commands[1].parameters.properties)).toEqual(['service', 'answer']);
    expect(consent.commands[0].parameters.properties).toEqual({});
    // Not a tool: no agent or MCP client can give the answer.
    expect(
      c.fx.kernel.registry
        .list()
        .map((t) => t.spec.name)
        .filter((n) => n.includes('consent')),
    ).toEqual([]);
  });

  it('records the person’s answer where the read tools look, and shows it', async () => {
    expect(await run('allow', { service: 'subscriptions' })).toEqual({
      status: 200,
      body: { ok: true, summary: 'memo calendar consent', value: { service: 'subscriptions', state: 'allowed' } },
    });
    expect((await run('answers')).body.value).toEqual([{ service: 'subscriptions', state: 'allowed' }]);
    expect((await run('deny', { service: 'subscriptions' })).body.value).toEqual({ service: 'subscriptions', state: 'declined' });
    // Stored where the calendar's read tools look (consent.test.ts covers what they do with it).
    const file = path.join(c.fx.dataDir, 'packs-data', 'calendar', 'consent.json');
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toMatchObject({ services: { subscriptions: 'deny' } });
  });

  it('refuses an unknown service with the pack’s reason, an argument the command does not take, and a request from another origin', async () => {
    const unknown = await run('allow', { service: 'dropbox' });
    expect(unknown.body).toMatchObject({ ok: false, error: { message: expect.stringContaining('is not a calendar service') } });
    expect(await run('allow', { service: 'subscriptions', answer: 'deny', extra: 'x' })).toMatchObject({ status: 400 });
    expect(await run('answers', { service: 'subscriptions' })).toMatchObject({ status: 400 });
    const foreign = await raw(`${c.origin}/ui/api/panels/calendar/consent/allow`, {
      method: 'POST',
      headers: { Cookie: cookie, Origin: 'http://evil.example', 'Content-Type': 'application/json' },
      body: JSON.stringify({ args: { service: 'subscriptions' } }),
    });
    expect(foreign.status).toBe(403);
    expect((await run('answers')).body.value).toEqual([{ service: 'subscriptions', state: 'declined' }]);
  });
});
