import { isLoopback } from '../../../kernel/util/is-loopback.js';

describe('isLoopback', () => {
  it.each([
    'localhost',
    'LOCALHOST',
    'localhost:11434',
    '127.0.0.1',
    '127.1.2.3',
    '127.255.255.254',
    '127.0.0.1:8080',
    '::1',
    '[::1]',
    '[::1]:1234',
    '0:0:0:0:0:0:0:1',
    '::ffff:127.0.0.1',
    '[::ffff:127.0.0.2]',
    '::ffff:7f00:1',
    'http://127.0.0.1:11434/v1',
    'http://localhost/v1',
    'https://[::1]:8443/path',
    'http://user@127.0.0.1/',
    ' 127.0.0.1 ',
  ])('accepts %s as this machine', (host) => {
    expect(isLoopback(host)).toBe(true);
  });

  it.each([
    ['a name that starts like a loopback address', '127.0.0.1.evil.com'],
    ['a name under localhost', 'localhost.evil.com'],
    ['a URL to a name that starts like one', 'http://127.0.0.1.evil.com/'],
    ['a URL to a name under localhost', 'http://localhost.evil.com:11434/v1'],
    ['a URL whose user part looks loopback', 'http://127.0.0.1@evil.com/'],
    ['a URL with a backslash before the user part', 'http://evil.com\\@127.0.0.1/'],
    ['the short IPv4 form', '127.1'],
    ['the short IPv4 form in a URL', 'http://127.1:8080/'],
    ['the hexadecimal IPv4 form', '0x7f.0.0.1'],
    ['the hexadecimal IPv4 form in a URL', 'http://0x7f.1/'],
    ['the decimal IPv4 form in a URL', 'http://2130706433/'],
    ['a percent-encoded host', 'http://%31%32%37.0.0.1/'],
    ['the fully-qualified localhost', 'localhost.'],
    ['the unspecified IPv4 address', '0.0.0.0'],
    ['the unspecified IPv6 address', '::'],
    ['a private address', '192.168.1.2'],
    ['another IPv6 address', '::2'],
    ['an IPv4-mapped address elsewhere', '::ffff:10.0.0.1'],
    ['a public name', 'example.com'],
    ['an empty string', ''],
    ['a port alone', ':8080'],
    ['a host with a bad port', 'localhost:http'],
    ['not a URL', 'http://'],
  ])('refuses %s', (_what, host) => {
    expect(isLoopback(host)).toBe(false);
  });
});
