import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { requireFreshBuild } from '../../helpers/dist.js';
import { tempDir } from '../../helpers/kernel-fixture.js';
import { resolveEndpoint } from '../../../plugins/providers/presets.js';

const BIN = path.resolve('bin/memo');
const PACKS = path.resolve('test/fixtures/packs');

beforeAll(requireFreshBuild);

function memo(data: string, args: string[]) {
  const root = path.join(path.dirname(data), 'root');
  fs.mkdirSync(root, { recursive: true });
  return spawnSync(process.execPath, [BIN, '--packs', PACKS, '--root', root, '--data', data, ...args], {
    encoding: 'utf8',
    input: '',
    env: { ...process.env, OPENCODE_API_KEY: '' },
  });
}

const stored = (data: string) =>
  JSON.parse(fs.readFileSync(path.join(data, 'providers.json'), 'utf8')) as { providers: Record<string, Record<string, unknown>> };

describe('memo provider add, checked like configure_provider', () => {
  it('knows the OpenCode Go preset: its endpoint and key variable', () => {
    expect(resolveEndpoint('openai-compatible', { name: 'go', kind: 'openai-compatible', preset: 'opencode-go' })).toMatchObject({
      baseUrl: 'https://opencode.ai/zen/go/v1',
      local: false,
    });
  });

  it('stores an OpenCode Go provider, warning that its key variable is not set', () => {
    const data = path.join(tempDir('memo-padd-'), 'data');
    const r = memo(data, [
      'provider',
      'add',
      'go',
      '--kind',
      'openai-compatible',
      '--preset',
      'opencode-go',
      '--model',
      'glm-5',
      '--api-key-env',
      'OPENCODE_API_KEY',
    ]);
    expect(r.stderr).toContain('memo: warning: $OPENCODE_API_KEY is not set in this process: set it before chatting.');
    expect(r.status).toBe(0);
    expect(JSON.stringify(stored(data))).toContain('"preset":"opencode-go"');
  });

  it('refuses an unknown preset and a remote URL on a local preset, as configure_provider does, storing nothing', () => {
    const data = path.join(tempDir('memo-padd-'), 'data');
    const unknown = memo(data, ['provider', 'add', 'x', '--kind', 'openai-compatible', '--preset', 'opencode-goo']);
    expect(unknown.status).not.toBe(0);
    expect(unknown.stderr).toContain('"opencode-goo" is not a preset of the openai-compatible kind (use one of');
    const remote = memo(data, ['provider', 'add', 'x', '--kind', 'openai-compatible', '--preset', 'ollama', '--base-url', 'https://models.example.com/v1']);
    expect(remote.status).not.toBe(0);
    expect(remote.stderr).toContain('The ollama preset is a server on this machine: its baseUrl must be a loopback address');
    const plainHttp = memo(data, [
      'provider',
      'add',
      'x',
      '--kind',
      'anthropic',
      '--preset',
      'custom',
      '--base-url',
      'http://models.example.com',
      '--api-key-env',
      'K',
    ]);
    expect(plainHttp.stderr).toContain('is plain http on another machine');
    expect(fs.existsSync(path.join(data, 'providers.json'))).toBe(false);
  });

  it('stores a kind another pack contributes as given (the providers pack checks only its own)', () => {
    const data = path.join(tempDir('memo-padd-'), 'data');
    expect(memo(data, ['provider', 'add', 'test', '--kind', 'scripted', '--model', 'rules-1']).status).toBe(0);
    expect(stored(data).providers).toEqual({ test: { name: 'test', kind: 'scripted', model: 'rules-1' } });
  });
});
