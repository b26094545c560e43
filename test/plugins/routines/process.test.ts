/**
 * The routines pack through the compiled CLI, against an OpenAI-compatible model server on loopback:
 * a routine created with `memo tools call`, listed, run now (a real tool call through the real
 * adapter, as the routine) and shown in its history, each a process of its own on one data folder.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import Database from 'better-sqlite3';
import { killWhenDone } from '../../helpers/cleanup.js';
import { requireFreshBuild } from '../../helpers/dist.js';
import { tempDir } from '../../helpers/kernel-fixture.js';
import { SPAWN_TIMEOUT_MS, waitFor } from '../../helpers/wait.js';

const BIN = path.resolve('bin/memo');

/** Answers the capability probe, then a routine turn: one list_routines call, then a report quoting what it saw. */
function modelServer() {
  const requests: any[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      const json = JSON.parse(body);
      requests.push(json);
      const last = (json.messages as any[]).at(-1);
      const probe = JSON.stringify(json.tools ?? []).includes('get_magic_number');
      const message =
        last.role === 'tool'
          ? { role: 'assistant', content: probe ? `The number is ${last.content}.` : `Report: ${JSON.parse(last.content).count} routine(s) scheduled.` }
          : {
              role: 'assistant',
              content: null,
              tool_calls: [
                { id: `call_${requests.length}`, type: 'function', function: { name: probe ? 'get_magic_number' : 'list_routines', arguments: '{}' } },
              ],
            };
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
  return { server, requests };
}

describe('memo routines through the compiled CLI', () => {
  beforeAll(requireFreshBuild);

  it(
    'runs a routine on time in memo serve, as an agent turn through the real adapter',
    async () => {
      const { server } = modelServer();
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
      const base = tempDir('memo-routines-serve-');
      const root = path.join(base, 'root');
      const data = path.join(base, 'data');
      fs.mkdirSync(root);
      const memo = (...args: string[]) =>
        new Promise<{ code: number | null; stdout: string }>((resolve) => {
          const c = killWhenDone(spawn(process.execPath, [BIN, '--root', root, '--data', data, ...args], { stdio: ['ignore', 'pipe', 'pipe'] }));
          let stdout = '';
          c.stdout.on('data', (d) => (stdout += d));
          c.on('close', (code) => resolve({ code, stdout }));
        });
      try {
        const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
        expect(
          (await memo('provider', 'add', 'local', '--kind', 'openai-compatible', '--preset', 'custom', '--base-url', url, '--model', 'local-model')).code,
        ).toBe(0);
        // A one-off 20 s ahead (seconds are allowed in `at`), in UTC: room for two process starts (the create, then memo serve).
        const at = new Date(Math.ceil((Date.now() + 20_000) / 1000) * 1000);
        const local = at.toISOString().slice(0, 19);
        const created = await memo(
          'tools',
          'call',
          'create_routine',
          '--args',
          JSON.stringify({ name: 'Soon', prompt: 'Report.', schedule: { kind: 'once', at: local, time_zone: 'UTC' }, tools: ['list_routines'] }),
          '--approve',
          'allow-once',
          '--json',
        );
        const id = JSON.parse(created.stdout).result.id as string;
        const serve = killWhenDone(spawn(process.execPath, [BIN, '--root', root, '--data', data, 'serve', '--json'], { stdio: ['ignore', 'pipe', 'pipe'] }));
        const db = path.join(data, 'packs-data', 'routines', 'routines.sqlite');
        const run = await waitFor(
          () => {
            const conn = new Database(db, { readonly: true, fileMustExist: true });
            try {
              return conn.prepare(`SELECT * FROM routine_runs WHERE routine_id = ? AND status != 'running'`).get(id) as Record<string, unknown> | undefined;
            } finally {
              conn.close();
            }
          },
          { what: 'the routine to run in memo serve', timeoutMs: 90_000, intervalMs: 250 },
        );
        expect(run).toMatchObject({ trigger: 'schedule', status: 'ok', answer: 'Report: 1 routine(s) scheduled.' });
        expect(Number(run.scheduled_for)).toBe(at.getTime());
        serve.kill('SIGTERM');
        await new Promise((r) => serve.once('close', r));
      } finally {
        server.close();
      }
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'creates a routine, lists it, runs it now through the real adapter as the routine, and shows its history',
    async () => {
      const { server, requests } = modelServer();
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
      const base = tempDir('memo-routines-cli-');
      const root = path.join(base, 'root');
      fs.mkdirSync(root);
      const memo = (...args: string[]) =>
        new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
          const c = killWhenDone(
            spawn(process.execPath, [BIN, '--root', root, '--data', path.join(base, 'data'), ...args], { stdio: ['ignore', 'pipe', 'pipe'] }),
          );
          let stdout = '';
          let stderr = '';
          c.stdout.on('data', (d) => (stdout += d));
          c.stderr.on('data', (d) => (stderr += d));
          c.on('close', (code) => resolve({ code, stdout, stderr }));
        });
      try {
        const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
        expect(
          (await memo('provider', 'add', 'local', '--kind', 'openai-compatible', '--preset', 'custom', '--base-url', url, '--model', 'local-model')).code,
        ).toBe(0);
        const created = await memo(
          'tools',
          'call',
          'create_routine',
          '--args',
          JSON.stringify({
            name: 'Routine report',
            prompt: 'Say how many routines are scheduled.',
            schedule: { kind: 'cron', cron: '30 8 * * 1-5', time_zone: 'Europe/Istanbul' },
            tools: ['list_routines'],
          }),
          '--approve',
          'allow-once',
          '--json',
        );
        const routine = JSON.parse(created.stdout);
        expect(routine).toMatchObject({ ok: true, result: { schedule: 'every weekday at 08:30 (Europe/Istanbul)', provider: 'local', model: 'local-model' } });
        const id = routine.result.id as string;

        const listed = await memo('routines', 'list');
        expect(listed.stdout).toMatch(
          new RegExp(
            `^${id}  active  Routine report: every weekday at 08:30 \\(Europe/Istanbul\\); next \\w{3} \\d{4}-\\d\\d-\\d\\d 08:30 \\(Europe/Istanbul\\)\\n$`,
          ),
        );

        const ran = await memo('routines', 'run-now', id, '--json');
        expect(ran.code).toBe(0);
        expect(JSON.parse(ran.stdout)).toMatchObject({
          ok: true,
          result: {
            trigger: 'manual',
            status: 'ok',
            stop_reason: 'final',
            answer: 'Report: 1 routine(s) scheduled.',
            steps: [{ tool: 'list_routines', outcome: 'ok' }],
          },
        });
        // The turn's requests (after the two probe generations) offered only the routine's tool.
        expect(requests.slice(2).map((r) => r.tools.map((t: any) => t.function.name))).toEqual([['list_routines'], ['list_routines']]);

        const history = JSON.parse((await memo('routines', 'history', id, '--json')).stdout);
        expect(history.result.runs).toEqual([expect.objectContaining({ status: 'ok', answer: 'Report: 1 routine(s) scheduled.' })]);
        const audit = fs.readFileSync(path.join(base, 'data', 'agent-audit.jsonl'), 'utf8');
        expect(audit).toContain(`"caller":{"kind":"routine","id":"${id}"}`);
      } finally {
        server.close();
      }
    },
    SPAWN_TIMEOUT_MS,
  );
});
