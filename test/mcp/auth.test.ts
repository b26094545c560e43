import { bearerToken, generateToken, hostAllowed, isLoopbackAddress, originAllowed, tokensEqual } from '../../kernel/mcp/auth.js';

describe('MCP endpoint auth helpers', () => {
  it('makes 256-bit base64url tokens, a new one each time', () => {
    const tokens = new Set(Array.from({ length: 100 }, generateToken));
    expect(tokens.size).toBe(100);
    for (const t of tokens) {
      expect(t).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(Buffer.from(t, 'base64url')).toHaveLength(32);
    }
  });

  it('compares tokens exactly, whatever their lengths', () => {
    const t = generateToken();
    expect(tokensEqual(t, t)).toBe(true);
    expect(tokensEqual(`${t}x`, t)).toBe(false);
    expect(tokensEqual(t.slice(1), t)).toBe(false);
    expect(tokensEqual('', t)).toBe(false);
    expect(tokensEqual(undefined, t)).toBe(false);
  });

  it('reads the token of a Bearer header only', () => {
    expect(bearerToken('Bearer abc')).toBe('abc');
    expect(bearerToken('bearer  abc ')).toBe('abc');
    expect(bearerToken('Basic abc')).toBeUndefined();
    expect(bearerToken('Bearer')).toBeUndefined();
    expect(bearerToken('Bearer a b')).toBeUndefined();
    expect(bearerToken(undefined)).toBeUndefined();
  });

  it('accepts loopback Host headers, any port, and refuses everything else', () => {
    for (const h of ['127.0.0.1', '127.0.0.1:8080', '127.0.0.2', 'localhost', 'LOCALHOST:1', '[::1]', '[::1]:3000', '[::ffff:127.0.0.1]:80'])
      expect(hostAllowed(h)).toBe(true);
    for (const h of [
      'evil.example',
      'evil.example:80',
      'localhost.evil.example',
      '127.0.0.1.nip.io',
      '127.1',
      '10.0.0.1',
      '',
      '[::1',
      'localhost:x',
      undefined,
    ]) {
      expect(hostAllowed(h)).toBe(false);
    }
  });

  it('passes requests without Origin, accepts loopback origins, refuses foreign and opaque ones', () => {
    expect(originAllowed(undefined)).toBe(true);
    for (const o of ['http://localhost:5173', 'https://127.0.0.1', 'http://[::1]:8080']) expect(originAllowed(o)).toBe(true);
    for (const o of [
      'https://evil.example',
      'null',
      'file://',
      'chrome-extension://abc',
      'http://localhost.evil.example',
      'http://127.1:8080',
      'http://0x7f.1',
    ])
      expect(originAllowed(o)).toBe(false);
  });

  it('knows which bind addresses stay on this machine', () => {
    for (const a of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1']) expect(isLoopbackAddress(a)).toBe(true);
    for (const a of ['0.0.0.0', '::', '192.168.1.2', 'example.com']) expect(isLoopbackAddress(a)).toBe(false);
  });
});
