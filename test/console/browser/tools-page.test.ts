/**
 * The console's Tools page and the rules added from the page, in real headless Chromium: a tool found
 * by search, allowed ahead for an hour from its row (the next call runs with nobody watching), a
 * delete refused a standing allow with the reason on the form, a deny added on the Permissions page
 * (the next call is refused), and a rule stored by another process (as `memo permissions deny`)
 * showing on the open page without a reload. axe-core finds no serious violation, and at 390 px
 * nothing is wider than the screen.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { MemoryLogger } from '../../../kernel/logger.js';
import { PermissionStore } from '../../../kernel/permissions/permission-store.js';
import { echoPack } from '../../helpers/kernel-fixture.js';
import { waitFor } from '../../helpers/wait.js';
import { consoleFixture, type ConsoleFixture } from '../console-helpers.js';
import { launchChromium, seriousViolations } from './browser-helpers.js';

describe('the Tools page and rules added from the console, in Chromium', () => {
  let c: ConsoleFixture;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    browser = await launchChromium();
    c = await consoleFixture({ packs: [echoPack()] });
    context = await browser.newContext({ viewport: { width: 1280, height: 900 }, timezoneId: 'UTC', locale: 'en-US' });
    page = await context.newPage();
    await page.goto(c.link());
    await page.getByRole('heading', { name: 'Approvals' }).waitFor();
  });
  afterAll(async () => {
    await context?.close();
    await c?.close();
  });

  const invoke = (tool: string, text: string) => c.fx.kernel.invoke({ tool, args: { text }, caller: { kind: 'host', id: 'tools-page' } });
  const row = (tool: string) => page.locator(`tr[data-tool="${tool}"]`);

  it('lists every tool with its danger, effect and rule, and finds one by search', async () => {
    await page.getByRole('link', { name: 'Tools', exact: true }).click();
    await page.getByRole('heading', { name: 'Tools', exact: true }).waitFor();
    await waitFor(async () => (await page.title()) === 'Tools · Memo console', { what: 'the tab title' });
    const total = c.fx.kernel.registry.list().length;
    await page.getByText(`${total} tools.`, { exact: true }).waitFor();
    expect(await row('echo_delete').locator('td.rule').innerText()).toBe('Asked every time: it deletes');
    expect(await row('echo_safe').locator('td.rule').innerText()).toBe('Runs without asking (safe)');
    // Neither a delete nor a safe tool offers a standing allow.
    expect(
      await row('echo_delete')
        .getByRole('button', { name: /^Allow/ })
        .count(),
    ).toBe(0);
    expect(
      await row('echo_safe')
        .getByRole('button', { name: /^Allow/ })
        .count(),
    ).toBe(0);
    await page.getByLabel('Search', { exact: true }).fill('echo_med');
    await page.getByText(`1 of ${total} tools.`, { exact: true }).waitFor();
    expect(await page.locator('table.tools tbody tr').count()).toBe(1);
    expect(await row('echo_medium').locator('td.rule').innerText()).toBe('Asked each time');
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('allows a tool ahead for an hour from its row; the next call runs without a request', async () => {
    await row('echo_medium').getByRole('button', { name: 'Allow echo_medium ahead of time' }).click();
    await row('echo_medium').getByLabel('For').selectOption({ label: 'for 1 hour' });
    expect(await seriousViolations(page)).toEqual([]);
    await row('echo_medium').getByRole('button', { name: 'Allow echo_medium', exact: true }).click();
    const until = new Date(c.fx.clock.now() + 3_600_000).toISOString();
    await row('echo_medium')
      .locator('td.rule', { hasText: `Allowed for every caller until ${until}` })
      .waitFor();
    // The page is open, so an unanswered call would wait in Approvals: this one is answered by the rule.
    expect(await invoke('echo_medium', 'after')).toMatchObject({ ok: true });
    expect(c.fx.kernel.audit.tail().at(-1)).toMatchObject({ tool: 'echo_medium', decision: expect.stringMatching(/^allow:stored/) });
    expect(c.fx.kernel.permissions.list()).toEqual([expect.objectContaining({ tool: 'echo_medium', decision: 'allow', scope: 'until', expiresAt: until })]);
  });

  it('refuses a standing allow for a delete on the Permissions page, saying why on the form', async () => {
    await page.getByRole('link', { name: 'Permissions' }).click();
    await page.getByRole('heading', { name: 'Stored permissions' }).waitFor();
    await page.getByRole('combobox', { name: 'Tool', exact: true }).fill('echo_delete');
    await page.getByRole('button', { name: 'Add the rule' }).click();
    await page
      .getByRole('alert')
      .filter({
        hasText: 'echo_delete cannot be allowed ahead of time: it deletes, so it is asked every time (the approval rules take no standing answer for it).',
      })
      .waitFor();
    expect(await page.getByRole('combobox', { name: 'Tool', exact: true }).getAttribute('aria-invalid')).toBe('true');
    expect(c.fx.kernel.permissions.list().map((d) => d.tool)).toEqual(['echo_medium']);
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('adds a deny on the Permissions page; the next call is refused', async () => {
    await page.getByRole('combobox', { name: 'Tool', exact: true }).fill('echo_dangerous');
    await page.getByLabel('Rule', { exact: true }).selectOption('deny');
    await page.getByRole('button', { name: 'Add the rule' }).click();
    await row('echo_dangerous').waitFor();
    expect(await row('echo_dangerous').innerText()).toContain('deny');
    expect(await invoke('echo_dangerous', 'refused')).toMatchObject({
      ok: false,
      error: { code: 'PERMISSION_DENIED', message: expect.stringContaining('echo_dangerous is denied') },
    });
  });

  it('shows a rule stored by another process (memo permissions deny) without a reload', async () => {
    const other = new PermissionStore(c.fx.kernel.permissions.file, new MemoryLogger());
    other.set({ tool: 'echo_safe', decision: 'deny', plugin: 'echo-pack', scope: 'forever' }, new Date());
    await other.saved();
    await row('echo_safe').waitFor();
    expect(await invoke('echo_safe', 'denied elsewhere')).toMatchObject({ ok: false, error: { code: 'PERMISSION_DENIED' } });
    // The Tools page, opened now, says so too; revoking from there is live on it.
    await page.getByRole('link', { name: 'Tools', exact: true }).click();
    await row('echo_safe').locator('td.rule', { hasText: 'Denied for every caller until revoked' }).waitFor();
    await row('echo_safe').getByRole('button', { name: 'Revoke the rule for echo_safe' }).click();
    await row('echo_safe').locator('td.rule', { hasText: 'Runs without asking (safe)' }).waitFor();
  });

  it('fits a 390 px phone on both pages: nothing is wider than the screen', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    for (const [link, heading] of [
      ['Tools', 'Tools'],
      ['Permissions', 'Stored permissions'],
    ] as const) {
      await page.getByRole('link', { name: link, exact: true }).click();
      await page.getByRole('heading', { name: heading, exact: true }).waitFor();
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      expect([link, width <= 390 ? 'fits' : `${width} px wide`]).toEqual([link, 'fits']);
      expect(await seriousViolations(page)).toEqual([]);
    }
  });
});
