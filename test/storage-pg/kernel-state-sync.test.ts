/**
 * The kernel's own settings (permissions, pack choices, providers, settings) shared by instances on
 * one PostgreSQL database (schema memo_kernel): what one instance stores holds on the other within
 * the notification's round trip (or the 1 s re-read when a notification is lost), writes made at the
 * same moment by two instances both land, provider keys are sealed in the database, the data
 * folder's files are copied in once, and the CLI commands work on the database as on the files.
 * Each instance has its own data folder, as in production. Tests wait for conditions; none measures time.
 */
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { ProviderSettings } from '../../kernel/providers/provider-settings.js';
import { AuditLog } from '../../kernel/audit/audit-log.js';
import { main } from '../../kernel/cli/main.js';
import { MemoryLogger } from '../../kernel/logger.js';
import { PackSettings } from '../../kernel/packs/pack-settings.js';
import { PermissionStore } from '../../kernel/permissions/permission-store.js';
import { DatabaseUrl } from '../../kernel/storage/database-url.js';
import type { KernelStateDb } from '../../kernel/storage/kernel-state-db.js';
import { kernelStateDb } from '../../kernel/state/kernel-state-import.js';
import { SettingsStore } from '../../kernel/state/kernel-state-settings.js';
import type { ToolResult } from '../../kernel/tools/contract.js';
import { makeKernel, tempDir, type Fixture } from '../helpers/kernel-fixture.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait.js';

const code = (r: ToolResult) => (r.ok ? 'ok' : r.error.code);
const KEY = 'sk-live-7f3c9a2e41b84d06a5e2c1f09b7d3e68';

let server: TestPostgres;
beforeAll(async () => {
  server = await startPostgres();
}, 120_000);

/** A fresh database per test, and the SQL of its memo_kernel schema. */
async function database(): Promise<{ url: string; sql: <R = Record<string, unknown>>(q: string, params?: unknown[]) => Promise<R[]> }> {
  const url = await server.database();
  const name = new URL(url).pathname.slice(1);
  return { url, sql: (q, params) => server.query(q, params, name) };
}

/** One instance's stores without a kernel: its own data folder, the shared database. */
class Instance {
  readonly logger = new MemoryLogger();
  readonly db: KernelStateDb;
  readonly permissions: PermissionStore;
  readonly packs: PackSettings;
  readonly providers: ProviderSettings;
  readonly settings: SettingsStore;
  constructor(
    url: string,
    readonly dataDir = tempDir('memo-state-'),
  ) {
    this.db = kernelStateDb(DatabaseUrl.parse(url), dataDir, this.logger);
    this.permissions = new PermissionStore(path.join(dataDir, 'permissions.json'), this.logger, this.db);
    this.packs = new PackSettings(path.join(dataDir, 'packs.json'), this.logger, this.db);
    this.providers = new ProviderSettings(path.join(dataDir, 'providers.json'), this.logger, this.db);
    this.settings = new SettingsStore(dataDir, this.logger, this.db);
  }
  async ready(): Promise<this> {
    await this.db.ready();
    return this;
  }
  async saved(): Promise<void> {
    await Promise.all([this.permissions.saved(), this.packs.saved(), this.providers.saved(), this.settings.saved()]);
  }
}

const instances: Instance[] = [];
const fixtures: Fixture[] = [];
async function instance(url: string, dataDir?: string): Promise<Instance> {
  const i = new Instance(url, dataDir);
  instances.push(i);
  return i.ready();
}
async function kernelOn(url: string, dataDir?: string): Promise<Fixture> {
  const fx = makeKernel({ databaseUrl: url, ...(dataDir ? { dataDir } : {}) });
  fixtures.push(fx);
  await fx.kernel.permissions.ready();
  return fx;
}
afterEach(async () => {
  for (const fx of fixtures.splice(0)) await fx.close();
  for (const i of instances.splice(0)) await i.db.close();
});

const allowed = (store: PermissionStore, tool: string) => store.find(tool, Date.now()).allow !== undefined;

