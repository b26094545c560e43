/**
 * The pack as it ships: compiled into dist/ by `npm run build` (which `npm test` runs first), run
 * by bin/memo in a child process against the local replay server.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { requireFreshBuild } from '../../helpers/dist.js';
import { tempDir } from '../../helpers/kernel-fixture.js';
import { recorded, ReplayServer } from './replay-server.js';

const BIN = path.resolve('bin/memo');
const DIST_PACK = path.resolve('dist/plugins/providers');
const KEY = 'memo-compiled-test-key-0123456789';

beforeAll(() => {
  requireFreshBuild();
  if (!fs.existsSync(path.join(DIST_PACK, 'index.js')) || !fs.existsSync(path.join(DIST_PACK, 'plugin.json'))) {
    throw new Error('dist/plugins/providers is missing: run `npm run build` first (npm test does)');
  }
});

function memo(
  args: string[],
  dirs: { root: string; data: string },
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string; json: any }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, '--root', dirs.root, '--data', dirs.data, ...args],
      { encoding: 'utf8', env: { ...process.env, ...env } },
      (err, stdout, stderr) => {
        let json: any;
        try {
          json = JSON.parse(stdout);
        } catch {
          json = undefined;
        }
        resolve({ code: err ? Number((err as { code?: unknown }).code ?? 1) : 0, stdout, stderr, json });
      },
    );
  });
}

describe('providers, compiled, through the CLI', () => {
  let server: ReplayServer;
  let dirs: { root: string; data: string };
  beforeEach(async () => {
    server = await ReplayServer.start();
    const base = tempDir('memo-providers-cli-');
    dirs = { root: path.join(base, 'root'), data: path.join(base, 'data') };
    fs.mkdirSync(dirs.root);
  });
  afterEach(() => server.close());

  it('stores a provider with configure_provider and lists it with the key masked', async () => {
    const args = JSON.stringify({ name: 'claude', kind: 'anthropic', model: 'claude-sonnet-4-20250514', apiKey: KEY });
    const r = await memo(['tools', 'call', 'configure_provider', '--args', args, '--approve', 'allow-once', '--json'], dirs);
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ ok: true, result: { stored: true, provider: { name: 'claude', apiKey: '[stored, masked]' } } });
    expect(r.stdout + r.stderr).not.toContain(KEY);
    expect(fs.statSync(path.join(dirs.data, 'providers.json')).mode & 0o777).toBe(0o600);
    const list = await memo(['provider', 'list', '--json'], dirs);
    expect(list.json).toEqual([expect.objectContaining({ name: 'claude', kind: 'anthropic', apiKey: '[stored, masked]' })]);
    expect(list.stdout).not.toContain(KEY);
  });

  it('chats through the compiled openai-compatible adapter with the key from the environment', async () => {
    const title = { choices: [{ index: 0, message: { role: 'assistant', content: 'Notes and the weather' }, finish_reason: 'stop' }] };
    server.reply(recorded('openai/02-final-answer.json'), { status: 200, body: title });
    const r = await memo(
      [
        'chat',
        '--provider',
        'openai-compatible',
        '--base-url',
        `${server.url}/v1`,
        '--api-key-env',
        'MEMO_COMPILED_TEST_KEY',
        '--model',
        'gpt-4o',
        '--no-tools',
        '-p',
        'hello',
        '--json',
      ],
      dirs,
      { MEMO_COMPILED_TEST_KEY: KEY },
    );
    expect(r.json).toMatchObject({ stopReason: 'final', answer: expect.stringContaining('notes.txt says'), usage: { inputTokens: 260, outputTokens: 24 } });
    // It ends once the title is stored (not in the middle of a request's retries: exit 13).
    expect(r.code).toBe(0);
    // The turn, then the title of the new conversation (one small request, no tools).
    expect(server.received).toHaveLength(2);
    expect(server.request(1).body).toMatchObject({
      max_tokens: 32,
      messages: [{ role: 'system', content: expect.stringMatching(/^Write a title/) }, { role: 'user' }],
    });
    expect(server.request(1).body).not.toHaveProperty('tools');
    expect(server.request(0).path).toBe('/v1/chat/completions');
    expect(server.request(0).headers.authorization).toBe(`Bearer ${KEY}`);
    expect(server.request(0).body).toMatchObject({ model: 'gpt-4o', temperature: 0.2, messages: [{ role: 'system' }, { role: 'user', content: 'hello' }] });
    expect(server.request(0).body).not.toHaveProperty('tools');
  });
});
