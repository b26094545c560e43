/**
 * What the console shows around the approvals inbox (issue 44), in real headless Chromium: a waiting
 * request is visible from every page (a badge in the nav, the count in the tab's title, a system
 * notification while the tab is hidden); "Allow for" takes only 1 to 525,600 minutes; a request with no
 * preview shows its arguments open; an expired request is said and listed as ended, never as run
 * without a question; the signed-out page names `memo console link`; the MCP page's stdio snippet starts
 * this installation's memo by absolute path; and a stopped memo serve is said on every page.
 */
import * as fs from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import type { ToolResult } from '../../../kernel/tools/contract.js';
import { ManualClock } from '../../../kernel/clock.js';
import { echoPack } from '../../helpers/kernel-fixture.js';
import { waitFor } from '../../helpers/wait.js';
import { consoleFixture, type ConsoleFixture } from '../console-helpers.js';
import { launchChromium, recordNotifications, seriousViolations } from './browser-helpers.js';

const MIN = 60_000;

describe('the console around the approvals inbox, in Chromium', () => {
  let c: ConsoleFixture;
  let browser: Browser;
  let page: Page;
  let clock: ManualClock;
  const caller = { kind: 'host' as const, id: 'states-test' };

  beforeAll(async () => {
    browser = await launchChromium();
    clock = new ManualClock(Date.now());
    c = await consoleFixture({ packs: [echoPack()], clock });
    const context = await browser.newContext({ viewport: { width: 1024, height: 800 } });
    await recordNotifications(context);
    page = await context.newPage();
  });
  afterAll(async () => {
    await page?.context().close();
    await c?.close();
  });

  const ask = async (text: string, tool = 'echo_medium'): Promise<{ id: string; result: Promise<ToolResult> }> => {
    const result = c.fx.kernel.invoke({ tool, args: { text }, caller });
    const p = await waitFor(() => c.fx.kernel.approvals.pending().find((x) => (x.request.args as { text?: string }).text === text), { what: `${text} asked` });
    return { id: p.id, result };
  };

  it('names memo console link on the signed-out page, as text', async () => {
    await page.goto(`${c.origin}/ui/`);
    await page.getByRole('heading', { name: 'Not logged in' }).waitFor();
    const text = await page.locator('section.signed-out').innerText();
    expect(text).toContain('memo console link prints a new one');
    expect(text).not.toContain('&lt;');
  });

  it('shows the waiting count in the nav and the tab title on every page, and notifies while the tab is hidden', async () => {
    await page.goto(c.link());
    await page.locator('.live.on').waitFor();
    await page.getByRole('link', { name: 'Audit' }).click();
    await page.evaluate(() => ((window as any).__hidden = true));
    const one = await ask('one');
    const two = await ask('two');
    await page
      .getByRole('link', { name: /Approvals/ })
      .getByText('2')
      .waitFor();
    await waitFor(async () => (await page.title()) === '(2) Audit · Memo console', { what: 'the title to count 2' });
    expect(await page.evaluate(() => (window as any).__notifications.map((n: { title: string }) => n.title))).toEqual([
      'Memo asks: echo_medium',
      'Memo asks: echo_medium',
    ]);
    expect(await seriousViolations(page)).toEqual([]);
    c.fx.kernel.approvals.answer(one.id, 'deny-once', 'terminal');
    c.fx.kernel.approvals.answer(two.id, 'deny-once', 'terminal');
    await waitFor(async () => (await page.title()) === 'Audit · Memo console', { what: 'the title without a count' });
    expect(await page.getByRole('link', { name: /Approvals/ }).innerText()).toBe('Approvals');
    await page.evaluate(() => ((window as any).__hidden = false));
  });

  it('takes only 1 to 525,600 minutes in Allow for, saying why, and opens the arguments of a request with no preview', async () => {
    await page.getByRole('link', { name: /Approvals/ }).click();
    const req = await ask('minutes');
    const card = page.locator(`article.approval[data-id="${req.id}"]`);
    await card.waitFor();
    expect(await card.locator('details.args').getAttribute('open')).not.toBeNull();
    const box = card.getByLabel('Allow for');
    for (const bad of ['0', '-5', '1.5', '600000']) {
      await box.fill(bad);
      await card.getByText('A whole number of minutes from 1 to 525600.').waitFor();
      expect(await card.getByRole('button', { name: /^Allow .* min$/ }).isDisabled()).toBe(true);
    }
    await box.fill('15');
    await card.getByRole('button', { name: 'Allow 15 min' }).click();
    expect(await req.result).toMatchObject({ ok: true });
  });

  it('says an expired request ended without running, and lists it as ended, not as run without a question', async () => {
    // (echo_medium is allowed for 15 minutes by the test before: another tool.)
    const req = await ask('expiring', 'echo_dangerous');
    await page.locator(`article.approval[data-id="${req.id}"]`).waitFor();
    clock.advance(31 * MIN);
    expect(await req.result).toMatchObject({ ok: false, error: { code: 'APPROVAL_EXPIRED' } });
    await page
      .getByRole('status')
      .getByText(/echo_dangerous from host “states-test” expired unanswered: it did not run\./)
      .waitFor();
    const ended = page.locator('ul.ended-list');
    await ended.getByText(/expired unanswered/).waitFor();
    const quiet = await page.locator('ol.quiet-list').allInnerTexts();
    expect(quiet.join('\n')).not.toContain('expiring');
  });

  it("gives a stdio snippet on the MCP page that starts this installation's memo by absolute path", async () => {
    await page.getByRole('link', { name: 'MCP' }).click();
    const snippet = await page.locator('pre', { hasText: '--stdio' }).first().innerText();
    const config = JSON.parse(snippet) as { mcpServers: { memo: { command: string; args: string[] } } };
    expect(config.mcpServers.memo.command).toBe(process.execPath);
    expect(config.mcpServers.memo.args[0]).toMatch(/\/bin\/memo$/);
    expect(fs.existsSync(config.mcpServers.memo.args[0]!)).toBe(true);
  });

  it('says on every page that memo serve stopped answering, rather than that nothing is waiting', async () => {
    await page.getByRole('link', { name: /Approvals/ }).click();
    await page.locator('.live.on').waitFor();
    await c.endpoint.close();
    await page
      .getByRole('alert')
      .getByText(/memo serve is not answering/)
      .waitFor();
    let seen = '';
    await waitFor(
      async () => {
        seen = await page.locator('main').innerText();
        return seen.includes('Not connected to memo serve');
      },
      { what: () => `the inbox to say it is not connected; it says: ${seen.replace(/\n/g, ' / ')}` },
    );
    expect(await page.getByText('Nothing is waiting for an answer').count()).toBe(0);
    await page.getByRole('link', { name: 'Audit' }).click();
    await page
      .getByRole('alert')
      .getByText(/memo serve is not answering/)
      .waitFor();
  });
});
