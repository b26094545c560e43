/**
 * A person's changes made through a kernel (kernel.admin: what the console and host apps use) are on
 * the audit trail as chained `admin` lines, written before the change: who (the face), what (the
 * action and its target) and how (the change, secrets masked). The trail verifies with them, and an
 * edited admin line is caught like an edited call line.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { formatVerifyReport, lineCounts, verifyAuditFile } from '../../kernel/audit/audit-verify.js';
import { readAuditFileTail } from '../../kernel/audit/audit-tail.js';
import type { AuditEvent } from '../../kernel/audit/audit-record.js';
import { makeKernel, type Fixture } from '../helpers/kernel-fixture.js';

const adminLines = (file: string): AuditEvent[] => readAuditFileTail(file, 1000).filter((l): l is AuditEvent => 'event' in l && l.event === 'admin');

describe('admin actions through kernel.admin', () => {
  let fx: Fixture;
  const trail = () => path.join(fx.dataDir, 'agent-audit.jsonl');
  beforeEach(() => {
    fx = makeKernel();
  });
  afterEach(async () => fx.close());

  it('records pack enable, disable and config, permission allow, deny and revoke, always-allow and providers, each naming the face', async () => {
    const k = fx.kernel;
    await k.admin.setPackEnabled('echo-pack', false, 'console');
    expect(k.registry.isEnabled('echo-pack')).toBe(false);
    await k.admin.setPackEnabled('echo-pack', true);
    await k.admin.decide({ tool: 'echo_medium', decision: 'allow', plugin: 'echo-pack', scope: 'forever' }, new Date(), 'console');
    await k.admin.decide({ tool: 'echo_dangerous', decision: 'deny', plugin: 'echo-pack', scope: 'forever' }, new Date(), 'console');
    expect(await k.admin.revoke('echo_medium', 'console')).toBe(true);
    expect(await k.admin.revoke('echo_medium', 'console')).toBe(false); // nothing stored: no change, no line
    await k.admin.setAlwaysAllow(true, 'host');
    await k.admin.putProvider(
      { name: 'local', kind: 'openai-compatible', baseUrl: 'http://127.0.0.1:9/v1', model: 'm', apiKey: 'sk-live-1234567890abcdef' },
      'console',
    );
    await k.admin.useProvider('local', 'console');
    expect(await k.admin.removeProvider('local', 'console')).toBe(true);

    const seen = adminLines(trail()).map((l) => `${l.action} ${l.target ?? '-'} by ${l.by}`);
    expect(seen).toEqual([
      'pack.disable echo-pack by console',
      'pack.enable echo-pack by host',
      'permission.allow echo_medium by console',
      'permission.deny echo_dangerous by console',
      'permission.revoke echo_medium by console',
      'always-allow.on - by host',
      'provider.add local by console',
      'provider.use local by console',
      'provider.remove local by console',
    ]);
    const lines = adminLines(trail());
    expect(lines[2]!.change).toEqual({ plugin: 'echo-pack', scope: 'forever' });
    expect(lines[4]!.change).toEqual({ scopes: ['forever'] });
    // The key never reaches the trail: masked by its name.
    expect(fs.readFileSync(trail(), 'utf8')).not.toContain('sk-live-1234567890abcdef');
    expect(lines[6]!.change).toMatchObject({ name: 'local', apiKey: '[masked]', baseUrl: 'http://127.0.0.1:9/v1' });
    expect(lines.every((l) => l.pid === process.pid && typeof l.ts === 'string')).toBe(true);
  });

  it('records the default access mode a face stores, and keeps it across a restart (computer until then)', async () => {
    expect(fx.kernel.providerSettings.defaultMode()).toBe('computer');
    await fx.kernel.admin.setDefaultMode('vault', 'cli');
    expect(fx.kernel.providerSettings.defaultMode()).toBe('vault');
    expect(adminLines(trail()).map((l) => [l.action, l.target, l.by, l.change])).toEqual([['mode.default', 'vault', 'cli', { mode: 'vault' }]]);
    fx = await fx.restart();
    expect(fx.kernel.providerSettings.defaultMode()).toBe('vault');
  });

  it('writes a second line when a change fails after its line was written, and the change stays unmade', async () => {
    // An unknown pack is refused before anything is recorded.
    await expect(fx.kernel.admin.configurePack('no-such-pack', { x: 1 }, 'console')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(adminLines(trail())).toEqual([]);
    // Settings the pack does not take are found by the store: the attempt and its failure are both on the record.
    await expect(fx.kernel.admin.configurePack('echo-pack', { x: 1 }, 'console')).rejects.toThrow();
    const lines = adminLines(trail());
    expect(lines.map((l) => [l.action, l.outcome ?? 'attempted'])).toEqual([
      ['pack.config', 'attempted'],
      ['pack.config', 'failed'],
    ]);
    expect(lines[1]!.error).toBeTruthy();
  });

  it('counts call entries, changes by a person and kernel events apart on the verify line', () => {
    expect(lineCounts({ entries: 12, changes: 3, events: 1 })).toBe('12 entries, 3 changes by a person and 1 kernel event');
    expect(lineCounts({ entries: 1, changes: 0, events: 2 })).toBe('1 entry and 2 kernel events');
    expect(lineCounts({ entries: 0, changes: 1, events: 0 })).toBe('0 entries and 1 change by a person');
  });

  it('verifies with admin lines in the chain, and fails once an admin line is edited', async () => {
    await fx.kernel.invoke({ tool: 'echo_safe', args: { text: 'a' }, caller: { kind: 'cli' } });
    await fx.kernel.admin.setPackEnabled('echo-pack', false, 'console');
    await fx.kernel.admin.setPackEnabled('echo-pack', true, 'console');
    await fx.close();
    expect(formatVerifyReport(verifyAuditFile(trail()))).toMatch(/^OK: 1 entry and 2 changes by a person, keyed chain intact/);

    // Someone rewrites who disabled the pack.
    const text = fs.readFileSync(trail(), 'utf8');
    fs.writeFileSync(trail(), text.replace('"by":"console"', '"by":"cli"'));
    const report = verifyAuditFile(trail());
    expect(report.problem).toMatchObject({ kind: 'altered' });
    expect(formatVerifyReport(report)).toMatch(/^TAMPERED: line 2 .*was altered/);
  });
});
