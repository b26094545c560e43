import * as fs from 'node:fs';
import * as path from 'node:path';
import type { PermissionAnswer } from '../../kernel/permissions/prompter.js';
import type { ToolResult } from '../../kernel/tools/contract.js';
import { flush, makeKernel, tempDir, tool, type Fixture } from '../helpers/kernel-fixture.js';
import { MemoError } from '../../kernel/errors.js';

const code = (r: ToolResult) => (r.ok ? 'ok' : r.error.code);
const call = (fx: Fixture, tool: string, text = 'x', sessionId?: string) =>
  fx.kernel.invoke({ tool, args: { text }, caller: { kind: 'agent', ...(sessionId ? { sessionId } : {}) } });

describe('the permission gate', () => {
  let fx: Fixture;
  afterEach(async () => fx?.close());

  it('runs safe tools without asking, whatever allow is stored', async () => {
    fx = makeKernel();
    expect(code(await call(fx, 'echo_safe'))).toBe('ok');
    fx.kernel.permissions.set({ tool: 'echo_safe', decision: 'allow', plugin: 'echo-pack', scope: 'forever' }, new Date());
    expect(code(await call(fx, 'echo_safe'))).toBe('ok');
    expect(fx.prompter.asked).toHaveLength(0);
  });

  it("refuses a call whose preview throws with the preview's own error, before anyone is asked, and records why", async () => {
    let ran = 0;
    const impl = () => {
      ran++;
      return { done: true };
    };
    fx = makeKernel({
      packs: [
        {
          id: 'previews',
          version: '1.0.0',
          tools: [
            {
              spec: tool('move_out', 'medium', 'write'),
              impl: { run: impl, preview: () => Promise.reject(new MemoError('PATH_OUTSIDE_ROOT', '../etc/passwd is outside the root.')) },
            },
            { spec: tool('broken_preview', 'medium', 'write'), impl: { run: impl, preview: () => Promise.reject(new Error('renderer crashed')) } },
          ],
        },
      ],
    });
    const outside = await fx.kernel.invoke({ tool: 'move_out', args: { text: 'x' }, caller: { kind: 'agent' } });
    expect(outside).toMatchObject({ ok: false, error: { code: 'PATH_OUTSIDE_ROOT', message: '../etc/passwd is outside the root.' } });
    const broken = await fx.kernel.invoke({ tool: 'broken_preview', args: { text: 'x' }, caller: { kind: 'agent' } });
    expect(broken).toMatchObject({
      ok: false,
      error: { code: 'TOOL_FAILED', message: 'broken_preview failed: renderer crashed' },
    });
    expect([ran, fx.prompter.asked.length]).toEqual([0, 0]);
    expect(
      fx.kernel.audit
        .tail()
        .slice(-2)
        .map((e) => [e.tool, e.decision, e.error?.code]),
    ).toEqual([
      ['move_out', 'deny:preview-failed', 'PATH_OUTSIDE_ROOT'],
      ['broken_preview', 'deny:preview-failed', 'TOOL_FAILED'],
    ]);
  });

  it('refuses a safe tool a person denied (memo permissions deny), without asking, and runs it again once revoked', async () => {
    fx = makeKernel();
    await fx.kernel.admin.deny('echo_safe', 'cli');
    const denied = await call(fx, 'echo_safe');
    expect([code(denied), denied.ok ? '' : denied.error.message]).toEqual([
      'PERMISSION_DENIED',
      'echo_safe is denied (permanently; see `memo permissions list`).',
    ]);
    expect(fx.kernel.audit.tail().at(-1)).toMatchObject({ tool: 'echo_safe', decision: 'deny:stored', outcome: 'error' });
    await fx.kernel.admin.revoke('echo_safe', 'cli');
    expect(code(await call(fx, 'echo_safe'))).toBe('ok');
    expect(fx.prompter.asked).toHaveLength(0);
  });

  // The policy matrix: each answer x each non-safe danger, then the same call again in the same
  // session, in a new session, and after a restart.
  // (The lifetimes of conversations and minutes are in approval-lifetimes.test.ts.)
  const expectations: Record<
    Extract<PermissionAnswer, 'allow-once' | 'allow-session' | 'allow-forever' | 'deny-once' | 'deny-forever'>,
    { first: string; sameSession: string; newSession: string; afterRestart: string }
  > = {
    'allow-once': { first: 'ok', sameSession: 'ask', newSession: 'ask', afterRestart: 'ask' },
    'allow-session': { first: 'ok', sameSession: 'ok', newSession: 'ask', afterRestart: 'ask' },
    'allow-forever': { first: 'ok', sameSession: 'ok', newSession: 'ok', afterRestart: 'ok' },
    'deny-once': { first: 'PERMISSION_DENIED', sameSession: 'ask', newSession: 'ask', afterRestart: 'ask' },
    'deny-forever': { first: 'PERMISSION_DENIED', sameSession: 'PERMISSION_DENIED', newSession: 'PERMISSION_DENIED', afterRestart: 'PERMISSION_DENIED' },
  };
  const cases = (['echo_medium', 'echo_dangerous'] as const).flatMap((t) =>
    (Object.keys(expectations) as Array<keyof typeof expectations>).map((a) => [t, a] as const),
  );

  it.each(cases)('%s answered %s is remembered exactly as the policy says', async (toolName, answer) => {
    fx = makeKernel();
    const exp = expectations[answer];
    // After the first answer, any further question is answered "deny-once" so asking is visible.
    fx.prompter.answer(answer);
    expect(code(await call(fx, toolName, 'a', 's1'))).toBe(exp.first);
    expect(fx.prompter.asked).toHaveLength(1);
    expect(fx.prompter.asked[0]).toMatchObject({ tool: toolName, standingApprovalAllowed: true });

    const observe = async (f: Fixture, session: string, text: string) => {
      const before = f.prompter.asked.length;
      const c = code(await call(f, toolName, text, session));
      return f.prompter.asked.length > before ? 'ask' : c;
    };
    expect(await observe(fx, 's1', 'b')).toBe(exp.sameSession);
    expect(await observe(fx, 's2', 'c')).toBe(exp.newSession);
    fx = await fx.restart();
    expect(await observe(fx, 's1', 'd')).toBe(exp.afterRestart);
  });

  it('asks every time for a delete tool even after AllowForever, and stores nothing', async () => {
    fx = makeKernel();
    fx.prompter.answer('allow-forever', 'allow-session');
    expect(code(await call(fx, 'echo_delete', 'a'))).toBe('ok');
    expect(code(await call(fx, 'echo_delete', 'b'))).toBe('ok');
    expect(code(await call(fx, 'echo_delete', 'c'))).toBe('PERMISSION_DENIED');
    expect(fx.prompter.asked.map((a) => a.standingApprovalAllowed)).toEqual([false, false, false]);
    expect(fx.kernel.permissions.list()).toEqual([]);
  });

  it('asks every time for a confirm:always tool even when its permission is stored as allowed', async () => {
    fx = makeKernel();
    fx.kernel.permissions.set({ tool: 'echo_confirm', decision: 'allow', plugin: 'echo-pack', scope: 'forever' }, new Date());
    fx.prompter.answer('allow-once');
    expect(code(await call(fx, 'echo_confirm', 'a'))).toBe('ok');
    expect(code(await call(fx, 'echo_confirm', 'b'))).toBe('PERMISSION_DENIED');
    expect(fx.prompter.asked).toHaveLength(2);
  });

  it('lets a stored deny win over a session allow', async () => {
    fx = makeKernel();
    fx.prompter.answer('allow-session');
    expect(code(await call(fx, 'echo_medium', 'a'))).toBe('ok');
    fx.kernel.permissions.set({ tool: 'echo_medium', decision: 'deny', plugin: 'echo-pack', scope: 'forever' }, new Date());
    expect(code(await call(fx, 'echo_medium', 'b'))).toBe('PERMISSION_DENIED');
  });

  it('still refuses a delete tool that is denied forever, without asking', async () => {
    fx = makeKernel();
    fx.kernel.permissions.set({ tool: 'echo_delete', decision: 'deny', plugin: 'echo-pack', scope: 'forever' }, new Date());
    expect(code(await call(fx, 'echo_delete'))).toBe('PERMISSION_DENIED');
    expect(fx.prompter.asked).toHaveLength(0);
  });

  it('denies with PERMISSION_TIMEOUT when nobody answers within 60 s, and the tool never runs', async () => {
    let ran = false;
    fx = makeKernel({
      packs: [
        {
          id: 'p',
          tools: [{ spec: { name: 'w', description: 'd', parameters: { type: 'object' }, danger: 'medium', effect: 'write' }, impl: () => (ran = true) }],
        },
      ],
    });
    fx.prompter.answer('never');
    const pending = fx.kernel.invoke({ tool: 'w', args: {}, caller: { kind: 'agent' } });
    await flush();
    fx.clock.advance(59_999);
    await flush();
    let settled = false;
    void pending.then(() => (settled = true));
    await flush();
    expect(settled).toBe(false);
    fx.clock.advance(1);
    const r = await pending;
    expect(code(r)).toBe('PERMISSION_TIMEOUT');
    expect(ran).toBe(false);
    expect(fx.kernel.audit.tail().at(-1)).toMatchObject({ decision: 'deny:timeout', outcome: 'error' });
  });

  it('counts stopping a run while its prompt waits as a denial', async () => {
    fx = makeKernel();
    fx.prompter.answer('never');
    const ac = new AbortController();
    const pending = fx.kernel.invoke({ tool: 'echo_dangerous', args: {}, caller: { kind: 'agent' }, signal: ac.signal });
    await flush();
    ac.abort();
    const r = await pending;
    expect(code(r)).toBe('CANCELLED');
    expect(fx.kernel.audit.tail().at(-1)).toMatchObject({ decision: 'deny:cancelled' });
  });

  it('withdraws a waiting prompt at shutdown, and the tool never runs', async () => {
    let ran = false;
    fx = makeKernel({
      packs: [
        {
          id: 'p',
          tools: [{ spec: { name: 'w', description: 'd', parameters: { type: 'object' }, danger: 'medium', effect: 'write' }, impl: () => (ran = true) }],
        },
      ],
    });
    fx.prompter.answer('never');
    const pending = fx.kernel.invoke({ tool: 'w', args: {}, caller: { kind: 'agent' } });
    await flush();
    await fx.kernel.shutdown();
    expect(code(await pending)).toBe('CANCELLED');
    expect(ran).toBe(false);
  });

  it('asks nobody when the run is stopped while the preview is being made', async () => {
    const ac = new AbortController();
    fx = makeKernel({
      packs: [
        {
          id: 'slow-preview',
          tools: [
            {
              spec: { name: 'w', description: 'd', parameters: { type: 'object' }, danger: 'medium', effect: 'write' },
              impl: {
                run: () => 'ran',
                preview: () => {
                  ac.abort();
                  return { kind: 'text', text: 'what would change' };
                },
              },
            },
          ],
        },
      ],
    });
    fx.prompter.answer('never');
    const r = await fx.kernel.invoke({ tool: 'w', args: {}, caller: { kind: 'agent' }, signal: ac.signal });
    expect(code(r)).toBe('CANCELLED');
    expect(fx.prompter.asked).toHaveLength(0);
  });

  it('denies when the prompter itself fails', async () => {
    fx = makeKernel({ prompter: { ask: () => Promise.reject(new Error('window closed')) } });
    const r = await call(fx, 'echo_medium');
    expect(code(r)).toBe('PERMISSION_DENIED');
    expect((r as any).error.message).toContain('window closed');
  });

  it('treats a corrupt permissions.json as no decisions, reports it once and keeps it until the next decision', async () => {
    const data = path.join(tempDir('memo-perm-'), 'data');
    fs.mkdirSync(data, { recursive: true });
    const file = path.join(data, 'permissions.json');
    fs.writeFileSync(file, '{"version":1,"decisions":{"echo_medium":{"decision":"allow"');
    fx = makeKernel({ dataDir: data });
    expect(code(await call(fx, 'echo_medium', 'a'))).toBe('PERMISSION_DENIED');
    expect(code(await call(fx, 'echo_medium', 'b'))).toBe('PERMISSION_DENIED');
    expect(fx.logger.lines.filter((l) => l.level === 'warn')).toHaveLength(1);
    expect(fs.readFileSync(file, 'utf8')).toContain('"decision":"allow"');
    fx.prompter.answer('allow-forever');
    expect(code(await call(fx, 'echo_dangerous', 'c'))).toBe('ok');
    const kept = fs.readdirSync(data).filter((f) => f.startsWith('permissions.json.corrupt-'));
    expect(kept).toHaveLength(1);
    expect(JSON.parse(fs.readFileSync(file, 'utf8')).decisions).toEqual([
      expect.objectContaining({ tool: 'echo_dangerous', decision: 'allow', scope: 'forever' }),
    ]);
  });

  it('writes permissions.json atomically, leaving no temp files, with mode 0600', async () => {
    fx = makeKernel();
    fx.prompter.answer('allow-forever', 'deny-forever');
    await call(fx, 'echo_medium');
    await call(fx, 'echo_dangerous');
    const files = fs.readdirSync(fx.dataDir);
    expect(files.filter((f) => f.endsWith('.tmp'))).toEqual([]);
    expect(fs.statSync(path.join(fx.dataDir, 'permissions.json')).mode & 0o777).toBe(0o600);
    expect(fx.kernel.permissions.list().map((d) => [d.tool, d.decision])).toEqual([
      ['echo_dangerous', 'deny'],
      ['echo_medium', 'allow'],
    ]);
  });

  it('applies a revoke made by another process at the next call', async () => {
    fx = makeKernel();
    fx.prompter.answer('allow-forever');
    await call(fx, 'echo_medium', 'a');
    const file = path.join(fx.dataDir, 'permissions.json');
    const edited = JSON.parse(fs.readFileSync(file, 'utf8')) as { decisions: Array<{ tool: string }> };
    edited.decisions = edited.decisions.filter((d) => d.tool !== 'echo_medium');
    fs.writeFileSync(file, JSON.stringify(edited) + '\n   ');
    expect(code(await call(fx, 'echo_medium', 'b'))).toBe('PERMISSION_DENIED');
    expect(fx.prompter.asked).toHaveLength(2);
  });

  it('shows the prompter masked arguments and the tool preview', async () => {
    fx = makeKernel({
      packs: [
        {
          id: 'pv',
          tools: [
            {
              spec: {
                name: 'set_secret',
                description: 'd',
                parameters: { type: 'object', properties: { token: { type: 'string' }, file: { type: 'string' } } },
                danger: 'medium',
                effect: 'write',
              },
              impl: { run: () => 'ok', preview: (a) => ({ kind: 'diff', text: `--- ${String(a.file)}\n+++ ${String(a.file)}\n` }) },
            },
          ],
        },
      ],
    });
    fx.prompter.answer('allow-once');
    await fx.kernel.invoke({ tool: 'set_secret', args: { token: 'abcd1234secret', file: 'a.txt' }, caller: { kind: 'agent' } });
    expect(fx.prompter.asked[0]?.args).toEqual({ token: '[masked]', file: 'a.txt' });
    expect(fx.prompter.asked[0]?.preview).toEqual({ kind: 'diff', text: '--- a.txt\n+++ a.txt\n' });
  });
});
