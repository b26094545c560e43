/**
 * An answer given on the asking instance's own face while the shared approvals database cannot be
 * reached, for a request already in the shared inbox: a denial settles it at once (a denial runs
 * nothing); an allow is not applied (someone elsewhere may have answered), and if nobody answers
 * through the database the refusal names the answer that could not be recorded. Once the database
 * answers again, the face is asked again. Real PostgreSQL, stopped with stop().
 */
import type { ApprovalFace, ApprovalReply, PermissionRequest } from '../../kernel/permissions/prompter.js';
import type { ToolResult } from '../../kernel/tools/contract.js';
import { makeKernel, type Fixture } from '../helpers/kernel-fixture.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait.js';

let server: TestPostgres;
beforeAll(async () => {
  server = await startPostgres();
}, 120_000);

/** A face that answers only when told to (a terminal, a host app's prompter). */
class HeldFace implements ApprovalFace {
  readonly asked: PermissionRequest[] = [];
  private readonly resolvers: Array<(r: ApprovalReply) => void> = [];
  constructor(
    readonly name: string,
    readonly waitMs: number,
  ) {}
  ask(request: PermissionRequest): Promise<ApprovalReply> {
    this.asked.push(request);
    return new Promise((resolve) => this.resolvers.push(resolve));
  }
  reply(r: ApprovalReply): void {
    this.resolvers.shift()?.(r);
  }
}

const error = (r: ToolResult) => (r.ok ? { code: 'ok', message: '' } : { code: r.error.code, message: r.error.message });

/** A kernel on the shared database with one face; a call waiting on it, its request in the shared inbox; then the database is stopped. */
async function askedThenCutOff(): Promise<{ fx: Fixture; face: HeldFace; call: Promise<ToolResult> }> {
  const databaseUrl = await server.database();
  const db = new URL(databaseUrl).pathname.slice(1);
  const fx = makeKernel({ databaseUrl, prompter: null, approvalWaitMs: 60_000 });
  const face = new HeldFace('terminal', 60_000);
  fx.kernel.approvals.attach(face);
  // The stored permissions are read from the database first (until then medium calls are refused).
  await fx.kernel.permissions.ready?.();
  await fx.kernel.approvals.sync();
  const call = fx.kernel.invoke({ tool: 'echo_medium', args: { text: 'x' }, caller: { kind: 'agent', conversationId: 'c1' } });
  let ended: ToolResult | undefined;
  void call.then((r) => (ended = r));
  const id = (
    await waitFor(() => face.asked[0], { what: () => `the face asked (the call: ${JSON.stringify(ended)}; log: ${JSON.stringify(fx.logger.lines)})` })
  ).callId;
  await waitFor(async () => {
    const rows = await server.query<{ state: string }>(`SELECT "state" FROM memo_approvals.approvals WHERE "id" = $1`, [id], db);
    return rows[0]?.state === 'pending';
  });
  await server.stop();
  return { fx, face, call };
}

describe('answering on the asking instance while the shared approvals database is down', () => {
  let fx: Fixture | undefined;
  afterEach(async () => {
    await server.start();
    await fx?.close();
    fx = undefined;
  });

  it('a local denial settles the request at once as denied, and the log says it wins over any answer given elsewhere', async () => {
    const cut = await askedThenCutOff();
    fx = cut.fx;
    cut.face.reply('deny-once');
    // No clock advance: only the denial can end the call.
    const result = await cut.call;
    expect(error(result).code).toBe('PERMISSION_DENIED');
    expect(fx.kernel.approvals.pending()).toEqual([]);
    expect(
      fx.logger.lines.some(
        (l) => l.level === 'warn' && /denied here \(deny-once by terminal\).*wins over any answer given on another instance/.test(l.message),
      ),
    ).toBe(true);
  });

  it('a local allow is not applied; when the wait runs out, the refusal names the answer that could not be recorded', async () => {
    const cut = await askedThenCutOff();
    fx = cut.fx;
    cut.face.reply('allow-once');
    await waitFor(() => fx!.logger.lines.find((l) => l.message.includes('your answer was not applied and the request still waits')));
    // Still waiting: the allow was not applied.
    expect(fx.kernel.approvals.pending().map((p) => p.request.tool)).toEqual(['echo_medium']);
    fx.clock.advance(60_000);
    const result = await cut.call;
    expect(error(result)).toEqual({
      code: 'PERMISSION_TIMEOUT',
      message:
        'echo_medium was denied: the answer given here (allow-once by terminal) could not be recorded because the shared approvals database could not be reached, and nobody answered through it within 60 s.',
    });
  });

  it('a local allow that could not be recorded is asked again on the same face once the database answers, and that answer counts', async () => {
    const cut = await askedThenCutOff();
    fx = cut.fx;
    cut.face.reply('allow-once');
    await waitFor(() => fx!.logger.lines.find((l) => l.message.includes('your answer was not applied and the request still waits')));
    expect(cut.face.asked).toHaveLength(1);
    await server.start();
    await waitFor(() => cut.face.asked.length === 2, { what: 'the face asked again' });
    cut.face.reply('allow-once');
    expect(error(await cut.call).code).toBe('ok');
  });
});
