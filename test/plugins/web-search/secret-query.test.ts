/**
 * web_search sends its query to a third party: a query that carries a secret (a key the kernel
 * knows, in any encoding, or a credential-shaped value) is refused with VALIDATION before anything
 * is sent, and the loopback stand-in for DuckDuckGo receives no request. Ordinary queries about
 * keys and passwords still search.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ToolContext, ToolImplementation, ToolResult } from '../../../kernel/index.js';
import { makeKernel, type Fixture } from '../../helpers/kernel-fixture.js';
import { DdgServer } from './ddg-server.js';

const ENV_NAME = 'MEMO_T_SEARCH_TOKEN';
const ENV_SECRET = `tok-${randomBytes(10).toString('hex')}`;
const PROVIDER_KEY = `sk-stored-${randomBytes(12).toString('hex')}`;

const error = (r: ToolResult) => {
  if (r.ok) throw new Error(`expected an error, got ${JSON.stringify(r.value).slice(0, 200)}`);
  return r.error;
};

describe('web_search refuses queries that carry secrets', () => {
  let fx: Fixture;
  let ddg: DdgServer;
  const search = (query: string) => fx.kernel.invoke({ tool: 'web_search', args: { query }, caller: { kind: 'agent' } });

  beforeAll(() => {
    process.env[ENV_NAME] = ENV_SECRET;
  });
  afterAll(() => {
    delete process.env[ENV_NAME];
  });
  beforeEach(async () => {
    ddg = await DdgServer.start();
    fx = makeKernel({ packs: [] });
    await fx.kernel.loadPacks([{ dir: path.resolve('plugins'), source: 'builtin' }]);
    fx.kernel.packs.setConfig('web-search', { endpoint: ddg.url, retries: 0, timeoutMs: 5000 });
    fx.kernel.providerSettings.put({ name: 'stored', kind: 'openai-compatible', apiKey: PROVIDER_KEY });
  });
  afterEach(async () => {
    await fx.close();
    await ddg.close();
  });

  const b64 = (s: string) => Buffer.from(s).toString('base64');
  it.each([
    ['an environment secret', () => `why does ${ENV_SECRET} fail`, /environment variable MEMO_T_SEARCH_TOKEN/],
    ['an environment secret, base64-encoded', () => `decode ${b64(ENV_SECRET)}`, /MEMO_T_SEARCH_TOKEN \(base64-encoded\)/],
    ['an environment secret inside a longer base64 text', () => `what is ${b64(`user=${ENV_SECRET}`)}`, /MEMO_T_SEARCH_TOKEN \(base64-encoded\)/],
    ['an environment secret, hex-encoded', () => `hex ${Buffer.from(ENV_SECRET).toString('hex')}`, /hex-encoded/],
    ['a stored provider key', () => `is ${PROVIDER_KEY} valid`, /a stored provider API key/],
    ['a stored provider key, URL-safe base64', () => `x ${Buffer.from(`k:${PROVIDER_KEY}`).toString('base64url')}`, /stored provider API key/],
    ['a Stripe live key', () => 'sk_live_4eC39HqLyjWDarjtT1zdp7dc refund api', /secretlint stripe/],
    ['a GitHub token', () => 'ghp_0123456789abcdefghijABCDEFGHIJ012345 scopes', /credential/],
    ['an AWS access key id', () => 'AKIAZ3MSJV4WEXAMPLQ7 owner lookup', /credential/],
    ['a Mailgun key', () => 'mailgun key-3ax6xnjp29jd6fds4gc373sgvjxteol0 quota', /credential/],
    ['a Slack webhook', () => 'https://hooks.slack.com/services/T01234567/B01234567/abcdefghijABCDEFGHIJ1234 not working', /credential/],
    ['a password in a URL', () => 'postgres://app:pgS3cretPass@db.internal/shop connection refused', /credential/],
    ['a JWT', () => 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U decode', /credential/],
    ['a password assignment', () => 'error with DB_PASSWORD=Hunter22xyz in compose', /credential/],
    ['a command line credential', () => 'mysql -uroot -pS3cretPass1 access denied', /credential/],
  ])('refuses a query with %s and sends nothing', async (_what, query, says) => {
    const q = query();
    const e = error(await search(q));
    expect(e.code).toBe('VALIDATION');
    expect(e.message).toMatch(says);
    expect(e.message).toMatch(/nothing was sent/);
    expect(e.message).not.toContain(ENV_SECRET);
    expect(e.message).not.toContain(PROVIDER_KEY);
    expect(ddg.received).toHaveLength(0);
    // The audit line has the query with the secret masked.
    const file = path.join(fx.dataDir, 'agent-audit.jsonl');
    for (const secret of [ENV_SECRET, PROVIDER_KEY]) expect(spawnSync('grep', ['-c', '-F', secret, file], { encoding: 'utf8' }).stdout.trim()).toBe('0');
    expect(fs.readFileSync(file, 'utf8')).toContain('"web_search"');
  });

  it.each([
    'USD to TRY exchange rate today',
    'reset password: steps for gmail',
    'curl -u user:pass syntax',
    'what does the sk_live prefix mean in stripe',
    'mysql -p option prompts for password',
    'PWD environment variable linux',
    'github token ghp_ format length',
    'api key rotation best practices 2026',
  ])('searches %j as usual', async (query) => {
    const r = await search(query);
    expect(r.ok ? 'ok' : `${r.error.code}: ${r.error.message}`).toBe('ok');
    expect(ddg.received).toHaveLength(1);
    expect(ddg.request(0).form.get('q')).toBe(query);
  });

  it('refuses an over-long query in the pack itself too (400 characters), sending nothing', async () => {
    const mod = (await import('../../../plugins/web-search/index.js')) as { tools: Record<string, ToolImplementation>; QUERY_MAX: number };
    expect(mod.QUERY_MAX).toBe(400);
    const run = mod.tools.web_search as (args: Record<string, unknown>, ctx: ToolContext) => Promise<unknown>;
    const ctx = {
      signal: new AbortController().signal,
      config: { endpoint: ddg.url, retries: 0, timeoutMs: 5000 },
      progress: () => {},
    } as unknown as ToolContext;
    await expect(run({ query: 'word '.repeat(100) }, ctx)).rejects.toMatchObject({ code: 'VALIDATION', message: expect.stringMatching(/at most 400/) });
    expect(ddg.received).toHaveLength(0);
  });
});
