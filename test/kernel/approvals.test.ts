/**
 * Approvals as a kernel service: the broker (faces racing, attaching while requests wait, answers
 * by id, events), lifetimes on the kernel's fake clock, edit-before-approve, expiry versus timeout
 * versus denial, and the person's global always-allow.
 */
import * as path from 'node:path';
import type { ApprovalEvent } from '../../kernel/permissions/approval-broker.js';
import { ApprovalWithdrawn, type ApprovalFace, type ApprovalReply, type PermissionAnswer, type PermissionRequest } from '../../kernel/permissions/prompter.js';
import type { Caller, ToolResult } from '../../kernel/tools/contract.js';
import { echoPack, flush, makeKernel, tool, type Fixture } from '../helpers/kernel-fixture.js';
import { waitFor } from '../helpers/wait.js';

const code = (r: ToolResult) => (r.ok ? 'ok' : r.error.code);

/** A face that answers only when told to, and records how its questions were withdrawn. */
class HeldFace implements ApprovalFace {
  readonly asked: PermissionRequest[] = [];
  readonly withdrawn: ApprovalWithdrawn[] = [];
  private readonly resolvers: Array<(r: ApprovalReply) => void> = [];
  constructor(readonly name: string) {}
  ask(request: PermissionRequest, signal: AbortSignal): Promise<ApprovalReply> {
    this.asked.push(request);
    signal.addEventListener('abort', () => this.withdrawn.push(signal.reason as ApprovalWithdrawn), { once: true });
    return new Promise((resolve) => this.resolvers.push(resolve));
  }
  reply(r: ApprovalReply): void {
    this.resolvers.shift()?.(r);
  }
}

