/**
 * An instance killed (-9) while a call of its waits for approval: the other instances' inboxes go on
 * listing the request, marked gone (its instance stopped beating), and refuse to answer it, in the
 * broker and in the console's API. The dying instance is a real process running the compiled kernel.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { killWhenDone } from '../helpers/cleanup.js';
import { requireFreshBuild } from '../helpers/dist.js';
import { tempDir } from '../helpers/kernel-fixture.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { SPAWN_TIMEOUT_MS, waitFor } from '../helpers/wait.js';
import { consoleFixture, post, raw } from '../console/console-helpers.js';

let server: TestPostgres;
beforeAll(async () => {
  requireFreshBuild();
  server = await startPostgres();
}, 120_000);

/** A kernel in its own process whose one call waits for approval; it prints its instance id once the call is asked. */
const CHILD = `
const { createKernel } = await import(process.env.MEMO_KERNEL);
const { instanceId } = await import(process.env.MEMO_INSTANCE_ID_MODULE);
const spec = { name: 'echo_medium', description: 'echo', danger: 'medium', effect: 'write',
  parameters: { type: 'object', properties: { text: { type: 'string' } }, additionalProperties: false } };
const kernel = createKernel({ root: process.env.ROOT, dataDir: process.env.DATA, databaseUrl: process.env.URL, prompter: null,
  packs: [{ id: 'echo-pack', version: '1.0.0', tools: [{ spec, impl: (a) => ({ echoed: a }) }] }] });
await kernel.permissions.ready?.();
kernel.approvals.onChange((e) => { if (e.kind === 'asked') console.log(JSON.stringify({ asked: e.approval.id, instance: instanceId(process.env.DATA) })); });
void kernel.invoke({ tool: 'echo_medium', args: { text: 'left behind' }, caller: { kind: 'routine', id: 'nightly' } });
setInterval(() => {}, 60_000);
`;

describe('approvals of an instance that dies', () => {
  it(
    'stay listed on the others as gone, and answering one is refused saying its instance stopped',
    async () => {
      const databaseUrl = await server.database();
      const b = await consoleFixture({ databaseUrl });
      const cookie = await b.login();
      const dir = tempDir('memo-dying-');
      fs.mkdirSync(path.join(dir, 'data'));
      const script = path.join(dir, 'child.mjs');
      fs.writeFileSync(script, CHILD);
      const child = killWhenDone(
        spawn(process.execPath, [script], {
          env: {
            ...process.env,
            MEMO_KERNEL: path.resolve('dist/kernel/kernel.js'),
            MEMO_INSTANCE_ID_MODULE: path.resolve('dist/kernel/storage/instance-id.js'),
            ROOT: dir,
            DATA: path.join(dir, 'data'),
            URL: databaseUrl,
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        }),
      );
      let out = '';
      let err = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const asked = await waitFor(() => out.split('\n').find((l) => l.startsWith('{')), { what: () => `the child's request (stderr: ${err})` });
      const { asked: id, instance } = JSON.parse(asked) as { asked: string; instance: string };

      await b.fx.kernel.approvals.sync();
      const live = await waitFor(() => b.fx.kernel.approvals.pending().find((p) => p.id === id));
      expect(live).toMatchObject({ instance, answerable: true });
      expect(live.gone).toBeUndefined();

      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
      const gone = await waitFor(() => b.fx.kernel.approvals.pending().find((p) => p.id === id && p.gone), { what: 'the request marked gone' });
      expect(gone).toMatchObject({ instance, answerable: false, gone: true, request: { tool: 'echo_medium', args: { text: 'left behind' } } });

      const refused = await b.fx.kernel.approvals.answerAnywhere(id, 'allow-once', 'console');
      expect(refused).toEqual({
        ok: false,
        code: 'GONE',
        message: `The instance ${instance} that asked this is not answering (stopped, or cut off from the database), so it cannot be answered now; if that instance comes back, the request waits again and can be answered then.`,
      });
      const listed = JSON.parse((await raw(`${b.origin}/ui/api/approvals`, { headers: { Cookie: cookie } })).body) as Array<Record<string, unknown>>;
      expect(listed).toEqual([expect.objectContaining({ id, instance, gone: true, answerable: false })]);
      const answer = await post(b.origin, `/ui/api/approvals/${id}`, cookie, { answer: 'allow-once' });
      expect(answer.status).toBe(410);
      expect(JSON.parse(answer.body)).toMatchObject({
        error: 'GONE',
        message: `The instance ${instance} that asked this is not answering (stopped, or cut off from the database), so it cannot be answered now; if that instance comes back, the request waits again and can be answered then.`,
      });
      await b.close();
    },
    SPAWN_TIMEOUT_MS,
  );
});
