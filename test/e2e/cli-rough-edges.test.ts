/**
 * The CLI's rough edges new users met (issue 47 item 3), through bin/memo: arguments too long for
 * the command line (--args-file, --args -), warnings printed where they do not apply, names refused
 * without a suggestion, command-only text for tools that run no command, and a process that ended
 * while a retry waited (exit 13, no result, no audit line).
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { killWhenDone } from '../helpers/cleanup.js';
import { requireFreshBuild } from '../helpers/dist.js';
import { tempDir } from '../helpers/kernel-fixture.js';
import { ServeProcess } from '../mcp/mcp-helpers.js';

const BIN = path.resolve('bin/memo');
const PACKS = path.resolve('test/fixtures/packs');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  json: any;
}

/** Runs bin/memo without blocking this process (a stand-in server may have to answer from here). */
function memo(args: string[], w: { root: string; data: string }, input?: string): Promise<Run> {
  return new Promise((resolve) => {
    const child = killWhenDone(
      spawn(process.execPath, [BIN, '--packs', PACKS, '--root', w.root, '--data', w.data, ...args], {
        stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      }),
    );
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    if (input !== undefined) child.stdin!.end(input);
    child.on('close', (code) => {
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

beforeAll(requireFreshBuild);

function workspace() {
  const base = tempDir('memo-rough-');
  const root = path.join(base, 'root');
  fs.mkdirSync(root);
  return { base, root, data: path.join(base, 'data') };
}

/** A skill whose SKILL.md has a key this project does not read: loading it warns. */
function skillWithWarning(w: { data: string }): void {
  const dir = path.join(w.data, 'skills', 'odd-skill');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'SKILL.md'), '---\nname: odd-skill\ndescription: A skill with an unknown key.\nfavourite-colour: blue\n---\nBody.\n');
}

const count = (text: string, part: string) => text.split(part).length - 1;

describe('memo tools call: arguments from a file or stdin', () => {
  it('takes --args-file PATH: a 512 KB HTML artifact, more than one command-line argument may hold', async () => {
    const w = workspace();
    const html = `<!doctype html><html><body>${'<p class="row">a "quoted" line\tand a tab</p>\n'.repeat(12_000)}</body></html>\n`;
    expect(html.length).toBeGreaterThan(512 * 1024);
    const file = path.join(w.base, 'args.json');
    fs.writeFileSync(file, JSON.stringify({ path: 'artifact.html', content: html }));
    const r = await memo(['tools', 'call', 'write_file', '--args-file', file, '--approve', 'allow-once', '--json'], w);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ ok: true, result: { path: 'artifact.html', created: true } });
    expect(fs.readFileSync(path.join(w.root, 'artifact.html'), 'utf8')).toBe(html);
  });

  it('takes --args - : the JSON read from stdin', async () => {
    const w = workspace();
    const r = await memo(['tools', 'call', 'echo', '--args', '-', '--json'], w, JSON.stringify({ text: 'from stdin' }));
    expect(r.code).toBe(0);
    expect(r.json).toEqual({ ok: true, result: { text: 'from stdin', summary: 'echoed 10 chars' } });
  });

  it('refuses a missing file, a file or stdin that is not JSON, and both options, with exit 2 and one line each, writing nothing', async () => {
    const w = workspace();
    const missing = path.join(w.base, 'nope.json');
    const notJson = path.join(w.base, 'bad.json');
    fs.writeFileSync(notJson, '{text: hi}');
    const cases: Array<[string[], string | undefined, RegExp]> = [
      [['--args-file', missing], undefined, /--args-file .*nope\.json.*(does not exist|no such file)/i],
      [['--args-file', notJson], undefined, /--args-file .*bad\.json is not valid JSON/],
      [['--args', '-'], '{text: hi}', /--args - \(stdin\) is not valid JSON/],
      [['--args', '-'], '', /stdin.*empty|empty.*stdin/i],
      [['--args', '{"text":"a"}', '--args-file', notJson], undefined, /--args or --args-file, not both/],
    ];
    for (const [opts, input, message] of cases) {
      const r = await memo(['tools', 'call', 'echo', ...opts, '--json'], w, input);
      expect({ opts, code: r.code }).toEqual({ opts, code: 2 });
      expect(r.stderr).toMatch(message);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
    expect(fs.existsSync(w.data)).toBe(false);
  });

  it('documents both in --help', async () => {
    const r = await memo(['tools', 'call', '--help'], workspace());
    expect(r.code).toBe(0);
    const help = r.stdout.replace(/\s+/g, ' ');
    expect(help).toContain('--args <json> the arguments as a JSON object (default: {}), or - to read them from stdin');
    expect(help).toContain('--args-file <path> read the arguments (a JSON object) from this file');
  });
});

describe('memo tools call through a running memo serve', () => {
  it('suggests the tool meant there too, and runs arguments too large for one request to it on a kernel of its own', async () => {
    const w = workspace();
    const server = ServeProcess.start(['--packs', PACKS, '--root', w.root, '--data', w.data, 'serve', '--json']);
    const { pid } = (await server.json(0)) as { pid: number };
    try {
      const unknown = await memo(['tools', 'call', 'ecoh', '--json'], w);
      expect(unknown.stderr).toBe(`memo: via the running server (pid ${pid})\n`);
      expect(unknown.json).toEqual({ ok: false, error: { code: 'UNKNOWN_TOOL', message: expect.stringMatching(/"ecoh".* Did you mean echo\?$/) } });
      const file = path.join(w.base, 'big.json');
      const text = 'x'.repeat(1100 * 1024);
      fs.writeFileSync(file, JSON.stringify({ text }));
      const big = await memo(['tools', 'call', 'echo', '--args-file', file, '--json'], w);
      expect(big.stderr).toBe(`memo: not via the running server (pid ${pid}): the arguments are too large for one request to it; using a kernel of its own\n`);
      expect(big.code).toBe(0);
      expect(big.json.result.text).toBe(text);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });
});

describe('warnings where they apply', () => {
  it("memo permissions allow|deny|revoke does not print a skill's load warnings; memo tools list prints them once", async () => {
    const w = workspace();
    skillWithWarning(w);
    for (const args of [
      ['permissions', 'allow', 'note_write'],
      ['permissions', 'deny', 'note_write'],
      ['permissions', 'revoke', 'note_write'],
    ]) {
      const r = await memo(args, w);
      expect({ args, code: r.code, stderr: r.stderr }).toEqual({ args, code: 0, stderr: '' });
    }
    // Nor when the tool is not found: the one line says so (and memo tools list shows the warnings).
    const unknown = await memo(['permissions', 'deny', 'note_wirte'], w);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr.trim().split('\n')).toEqual([expect.stringContaining('there is no tool named note_wirte')]);
    const listed = await memo(['tools', 'list'], w);
    expect(count(listed.stderr, 'favourite-colour')).toBe(1);
  });
});

describe('names refused with a suggestion', () => {
  it('memo plugins config lists the accepted fields and suggests the closest', async () => {
    const w = workspace();
    const r = await memo(['plugins', 'config', 'web-search', 'tmeout=5'], w);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('tmeout is not an accepted field (accepted: endpoint, timeoutMs, retries, userAgent, maxSnippetChars)');
    expect(r.stderr).toContain('maxSnippetChars). Did you mean timeoutMs?');
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    // A pack's id too.
    for (const args of [
      ['plugins', 'config', 'web-serch'],
      ['plugins', 'enable', 'web-serch'],
    ]) {
      const pack = await memo(args, w);
      expect(pack.code).toBe(1);
      expect(pack.stderr).toMatch(/There is no pack "web-serch".*\. Did you mean web-search\?\n$/);
    }
  });

  it('memo permissions allow|deny|revoke and memo tools call suggest the tool meant', async () => {
    const w = workspace();
    for (const verb of ['allow', 'deny']) {
      const r = await memo(['permissions', verb, 'wirte_file'], w);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(
        'memo: there is no tool named wirte_file in the packs and skills of this data folder (memo tools list shows them; a pack or skill kept elsewhere needs --packs DIR or --skills DIR before the command); did you mean write_file?',
      );
    }
    expect((await memo(['permissions', 'allow', 'note_write'], w)).code).toBe(0);
    const revoked = await memo(['permissions', 'revoke', 'note_wirte'], w);
    expect(revoked.code).toBe(1);
    expect(revoked.stderr).toContain('memo: there is no stored decision for note_wirte. Did you mean note_write?');
    const called = await memo(['tools', 'call', 'wirte_file', '--json'], w);
    expect(called.code).toBe(1);
    expect(called.json).toEqual({ ok: false, error: { code: 'UNKNOWN_TOOL', message: expect.stringMatching(/wirte_file.*did you mean write_file\?/i) } });
    // Nothing close: no guess.
    const far = await memo(['permissions', 'allow', 'zzzzzz'], w);
    expect(far.stderr).not.toMatch(/did you mean/i);
  });
});

describe('command-only text only for commands', () => {
  it('memo permissions allow says what stays asked about commands only for a tool that runs commands', async () => {
    const w = workspace();
    const file = await memo(['permissions', 'allow', 'write_file'], w);
    expect(file.code).toBe(0);
    expect(file.stdout).toContain('Allowed write_file');
    expect(file.stdout).not.toContain('judge');
    const shell = await memo(['permissions', 'allow', 'run_command'], w);
    expect(shell.code).toBe(0);
    expect(shell.stdout).toContain('Still asked: a command the judge cannot vouch for.');
  });
});

describe('no exit while a retry waits', () => {
  async function auditOf(w: { root: string; data: string }): Promise<any[]> {
    const r = await memo(['audit', 'tail', '-n', '20', '--json'], w);
    return r.stdout
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  }

  it('memo tools call web_search against a server that hangs up on every connection: a clear error, exit 1, and an audit line', async () => {
    const w = workspace();
    // Held open for the test (a port closed and freed could be taken by another test's server meanwhile).
    const hangsUp = net.createServer((socket) => socket.destroy());
    const port = await new Promise<number>((resolve) => hangsUp.listen(0, '127.0.0.1', () => resolve((hangsUp.address() as net.AddressInfo).port)));
    try {
      expect((await memo(['plugins', 'config', 'web-search', `endpoint=http://127.0.0.1:${port}/html/`, 'retries=2'], w)).code).toBe(0);
      const r = await memo(['tools', 'call', 'web_search', '--args', '{"query":"weather"}'], w);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/memo: TOOL_FAILED: Could not reach DuckDuckGo \(127\.0\.0\.1:\d+\).*tried 3 times/);
      const lines = (await auditOf(w)).filter((l) => l.tool === 'web_search');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({ outcome: 'error', error: { code: 'TOOL_FAILED' } });
    } finally {
      await new Promise((r) => hangsUp.close(r));
    }
  });

  it('memo tools call web_search against a server that never answers: TIMEOUT, exit 1, and an audit line', async () => {
    const w = workspace();
    const sockets = new Set<net.Socket>();
    const hang = net.createServer((s) => void sockets.add(s));
    await new Promise<void>((r) => hang.listen(0, '127.0.0.1', r));
    try {
      const port = (hang.address() as net.AddressInfo).port;
      const set = await memo(['plugins', 'config', 'web-search', `endpoint=http://127.0.0.1:${port}/html/`, 'retries=1', 'timeoutMs=300'], w);
      expect(set.stderr).toBe('');
      expect(set.code).toBe(0);
      const r = await memo(['tools', 'call', 'web_search', '--args', '{"query":"weather"}', '--json'], w);
      expect(r.code).toBe(1);
      expect(r.json).toMatchObject({ ok: false, error: { code: 'TIMEOUT', message: expect.stringContaining('did not answer within 300 ms (tried 2 times)') } });
      const lines = (await auditOf(w)).filter((l) => l.tool === 'web_search');
      expect(lines).toHaveLength(1);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((r) => hang.close(r));
    }
  });
});
