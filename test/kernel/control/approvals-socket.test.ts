/**
 * The approvals side of the control socket in one process: a real kernel with no face (as memo serve
 * boots), a real Unix socket, and the CLI's client module. A request waits in the broker; it is
 * listed, watched and answered (as `cli`) through the socket. The clock is the kernel's manual one,
 * so expiry needs no waiting. The whole-process path (bin/memo, memo serve, an MCP client) is
 * test/e2e/approvals.test.ts.
 */
import * as path from 'node:path';
import { ControlFailure, reachServer, type ControlConnection } from '../../../kernel/control/control-client.js';
import { ControlServer } from '../../../kernel/control/control-server.js';
import type { ApprovalView } from '../../../kernel/control/kernel-views.js';
import { ManualClock } from '../../../kernel/clock.js';
import { createKernel, type Kernel } from '../../../kernel/kernel.js';
import { MemoryLogger } from '../../../kernel/logger.js';
import type { Caller } from '../../../kernel/tools/contract.js';
import type { PackDefinition } from '../../../kernel/tools/tool-registry.js';
import { atTeardown } from '../../helpers/cleanup.js';
import { echoPack, ScriptedPrompter, tempDir, tool } from '../../helpers/kernel-fixture.js';
import { waitFor } from '../../helpers/wait.js';

const WAIT_MS = 30 * 60_000;

/** A medium tool with a preview and a sensitive argument, and an editable one. */
const notesPack: PackDefinition = {
  id: 'notes',
  version: '1.0.0',
  tools: [
    {
      spec: {
        name: 'set_note',
        description: 'stores a note',
        parameters: { type: 'object', properties: { text: { type: 'string' }, token: { type: 'string' } }, additionalProperties: false },
        danger: 'medium',
        effect: 'write',
        sensitiveArgs: ['token'],
      },
      impl: { run: (args) => ({ stored: args.text }), preview: (args) => ({ kind: 'fields', text: `text: (none) -> ${String(args.text)}` }) },
    },
    {
      spec: tool('edit_note', 'medium', 'write', { editable: true }),
      impl: (args) => ({ ran: args }),
    },
  ],
};

interface Running {
  kernel: Kernel;
  clock: ManualClock;
  server: ControlServer;
  dataDir: string;
}

async function running(): Promise<Running> {
  const clock = new ManualClock();
  const logger = new MemoryLogger();
  const dataDir = path.join(tempDir('memo-appr-data-'), 'data');
  const kernel = createKernel({
    root: tempDir('memo-appr-root-'),
    dataDir,
    clock,
    logger,
    prompter: null,
    approvalWaitMs: WAIT_MS,
    packs: [echoPack(), notesPack],
    rateLimits: { maxCalls: 0, duplicateCooldownMs: 0 },
  });
  atTeardown(() => kernel.shutdown());
  const server = await ControlServer.start({ kernel, packFolders: [], skillFolders: [], logger });
  if (!server) throw new Error(`no control server: ${JSON.stringify(logger.lines)}`);
  atTeardown(() => server.close());
  return { kernel, clock, server, dataDir };
}

async function connect(r: Running): Promise<ControlConnection> {
  // As memo approvals reaches it: by the data folder alone.
  const reach = await reachServer({ dataDir: r.dataDir });
  if (!reach || !('server' in reach)) throw new Error(`not reached: ${JSON.stringify(reach)}`);
  return reach.server;
}

async function list(r: Running): Promise<ApprovalView[]> {
  return (await (await connect(r)).request('approvals.list')) as ApprovalView[];
}

async function answer(r: Running, fields: Record<string, unknown>): Promise<unknown> {
  return (await connect(r)).request('approvals.answer', fields);
}

async function refusal(p: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ControlFailure) return { code: err.code, message: err.message };
    throw err;
  }
  throw new Error('the request was not refused');
}

/** Starts a call that waits in the broker; resolves with its result once answered. */
async function waiting(r: Running, tool: string, args: Record<string, unknown>, caller: Caller = { kind: 'routine', id: 'nightly' }) {
  const result = r.kernel.invoke({ tool, args, caller });
  const view = await waitFor(async () => (await list(r)).find((a) => a.tool === tool), {
    what: `${tool} to wait in the broker`,
    timeoutMs: 10_000,
  });
  return { result: result, view };
}

