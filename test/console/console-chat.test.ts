/**
 * Chat through the web console's API over real loopback HTTP: a turn runs the real agent loop and
 * conversation store (encrypted SQLite), its steps come live over the console's event stream, a
 * step waiting for approval is named in the turn, the stop button aborts the turn, and bad
 * requests are refused with a reason. The model is the only fake (a scripted provider registered
 * as a provider kind, as a pack would).
 */
import type { ChatRequest } from '../../kernel/providers/provider.js';
import { echoPack } from '../helpers/kernel-fixture.js';
import { reply, ScriptedProvider, toolCall } from '../helpers/scripted-provider.js';
import { waitFor } from '../helpers/wait.js';
import { consoleFixture, openEvents, post, raw, type ConsoleFixture, type EventStream } from './console-helpers.js';

/** echo_safe first, then an answer; `write` asks for echo_medium (needs approval) first. */
function script(request: ChatRequest) {
  const last = request.messages.at(-1)!;
  const user = [...request.messages].reverse().find((m) => m.role === 'user')!.content;
  if (last.role === 'tool') return reply(`done: ${last.content}`);
  if (user.startsWith('write')) return reply('', toolCall('echo_medium', { text: user }));
  if (user.startsWith('echo')) return reply('', toolCall('echo_safe', { text: user.slice(5) }));
  return reply(`You said: ${user}`);
}

