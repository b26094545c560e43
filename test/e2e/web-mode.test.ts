import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { killWhenDone } from '../helpers/cleanup.js';
import { requireFreshBuild } from '../helpers/dist.js';
import { tempDir } from '../helpers/kernel-fixture.js';

const BIN = path.resolve('bin/memo');
const PACKS = path.resolve('test/fixtures/packs');
const PAGE = fs.readFileSync(path.resolve('test/fixtures/ddg/results.html'), 'utf8');

/** Runs the CLI asynchronously (the fake search engine answers from this process meanwhile). */
function memo(w: { root: string; data: string }, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string; json: any }> {
  return new Promise((resolve) => {
    const c = killWhenDone(
      spawn(process.execPath, [BIN, '--packs', PACKS, '--root', w.root, '--data', w.data, ...args], { stdio: ['ignore', 'pipe', 'pipe'] }),
    );
    let stdout = '';
    let stderr = '';
    c.stdout.on('data', (d) => (stdout += d));
    c.stderr.on('data', (d) => (stderr += d));
    // 'close', not 'exit': only then has all of the child's output been read.
    c.on('close', (code) => {
      let json: any;
      try {
        json = JSON.parse(stdout);
      } catch {
        json = undefined;
      }
      resolve({ code, stdout, stderr, json });
    });
  });
}

describe('scoped web-search mode (memo chat --web)', () => {
  let server: http.Server;
  let url: string;
  const queries: string[] = [];
  beforeAll(async () => {
    requireFreshBuild();
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        queries.push(new URLSearchParams(body).get('q') ?? '');
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(PAGE);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/html/`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  async function workspace() {
    const base = tempDir('memo-web-');
    const w = { root: path.join(base, 'root'), data: path.join(base, 'data') };
    fs.mkdirSync(w.root);
    expect((await memo(w, ['provider', 'add', 'test', '--kind', 'scripted', '--model', 'rules-1'])).code).toBe(0);
    expect((await memo(w, ['plugins', 'config', 'web-search', `endpoint=${url}`])).code).toBe(0);
    return w;
  }

  it('sends a greeting with zero searches', async () => {
    const w = await workspace();
    const before = queries.length;
    const r = await memo(w, ['chat', '--web', '-p', 'hello there', '--json']);
    expect(r.json).toMatchObject({ stopReason: 'final', steps: [] });
    expect(queries.length).toBe(before);
  });

  it("makes exactly one search with the model's short query, through the pipeline and the audit", async () => {
    const w = await workspace();
    const before = queries.length;
    const r = await memo(w, ['chat', '--web', '-p', 'search EUR USD rate today', '--json']);
    expect(r.json.steps).toEqual([expect.objectContaining({ tool: 'web_search', outcome: 'ok', args: { query: 'EUR USD rate today' } })]);
    expect(queries.slice(before)).toEqual(['EUR USD rate today']);
    const audit = (await memo(w, ['audit', 'tail', '--json'])).stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(audit.filter((e) => e.tool === 'web_search')).toHaveLength(1);
  });

  it('refuses run_command in a web-scoped turn and audits the refusal', async () => {
    const w = await workspace();
    const r = await memo(w, ['chat', '--web', '-p', 'call run_command', '--approve', 'allow-once', '--json']);
    expect(r.json.steps).toEqual([expect.objectContaining({ tool: 'run_command', code: 'UNKNOWN_TOOL' })]);
    const audit = (await memo(w, ['audit', 'tail', '--json'])).stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(audit.at(-1)).toMatchObject({ tool: 'run_command', error: { code: 'UNKNOWN_TOOL' } });
  });
});

describe('the access mode of memo chat (--mode, the stored default)', () => {
  beforeAll(requireFreshBuild);

  async function workspace() {
    const base = tempDir('memo-mode-');
    const w = { root: path.join(base, 'root'), data: path.join(base, 'data') };
    fs.mkdirSync(w.root);
    expect((await memo(w, ['provider', 'add', 'test', '--kind', 'scripted', '--model', 'rules-1'])).code).toBe(0);
    return w;
  }

  it('runs turns in Computer access by default, and --mode vault refuses a tool outside Vault only as unknown', async () => {
    const w = await workspace();
    const computer = await memo(w, ['chat', '-p', 'echo hi', '--json']);
    expect(computer.json).toMatchObject({ mode: 'computer', stopReason: 'final', steps: [expect.objectContaining({ tool: 'echo', outcome: 'ok' })] });
    const vault = await memo(w, ['chat', '--mode', 'vault', '-p', 'call run_command', '--approve', 'allow-once', '--json']);
    expect(vault.json).toMatchObject({ mode: 'vault', steps: [expect.objectContaining({ tool: 'run_command', code: 'UNKNOWN_TOOL' })] });
    expect((await memo(w, ['chat', '--mode', 'desktop', '-p', 'hi'])).code).not.toBe(0);
  });

  it('stores the default with --save-default, on the audit trail, and later chats use it', async () => {
    const w = await workspace();
    const saved = await memo(w, ['chat', '--mode', 'vault', '--save-default', '-p', 'hello', '--json']);
    expect(saved.stderr).toContain('the default access mode is now Vault only');
    const later = await memo(w, ['chat', '-p', 'echo hi', '--json']);
    expect(later.json).toMatchObject({ mode: 'vault', steps: [expect.objectContaining({ tool: 'echo', code: 'UNKNOWN_TOOL' })] });
    const audit = (await memo(w, ['audit', 'tail', '--json'])).stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(audit.filter((e) => e.event === 'admin' && e.action === 'mode.default')).toEqual([
      expect.objectContaining({ target: 'vault', by: 'cli', change: { mode: 'vault' } }),
    ]);
  });
});
