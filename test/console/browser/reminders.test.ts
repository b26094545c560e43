/**
 * Reminders in the console, in real headless Chromium, with the real vault pack and its reminder
 * service on a fake clock: one delivered while the page is open appears at once, and as a system
 * notification when the tab is in the background; one delivered before the page opened is there when
 * it loads; a dismissed one stays dismissed after a reload. The system notification itself is the
 * browser's edge (headless Chromium shows none): the page's `Notification` is recorded instead.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { ManualClock } from '../../../kernel/clock.js';
import { waitFor } from '../../helpers/wait.js';
import { consoleFixture, type ConsoleFixture } from '../console-helpers.js';
import { launchChromium, recordNotifications, screenshotPath, seriousViolations } from './browser-helpers.js';

const HOUR = 3_600_000;

describe('reminders in the console, in Chromium', () => {
  let c: ConsoleFixture;
  let browser: Browser;
  let page: Page;
  let clock: ManualClock;

  /** A reminder made through the pipeline as a host call a person answered (the fixture has no face). */
  async function remind(title: string, inMs: number, note?: string): Promise<void> {
    const k = c.fx.kernel;
    const made = k.invoke({
      tool: 'vault_desktop_write',
      args: { operation: 'reminders.create', args: [{ title, remindAt: new Date(clock.now() + inMs).toISOString(), ...(note ? { note } : {}) }] },
      caller: { kind: 'host', id: 'test' },
    });
    const asked = await waitFor(() => k.approvals.pending().find((p) => p.request.tool === 'vault_desktop_write'), { what: 'the reminder to be asked' });
    k.approvals.answer(asked.id, 'allow-once', 'test');
    const r = await made;
    if (!r.ok || (r.value as { success?: boolean }).success !== true) throw new Error(JSON.stringify(r));
  }

  const open = async () => {
    await page.goto(c.link());
    await page.getByRole('heading', { name: 'Approvals' }).waitFor();
    await page.getByText('live', { exact: true }).waitFor();
  };

  const history = async () => {
    const r = await c.fx.kernel.invoke({
      tool: 'vault_desktop_read',
      args: { operation: 'reminders.history', args: [] },
      caller: { kind: 'host', id: 'test' },
    });
    return r.ok ? ((r.value as { count: number }).count ?? 0) : -1;
  };

  beforeAll(async () => {
    browser = await launchChromium();
    clock = new ManualClock(Math.ceil(Date.now() / 1000) * 1000);
    c = await consoleFixture({ clock });
    const k = c.fx.kernel;
    const loaded = await k.loadPacks([{ dir: path.resolve('plugins'), source: 'builtin', only: ['vault'] }]);
    expect(loaded.map((s) => s.status)).toEqual(['loaded']);
    k.packs.setConfig('vault', { watch: false });
    fs.mkdirSync(path.join(c.fx.root, 'vault'));
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    // The page's view of the browser's notification API: granted, and each notification recorded;
    // whether the tab is hidden is the test's to say.
    await recordNotifications(context);
    page = await context.newPage();
  });
  afterAll(async () => {
    await page?.context().close();
    await c?.close();
  });

  it('shows a reminder delivered before the page opened, and one delivered while it is open at once, as a system notification when the tab is hidden', async () => {
    // With a page open the broker has someone to ask; then the page goes away before the first falls due.
    await open();
    await remind('Water the plants', HOUR, 'the ones on the balcony');
    await remind('Call Sam', 2 * HOUR);
    await page.goto('about:blank');
    await c.fx.kernel.start();
    clock.advance(HOUR);
    await waitFor(async () => (await history()) === 1, { what: 'the first reminder to be delivered' });

    await open();
    const section = page.getByRole('region', { name: 'Reminders' });
    await section.getByText('Water the plants').waitFor();
    await section.getByText('the ones on the balcony').waitFor();

    await page.evaluate(() => ((window as any).__hidden = true));
    clock.advance(HOUR);
    await section.getByText('Call Sam').waitFor();
    await page.getByRole('status').getByText('Reminder: Call Sam').waitFor();
    expect(await page.evaluate(() => (window as any).__notifications)).toEqual([
      { title: 'Reminder: Call Sam', body: '', tag: expect.stringMatching(/^memo-reminder-/) },
    ]);

    expect(await seriousViolations(page)).toEqual([]);
    const shot = screenshotPath('reminders-1280');
    if (shot) await section.screenshot({ path: shot });
  });

  it('dismisses a reminder, which stays dismissed after a reload, and shows no notification for a visible tab', async () => {
    const section = page.getByRole('region', { name: 'Reminders' });
    await section.getByRole('listitem').filter({ hasText: 'Water the plants' }).getByRole('button', { name: 'Dismiss' }).click();
    await section.getByText('Water the plants').waitFor({ state: 'detached' });
    await page.reload();
    await page.getByRole('heading', { name: 'Approvals' }).waitFor();
    await section.getByText('Call Sam').waitFor();
    expect(await section.getByText('Water the plants').count()).toBe(0);

    await page.evaluate(() => ((window as any).__hidden = false));
    await remind('Stretch', HOUR);
    clock.advance(HOUR);
    await section.getByText('Stretch').waitFor();
    expect(await page.evaluate(() => (window as any).__notifications.length)).toBe(0);
  });
});
