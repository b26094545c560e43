/**
 * The web console of instances sharing one PostgreSQL database: Verify checks every instance's audit
 * chain (not a data folder file that no longer exists), and a settings change made on the page is
 * answered only once the database has committed it; one it refuses is reported and undone.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { consoleFixture, post, type ConsoleFixture } from '../console/console-helpers.js';
import { instanceId } from '../../kernel/storage/instance-id.js';
import { echoPack, tempDir } from '../helpers/kernel-fixture.js';
import { waitFor } from '../helpers/wait.js';

let server: TestPostgres;
beforeAll(async () => {
  server = await startPostgres();
}, 120_000);
// startPostgres removes its server when the file ends.

const open: ConsoleFixture[] = [];
afterEach(async () => {
  await server.start();
  await Promise.all(open.splice(0).map((c) => c.close()));
});

async function instance(databaseUrl: string, dataDir?: string): Promise<ConsoleFixture> {
  const c = await consoleFixture({ databaseUrl, packs: [echoPack()], ...(dataDir ? { dataDir } : {}) });
  open.push(c);
  return c;
}

describe('the web console on a shared database', () => {
  it("verifies every instance's audit chain, naming each instance, and says which chain's key is not at hand", async () => {
    const databaseUrl = await server.database();
    const a = await instance(databaseUrl);
    // Instances that share a database share the audit key (README): B starts with a copy of A's.
    const dirB = tempDir();
    fs.copyFileSync(path.join(a.fx.dataDir, 'audit.key'), path.join(dirB, 'audit.key'));
    const b = await instance(databaseUrl, dirB);
    for (const c of [a, b]) {
      const r = await c.fx.kernel.invoke({ tool: 'echo_safe', args: { text: 'x' }, caller: { kind: 'host', id: 'test' } });
      expect(r.ok).toBe(true);
    }
    const cookie = await a.login();
    const verify = async () => {
      const res = await post(a.origin, '/ui/api/audit/verify', cookie, {});
      expect(res.status).toBe(200);
      expect(res.body).not.toContain(server.password);
      return JSON.parse(res.body) as { ok: boolean; chains: Array<{ instance: string; ok: boolean; entries: number; problem?: { message: string } }> };
    };
    const report = await verify();
    expect(report).toMatchObject({ ok: true });
    expect(report.chains.map((c) => [c.instance, c.ok, c.entries]).sort()).toEqual(
      [
        [instanceId(a.fx.dataDir), true, 1],
        [instanceId(dirB), true, 1],
      ].sort(),
    );

    // A third instance with a key of its own: its chain is reported as one this folder cannot check.
    const c = await instance(databaseUrl);
    expect((await c.fx.kernel.invoke({ tool: 'echo_safe', args: { text: 'x' }, caller: { kind: 'host', id: 'test' } })).ok).toBe(true);
    const mixed = await verify();
    expect(mixed.ok).toBe(false);
    const third = mixed.chains.find((ch) => ch.instance === instanceId(c.fx.dataDir));
    expect(third).toMatchObject({ ok: false, problem: { message: expect.stringMatching(/not at hand/) } });
  });

  it('answers a change once it is committed, so the other instance already holds it, and refuses one the database cannot take (its audit line first)', async () => {
    const databaseUrl = await server.database();
    const [a, b] = [await instance(databaseUrl), await instance(databaseUrl)];
    const cookie = await a.login();
    const on = await post(a.origin, '/ui/api/permissions/always-allow', cookie, { on: true });
    expect(on.status).toBe(200);
    await waitFor(() => b.fx.kernel.permissions.alwaysAllow === true);

    await server.stop();
    const off = await post(a.origin, '/ui/api/permissions/always-allow', cookie, { on: false });
    expect(off.status).toBe(503);
    // The change's audit line goes first, on the same database: it cannot be written, so the change is not made.
    expect(JSON.parse(off.body)).toMatchObject({
      error: 'AUDIT_UNAVAILABLE',
      message: expect.stringMatching(
        /^always-allow\.off was not done: its audit line could not be written \(.*cannot be used.*\)\. A change is made only once it is on the record\.$/,
      ),
    });
    expect(off.body).not.toContain(server.password);
    // Not made: the page does not show a change the other instances never got.
    expect(a.fx.kernel.permissions.alwaysAllow).toBe(true);
  });
});
