/**
 * Admin lines on the PostgreSQL trail: a person's change through kernel.admin, and one made by a CLI
 * command beside the running kernel (its own PgAuditLog on the same instance's chain), are chained
 * event rows of that instance; the chain verifies with them, and fails once one is edited.
 */
import * as path from 'node:path';
import pg from 'pg';
import { cliRecorded } from '../../kernel/cli/admin-record.js';
import { verifyAuditDatabase } from '../../kernel/audit/pg-audit-read.js';
import { DatabaseUrl } from '../../kernel/storage/database-url.js';
import { instanceId } from '../../kernel/storage/instance-id.js';
import { makeKernel, tempDir } from '../helpers/kernel-fixture.js';
import { onPostgres } from './on-postgres.js';

const server = onPostgres(['memo_audit']);

describe('admin lines on the PostgreSQL audit trail', () => {
  it('are chained rows of the instance, from the kernel and from a CLI command beside it; verify passes, and fails after one is edited', async () => {
    const fx = makeKernel({ dataDir: path.join(tempDir('memo-pg-admin-'), 'data') });
    const instance = instanceId(fx.dataDir);
    try {
      await fx.kernel.invoke({ tool: 'echo_safe', args: { text: 'a' }, caller: { kind: 'cli' } });
      await fx.kernel.admin.setAlwaysAllow(true, 'console');
      const applied: string[] = [];
      await cliRecorded({ dataDir: () => fx.dataDir }, { action: 'pack.disable', target: 'echo-pack' }, () => void applied.push('disabled'));
      expect(applied).toEqual(['disabled']);
      await fx.kernel.invoke({ tool: 'echo_safe', args: { text: 'b' }, caller: { kind: 'cli' } });
    } finally {
      await fx.close();
    }
    const c = new pg.Client({ connectionString: server.url() });
    await c.connect();
    try {
      const rows = await c.query<{ seq: string; line: string }>(`SELECT seq, line FROM memo_audit.entry WHERE instance = $1 ORDER BY seq`, [instance]);
      const lines = rows.rows.map((r) => JSON.parse(r.line) as Record<string, unknown>);
      expect(lines.map((l) => (l.event === 'admin' ? `${String(l.action)} by ${String(l.by)}` : String(l.tool ?? l.event)))).toEqual([
        'echo_safe',
        'always-allow.on by console',
        'pack.disable by cli',
        'echo_safe',
      ]);
      const url = DatabaseUrl.parse(server.url());
      expect(await verifyAuditDatabase(url, fx.dataDir, instance)).toMatchObject({ ok: true });

      const admin = rows.rows.find((r) => r.line.includes('"by":"cli"'))!;
      await c.query(`UPDATE memo_audit.entry SET line = $1 WHERE instance = $2 AND seq = $3`, [
        admin.line.replace('"by":"cli"', '"by":"host"'),
        instance,
        admin.seq,
      ]);
      expect(await verifyAuditDatabase(url, fx.dataDir, instance)).toMatchObject({ ok: false });
    } finally {
      await c.end();
    }
  });
});
