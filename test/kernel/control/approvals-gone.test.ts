/**
 * `memo approvals answer` on a request that waits on an instance that is gone (it stopped beating:
 * killed, or cut off from the shared database). The control socket refuses it GONE, in the words the
 * web console uses (HTTP 410), never NOT_ANSWERABLE ("asked by a memo tools call"); `memo approvals
 * list` shows it as gone and not answerable. Real PostgreSQL; the gone request is a row of another
 * instance, as its beats' absence leaves it.
 */
import { approvalsText } from '../../../kernel/cli/approvals-command.js';
import { main } from '../../../kernel/cli/main.js';
import { ControlFailure, reachServer, type ControlConnection } from '../../../kernel/control/control-client.js';
import { ControlServer } from '../../../kernel/control/control-server.js';
import type { ApprovalView } from '../../../kernel/control/kernel-views.js';
import { MemoryLogger } from '../../../kernel/logger.js';
import { atTeardown } from '../../helpers/cleanup.js';
import { echoPack, makeKernel } from '../../helpers/kernel-fixture.js';
import { startPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { waitFor } from '../../helpers/wait.js';

let server: TestPostgres;
beforeAll(async () => {
  server = await startPostgres();
}, 120_000);

const GONE_INSTANCE = 'inst-gone-1';

/** A request of another instance, as the shared inbox holds it once that instance stopped beating. */
async function goneRequest(url: string, id: string): Promise<void> {
  const request = {
    callId: id,
    tool: 'echo_medium',
    plugin: 'echo-pack',
    danger: 'medium',
    effect: 'write',
    args: { text: 'left behind' },
    preview: null,
    caller: { kind: 'routine', id: 'nightly' },
    standingApprovalAllowed: true,
    answers: ['allow-once', 'deny-once'],
    editable: false,
    revision: 1,
    deadline: Date.now() + 600_000,
  };
  await server.query(
    `INSERT INTO memo_approvals.approvals ("id", "instance", "incarnation", "revision", "view", "state", "expires_at")
     VALUES ($1, $2, 'gone-run', 1, $3, 'gone', now() + interval '10 minutes')`,
    [id, GONE_INSTANCE, JSON.stringify({ request, since: Date.now() })],
    new URL(url).pathname.slice(1),
  );
}

async function connect(dataDir: string): Promise<ControlConnection> {
  const reach = await reachServer({ dataDir });
  if (!reach || !('server' in reach)) throw new Error(`not reached: ${JSON.stringify(reach)}`);
  return reach.server;
}

describe('a request of a gone instance, through the control socket', () => {
  it('is listed as gone (not answerable), and answering it is refused GONE in the words of the console, not NOT_ANSWERABLE', async () => {
    const databaseUrl = await server.database();
    const sink = { append: () => {}, tail: () => [], close: () => {} };
    const b = makeKernel({ databaseUrl, prompter: null, packs: [echoPack()], services: { auditSink: sink } });
    atTeardown(() => b.close());
    await (b.kernel.permissions as { ready?: () => Promise<void> }).ready?.();
    const logger = new MemoryLogger();
    const control = await ControlServer.start({ kernel: b.kernel, packFolders: [], skillFolders: [], logger });
    if (!control) throw new Error(`no control server: ${JSON.stringify(logger.lines)}`);
    atTeardown(() => control.close());

    const id = 'call-gone-0001';
    await b.kernel.approvals.sync(); // the shared inbox's tables exist
    await goneRequest(databaseUrl, id);
    await b.kernel.approvals.sync();
    await waitFor(() => b.kernel.approvals.pending().find((p) => p.id === id && p.gone), { what: 'the gone request listed on B' });

    const listed = (await (await connect(b.dataDir)).request('approvals.list')) as ApprovalView[];
    expect(listed).toEqual([expect.objectContaining({ id, instance: GONE_INSTANCE, gone: true, answerable: false })]);

    const refused = await (await connect(b.dataDir)).request('approvals.answer', { id, answer: 'allow-once' }).then(
      () => null,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(ControlFailure);
    const goneText = `The instance ${GONE_INSTANCE} that asked this is not answering (stopped, or cut off from the database), so it cannot be answered now; if that instance comes back, the request waits again and can be answered then.`;
    expect(refused).toMatchObject({ code: 'GONE', message: goneText });
    // Answered by a unique start of its id, the same.
    await expect((await connect(b.dataDir)).request('approvals.answer', { id: 'call-gone', answer: 'deny-once' })).rejects.toMatchObject({ code: 'GONE' });

    // memo approvals list says it cannot be answered now, and why; memo approvals answer prints the refusal and exits 1.
    const text = approvalsText(listed, Date.now());
    expect(text).toContain(`answers:   none now: instance ${GONE_INSTANCE} that asked it is not answering (stopped, or cut off from the database)`);
    expect(text).not.toContain('memo approvals answer');
    expect(text).not.toContain('memo tools call');
    let stderr = '';
    const write = process.stderr.write.bind(process.stderr);
    const capture = (chunk: string | Uint8Array): boolean => ((stderr += String(chunk)), true);
    process.stderr.write = capture;
    let code: number;
    try {
      code = await main(['node', 'memo', '--data', b.dataDir, 'approvals', 'answer', id, 'allow-once']);
    } finally {
      process.stderr.write = write;
    }
    expect(code).toBe(1);
    expect(stderr).toBe(`memo: ${goneText}\n`);
  });
});
