/**
 * The CLI's changes to a data folder's settings go on its audit trail as `admin` lines by `cli`,
 * written before the change: packs, permissions, always-allow, providers (key masked), the sandbox
 * and rate-limit settings, and a pack's own person-only command (calendar consent). Reading a
 * setting writes nothing; `memo audit verify` passes afterwards.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { requireFreshBuild } from '../helpers/dist.js';
import { tempDir } from '../helpers/kernel-fixture.js';

const BIN = path.resolve('bin/memo');
const PACKS = path.resolve('test/fixtures/packs');

beforeAll(requireFreshBuild);

function workspace() {
  const base = tempDir('memo-admin-cli-');
  const root = path.join(base, 'root');
  fs.mkdirSync(root);
  return { root, data: path.join(base, 'data') };
}

function memo(w: { root: string; data: string }, args: string[], input?: string) {
  const res = spawnSync(process.execPath, [BIN, '--packs', PACKS, '--root', w.root, '--data', w.data, ...args], {
    encoding: 'utf8',
    input: input ?? '',
    env: { ...process.env, MEMO_DATABASE_URL: '' },
  });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr };
}

function adminLines(data: string): Array<Record<string, unknown>> {
  const file = path.join(data, 'agent-audit.jsonl');
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.event === 'admin');
}

describe('memo CLI admin changes on the audit trail', () => {
  it('records each change by cli before making it, masks the key, writes nothing for a read, and verifies', () => {
    const w = workspace();
    fs.writeFileSync(path.join(w.root, 'work.ics'), 'BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//t//EN\r\nEND:VCALENDAR\r\n');
    const steps: Array<[string[], string?]> = [
      [['plugins', 'disable', 'echo-tools']],
      [['plugins', 'enable', 'echo-tools']],
      [['permissions', 'allow', 'note_write', '--minutes', '5']],
      [['permissions', 'deny', 'note_delete']],
      [['permissions', 'revoke', 'note_delete']],
      [['permissions', 'always-allow', 'on']],
      [['permissions', 'always-allow', 'status']],
      [['permissions', 'list']],
      [
        [
          'provider',
          'add',
          'loc',
          '--kind',
          'openai-compatible',
          '--preset',
          'custom',
          '--base-url',
          'http://127.0.0.1:9/v1',
          '--model',
          'm',
          '--api-key-stdin',
        ],
        'sk-cli-secret-0123456789abcdef\n',
      ],
      [['provider', 'use', 'loc']],
      [['provider', 'remove', 'loc']],
      [['settings', 'sandbox', 'judged']],
      [['settings', 'rate-limit', '120']],
      [['calendar', 'consent', 'subscriptions', 'allow']],
      [['calendar', 'add', 'file', 'work', 'work.ics']],
      [['calendar', 'remove', 'work']],
    ];
    for (const [args, input] of steps) {
      const r = memo(w, args, input);
      expect({ args, code: r.code, stderr: r.code === 0 ? '' : r.stderr }).toEqual({ args, code: 0, stderr: '' });
    }
    const lines = adminLines(w.data);
    expect(lines.map((l) => `${String(l.action)} ${typeof l.target === 'string' ? l.target : '-'}`)).toEqual([
      'pack.disable echo-tools',
      'pack.enable echo-tools',
      'permission.allow note_write',
      'permission.deny note_delete',
      'permission.revoke note_delete',
      'always-allow.on -',
      'provider.add loc',
      'provider.use loc',
      'provider.remove loc',
      'settings.sandbox -',
      'settings.rate-limit -',
      'calendar.consent subscriptions',
      'calendar.add work',
      'calendar.remove work',
    ]);
    expect(new Set(lines.map((l) => l.by))).toEqual(new Set(['cli']));
    expect(lines[2]!.change).toMatchObject({ scope: 'until', expiresAt: expect.any(String) });
    expect(lines[6]!.change).toMatchObject({ apiKey: '[masked]' });
    expect(fs.readFileSync(path.join(w.data, 'agent-audit.jsonl'), 'utf8')).not.toContain('sk-cli-secret');

    const verify = memo(w, ['audit', 'verify']);
    expect(verify.code).toBe(0);
    expect(verify.stdout).toMatch(/^OK: 0 entries and 14 changes by a person, keyed chain intact/);
  });

  it('makes no line for a change refused before it is made (an unknown pack, a provider that does not exist)', () => {
    const w = workspace();
    expect(memo(w, ['plugins', 'disable', 'no-such-pack']).code).not.toBe(0);
    expect(memo(w, ['provider', 'use', 'nobody']).code).not.toBe(0);
    expect(memo(w, ['provider', 'remove', 'nobody']).code).not.toBe(0);
    expect(memo(w, ['permissions', 'revoke', 'echo']).code).not.toBe(0);
    expect(adminLines(w.data)).toEqual([]);
  });

  it('memo permissions external-writes: on for one client name, status, off; each change a line by cli; bad input refused with no line', () => {
    const w = workspace();
    const on = memo(w, ['permissions', 'external-writes', 'on', '--client', 'claude-ai']);
    expect(on).toMatchObject({ code: 0, stderr: '' });
    expect(on.stdout).toContain('External writes are now ON for MCP clients that declare the name "claude-ai"; off for the rest.');
    expect(on.stdout).toContain('anyone holding a token can claim it');
    const status = memo(w, ['permissions', 'external-writes']);
    expect(status.stdout).toMatch(/^External writes are ON for MCP clients that declare the name "claude-ai"/);
    expect(memo(w, ['permissions', 'list']).stdout).toContain('External writes are ON for "claude-ai", each write asked');
    const all = memo(w, ['permissions', 'external-writes', 'on']);
    expect(all.stdout).toMatch(/^External writes are now ON for every external MCP client \(also named: claude-ai\)/);
    const one = memo(w, ['permissions', 'external-writes', 'off', '--client', 'claude-ai']);
    expect(one.stdout).toMatch(/^"claude-ai" can still ask: external writes are on for every client/);
    const off = memo(w, ['permissions', 'external-writes', 'off']);
    expect(off.stdout).toMatch(/^External writes are now off: external MCP clients may use read tools only/);
    expect(JSON.parse(fs.readFileSync(path.join(w.data, 'permissions.json'), 'utf8'))).toMatchObject({ externalWrites: { all: false, clients: [] } });

    expect(memo(w, ['permissions', 'external-writes', 'maybe'])).toMatchObject({ code: 2 });
    expect(memo(w, ['permissions', 'external-writes', 'on', '--client', ''])).toMatchObject({ code: 2 });
    expect(memo(w, ['permissions', 'external-writes', 'on', '--client', 'x'.repeat(65)])).toMatchObject({ code: 2 });
    expect(adminLines(w.data).map((l) => `${String(l.action)} ${typeof l.target === 'string' ? l.target : '-'} ${String(l.by)}`)).toEqual([
      'external-writes.on claude-ai cli',
      'external-writes.on - cli',
      'external-writes.off claude-ai cli',
      'external-writes.off - cli',
    ]);
  });
});