describe('permissions shared by two kernels on one database', () => {
  it('an allow-forever answered on one instance runs the call on the other, and a revoke there makes the first ask again', async () => {
    const { url } = await database();
    const a = await kernelOn(url);
    const b = await kernelOn(url);
    a.prompter.answer('allow-forever');
    expect(code(await a.kernel.invoke({ tool: 'echo_medium', args: { text: 'a' }, caller: { kind: 'agent' } }))).toBe('ok');
    await a.kernel.permissions.saved();

    await waitFor(() => allowed(b.kernel.permissions, 'echo_medium'), { what: 'the allow to reach instance B' });
    expect(code(await b.kernel.invoke({ tool: 'echo_medium', args: { text: 'b' }, caller: { kind: 'agent' } }))).toBe('ok');
    expect(b.prompter.asked).toHaveLength(0);

    expect(b.kernel.permissions.revoke('echo_medium')).toBe(true);
    await b.kernel.permissions.saved();
    await waitFor(() => !allowed(a.kernel.permissions, 'echo_medium'), { what: 'the revoke to reach instance A' });
    expect(code(await a.kernel.invoke({ tool: 'echo_medium', args: { text: 'c' }, caller: { kind: 'agent' } }))).toBe('PERMISSION_DENIED');
    expect(a.prompter.asked).toHaveLength(2);
  });

  it('a deny-forever given on one instance refuses the call on the other without asking', async () => {
    const { url } = await database();
    const a = await kernelOn(url);
    const b = await kernelOn(url);
    a.prompter.answer('deny-forever');
    expect(code(await a.kernel.invoke({ tool: 'echo_dangerous', args: { text: 'a' }, caller: { kind: 'agent' } }))).toBe('PERMISSION_DENIED');
    await waitFor(() => b.kernel.permissions.find('echo_dangerous', Date.now()).deny, { what: 'the deny to reach instance B' });
    b.prompter.answer('allow-once');
    const r = await b.kernel.invoke({ tool: 'echo_dangerous', args: { text: 'b' }, caller: { kind: 'agent' } });
    expect(r.ok ? null : r.error.message).toMatch(/denied/);
    expect(b.prompter.asked).toHaveLength(0);
  });

  it('always-allow switched on and off on one instance holds on the other', async () => {
    const { url } = await database();
    const a = await instance(url);
    const b = await instance(url);
    a.permissions.setAlwaysAllow(true);
    await a.permissions.saved();
    await waitFor(() => b.permissions.alwaysAllow, { what: 'always-allow on at B' });
    a.permissions.setAlwaysAllow(false);
    await a.permissions.saved();
    await waitFor(() => !b.permissions.alwaysAllow, { what: 'always-allow off at B' });
  });

  it('external writes turned on for a client on one instance hold on the other, and off again', async () => {
    const { url } = await database();
    const a = await instance(url);
    const b = await instance(url);
    expect(b.permissions.externalWritesFor('claude-ai')).toBe(false);
    a.permissions.setExternalWrites(true, 'claude-ai');
    await a.permissions.saved();
    await waitFor(() => b.permissions.externalWritesFor('claude-ai'), { what: 'external writes on for claude-ai at B' });
    expect(b.permissions.externalWritesFor('cursor')).toBe(false);
    a.permissions.setExternalWrites(false);
    await a.permissions.saved();
    await waitFor(() => !b.permissions.externalWritesFor('claude-ai'), { what: 'external writes off at B' });
  });

  it('a change whose notification never came is read by the periodic re-read', async () => {
    const { url, sql } = await database();
    const a = await instance(url);
    // Written behind the instances' backs: rows and counter, no NOTIFY.
    await sql(
      `INSERT INTO memo_kernel.permission_decisions (tool, scope, decision, plugin, given_at) VALUES ('read_env', 'forever', 'allow', 'shell', '2026-12-01T00:00:00.000Z')`,
    );
    await sql(`UPDATE memo_kernel.state_versions SET version = version + 1 WHERE store = 'permissions'`);
    await waitFor(() => allowed(a.permissions, 'read_env'), { what: 'the re-read to find the decision' });
    await sql(`DELETE FROM memo_kernel.permission_decisions`);
    await sql(`UPDATE memo_kernel.state_versions SET version = version + 1 WHERE store = 'permissions'`);
    await waitFor(() => !allowed(a.permissions, 'read_env'), { what: 'the re-read to find the revoke' });
  });

  it('keeps decisions as rows: the file is neither written nor read', async () => {
    const { url, sql } = await database();
    const a = await instance(url);
    a.permissions.set({ tool: 'write_file', decision: 'allow', plugin: 'fs-tools', scope: 'until', expiresAt: '2099-01-01T00:00:00.000Z' }, new Date());
    a.permissions.set({ tool: 'write_file', decision: 'allow', plugin: 'fs-tools', scope: 'conversation', conversationId: 'c-1' }, new Date());
    await a.permissions.saved();
    expect(await sql(`SELECT tool, scope, conversation_id, decision FROM memo_kernel.permission_decisions ORDER BY scope`)).toEqual([
      { tool: 'write_file', scope: 'conversation', conversation_id: 'c-1', decision: 'allow' },
      { tool: 'write_file', scope: 'until', conversation_id: '', decision: 'allow' },
    ]);
    expect(fs.existsSync(path.join(a.dataDir, 'permissions.json'))).toBe(false);
    a.permissions.forgetConversation('c-1');
    await a.permissions.saved();
    expect(await sql(`SELECT scope FROM memo_kernel.permission_decisions`)).toEqual([{ scope: 'until' }]);
  });
});

