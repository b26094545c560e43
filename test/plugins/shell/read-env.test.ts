/**
 * read_env and run_command against a table of environment variables: secret names masked whole,
 * secret-shaped values masked where they stand (a URL keeps its host), plain paths and ordinary
 * settings shown, and the working directory never masked.
 */
import * as path from 'node:path';
import type { ToolResult } from '../../../kernel/tools/contract.js';
import { makeKernel, type Fixture } from '../../helpers/kernel-fixture.js';

const M = '[masked]';
const value = (r: ToolResult): any => {
  if (!r.ok) throw new Error(`${r.error.code}: ${r.error.message}`);
  return r.value;
};

/** [name, value, what read_env shows: 'masked' (whole value), 'shown' (as is), or the exact text] */
const TABLE: Array<[string, string, string]> = [
  // secret names: the whole value
  ['PGPASSWORD', 'pgS3cret!', 'masked'],
  ['DB_PASS', 'hunter2hunter2', 'masked'],
  ['MYSQL_PWD', 'myS3cretPwd', 'masked'],
  ['SMTP_PASSWORD', 'x9y8z7w6', 'masked'],
  ['ADMIN_PWD', 'adm1nPwd', 'masked'],
  ['DOCKER_PASS', 'd0ckerPass', 'masked'],
  ['SENTRY_DSN', 'https://abcdef0123456789abcdef0123456789@o1.ingest.sentry.io/1', 'masked'],
  ['DATABASE_DSN', 'pgsql:host=db;dbname=shop', 'masked'],
  ['SLACK_WEBHOOK_URL', 'https://hooks.slack.com/services/T01234567/B01234567/abcdefghijABCDEFGHIJ1234', 'masked'],
  ['DISCORD_WEBHOOK', 'https://discord.com/api/webhooks/123/abcdefghijklmnopqrstuv', 'masked'],
  ['TEAMS_HOOK_URL', 'https://contoso.webhook.office.com/webhookb2/abc', 'masked'],
  ['GITHUB_TOKEN', 'ghp_0123456789abcdefghijABCDEFGHIJ012345', 'masked'],
  ['NPM_TOKEN', 'npm_abcdefghijklmnopqrstuvwxyz0123456789', 'masked'],
  ['OPENAI_API_KEY', 'sk-proj-abcdefghijklmnopqrstuvwx', 'masked'],
  ['ANTHROPIC_API_KEY', 'sk-ant-api03-abcdefghijklmnop', 'masked'],
  ['AWS_SECRET_ACCESS_KEY', 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYzzzzzzzzzz', 'masked'],
  ['AWS_SESSION_TOKEN', 'FwoGZXIvYXdzEBYaDabcdef', 'masked'],
  ['STRIPE_SECRET_KEY', 'sk_live_4eC39HqLyjWDarjtT1zdp7dc', 'masked'],
  ['MAILGUN_API_KEY', 'key-3ax6xnjp29jd6fds4gc373sgvjxteol0', 'masked'],
  ['JWT_SECRET', 'jwt-signing-secret', 'masked'],
  ['NEXTAUTH_SECRET', 'nextauthsecretvalue', 'masked'],
  ['CLIENT_SECRET', 'cl1entS3cret', 'masked'],
  ['PASSPHRASE', 'correct horse battery', 'masked'],
  ['HF_TOKEN', 'hf_abcdefghijklmnopqrstuvwxyzabcdefgh', 'masked'],
  ['api_key', 'lowercase-key-value', 'masked'],
  ['SHORT_PASS', 'abc', 'masked'],
  // secret shapes under innocent names: masked where they stand
  ['REDIS_URL', 'redis://:r3disPassw0rd@cache:6379/0', `redis://:${M}@cache:6379/0`],
  ['DATABASE_URL', 'postgres://app:pgS3cretPass@db:5432/shop', `postgres://app:${M}@db:5432/shop`],
  ['AMQP_URL', 'amqp://guest:rabb1tS3cret@mq:5672/', `amqp://guest:${M}@mq:5672/`],
  ['PAYMENT_CONFIG', 'sk_live_4eC39HqLyjWDarjtT1zdp7dc', M],
  ['MAIL_SETTINGS', 'key-3ax6xnjp29jd6fds4gc373sgvjxteol0', M],
  ['NOTIFY', 'https://hooks.slack.com/services/T01234567/B01234567/abcdefghijABCDEFGHIJ1234', M],
  ['CHAT_BRIDGE', 'https://discord.com/api/webhooks/123456789/abcdefghijklmnopqrstuv', `https://discord.com/api/webhooks/123456789/${M}`],
  ['DEPLOY_NOTE', 'uses ghp_0123456789abcdefghijABCDEFGHIJ012345', `uses ${M}`],
  ['AWS_ACCESS_KEY_ID', 'AKIAZ3MSJV4WEXAMPLQ7', M],
  // not secrets: shown as they are
  ['PWD', '/home/me/project', 'shown'],
  ['OLDPWD', '/home/me', 'shown'],
  ['HOME', '/home/me', 'shown'],
  ['SHELL', '/bin/bash', 'shown'],
  ['SSH_AUTH_SOCK', '/tmp/ssh-XXXXabcd/agent.4242', 'shown'],
  ['KEY_FILE', '/home/me/.ssh/id_ed25519', 'shown'],
  ['PASSWORD_FILE', '/run/secrets/db_password', 'shown'],
  ['AUTH_URL', 'https://auth.example.com/login', 'shown'],
  ['AUTH_METHOD', 'basic', 'shown'],
  ['TOKEN_COUNT', '12', 'shown'],
  ['MAX_TOKENS', '4096', 'shown'],
  ['KEYWORD', 'lorem', 'shown'],
  ['MONKEY', 'banana', 'shown'],
  ['PASS_THROUGH', '1', 'shown'],
  ['GIT_ASKPASS', '/usr/lib/git-core/git-gui--askpass', 'shown'],
  ['PGPASSFILE', '/home/me/.pgpass', 'shown'],
  ['CACHE_URL', 'redis://cache:6379/0', 'shown'],
  ['KEYCLOAK_URL', 'https://kc.example.com/realms/main', 'shown'],
  ['COOKIE_NAME', 'sid', 'shown'],
  ['XDG_SESSION_ID', '3', 'shown'],
  ['TOKENIZERS_PARALLELISM', 'false', 'shown'],
  ['LS_COLORS', 'rs=0:di=01;34:ln=01;36', 'shown'],
  ['NODE_ENV', 'production', 'shown'],
  ['JAVA_HOME', '/usr/lib/jvm/java-17', 'shown'],
];

/** Variables the test sets; PWD, OLDPWD, HOME and SHELL are left as the process has them (commands need them), and set only where the process has none (CI runs without OLDPWD). */
const KEEP = new Set(['PWD', 'OLDPWD', 'HOME', 'SHELL']);

describe('read_env and run_command with a table of environment variables', () => {
  let fx: Fixture;
  const saved = new Map<string, string | undefined>();

  beforeAll(() => {
    for (const [name, v] of TABLE) {
      saved.set(name, process.env[name]);
      if (!KEEP.has(name) || process.env[name] === undefined) process.env[name] = v;
    }
  });
  afterAll(() => {
    for (const [name, v] of saved) {
      if (v === undefined) delete process.env[name];
      else process.env[name] = v;
    }
  });
  beforeEach(async () => {
    fx = makeKernel({ packs: [] });
    await fx.kernel.loadPacks([{ dir: path.resolve('plugins'), source: 'builtin' }]);
    fx.prompter.setFallback('allow-once');
  });
  afterEach(() => fx.close());

  it('has at least 40 rows, with guards against false positives', () => {
    expect(TABLE.length).toBeGreaterThanOrEqual(40);
    expect(TABLE.filter(([, , e]) => e === 'shown').length).toBeGreaterThanOrEqual(20);
  });

  it.each(TABLE)('read_env shows %s as expected', async (name, v, expected) => {
    const r = value(await fx.kernel.invoke({ tool: 'read_env', args: { names: [name] }, caller: { kind: 'agent' } }));
    const actual = KEEP.has(name) ? process.env[name]! : v;
    const want = expected === 'masked' ? M : expected === 'shown' ? actual : expected;
    expect(r.variables).toEqual({ [name]: want });
    expect(r.masked).toBe(want === actual ? 0 : 1);
  });

  it('counts what it masked', async () => {
    const names = TABLE.map(([n]) => n);
    const r = value(await fx.kernel.invoke({ tool: 'read_env', args: { names }, caller: { kind: 'agent' } }));
    expect(r.count).toBe(names.length);
    expect(r.masked).toBe(TABLE.filter(([, , e]) => e !== 'shown').length);
    expect(r.summary).toBe(`${names.length} variables, ${r.masked} masked`);
  });

  it('keeps the working directory readable in run_command output, and masks secret values there', async () => {
    const r = value(
      await fx.kernel.invoke({
        tool: 'run_command',
        args: { command: 'pwd; echo "$PWD"; printenv DB_PASS; echo "$REDIS_URL"; echo "$HOME"' },
        caller: { kind: 'agent' },
      }),
    );
    expect(r.stdout).toBe(`${fx.kernel.config.root}\n${fx.kernel.config.root}\n${M}\nredis://:${M}@cache:6379/0\n/tmp/home\n`);
  });
});
