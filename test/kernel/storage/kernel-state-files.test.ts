/**
 * The kernel's settings stores without MEMO_DATABASE_URL: the data folder's JSON files, exactly as
 * before the shared database (the database side is in test/storage-pg/kernel-state-sync.test.ts).
 * The CLI's way in, withCommandStore, and the settings store that memo serve reads at start.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { MemoryLogger } from '../../../kernel/logger.js';
import { PermissionStore } from '../../../kernel/permissions/permission-store.js';
import { withCommandStore } from '../../../kernel/state/command-store.js';
import { SettingsStore } from '../../../kernel/state/kernel-state-settings.js';
import { storedSettings } from '../../../kernel/state/command-store.js';
import { tempDir } from '../../helpers/kernel-fixture.js';

describe('the settings stores without a shared database', () => {
  const saved = process.env.MEMO_DATABASE_URL;
  beforeEach(() => delete process.env.MEMO_DATABASE_URL);
  afterAll(() => {
    if (saved === undefined) delete process.env.MEMO_DATABASE_URL;
    else process.env.MEMO_DATABASE_URL = saved;
  });

  it('writes a command’s change to the data folder’s file, mode 0600, before it returns', async () => {
    const dataDir = tempDir();
    const logger = new MemoryLogger();
    const file = path.join(dataDir, 'permissions.json');
    const revoked = await withCommandStore(
      dataDir,
      logger,
      (db) => new PermissionStore(file, logger, db),
      (store) => {
        store.set({ tool: 'read_env', decision: 'allow', plugin: 'shell', scope: 'forever' }, new Date('2026-12-01T00:00:00Z'));
        return store.revoke('run_command');
      },
    );
    expect(revoked).toBe(false);
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toEqual({
      version: 2,
      alwaysAllow: false,
      decisions: [{ tool: 'read_env', decision: 'allow', plugin: 'shell', scope: 'forever', at: '2026-12-01T00:00:00.000Z' }],
    });
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
  });

  it('reads and writes the rate limit in settings.json, and lets a damaged file cost only the default', async () => {
    const dataDir = tempDir();
    const store = new SettingsStore(dataDir, new MemoryLogger());
    store.setRateLimit(45);
    expect(JSON.parse(fs.readFileSync(path.join(dataDir, 'settings.json'), 'utf8'))).toEqual({ rateLimit: 45 });
    expect(await storedSettings(dataDir, new MemoryLogger())).toEqual({ rateLimit: 45 });
    store.setRateLimit(undefined);
    expect(await storedSettings(dataDir, new MemoryLogger())).toEqual({});

    fs.writeFileSync(path.join(dataDir, 'settings.json'), '{"rateLimit": "fast"}');
    const logger = new MemoryLogger();
    expect(await storedSettings(dataDir, logger)).toEqual({});
    expect(logger.lines.map((l) => l.message).join('\n')).toMatch(
      /settings\.json has a "rateLimit" that is neither "off" nor a whole number.*the default rate limits apply/,
    );
  });

  it('keeps MCP profiles in settings.json, and refuses a malformed one at the cost of the stored settings only', async () => {
    const dataDir = tempDir();
    const store = new SettingsStore(dataDir, new MemoryLogger());
    store.setProfile('notes', { tools: ['vault', 'echo'], search: true });
    expect(JSON.parse(fs.readFileSync(path.join(dataDir, 'settings.json'), 'utf8'))).toEqual({
      mcpProfiles: { notes: { tools: ['vault', 'echo'], search: true } },
    });
    store.setProfile('notes', undefined);
    expect(await storedSettings(dataDir, new MemoryLogger())).toEqual({});
    fs.writeFileSync(path.join(dataDir, 'settings.json'), '{"mcpProfiles": {"Bad Name": {"tools": ["vault"]}}}');
    const logger = new MemoryLogger();
    expect(await storedSettings(dataDir, logger)).toEqual({});
    expect(logger.lines.map((l) => l.message).join('\n')).toMatch(/settings\.json has "mcpProfiles" that are not well-formed/);
  });

  it('refuses a database setting it cannot use without repeating it, and touches no file', async () => {
    const dataDir = tempDir();
    process.env.MEMO_DATABASE_URL = 'mysql://memo:hunter2-secret@db/memo';
    let used = 0;
    const use = () => void used++;
    const failure = await withCommandStore(
      dataDir,
      new MemoryLogger(),
      (db) => new PermissionStore(path.join(dataDir, 'permissions.json'), new MemoryLogger(), db),
      use,
    ).then(
      () => null,
      (err: Error) => err,
    );
    expect(failure?.message).toMatch(/^MEMO_DATABASE_URL is not a usable PostgreSQL URL: its scheme is "mysql"/);
    expect(failure?.message).not.toContain('hunter2');
    expect(used).toBe(0);
    expect(fs.readdirSync(dataDir)).toEqual([]);
  });
});
