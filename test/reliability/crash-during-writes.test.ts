import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { verifyAuditFile } from '../../kernel/audit/audit-verify.js';
import { killWhenDone, removeWhenDone } from '../helpers/cleanup.js';
import { requireFreshBuild } from '../helpers/dist.js';
import { tempDir } from '../helpers/kernel-fixture.js';
import { SPAWN_TIMEOUT_MS } from '../helpers/wait.js';

beforeAll(requireFreshBuild);

/**
 * kill -9 of a kernel in the middle of writing (a vault note and its index, a task, a conversation
 * turn, and the audit line of each call): after a restart on the same folders, everything that was
 * acknowledged is there and whole, nothing half-written is visible, and the audit trail verifies.
 * The writer is the built kernel in a child process (test/reliability/harness/writer.mjs); it is
 * killed at a different step of a round each time, three times over the same folders.
 */

const HARNESS = path.resolve('test/reliability/harness/writer.mjs');
const noteBody = (i: number) => `begin ${i}\n${`line ${i} `.repeat(6000)}\nend ${i}\n`;
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

type Ack = { ack: 'note' | 'task' | 'turn'; i: number };

/** Runs the writer until it has acknowledged `kill.kind` of round `kill.round`, then SIGKILLs it at once. */
async function writeUntil(
  root: string,
  data: string,
  conversation: string,
  first: number,
  kill: { kind: Ack['ack']; round: number },
): Promise<{ conversation: string; acks: Ack[] }> {
  const child = killWhenDone(spawn(process.execPath, [HARNESS, 'write', root, data, conversation, String(first)], { stdio: ['ignore', 'pipe', 'pipe'] }));
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const acks: Ack[] = [];
  let id = conversation;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  for await (const line of readline.createInterface({ input: child.stdout })) {
    const msg = JSON.parse(line) as { ready?: boolean; conversation?: string } & Partial<Ack>;
    if (msg.ready) id = msg.conversation!;
    if (msg.ack) {
      acks.push({ ack: msg.ack, i: msg.i! });
      if (msg.ack === kill.kind && msg.i === kill.round) {
        child.kill('SIGKILL');
        break;
      }
    }
  }
  const end = await exited;
  if (end.signal !== 'SIGKILL') throw new Error(`the writer ended by itself (${end.code}) before it was killed: ${stderr}`);
  return { conversation: id, acks };
}

interface Seen {
  notes: Array<{ path: string; title: string; sha256: string }>;
  tasks: string[];
  history: Array<{ role: string; content: string }>;
}

/** Boots the kernel on the same folders (recovering from the crash) and reads everything back through its tools. */
async function check(root: string, data: string, conversation: string): Promise<Seen> {
  const child = killWhenDone(spawn(process.execPath, [HARNESS, 'check', root, data, conversation, '0'], { stdio: ['ignore', 'pipe', 'pipe'] }));
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`the checker failed (${code}): ${stderr}`);
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as Seen;
}

describe('kill -9 during writes', () => {
  it(
    'keeps every acknowledged note, task and conversation turn whole across three SIGKILLs, shows nothing half-written, and the audit verifies',
    async () => {
      const dir = removeWhenDone(tempDir('memo-crash-'));
      const root = path.join(dir, 'root');
      const data = path.join(dir, 'data');
      fs.mkdirSync(path.join(root, 'vault'), { recursive: true });
      fs.mkdirSync(data);

      let conversation = '-';
      let next = 0;
      const acked: Ack[] = [];
      // Killed right after a note, after a task, after a turn: the next write is under way each time.
      for (const kill of [
        { kind: 'note', round: 4 },
        { kind: 'task', round: 11 },
        { kind: 'turn', round: 19 },
      ] as const) {
        const run = await writeUntil(root, data, conversation, next, kill);
        conversation = run.conversation;
        acked.push(...run.acks);
        next = kill.round + 1;

        const seen = await check(root, data, conversation);
        const notesByTitle = new Map(seen.notes.map((n) => [n.title, n]));
        // Every acknowledged write is there, and whole.
        for (const a of acked.filter((x) => x.ack === 'note')) expect(notesByTitle.get(`Note ${a.i}`)?.sha256).toBe(sha256(noteBody(a.i)));
        for (const a of acked.filter((x) => x.ack === 'task')) expect(seen.tasks).toContain(`Task ${a.i}`);
        const contents = seen.history.map((m) => m.content);
        for (const a of acked.filter((x) => x.ack === 'turn')) expect(contents).toEqual(expect.arrayContaining([`question ${a.i}`, `answer ${a.i}`]));
        // Nothing half-written: every note the vault shows is a whole note of some round, every turn
        // is a whole question/answer pair, and no stray temp file became a note.
        for (const n of seen.notes) {
          const round = Number(/^Note (\d+)$/.exec(n.title)?.[1] ?? NaN);
          expect(Number.isInteger(round)).toBe(true);
          expect(n.sha256).toBe(sha256(noteBody(round)));
        }
        expect(contents.length % 2).toBe(0);
        let previous = -1;
        for (let k = 0; k < contents.length; k += 2) {
          const round = Number(/^question (\d+)$/.exec(contents[k]!)?.[1] ?? NaN);
          expect([contents[k], contents[k + 1]]).toEqual([`question ${round}`, `answer ${round}`]);
          expect(round).toBeGreaterThan(previous);
          previous = round;
        }
        // The trail verifies (a line torn by the kill, if any, is reported as torn, never as tampering).
        const report = verifyAuditFile(path.join(data, 'agent-audit.jsonl'));
        expect(report.problem).toBeUndefined();
        expect(report.ok).toBe(true);
        // Each acknowledged tool call had its audit line written before it returned.
        const lines = fs
          .readFileSync(path.join(data, 'agent-audit.jsonl'), 'utf8')
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => {
            try {
              return JSON.parse(l) as { tool?: string; outcome?: string; caller?: { id?: string } };
            } catch {
              return {};
            }
          })
          .filter((l) => l.caller?.id === 'crash-writer' && l.outcome === 'ok');
        expect(lines.filter((l) => l.tool === 'vault_create_note').length).toBeGreaterThanOrEqual(acked.filter((a) => a.ack === 'note').length);
        expect(lines.filter((l) => l.tool === 'vault_create_task').length).toBeGreaterThanOrEqual(acked.filter((a) => a.ack === 'task').length);
      }
      expect(acked.filter((a) => a.ack === 'note').length).toBeGreaterThanOrEqual(20);
    },
    SPAWN_TIMEOUT_MS * 4,
  );
});
