/**
 * The approvals inbox across instances on one real PostgreSQL database: a call waiting on instance A
 * is listed on instance B (its broker, and its web console over HTTP), B's answer releases it on A
 * with the usual meaning (allow once, deny, allow forever, an edit), and when two people answer one
 * request at once on two instances, exactly one answer counts and the other is told so.
 */
import type { AuditRecord } from '../../kernel/audit/audit-record.js';
import type { ApprovalEvent } from '../../kernel/permissions/approval-broker.js';
import type { ToolResult } from '../../kernel/tools/contract.js';
import { echoPack, makeKernel, tool, type Fixture } from '../helpers/kernel-fixture.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait.js';
import { consoleFixture, openEvents, post, raw, type ConsoleFixture } from '../console/console-helpers.js';

let server: TestPostgres;
beforeAll(async () => {
  server = await startPostgres();
}, 120_000);

const editable = {
  id: 'editor-pack',
  version: '1.0.0',
  tools: [{ spec: tool('echo_edit', 'medium', 'write', { editable: true }), impl: (args: Record<string, unknown>) => ({ echoed: args }) }],
};

/**
 * Stored permissions on PostgreSQL are read once before medium calls are judged (they refuse
 * until then); waited for when the store offers it, so the first call is asked, not refused.
 */
async function permissionsRead(fx: Fixture): Promise<void> {
  await (fx.kernel.permissions as { ready?: () => Promise<void> }).ready?.();
}

/** Kernels with no face of their own on one fresh database: their requests wait in the broker. */
async function instances(n: number, options: { auditInMemory?: boolean } = {}): Promise<Fixture[] & [Fixture, Fixture, Fixture]> {
  const databaseUrl = await server.database();
  const sink = () => {
    const records: AuditRecord[] = [];
    return { append: (r: AuditRecord) => records.push(r), tail: () => records, close: () => {} };
  };
  const made = Array.from({ length: n }, () =>
    makeKernel({ databaseUrl, prompter: null, packs: [echoPack(), editable], ...(options.auditInMemory ? { services: { auditSink: sink() } } : {}) }),
  );
  await Promise.all(made.map(permissionsRead));
  return made as Fixture[] & [Fixture, Fixture, Fixture];
}

function ask(fx: Fixture, text: string, toolName = 'echo_medium'): Promise<ToolResult> {
  return fx.kernel.invoke({ tool: toolName, args: { text }, caller: { kind: 'routine', id: 'nightly' } });
}

/** The id of the request for `text` once `fx` lists it as waiting on another instance. */
async function listedOn(fx: Fixture, text: string): Promise<{ id: string; instance: string }> {
  await fx.kernel.approvals.sync();
  const found = await waitFor(() => fx.kernel.approvals.pending().find((p) => (p.request.args as { text?: string }).text === text));
  expect(found.instance).toMatch(/^i-[0-9a-f]{12}$/);
  return { id: found.id, instance: found.instance! };
}

