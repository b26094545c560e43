/**
 * Real processes on PostgreSQL: two `memo serve` instances, each with its own data folder, and the
 * CLI run from a third, all on one database. `memo settings rate-limit off` is read by both at
 * start; `memo permissions allow read_env` lets an MCP client's read_env through on both (it is a
 * medium read: refused at once while nobody can be asked), and `memo permissions revoke` takes it
 * back on both, without a restart.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { killWhenDone } from '../helpers/cleanup.js';
import { requireFreshBuild } from '../helpers/dist.js';
import { tempDir } from '../helpers/kernel-fixture.js';
import { SPAWN_TIMEOUT_MS, waitFor } from '../helpers/wait.js';
import { onPostgres } from './on-postgres.js';

const pg = onPostgres(['memo_kernel']);
const BIN = path.resolve('bin/memo');
// Jest gives a test file its own process.env: a child started without `env` gets the runner's, not this one.
const env = () => ({ ...process.env, MEMO_DATABASE_URL: pg.url() });

describe('memo serve instances and the CLI on one database', () => {
  beforeAll(requireFreshBuild);

  it(
    'share the rate-limit setting, and a permission allowed and revoked through the CLI holds on both instances',
    async () => {
      const base = tempDir('memo-pg-state-');
      const root = path.join(base, 'root');
      fs.mkdirSync(root);
      const dataOf = (name: string) => path.join(base, name);
      const memo = (data: string, ...args: string[]) =>
        new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
          const c = killWhenDone(spawn(process.execPath, [BIN, '--root', root, '--data', data, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: env() }));
          let stdout = '';
          let stderr = '';
          c.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
          c.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
          c.on('close', (code) => resolve({ code, stdout, stderr }));
        });
      expect(await memo(dataOf('cli'), 'settings', 'rate-limit', 'off')).toMatchObject({ code: 0 });

      const serves: Array<ReturnType<typeof spawn>> = [];
      const clients: Client[] = [];
      try {
        const infos: Array<{ url: string; token: string }> = [];
        const stderrs: string[] = [];
        for (const name of ['a', 'b']) {
          const s = killWhenDone(
            spawn(process.execPath, [BIN, '--root', root, '--data', dataOf(name), 'serve', '--json'], { stdio: ['ignore', 'pipe', 'pipe'], env: env() }),
          );
          serves.push(s);
          const i = stderrs.push('') - 1;
          s.stderr.on('data', (d: Buffer) => (stderrs[i] += d.toString()));
          const line = await new Promise<string>((resolve, reject) => {
            readline.createInterface({ input: s.stdout }).once('line', resolve);
            s.once('close', () => reject(new Error(`memo serve ${name} ended before it was ready: ${stderrs[i]}`)));
          });
          infos.push(JSON.parse(line) as { url: string; token: string });
        }
        // Both read the setting from the database: neither keeps a settings file.
        for (const err of stderrs) expect(err).toMatch(/rate limits are off \(memo settings rate-limit off\)/);
        for (const info of infos) {
          const client = new Client({ name: 'state-test', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
          await client.connect(new StreamableHTTPClientTransport(new URL(info.url), { requestInit: { headers: { Authorization: `Bearer ${info.token}` } } }));
          clients.push(client);
        }
        let n = 0;
        const readEnv = async (client: Client) => {
          const r = await client.callTool({ name: 'read_env', arguments: { prefix: `MEMO_TEST_${n++}` } });
          return { ok: !r.isError, text: (r.content as Array<{ text?: string }>)[0]?.text ?? '' };
        };
        for (const c of clients) expect(await readEnv(c)).toMatchObject({ ok: false, text: expect.stringMatching(/^PERMISSION_DENIED/) });

        expect(await memo(dataOf('cli'), 'permissions', 'allow', 'read_env')).toMatchObject({ code: 0, stdout: expect.stringMatching(/^Allowed read_env/) });
        for (const c of clients) await waitFor(async () => (await readEnv(c)).ok, { what: 'read_env allowed on the instance', intervalMs: 100 });

        expect(await memo(dataOf('cli'), 'permissions', 'revoke', 'read_env')).toMatchObject({ code: 0 });
        for (const c of clients) await waitFor(async () => !(await readEnv(c)).ok, { what: 'read_env refused again on the instance', intervalMs: 100 });
        for (const name of ['a', 'b', 'cli'])
          for (const f of ['permissions.json', 'settings.json']) expect(fs.existsSync(path.join(dataOf(name), f))).toBe(false);
      } finally {
        for (const c of clients) await c.close().catch(() => {});
        for (const s of serves) s.kill('SIGTERM');
        await Promise.all(serves.map((s) => (s.exitCode !== null || s.signalCode !== null ? Promise.resolve() : new Promise((r) => s.once('close', r)))));
      }
    },
    SPAWN_TIMEOUT_MS,
  );
});