describe('web console: chat', () => {
  let c: ConsoleFixture;
  let cookie: string;
  let events: EventStream;
  const model = new ScriptedProvider((r) => script(r));

  beforeAll(async () => {
    c = await consoleFixture({ packs: [echoPack()] });
    // As a pack's factory does: the provider carries its configuration's name.
    c.fx.kernel.providers.register(
      'scripted',
      (config) => ({ name: config.name, kind: 'scripted', chat: (r) => model.chat(r), contextWindow: () => undefined }),
      'test',
    );
    c.fx.kernel.providerSettings.put({ name: 'test', kind: 'scripted', model: 'rules-1' });
    cookie = await c.login();
    events = openEvents(c.origin, cookie);
    expect(await events.status).toBe(200);
  });
  afterAll(async () => {
    events.close();
    await c.close();
  });

  const get = async (path: string) => {
    const r = await raw(`${c.origin}/ui/api${path}`, { headers: { Cookie: cookie } });
    return { status: r.status, body: JSON.parse(r.body) };
  };
  const send = async (path: string, body: unknown, method = 'POST') => {
    const r =
      method === 'POST'
        ? await post(c.origin, `/ui/api${path}`, cookie, body)
        : await raw(`${c.origin}/ui/api${path}`, {
            method,
            // node:http sends a DELETE body only with its length (a browser always gives it).
            headers: { Cookie: cookie, Origin: c.origin, 'Content-Type': 'application/json', 'Content-Length': String(JSON.stringify(body).length) },
            body: JSON.stringify(body),
          });
    return { status: r.status, body: JSON.parse(r.body) };
  };
  const turnEvents = (turnId: string) => events.events.filter((e) => e.event === 'chat' && e.data.id === turnId).map((e) => e.data);

  it('offers the configured providers without their keys', async () => {
    c.fx.kernel.providerSettings.put({ name: 'keyed', kind: 'scripted', model: 'm', apiKey: 'sk-secret-value-123456' });
    const r = await get('/chat/options');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      providers: [
        { name: 'keyed', kind: 'scripted', model: 'm' },
        { name: 'test', kind: 'scripted', model: 'rules-1' },
      ],
      active: 'test',
      webSearch: false,
      clis: expect.any(Array),
    });
    // The agent CLIs are listed whether installed or not: one that is not says why.
    expect(r.body.clis.map((x: any) => [x.name, x.provider])).toEqual([
      ['cli:claude', 'claude-cli'],
      ['cli:codex', 'codex-cli'],
      ['cli:agy', 'antigravity-cli'],
    ]);
    for (const x of r.body.clis) expect(x.found ? typeof x.version : typeof x.reason).toBe('string');
    expect(JSON.stringify(r.body)).not.toContain('sk-secret');
    c.fx.kernel.providerSettings.remove('keyed');
  });

  it('runs a turn: the step arrives over the event stream while it runs, then the answer; the conversation is stored', async () => {
    const conv = await send('/chat/conversations', {});
    expect(conv.status).toBe(201);
    const started = await send(`/chat/conversations/${conv.body.id}/turns`, { message: 'echo hello' });
    expect(started.status).toBe(202);
    // No mode: the stored default access mode (Computer access until one is stored).
    expect(started.body).toMatchObject({ state: 'running', provider: 'test', model: 'rules-1', mode: 'computer', message: 'echo hello' });
    const end = await waitFor(() => turnEvents(started.body.id).find((v) => v.state !== 'running'), { what: 'the turn to end' });
    expect(end).toMatchObject({ state: 'final', answer: expect.stringContaining('done: ') });
    expect(end.steps).toEqual([
      expect.objectContaining({
        iteration: 1,
        tool: 'echo_safe',
        args: { text: 'hello' },
        state: 'ok',
        raw: expect.objectContaining({ args: { text: 'hello' } }),
      }),
    ]);
    expect(JSON.parse(end.steps[0].raw.result)).toEqual({ echoed: { text: 'hello' } });
    // Before the end, the stream carried the step while it was running and when it ended.
    const states = turnEvents(started.body.id).flatMap((v) => v.steps.map((s: any) => s.state));
    expect(states.slice(0, 2)).toEqual(['running', 'ok']);

    const t = await get(`/chat/conversations/${conv.body.id}`);
    expect(t.body.messages.map((m: any) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(t.body.activity).toEqual([expect.objectContaining({ tool: 'echo_safe', outcome: 'ok', turnSeq: t.body.messages[0].seq })]);
    expect(t.body.running).toBeNull();
    const list = await get('/chat/conversations');
    expect(list.body.find((x: any) => x.id === conv.body.id)).toMatchObject({ messages: 4, running: false, provider: 'test' });
    // The title the model gives after the first exchange comes over the stream too.
    const titled = await waitFor(() => events.events.find((e) => e.event === 'chat-title' && e.data.conversationId === conv.body.id), { what: 'the title' });
    expect((await get('/chat/conversations')).body.find((x: any) => x.id === conv.body.id).title).toBe(titled.data.title);
    // The turn was the agent of that conversation, through the pipeline.
    expect(c.fx.kernel.audit.tail().at(-1)).toMatchObject({ tool: 'echo_safe', caller: { kind: 'agent', conversationId: conv.body.id } });
  });

  it('names the step waiting for approval, and the stop button ends the turn as stopped (the waiting call is cancelled, never run)', async () => {
    const conv = await send('/chat/conversations', {});
    const started = await send(`/chat/conversations/${conv.body.id}/turns`, { message: 'write it' });
    const waiting = await waitFor(() => turnEvents(started.body.id).find((v) => v.waiting.length > 0), { what: 'the turn to wait for approval' });
    const pending = c.fx.kernel.approvals.pending();
    // The request itself comes with it, so the turn can be answered where it is shown.
    expect(waiting.waiting).toEqual([
      {
        id: pending[0]!.id,
        tool: 'echo_medium',
        approval: expect.objectContaining({ id: pending[0]!.id, tool: 'echo_medium', revision: 1, answerable: true, expiresInMs: expect.any(Number) }),
      },
    ]);
    expect((await send(`/chat/conversations/${conv.body.id}/turns`, { message: 'again' })).status).toBe(409);
    const t = await get(`/chat/conversations/${conv.body.id}`);
    expect(t.body.running).toMatchObject({ id: started.body.id, state: 'running' });

    expect((await send(`/chat/turns/${started.body.id}/stop`, {})).status).toBe(202);
    const end = await waitFor(() => turnEvents(started.body.id).find((v) => v.state !== 'running'), { what: 'the turn to stop' });
    expect(end).toMatchObject({ state: 'cancelled', waiting: [] });
    expect(end.steps[0]).toMatchObject({ tool: 'echo_medium', state: 'error', code: 'CANCELLED' });
    expect(c.fx.kernel.approvals.pending()).toEqual([]);
    expect((await send(`/chat/turns/${started.body.id}/stop`, {})).status).toBe(404);
  });

  it('runs in web-search mode with only web_search offered to the model', async () => {
    const conv = await send('/chat/conversations', {});
    const before = model.requests.length;
    const started = await send(`/chat/conversations/${conv.body.id}/turns`, { message: 'echo x', mode: 'web' });
    const end = await waitFor(() => turnEvents(started.body.id).find((v) => v.state !== 'running'), { what: 'the turn to end' });
    expect(model.requests[before]!.tools).toEqual([]);
    expect(end.steps[0]).toMatchObject({ tool: 'echo_safe', state: 'error', code: 'UNKNOWN_TOOL' });
  });

  it('runs "agent" in the stored default access mode: in Vault only a tool outside it is not offered, and a call of it is unknown', async () => {
    await c.fx.kernel.admin.setDefaultMode('vault', 'test');
    try {
      const conv = await send('/chat/conversations', {});
      const before = model.requests.length;
      const started = await send(`/chat/conversations/${conv.body.id}/turns`, { message: 'echo x', mode: 'agent' });
      expect(started.body).toMatchObject({ mode: 'vault' });
      const end = await waitFor(() => turnEvents(started.body.id).find((v) => v.state !== 'running'), { what: 'the turn to end' });
      expect(model.requests[before]!.tools.map((t) => t.name)).not.toContain('echo_safe');
      expect(end.steps[0]).toMatchObject({ tool: 'echo_safe', state: 'error', code: 'UNKNOWN_TOOL' });
      // An explicit mode wins over the stored default.
      const computer = await send(`/chat/conversations/${conv.body.id}/turns`, { message: 'echo y', mode: 'computer' });
      expect(computer.body).toMatchObject({ mode: 'computer' });
      const done = await waitFor(() => turnEvents(computer.body.id).find((v) => v.state !== 'running'), { what: 'the second turn to end' });
      expect(done.steps[0]).toMatchObject({ tool: 'echo_safe', state: 'ok' });
    } finally {
      await c.fx.kernel.admin.setDefaultMode('computer', 'test');
    }
  });

  it('refuses bad turns with a reason, and deletes a conversation', async () => {
    const conv = await send('/chat/conversations', {});
    const id = conv.body.id;
    expect((await send(`/chat/conversations/${id}/turns`, { message: '  ' })).body.error).toBe('BAD_REQUEST');
    expect((await send(`/chat/conversations/${id}/turns`, { message: 'hi', mode: 'everything' })).status).toBe(400);
    expect(await send(`/chat/conversations/${id}/turns`, { message: 'hi', provider: 'nope' })).toMatchObject({ status: 404 });
    expect((await send('/chat/conversations/00000000-0000-0000-0000-000000000000/turns', { message: 'hi' })).status).toBe(404);
    const crossSite = await raw(`${c.origin}/ui/api/chat/conversations/${id}/turns`, {
      method: 'POST',
      headers: { Cookie: cookie, Origin: 'http://evil.example', 'Content-Type': 'application/json' },
      body: JSON.stringify({ message: 'hi' }),
    });
    expect(crossSite.status).toBe(403);
    expect((await raw(`${c.origin}/ui/api/chat/conversations`)).status).toBe(401);
    expect((await send(`/chat/conversations/${id}`, {}, 'DELETE')).body).toEqual({ deleted: true });
    expect((await get(`/chat/conversations/${id}`)).status).toBe(404);
  });

  it('says no provider is configured when there is none', async () => {
    c.fx.kernel.providerSettings.remove('test');
    const conv = await send('/chat/conversations', {});
    expect(await send(`/chat/conversations/${conv.body.id}/turns`, { message: 'hi' })).toMatchObject({ status: 409, body: { error: 'NO_PROVIDER' } });
  });

  it('refuses a turn with malformed mentions, an unknown agent CLI, one not installed, or a CLI in Web search only, each with its reason', async () => {
    const conv = await send('/chat/conversations', {});
    const turn = (body: object) => send(`/chat/conversations/${conv.body.id}/turns`, { message: 'hi', ...body });
    expect(await turn({ mentions: 'Launch plan' })).toMatchObject({ status: 400, body: { message: expect.stringContaining('"mentions" must be a list') } });
    expect(await turn({ mentions: [{ type: 'spaceship', id: 'x', title: 'X' }] })).toMatchObject({
      status: 400,
      body: { message: expect.stringContaining('Each mention is') },
    });
    expect(await turn({ provider: 'cli:nano' })).toMatchObject({ status: 404, body: { message: expect.stringContaining('no agent CLI "nano"') } });
    expect(await turn({ provider: 'cli:claude', mode: 'web' })).toMatchObject({
      status: 400,
      body: { message: expect.stringContaining('Web search only does not apply') },
    });
    const clis = (await get('/chat/options')).body.clis as Array<{ id: string; found: boolean; label: string }>;
    const missing = clis.find((x) => !x.found);
    if (missing)
      expect(await turn({ provider: `cli:${missing.id}`, mode: 'vault' })).toMatchObject({
        status: 409,
        body: { message: expect.stringContaining(`${missing.label} is not available`) },
      });
    // Nothing ran: the conversation has no message.
    expect((await c.fx.kernel.conversations.info(conv.body.id)).messages).toBe(0);
  });

  it('says what it cannot show: an unknown kind of item, a tool that is not loaded, an artifact name that is not one .html file', async () => {
    expect(await get('/items/spaceship/1')).toMatchObject({ status: 404, body: { message: expect.stringContaining('no kind of item called "spaceship"') } });
    // No vault pack here: its read tool does not exist.
    expect(await get('/items/note/abc')).toMatchObject({ status: 409, body: { error: 'UNKNOWN_TOOL' } });
    expect(await get('/artifact?note=abc&name=../secret.txt')).toMatchObject({
      status: 400,
      body: { message: 'An artifact is one .html file beside its note.' },
    });
    // The mention search says which kinds it could not search, and why.
    const found = await get('/mentions?q=plan');
    expect(found.status).toBe(200);
    expect(found.body.results).toEqual([]);
    expect(found.body.missing.map((m: any) => m.type)).toEqual(['note', 'task', 'journal', 'inbox', 'event']);
  });
});
