/**
 * The console's audit page over a whole trail of 10,000 calls (ten times what the kernel keeps in
 * memory), in real headless Chromium: the server pages it by cursor with the total counted (first,
 * a later, the oldest page), a time range and a tool prefix and words filter it, Export downloads
 * the matching lines as written, and a paused live tail counts new lines instead of moving the
 * page. axe-core finds no serious violation, and at 390 px nothing is wider than the screen.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { AuditLog } from '../../../kernel/audit/audit-log.js';
import { echoPack, tempDir } from '../../helpers/kernel-fixture.js';
import { waitFor } from '../../helpers/wait.js';
import { record } from '../../kernel/audit/helpers.js';
import { consoleFixture, type ConsoleFixture } from '../console-helpers.js';
import { launchChromium, seriousViolations } from './browser-helpers.js';

const N = 10_000;

/** A data folder whose trail already holds N calls, 2026-01-01 from 00:00:01, one a second. */
function dataFolderWithTrail(): string {
  const dataDir = path.join(tempDir('memo-audit-page-'), 'data');
  const log = new AuditLog(path.join(dataDir, 'agent-audit.jsonl'));
  log.open();
  for (let i = 1; i <= N; i += 1000) {
    log.appendBatch(
      Array.from({ length: 1000 }, (_, k) => {
        const n = i + k;
        return record(n, {
          ...(n % 10 === 0 ? { tool: 'vault_search_notes', pack: 'vault', caller: { kind: 'mcp', id: 'Claude Desktop' } } : {}),
          ...(n === 4242 ? { args: { path: 'the-Zebra-plan.md' } } : {}),
        });
      }),
    );
  }
  log.close();
  return dataDir;
}

