import type { PackDefinition } from '../../kernel/tools/tool-registry.js';
import type { PermissionAnswer } from '../../kernel/permissions/prompter.js';
import { MemoError } from '../../kernel/errors.js';
import type { ToolResult } from '../../kernel/tools/contract.js';
import { createKernel } from '../../kernel/kernel.js';
import { makeKernel, tool, type Fixture } from '../helpers/kernel-fixture.js';

/**
 * A tool's own concern about one call (the command judge's `ask` verdict) is always put to a
 * person: no standing approval covers it, and where nobody can be asked it is denied.
 */
function concernPack(runs: string[]): PackDefinition {
  const impl = {
    // "ask" when the text says so, refuse when it says "never", else no concern.
    assess: (args: Record<string, unknown>) => {
      if (args.text === 'never') throw new MemoError('COMMAND_BLOCKED', 'never runs (rule test-block)');
      if (args.text === 'cannot') return { verdict: 'answer' as const, value: { success: false, error: 'there is nothing by that name' } };
      return args.text === 'ask' ? { verdict: 'ask' as const, rule: 'test-rule', reason: 'the test cannot vouch for this' } : null;
    },
    run: (args: Record<string, unknown>) => {
      runs.push(String(args.text));
      return { ran: args.text };
    },
  };
  return {
    id: 'concern-pack',
    version: '1.0.0',
    tools: [
      { spec: tool('judged_dangerous', 'dangerous', 'write'), impl },
      { spec: tool('judged_safe', 'safe', 'read'), impl },
    ],
  };
}

const code = (r: ToolResult) => (r.ok ? 'ok' : r.error.code);

describe('a concern raised by a tool before the gate', () => {
  let fx: Fixture;
  let runs: string[];
  const call = (name: string, text: string, sessionId = 's1') => fx.kernel.invoke({ tool: name, args: { text }, caller: { kind: 'agent', sessionId } });

  beforeEach(() => {
    runs = [];
    fx = makeKernel({ packs: [concernPack(runs)] });
  });
  afterEach(async () => fx.close());

  it.each<PermissionAnswer>(['allow-session', 'allow-forever'])('asks again after %s and stores no standing approval from it', async (answer) => {
    fx.prompter.answer(answer, 'deny-once');
    expect(code(await call('judged_dangerous', 'ask'))).toBe('ok');
    expect(fx.prompter.asked[0]).toMatchObject({ standingApprovalAllowed: false, concern: { verdict: 'ask', rule: 'test-rule' } });
    expect(fx.kernel.permissions.list().find((d) => d.tool === 'judged_dangerous')).toBeUndefined();
    expect(code(await call('judged_dangerous', 'ask'))).toBe('PERMISSION_DENIED');
    expect(fx.prompter.asked).toHaveLength(2);
    expect(runs).toEqual(['ask']);
  });

  it('asks even when the tool is allowed forever and allowed for the session', async () => {
    fx.prompter.answer('allow-session');
    expect(code(await call('judged_dangerous', 'plain'))).toBe('ok');
    fx.kernel.permissions.set({ tool: 'judged_dangerous', decision: 'allow', plugin: 'concern-pack', scope: 'forever' }, new Date());
    expect(code(await call('judged_dangerous', 'plain again'))).toBe('ok'); // standing approvals answer
    expect(fx.prompter.asked).toHaveLength(1);
    fx.prompter.answer('deny-once');
    expect(code(await call('judged_dangerous', 'ask'))).toBe('PERMISSION_DENIED');
    expect(fx.prompter.asked).toHaveLength(2);
    expect(runs).toEqual(['plain', 'plain again']);
  });

  it('asks for a safe tool too', async () => {
    fx.prompter.answer('deny-once');
    expect(code(await call('judged_safe', 'ask'))).toBe('PERMISSION_DENIED');
    expect(code(await call('judged_safe', 'plain'))).toBe('ok');
    expect(fx.prompter.asked).toHaveLength(1);
  });

  it('is denied where nobody can be asked, even with an allow-forever stored', async () => {
    // A kernel whose host supplied no prompter: nobody can be asked.
    const k = createKernel({ root: fx.root, dataDir: fx.dataDir, packs: [concernPack(runs)], rateLimits: { maxCalls: 0, duplicateCooldownMs: 0 } });
    try {
      k.permissions.set({ tool: 'judged_dangerous', decision: 'allow', plugin: 'concern-pack', scope: 'forever' }, new Date());
      expect(code(await k.invoke({ tool: 'judged_dangerous', args: { text: 'plain' }, caller: { kind: 'host' } }))).toBe('ok');
      const r = await k.invoke({ tool: 'judged_dangerous', args: { text: 'ask' }, caller: { kind: 'host' } });
      expect(!r.ok && r.error).toMatchObject({ code: 'PERMISSION_DENIED', message: expect.stringContaining('nobody can be asked') });
      expect(runs).toEqual(['plain']);
    } finally {
      await k.shutdown();
    }
  });

  it('answers a call the tool answers itself with its value: nobody asked, the handler not run, the audit line saying answered', async () => {
    const r = await call('judged_dangerous', 'cannot');
    expect(r).toMatchObject({ ok: true, value: { success: false, error: 'there is nothing by that name' } });
    expect(fx.prompter.asked).toHaveLength(0);
    expect(runs).toEqual([]);
    expect(fx.kernel.audit.tail({ limit: 1 })[0]).toMatchObject({ tool: 'judged_dangerous', outcome: 'ok', decision: 'answered' });
  });

  it('refuses before anyone is asked when the tool refuses the call, and audits it', async () => {
    fx.kernel.permissions.set({ tool: 'judged_dangerous', decision: 'allow', plugin: 'concern-pack', scope: 'forever' }, new Date());
    const r = await call('judged_dangerous', 'never');
    expect(!r.ok && r.error).toMatchObject({ code: 'COMMAND_BLOCKED', message: expect.stringContaining('test-block') });
    expect(fx.prompter.asked).toHaveLength(0);
    expect(runs).toEqual([]);
    expect(fx.kernel.audit.tail({ limit: 1 })[0]).toMatchObject({ tool: 'judged_dangerous', outcome: 'error', error: { code: 'COMMAND_BLOCKED' } });
  });
});