describe('the approval broker', () => {
  let fx: Fixture;
  afterEach(() => fx?.close());

  it('puts a request to every face; the first answer wins and the others are withdrawn, naming who answered', async () => {
    fx = makeKernel({ prompter: null });
    const a = new HeldFace('console');
    const b = new HeldFace('terminal');
    fx.kernel.approvals.attach(a);
    fx.kernel.approvals.attach(b);
    const events: ApprovalEvent[] = [];
    fx.kernel.approvals.onChange((e) => events.push(e));
    const pending = fx.kernel.invoke({ tool: 'echo_medium', args: { text: 'x' }, caller: { kind: 'agent' } });
    await waitFor(() => a.asked.length && b.asked.length, { what: 'both faces to be asked' });
    expect(fx.kernel.approvals.pending()).toEqual([
      expect.objectContaining({ request: expect.objectContaining({ tool: 'echo_medium' }), faces: ['console', 'terminal'] }),
    ]);
    b.reply('allow-once');
    expect(code(await pending)).toBe('ok');
    expect(a.withdrawn).toEqual([new ApprovalWithdrawn('answered', 'terminal')]);
    expect(fx.kernel.audit.tail({ tool: 'echo_medium' }).at(-1)).toMatchObject({ decision: 'allow:once', answeredBy: 'terminal' });
    expect(a.withdrawn[0]?.message).toBe('answered by terminal');
    expect(b.withdrawn).toEqual([]);
    expect(fx.kernel.approvals.pending()).toEqual([]);
    expect(events.map((e) => (e.kind === 'asked' ? 'asked' : `${e.outcome}${e.outcome === 'answered' ? ` by ${e.by}` : ''}`))).toEqual([
      'asked',
      'answered by terminal',
    ]);
  });

  it('with unattendedApprovals refuse, denies at once when no face is attached and nobody watches, saying how to be asked', async () => {
    fx = makeKernel({ prompter: null, unattendedApprovals: 'refuse' });
    const r = await fx.kernel.invoke({ tool: 'echo_medium', args: { text: 'x' }, caller: { kind: 'agent' } });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.code).toBe('PERMISSION_DENIED');
    expect(r.error.message).toContain("echo_medium needs a person's approval, and nobody is watching");
    expect(r.error.message).toContain('memo approvals list --watch');
    expect(fx.kernel.approvals.pending()).toEqual([]);
    expect(fx.kernel.audit.tail({ tool: 'echo_medium' }).at(-1)).toMatchObject({ decision: 'deny:unattended' });
  });

  it('with unattendedApprovals refuse, waits for an answer while someone watches the requests (onChange) or a face is attached', async () => {
    fx = makeKernel({ prompter: null, unattendedApprovals: 'refuse' });
    const watching = fx.kernel.approvals.onChange(() => {});
    expect(fx.kernel.approvals.attended).toBe(true);
    const watched = fx.kernel.invoke({ tool: 'echo_medium', args: { text: 'w' }, caller: { kind: 'agent' } });
    await waitFor(() => fx.kernel.approvals.pending().length === 1, { what: 'the watched request to wait' });
    fx.kernel.approvals.answer(fx.kernel.approvals.pending()[0]!.id, 'allow-once');
    expect(code(await watched)).toBe('ok');
    watching.dispose();
    expect(fx.kernel.approvals.attended).toBe(false);
    const face = new HeldFace('console');
    fx.kernel.approvals.attach(face);
    const faced = fx.kernel.invoke({ tool: 'echo_medium', args: { text: 'f' }, caller: { kind: 'agent' } });
    await waitFor(() => face.asked.length === 1, { what: 'the face to be asked' });
    face.reply('deny-once');
    expect(code(await faced)).toBe('PERMISSION_DENIED');
    expect(fx.kernel.audit.tail({ tool: 'echo_medium' }).at(-1)).toMatchObject({ decision: 'deny:once' });
  });

  it('asks a face that attaches while a request waits, and lets a host answer a listed request by id', async () => {
    fx = makeKernel({ prompter: null });
    const first = fx.kernel.invoke({ tool: 'echo_medium', args: { text: 'a' }, caller: { kind: 'agent' } });
    await waitFor(() => fx.kernel.approvals.pending().length === 1, { what: 'the request to wait' });
    expect(fx.kernel.approvals.pending()[0]?.faces).toEqual([]);
    const late = new HeldFace('console');
    const detach = fx.kernel.approvals.attach(late);
    expect(late.asked.map((r) => r.tool)).toEqual(['echo_medium']);
    late.reply('allow-once');
    expect(code(await first)).toBe('ok');
    detach.dispose();

    const second = fx.kernel.invoke({ tool: 'echo_dangerous', args: { text: 'b' }, caller: { kind: 'agent' } });
    await waitFor(() => fx.kernel.approvals.pending().length === 1, { what: 'the second request' });
    const id = fx.kernel.approvals.pending()[0]!.id;
    expect(fx.kernel.approvals.answer('no-such-id', 'allow-once')).toBe(false);
    expect(fx.kernel.approvals.pending()[0]?.answerable).toBe(true);
    expect(fx.kernel.approvals.answer(id, 'deny-once', 'my-app')).toBe(true);
    expect(code(await second)).toBe('PERMISSION_DENIED');
    expect(fx.kernel.audit.tail({ tool: 'echo_dangerous' }).at(-1)).toMatchObject({ decision: 'deny:once', answeredBy: 'my-app' });
  });

  it('answers by id with answerAnywhere without a shared database: given once, then refused as no longer waiting', async () => {
    fx = makeKernel({ prompter: null });
    const pending = fx.kernel.invoke({ tool: 'echo_medium', args: { text: 'x' }, caller: { kind: 'routine', id: 'r' } });
    await fx.kernel.approvals.sync();
    const listed = await waitFor(() => fx.kernel.approvals.pending()[0]);
    // One instance: nothing is marked with an instance, nothing is gone.
    expect(listed.instance).toBeUndefined();
    expect(listed.gone).toBeUndefined();
    await expect(fx.kernel.approvals.answerAnywhere(listed.id, 'allow-once', 'console')).resolves.toEqual({ ok: true });
    expect(code(await pending)).toBe('ok');
    expect(fx.kernel.audit.tail({ tool: 'echo_medium' }).at(-1)).toMatchObject({ decision: 'allow:once', answeredBy: 'console' });
    await expect(fx.kernel.approvals.answerAnywhere(listed.id, 'deny-once', 'console')).resolves.toEqual({
      ok: false,
      code: 'NOT_PENDING',
      message: 'This request is no longer waiting: it was answered, expired or cancelled.',
    });
    expect(fx.kernel.limiter.isShared).toBe(false);
  });

  it('withdraws a detached face’s questions and keeps the request waiting for another', async () => {
    fx = makeKernel({ prompter: null });
    const leaving = new HeldFace('terminal');
    const d = fx.kernel.approvals.attach(leaving);
    const call = fx.kernel.invoke({ tool: 'echo_medium', args: { text: 'x' }, caller: { kind: 'agent' } });
    await waitFor(() => leaving.asked.length === 1, { what: 'the question' });
    d.dispose();
    expect(leaving.withdrawn).toEqual([new ApprovalWithdrawn('detached')]);
    expect(fx.kernel.approvals.pending()).toHaveLength(1);
    fx.kernel.approvals.answer(fx.kernel.approvals.pending()[0]!.id, 'allow-once');
    expect(code(await call)).toBe('ok');
  });

  it('expires a request nobody answers in the broker after 30 minutes, with its own code, not a denial', async () => {
    fx = makeKernel({ prompter: null });
    const call = fx.kernel.invoke({ tool: 'echo_medium', args: { text: 'x' }, caller: { kind: 'agent' } });
    await waitFor(() => fx.kernel.approvals.pending().length === 1, { what: 'the request' });
    expect(fx.kernel.approvals.pending()[0]!.request.deadline - fx.clock.now()).toBe(30 * 60_000);
    fx.clock.advance(30 * 60_000);
    const r = await call;
    expect(!r.ok && r.error).toMatchObject({ code: 'APPROVAL_EXPIRED', message: expect.stringMatching(/expired after 30 minutes/) });
    expect(fx.kernel.audit.tail({ tool: 'echo_medium' }).at(-1)).toMatchObject({ decision: 'expired', error: { code: 'APPROVAL_EXPIRED' } });
  });

  it('times out after a face’s 60 s with PERMISSION_TIMEOUT, and a face that cannot answer denies at once', async () => {
    fx = makeKernel();
    fx.prompter.answer('never');
    const call = fx.kernel.invoke({ tool: 'echo_medium', args: { text: 'x' }, caller: { kind: 'agent' } });
    await waitFor(() => fx.prompter.asked.length === 1, { what: 'the prompt' });
    fx.clock.advance(60_000);
    expect(!(await call).ok && code(await call)).toBe('PERMISSION_TIMEOUT');
    const denied = await createDefault();
    expect(denied).toMatchObject({ code: 'PERMISSION_DENIED', message: expect.stringMatching(/no Prompter/) });
  });
});

