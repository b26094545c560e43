/**
 * KnownSecrets on its own: which values it knows, the forms it matches, and when it notices a change.
 */
import { randomBytes } from 'node:crypto';
import { base64Forms, environmentSecrets, KnownSecrets, MIN_SECRET } from '../../../kernel/secrets/known-secrets.js';
import { MASK } from '../../../kernel/secrets/masking.js';

const SECRET = 'Zq8#vN2!mK5@xR7$';

/** Random bytes around the secret, base64-encoded as one stream: the secret starts `offset` bytes in. */
function embedded(secret: string, offset: number, url = false): string {
  const stream = Buffer.concat([randomBytes(offset), Buffer.from(secret), randomBytes(7)]);
  return stream.toString(url ? 'base64url' : 'base64');
}

/** Every way the remaining text could be decoded (4 alignments of each unmasked piece) still hides the secret. */
function revealsSecret(scrubbed: string, secret: string, url = false): boolean {
  return scrubbed
    .split(MASK)
    .some((piece) => [0, 1, 2, 3].some((drop) => Buffer.from(piece.slice(drop), url ? 'base64url' : 'base64').includes(Buffer.from(secret))));
}

describe('KnownSecrets', () => {
  const known = () => new KnownSecrets({ env: {}, extra: () => [SECRET] });

  it('scrubs a value as written, URL-encoded and in hex', () => {
    const k = known();
    const hex = Buffer.from(SECRET).toString('hex');
    const text = `a ${SECRET} b ${encodeURIComponent(SECRET)} c ${hex} d ${hex.toUpperCase()} e`;
    expect(k.scrub(text)).toBe(`a ${MASK} b ${MASK} c ${MASK} d ${MASK} e`);
  });

  it.each([0, 1, 2, 3, 4, 5])('scrubs the base64 of a value that starts %i bytes into a longer stream (standard and URL-safe)', (offset) => {
    const k = known();
    for (const url of [false, true]) {
      const stream = embedded(SECRET, offset, url);
      expect(revealsSecret(stream, SECRET, url)).toBe(true);
      const scrubbed = k.scrub(stream);
      expect(scrubbed).toContain(MASK);
      expect(revealsSecret(scrubbed, SECRET, url)).toBe(false);
    }
  });

  it('scrubs the base64 of the value on its own (the padding, which tells nothing, stays)', () => {
    const k = known();
    const b64 = Buffer.from(SECRET).toString('base64');
    const padding = /=*$/.exec(b64)![0];
    expect(k.scrub(`echo ${b64} | base64 -d`)).toBe(`echo ${MASK}${padding} | base64 -d`);
  });

  it('scrubs every string and key of a JSON value, at any depth', () => {
    const k = known();
    const value = { a: [`x${SECRET}y`, { [`key-${SECRET}`]: 1, deep: [[{ s: Buffer.from(SECRET).toString('base64') }]] }], n: 3, t: true, z: null };
    const out = k.scrubValue(value);
    expect(JSON.stringify(out)).not.toContain(SECRET);
    expect(out).toEqual({ a: [`x${MASK}y`, { [`key-${MASK}`]: 1, deep: [[{ s: expect.stringContaining(MASK) }]] }], n: 3, t: true, z: null });
  });

  it(`does not scrub values shorter than ${MIN_SECRET} characters (they would hit ordinary text)`, () => {
    const k = new KnownSecrets({ env: { DB_PASS: 'abc1234' } });
    expect(k.size).toBe(0);
    expect(k.scrub('abc1234 stays')).toBe('abc1234 stays');
  });

  it('does not scrub a short plain word (a default dev password such as postgres) from every result', () => {
    const k = new KnownSecrets({ env: { DB_PASSWORD: 'postgres', ADMIN_PASSWORD: 'CHANGEME', APP_SECRET: 'longerplainsecret', API_TOKEN: 'mixedCase1' } });
    expect(k.scrub('image: postgres, CHANGEME')).toBe('image: postgres, CHANGEME');
    expect(k.scrub('longerplainsecret mixedCase1')).toBe(`${MASK} ${MASK}`);
  });

  it('knows environment values by name, whole, and the secret part of other values; not PWD or paths', () => {
    const env = {
      PGPASSWORD: 'pgS3cretPass',
      DB_PASS: 'dbS3cretPass',
      SENTRY_DSN: 'https://abcdef0123456789abcdef0123456789@o1.ingest.sentry.io/1',
      REDIS_URL: 'redis://:r3disPassw0rd@cache:6379/0',
      BILLING: 'sk_live_4eC39HqLyjWDarjtT1zdp7dc',
      PWD: '/home/me/project',
      OLDPWD: '/home/me',
      HOME: '/home/me',
      PATH: '/usr/local/bin:/usr/bin',
      SSH_AUTH_SOCK: '/tmp/ssh-abc/agent.42',
    };
    expect(new Map(environmentSecrets(env))).toEqual(
      new Map([
        ['pgS3cretPass', 'env:PGPASSWORD'],
        ['dbS3cretPass', 'env:DB_PASS'],
        ['https://abcdef0123456789abcdef0123456789@o1.ingest.sentry.io/1', 'env:SENTRY_DSN'],
        ['r3disPassw0rd', 'env:REDIS_URL'],
        ['sk_live_4eC39HqLyjWDarjtT1zdp7dc', 'env:BILLING'],
      ]),
    );
    const k = new KnownSecrets({ env });
    expect(k.scrub('cd /home/me/project && echo $HOME')).toBe('cd /home/me/project && echo $HOME');
    expect(k.scrub('redis://:r3disPassw0rd@cache')).toBe(`redis://:${MASK}@cache`);
  });

  it('does not take the path of an existing file under a secret name for a secret', () => {
    const env = { GOOGLE_APPLICATION_CREDENTIALS: process.execPath, SERVICE_TOKEN: '/not/an/existing/path-0123' };
    expect(environmentSecrets(env)).toEqual([['/not/an/existing/path-0123', 'env:SERVICE_TOKEN']]);
  });

  it('rebuilds at once when the provider settings change, without waiting for the periodic check', () => {
    let version = 1;
    let list: Array<{ apiKey?: string; apiKeyEnv?: string; headers?: Record<string, string> }> = [];
    const k = new KnownSecrets({
      env: { MY_KEY_VAR: 'from-env-0123456789' },
      providers: {
        get version() {
          return version;
        },
        list: () => list,
      },
    });
    expect(k.scrub('stored-key-0123456789')).toBe('stored-key-0123456789');
    list = [
      { apiKey: 'stored-key-0123456789' },
      { apiKeyEnv: 'MY_KEY_VAR' },
      { headers: { 'X-Api-Key': 'header-key-0123456789', 'HTTP-Referer': 'https://memo.example' } },
    ];
    version++;
    expect(k.scrub('a stored-key-0123456789 b from-env-0123456789 c header-key-0123456789 d https://memo.example')).toBe(
      `a ${MASK} b ${MASK} c ${MASK} d https://memo.example`,
    );
    expect(k.find('x stored-key-0123456789')).toEqual({ form: 'plain', source: 'provider:key' });
  });

  it('tells what it found by form and source, never by value', () => {
    const k = known();
    expect(k.find(embedded(SECRET, 1))).toEqual({ form: 'base64', source: 'host' });
    expect(k.find('nothing here')).toBeNull();
    expect(JSON.stringify(k.find(SECRET))).not.toContain(SECRET);
  });

  it('cuts the base64 characters that depend on neighbouring bytes', () => {
    // 'abcdefghijkl' (12 bytes) at offset 1: the first two and the last character mix with other bytes.
    const forms = base64Forms('abcdefghijkl');
    for (const f of forms) expect(f.length).toBeGreaterThanOrEqual(MIN_SECRET);
    const inStream = (offset: number) => Buffer.concat([Buffer.alloc(offset, 0xff), Buffer.from('abcdefghijkl'), Buffer.alloc(3, 0xee)]).toString('base64');
    for (const offset of [0, 1, 2]) expect(forms.some((f) => inStream(offset).includes(f))).toBe(true);
  });
});
