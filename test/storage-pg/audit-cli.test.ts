/**
 * `memo audit verify|export|tail` with MEMO_DATABASE_URL: real `memo` processes (the built CLI) on
 * two data folders sharing one PostgreSQL database and one audit.key.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { KEY_FILE } from '../../kernel/audit/audit-chain.js';
import { verifyAuditFile } from '../../kernel/audit/audit-verify.js';
import { requireFreshBuild } from '../helpers/dist.js';
import { tempDir } from '../helpers/kernel-fixture.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';

const BIN = path.resolve('bin/memo');
const PACKS = path.resolve('test/fixtures/packs');

let server: TestPostgres;
let url: string;
beforeAll(async () => {
  requireFreshBuild();
  server = await startPostgres();
}, 120_000);
beforeEach(async () => {
  url = await server.database();
});

function memo(data: string, ...args: string[]): { code: number | null; stdout: string; stderr: string } {
  const res = spawnSync(process.execPath, [BIN, '--packs', PACKS, '--root', path.dirname(data), '--data', data, ...args], {
    encoding: 'utf8',
    env: { ...process.env, MEMO_DATABASE_URL: url },
  });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr };
}

/** Two data folders with their own instance ids and the team's one audit.key. */
function twoInstances(): { a: string; b: string } {
  const a = path.join(tempDir('memo-pg-cli-'), 'data');
  const b = path.join(tempDir('memo-pg-cli-'), 'data');
  for (const [dir, id] of [
    [a, 'alpha'],
    [b, 'beta'],
  ] as const) {
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'instance-id'), `${id}\n`);
    fs.writeFileSync(path.join(dir, KEY_FILE), `${'5e'.repeat(32)}\n`, { mode: 0o600 });
  }
  return { a, b };
}

const echo = (data: string, text: string) => expect(memo(data, 'tools', 'call', 'echo', '--args', JSON.stringify({ text })).code).toBe(0);

describe('memo audit with MEMO_DATABASE_URL', () => {
  it('verify reports every chain in the database, one line each, exit 0; a row edited in the database makes it TAMPERED for that chain, exit 1', async () => {
    const { a, b } = twoInstances();
    echo(a, 'a1');
    echo(a, 'a2');
    echo(b, 'b1');
    expect(fs.existsSync(path.join(a, 'agent-audit.jsonl'))).toBe(false);
    const ok = memo(a, 'audit', 'verify');
    expect(ok).toMatchObject({
      code: 0,
      stdout:
        "instance alpha (this one): OK: 2 entries, keyed chain intact, head matches (#2), reaches this data folder's audit-chain.head.\n" +
        'instance beta: OK: 1 entry, keyed chain intact, head matches (#1).\n',
    });
    const json = JSON.parse(memo(b, 'audit', 'verify', '--json').stdout);
    expect(json).toMatchObject({
      ok: true,
      chains: [
        { instance: 'alpha', entries: 2, local: false },
        { instance: 'beta', entries: 1, local: true },
      ],
    });
    expect(JSON.stringify(json)).not.toContain(server.password);

    const db = url.replace(/.*\//, '');
    await server.query(`UPDATE memo_audit.entry SET line = replace(line, '"a1"', '"a9"') WHERE instance = 'alpha' AND seq = 1`, [], db);
    const bad = memo(b, 'audit', 'verify');
    expect(bad.code).toBe(1);
    expect(bad.stdout).toBe(
      'instance alpha: TAMPERED: entry #1 was altered: its content no longer matches its MAC.\n' +
        "instance beta (this one): OK: 1 entry, keyed chain intact, head matches (#1), reaches this data folder's audit-chain.head.\n",
    );
  }, 120_000);

  it('export writes each chain as JSONL with its head, which the file verifier accepts beside the key; --instance to standard output', () => {
    const { a, b } = twoInstances();
    echo(a, 'a1');
    echo(b, 'b1');
    echo(b, 'b2');
    const out = path.join(tempDir('memo-pg-cli-out-'), 'export');
    const r = memo(a, 'audit', 'export', '--out', out);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`Exported 2 lines of instance beta to ${path.join(out, 'agent-audit.beta.jsonl')}.`);
    expect(fs.readdirSync(out).sort()).toEqual(['agent-audit.alpha.head', 'agent-audit.alpha.jsonl', 'agent-audit.beta.head', 'agent-audit.beta.jsonl']);
    fs.copyFileSync(path.join(a, KEY_FILE), path.join(out, KEY_FILE));
    expect(verifyAuditFile(path.join(out, 'agent-audit.alpha.jsonl'))).toMatchObject({ ok: true, entries: 1 });
    expect(verifyAuditFile(path.join(out, 'agent-audit.beta.jsonl'))).toMatchObject({ ok: true, entries: 2 });

    const one = memo(a, 'audit', 'export', '--instance', 'beta');
    expect(one.code).toBe(0);
    expect(one.stdout).toBe(fs.readFileSync(path.join(out, 'agent-audit.beta.jsonl'), 'utf8'));
    expect(memo(a, 'audit', 'export', '--instance', 'gamma')).toMatchObject({ code: 1, stderr: expect.stringContaining('no audit chain of instance "gamma"') });

    const tail = memo(a, 'audit', 'tail', '-n', '5');
    expect(tail.stdout).toMatch(/^INSTANCE\s+TIME\s+CALLER/);
    expect(tail.stdout).toMatch(/alpha\s+\S+\s+cli\s+echo/);
    expect(tail.stdout).toMatch(/beta\s+\S+\s+cli\s+echo/);
  }, 120_000);
});