/** A kernel created with no prompter at all: its default face denies at once (nobody to ask). */
async function createDefault() {
  const { createKernel } = await import('../../kernel/kernel.js');
  const { tempDir } = await import('../helpers/kernel-fixture.js');
  const k = createKernel({ root: tempDir(), dataDir: tempDir(), packs: [echoPack()], logger: { info() {}, warn() {}, error() {} } });
  const r = await k.invoke({ tool: 'echo_medium', args: { text: 'x' }, caller: { kind: 'agent' } });
  await k.shutdown();
  return r.ok ? null : r.error;
}

describe('approval lifetimes', () => {
  type Check = 'again' | 'otherConversation' | 'newSession' | 'after31Minutes' | 'afterRestart';
  // What the same call meets next: ok (a standing approval answers), ask, or the denial.
  const table: Record<string, { first: string } & Record<Check, string>> = {
    'allow-once': { first: 'ok', again: 'ask', otherConversation: 'ask', newSession: 'ask', afterRestart: 'ask', after31Minutes: 'ask' },
    'allow-conversation': { first: 'ok', again: 'ok', otherConversation: 'ask', newSession: 'ok', afterRestart: 'ok', after31Minutes: 'ok' },
    'allow-session': { first: 'ok', again: 'ok', otherConversation: 'ok', newSession: 'ask', afterRestart: 'ask', after31Minutes: 'ok' },
    'allow-minutes:30': { first: 'ok', again: 'ok', otherConversation: 'ok', newSession: 'ok', afterRestart: 'ok', after31Minutes: 'ask' },
    'allow-forever': { first: 'ok', again: 'ok', otherConversation: 'ok', newSession: 'ok', afterRestart: 'ok', after31Minutes: 'ok' },
    'deny-once': { first: 'PERMISSION_DENIED', again: 'ask', otherConversation: 'ask', newSession: 'ask', afterRestart: 'ask', after31Minutes: 'ask' },
    'deny-forever': {
      first: 'PERMISSION_DENIED',
      again: 'PERMISSION_DENIED',
      otherConversation: 'PERMISSION_DENIED',
      newSession: 'PERMISSION_DENIED',
      afterRestart: 'PERMISSION_DENIED',
      after31Minutes: 'PERMISSION_DENIED',
    },
  };
  const cases = (['echo_medium', 'echo_dangerous'] as const).flatMap((t) => Object.keys(table).map((a) => [t, a as PermissionAnswer] as const));

  it.each(cases)('%s answered %s lasts exactly as long as its lifetime', async (toolName, answer) => {
    const exp = table[answer]!;
    let fx = makeKernel();
    const caller = (conversationId: string, sessionId: string): Caller => ({ kind: 'agent', conversationId, sessionId });
    const observe = async (f: Fixture, c: Caller, text: string) => {
      const before = f.prompter.asked.length;
      const r = await f.kernel.invoke({ tool: toolName, args: { text }, caller: c });
      return f.prompter.asked.length > before ? 'ask' : code(r);
    };
    fx.prompter.answer(answer);
    const r = await fx.kernel.invoke({ tool: toolName, args: { text: 'first' }, caller: caller('c1', 's1') });
    expect(code(r)).toBe(exp.first);
    expect(fx.prompter.asked[0]).toMatchObject({ answers: expect.arrayContaining(['allow-conversation', 'allow-minutes:N']), standingApprovalAllowed: true });
    expect(await observe(fx, caller('c1', 's1'), 'again')).toBe(exp.again);
    expect(await observe(fx, caller('c2', 's1'), 'other')).toBe(exp.otherConversation);
    expect(await observe(fx, caller('c1', 's2'), 'session')).toBe(exp.newSession);
    fx = await fx.restart();
    expect(await observe(fx, caller('c1', 's1'), 'restart')).toBe(exp.afterRestart);
    fx.clock.advance(31 * 60_000);
    fx = await fx.restart();
    // The session of the first kernel is gone after a restart; the session row is about time alone here.
    const timeCheck = answer === 'allow-session' ? exp.afterRestart : exp.after31Minutes;
    expect(await observe(fx, caller('c1', 's1'), 'later')).toBe(timeCheck);
    await fx.close();
  });

  it('shows each stored decision with its scope and expiry, and forgets a conversation’s with the conversation', async () => {
    const fx = makeKernel();
    const conv = await fx.kernel.conversations.create();
    fx.prompter.answer('allow-conversation', 'allow-minutes:5');
    await fx.kernel.invoke({ tool: 'echo_medium', args: { text: 'a' }, caller: { kind: 'agent', conversationId: conv.id } });
    await fx.kernel.invoke({ tool: 'echo_dangerous', args: { text: 'b' }, caller: { kind: 'agent' } });
    const expires = new Date(fx.clock.now() + 5 * 60_000).toISOString();
    expect(fx.kernel.permissions.list(fx.clock.now()).map((d) => [d.tool, d.scope, d.expiresAt ?? d.conversationId])).toEqual([
      ['echo_dangerous', 'until', expires],
      ['echo_medium', 'conversation', conv.id],
    ]);
    await fx.kernel.conversations.delete(conv.id);
    fx.clock.advance(5 * 60_000);
    expect(fx.kernel.permissions.list(fx.clock.now())).toEqual([]);
    await fx.close();
  });

  it('offers only allow-once for deletes, confirm:always tools and judged calls, and stores nothing for them', async () => {
    const fx = makeKernel();
    fx.prompter.answer('allow-minutes:60', 'allow-conversation');
    expect(code(await fx.kernel.invoke({ tool: 'echo_delete', args: { text: 'a' }, caller: { kind: 'agent', conversationId: 'c1' } }))).toBe('ok');
    expect(code(await fx.kernel.invoke({ tool: 'echo_confirm', args: { text: 'b' }, caller: { kind: 'agent', conversationId: 'c1' } }))).toBe('ok');
    expect(fx.prompter.asked.map((a) => a.answers)).toEqual([
      ['allow-once', 'deny-once', 'deny-forever'],
      ['allow-once', 'deny-once', 'deny-forever'],
    ]);
    expect(fx.kernel.permissions.list()).toEqual([]);
    await fx.close();
  });
});

