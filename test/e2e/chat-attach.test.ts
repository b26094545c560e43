import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { requireFreshBuild } from '../helpers/dist.js';
import { tempDir } from '../helpers/kernel-fixture.js';

const BIN = path.resolve('bin/memo');
const PACKS = path.resolve('test/fixtures/packs');

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

describe('memo chat --attach', () => {
  it('sends a file from the workspace with the message, and refuses one outside it or in the data folder', () => {
    const base = tempDir('memo-chat-attach-');
    const w = { root: path.join(base, 'root'), data: path.join(base, 'root', 'data') };
    fs.mkdirSync(w.root);
    fs.writeFileSync(path.join(w.root, 'todo.txt'), 'water the ferns\n');
    expect(memo(w, ['provider', 'add', 'test', '--kind', 'scripted', '--model', 'rules-1']).code).toBe(0);

    const r = memo(w, ['chat', '-p', 'read this', '--attach', 'todo.txt', '--json']);
    expect(r.code).toBe(0);
    // The scripted model repeats the message it got: the file came with it.
    expect(r.json.answer).toBe('You said: read this\n\nAttached file todo.txt:\n```\nwater the ferns\n```');

    const key = memo(w, ['chat', '-p', 'read this', '--attach', 'data/agent.key', '--json']);
    expect(key.code).not.toBe(0);
    expect(key.stderr).toMatch(/--attach data\/agent\.key: .*kernel/i);
    const outside = memo(w, ['chat', '-p', 'read this', '--attach', '../elsewhere.txt']);
    expect(outside.code).not.toBe(0);
    expect(outside.stderr).toContain('--attach ../elsewhere.txt:');
  });
});
