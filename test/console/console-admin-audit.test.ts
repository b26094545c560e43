/**
 * A person's changes made in the web console are on the audit trail as `admin` lines by `console`,
 * written before the change (kernel.admin): packs, always-allow, permissions, providers (key
 * masked), the MCP token. The trail verifies with them.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { formatVerifyReport, verifyAuditFile } from '../../kernel/audit/audit-verify.js';
import { readAuditFileTail } from '../../kernel/audit/audit-tail.js';
import type { AuditEvent } from '../../kernel/audit/audit-record.js';
import { consoleFixture, post, type ConsoleFixture } from './console-helpers.js';

describe('web console admin changes on the audit trail', () => {
  let c: ConsoleFixture;
  let cookie: string;
  beforeAll(async () => {
    c = await consoleFixture();
    await c.fx.kernel.packs.load([{ dir: path.resolve('test/fixtures/packs'), source: 'extra', only: ['echo-tools'] }]);
    cookie = await c.login();
  });
  afterAll(() => c.close());
  const trail = () => path.join(c.fx.dataDir, 'agent-audit.jsonl');
  const admin = () => readAuditFileTail(trail(), 1000).filter((l): l is AuditEvent => 'event' in l && l.event === 'admin');

  it('records each change by console, masks a provider key, and the trail verifies', async () => {
    const key = `sk-${'q7'.repeat(20)}`;
    c.fx.kernel.permissions.set({ tool: 'echo_medium', decision: 'allow', plugin: 'echo-pack', scope: 'forever' }, new Date());
    const steps: Array<[string, unknown]> = [
      ['/ui/api/packs/echo-tools/disable', {}],
      ['/ui/api/packs/echo-tools/enable', {}],
      ['/ui/api/packs/echo-tools/config', { changes: { repeat: 2 } }],
      ['/ui/api/permissions/always-allow', { on: true }],
      ['/ui/api/permissions/echo_medium/revoke', {}],
      ['/ui/api/providers', { name: 'hosted', kind: 'openai-compatible', baseUrl: 'http://127.0.0.1:9/v1', model: 'm', apiKey: key }],
      ['/ui/api/providers/hosted/use', {}],
      ['/ui/api/providers/hosted/remove', {}],
      ['/ui/api/mcp/rotate-token', {}],
    ];
    for (const [route, body] of steps) {
      const r = await post(c.origin, route, cookie, body);
      expect({ route, status: r.status < 300 ? 'ok' : `${r.status} ${r.body}` }).toEqual({ route, status: 'ok' });
    }
    expect(admin().map((l) => `${String(l.action)} ${l.target ?? '-'} by ${String(l.by)}`)).toEqual([
      'pack.disable echo-tools by console',
      'pack.enable echo-tools by console',
      'pack.config echo-tools by console',
      'always-allow.on - by console',
      'permission.revoke echo_medium by console',
      'provider.add hosted by console',
      'provider.use hosted by console',
      'provider.remove hosted by console',
      'token.rotate - by console',
    ]);
    expect(fs.readFileSync(trail(), 'utf8')).not.toContain(key);
    expect(formatVerifyReport(verifyAuditFile(trail()))).toMatch(/^OK: /);
  });

  it('makes no line and no change for a request refused before it (an unknown pack or provider, a bad body)', async () => {
    const before = admin().length;
    expect((await post(c.origin, '/ui/api/packs/nope/disable', cookie, {})).status).toBe(404);
    expect((await post(c.origin, '/ui/api/providers/nobody/use', cookie, {})).status).toBe(404);
    expect((await post(c.origin, '/ui/api/permissions/always-allow', cookie, { on: 'yes' })).status).toBe(400);
    expect(admin().length).toBe(before);
  });
});