describe('edit before approve', () => {
  let fx: Fixture;
  afterEach(() => fx?.close());
  const ran: unknown[] = [];

  function editableKernel() {
    ran.length = 0;
    fx = makeKernel({
      packs: [
        {
          id: 'notes',
          tools: [
            {
              spec: tool('note_put', 'medium', 'write', { editable: true }),
              impl: {
                run: (args) => {
                  ran.push(args);
                  return { saved: args.text };
                },
                preview: (args) => ({ kind: 'diff', text: `+ ${String(args.text)}` }),
              },
            },
            { spec: tool('note_fixed', 'medium', 'write'), impl: (args) => ({ saved: args.text }) },
          ],
        },
      ],
    });
  }

  it('runs the edited call after a fresh preview and a second approval, and audits who edited it', async () => {
    editableKernel();
    fx.prompter.answer({ edit: { text: 'what I meant' } }, 'allow-once');
    const r = await fx.kernel.invoke({ tool: 'note_put', args: { text: 'what the agent wrote' }, caller: { kind: 'agent' } });
    expect(r.ok && r.value).toEqual({ saved: 'what I meant' });
    expect(ran).toEqual([{ text: 'what I meant' }]);
    expect(fx.prompter.asked.map((q) => [q.revision, q.editable, q.preview?.text, q.editedBy ?? null])).toEqual([
      [1, true, '+ what the agent wrote', null],
      [2, true, '+ what I meant', 'host'],
    ]);
    expect(fx.kernel.audit.tail({ tool: 'note_put' }).at(-1)).toMatchObject({
      args: { text: 'what I meant' },
      askedArgs: { text: 'what the agent wrote' },
      editedBy: 'host',
      decision: 'allow:once',
    });
    expect(r.edited).toEqual({ by: 'host', args: { text: 'what I meant' } });
  });

  it('tells an agent turn its call ran edited: the step shows both arguments, the model reads the edited ones, and the stored activity keeps both', async () => {
    editableKernel();
    fx.prompter.answer({ edit: { text: 'what I meant' } }, 'allow-once');
    const { runTurn } = await import('../../kernel/agent/agent-loop.js');
    const { ScriptedProvider, reply, toolCall } = await import('../helpers/scripted-provider.js');
    const provider = new ScriptedProvider((_req, n) => (n === 1 ? reply('', toolCall('note_put', { text: 'what the agent wrote' })) : reply('saved')));
    const turn = await runTurn(fx.kernel, { provider, model: 'scripted', conversationId: 'conv-edit', history: [], userMessage: 'save it' });
    expect(turn.steps[0]).toMatchObject({
      tool: 'note_put',
      args: { text: 'what I meant' },
      edited: { by: 'host', askedArgs: { text: 'what the agent wrote' } },
    });
    const toolMessage = turn.messages.find((m) => m.role === 'tool');
    expect(toolMessage?.content).toMatch(/^The person edited the arguments before approving; the call ran with \{"text":"what I meant"\}\./);
    const { ConversationStore } = await import('../../kernel/agent/conversation-store.js');
    const store = new ConversationStore(path.join(fx.dataDir, 'edit-test.sqlite'));
    try {
      const conv = await store.create();
      await store.appendTurn(conv.id, turn.messages, turn.steps);
      expect(await store.activity(conv.id)).toEqual([
        expect.objectContaining({ args: { text: 'what I meant' }, edited: { by: 'host', askedArgs: { text: 'what the agent wrote' } } }),
      ]);
    } finally {
      await store.close();
    }
  });

  it('refuses an edit that breaks the schema, says why, and asks again about the call as it was', async () => {
    editableKernel();
    fx.prompter.answer({ edit: { text: 5 } }, { edit: { colour: 'red' } }, 'deny-once');
    const r = await fx.kernel.invoke({ tool: 'note_put', args: { text: 'x' }, caller: { kind: 'agent' } });
    expect(code(r)).toBe('PERMISSION_DENIED');
    expect(ran).toEqual([]);
    const [, second, third] = fx.prompter.asked;
    expect(second).toMatchObject({ revision: 1, args: { text: 'x' }, editProblem: expect.stringMatching(/text must be string/) });
    expect(third).toMatchObject({ revision: 1, editProblem: expect.stringMatching(/colour is not an accepted field/) });
  });

  it('keeps a secret the person only saw masked: an edit leaving "[masked]" sends the original value', async () => {
    ran.length = 0;
    fx = makeKernel({
      packs: [
        {
          id: 'mail',
          tools: [
            {
              spec: {
                ...tool('mail_send', 'medium', 'write', { editable: true, sensitiveArgs: ['token'] }),
                parameters: { type: 'object', properties: { token: { type: 'string' }, text: { type: 'string' } }, additionalProperties: false },
              },
              impl: (args) => {
                ran.push(args);
                return 'sent';
              },
            },
          ],
        },
      ],
    });
    fx.prompter.answer({ edit: { token: '[masked]', text: 'edited body' } }, 'allow-once');
    const r = await fx.kernel.invoke({ tool: 'mail_send', args: { token: 'tok-123456789', text: 'draft' }, caller: { kind: 'agent' } });
    expect(code(r)).toBe('ok');
    expect(ran).toEqual([{ token: 'tok-123456789', text: 'edited body' }]);
    expect(fx.prompter.asked.map((q) => q.args)).toEqual([
      { token: '[masked]', text: 'draft' },
      { token: '[masked]', text: 'edited body' },
    ]);
    expect(JSON.stringify(fx.kernel.audit.tail({ tool: 'mail_send' }))).not.toContain('tok-123456789');
  });

  it('does not take edits for a tool that does not declare them', async () => {
    editableKernel();
    fx.prompter.answer({ edit: { text: 'changed' } }, 'allow-once');
    const r = await fx.kernel.invoke({ tool: 'note_fixed', args: { text: 'original' }, caller: { kind: 'agent' } });
    expect(r.ok && r.value).toEqual({ saved: 'original' });
    expect(fx.prompter.asked[0]?.editable).toBe(false);
    expect(fx.prompter.asked[1]).toMatchObject({ editProblem: 'note_fixed does not accept edited arguments' });
  });
});

