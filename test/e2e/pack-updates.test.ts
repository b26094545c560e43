/**
 * What an administrator sees of packs changing under a running `memo serve`, as whole processes:
 * serve logs each pack added, reloaded, refused and removed; `memo plugins list` and `info` (through
 * serve's control socket) show a broken update's reason while the previous version keeps running,
 * and `list` exits 1 for it.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { requireFreshBuild } from '../helpers/dist.js';
import { waitFor } from '../helpers/wait.js';
import { BIN, ServeProcess, serveWorkspace, writePack, type ServeWorkspace } from '../mcp/mcp-helpers.js';

beforeAll(requireFreshBuild);

describe('pack updates under memo serve', () => {
  let w: ServeWorkspace;
  let serve: ServeProcess;
  beforeAll(async () => {
    w = serveWorkspace('memo-pack-updates-');
    serve = ServeProcess.start(['--packs', w.packs, '--root', w.root, '--data', w.data, 'serve', '--json']);
    await serve.json(0);
  });
  afterAll(async () => serve?.stop());

  const memo = (args: string[]) => spawnSync(process.execPath, [BIN, '--packs', w.packs, '--root', w.root, '--data', w.data, ...args], { encoding: 'utf8' });
  const logged = (pattern: RegExp, what: string) =>
    waitFor(() => pattern.test(serve.stderr), { what: () => `serve to log ${what}; it logged:\n${serve.stderr}` });

  it('logs a pack added while it runs, with its version and tools', async () => {
    writePack(w.packs, 'greeter', [{ name: 'greet' }], 'export const tools = { greet: () => "v1" };\n');
    await logged(/pack greeter 1\.0\.0 added from .*greeter \(1 tool\)/, 'the pack added');
  });

  it("shows a broken update's reason in plugins list and info while the previous version runs, and list exits 1", async () => {
    fs.writeFileSync(path.join(w.packs, 'greeter', 'index.js'), 'export const tools = { greet: () => "oops" ;\n');
    await logged(
      /pack greeter did not reload \(its code failed to load: index\.js:1:\d+: SyntaxError[\s\S]*\); the previous version keeps running/,
      'the refused update',
    );
    const listed = memo(['plugins', 'list']);
    expect(listed.status).toBe(1);
    expect(listed.stdout).toMatch(/greeter\s+1\.0\.0\s+extra\s+yes\s+1\s+loaded; its update failed: .*index\.js:1:\d+: SyntaxError/);
    const json = JSON.parse(memo(['plugins', 'list', '--json']).stdout);
    expect(json.find((p: { id: string }) => p.id === 'greeter')).toMatchObject({ status: 'loaded', reloadError: expect.stringContaining('SyntaxError') });
    const info = memo(['plugins', 'info', 'greeter']);
    expect(info.stdout).toMatch(/Its newer version on disk did not load, so this one keeps running: its code failed to load: index\.js:1:\d+: SyntaxError/);
    // The previous version answers (the call goes through serve).
    expect(memo(['tools', 'call', 'greet', '--json']).stdout).toContain('v1');
  });

  it('logs the fixed update as reloaded, and a pack removed', async () => {
    fs.writeFileSync(path.join(w.packs, 'greeter', 'index.js'), 'export const tools = { greet: () => "v2" };\n');
    await logged(/pack greeter 1\.0\.0 reloaded in \d+ ms/, 'the reload');
    expect(memo(['plugins', 'list']).status).toBe(0);
    fs.rmSync(path.join(w.packs, 'greeter'), { recursive: true });
    await logged(/pack greeter removed \(.*greeter is gone\)/, 'the pack removed');
  });
});
