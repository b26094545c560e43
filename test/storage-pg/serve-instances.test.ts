/**
 * Real processes on PostgreSQL: two `memo serve` instances, each with its own data folder, sharing
 * one database (MEMO_DATABASE_URL passed to every `memo` started here): a routine created through one
 * runs once, on time, on one of them.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { killWhenDone } from '../helpers/cleanup.js';
import { requireFreshBuild } from '../helpers/dist.js';
import { tempDir } from '../helpers/kernel-fixture.js';
import { SPAWN_TIMEOUT_MS, waitFor } from '../helpers/wait.js';
import { onPostgres } from './on-postgres.js';

const pg = onPostgres(['pack_routines__routines']);
const BIN = path.resolve('bin/memo');
// Jest gives a test file its own process.env: a child started without `env` gets the runner's, not this one.
const env = () => ({ ...process.env, MEMO_DATABASE_URL: pg.url() });

/** An OpenAI-compatible model on loopback: answers the capability probe, and a routine turn with a report. */
function modelServer() {
  const turns: unknown[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      const json = JSON.parse(body) as { model: string; tools?: unknown[]; messages: Array<{ role: string; content: string }> };
      const last = json.messages.at(-1)!;
      const probe = JSON.stringify(json.tools ?? []).includes('get_magic_number');
      if (!probe) turns.push(json);
      const message = !probe
        ? { role: 'assistant', content: 'Report: done.' }
        : last.role === 'tool'
          ? { role: 'assistant', content: `The number is ${last.content}.` }
          : { role: 'assistant', content: null, tool_calls: [{ id: 'call_probe', type: 'function', function: { name: 'get_magic_number', arguments: '{}' } }] };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'chatcmpl-1',
          object: 'chat.completion',
          created: 1,
          model: json.model,
          choices: [{ index: 0, message, finish_reason: 'tool_calls' in message ? 'tool_calls' : 'stop' }],
          usage: { prompt_tokens: 50, completion_tokens: 5, total_tokens: 55 },
        }),
      );
    });
  });
  return { server, turns };
}

describe('two memo serve instances on one PostgreSQL database', () => {
  beforeAll(requireFreshBuild);

  it(
    'run a one-off routine created through one of them once, on time',
    async () => {
      const { server, turns } = modelServer();
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
      const base = tempDir('memo-pg-serve-');
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
      const serves: Array<ReturnType<typeof spawn>> = [];
      try {
        const modelUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
        // The provider settings are per data folder (not in PostgreSQL yet): each instance gets the same one.
        for (const name of ['a', 'b']) {
          const added = await memo(
            dataOf(name),
            'provider',
            'add',
            'local',
            '--kind',
            'openai-compatible',
            '--preset',
            'custom',
            '--base-url',
            modelUrl,
            '--model',
            'local-model',
          );
          expect(added).toMatchObject({ code: 0 });
        }
        // Both instances start within these 15 s (about 3 s each here, 10 s on a busy machine); if one
        // were late, the claim on the occurrence still lets only one of them run it.
        const at = new Date(Math.ceil((Date.now() + 15_000) / 1000) * 1000);
        const created = await memo(
          dataOf('a'),
          'tools',
          'call',
          'create_routine',
          '--args',
          JSON.stringify({ name: 'Once', prompt: 'Report.', schedule: { kind: 'once', at: at.toISOString().slice(0, 19), time_zone: 'UTC' }, tools: [] }),
          '--approve',
          'allow-once',
          '--json',
        );
        expect(created.code).toBe(0);
        const id = (JSON.parse(created.stdout) as { result: { id: string } }).result.id;
        for (const name of ['a', 'b']) {
          serves.push(
            killWhenDone(
              spawn(process.execPath, [BIN, '--root', root, '--data', dataOf(name), 'serve', '--json'], { stdio: ['ignore', 'pipe', 'pipe'], env: env() }),
            ),
          );
        }
        const db = new URL(pg.url()).pathname.slice(1);
        const runs = () =>
          pg
            .server()
            .query<{ status: string; scheduled_for: string; answer: string | null }>(
              `SELECT status, scheduled_for, answer FROM pack_routines__routines.routine_runs WHERE routine_id = $1`,
              [id],
              db,
            );
        const routine = async () =>
          (await pg.server().query<{ status: string }>(`SELECT status FROM pack_routines__routines.routines WHERE id = $1`, [id], db))[0]?.status;
        await waitFor(async () => (await runs()).some((r) => r.status !== 'running') && (await routine()) === 'done', {
          what: 'the routine to run in one of the two instances',
          timeoutMs: 90_000,
          intervalMs: 250,
        });
        // The occurrence is recorded and the routine done: any later claim of it would fail on the unique index.
        expect(await runs()).toEqual([{ status: 'ok', scheduled_for: String(at.getTime()), answer: 'Report: done.' }]);
        expect(turns).toHaveLength(1);
        // Neither instance keeps routines in a file.
        for (const name of ['a', 'b']) expect(fs.existsSync(path.join(dataOf(name), 'packs-data', 'routines', 'routines.sqlite'))).toBe(false);
      } finally {
        for (const s of serves) s.kill('SIGTERM');
        await Promise.all(serves.map((s) => (s.exitCode !== null || s.signalCode !== null ? Promise.resolve() : new Promise((r) => s.once('close', r)))));
        server.close();
      }
    },
    SPAWN_TIMEOUT_MS,
  );
});