describe('approvals shared through PostgreSQL', () => {
  it('lists a call waiting on A on B, with who calls and the masked arguments, and B answering allow-once runs it on A', async () => {
    const [a, b] = await instances(2);
    const seenOnB: ApprovalEvent[] = [];
    b.kernel.approvals.onChange((e) => seenOnB.push(e));
    const running = ask(a, 'from A');
    const { id, instance } = await listedOn(b, 'from A');
    expect(a.kernel.approvals.pending().map((p) => p.id)).toEqual([id]);
    expect(a.kernel.approvals.pending()[0]!.instance).toBeUndefined();
    const onB = b.kernel.approvals.pending().find((p) => p.id === id)!;
    expect(onB).toMatchObject({ answerable: true, request: { tool: 'echo_medium', caller: { kind: 'routine', id: 'nightly' }, args: { text: 'from A' } } });
    expect(seenOnB.find((e) => e.kind === 'asked')).toMatchObject({ kind: 'asked', approval: { id, instance } });

    await expect(b.kernel.approvals.answerAnywhere(id, 'allow-once', 'console')).resolves.toEqual({ ok: true });
    const r = await running;
    expect(r).toMatchObject({ ok: true, value: { echoed: { text: 'from A' } } });
    const line = a.kernel.audit.tail().find((l) => l.tool === 'echo_medium')!;
    expect(line).toMatchObject({ decision: 'allow:once', outcome: 'ok' });
    expect(line.answeredBy).toMatch(/^console@i-[0-9a-f]{12}$/);
    expect(line.answeredBy).not.toBe(`console@${instance}`);
    // Gone from both inboxes; B heard how it ended.
    await waitFor(() => b.kernel.approvals.pending().length === 0);
    expect(a.kernel.approvals.pending()).toEqual([]);
    await waitFor(() => seenOnB.find((e) => e.kind === 'settled' && e.id === id));
    expect(seenOnB.find((e) => e.kind === 'settled')).toMatchObject({ id, outcome: 'answered', reply: 'allow-once' });
    // Allow-once: the next identical call is asked again.
    const again = ask(a, 'from A');
    const next = await listedOn(b, 'from A');
    expect(next.id).not.toBe(id);
    await b.kernel.approvals.answerAnywhere(next.id, 'deny-once', 'console');
    expect(await again).toMatchObject({ ok: false, error: { code: 'PERMISSION_DENIED' } });
    await Promise.all([a.close(), b.close()]);
  });

  it('stores allow-forever given on B on the instance that asked, so its next call runs unasked', async () => {
    const [a, b] = await instances(2);
    const running = ask(a, 'forever');
    const { id } = await listedOn(b, 'forever');
    await expect(b.kernel.approvals.answerAnywhere(id, 'allow-forever', 'console')).resolves.toEqual({ ok: true });
    expect(await running).toMatchObject({ ok: true });
    expect(await ask(a, 'forever, unasked')).toMatchObject({ ok: true, value: { echoed: { text: 'forever, unasked' } } });
    expect(a.kernel.audit.tail().at(-1)).toMatchObject({ tool: 'echo_medium', outcome: 'ok' });
    await Promise.all([a.close(), b.close()]);
  });

  it('takes an edit given on B: A asks again as revision 2, listed on B, and runs the edited call', async () => {
    const [a, b] = await instances(2);
    const running = ask(a, 'draft', 'echo_edit');
    const { id } = await listedOn(b, 'draft');
    await expect(b.kernel.approvals.answerAnywhere(id, { edit: { text: 'final' } }, 'console')).resolves.toEqual({ ok: true });
    const revised = await waitFor(() => b.kernel.approvals.pending().find((p) => p.id === id && p.request.revision === 2));
    expect(revised.request).toMatchObject({ args: { text: 'final' }, editedBy: expect.stringMatching(/^console@i-/) });
    await expect(b.kernel.approvals.answerAnywhere(id, 'allow-once', 'console')).resolves.toEqual({ ok: true });
    expect(await running).toMatchObject({ ok: true, value: { echoed: { text: 'final' } } });
    await Promise.all([a.close(), b.close()]);
  });

  it('counts exactly one of two answers given at once on two other instances, and tells the other who answered', async () => {
    const [a, b, c] = await instances(3);
    for (let round = 0; round < 6; round++) {
      const text = `race ${round}`;
      const running = ask(a, text);
      const { id } = await listedOn(b, text);
      await listedOn(c, text);
      const [fromB, fromC] = await Promise.all([
        b.kernel.approvals.answerAnywhere(id, 'allow-once', 'console'),
        c.kernel.approvals.answerAnywhere(id, 'deny-once', 'console'),
      ]);
      expect([fromB.ok, fromC.ok].filter(Boolean)).toHaveLength(1);
      const lost = fromB.ok ? fromC : fromB;
      expect(lost).toMatchObject({ ok: false, code: 'ALREADY_ANSWERED' });
      expect(!lost.ok && lost.message).toMatch(
        /^This request was already answered \(console@i-[0-9a-f]{12}\); exactly one answer counts, and yours was not applied\.$/,
      );
      const r = await running;
      // The call went the way of the answer that counted.
      if (fromB.ok) expect(r).toMatchObject({ ok: true });
      else expect(r).toMatchObject({ ok: false, error: { code: 'PERMISSION_DENIED' } });
    }
    await Promise.all([a.close(), b.close(), c.close()]);
  });

  it("counts exactly one answer when the asking instance's own host and another instance answer at once", async () => {
    const [a, b] = await instances(2);
    for (let round = 0; round < 4; round++) {
      const text = `own race ${round}`;
      const running = ask(a, text);
      const { id } = await listedOn(b, text);
      const [here, there] = await Promise.all([
        a.kernel.approvals.answerAnywhere(id, 'deny-once', 'host'),
        b.kernel.approvals.answerAnywhere(id, 'allow-once', 'console'),
      ]);
      expect([here.ok, there.ok].filter(Boolean)).toHaveLength(1);
      const r = await running;
      if (there.ok) expect(r).toMatchObject({ ok: true });
      else expect(r).toMatchObject({ ok: false, error: { code: 'PERMISSION_DENIED' } });
      expect(a.kernel.audit.tail().at(-1)!.answeredBy).toEqual(there.ok ? expect.stringMatching(/^console@i-/) : 'host');
    }
    await Promise.all([a.close(), b.close()]);
  });

  it('answers through the console API of another instance; a second click on a third console is refused with 409', async () => {
    const databaseUrl = await server.database();
    const [a, b, c] = (await Promise.all([1, 2, 3].map(() => consoleFixture({ databaseUrl })))) as [ConsoleFixture, ConsoleFixture, ConsoleFixture];
    const [cookieB, cookieC] = await Promise.all([b.login(), c.login()]);
    // Nobody watches anywhere: a call that needs approval is refused at once, as on one instance.
    await permissionsRead(a.fx);
    await a.fx.kernel.approvals.sync();
    const unwatched = await a.fx.kernel.invoke({ tool: 'echo_medium', args: { text: 'unwatched' }, caller: { kind: 'host', id: 'test' } });
    expect(unwatched).toMatchObject({ ok: false, error: { code: 'PERMISSION_DENIED', details: { decision: 'deny:unattended' } } });

    // B's page is open: A's request waits for it instead.
    const events = openEvents(b.origin, cookieB);
    expect(await events.status).toBe(200);
    const running = waitFor(
      async () => {
        const r = await a.fx.kernel.invoke({ tool: 'echo_medium', args: { text: 'via the console' }, caller: { kind: 'host', id: 'test' } });
        return r.ok || r.error.details?.decision !== 'deny:unattended' ? r : undefined;
      },
      { intervalMs: 200 },
    );
    const asked = await waitFor(() => events.events.find((e) => e.event === 'asked' && e.data.args.text === 'via the console'));
    expect(asked.data).toMatchObject({ tool: 'echo_medium', answerable: true, instance: expect.stringMatching(/^i-/) });
    const listed = await raw(`${b.origin}/ui/api/approvals`, { headers: { Cookie: cookieB } });
    expect(JSON.parse(listed.body)).toEqual([expect.objectContaining({ id: asked.data.id, instance: asked.data.instance })]);
    const listedOnC = await raw(`${c.origin}/ui/api/approvals`, { headers: { Cookie: cookieC } });
    expect(JSON.parse(listedOnC.body).map((v: { id: string }) => v.id)).toEqual([asked.data.id]);

    const [onB, onC] = await Promise.all([
      post(b.origin, `/ui/api/approvals/${asked.data.id}`, cookieB, { answer: 'allow-once' }),
      post(c.origin, `/ui/api/approvals/${asked.data.id}`, cookieC, { answer: 'deny-once' }),
    ]);
    expect([onB.status, onC.status].sort()).toEqual([200, 409]);
    const refused = JSON.parse((onB.status === 409 ? onB : onC).body);
    expect(refused).toMatchObject({ error: 'ALREADY_ANSWERED', message: expect.stringMatching(/^This request was already answered \(console@i-/) });
    const r = await running;
    if (onB.status === 200) expect(r).toMatchObject({ ok: true });
    else expect(r).toMatchObject({ ok: false, error: { code: 'PERMISSION_DENIED' } });
    await waitFor(() => events.events.find((e) => e.event === 'settled' && e.data.id === asked.data.id));
    // Answered: a third answer is refused as no longer waiting.
    const late = await post(b.origin, `/ui/api/approvals/${asked.data.id}`, cookieB, { answer: 'allow-once' });
    expect(late.status).toBe(404);
    events.close();
    await Promise.all([a.close(), b.close(), c.close()]);
  });
});

describe('shared approvals while PostgreSQL is down', () => {
  afterEach(async () => {
    await server.start();
  });

  it('keeps requests waiting on their own instance, answers them there, and shares them again once the server is back', async () => {
    // An audit sink in memory: on PostgreSQL the audit trail refuses every call while the server is
    // down (its own rule); what is checked here is what the approvals do meanwhile.
    const [a, b] = await instances(2, { auditInMemory: true });
    // Both inboxes are open before the outage.
    const first = ask(a, 'before');
    const { id: before } = await listedOn(b, 'before');
    await b.kernel.approvals.answerAnywhere(before, 'allow-once', 'console');
    expect(await first).toMatchObject({ ok: true });

    await server.stop();
    const local = ask(a, 'answered here');
    const localId = await waitFor(() => a.kernel.approvals.pending().find((p) => (p.request.args as { text: string }).text === 'answered here')?.id);
    // The instance that holds the call answers it without the database.
    await expect(a.kernel.approvals.answerAnywhere(localId, 'allow-once', 'host')).resolves.toEqual({ ok: true });
    expect(await local).toMatchObject({ ok: true, value: { echoed: { text: 'answered here' } } });
    // Another instance cannot answer anything meanwhile, and says why.
    const waiting = ask(a, 'shared later');
    const waitingId = await waitFor(() => a.kernel.approvals.pending().find((p) => (p.request.args as { text: string }).text === 'shared later')?.id);
    const refused = await b.kernel.approvals.answerAnywhere(waitingId, 'allow-once', 'console');
    expect(refused).toMatchObject({
      ok: false,
      code: 'UNAVAILABLE',
      message: expect.stringMatching(/^The shared approvals cannot be reached, so the answer was not given: /),
    });
    expect(!refused.ok && refused.message).not.toContain(server.password);

    await server.start();
    const { id } = await listedOn(b, 'shared later');
    expect(id).toBe(waitingId);
    await expect(b.kernel.approvals.answerAnywhere(id, 'allow-once', 'console')).resolves.toEqual({ ok: true });
    expect(await waiting).toMatchObject({ ok: true, value: { echoed: { text: 'shared later' } } });
    await Promise.all([a.close(), b.close()]);
  });
});
