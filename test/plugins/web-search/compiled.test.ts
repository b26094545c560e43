/**
 * The pack as it ships: compiled into dist/ by `npm run build` (which `npm test` runs first) and
 * called through the CLI, against the local stand-in for DuckDuckGo.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { requireFreshBuild } from '../../helpers/dist.js';
import { tempDir } from '../../helpers/kernel-fixture.js';
import { DdgServer, page } from './ddg-server.js';

const BIN = path.resolve('bin/memo');
const DIST_PACK = path.resolve('dist/plugins/web-search');

beforeAll(() => {
  requireFreshBuild();
  if (!fs.existsSync(path.join(DIST_PACK, 'index.js')) || !fs.existsSync(path.join(DIST_PACK, 'plugin.json'))) {
    throw new Error('dist/plugins/web-search is missing: run `npm run build` first (npm test does)');
  }
});

/** Runs bin/memo without blocking this process (the stand-in server answers from here). */
function memo(args: string[], root: string, data: string): Promise<{ code: number; stdout: string; stderr: string; json: any }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, '--root', root, '--data', data, ...args], { encoding: 'utf8' }, (err, stdout, stderr) => {
      let json: any;
      try {
        json = JSON.parse(stdout);
      } catch {
        json = undefined;
      }
      resolve({ code: err ? Number((err as { code?: unknown }).code ?? 1) : 0, stdout, stderr, json });
    });
  });
}

describe('web-search, compiled, through the CLI', () => {
  let ddg: DdgServer;
  beforeEach(async () => {
    ddg = await DdgServer.start();
  });
  afterEach(() => ddg.close());

  it('searches the configured endpoint with `memo tools call web_search --json`', async () => {
    const base = tempDir('memo-ws-cli-');
    const root = path.join(base, 'root');
    const data = path.join(base, 'data');
    fs.mkdirSync(root);
    const set = await memo(['plugins', 'config', 'web-search', `endpoint=${ddg.url}`, 'retries=0'], root, data);
    expect(set.code).toBe(0);

    ddg.reply(page('results.html'));
    const r = await memo(['tools', 'call', 'web_search', '--args', '{"query":"bitcoin price","maxResults":2,"region":"us-en"}', '--json'], root, data);
    expect(r.stderr).not.toContain('web-search');
    expect(r.code).toBe(0);
    expect(r.json).toEqual({
      ok: true,
      result: {
        query: 'bitcoin price',
        region: 'us-en',
        results: [
          {
            title: 'Bitcoin Price | BTC Price Index and Live Chart - CoinDesk',
            url: 'https://www.coindesk.com/price/bitcoin',
            snippet: 'The price of Bitcoin (BTC) is $67,321.45 today as of Jun 20, 2026, with a 24-hour trading volume of $31.2B, reflecting a 1.82% increase.',
          },
          {
            title: 'Bitcoin price today, BTC to USD live price, marketcap and chart | CoinMarketCap',
            url: 'https://coinmarketcap.com/currencies/bitcoin/',
            snippet:
              'The live Bitcoin price today is $67,298.12 USD with a 24-hour trading volume of $31,196,431,870 USD. We update our BTC to USD price in real-time.',
          },
        ],
        count: 2,
        truncated: false,
        summary: '2 results for "bitcoin price".',
      },
    });
    expect(ddg.received.map((q) => q.body)).toEqual(['q=bitcoin+price&kl=us-en']);
  });

  it('exits 1 with the error when DuckDuckGo answers with its bot check', async () => {
    const base = tempDir('memo-ws-cli-');
    const root = path.join(base, 'root');
    const data = path.join(base, 'data');
    fs.mkdirSync(root);
    await memo(['plugins', 'config', 'web-search', `endpoint=${ddg.url}`], root, data);
    ddg.reply(page('anomaly.html', 202));
    const r = await memo(['tools', 'call', 'web_search', '--args', '{"query":"bitcoin price"}', '--json'], root, data);
    expect(r.code).toBe(1);
    expect(r.json).toMatchObject({ ok: false, error: { code: 'TOOL_FAILED', message: expect.stringContaining('bot check') } });
  });
});
