import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { requireFreshBuild } from '../helpers/dist.js';
import { tempDir } from '../helpers/kernel-fixture.js';

const BIN = path.resolve('bin/memo');
const PACKS = path.resolve('test/fixtures/packs');
const MARKER = 'QUOKKA-5521-tangerine';

beforeAll(requireFreshBuild);

function memo(w: { root: string; data: string }, args: string[]) {
  const r = spawnSync(process.execPath, [BIN, '--packs', PACKS, '--root', w.root, '--data', w.data, ...args], { encoding: 'utf8', input: '' });
  let json: any;
  try {
    json = JSON.parse(r.stdout);
  } catch {
    json = undefined;
  }
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, json };
}

function onDisk(data: string): string {
  return fs
    .readdirSync(data)
    .filter((f) => f.startsWith('agent.sqlite'))
    .map((f) => fs.readFileSync(path.join(data, f)).toString('latin1'))
    .join('\n');
}

describe('memo chat: conversations encrypted at rest', () => {
  it('leaves no plaintext of a chat in agent.sqlite, finds it with --history, rotates the key, and says what is wrong without the key', () => {
    const base = tempDir('memo-chat-enc-');
    const w = { root: path.join(base, 'root'), data: path.join(base, 'data') };
    fs.mkdirSync(w.root);
    expect(memo(w, ['provider', 'add', 'test', '--kind', 'scripted', '--model', 'rules-1']).code).toBe(0);
    const chat = memo(w, ['chat', '-p', `echo ${MARKER}`, '--json']);
    expect(chat.json).toMatchObject({ stopReason: 'final', answer: expect.stringContaining(MARKER) });
    expect(onDisk(w.data).includes('enc1:')).toBe(true);
    expect(onDisk(w.data).includes(MARKER)).toBe(false);

    const found = memo(w, ['chat', '--history', MARKER.toLowerCase(), '--json']);
    expect(found.code).toBe(0);
    expect(found.json.hits).toEqual(
      expect.arrayContaining([expect.objectContaining({ conversationId: chat.json.conversationId, role: 'user', snippet: `echo ${MARKER}` })]),
    );

    const rotated = memo(w, ['chat', '--rotate-key', '--json']);
    expect(rotated.code).toBe(0);
    expect(rotated.json).toMatchObject({ keyId: expect.any(String), values: expect.any(Number) });
    expect(memo(w, ['chat', '--history', MARKER]).stdout).toContain(chat.json.conversationId);
    expect(onDisk(w.data).includes(MARKER)).toBe(false);

    fs.renameSync(path.join(w.data, 'agent.key'), path.join(base, 'agent.key.bak'));
    const missing = memo(w, ['chat', '--history', MARKER]);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain(`The conversation key ${path.join(w.data, 'agent.key')} is missing`);
    expect(fs.existsSync(path.join(w.data, 'agent.key'))).toBe(false);
  });
});
