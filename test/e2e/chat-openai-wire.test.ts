import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { killWhenDone } from '../helpers/cleanup.js';
import { requireFreshBuild } from '../helpers/dist.js';
import { tempDir } from '../helpers/kernel-fixture.js';

const BIN = path.resolve('bin/memo');

/**
 * A local server speaking OpenAI's chat-completions wire format, standing in for a local model
 * (llama.cpp server, Ollama): it answers the capability probe, then drives a turn with one real
 * tool call (read_file) and a final answer, or never calls tools at all.
 */
function modelServer(mode: 'capable' | 'no-tools') {
  const requests: any[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      const json = JSON.parse(body);
      requests.push(json);
      const msgs = json.messages as any[];
      const last = msgs.at(-1);
      const probe = JSON.stringify(json.tools ?? []).includes('get_magic_number');
      let message: any;
      if (mode === 'no-tools' || !json.tools) message = { role: 'assistant', content: 'plain answer' };
      else if (last.role === 'tool')
        message = { role: 'assistant', content: probe ? `The number is ${last.content}.` : `The file says: ${JSON.parse(last.content).content.trim()}` };
      else
        message = {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: `call_${requests.length}`,
              type: 'function',
              function: probe ? { name: 'get_magic_number', arguments: '{}' } : { name: 'read_file', arguments: JSON.stringify({ path: 'hello.txt' }) },
            },
          ],
        };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'chatcmpl-1',
          object: 'chat.completion',
          created: 1,
          model: json.model,
          choices: [{ index: 0, message, finish_reason: message.tool_calls ? 'tool_calls' : 'stop' }],
          usage: { prompt_tokens: 50, completion_tokens: 5, total_tokens: 55 },
        }),
      );
    });
  });
  return { server, requests };
}

function run(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const c = killWhenDone(spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } }));
    let stdout = '';
    let stderr = '';
    c.stdout.on('data', (d) => (stdout += d));
    c.stderr.on('data', (d) => (stderr += d));
    // 'close', not 'exit': only then has all of the child's output been read.
    c.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('memo chat against an OpenAI-compatible server on loopback', () => {
  beforeAll(requireFreshBuild);

  it('probes the local model, then runs a turn with a real tool call through the real adapter', async () => {
    const { server, requests } = modelServer('capable');
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const base = tempDir('memo-wire-');
    const root = path.join(base, 'root');
    fs.mkdirSync(root);
    fs.writeFileSync(path.join(root, 'hello.txt'), 'hi from disk\n');
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
      const r = await run([
        '--root',
        root,
        '--data',
        path.join(base, 'data'),
        'chat',
        '--provider',
        'openai-compatible',
        '--base-url',
        url,
        '--model',
        'local-model',
        '-p',
        'what is in hello.txt?',
        '--json',
      ]);
      const out = JSON.parse(r.stdout);
      expect(out).toMatchObject({ stopReason: 'final', answer: 'The file says: hi from disk', warnings: [] });
      expect(out.steps).toEqual([expect.objectContaining({ tool: 'read_file', outcome: 'ok' })]);
      // Two probe generations, the turn's two requests, then the title request (no tools); tools carry exactly three keys.
      expect(requests).toHaveLength(5);
      expect(requests[4]).not.toHaveProperty('tools');
      expect(requests[4].messages[0].content).toMatch(/^Write a title/);
      const turn = requests[2];
      expect(turn.temperature).toBe(0.2);
      for (const t of turn.tools) expect(Object.keys(t.function).sort()).toEqual(['description', 'name', 'parameters']);
    } finally {
      server.close();
    }
  });

  it('warns up front and chats without tools when the local model cannot call tools', async () => {
    const { server, requests } = modelServer('no-tools');
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const base = tempDir('memo-wire-');
    fs.mkdirSync(path.join(base, 'root'));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
      const r = await run([
        '--root',
        path.join(base, 'root'),
        '--data',
        path.join(base, 'data'),
        'chat',
        '--provider',
        'openai-compatible',
        '--base-url',
        url,
        '--model',
        'tiny',
        '-p',
        'hello',
        '--json',
      ]);
      const out = JSON.parse(r.stdout);
      expect(out.warnings).toEqual([expect.stringContaining('cannot call tools')]);
      expect(out).toMatchObject({ stopReason: 'final', answer: 'plain answer', steps: [] });
      expect(requests.at(-1).tools).toBeUndefined();
    } finally {
      server.close();
    }
  });

  it("shows the provider's human-readable message when the server refuses the key", async () => {
    const server = http.createServer((_req, res) => {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'Incorrect API key provided: sk-abc***xyz.', type: 'invalid_request_error', code: 'invalid_api_key' } }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const base = tempDir('memo-wire-');
    fs.mkdirSync(path.join(base, 'root'));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
      const r = await run(
        [
          '--root',
          path.join(base, 'root'),
          '--data',
          path.join(base, 'data'),
          'chat',
          '--provider',
          'openai-compatible',
          '--base-url',
          url,
          '--model',
          'gpt-4o',
          '--api-key-env',
          'MEMO_TEST_OPENAI_KEY',
          '--no-tools',
          '-p',
          'hi',
        ],
        { MEMO_TEST_OPENAI_KEY: 'sk-test-secret-0123456789' },
      );
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('Incorrect API key provided');
      expect(r.stderr).not.toContain('{"error"');
      expect(r.stderr + r.stdout).not.toContain('sk-test-secret-0123456789');
    } finally {
      server.close();
    }
  });
});
