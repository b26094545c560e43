import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { killWhenDone } from '../helpers/cleanup.js';
import { requireFreshBuild } from '../helpers/dist.js';
import { tempDir } from '../helpers/kernel-fixture.js';
import { SPAWN_TIMEOUT_MS } from '../helpers/wait.js';
import { writeTinyGguf } from '../helpers/tiny-gguf.js';

const BIN = path.resolve('bin/memo');

function memo(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const c = killWhenDone(spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] }));
    let stdout = '';
    let stderr = '';
    c.stdout.on('data', (d) => (stdout += d));
    c.stderr.on('data', (d) => (stderr += d));
    // 'close', not 'exit': only then has all of the child's output been read.
    c.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('memo chat with an in-process GGUF model', () => {
  beforeAll(requireFreshBuild);

  it(
    'probes the model, warns that it cannot call tools, and answers without tools',
    async () => {
      const base = tempDir('memo-gguf-');
      const root = path.join(base, 'root');
      fs.mkdirSync(root);
      const model = writeTinyGguf(base, { contextLength: 1024, seed: 11 }, 'tiny.gguf').file;
      const g = ['--root', root, '--data', path.join(base, 'data')];
      expect((await memo([...g, 'provider', 'add', 'local', '--kind', 'llama-cpp', '--preset', 'gguf', '--model', model])).code).toBe(0);
      const r = await memo([...g, 'chat', '-p', 'hello', '--json']);
      const out = JSON.parse(r.stdout);
      expect(out.warnings).toEqual([expect.stringContaining('cannot call tools')]);
      expect(out).toMatchObject({ provider: 'local', stopReason: 'final', steps: [] });
      expect(typeof out.answer).toBe('string');
      expect(out.usage.outputTokens).toBeGreaterThan(0);
    },
    SPAWN_TIMEOUT_MS,
  );
});