describe('pack choices shared by two kernels', () => {
  it('a pack disabled through one instance leaves the other’s tools, and comes back when enabled', async () => {
    const { url } = await database();
    const a = await kernelOn(url);
    const b = await kernelOn(url);
    await a.kernel.loadPacks(['fs-tools']);
    await b.kernel.loadPacks(['fs-tools']);
    await b.kernel.watch();
    fs.writeFileSync(path.join(b.root, 'note.txt'), 'hello');
    const read = () => b.kernel.invoke({ tool: 'read_file', args: { path: 'note.txt' }, caller: { kind: 'agent' } });
    expect(code(await read())).toBe('ok');
    a.kernel.packs.setEnabled('fs-tools', false);
    await waitFor(() => !b.kernel.registry.isEnabled('fs-tools'), { what: 'fs-tools disabled at B' });
    expect(code(await read())).toBe('TOOL_DISABLED');
    a.kernel.packs.setEnabled('fs-tools', true);
    await waitFor(() => b.kernel.registry.isEnabled('fs-tools'), { what: 'fs-tools enabled again at B' });
    expect(code(await read())).toBe('ok');
  });
});

describe('two instances writing at the same moment', () => {
  it('lose no permission decision', async () => {
    const { url } = await database();
    const a = await instance(url);
    const b = await instance(url);
    for (let n = 0; n < 10; n++) {
      a.permissions.set({ tool: `tool_a${n}`, decision: 'allow', plugin: 'p', scope: 'forever' }, new Date());
      b.permissions.set({ tool: `tool_b${n}`, decision: 'deny', plugin: 'p', scope: 'forever' }, new Date());
    }
    await Promise.all([a.permissions.saved(), b.permissions.saved()]);
    for (const i of [a, b]) await waitFor(() => i.permissions.list().length === 20, { what: () => `20 decisions, found ${i.permissions.list().length}` });
  });

  it('keep both a pack’s settings from one and its switch from the other, merged key by key', async () => {
    const { url } = await database();
    const a = await instance(url);
    const b = await instance(url);
    a.packs.setConfig('notes', { type: 'object' }, { folder: 'inbox' });
    b.packs.setEnabled('notes', false);
    b.packs.setConfig('notes', { type: 'object' }, { limit: 5 });
    await Promise.all([a.packs.saved(), b.packs.saved()]);
    for (const i of [a, b])
      await waitFor(() => i.packs.storedEnabled('notes') === false && isDeepStrictEqual(i.packs.storedConfig('notes'), { folder: 'inbox', limit: 5 }), {
        what: () => `both changes, found ${JSON.stringify(i.packs.stored())}`,
      });
  });

  it('agree on the providers when one removes a provider the other makes active', async () => {
    const { url } = await database();
    const a = await instance(url);
    const b = await instance(url);
    a.providers.put({ name: 'alpha', kind: 'openai-compatible', baseUrl: 'http://127.0.0.1:9/v1' });
    a.providers.put({ name: 'beta', kind: 'openai-compatible', baseUrl: 'http://127.0.0.1:9/v1' });
    await a.providers.saved();
    await waitFor(() => b.providers.get('beta'), { what: 'beta at B' });
    a.providers.remove('beta');
    b.providers.use('beta');
    await a.providers.saved();
    // B's choice may come first (then the removal hands activity to alpha) or second (then it fails: beta is gone).
    await b.providers.saved().catch((err: Error) => expect(err.message).toMatch(/no provider "beta"/));
    for (const i of [a, b]) await waitFor(() => !i.providers.get('beta') && i.providers.active()?.name === 'alpha', { what: 'alpha active, beta gone' });
  });

  it('agree on the default access mode one of them stores, computer until then', async () => {
    const { url } = await database();
    const a = await instance(url);
    const b = await instance(url);
    expect(b.providers.defaultMode()).toBe('computer');
    a.providers.setDefaultMode('vault');
    await a.providers.saved();
    await waitFor(() => b.providers.defaultMode() === 'vault', { what: 'vault at B' });
    const c = await instance(url);
    expect(c.providers.defaultMode()).toBe('vault');
  });

  it('agree on the MCP profiles one of them stores and removes', async () => {
    const { url } = await database();
    const a = await instance(url);
    const b = await instance(url);
    a.settings.setProfile('notes', { tools: ['vault', 'echo'], search: true });
    a.settings.setProfile('files2', { tools: ['fs-tools'] });
    await a.settings.saved();
    await waitFor(() => Object.keys(b.settings.read().mcpProfiles ?? {}).length === 2, { what: 'both profiles at B' });
    expect(b.settings.read().mcpProfiles).toEqual({ notes: { tools: ['vault', 'echo'], search: true }, files2: { tools: ['fs-tools'] } });
    b.settings.setProfile('notes', undefined);
    await b.settings.saved();
    await waitFor(() => a.settings.read().mcpProfiles?.notes === undefined, { what: 'notes gone at A' });
    expect((await instance(url)).settings.read().mcpProfiles).toEqual({ files2: { tools: ['fs-tools'] } });
  });
});

