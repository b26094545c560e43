import { isSensitiveKey, maskArgs, maskText, MASK } from '../../kernel/secrets/masking.js';

describe('secret masking', () => {
  it.each([
    'apiKey',
    'api_key',
    'x-api-key',
    'API_KEY',
    'token',
    'accessToken',
    'client_secret',
    'password',
    'Passwd',
    'authorization',
    'Auth',
    'cookie',
    'set-cookie',
    'credentials',
    'privateKey',
  ])('treats the key name %s as sensitive', (name) => expect(isSensitiveKey(name)).toBe(true));

  it.each(['keyword', 'max_tokens', 'maxTokens', 'author', 'path', 'monkey', 'text', 'command'])('leaves the key name %s alone', (name) =>
    expect(isSensitiveKey(name)).toBe(false),
  );

  it('masks sensitive keys in nested objects and arrays, case-insensitively', () => {
    const { masked, secrets } = maskArgs({ url: 'u', headers: { Authorization: 'Basic Zm9vOmJhcg==', list: [{ PASSWORD: 'p4ssw0rd!' }] } });
    expect(masked).toEqual({ url: 'u', headers: { Authorization: MASK, list: [{ PASSWORD: MASK }] } });
    expect(secrets).toEqual(expect.arrayContaining(['Basic Zm9vOmJhcg==', 'p4ssw0rd!']));
  });

  it("masks a tool's declared sensitiveArgs, by name and by dotted path", () => {
    const { masked } = maskArgs({ phone: '+90 555 000', msg: { body: 'hello there', to: 'x' } }, ['phone', 'msg.body']);
    expect(masked).toEqual({ phone: MASK, msg: { body: MASK, to: 'x' } });
  });

  it.each([
    ['a bearer token in a header string', 'curl -H "Authorization: Bearer abcdef0123456789xyz" https://x', 'abcdef0123456789xyz'],
    ['an sk- key', 'use sk-proj-AAAAAAAAAAAAAAAAAAAAAAAA please', 'sk-proj-AAAAAAAAAAAAAAAAAAAAAAAA'],
    ['an Anthropic key', 'sk-ant-api03-abcdefghijklmnopqrstuvwxyz', 'sk-ant-api03-abcdefghijklmnopqrstuvwxyz'],
    ['a GitHub token', 'ghp_0123456789abcdefghijABCDEFGHIJ012345', 'ghp_0123456789abcdefghijABCDEFGHIJ012345'],
    ['an AWS access key id', 'AKIAIOSFODNN7EXAMPLE', 'AKIAIOSFODNN7EXAMPLE'],
    ['a JWT', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U', 'dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U'],
    ['credentials in a URL', 'git clone https://alice:s3cretpass@example.com/r.git', 's3cretpass'],
    ['an env assignment', 'OPENAI_API_KEY=abc123def456 node x.js', 'abc123def456'],
    ['a private key block', '-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----', 'MIIEabc'],
  ])('masks %s by its shape, wherever it stands', (_what, text, secret) => {
    const { masked, secrets } = maskArgs({ command: text });
    expect(JSON.stringify(masked)).not.toContain(secret);
    expect(secrets.length).toBeGreaterThan(0);
  });

  it('scrubs known secret values from free text such as error messages', () => {
    expect(maskText('login failed for password hunter22', ['hunter22'])).toBe(`login failed for password ${MASK}`);
  });

  it('leaves ordinary text untouched', () => {
    const text = 'npm test -- --token-count 5 && echo keyword';
    expect(maskArgs({ command: text }).masked).toEqual({ command: text });
  });
});

describe('secret names', () => {
  it.each([
    'PGPASSWORD',
    'DB_PASS',
    'MYSQL_PWD',
    'SMTP_PASSWORD',
    'SENTRY_DSN',
    'DSN',
    'SLACK_WEBHOOK_URL',
    'DISCORD_WEBHOOK',
    'TEAMS_HOOK_URL',
    'GITHUB_TOKEN',
    'npm_config__authToken',
    'NEXTAUTH_SECRET',
    'SECRET_KEY_BASE',
    'PASSPHRASE',
    'csrfToken',
    'dbPassword',
    'pass',
  ])('treats %s as a secret name', (name) => expect(isSensitiveKey(name)).toBe(true));

  it.each([
    'PWD',
    'OLDPWD',
    'pwd',
    'HOME',
    'PATH',
    'SHELL',
    'SSH_AUTH_SOCK',
    'KEY_FILE',
    'PASSWORD_FILE',
    'AUTH_URL',
    'AUTH_METHOD',
    'TOKEN_COUNT',
    'MAX_TOKENS',
    'PASS_THROUGH',
    'GIT_ASKPASS',
    'PGPASSFILE',
    'TOKENIZERS_PARALLELISM',
    'XDG_SESSION_ID',
    'COOKIE_NAME',
    'keyboard',
    'hotkeyLabel',
  ])('does not treat %s as a secret name', (name) => expect(isSensitiveKey(name)).toBe(false));
});

describe('value shapes', () => {
  it.each([
    ['a Stripe live key (secretlint)', 'charge with sk_live_4eC39HqLyjWDarjtT1zdp7dc now', 'sk_live_4eC39HqLyjWDarjtT1zdp7dc'],
    ['a Stripe restricted key (secretlint)', 'rk_live_51HcXJ2eZvKYlo2C0abcdefghijkl', 'rk_live_51HcXJ2eZvKYlo2C0abcdefghijkl'],
    ['an npm token (secretlint)', '//registry.npmjs.org/ npm_abcdefghijklmnopqrstuvwxyz0123456789', 'npm_abcdefghijklmnopqrstuvwxyz0123456789'],
    ['a SendGrid key (secretlint)', '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', 'TwL2iGABf9DHoTf-09kqeF8tAmbihYzrnopKc1s5cr1'],
    ['a Shopify token (secretlint)', 'shpat_abcdefabcdefabcdefabcdefabcdefab', 'shpat_abcdefabcdefabcdefabcdefabcdefab'],
    ['a GitLab token (secretlint)', 'glpat-abcdefghij0123456789', 'glpat-abcdefghij0123456789'],
    ['a Slack incoming webhook', 'https://hooks.slack.com/services/T01234567/B01234567/abcdefghijABCDEFGHIJ1234', 'abcdefghijABCDEFGHIJ1234'],
    ['a Discord webhook', 'post to https://discord.com/api/webhooks/123456789012/abcDEF_ghiJKL-mnoPQR1234', 'abcDEF_ghiJKL-mnoPQR1234'],
    ['a Mailgun key', 'MG=key-3ax6xnjp29jd6fds4gc373sgvjxteol0', 'key-3ax6xnjp29jd6fds4gc373sgvjxteol0'],
    ['a Sentry DSN key', 'https://abcdef0123456789abcdef0123456789@o11.ingest.sentry.io/42', 'abcdef0123456789abcdef0123456789'],
    ['a database URL password (secretlint, narrowed)', 'mysql://app:Zx81qq-pass@db:3306/shop', 'Zx81qq-pass'],
    ['a Redis URL password with no user', 'redis://:r3disPassw0rd@cache:6379/0', 'r3disPassw0rd'],
    ['an AWS access key id', 'AKIAZ3MSJV4WEXAMPLQ7 in use', 'AKIAZ3MSJV4WEXAMPLQ7'],
    ['an AWS secret key (secretlint)', 'aws_secret_access_key = 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', 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYzzzzzzzzzz'],
    ['a Hugging Face token (secretlint)', 'hf_abcdefghijklmnopqrstuvwxyzabcdefgh', 'hf_abcdefghijklmnopqrstuvwxyzabcdefgh'],
    ['a JSON field with a secret name', '{"client_secret": "c0ffee-b4be-1234"}', 'c0ffee-b4be-1234'],
    [
      'a bare AWS secret after its key id (aws iam create-access-key --output text)',
      'ACCESSKEY\tAKIAZ3MSJV4WEXAMPLQ7\t2026-12-06T04:00:00+00:00\twJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\tActive\tci-bot',
      'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
    ],
    [
      'a bare AWS session secret on the next line of the console CSV',
      'Access key ID,Secret access key\nASIAZ3MSJV4WEXAMPLQ7,Rk7mA9/xQ2+vB8nT4pL6sD1fG3hJ5kZ0cW9eY7uI',
      'Rk7mA9/xQ2+vB8nT4pL6sD1fG3hJ5kZ0cW9eY7uI',
    ],
    [
      'a bare AWS secret before its key id',
      'secret Rk7mA9/xQ2+vB8nT4pL6sD1fG3hJ5kZ0cW9eY7uI for AKIAZ3MSJV4WEXAMPLQ7',
      'Rk7mA9/xQ2+vB8nT4pL6sD1fG3hJ5kZ0cW9eY7uI',
    ],
    ['a Google OAuth client secret', 'client GOCSPX-abcdefghijklmnopqrstuvwx1234 ok', 'GOCSPX-abcdefghijklmnopqrstuvwx1234'],
    ['a Google refresh token', 'refresh: 1//0gabcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTU', '1//0gabcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTU'],
    ['a DigitalOcean token', `doctl auth init dop_v1_${'a1'.repeat(32)}`, `dop_v1_${'a1'.repeat(32)}`],
    ['a Twilio API key', 'created SK0123456789abcdef0123456789abcdef', 'SK0123456789abcdef0123456789abcdef'],
    ['a Databricks token', 'token dapi0123456789abcdef0123456789abcdef', 'dapi0123456789abcdef0123456789abcdef'],
  ])('masks %s', (_what, text, secret) => {
    const masked = maskText(text);
    expect(masked).not.toContain(secret);
    expect(masked).toContain(MASK);
  });

  it('leaves a 40-hex git hash beside an AWS key id alone, and plain text around both', () => {
    const text = 'AKIAZ3MSJV4WEXAMPLQ7 rotated in commit 3f786850e387550fdab836ed7e6dc881de23001b';
    expect(maskText(text)).toBe(`${MASK} rotated in commit 3f786850e387550fdab836ed7e6dc881de23001b`);
  });

  it('keeps the host and database of a connection string readable', () => {
    expect(maskText('postgres://app:pgS3cretPass@db.internal:5432/shop')).toBe(`postgres://app:${MASK}@db.internal:5432/shop`);
  });

  it('does not let a secretlint-disable comment switch masking off', () => {
    expect(maskText('// secretlint-disable\nsk_live_4eC39HqLyjWDarjtT1zdp7dc')).not.toContain('sk_live_');
  });

  it.each([
    'see https://example.com/docs?page=2#top',
    'C:\\Users\\me\\project and /home/me/project/src/index.ts',
    'max_tokens: 4096, keyword: lorem, monkey: banana',
    'PWD=/home/me/project OLDPWD=/home/me HOME=/home/me',
    'the password policy: twelve characters',
    'commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 by alice',
    'redis://cache:6379/0 and postgres://db:5432/shop',
  ])('leaves %s alone', (text) => expect(maskText(text)).toBe(text));
});
