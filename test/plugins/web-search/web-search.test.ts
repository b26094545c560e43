/**
 * web_search through the real pipeline: a kernel with the built-in packs, the pack's endpoint
 * pointed at a local stand-in for html.duckduckgo.com that serves recorded result pages.
 */
import * as path from 'node:path';
import type { ToolResult } from '../../../kernel/tools/contract.js';
import { makeKernel, type Fixture } from '../../helpers/kernel-fixture.js';
import { closedPort, cutOff, DdgServer, ddgPage, hang, page, reset, stall, status } from './ddg-server.js';

const value = (r: ToolResult): any => {
  if (!r.ok) throw new Error(`expected success, got ${r.error.code}: ${r.error.message}`);
  return r.value;
};
const error = (r: ToolResult) => {
  if (r.ok) throw new Error(`expected an error, got ${JSON.stringify(r.value).slice(0, 300)}`);
  return r.error;
};
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

const DEFAULT_UA = 'Memo/0.1 (+local agent tool; web_search)';

describe('the web-search pack', () => {
  let fx: Fixture;
  let ddg: DdgServer;
  const search = (args: Record<string, unknown>, extra: { signal?: AbortSignal; onProgress?: (u: any) => void } = {}) =>
    fx.kernel.invoke({ tool: 'web_search', args, caller: { kind: 'agent' }, ...extra });

  beforeEach(async () => {
    ddg = await DdgServer.start();
    fx = makeKernel({ packs: [] });
    const states = await fx.kernel.loadPacks([{ dir: path.resolve('plugins'), source: 'builtin' }]);
    const mine = states.find((s) => s.id === 'web-search');
    if (mine?.status !== 'loaded') throw new Error(`web-search did not load: ${mine?.error ?? 'not found'}`);
    // 2 s per request: a loaded machine never turns a served page into a timeout; the timeout tests use 500 ms.
    fx.kernel.packs.setConfig('web-search', { endpoint: ddg.url, retries: 1, timeoutMs: 2000 });
  });
  afterEach(async () => {
    await fx.close();
    await ddg.close();
  });

  describe('the tool as declared', () => {
    it('is one safe read tool whose description limits it to current information and short queries', () => {
      const spec = fx.kernel.registry.get('web_search')!.spec;
      expect(spec).toMatchObject({ danger: 'safe', effect: 'read' });
      expect(spec.description).toMatch(/ONLY when the answer depends on information that is current or may have changed since your training/);
      expect(spec.description).toMatch(/NEVER use it for greetings, small talk, or anything you already know/);
      expect(spec.description).toMatch(/short, focused query .* not the user's whole message/);
      expect(spec.parameters).toMatchObject({ required: ['query'], additionalProperties: false });
    });

    it('runs with the schema defaults when nothing is configured', () => {
      const fresh = makeKernel({ packs: [] });
      return fresh.kernel
        .loadPacks([{ dir: path.resolve('plugins'), source: 'builtin' }])
        .then(() => {
          expect(fresh.kernel.packs.config('web-search')).toEqual({
            endpoint: 'https://html.duckduckgo.com/html/',
            timeoutMs: 10000,
            retries: 1,
            userAgent: DEFAULT_UA,
            maxSnippetChars: 300,
          });
        })
        .finally(() => fresh.close());
    });

    it('refuses settings outside the schema', () => {
      expect(() => fx.kernel.packs.setConfig('web-search', { retries: 4 })).toThrow(/retries/);
      expect(() => fx.kernel.packs.setConfig('web-search', { endpoint: 'ftp://files.example/' })).toThrow(/endpoint/);
      expect(() => fx.kernel.packs.setConfig('web-search', { timeoutMs: 0 })).toThrow(/timeoutMs/);
    });

    it.each([
      [{}, 'query'],
      [{ query: '' }, 'query'],
      [{ query: '   ' }, 'query'],
      [{ query: 'x'.repeat(401) }, 'query'],
      [{ query: 'ok', maxResults: 0 }, 'maxResults'],
      [{ query: 'ok', maxResults: 21 }, 'maxResults'],
      [{ query: 'ok', maxResults: 2.5 }, 'maxResults'],
      [{ query: 'ok', region: 'US-EN' }, 'region'],
      [{ query: 'ok', region: 'english' }, 'region'],
      [{ query: 'ok', safe: true }, 'safe'],
    ])('refuses %j as INVALID_ARGS naming %s, and sends nothing', async (args, field) => {
      const e = error(await search(args));
      expect(e.code).toBe('INVALID_ARGS');
      expect(e.message).toContain(field);
      expect(ddg.received).toHaveLength(0);
    });
  });

  describe('the request', () => {
    it('POSTs the form-encoded query and region with the configured User-Agent', async () => {
      await search({ query: 'bitcoin price', region: 'us-en' });
      expect(ddg.received).toHaveLength(1);
      const req = ddg.request(0);
      expect(req).toMatchObject({ method: 'POST', path: '/html/' });
      expect(req.headers['content-type']).toMatch(/^application\/x-www-form-urlencoded/);
      expect(req.headers['user-agent']).toBe(DEFAULT_UA);
      expect(req.body).toBe('q=bitcoin+price&kl=us-en');
      expect(Object.fromEntries(req.form)).toEqual({ q: 'bitcoin price', kl: 'us-en' });
    });

    it('sends no kl without a region, and encodes any text in the query', async () => {
      await search({ query: 'c++ "template<T>" && çay 日本 🚀' });
      expect(Object.fromEntries(ddg.request(0).form)).toEqual({ q: 'c++ "template<T>" && çay 日本 🚀' });
    });

    it('collapses whitespace and drops control characters from the query before sending it', async () => {
      const r = value(await search({ query: '  dolar\n\tkuru\u0000  bugün ' }));
      expect(ddg.request(0).form.get('q')).toBe('dolar kuru bugün');
      expect(r.query).toBe('dolar kuru bugün');
    });

    it('sends the configured User-Agent', async () => {
      fx.kernel.packs.setConfig('web-search', { userAgent: 'Memo-test/9 (+contact@example.org)' });
      await search({ query: 'x' });
      expect(ddg.request(0).headers['user-agent']).toBe('Memo-test/9 (+contact@example.org)');
    });
  });

  describe('a result page', () => {
    it('returns the organic results with decoded redirect targets, skipping the ad and the duplicate', async () => {
      ddg.reply(page('results.html'));
      const r = value(await search({ query: 'bitcoin price', region: 'us-en', maxResults: 20 }));
      expect(r).toMatchObject({ query: 'bitcoin price', region: 'us-en', count: 6, truncated: false, summary: '6 results for "bitcoin price".' });
      expect(r.results.map((x: any) => x.url)).toEqual([
        'https://www.coindesk.com/price/bitcoin',
        'https://coinmarketcap.com/currencies/bitcoin/',
        'https://www.google.com/finance/quote/BTC-USD',
        'https://en.wikipedia.org/wiki/Bitcoin',
        'https://www.reuters.com/markets/currencies/bitcoin-climbs-2026-06-19/?utm_source=ddg&a=1',
        'https://www.kraken.com/prices/bitcoin',
      ]);
      expect(r.results[0]).toEqual({
        title: 'Bitcoin Price | BTC Price Index and Live Chart - CoinDesk',
        url: 'https://www.coindesk.com/price/bitcoin',
        snippet: 'The price of Bitcoin (BTC) is $67,321.45 today as of Jun 20, 2026, with a 24-hour trading volume of $31.2B, reflecting a 1.82% increase.',
      });
      expect(r.results[2].title).toBe('Bitcoin (BTC / USD) Price & News - Google Finance');
      expect(r.results[4].snippet).toBe("Bitcoin rose 2% on Thursday, extending gains as investors' appetite for spot exchange-traded funds returned …");
      expect(JSON.stringify(r)).not.toMatch(/coinexchange|Zero Fees|duckduckgo\.com|<b>/);
    });

    it('returns maxResults results (5 by default)', async () => {
      expect(value(await search({ query: 'bitcoin price' })).count).toBe(5);
      expect(value(await search({ query: 'bitcoin price', maxResults: 2 })).results.map((x: any) => x.title)).toEqual([
        'Bitcoin Price | BTC Price Index and Live Chart - CoinDesk',
        'Bitcoin price today, BTC to USD live price, marketcap and chart | CoinMarketCap',
      ]);
    });

    it('records one audit line with the summary', async () => {
      await search({ query: 'bitcoin price', maxResults: 3 });
      expect(fx.kernel.audit.tail().at(-1)).toMatchObject({ tool: 'web_search', pack: 'web-search', outcome: 'ok', summary: '3 results for "bitcoin price".' });
    });

    it('decodes relative and absolute redirects and keeps only http(s) pages, each once', async () => {
      ddg.reply(page('odd-links.html'));
      const r = value(await search({ query: 'odd links', maxResults: 20 }));
      expect(r.results.map((x: any) => [x.title, x.url])).toEqual([
        ['Relative redirect', 'https://relative.example/page?x=1&y=2'],
        ['Absolute redirect', 'https://absolute.example/a%20b'],
        ['Redirect with another parameter first', 'http://plain-http.example/'],
        ['Protocol-relative link', 'https://protocol-relative.example/path'],
        ['Padded href', 'https://padded.example/x'],
        ['DuckDuckGo Privacy Policy', 'https://duckduckgo.com/privacy'],
      ]);
    });

    it('decodes entities, strips tags and control characters, collapses whitespace, and keeps non-ASCII text whole', async () => {
      ddg.reply(page('international.html'));
      const r = value(await search({ query: 'dolar kuru bugün', region: 'tr-tr' }));
      expect(r.count).toBe(4);
      const [tcmb, wiki, doviz, nikkei] = r.results;
      expect(wiki).toEqual({
        title: 'トルコ・リラ - Wikipedia',
        url: 'https://ja.wikipedia.org/wiki/%E3%83%88%E3%83%AB%E3%82%B3%E3%83%BB%E3%83%AA%E3%83%A9',
        snippet: 'トルコ・リラ（Türk lirası）は、トルコ共和国の通貨。ISO 4217コードはTRY。 補助単位はクルシュ。',
      });
      // Escaped markup is text on the page and stays text; real tags are gone.
      expect(doviz.title).toBe('💰 Döviz.com – İstanbul\'da "canlı" kur <b>takibi</b> 🚀');
      expect(doviz.url).toBe('https://www.doviz.com/?ref=%C3%BC%C3%A7');
      expect(doviz.snippet).toBe('Şu an 1 USD = 32,85 TRY • Son güncelleme: 14:05 tset sıfırgenişlik &amp; 👨‍👩‍👧 aile');
      expect(nikkei).toEqual({
        title: '円相場 きょうの動き | 日本経済新聞',
        url: 'https://example.jp/%E6%97%A5%E6%9C%AC?q=%E5%86%86',
        snippet: '東京外国為替市場で円相場は1ドル=157円台前半で推移している。',
      });
      // eslint-disable-next-line no-control-regex -- asserting that no control character survives is the point
      for (const x of r.results) expect(`${x.title}${x.snippet}`).not.toMatch(/[\u0000-\u001F\u007F-\u009F\u202A-\u202E\u200B]/);
      expect(tcmb.url).toBe('https://www.tcmb.gov.tr/kurlar/today.html');
    });

    it('caps titles at 200 characters and snippets at maxSnippetChars, ending in an ellipsis', async () => {
      ddg.reply(page('international.html'));
      const [tcmb] = value(await search({ query: 'dolar kuru bugün' })).results;
      expect(tcmb.title.length).toBeLessThanOrEqual(200);
      expect(tcmb.title.length).toBeGreaterThan(150);
      expect(tcmb.title).toMatch(/^Dolar\/TL Canlı Kur – Güncel Döviz Kurları.*[^ ]…$/);
      expect(tcmb.snippet.length).toBeLessThanOrEqual(300);
      expect(tcmb.snippet).toMatch(/^Türkiye Cumhuriyet Merkez Bankası'nın .*[^ ]…$/);

      fx.kernel.packs.setConfig('web-search', { maxSnippetChars: 80 });
      ddg.reply(page('international.html'));
      const again = value(await search({ query: 'dolar kuru bugün' })).results;
      expect(again[0].snippet.length).toBeLessThanOrEqual(80);
      expect(again[0].snippet.endsWith('…')).toBe(true);
      expect(again[1].snippet).toBe('トルコ・リラ（Türk lirası）は、トルコ共和国の通貨。ISO 4217コードはTRY。 補助単位はクルシュ。');
    });

    it('keeps the whole result within its budget, dropping the last results and saying so', async () => {
      fx.kernel.packs.setConfig('web-search', { maxSnippetChars: 2000 });
      const many = Array.from({ length: 20 }, (_, i) => ({
        url: `https://long${i}.example/article`,
        title: `Long result ${i} `.repeat(30),
        snippet: `Paragraph ${i} of a very long snippet. `.repeat(80),
      }));
      ddg.reply(page({ html: ddgPage(many) }));
      const r = value(await search({ query: 'long', maxResults: 20 }));
      expect(r.truncated).toBe(true);
      expect(r.count).toBe(r.results.length);
      expect(r.count).toBeGreaterThan(0);
      expect(r.count).toBeLessThan(20);
      expect(r.summary).toBe(`${r.count} results for "long" (cut to fit).`);
      expect(JSON.stringify(r.results).length).toBeLessThan(14_000);
      expect(r.results.map((x: any) => x.url)).toEqual(many.slice(0, r.count).map((m) => m.url));
    });
  });

  describe('pages without results', () => {
    it('reports DuckDuckGo\'s "No results." page as a success with count 0', async () => {
      ddg.reply(page('no-results.html'));
      const r = value(await search({ query: 'zxqv flurbington quasselfritz 9183' }));
      expect(r).toEqual({
        query: 'zxqv flurbington quasselfritz 9183',
        region: null,
        results: [],
        count: 0,
        truncated: false,
        summary: 'No results found for "zxqv flurbington quasselfritz 9183".',
      });
    });

    it('reports a page of ads only as a success with no usable results', async () => {
      ddg.reply(page('ads-only.html'));
      const r = value(await search({ query: 'cheap flights' }));
      expect(r).toMatchObject({ results: [], count: 0, summary: 'No usable results for "cheap flights" (2 ad(s) or link(s) that are not web pages skipped).' });
    });

    it('fails with TOOL_FAILED on the bot check page (HTTP 202), without retrying', async () => {
      ddg.reply(page('anomaly.html', 202));
      const e = error(await search({ query: 'bitcoin price' }));
      expect(e.code).toBe('TOOL_FAILED');
      expect(e.message).toMatch(/^DuckDuckGo \(127\.0\.0\.1:\d+\) answered with its bot check \("anomaly" CAPTCHA page\) instead of results/);
      expect(e.message).toContain('wait a few minutes before searching again');
      expect(ddg.received).toHaveLength(1);
    });

    it('recognises the bot check behind an error status too', async () => {
      ddg.reply(page('anomaly.html', 403));
      const e = error(await search({ query: 'bitcoin price' }));
      expect(e).toMatchObject({ code: 'TOOL_FAILED', message: expect.stringContaining('bot check') });
      expect(ddg.received).toHaveLength(1);
    });

    it('fails with TOOL_FAILED on a page that is not a DuckDuckGo result page', async () => {
      ddg.reply(page('not-ddg.html'));
      const e = error(await search({ query: 'bitcoin price' }));
      expect(e.code).toBe('TOOL_FAILED');
      expect(e.message).toMatch(
        /^The page from DuckDuckGo \(127\.0\.0\.1:\d+\) \(HTTP 200, titled "Sign in to CoffeeShop Wi-Fi"\) is not a DuckDuckGo result page/,
      );
      expect(e.message).toContain("Check the web-search pack's endpoint setting");
    });

    it('fails with TOOL_FAILED on an empty answer', async () => {
      ddg.reply(status(200, {}, ''));
      expect(error(await search({ query: 'bitcoin price' }))).toMatchObject({
        code: 'TOOL_FAILED',
        message: expect.stringContaining('is not a DuckDuckGo result page'),
      });
    });

    it('fails with TOOL_FAILED when the result blocks are in a layout it cannot read', async () => {
      ddg.reply(page('changed-layout.html'));
      const e = error(await search({ query: 'layout' }));
      expect(e.code).toBe('TOOL_FAILED');
      expect(e.message).toContain('3 result block(s) in a layout this tool cannot read');
    });
  });

  describe('HTTP and network failures', () => {
    it('retries after a 500 and returns the results of the second answer', async () => {
      ddg.reply(status(500), page('results.html'));
      const progress: any[] = [];
      const r = value(await search({ query: 'bitcoin price' }, { onProgress: (u) => progress.push(u) }));
      expect(r.count).toBe(5);
      expect(ddg.received).toHaveLength(2);
      expect(ddg.request(1).body).toBe(ddg.request(0).body);
      expect(progress).toEqual([{ progress: 1, total: 2, message: 'HTTP 500 Internal Server Error; retrying in 250 ms (attempt 2 of 2)' }]);
    });

    it('fails with the status after the last attempt of repeated 5xx answers', async () => {
      ddg.otherwise(status(503));
      const e = error(await search({ query: 'bitcoin price' }));
      expect(e.code).toBe('TOOL_FAILED');
      expect(e.message).toMatch(
        /^DuckDuckGo \(127\.0\.0\.1:\d+\) answered HTTP 503 Service Unavailable \(tried 2 times\): the search service is having trouble\. Try again later\.$/,
      );
      expect(ddg.received).toHaveLength(2);
    });

    it('makes exactly 1 + retries attempts', async () => {
      ddg.otherwise(status(502));
      fx.kernel.packs.setConfig('web-search', { retries: 0 });
      expect(error(await search({ query: 'a' })).message).toContain('answered HTTP 502 Bad Gateway:');
      expect(ddg.received).toHaveLength(1);
      fx.kernel.packs.setConfig('web-search', { retries: 3 });
      expect(error(await search({ query: 'b' })).message).toContain('(tried 4 times)');
      expect(ddg.received).toHaveLength(5);
    });

    it('waits out a short Retry-After on 429 and then succeeds', async () => {
      ddg.reply(status(429, { 'Retry-After': '1' }), page('results.html'));
      const progress: any[] = [];
      const r = value(await search({ query: 'bitcoin price' }, { onProgress: (u) => progress.push(u) }));
      expect(r.count).toBe(5);
      expect(ddg.received).toHaveLength(2);
      expect(progress.map((p) => p.message)).toEqual(['HTTP 429 Too Many Requests (Retry-After 1 s); retrying in 1 s (attempt 2 of 2)']);
    });

    it('stops at once when a 429 asks for a longer wait than it will make, and says how long', async () => {
      ddg.otherwise(status(429, { 'Retry-After': '120' }));
      const e = error(await search({ query: 'bitcoin price' }));
      expect(e.code).toBe('TOOL_FAILED');
      expect(e.message).toMatch(
        /^DuckDuckGo \(127\.0\.0\.1:\d+\) is limiting how often it can be searched: HTTP 429 Too Many Requests\. It asked to wait 120 s before the next search\.$/,
      );
      expect(e.details).toMatchObject({ status: 429, retryAfterSeconds: 120, attempts: 1 });
      expect(ddg.received).toHaveLength(1);
    });

    it('fails after repeated 429s without Retry-After, telling the reader to wait', async () => {
      ddg.otherwise(status(429));
      const e = error(await search({ query: 'bitcoin price' }));
      expect(e.message).toMatch(/HTTP 429 Too Many Requests \(tried 2 times\)\. Wait a minute before searching again\.$/);
      expect(ddg.received).toHaveLength(2);
    });

    it('does not retry another 4xx, and names the status', async () => {
      ddg.otherwise(status(403));
      const e = error(await search({ query: 'bitcoin price' }));
      expect(e.code).toBe('TOOL_FAILED');
      expect(e.message).toMatch(/^DuckDuckGo \(127\.0\.0\.1:\d+\) refused the search with HTTP 403 Forbidden\. Check the web-search pack's endpoint setting/);
      expect(ddg.received).toHaveLength(1);
    });

    it('retries a reset connection and succeeds on the next answer', async () => {
      ddg.reply(reset, page('results.html'));
      const progress: any[] = [];
      expect(value(await search({ query: 'bitcoin price' }, { onProgress: (u) => progress.push(u) })).count).toBe(5);
      expect(ddg.received).toHaveLength(2);
      expect(progress[0].message).toMatch(/^the connection was reset; retrying in 250 ms \(attempt 2 of 2\)$/);
    });

    it('fails with TOOL_FAILED when the connection keeps being reset, without a stack trace', async () => {
      ddg.otherwise(reset);
      const e = error(await search({ query: 'bitcoin price' }));
      expect(e.code).toBe('TOOL_FAILED');
      expect(e.message).toMatch(
        /^Could not reach DuckDuckGo \(127\.0\.0\.1:\d+\): the connection was reset \(tried 2 times\)\. Check the network connection and the web-search pack's endpoint setting\.$/,
      );
      expect(e.message).not.toMatch(/\n|at .*\.js|fetch failed/);
    });

    it('fails with TOOL_FAILED when the connection closes in the middle of the page', async () => {
      ddg.otherwise(cutOff);
      const e = error(await search({ query: 'bitcoin price' }));
      expect(e.code).toBe('TOOL_FAILED');
      expect(e.message).toMatch(/^Could not reach DuckDuckGo \(127\.0\.0\.1:\d+\): the connection was closed before a complete answer \(tried 2 times\)/);
    });

    it('fails with TOOL_FAILED when nothing listens at the endpoint', async () => {
      const port = await closedPort();
      fx.kernel.packs.setConfig('web-search', { endpoint: `http://127.0.0.1:${port}/html/` });
      const e = error(await search({ query: 'bitcoin price' }));
      expect(e.code).toBe('TOOL_FAILED');
      expect(e.message).toBe(
        `Could not reach DuckDuckGo (127.0.0.1:${port}): the connection was refused (tried 2 times). Check the network connection and the web-search pack's endpoint setting.`,
      );
    });

    it('fails with TIMEOUT when no answer comes within timeoutMs, after its retries', async () => {
      ddg.otherwise(hang);
      fx.kernel.packs.setConfig('web-search', { timeoutMs: 500 });
      const progress: any[] = [];
      const e = error(await search({ query: 'bitcoin price' }, { onProgress: (u) => progress.push(u) }));
      expect(e.code).toBe('TIMEOUT');
      expect(e.message).toMatch(
        /^DuckDuckGo \(127\.0\.0\.1:\d+\) did not answer within 500 ms \(tried 2 times\)\. Try again later, or raise the web-search pack's timeoutMs setting\.$/,
      );
      expect(ddg.received).toHaveLength(2);
      expect(progress.map((p) => p.message)).toEqual(['no answer within 500 ms; retrying in 250 ms (attempt 2 of 2)']);
    });

    it('fails with TIMEOUT when the page starts but stalls past timeoutMs', async () => {
      ddg.otherwise(stall);
      fx.kernel.packs.setConfig('web-search', { retries: 0, timeoutMs: 500 });
      const e = error(await search({ query: 'bitcoin price' }));
      expect(e.code).toBe('TIMEOUT');
      expect(e.message).toContain('did not answer within 500 ms.');
    });
  });

  describe('cancellation', () => {
    it('stops the request when the call is cancelled and never retries', async () => {
      ddg.otherwise(hang);
      const controller = new AbortController();
      const pending = search({ query: 'bitcoin price' }, { signal: controller.signal });
      await ddg.requests(1);
      controller.abort();
      expect(error(await pending).code).toBe('CANCELLED');
      await ddg.clientClosed(1);
      await pause(700); // longer than the first backoff (250 ms): a retry would have arrived by now
      expect(ddg.received).toHaveLength(1);
    });

    it('does not retry when cancelled while waiting to retry', async () => {
      ddg.otherwise(status(500));
      const controller = new AbortController();
      const r = await search({ query: 'bitcoin price' }, { signal: controller.signal, onProgress: () => controller.abort() });
      expect(error(r).code).toBe('CANCELLED');
      await pause(600);
      expect(ddg.received).toHaveLength(1);
    });
  });
});