describe('provider keys in the shared database', () => {
  it('are sealed there, read by an instance holding the same kernel.key, and scrubbed from its tool results', async () => {
    const { url, sql } = await database();
    const a = await instance(url);
    a.providers.put({ name: 'openai', kind: 'openai-compatible', preset: 'openai', apiKey: KEY, headers: { 'X-Team': 'tk-9f8e7d6c5b4a39281706' } });
    await a.providers.saved();
    const rows = await sql<{ config: unknown; secret: string }>(`SELECT config, secret FROM memo_kernel.providers`);
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain(KEY);
    expect(JSON.stringify(rows)).not.toContain('tk-9f8e7d6c5b4a39281706');
    expect(rows[0]!.secret).toMatch(/^enc1:/);

    // Instance B, with a copy of A's key file (as every instance on the database needs).
    const dataB = path.join(tempDir('memo-b-'), 'data');
    fs.mkdirSync(dataB, { recursive: true });
    fs.copyFileSync(path.join(a.dataDir, 'kernel.key'), path.join(dataB, 'kernel.key'));
    const b = await kernelOn(url, dataB);
    expect(b.kernel.providerSettings.get('openai')).toMatchObject({ apiKey: KEY, headers: { 'X-Team': 'tk-9f8e7d6c5b4a39281706' } });
    const r = await b.kernel.invoke({ tool: 'echo_safe', args: { text: `the key is ${KEY}` }, caller: { kind: 'agent' } });
    expect(JSON.stringify(r)).not.toContain(KEY);
  });

  it('are left out, with a warning that does not quote them, by an instance without the key file', async () => {
    const { url } = await database();
    const a = await instance(url);
    a.providers.put({ name: 'openai', kind: 'openai-compatible', apiKey: KEY });
    a.providers.put({ name: 'local', kind: 'openai-compatible', baseUrl: 'http://127.0.0.1:9/v1' });
    await a.providers.saved();
    const b = await instance(url);
    expect(b.providers.list().map((p) => p.name)).toEqual(['local']);
    const warnings = b.logger.lines.map((l) => l.message).join('\n');
    expect(warnings).toMatch(/kernel\.key is missing/);
    expect(warnings).not.toContain(KEY);
    // No new key was made: it would hide why the stored ones cannot be read.
    expect(fs.existsSync(path.join(b.dataDir, 'kernel.key'))).toBe(false);
    b.providers.put({ name: 'other', kind: 'openai-compatible', apiKey: 'sk-other-0123456789abcdef' });
    await expect(b.providers.saved()).rejects.toThrow(/no usable data\/kernel\.key/);
    expect(b.providers.get('other')).toBeUndefined();
  });

  it('are never sealed under a second key: an instance that made its own key file is refused', async () => {
    const { url } = await database();
    // Both start on an empty database, so each makes a key file of its own.
    const a = await instance(url);
    const b = await instance(url);
    a.providers.put({ name: 'openai', kind: 'openai-compatible', apiKey: KEY });
    await a.providers.saved();
    b.providers.put({ name: 'groq', kind: 'openai-compatible', apiKey: 'gsk-0123456789abcdef0123' });
    await expect(b.providers.saved()).rejects.toThrow(/sealed with key \w+, and this instance's data\/kernel\.key is another/);
    // A provider without a stored key is fine.
    b.providers.put({ name: 'local', kind: 'openai-compatible', baseUrl: 'http://127.0.0.1:9/v1' });
    await b.providers.saved();
    await waitFor(() => a.providers.get('local'), { what: 'local at A' });
    expect(a.providers.get('groq')).toBeUndefined();
  });
});

describe('the first start on a database', () => {
  function writeFiles(dataDir: string): Record<string, string> {
    const files: Record<string, unknown> = {
      'permissions.json': {
        version: 2,
        alwaysAllow: true,
        externalWrites: { all: false, clients: ['claude-ai'] },
        decisions: [
          { tool: 'run_command', decision: 'deny', plugin: 'shell', at: '2026-11-01T10:00:00.000Z', scope: 'forever' },
          { tool: 'read_env', decision: 'allow', plugin: 'shell', at: '2026-11-01T10:00:00.000Z', scope: 'forever' },
        ],
      },
      'packs.json': { version: 1, packs: { whatsapp: { enabled: false }, vault: { config: { folder: 'notes' } } } },
      'providers.json': { version: 1, active: 'openai', providers: { openai: { name: 'openai', kind: 'openai-compatible', apiKey: KEY } } },
      'settings.json': { rateLimit: 45 },
    };
    fs.mkdirSync(dataDir, { recursive: true });
    const texts: Record<string, string> = {};
    for (const [name, value] of Object.entries(files)) {
      texts[name] = JSON.stringify(value, null, 2);
      fs.writeFileSync(path.join(dataDir, name), texts[name], { mode: 0o600 });
    }
    return texts;
  }

  it('copies the files once into empty tables and keeps them as they were', async () => {
    const { url, sql } = await database();
    const dataDir = path.join(tempDir('memo-old-'), 'data');
    const texts = writeFiles(dataDir);
    const a = await instance(url, dataDir);
    expect(a.permissions.list().map((d) => `${d.tool}:${d.decision}`)).toEqual(['read_env:allow', 'run_command:deny']);
    expect(a.permissions.alwaysAllow).toBe(true);
    expect(a.permissions.externalWrites).toEqual({ all: false, clients: ['claude-ai'] });
    expect(a.packs.storedEnabled('whatsapp')).toBe(false);
    expect(a.packs.storedConfig('vault')).toEqual({ folder: 'notes' });
    expect(a.providers.active()).toMatchObject({ name: 'openai', apiKey: KEY });
    expect(a.settings.read()).toEqual({ rateLimit: 45 });
    expect((await sql(`SELECT store, rows FROM memo_kernel.file_imports ORDER BY store`)).map((r) => `${String(r.store)}=${String(r.rows)}`)).toEqual([
      'packs=2',
      'permissions=4',
      'providers=1',
      'settings=1',
    ]);
    expect(JSON.stringify(await sql(`SELECT * FROM memo_kernel.providers`))).not.toContain(KEY);
    for (const [name, text] of Object.entries(texts)) expect(fs.readFileSync(path.join(dataDir, name), 'utf8')).toBe(text);

    // Emptied in the database, then started again: nothing is copied a second time.
    a.permissions.revoke('read_env');
    a.permissions.revoke('run_command');
    a.permissions.setAlwaysAllow(false);
    await a.saved();
    await a.db.close();
    const again = await instance(url, dataDir);
    expect(again.permissions.list()).toEqual([]);
    expect(again.permissions.alwaysAllow).toBe(false);
  });

  it('leaves another instance’s files out once the tables are filled, saying so', async () => {
    const { url } = await database();
    const a = await instance(
      url,
      (() => {
        const d = path.join(tempDir('memo-a-'), 'data');
        writeFiles(d);
        return d;
      })(),
    );
    const dataB = path.join(tempDir('memo-b-'), 'data');
    fs.mkdirSync(dataB, { recursive: true });
    fs.writeFileSync(
      path.join(dataB, 'permissions.json'),
      JSON.stringify({ version: 2, alwaysAllow: false, decisions: [{ tool: 'write_file', decision: 'allow', plugin: 'fs', at: '', scope: 'forever' }] }),
    );
    const b = await instance(url, dataB);
    expect(b.permissions.list().map((d) => d.tool)).toEqual(['read_env', 'run_command']);
    expect(a.permissions.list().map((d) => d.tool)).toEqual(['read_env', 'run_command']);
    expect(b.logger.lines.map((l) => l.message).join('\n')).toMatch(
      /permissions\.json was not copied into the shared database: its permissions were copied there from instance/,
    );
  });
});

describe('before the database answers', () => {
  it('refuses medium calls saying the stored permissions are not read yet, runs safe ones, and never shows the password', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    const fx = makeKernel({
      databaseUrl: `postgres://memo:hunter2-secret@127.0.0.1:${port}/memo`,
      // The audit trail on the database would refuse to start; this test is about the permissions.
      services: {
        auditSink: (config) => {
          const log = new AuditLog(path.join(config.dataDir, 'agent-audit.jsonl'));
          log.open();
          return log;
        },
      },
    });
    fixtures.push(fx);
    const r = await fx.kernel.invoke({ tool: 'echo_medium', args: { text: 'x' }, caller: { kind: 'agent' } });
    expect(r.ok ? null : r.error).toMatchObject({
      code: 'PERMISSION_DENIED',
      message: expect.stringMatching(
        /^The stored permissions have not been read from postgres:\/\/memo:\[masked\]@127\.0\.0\.1:\d+\/memo \(schema "memo_kernel"\) yet/,
      ),
    });
    expect(code(await fx.kernel.invoke({ tool: 'echo_safe', args: { text: 'x' }, caller: { kind: 'agent' } }))).toBe('ok');
    expect(fx.prompter.asked).toHaveLength(0);
    await waitFor(() => fx.logger.lines.some((l) => /kernel state cannot be read yet/.test(l.message)), { what: 'the warning' });
    expect(JSON.stringify(fx.logger.lines)).not.toContain('hunter2-secret');
  });
});

