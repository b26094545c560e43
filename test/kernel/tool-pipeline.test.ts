import { getEventListeners } from 'node:events';
import * as fs from 'node:fs';
import * as path from 'node:path';
import Database from 'better-sqlite3';
import { MemoError } from '../../kernel/errors.js';
import type { ToolResult } from '../../kernel/tools/contract.js';
import { flush, makeKernel, tool, type Fixture } from '../helpers/kernel-fixture.js';

function errorCode(r: ToolResult): string | undefined {
  return r.ok ? undefined : r.error.code;
}

function auditLines(fx: Fixture): Array<Record<string, any>> {
  return fs
    .readFileSync(path.join(fx.dataDir, 'agent-audit.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

describe('the invocation pipeline', () => {
  let fx: Fixture;
  afterEach(async () => fx?.close());

  it('runs a safe tool without asking and returns its value', async () => {
    fx = makeKernel();
    const r = await fx.kernel.invoke({ tool: 'echo_safe', args: { text: 'hi' }, caller: { kind: 'cli' } });
    expect(r).toMatchObject({ ok: true, value: { echoed: { text: 'hi' } } });
    expect(fx.prompter.asked).toHaveLength(0);
  });

  it('refuses an unknown tool with UNKNOWN_TOOL and audits it', async () => {
    fx = makeKernel();
    const r = await fx.kernel.invoke({ tool: 'no_such_tool', args: {}, caller: { kind: 'agent' } });
    expect(errorCode(r)).toBe('UNKNOWN_TOOL');
    expect(auditLines(fx).at(-1)).toMatchObject({ tool: 'no_such_tool', outcome: 'error', error: { code: 'UNKNOWN_TOOL' }, decision: 'none' });
  });

  it('treats a tool outside the scope of a scoped call as unknown', async () => {
    fx = makeKernel();
    const r = await fx.kernel.invoke({ tool: 'echo_safe', args: {}, caller: { kind: 'agent' } }, { scope: ['web_search'] });
    expect(errorCode(r)).toBe('UNKNOWN_TOOL');
    expect(r.ok ? '' : r.error.message).toContain('web_search');
  });

  it('refuses a tool of a disabled pack with TOOL_DISABLED and hides it from listings', async () => {
    fx = makeKernel();
    fx.kernel.registry.setEnabled('echo-pack', false);
    const r = await fx.kernel.invoke({ tool: 'echo_safe', args: {}, caller: { kind: 'cli' } });
    expect(errorCode(r)).toBe('TOOL_DISABLED');
    expect(fx.kernel.registry.list().map((t) => t.spec.name)).not.toContain('echo_safe');
  });

  it('lets a call guard refuse a valid call before anyone is asked, audits the refusal, and stops after disposal', async () => {
    fx = makeKernel();
    const seen: Array<{ tool: string; turn?: string }> = [];
    const guard = fx.kernel.addCallGuard({
      check: ({ tool: name, caller }) => {
        seen.push({ tool: name, ...(caller.turn ? { turn: caller.turn } : {}) });
        if (name === 'echo_medium') throw new MemoError('PERMISSION_DENIED', 'refused by the test guard', { details: { decision: 'deny:guard' } });
      },
    });
    const refused = await fx.kernel.invoke({ tool: 'echo_medium', args: {}, caller: { kind: 'agent', turn: 't1' } });
    expect(errorCode(refused)).toBe('PERMISSION_DENIED');
    expect(fx.prompter.asked).toHaveLength(0);
    expect(auditLines(fx).at(-1)).toMatchObject({ tool: 'echo_medium', outcome: 'error', decision: 'deny:guard' });
    // Invalid arguments never reach a guard.
    await fx.kernel.invoke({ tool: 'echo_safe', args: { text: 5 }, caller: { kind: 'cli' } });
    expect(seen).toEqual([{ tool: 'echo_medium', turn: 't1' }]);
    guard.dispose();
    fx.prompter.answer('allow-once');
    const allowed = await fx.kernel.invoke({ tool: 'echo_medium', args: {}, caller: { kind: 'agent' } });
    expect(allowed.ok).toBe(true);
  });

  it('names each failing field in INVALID_ARGS', async () => {
    fx = makeKernel();
    const r = await fx.kernel.invoke({ tool: 'echo_safe', args: { text: 5, n: -1, extra: true }, caller: { kind: 'cli' } });
    expect(errorCode(r)).toBe('INVALID_ARGS');
    const problems = (r as any).error.details.problems as string[];
    expect(problems.some((p) => p.startsWith('text '))).toBe(true);
    expect(problems.some((p) => p.startsWith('n '))).toBe(true);
    expect(problems.some((p) => p.startsWith('extra '))).toBe(true);
  });

  it('refuses arguments that are not an object', async () => {
    fx = makeKernel();
    const r = await fx.kernel.invoke({ tool: 'echo_safe', args: ['a'], caller: { kind: 'cli' } });
    expect(errorCode(r)).toBe('INVALID_ARGS');
  });

  it('rate-limits an identical call within the cooldown and tells how long to wait', async () => {
    fx = makeKernel({ rateLimits: { maxCalls: 30, duplicateCooldownMs: 5000 } });
    expect((await fx.kernel.invoke({ tool: 'echo_safe', args: { text: 'a', n: 1 }, caller: { kind: 'agent' } })).ok).toBe(true);
    fx.clock.advance(1200);
    const r = await fx.kernel.invoke({ tool: 'echo_safe', args: { n: 1, text: 'a' }, caller: { kind: 'agent' } });
    expect(errorCode(r)).toBe('RATE_LIMITED');
    expect((r as any).error.details.retryAfterSeconds).toBe(4);
  });

  it('refuses a write tool from an external MCP caller without a live capability', async () => {
    fx = makeKernel();
    fx.prompter.setFallback('allow-once');
    const r = await fx.kernel.invoke({ tool: 'echo_medium', args: {}, caller: { kind: 'mcp' } });
    expect(errorCode(r)).toBe('PERMISSION_DENIED');
    expect((r as any).error.message).toContain('writes need a running Memo agent turn');
    expect(fx.prompter.asked).toHaveLength(0);
    const read = await fx.kernel.invoke({ tool: 'echo_safe', args: {}, caller: { kind: 'mcp' } });
    expect(read.ok).toBe(true);
  });

  it('lets an MCP caller with a live capability reach the permission gate, and not after revocation', async () => {
    fx = makeKernel();
    fx.prompter.setFallback('allow-once');
    const cap = await fx.kernel.capabilities.mint((await fx.kernel.conversations.create()).id);
    const r = await fx.kernel.invoke({ tool: 'echo_medium', args: { text: '1' }, caller: { kind: 'mcp', capability: cap } });
    expect(r.ok).toBe(true);
    expect(fx.prompter.asked).toHaveLength(1);
    fx.kernel.capabilities.revoke(cap);
    const again = await fx.kernel.invoke({ tool: 'echo_medium', args: { text: '2' }, caller: { kind: 'mcp', capability: cap } });
    expect(errorCode(again)).toBe('PERMISSION_DENIED');
  });

  it('keeps the write capability from the prompter, which still learns who calls', async () => {
    fx = makeKernel();
    fx.prompter.setFallback('allow-once');
    const conv = await fx.kernel.conversations.create();
    const cap = await fx.kernel.capabilities.mint(conv.id);
    await fx.kernel.invoke({ tool: 'echo_medium', args: {}, caller: { kind: 'mcp', id: 'client', capability: cap } });
    expect(fx.prompter.asked[0]?.caller).toEqual({ kind: 'mcp', id: 'client', conversationId: conv.id, turn: fx.kernel.capabilities.turnOf(cap) });
    expect(JSON.stringify(fx.prompter.asked[0])).not.toContain(cap);
  });

  it('cuts an invented tool name of any length in the error and the audit line', async () => {
    fx = makeKernel();
    const r = await fx.kernel.invoke({ tool: 'x'.repeat(100_000), args: {}, caller: { kind: 'agent' } });
    expect(!r.ok && r.error.code).toBe('UNKNOWN_TOOL');
    expect(!r.ok && r.error.message.length).toBeLessThan(300);
    expect(auditLines(fx).at(-1)!.tool.length).toBe(200);
  });

  it('refuses a capability whose conversation was deleted', async () => {
    fx = makeKernel();
    fx.prompter.setFallback('allow-once');
    const conv = await fx.kernel.conversations.create();
    const cap = await fx.kernel.capabilities.mint(conv.id);
    // Removed behind the kernel's back (another process), so no delete listener revoked the capability.
    const sqlite = new Database(path.join(fx.dataDir, 'agent.sqlite'));
    sqlite.prepare('DELETE FROM conversations WHERE id = ?').run(conv.id);
    sqlite.close();
    const r = await fx.kernel.invoke({ tool: 'echo_medium', args: {}, caller: { kind: 'mcp', capability: cap } });
    expect(errorCode(r)).toBe('PERMISSION_DENIED');
    expect(fx.prompter.asked).toEqual([]);
  });

  it('mints no capability for a conversation that does not exist', async () => {
    fx = makeKernel();
    await expect(fx.kernel.capabilities.mint('conv-invented')).rejects.toMatchObject({
      code: 'NOT_FOUND',
      message: expect.stringMatching(/no conversation "conv-invented"/),
    });
    expect(fx.kernel.capabilities.size).toBe(0);
  });

  it('turns a thrown error into TOOL_FAILED naming the plugin and tool', async () => {
    fx = makeKernel({
      packs: [
        {
          id: 'bad',
          tools: [
            {
              spec: tool('explode', 'safe'),
              impl: () => {
                throw new Error('boom');
              },
            },
          ],
        },
      ],
    });
    const r = await fx.kernel.invoke({ tool: 'explode', args: {}, caller: { kind: 'cli' } });
    expect(r).toMatchObject({ ok: false, error: { code: 'TOOL_FAILED', plugin: 'bad', tool: 'explode' } });
    expect((r as any).error.message).toContain('boom');
  });

  it('turns a rejected promise into TOOL_FAILED', async () => {
    // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the case under test: a handler rejecting with a non-Error
    fx = makeKernel({ packs: [{ id: 'bad', tools: [{ spec: tool('reject', 'safe'), impl: async () => Promise.reject('nope') }] }] });
    const r = await fx.kernel.invoke({ tool: 'reject', args: {}, caller: { kind: 'cli' } });
    expect(errorCode(r)).toBe('TOOL_FAILED');
  });

  it.each([
    ['a function', () => () => 1],
    [
      'a circular object',
      () => {
        const o: any = {};
        o.self = o;
        return o;
      },
    ],
    ['a BigInt', () => 10n],
    ['a Map', () => new Map()],
    ['NaN', () => NaN],
  ])('turns a handler returning %s into TOOL_FAILED', async (_what, impl) => {
    fx = makeKernel({ packs: [{ id: 'bad', tools: [{ spec: tool('garbage', 'safe'), impl }] }] });
    const r = await fx.kernel.invoke({ tool: 'garbage', args: {}, caller: { kind: 'cli' } });
    expect(errorCode(r)).toBe('TOOL_FAILED');
    expect((r as any).error.message).toContain('cannot be passed on');
  });

  it('keeps the code of a MemoError a handler throws (NOT_FOUND, VALIDATION, CONFLICT, PATH_*, COMMAND_BLOCKED)', async () => {
    const codes = ['NOT_FOUND', 'VALIDATION', 'CONFLICT', 'PATH_OUTSIDE_ROOT', 'PATH_PROTECTED', 'COMMAND_BLOCKED'] as const;
    fx = makeKernel({
      packs: [
        {
          id: 'thrower',
          tools: [
            {
              spec: { ...tool('throw_code', 'safe'), parameters: { type: 'object', properties: { code: { type: 'string' } } } },
              impl: (args) => {
                throw new MemoError(args.code as any, `failed with ${String(args.code)}`);
              },
            },
          ],
        },
      ],
    });
    for (const code of codes) {
      const r = await fx.kernel.invoke({ tool: 'throw_code', args: { code }, caller: { kind: 'cli' } });
      expect(errorCode(r)).toBe(code);
      expect((r as any).error.plugin).toBe('thrower');
    }
  });

  it('stops a handler that outlives its timeout with TIMEOUT and aborts its signal', async () => {
    let seen: AbortSignal | undefined;
    fx = makeKernel({
      packs: [
        {
          id: 'slow',
          tools: [
            {
              spec: tool('hang', 'safe', 'read', { timeoutMs: 1000 }),
              impl: (_a, ctx) => {
                seen = ctx.signal;
                return new Promise(() => {});
              },
            },
          ],
        },
      ],
    });
    const pending = fx.kernel.invoke({ tool: 'hang', args: {}, caller: { kind: 'cli' } });
    await flush();
    fx.clock.advance(999);
    await flush();
    expect(seen?.aborted).toBe(false);
    fx.clock.advance(1);
    const r = await pending;
    expect(errorCode(r)).toBe('TIMEOUT');
    expect(seen?.aborted).toBe(true);
  });

  it('uses the 120 s default timeout when a tool declares none', async () => {
    fx = makeKernel({ packs: [{ id: 'slow', tools: [{ spec: tool('hang', 'safe'), impl: () => new Promise(() => {}) }] }] });
    const pending = fx.kernel.invoke({ tool: 'hang', args: {}, caller: { kind: 'cli' } });
    await flush();
    fx.clock.advance(119_999);
    await flush();
    let done = false;
    void pending.then(() => (done = true));
    await flush();
    expect(done).toBe(false);
    fx.clock.advance(1);
    expect(errorCode(await pending)).toBe('TIMEOUT');
  });

  it('passes cancellation to the handler and reports CANCELLED', async () => {
    let handlerSawAbort = false;
    fx = makeKernel({
      packs: [
        {
          id: 'slow',
          tools: [
            {
              spec: tool('wait', 'safe'),
              impl: (_a, ctx) =>
                new Promise((_, rej) =>
                  ctx.signal.addEventListener('abort', () => {
                    handlerSawAbort = true;
                    rej(new Error('aborted'));
                  }),
                ),
            },
          ],
        },
      ],
    });
    const ac = new AbortController();
    const pending = fx.kernel.invoke({ tool: 'wait', args: {}, caller: { kind: 'agent' }, signal: ac.signal });
    await flush();
    ac.abort();
    expect(errorCode(await pending)).toBe('CANCELLED');
    expect(handlerSawAbort).toBe(true);
  });

  it('cancels a call whose handler never looks at its signal, when the caller aborts in a later turn, and a signal read afterwards is already aborted', async () => {
    let ctxOf: { signal: AbortSignal } | undefined;
    fx = makeKernel({
      packs: [
        {
          id: 'deaf',
          tools: [
            {
              spec: tool('wait', 'safe'),
              impl: (_a, ctx) => {
                ctxOf = ctx;
                return new Promise(() => {});
              },
            },
          ],
        },
      ],
    });
    const ac = new AbortController();
    const pending = fx.kernel.invoke({ tool: 'wait', args: {}, caller: { kind: 'agent' }, signal: ac.signal });
    await new Promise((r) => setTimeout(r, 5));
    ac.abort(new Error('user pressed stop'));
    expect(errorCode(await pending)).toBe('CANCELLED');
    expect(ctxOf!.signal.aborted).toBe(true);
    expect((ctxOf!.signal.reason as Error).message).toBe('user pressed stop');
  });

  it('cancels a call whose caller aborted synchronously after starting it, before its handler runs', async () => {
    let ran = false;
    fx = makeKernel({ packs: [{ id: 'p', tools: [{ spec: tool('t', 'safe'), impl: () => ((ran = true), 'done') }] }] });
    const ac = new AbortController();
    const pending = fx.kernel.invoke({ tool: 't', args: {}, caller: { kind: 'agent' }, signal: ac.signal });
    ac.abort();
    expect(errorCode(await pending)).toBe('CANCELLED');
    expect(ran).toBe(false);
  });

  it('leaves no listener on a caller signal reused for many calls, quick or slow', async () => {
    fx = makeKernel({
      packs: [
        {
          id: 'p',
          tools: [
            { spec: tool('quick', 'safe'), impl: () => 'ok' },
            { spec: tool('slow', 'safe'), impl: () => new Promise((r) => setTimeout(() => r('ok'), 2)) },
          ],
        },
      ],
    });
    const ac = new AbortController();
    for (let i = 0; i < 20; i++) {
      expect((await fx.kernel.invoke({ tool: i % 2 ? 'slow' : 'quick', args: {}, caller: { kind: 'agent' }, signal: ac.signal })).ok).toBe(true);
    }
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
  });

  it('aborts running handlers at shutdown', async () => {
    let aborted = false;
    fx = makeKernel({
      packs: [
        {
          id: 'slow',
          tools: [{ spec: tool('wait', 'safe'), impl: (_a, ctx) => new Promise(() => ctx.signal.addEventListener('abort', () => (aborted = true))) }],
        },
      ],
    });
    const pending = fx.kernel.invoke({ tool: 'wait', args: {}, caller: { kind: 'agent' } });
    await flush();
    await fx.kernel.shutdown();
    expect(errorCode(await pending)).toBe('CANCELLED');
    expect(aborted).toBe(true);
  });

  it('audits every outcome with caller, pack, masked args, decision and duration', async () => {
    fx = makeKernel();
    fx.prompter.answer('allow-once', 'deny-once');
    await fx.kernel.invoke({ tool: 'echo_safe', args: { text: 'a' }, caller: { kind: 'cli', id: 'tester' } });
    await fx.kernel.invoke({ tool: 'echo_medium', args: { text: 'b' }, caller: { kind: 'agent', conversationId: 'c1' } });
    await fx.kernel.invoke({ tool: 'echo_dangerous', args: { text: 'c' }, caller: { kind: 'agent' } });
    await fx.kernel.invoke({ tool: 'echo_safe', args: { text: 1 }, caller: { kind: 'cli' } });
    const lines = auditLines(fx);
    expect(lines.map((l) => [l.tool, l.decision, l.outcome])).toEqual([
      ['echo_safe', 'auto', 'ok'],
      ['echo_medium', 'allow:once', 'ok'],
      ['echo_dangerous', 'deny:once', 'error'],
      ['echo_safe', 'none', 'error'],
    ]);
    expect(lines[0]).toMatchObject({ caller: { kind: 'cli', id: 'tester' }, pack: 'echo-pack', args: { text: 'a' } });
    expect(lines[1]?.caller.conversationId).toBe('c1');
    expect(typeof lines[0]?.durationMs).toBe('number');
  });

  it('keeps secrets out of the audit line, the error message and the summary', async () => {
    const secret = 'sk-live-ABCDEFGHIJKLMNOPQRSTUVWX';
    fx = makeKernel({
      packs: [
        {
          id: 'leaky',
          tools: [
            {
              spec: { ...tool('leak', 'safe'), parameters: { type: 'object', properties: { apiKey: { type: 'string' }, note: { type: 'string' } } } },
              impl: (args) => {
                throw new Error(`provider said: bad key ${String(args.apiKey)}`);
              },
            },
            {
              spec: { ...tool('echo_back', 'safe'), parameters: { type: 'object', properties: { password: { type: 'string' } } } },
              impl: (args) => `your password is ${String(args.password)}`,
            },
          ],
        },
      ],
    });
    const r = await fx.kernel.invoke({ tool: 'leak', args: { apiKey: secret, note: 'n' }, caller: { kind: 'cli' } });
    expect(JSON.stringify(r)).not.toContain(secret);
    const r2 = await fx.kernel.invoke({ tool: 'echo_back', args: { password: 'hunter2-long' }, caller: { kind: 'cli' } });
    expect(r2.ok && r2.summary).not.toContain('hunter2-long');
    const file = fs.readFileSync(path.join(fx.dataDir, 'agent-audit.jsonl'), 'utf8');
    expect(file).not.toContain(secret);
    expect(file).not.toContain('hunter2-long');
    expect(file).toContain('[masked]');
  });

  it('reports progress from the handler to the caller', async () => {
    fx = makeKernel({
      packs: [
        {
          id: 'p',
          tools: [
            {
              spec: tool('steps', 'safe'),
              impl: (_a, ctx) => {
                ctx.progress({ progress: 1, total: 2 });
                ctx.progress({ progress: 2, total: 2 });
                return 'done';
              },
            },
          ],
        },
      ],
    });
    const seen: number[] = [];
    await fx.kernel.invoke({ tool: 'steps', args: {}, caller: { kind: 'cli' }, onProgress: (p) => seen.push(p.progress) });
    expect(seen).toEqual([1, 2]);
  });

  it('writes audit lines whole and in order when many calls run at once', async () => {
    fx = makeKernel({
      packs: [
        {
          id: 'p',
          tools: [
            {
              spec: tool('later', 'safe'),
              impl: async (a) => {
                await new Promise((r) => setTimeout(r, Math.random() * 5));
                return a;
              },
            },
          ],
        },
      ],
    });
    await Promise.all(
      Array.from({ length: 200 }, (_, i) => fx.kernel.invoke({ tool: 'later', args: { n: i, text: 'x'.repeat(300) }, caller: { kind: 'agent' } })),
    );
    const lines = auditLines(fx);
    expect(lines).toHaveLength(200);
    expect(lines.map((l) => l.seq)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
    expect(new Set(lines.map((l) => l.args.n)).size).toBe(200);
  });
});

describe('the tool registry', () => {
  let fx: Fixture;
  afterEach(async () => fx?.close());

  it('refuses a second pack declaring an existing tool name with CONFLICT', () => {
    fx = makeKernel();
    expect(() => fx.kernel.registerPack({ id: 'other', tools: [{ spec: tool('echo_safe', 'safe'), impl: () => 1 }] })).toThrow(
      expect.objectContaining({ code: 'CONFLICT', message: expect.stringContaining('already provided by pack "echo-pack"') }),
    );
    expect(fx.kernel.registry.pack('other')).toBeUndefined();
  });

  it('refuses a parameters schema ajv cannot compile, registering none of the pack', () => {
    fx = makeKernel();
    expect(() =>
      fx.kernel.registerPack({
        id: 'broken',
        tools: [
          { spec: tool('fine_tool', 'safe'), impl: () => 1 },
          { spec: { ...tool('bad_schema', 'safe'), parameters: { type: 'object', properties: { a: { type: 'strnig' } } } }, impl: () => 1 },
        ],
      }),
    ).toThrow(expect.objectContaining({ code: 'VALIDATION', message: expect.stringContaining('bad_schema') }));
    expect(fx.kernel.registry.has('fine_tool')).toBe(false);
  });

  it('compiles a parameters schema on the first call: one the meta-schema accepts but Ajv cannot compile registers, and its calls fail with TOOL_FAILED saying why', async () => {
    fx = makeKernel();
    fx.kernel.registerPack({
      id: 'dangling-ref',
      tools: [{ spec: { ...tool('ref_tool', 'safe'), parameters: { type: 'object', properties: { a: { $ref: '#/definitions/missing' } } } }, impl: () => 1 }],
    });
    const r = await fx.kernel.invoke({ tool: 'ref_tool', args: { a: 1 }, caller: { kind: 'agent' } });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error.code).toBe('TOOL_FAILED');
      expect(r.error.message).toMatch(/ref_tool has a parameters schema that cannot be compiled/);
    }
    // The other tools' validators still compile and check on their first call.
    const bad = await fx.kernel.invoke({ tool: 'echo_safe', args: { text: 5 }, caller: { kind: 'agent' } });
    expect(bad.ok ? 'ok' : bad.error.code).toBe('INVALID_ARGS');
  });

  it('refuses an invalid declaration and says what is wrong', () => {
    fx = makeKernel();
    expect(() => fx.kernel.registerPack({ id: 'x', tools: [{ spec: { ...tool('t', 'safe'), danger: 'risky' as any }, impl: () => 1 }] })).toThrow(
      /danger must be one of/,
    );
    expect(() => fx.kernel.registerPack({ id: 'x', tools: [{ spec: tool('bad name!', 'safe'), impl: () => 1 }] })).toThrow(/name must match/);
    expect(() => fx.kernel.registerPack({ id: 'x', tools: [{ spec: tool('t', 'safe'), impl: undefined as any }] })).toThrow(/no handler/);
  });

  it('removes exactly what a pack registered when its registration is disposed, and emits one change each time', () => {
    fx = makeKernel();
    const changes: string[] = [];
    fx.kernel.registry.onChange((c) => changes.push(`${c.kind}:${c.pack}`));
    const d = fx.kernel.registerPack({ id: 'temp', tools: [{ spec: tool('temp_tool', 'safe'), impl: () => 1 }] });
    expect(fx.kernel.registry.has('temp_tool')).toBe(true);
    d.dispose();
    d.dispose();
    expect(fx.kernel.registry.has('temp_tool')).toBe(false);
    expect(fx.kernel.registry.has('echo_safe')).toBe(true);
    expect(changes).toEqual(['added:temp', 'removed:temp']);
  });
});
