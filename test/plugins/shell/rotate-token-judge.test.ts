/**
 * Rotating memo serve's MCP token is a person's act: run_command refuses `memo serve rotate-token`
 * (which hands out the new token) in the spellings a tool might use, before anyone is asked, even
 * with run_command allowed forever. The judge's own table (test/kernel/sandbox/judge/cases.ts) has
 * the plain spelling; this goes through the tool.
 */
import * as path from 'node:path';
import { makeKernel, type Fixture } from '../../helpers/kernel-fixture.js';

describe('run_command and memo serve rotate-token', () => {
  let fx: Fixture;

  beforeAll(async () => {
    fx = makeKernel({ packs: [] });
    await fx.kernel.loadPacks([{ dir: path.resolve('plugins'), source: 'builtin' }]);
    fx.kernel.permissions.set({ tool: 'run_command', decision: 'allow', plugin: 'shell', scope: 'forever' }, new Date());
  });
  afterAll(() => fx.close());

  it.each([
    'memo serve rotate-token',
    'memo --data ./data serve rotate-token --json',
    'node bin/memo serve --json rotate-token',
    'npx memo serve -- rotate-token',
    'cd /tmp && memo serve "rotate-token"',
    // serve's own options that take a value, which the judge cannot tell from a subcommand
    'memo serve --port 5 rotate-token',
    'memo serve --host 127.0.0.1 --token-file t rotate-token',
  ])('refuses %s as person-settings, asking nobody', async (command) => {
    const r = await fx.kernel.invoke({ tool: 'run_command', args: { command }, caller: { kind: 'agent' } });
    expect(!r.ok && r.error).toMatchObject({ code: 'COMMAND_BLOCKED', message: expect.stringContaining('person-settings') });
    expect(!r.ok && r.error.message).toContain('`memo serve rotate-token` is a command only a person may run');
    expect(fx.prompter.asked).toHaveLength(0);
  });
});
