/**
 * A damaged agent.sqlite as a person meets it, with bin/memo as whole processes: memo serve starts
 * and says so once, in one stderr line, and serves tools; memo chat is refused with the message
 * naming the file and what to do (no bare "database disk image is malformed"); memo doctor fails its
 * conversations line. The damage is done to a file memo chat made, the ways the reliability run did
 * it (test/helpers/sqlite-damage.ts); the file is left as it was.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { killWhenDone } from '../helpers/cleanup.js';
import { requireFreshBuild } from '../helpers/dist.js';
import { DAMAGES, damage, onDisk, type Damage } from '../helpers/sqlite-damage.js';
import { SPAWN_TIMEOUT_MS } from '../helpers/wait.js';
import { BIN, ServeProcess, serveWorkspace, type ServeWorkspace } from '../mcp/mcp-helpers.js';

beforeAll(requireFreshBuild);

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function globals(w: ServeWorkspace): string[] {
  return ['--packs', w.packs, '--root', w.root, '--data', w.data];
}

/** bin/memo as a child process that does not block this one (memo serve may be a child too). */
function memo(w: ServeWorkspace, args: string[]): Promise<Run> {
  const child = killWhenDone(spawn(process.execPath, [BIN, ...globals(w), ...args], { stdio: ['pipe', 'pipe', 'pipe'] }));
  child.stdin.end();
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

/** The message's fixed parts: the file, what stops and what works, what to do. */
function expectTheMessage(text: string, file: string): void {
  expect(text).toContain(`The conversations file ${file} `);
  expect(text).toContain('chats and their history are off until it is put right; every other tool works');
  expect(text).toContain('Memo keeps no backup of it and never deletes or renames it');
  expect(text).toContain('put agent.sqlite back from your own backup (with agent.key beside it), or leave it out to start with no conversations');
}

let template: ServeWorkspace;

/** A data folder whose agent.sqlite holds conversations memo chat stored, then damaged `how`. */
function damagedWorkspace(how: Damage): { w: ServeWorkspace; file: string } {
  const w = serveWorkspace('memo-conv-damage-');
  fs.cpSync(template.data, w.data, { recursive: true });
  const file = path.join(w.data, 'agent.sqlite');
  damage(file, how);
  return { w, file };
}

beforeAll(async () => {
  template = serveWorkspace('memo-conv-template-');
  expect((await memo(template, ['provider', 'add', 'test', '--kind', 'scripted', '--model', 'rules-1'])).code).toBe(0);
  for (const prompt of ['echo hello', `echo ${'long words '.repeat(300)}`, 'hi there'])
    expect((await memo(template, ['chat', '-p', prompt, '--json'])).code).toBe(0);
  // Enough pages to overwrite some in the middle, and no write-ahead log left: memo chat closed it.
  expect(fs.statSync(path.join(template.data, 'agent.sqlite')).size).toBeGreaterThanOrEqual(6 * 4096);
  expect(fs.existsSync(path.join(template.data, 'agent.sqlite-wal'))).toBe(false);
}, SPAWN_TIMEOUT_MS);

describe('a damaged agent.sqlite, from the CLI', () => {
  it.each(DAMAGES)(
    'when it is %s: memo chat fails naming the file and what to do, memo doctor fails its conversations line, and the file is untouched',
    async (how) => {
      const { w, file } = damagedWorkspace(how);
      const before = onDisk(file);

      const chat = await memo(w, ['chat', '-p', 'hello again', '--json']);
      expect(chat.code).toBe(1);
      expect(chat.stdout).toBe('');
      expect(chat.stderr.split('\n').filter(Boolean)).toHaveLength(1);
      expect(chat.stderr).toMatch(/^memo: The conversations file /);
      expectTheMessage(chat.stderr, file);
      expect(chat.stderr).not.toContain('unexpected failure');

      const doctor = await memo(w, ['doctor']);
      expect(doctor.code).toBe(1);
      const line = doctor.stdout.split('\n').find((l) => l.includes('conversations:'));
      expect(line).toMatch(/^FAIL {2}conversations: The conversations file /);
      expectTheMessage(line!, file);

      expect(onDisk(file)).toEqual(before);
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'memo serve on a damaged agent.sqlite starts, says so once in one stderr line, serves tools, and memo chat and memo doctor beside it get the message',
    async () => {
      const { w, file } = damagedWorkspace('pages in the middle overwritten');
      const before = onDisk(file);
      const server = ServeProcess.start([...globals(w), 'serve', '--json']);
      try {
        await server.json(0);
        const said = () => server.stderr.split('\n').filter((l) => l.includes('agent.sqlite'));
        expect(said()).toHaveLength(1);
        expect(said()[0]).toMatch(/^memo: error: The conversations file /);
        expectTheMessage(said()[0]!, file);

        // A tool call that has nothing to do with conversations, run by the server's kernel.
        const call = await memo(w, ['tools', 'call', 'echo', '--args', '{"text":"still served"}', '--json']);
        expect(call.code).toBe(0);
        expect(JSON.parse(call.stdout)).toMatchObject({ ok: true });
        expect(call.stderr).toMatch(/^memo: via the running server/);

        const chat = await memo(w, ['chat', '-p', 'hello again']);
        expect(chat.code).toBe(1);
        expectTheMessage(chat.stderr, file);

        const doctor = await memo(w, ['doctor', '--json']);
        expect(doctor.code).toBe(1);
        expect(JSON.parse(doctor.stdout)).toContainEqual({
          check: 'conversations',
          level: 'fail',
          detail: expect.stringContaining(`The conversations file ${file} `),
        });
      } finally {
        expect(await server.stop()).toBe(0);
      }
      // Said once: not again for the calls, the chat beside it, or the stop.
      expect(server.stderr.split('\n').filter((l) => l.includes('agent.sqlite'))).toHaveLength(1);
      expect(onDisk(file)).toEqual(before);
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'memo doctor reports a whole agent.sqlite as ok, with its size and how long the check took',
    async () => {
      const doctor = await memo(template, ['doctor']);
      expect(doctor.stdout).toMatch(/^OK {4}conversations: \S+agent\.sqlite is whole \(\d+\.\d MB, checked in \d+ ms\)$/m);
    },
    SPAWN_TIMEOUT_MS,
  );
});