describe('the CLI on the database', () => {
  let out = '';
  async function memo(dataDir: string, ...args: string[]): Promise<{ code: number; out: string }> {
    out = '';
    // What the command prints, captured in this process (the command runs here, as bin/memo would run it).
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = (chunk: string | Uint8Array) => {
      out += String(chunk);
      return true;
    };
    try {
      const exit = await main(['node', 'memo', '--data', dataDir, ...args]);
      return { code: exit, out };
    } finally {
      process.stdout.write = write;
    }
  }
  const saved = process.env.MEMO_DATABASE_URL;
  afterEach(() => {
    if (saved === undefined) delete process.env.MEMO_DATABASE_URL;
    else process.env.MEMO_DATABASE_URL = saved;
  });

  it('memo permissions, plugins, settings and provider read and write the rows a running instance uses', async () => {
    const { url, sql } = await database();
    process.env.MEMO_DATABASE_URL = url;
    const running = await instance(url);
    const cliData = path.join(tempDir('memo-cli-'), 'data');
    fs.mkdirSync(cliData, { recursive: true });
    fs.copyFileSync(path.join(running.dataDir, 'kernel.key'), path.join(cliData, 'kernel.key'));

    expect((await memo(cliData, 'permissions', 'always-allow', 'on')).out).toMatch(/Always allow is now ON/);
    await waitFor(() => running.permissions.alwaysAllow, { what: 'always-allow at the running instance' });
    running.permissions.set({ tool: 'read_env', decision: 'allow', plugin: 'shell', scope: 'forever' }, new Date());
    await running.permissions.saved();
    expect(JSON.parse((await memo(cliData, 'permissions', 'list', '--json')).out)).toEqual([expect.objectContaining({ tool: 'read_env', decision: 'allow' })]);
    expect((await memo(cliData, 'permissions', 'revoke', 'read_env')).out).toMatch(/Revoked/);
    await waitFor(() => !allowed(running.permissions, 'read_env'), { what: 'the revoke at the running instance' });

    expect((await memo(cliData, 'plugins', 'disable', 'shell')).out).toBe('Disabled shell.\n');
    await waitFor(() => running.packs.storedEnabled('shell') === false, { what: 'shell disabled at the running instance' });
    expect(await sql(`SELECT pack_id, enabled FROM memo_kernel.pack_settings`)).toEqual([{ pack_id: 'shell', enabled: false }]);

    expect((await memo(cliData, 'settings', 'rate-limit', '50')).code).toBe(0);
    expect(JSON.parse((await memo(cliData, 'settings', 'show', '--json')).out)).toEqual({ rateLimit: 50 });
    await waitFor(() => running.settings.read().rateLimit === 50, { what: 'the rate limit at the running instance' });

    running.providers.put({ name: 'openai', kind: 'openai-compatible', apiKey: KEY });
    running.providers.put({ name: 'local', kind: 'openai-compatible', baseUrl: 'http://127.0.0.1:9/v1' });
    await running.providers.saved();
    const listed = (await memo(cliData, 'provider', 'list', '--json')).out;
    expect(listed).not.toContain(KEY);
    expect(JSON.parse(listed)).toEqual([
      expect.objectContaining({ name: 'local', apiKey: 'none' }),
      expect.objectContaining({ name: 'openai', apiKey: '[stored, masked]', active: true }),
    ]);
    expect((await memo(cliData, 'provider', 'use', 'local')).code).toBe(0);
    await waitFor(() => running.providers.active()?.name === 'local', { what: 'local active at the running instance' });
    expect((await memo(cliData, 'provider', 'remove', 'openai')).code).toBe(0);
    await waitFor(() => !running.providers.get('openai'), { what: 'openai removed at the running instance' });
    for (const f of ['permissions.json', 'packs.json', 'settings.json', 'providers.json']) expect(fs.existsSync(path.join(cliData, f))).toBe(false);
  });
});