describe('the audit page over a 10,000-line trail in Chromium', () => {
  let c: ConsoleFixture;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let dataDir: string;

  beforeAll(async () => {
    browser = await launchChromium();
    dataDir = dataFolderWithTrail();
    c = await consoleFixture({ dataDir, packs: [echoPack()] });
    context = await browser.newContext({ viewport: { width: 1280, height: 900 }, timezoneId: 'UTC', locale: 'en-US', acceptDownloads: true });
    page = await context.newPage();
    await page.goto(c.link());
    await page.getByRole('heading', { name: 'Approvals' }).waitFor();
    await page.getByRole('link', { name: 'Audit' }).click();
    await page.getByRole('heading', { name: 'Audit trail' }).waitFor();
    // Tool calls only: the kernel writes its own events (the chain's start, the console's changes) too.
    await page.getByLabel('Lines', { exact: true }).selectOption('calls');
    await page.getByRole('button', { name: 'Search' }).click();
  });
  afterAll(async () => {
    await context?.close();
    await c?.close();
    fs.rmSync(path.dirname(dataDir), { recursive: true, force: true });
  });

  const range = () => page.locator('p.range').innerText();
  const firstPath = async () => JSON.parse((await page.locator('.audit-row').first().locator('pre').textContent()) ?? '{}').path;
  const showRange = (text: string | RegExp) => page.locator('p.range', { hasText: text }).waitFor();
  const pager = () => page.getByRole('navigation', { name: 'Audit pages (top)' });

  it('opens on the newest 100 of all 10,000 calls, with their date and time', async () => {
    await showRange('Lines 1–100 of 10,000, newest first.');
    expect(await page.locator('.audit-row').count()).toBe(100);
    expect(await page.locator('.audit-row time').first().innerText()).toBe('Jan 1, 2026 2:46:40 AM');
    expect(await firstPath()).toBe('f10000.txt'); // call 10,000 is a vault search: its path is the record's default
    expect(await pager().getByRole('button', { name: 'Newer' }).isDisabled()).toBe(true);
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('pages older twice, jumps to the oldest page and back one newer', async () => {
    await pager().getByRole('button', { name: 'Older' }).click();
    await showRange('Lines 101–200 of 10,000');
    await pager().getByRole('button', { name: 'Older' }).click();
    await showRange('Lines 201–300 of 10,000');
    expect(await firstPath()).toBe('f9800.txt');
    await pager().getByRole('button', { name: 'Oldest' }).click();
    await showRange('Lines 9,901–10,000 of 10,000');
    expect(await page.locator('.audit-row').last().locator('pre').textContent()).toContain('f1.txt');
    expect(await pager().getByRole('button', { name: 'Older' }).isDisabled()).toBe(true);
    await pager().getByRole('button', { name: 'Newer' }).click();
    await showRange('Lines 9,801–9,900 of 10,000');
    expect(await firstPath()).toBe('f200.txt');
    await pager().getByRole('button', { name: 'Newest' }).click();
    await showRange('Lines 1–100 of 10,000');
  });

  it('filters the middle of the trail by time, then by tool prefix and by words', async () => {
    await page.getByLabel('From', { exact: true }).fill('2026-01-01T01:00');
    await page.getByLabel('To', { exact: true }).fill('2026-01-01T01:59');
    await page.getByRole('button', { name: 'Search' }).click();
    // 01:00:00 to 01:59:00 inclusive: calls 3600 to 7140.
    await showRange('Lines 1–100 of 3,541, newest first.');
    expect(await firstPath()).toBe('f7140.txt');
    await page.getByRole('button', { name: 'Clear' }).click();
    await page.getByLabel('Tool', { exact: true }).fill('vault_');
    await page.getByRole('button', { name: 'Search' }).click();
    await showRange('Lines 1–100 of 1,000, newest first.');
    expect(new Set(await page.locator('.audit-row code.tool').allTextContents())).toEqual(new Set(['vault_search_notes']));
    await page.getByLabel('Tool', { exact: true }).fill('');
    await page.getByLabel('Words', { exact: true }).fill('zebra');
    await page.getByRole('button', { name: 'Search' }).click();
    await showRange('Lines 1–1 of 1, newest first.');
    expect(await firstPath()).toBe('the-Zebra-plan.md');
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('exports the lines the search selects, as written, oldest first', async () => {
    await page.getByLabel('Words', { exact: true }).fill('');
    await page.getByLabel('Tool', { exact: true }).fill('vault_');
    await page.getByRole('button', { name: 'Search' }).click();
    await showRange('of 1,000');
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Export JSONL' }).click()]);
    expect(download.suggestedFilename()).toMatch(/^memo-audit-\d{4}-\d\d-\d\d\.jsonl$/);
    const lines = fs
      .readFileSync(await download.path(), 'utf8')
      .trimEnd()
      .split('\n');
    const trail = fs
      .readFileSync(path.join(dataDir, 'agent-audit.jsonl'), 'utf8')
      .split('\n')
      .filter((l) => l.includes('"tool":"vault_search_notes"'));
    expect([lines.length, lines[0], lines.at(-1)]).toEqual([1000, trail[0], trail.at(-1)]);
  });

  it('a paused live tail counts new calls without moving the page; one click shows them', async () => {
    await page.getByRole('button', { name: 'Clear' }).click();
    await showRange(/of 10,\d{3}/);
    await page.getByRole('button', { name: 'Pause live updates' }).click();
    await page.getByRole('button', { name: 'Resume live updates' }).waitFor();
    await c.fx.kernel.invoke({ tool: 'echo_safe', args: { text: 'while paused' }, caller: { kind: 'host', id: 'audit-page' } });
    await page.getByRole('button', { name: /^1 new line: show the newest$/ }).waitFor();
    expect(await page.locator('.audit-row code.tool').allTextContents()).not.toContain('echo_safe');
    await page.getByRole('button', { name: /new line: show the newest/ }).click();
    await waitFor(async () => (await page.locator('.audit-row').first().innerText()).includes('echo_safe'), { what: 'the new call on top' });
    await page.getByRole('button', { name: 'Resume live updates' }).click();
    await c.fx.kernel.invoke({ tool: 'echo_safe', args: { text: 'live again' }, caller: { kind: 'host', id: 'audit-page' } });
    await waitFor(async () => (await page.locator('.audit-row pre').first().textContent())?.includes('live again') ?? false, { what: 'the live call' });
  });

  it('fits a 390 px phone: nothing is wider than the screen', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.locator('.audit-row').first().locator('summary').click();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    expect(await seriousViolations(page)).toEqual([]);
    expect(await range()).toMatch(/^Lines 1–100 of/);
  });
});
