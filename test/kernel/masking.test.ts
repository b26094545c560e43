import { isSensitiveKey, maskArgs, maskText, MASK } from '../../kernel/audit/masking.js';

describe('secret masking', () => {
  it.each(['apiKey', 'api_key', 'x-api-key', 'API_KEY', 'token', 'accessToken', 'client_secret', 'password', 'Passwd', 'authorization', 'Auth', 'cookie', 'set-cookie', 'credentials', 'privateKey'])(
    'treats the key name %s as sensitive',
    (name) => expect(isSensitiveKey(name)).toBe(true),
  );

  it.each(['keyword', 'max_tokens', 'maxTokens', 'author', 'path', 'monkey', 'text', 'command'])('leaves the key name %s alone', (name) =>
    expect(isSensitiveKey(name)).toBe(false),
  );

  it('masks sensitive keys in nested objects and arrays, case-insensitively', () => {
    const { masked, secrets } = maskArgs({ url: 'u', headers: { Authorization: 'Basic Zm9vOmJhcg==', list: [{ PASSWORD: 'p4ssw0rd!' }] } });
    expect(masked).toEqual({ url: 'u', headers: { Authorization: MASK, list: [{ PASSWORD: MASK }] } });
    expect(secrets).toEqual(expect.arrayContaining(['Basic Zm9vOmJhcg==', 'p4ssw0rd!']));
  });

  it('masks a tool\'s declared sensitiveArgs, by name and by dotted path', () => {
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