// Last: it stops the server that every test of this file uses.
describe('while the database does not answer', () => {
  it('applies stored denies but no stored allow or always-allow once the view is stale, undoes a write it could not save, and recovers', async () => {
    const { url } = await database();
    const a = await instance(url);
    a.permissions.set({ tool: 'read_env', decision: 'allow', plugin: 'shell', scope: 'forever' }, new Date());
    a.permissions.set({ tool: 'run_command', decision: 'deny', plugin: 'shell', scope: 'forever' }, new Date());
    a.permissions.setAlwaysAllow(true);
    await a.permissions.saved();
    await server.stop();
    try {
      await waitFor(() => !allowed(a.permissions, 'read_env'), { what: 'the stale view to stop applying the allow' });
      expect(a.permissions.alwaysAllow).toBe(false);
      expect(a.permissions.find('run_command', Date.now()).deny).toBeDefined();
      expect(a.logger.lines.some((l) => /have not been confirmed for \d+ s: stored allows and always-allow do not apply/.test(l.message))).toBe(true);
      a.permissions.set({ tool: 'write_file', decision: 'allow', plugin: 'fs-tools', scope: 'forever' }, new Date());
      await expect(a.permissions.saved()).rejects.toThrow(/cannot be reached/);
      expect(a.permissions.list().map((d) => d.tool)).toEqual(['read_env', 'run_command']);
      // A key that could not be saved is in no message.
      a.providers.put({ name: 'openai', kind: 'openai-compatible', apiKey: KEY });
      const failure = await a.providers.saved().then(
        () => null,
        (err: Error) => err,
      );
      expect(failure?.message).toMatch(/cannot be reached/);
      expect(`${failure?.message} ${String(failure?.stack)} ${JSON.stringify(a.logger.lines)}`).not.toContain(KEY);
      expect(a.providers.get('openai')).toBeUndefined();
    } finally {
      await server.start();
    }
    await waitFor(() => allowed(a.permissions, 'read_env') && a.permissions.alwaysAllow, {
      what: 'the allow back once the database answers',
      timeoutMs: 90_000,
    });
  }, 120_000);
});
