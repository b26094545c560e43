/**
 * Risky one-click actions in the console ask first and can be undone (issue 44), in real headless
 * Chromium: turning on global always-allow (and a banner on every page while it is on), "Always allow"
 * on a request, letting every external client ask to write, revoking a stored deny, and disabling the
 * file tools.
 */
import * as path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { echoPack } from '../../helpers/kernel-fixture.js';
import { waitFor } from '../../helpers/wait.js';
import { consoleFixture, type ConsoleFixture } from '../console-helpers.js';
import { launchChromium, seriousViolations } from './browser-helpers.js';

describe('risky actions in the console, in Chromium', () => {
  let c: ConsoleFixture;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    browser = await launchChromium();
    c = await consoleFixture({ packs: [echoPack()] });
    const loaded = await c.fx.kernel.loadPacks([{ dir: path.resolve('plugins'), source: 'builtin', only: ['fs-tools'] }]);
    expect(loaded.map((s) => s.status)).toEqual(['loaded']);
    page = await (await browser.newContext({ viewport: { width: 1024, height: 800 } })).newPage();
    await page.goto(c.link());
    await page.locator('.live.on').waitFor();
  });
  afterAll(async () => {
    await page?.context().close();
    await c?.close();
  });

  const enabled = (id: string) => c.fx.kernel.packs.get(id)?.enabled === true;
  const undo = () => page.getByRole('group', { name: 'Undo' }).getByRole('button', { name: 'Undo' }).click();

  it('asks before turning on global always-allow, says so on every page while it is on, and undoes it', async () => {
    await page.getByRole('link', { name: 'Permissions' }).click();
    await page.getByLabel('Global always-allow').check();
    const confirm = page.getByRole('group', { name: 'Confirm: global always-allow' });
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    await confirm.waitFor({ state: 'detached' });
    expect(c.fx.kernel.permissions.alwaysAllow).toBe(false);
    expect(await page.getByLabel('Global always-allow').isChecked()).toBe(false);

    await page.getByLabel('Global always-allow').check();
    await confirm.getByRole('button', { name: 'Turn on always-allow' }).click();
    await waitFor(() => c.fx.kernel.permissions.alwaysAllow === true, { what: 'always-allow to be on' });
    await page.getByRole('link', { name: 'Audit' }).click();
    await page
      .getByRole('note')
      .getByText(/Global always-allow is on/)
      .waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await undo();
    await waitFor(() => c.fx.kernel.permissions.alwaysAllow === false, { what: 'always-allow to be off again' });
    await page.locator('p.always-allow-on').waitFor({ state: 'detached' });
  });

  it('asks before "Always allow" on a request, stores it once confirmed, and undoes it by revoking', async () => {
    await page.getByRole('link', { name: /Approvals/ }).click();
    const call = c.fx.kernel.invoke({ tool: 'echo_medium', args: { text: 'forever?' }, caller: { kind: 'host', id: 'risky' } });
    const item = page.locator('article.approval[data-tool="echo_medium"]');
    await item.waitFor();
    await item.getByRole('button', { name: 'Always allow' }).click();
    const confirm = item.getByRole('group', { name: 'Confirm: Always allow' });
    await confirm.getByText('Always allow echo_medium? Every later call of it runs without asking').waitFor();
    expect(c.fx.kernel.approvals.pending()).toHaveLength(1);
    await confirm.getByRole('button', { name: 'Always allow echo_medium' }).click();
    expect(await call).toMatchObject({ ok: true });
    expect(c.fx.kernel.permissions.find('echo_medium', Date.now()).allow?.scope).toBe('forever');
    await undo();
    await waitFor(() => c.fx.kernel.permissions.find('echo_medium', Date.now()).allow === undefined, { what: 'the stored allow to be revoked' });
  });

  it('asks before letting every external client ask to write, and undoes it', async () => {
    await page.getByRole('link', { name: 'Permissions' }).click();
    await page.getByLabel('Every external client may ask to write').check();
    await page.getByRole('group', { name: 'Confirm: external writes' }).getByRole('button', { name: 'Let them ask' }).click();
    await page.getByRole('group', { name: 'Undo' }).getByText('Every external client may ask to write').waitFor();
    await undo();
    await waitFor(async () => !(await page.getByLabel('Every external client may ask to write').isChecked()), { what: 'external writes off again' });
  });

  it('asks before revoking a stored deny, and revokes it only when confirmed', async () => {
    c.fx.kernel.permissions.set({ tool: 'echo_dangerous', decision: 'deny', plugin: 'echo-pack', scope: 'forever' }, new Date());
    await page.getByRole('link', { name: 'Audit' }).click();
    await page.getByRole('link', { name: 'Permissions' }).click();
    const row = page.locator('tr[data-tool="echo_dangerous"]');
    await row.getByRole('button', { name: 'Revoke echo_dangerous' }).click();
    await row.getByRole('button', { name: 'Cancel' }).click();
    expect(c.fx.kernel.permissions.find('echo_dangerous', Date.now()).deny).toBeDefined();
    await row.getByRole('button', { name: 'Revoke echo_dangerous' }).click();
    await row.getByRole('button', { name: 'Revoke the deny' }).click();
    await waitFor(() => c.fx.kernel.permissions.find('echo_dangerous', Date.now()).deny === undefined, { what: 'the deny to be revoked' });
  });

  it('asks before disabling the file tools, and undoes it', async () => {
    await page.getByRole('link', { name: 'Packs' }).click();
    const card = page.locator('article.pack[data-pack="fs-tools"]');
    await card.getByRole('button', { name: 'Disable File tools', exact: true }).click();
    await card.getByText(/Agents and MCP clients lose its \d+ tools/).waitFor();
    expect(enabled('fs-tools')).toBe(true);
    await card.getByRole('button', { name: /^Disable / }).click();
    await waitFor(() => !enabled('fs-tools'), { what: 'fs-tools to be disabled' });
    await undo();
    await waitFor(() => enabled('fs-tools'), { what: 'fs-tools to be enabled again' });
  });
});
