/** The page reader, link decoder and text helpers on their own (the pipeline tests cover them end to end). */
import { capText, cleanText, readResultsPage, resultUrl } from '../../../plugins/web-search/ddg-page.js';
import { fixture } from './ddg-server.js';

describe('resultUrl', () => {
  it.each([
    ['//duckduckgo.com/l/?uddg=https%3A%2F%2Fexample.com%2Fa%3Fb%3D1%26c%3D2&rut=abc', 'https://example.com/a?b=1&c=2'],
    ['https://duckduckgo.com/l/?uddg=https%3A%2F%2Fexample.com%2F&rut=abc', 'https://example.com/'],
    ['http://duckduckgo.com/l/?uddg=http%3A%2F%2Fexample.com%2Fx', 'http://example.com/x'],
    ['https://html.duckduckgo.com/l/?uddg=https%3A%2F%2Fexample.com%2Fy', 'https://example.com/y'],
    ['/l/?uddg=https%3A%2F%2Fexample.com%2Fz&rut=1', 'https://example.com/z'],
    ['//duckduckgo.com/l/?uddg=https%3A%2F%2Fexample.com%2Fpath%2520with%2520escapes', 'https://example.com/path%20with%20escapes'],
    ['https://example.com/direct', 'https://example.com/direct'],
    ['//example.org/pr', 'https://example.org/pr'],
    [' \thttps://example.org/t\n', 'https://example.org/t'],
    ['https://duckduckgo.com/about', 'https://duckduckgo.com/about'],
    ['https://ünicode.example/ç', 'https://xn--nicode-2ya.example/%C3%A7'],
  ])('decodes %s to %s', (href, url) => {
    expect(resultUrl(href)).toBe(url);
  });

  it.each([
    [undefined],
    [''],
    ['javascript:alert(1)'],
    ['data:text/html,hi'],
    ['mailto:a@example.com'],
    ['//duckduckgo.com/l/?uddg=ftp%3A%2F%2Ffiles.example%2F'],
    ['//duckduckgo.com/l/?uddg=javascript%3Aalert(1)'],
    ['//duckduckgo.com/l/?uddg=not%20a%20url'],
    ['//duckduckgo.com/l/?rut=abc'],
    ['https://duckduckgo.com/y.js?ad_domain=x.example&u3=https%3A%2F%2Fwww.bing.com%2Faclick'],
    ['/html/?q=more'],
    ['https://duckduckgo.com/?q=more'],
    ['?q=x'],
    ['https://user:pw@example.com/'],
    [`https://example.com/${'a'.repeat(2100)}`],
  ])('refuses %s', (href) => {
    expect(resultUrl(href)).toBeNull();
  });
});

describe('cleanText', () => {
  it('collapses whitespace of every kind to single spaces and trims', () => {
    expect(cleanText('  a\n\tb\u00A0\u00A0c\u3000d\u2028e  ')).toBe('a b c d e');
  });

  it('removes control, bidi-override and zero-width characters but keeps joiners inside emoji', () => {
    expect(cleanText('a\u0000b\u0007c\u009Bd\u202Ee\u2066f\u200Bg\uFEFFh')).toBe('abcdefg h');
    expect(cleanText('👨\u200D👩\u200D👧')).toBe('👨‍👩‍👧');
  });

  it('drops broken surrogate halves and normalises to NFC', () => {
    expect(cleanText('x\uD83Dy\uDE00z')).toBe('xyz');
    expect(cleanText('Cafe\u0301')).toBe('Café');
  });
});

describe('capText', () => {
  it('leaves short text alone', () => {
    expect(capText('short', 10)).toBe('short');
    expect(capText('exactly10!', 10)).toBe('exactly10!');
  });

  it('cuts to at most max units ending in an ellipsis, at a word boundary when close', () => {
    const out = capText('the quick brown fox jumps over the lazy dog', 20);
    expect(out).toBe('the quick brown fox…');
    expect(out.length).toBeLessThanOrEqual(20);
  });

  it('never splits an emoji or a combined letter', () => {
    const text = '🚀'.repeat(10);
    const out = capText(text, 8);
    expect(out).toBe('🚀🚀🚀…');
    expect(capText('👨‍👩‍👧👨‍👩‍👧', 10)).toBe('👨‍👩‍👧…');
    expect(capText('éééééé'.normalize('NFD'), 6)).toBe('éé…'.normalize('NFD'));
  });
});

describe('readResultsPage', () => {
  it('sorts each recorded page into its kind', () => {
    expect(readResultsPage(fixture('results.html'))).toMatchObject({ kind: 'results', skipped: { ads: 1, unusable: 0, duplicates: 1 } });
    expect(readResultsPage(fixture('no-results.html'))).toEqual({ kind: 'no-results' });
    expect(readResultsPage(fixture('anomaly.html'))).toEqual({ kind: 'anomaly' });
    expect(readResultsPage(fixture('ads-only.html'))).toEqual({ kind: 'results', results: [], skipped: { ads: 2, unusable: 0, duplicates: 0 } });
    expect(readResultsPage(fixture('changed-layout.html'))).toEqual({ kind: 'layout-changed', blocks: 3 });
    expect(readResultsPage(fixture('not-ddg.html'))).toEqual({ kind: 'unrecognised', title: 'Sign in to CoffeeShop Wi-Fi' });
    expect(readResultsPage(fixture('odd-links.html'))).toMatchObject({ kind: 'results', skipped: { ads: 0, unusable: 7, duplicates: 1 } });
  });

  it('does not take a result about the bot check for the bot check', () => {
    const html = fixture('results.html').replace('Bitcoin - Wikipedia', 'Why DuckDuckGo says: Unfortunately, bots use DuckDuckGo too.');
    const r = readResultsPage(html);
    expect(r.kind).toBe('results');
  });

  it('sees the bot check by its text when the modal markup is gone', () => {
    expect(readResultsPage('<html><head><title>DuckDuckGo</title></head><body><p>Unfortunately, bots use DuckDuckGo too.</p></body></html>')).toEqual({
      kind: 'anomaly',
    });
  });

  it('does not read markup that appears inside scripts or comments', () => {
    const html = `<html><body><!-- <div class="result web-result"><a class="result__a" href="https://c.example/">c</a></div> -->
      <script>var t = '<div class="result web-result"><a class="result__a" href="https://s.example/">s</a></div>';</script></body></html>`;
    expect(readResultsPage(html).kind).toBe('unrecognised');
  });
});
