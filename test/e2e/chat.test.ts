import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { requireFreshBuild } from '../helpers/dist.js';
import { tempDir } from '../helpers/kernel-fixture.js';

const BIN = path.resolve('bin/memo');
const PACKS = path.resolve('test/fixtures/packs');

beforeAll(requireFreshBuild);

function workspace() {
  const base = tempDir('memo-chat-');
  const root = path.join(base, 'root');
  fs.mkdirSync(root);
  return { root, data: path.join(base, 'data') };
}

function memo(w: { root: string; data: string }, args: string[], input?: string) {
  const r = spawnSync(process.execPath, [BIN, '--packs', PACKS, '--root', w.root, '--data', w.data, ...args], {
    encoding: 'utf8',
    input: input ?? '',
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let json: any;
  try {
    json = JSON.parse(r.stdout);
  } catch {
    json = undefined;
  }
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, json };
}

describe('memo chat and memo provider', () => {
  it('runs one scripted turn with a tool step and prints the answer, the steps and the stop reason as JSON', () => {
    const w = workspace();
    expect(memo(w, ['provider', 'add', 'test', '--kind', 'scripted', '--model', 'rules-1']).code).toBe(0);
    const r = memo(w, ['chat', '-p', 'echo hello', '--json']);
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ stopReason: 'final', provider: 'test', model: 'rules-1', answer: expect.stringContaining('done: '), iterations: 2 });
    expect(r.json.steps).toEqual([expect.objectContaining({ tool: 'echo', outcome: 'ok', args: { text: 'hello' } })]);
  });

  it('denies tools that need approval unless --approve is given', () => {
    const w = workspace();
    memo(w, ['provider', 'add', 'test', '--kind', 'scripted', '--model', 'rules-1']);
    const denied = memo(w, ['chat', '-p', 'write first', '--json']);
    expect(denied.json.steps[0]).toMatchObject({ tool: 'note_write', outcome: 'denied', code: 'PERMISSION_DENIED' });
    expect(fs.existsSync(path.join(w.root, 'notes.txt'))).toBe(false);
    const allowed = memo(w, ['chat', '-p', 'write second', '--approve', 'allow-once', '--json']);
    expect(allowed.json.steps[0]).toMatchObject({ tool: 'note_write', outcome: 'ok' });
    expect(fs.readFileSync(path.join(w.root, 'notes.txt'), 'utf8')).toBe('second\n');
  });

  it('resumes a stored conversation with --resume', () => {
    const w = workspace();
    memo(w, ['provider', 'add', 'test', '--kind', 'scripted', '--model', 'rules-1']);
    const first = memo(w, ['chat', '-p', 'hi there', '--json']);
    const again = memo(w, ['chat', '-p', 'echo more', '--resume', first.json.conversationId, '--json']);
    expect(again.json.conversationId).toBe(first.json.conversationId);
    expect(memo(w, ['chat', '-p', 'x', '--resume', '00000000-0000-0000-0000-000000000000']).code).toBe(1);
  });

  it('exposes only web_search in --web mode: a write attempt is refused and audited', () => {
    const w = workspace();
    memo(w, ['provider', 'add', 'test', '--kind', 'scripted', '--model', 'rules-1']);
    const r = memo(w, ['chat', '--web', '-p', 'call note_write', '--approve', 'allow-once', '--json']);
    expect(r.json.steps[0]).toMatchObject({ tool: 'note_write', outcome: 'error', code: 'UNKNOWN_TOOL' });
    const audit = memo(w, ['audit', 'tail', '--json'])
      .stdout.trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(audit.at(-1)).toMatchObject({ tool: 'note_write', caller: { kind: 'agent' }, error: { code: 'UNKNOWN_TOOL' } });
  });

  it('takes an inline provider with --provider KIND --base-url', () => {
    const w = workspace();
    const r = memo(w, ['chat', '--provider', 'scripted', '--base-url', 'http://127.0.0.1:9/none', '--model', 'inline-1', '-p', 'hello', '--json']);
    expect(r.json).toMatchObject({ provider: 'inline', model: 'inline-1', answer: 'You said: hello' });
  });

  it('says how to configure a provider when none is, with exit 2', () => {
    const r = memo(workspace(), ['chat', '-p', 'hello']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('memo provider add');
  });

  it('lists providers with keys masked, switches and removes them, and stores keys read from stdin with mode 0600', () => {
    const w = workspace();
    expect(memo(w, ['provider', 'add', 'a', '--kind', 'scripted', '--model', 'm', '--api-key-stdin'], 'sk-secret-0123456789abcdef\n').code).toBe(0);
    expect(memo(w, ['provider', 'add', 'b', '--kind', 'scripted', '--model', 'm', '--api-key-env', 'MEMO_TEST_KEY']).code).toBe(0);
    const list = memo(w, ['provider', 'list', '--json']);
    expect(list.stdout).not.toContain('sk-secret');
    expect(list.json).toEqual([
      expect.objectContaining({ name: 'a', apiKey: '[stored, masked]', active: true }),
      expect.objectContaining({ name: 'b', apiKey: 'from $MEMO_TEST_KEY (not set)', active: false }),
    ]);
    expect(fs.statSync(path.join(w.data, 'providers.json')).mode & 0o777).toBe(0o600);
    expect(memo(w, ['provider', 'use', 'b']).code).toBe(0);
    expect(memo(w, ['provider', 'list', '--json']).json.find((p: any) => p.active).name).toBe('b');
    expect(memo(w, ['provider', 'remove', 'b']).code).toBe(0);
    expect(memo(w, ['provider', 'remove', 'b']).code).toBe(1);
  });
});