describe('approvals through the control socket (kernel with no face)', () => {
  it('lists a waiting request with its tool, caller, masked arguments, preview, expiry and the answers that apply', async () => {
    const r = await running();
    const asked = r.clock.now();
    const { view } = await waiting(r, 'set_note', { text: 'hi', token: 'sk-live-abcdefghijklmnop' }, { kind: 'agent', conversationId: 'c-1', sessionId: 's' });
    expect(view).toEqual({
      id: expect.any(String),
      tool: 'set_note',
      plugin: 'notes',
      danger: 'medium',
      effect: 'write',
      caller: { kind: 'agent', conversationId: 'c-1' },
      args: { text: 'hi', token: expect.not.stringContaining('abcdefghijklmnop') },
      preview: { kind: 'fields', text: 'text: (none) -> hi' },
      // Laid out as every face shows it (kernel/permissions/preview-format.ts): the console renders this.
      display: {
        facts: [{ label: 'caller', value: 'agent, conversation c-1', by: 'kernel' }],
        body: { kind: 'fields', lines: ['text: (none) -> hi'] },
        quoted: [],
      },
      askedAt: new Date(asked).toISOString(),
      expiresAt: new Date(asked + WAIT_MS).toISOString(),
      answers: ['allow-once', 'allow-conversation', 'allow-session', 'allow-minutes:N', 'allow-forever', 'deny-once', 'deny-forever'],
      editable: false,
      revision: 1,
      faces: [],
      answerable: true,
    });
  });

  it('runs the call when answered allow-once (audited allow:once), and the request leaves the list', async () => {
    const r = await running();
    const { result, view } = await waiting(r, 'echo_medium', { text: 'go' });
    expect(await answer(r, { id: view.id, answer: 'allow-once' })).toEqual({ id: view.id, tool: 'echo_medium', reply: 'allow-once' });
    expect(await result).toMatchObject({ ok: true, value: { echoed: { text: 'go' } } });
    expect(r.kernel.audit.tail({ tool: 'echo_medium' }).at(-1)).toMatchObject({ caller: { kind: 'routine' }, decision: 'allow:once', outcome: 'ok' });
    expect(await list(r)).toEqual([]);
  });

  it('denies the call when answered deny-once', async () => {
    const r = await running();
    const { result, view } = await waiting(r, 'echo_medium', { text: 'no' });
    await answer(r, { id: view.id, answer: 'deny-once' });
    expect(await result).toMatchObject({ ok: false, error: { code: 'PERMISSION_DENIED' } });
    expect(r.kernel.audit.tail({ tool: 'echo_medium' }).at(-1)).toMatchObject({ decision: 'deny:once' });
  });

  it('takes a unique start of the id, and stores an allow-minutes answer as a timed decision', async () => {
    const r = await running();
    const { result, view } = await waiting(r, 'echo_medium', { text: 'timed' });
    await answer(r, { id: view.id.slice(0, 8), answer: 'allow-minutes:15' });
    expect(await result).toMatchObject({ ok: true });
    expect(r.kernel.permissions.list(r.clock.now())).toEqual([
      expect.objectContaining({ tool: 'echo_medium', scope: 'until', expiresAt: new Date(r.clock.now() + 15 * 60_000).toISOString() }),
    ]);
  });

  it('refuses an unknown id and an id already answered (NOT_PENDING), and a start of an id shorter than 4 characters', async () => {
    const r = await running();
    expect(await refusal(answer(r, { id: 'no-such-request', answer: 'allow-once' }))).toMatchObject({
      code: 'NOT_PENDING',
      message: expect.stringContaining('is waiting for an answer'),
    });
    const { result, view } = await waiting(r, 'echo_medium', { text: 'once' });
    expect(await refusal(answer(r, { id: view.id.slice(0, 3), answer: 'allow-once' }))).toMatchObject({ code: 'NOT_PENDING' });
    await answer(r, { id: view.id, answer: 'allow-once' });
    await result;
    expect(await refusal(answer(r, { id: view.id, answer: 'deny-once' }))).toMatchObject({ code: 'NOT_PENDING' });
  });

  it('refuses an answer the request does not offer (a delete takes no standing approval) and keeps it waiting', async () => {
    const r = await running();
    const { result, view } = await waiting(r, 'echo_delete', { text: 'gone' });
    expect(view.answers).toEqual(['allow-once', 'deny-once', 'deny-forever']);
    expect(await refusal(answer(r, { id: view.id, answer: 'allow-forever' }))).toMatchObject({
      code: 'ANSWER_NOT_OFFERED',
      message: 'allow-forever does not apply to this echo_delete request; it takes allow-once, deny-once, deny-forever',
    });
    expect((await list(r)).map((a) => a.id)).toEqual([view.id]);
    await answer(r, { id: view.id, answer: 'allow-once' });
    expect(await result).toMatchObject({ ok: true });
    expect(r.kernel.permissions.list()).toEqual([]);
  });

  it('takes edited arguments for an editable tool: asked again as revision 2, edited by cli, and runs with them once allowed', async () => {
    const r = await running();
    const { result, view } = await waiting(r, 'edit_note', { text: 'draft' });
    expect(view.editable).toBe(true);
    expect(await answer(r, { id: view.id, edit: { text: 'final' } })).toMatchObject({ reply: 'edit' });
    const again = await waitFor(async () => (await list(r)).find((a) => a.revision === 2), { what: 'revision 2' });
    expect(again).toMatchObject({ id: view.id, args: { text: 'final' }, editedBy: 'cli' });
    await answer(r, { id: view.id, answer: 'allow-once' });
    expect(await result).toMatchObject({ ok: true, value: { ran: { text: 'final' } } });
    expect(r.kernel.audit.tail({ tool: 'edit_note' }).at(-1)).toMatchObject({ decision: 'allow:once', args: { text: 'final' } });
  });

  it('refuses an edit for a tool that does not declare editable (NOT_EDITABLE), and an edit that breaks the schema is shown as refused', async () => {
    const r = await running();
    const plain = await waiting(r, 'echo_medium', { text: 'x' });
    expect(await refusal(answer(r, { id: plain.view.id, edit: { text: 'y' } }))).toMatchObject({ code: 'NOT_EDITABLE' });
    await answer(r, { id: plain.view.id, answer: 'deny-once' });
    await plain.result;

    const editable = await waiting(r, 'edit_note', { text: 'a' });
    await answer(r, { id: editable.view.id, edit: { text: 'b', extra: true } });
    const shown = await waitFor(async () => (await list(r)).find((a) => a.editProblem), { what: 'the refused edit' });
    expect(shown).toMatchObject({ revision: 1, args: { text: 'a' } });
    await answer(r, { id: editable.view.id, answer: 'deny-once' });
    expect(await editable.result).toMatchObject({ ok: false, error: { code: 'PERMISSION_DENIED' } });
  });

  it("lists a memo tools call's own prompt as not answerable here, and refuses to answer it (NOT_ANSWERABLE)", async () => {
    const r = await running();
    const cli = new ScriptedPrompter('never');
    const call = (await connect(r)).request('tools.call', { tool: 'echo_medium', args: { text: 'mine' } }, { prompter: cli });
    const view = await waitFor(async () => (await list(r))[0], { what: 'the CLI call to wait' });
    expect(view).toMatchObject({ tool: 'echo_medium', caller: { kind: 'cli', id: 'memo tools call' }, answerable: false });
    expect(await refusal(answer(r, { id: view.id, answer: 'allow-once' }))).toMatchObject({ code: 'NOT_ANSWERABLE' });
    await r.server.close();
    expect(await call).toMatchObject({ ok: false, error: { code: 'CANCELLED' } });
  });

  it('streams the pending requests, then each request asked and settled (answered by cli, expired), and ends the stream at shutdown', async () => {
    const r = await running();
    const first = await waiting(r, 'echo_medium', { text: 'before' });
    const lines: Array<Record<string, unknown>> = [];
    const ended = (await connect(r)).stream('approvals.watch', (m) => lines.push(m));
    await waitFor(() => lines.length === 1, { what: 'the snapshot' });
    expect(lines[0]).toMatchObject({ v: 1, type: 'approvals', pending: [{ id: first.view.id, tool: 'echo_medium' }] });

    await answer(r, { id: first.view.id, answer: 'allow-once' });
    await first.result;
    const second = await waiting(r, 'set_note', { text: 'later' });
    // Nobody answers: after the broker's wait it expires, a distinct outcome (not a denial).
    r.clock.advance(WAIT_MS);
    expect(await second.result).toMatchObject({ ok: false, error: { code: 'APPROVAL_EXPIRED' } });
    await waitFor(() => lines.length === 4, { what: () => `four lines (got ${JSON.stringify(lines)})` });
    expect(lines.slice(1)).toEqual([
      { v: 1, type: 'approval', event: 'settled', id: first.view.id, outcome: 'answered', by: 'cli', reply: 'allow-once' },
      { v: 1, type: 'approval', event: 'asked', approval: expect.objectContaining({ id: second.view.id, tool: 'set_note' }) },
      { v: 1, type: 'approval', event: 'settled', id: second.view.id, outcome: 'expired' },
    ]);

    await r.server.close();
    expect(await ended).toMatchObject({ type: 'error', code: 'SERVER_STOPPING' });
  });

  it('reports an edit in the stream as "edit", without the edited arguments', async () => {
    const r = await running();
    const lines: Array<Record<string, unknown>> = [];
    void (await connect(r)).stream('approvals.watch', (m) => lines.push(m)).catch(() => {});
    await waitFor(() => lines.length === 1, { what: 'the snapshot' });
    const { result, view } = await waiting(r, 'edit_note', { text: 'one' });
    await answer(r, { id: view.id, edit: { text: 'secret-ish edit' } });
    await waitFor(() => lines.some((l) => l.event === 'settled'), { what: 'the settled line' });
    const settled = lines.find((l) => l.event === 'settled');
    expect(settled).toEqual({ v: 1, type: 'approval', event: 'settled', id: view.id, outcome: 'answered', by: 'cli', reply: 'edit' });
    await answer(r, { id: view.id, answer: 'deny-once' });
    await result;
  });
});