describe('the global always-allow setting', () => {
  let fx: Fixture;
  afterEach(() => fx?.close());

  it('skips the question for agent turns and routines, audited as such, but not for the CLI, deletes or MCP callers', async () => {
    fx = makeKernel();
    fx.kernel.permissions.setAlwaysAllow(true);
    for (const kind of ['agent', 'routine'] as const) {
      expect(code(await fx.kernel.invoke({ tool: 'echo_confirm', args: { text: kind }, caller: { kind } }))).toBe('ok');
    }
    expect(fx.prompter.asked).toEqual([]);
    expect(fx.kernel.audit.tail({ tool: 'echo_confirm' }).map((l) => l.decision)).toEqual(['allow:always-allow', 'allow:always-allow']);
    fx.prompter.setFallback('deny-once');
    expect(code(await fx.kernel.invoke({ tool: 'echo_medium', args: { text: 'cli' }, caller: { kind: 'cli' } }))).toBe('PERMISSION_DENIED');
    expect(code(await fx.kernel.invoke({ tool: 'echo_delete', args: { text: 'del' }, caller: { kind: 'agent' } }))).toBe('PERMISSION_DENIED');
    // An outside caller without a write capability is refused before any question.
    expect(code(await fx.kernel.invoke({ tool: 'echo_medium', args: { text: 'mcp' }, caller: { kind: 'mcp' } }))).toBe('PERMISSION_DENIED');
    expect(fx.prompter.asked.map((a) => a.tool)).toEqual(['echo_medium', 'echo_delete']);
  });

  it('never covers a call the tool itself cannot vouch for (the judge’s ask)', async () => {
    fx = makeKernel({
      packs: [
        {
          id: 'judged',
          tools: [
            {
              spec: tool('judged_run', 'dangerous', 'write'),
              impl: {
                run: () => 'ran',
                assess: () => ({ verdict: 'ask' as const, rule: 'inline-code', reason: 'inline-code: python -c runs code the judge cannot read' }),
              },
            },
          ],
        },
      ],
    });
    fx.kernel.permissions.setAlwaysAllow(true);
    fx.prompter.answer('deny-once');
    expect(code(await fx.kernel.invoke({ tool: 'judged_run', args: {}, caller: { kind: 'agent' } }))).toBe('PERMISSION_DENIED');
    expect(fx.prompter.asked[0]).toMatchObject({ concern: { rule: 'inline-code' } });
    await flush();
  });
});
