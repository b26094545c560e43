/**
 * README's embedding example, run exactly as it stands: the first ```js block under "Embedding the
 * kernel" is written to a fresh folder whose node_modules/memo-kernel is this checkout (the package's
 * exports, the compiled kernel), and run with node against a loopback model server that replays
 * OpenAI's chat-completions wire format.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { killWhenDone } from '../helpers/cleanup.js';
import { requireFreshBuild } from '../helpers/dist.js';
import { tempDir } from '../helpers/kernel-fixture.js';

beforeAll(requireFreshBuild);

function readmeExample(): string {
  const readme = fs.readFileSync('README.md', 'utf8');
  const section = readme.slice(readme.indexOf('## Embedding the kernel'));
  const m = /```js\n([\s\S]*?)```/.exec(section);
  if (!m) throw new Error('README has no ```js block under "Embedding the kernel"');
  return m[1]!;
}

/** Answers the first request with a read_file call and the next with what the tool returned. */
function modelServer() {
  const requests: any[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      const json = JSON.parse(body);
      requests.push(json);
      const last = json.messages.at(-1);
      const message =
        last.role === 'tool'
          ? { role: 'assistant', content: `The file says: ${JSON.parse(last.content).content.trim()}` }
          : {
              role: 'assistant',
              content: null,
              tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'read_file', arguments: JSON.stringify({ path: 'hello.txt' }) } }],
            };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'chatcmpl-1',
          object: 'chat.completion',
          created: 1,
          model: json.model,
          choices: [{ index: 0, message, finish_reason: message.content === null ? 'tool_calls' : 'stop' }],
          usage: { prompt_tokens: 50, completion_tokens: 5, total_tokens: 55 },
        }),
      );
    });
  });
  return { server, requests };
}

describe("README's embedding example", () => {
  it('runs as written: packs by id, a write through the prompter, a provider from code, a turn, one shutdown', async () => {
    const dir = tempDir('memo-embed-');
    fs.mkdirSync(path.join(dir, 'node_modules'));
    fs.symlinkSync(path.resolve('.'), path.join(dir, 'node_modules', 'memo-kernel'), 'dir');
    fs.writeFileSync(path.join(dir, 'embed.mjs'), readmeExample());
    const { server, requests } = modelServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
      const child = killWhenDone(
        spawn(process.execPath, ['embed.mjs'], { cwd: dir, env: { ...process.env, MODEL_URL: url }, stdio: ['ignore', 'pipe', 'pipe'] }),
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      const code = await new Promise<number | null>((r) => child.on('close', r));
      expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
      const lines = stdout.trim().split('\n');
      expect(lines[0]).toMatch(/hello\.txt/);
      expect(lines.slice(1)).toEqual(['The file says: Hello, Ada!', 'asked about: write_file']);
      expect(fs.readFileSync(path.join(dir, 'hello.txt'), 'utf8')).toBe('Hello, Ada!\n');
      // llama3's 8K window: the definitions of every loaded tool would pass a quarter of it, so the turn
      // sent find_tools and the tools that fit the question (read_file first), not configure_provider;
      // the audit trail recorded both calls.
      const sent = requests[0].tools.map((t: any) => t.function.name);
      expect(sent).toEqual(expect.arrayContaining(['find_tools', 'read_file']));
      expect(sent).not.toContain('configure_provider');
      const audit = fs.readFileSync(path.join(dir, 'data', 'agent-audit.jsonl'), 'utf8');
      expect(audit).toContain('"tool":"write_file"');
      expect(audit).toContain('"tool":"read_file"');
    } finally {
      server.close();
    }
  });
});
