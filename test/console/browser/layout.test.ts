/**
 * Every console page on a 390 px phone and a 1280 px screen, in real headless Chromium, with the
 * real routines, vault and calendar packs and a routine, a stored rule, a provider and a waiting
 * request to show: nothing is wider than the screen, no table is wider than the box it is in (a
 * clipped column), and axe-core finds no serious violation at either width.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { echoPack } from '../../helpers/kernel-fixture.js';
import { reply, ScriptedProvider } from '../../helpers/scripted-provider.js';
import { waitFor } from '../../helpers/wait.js';
import { consoleFixture, type ConsoleFixture } from '../console-helpers.js';
import { launchChromium, seriousViolations } from './browser-helpers.js';

/** Each page: its route and a heading that says it has rendered. */
const PAGES: Array<[string, string]> = [
  ['#/', 'Approvals'],
  ['#/chat', 'Chat'],
  ['#/audit', 'Audit trail'],
  ['#/tools', 'Tools'],
  ['#/packs', 'Packs'],
  ['#/permissions', 'Stored permissions'],
  ['#/providers', 'Providers'],
  ['#/mcp', 'MCP endpoint'],
  ['#/pack/routines', 'Routines'],
  ['#/pack/vault', 'Vault'],
  ['#/pack/calendar', 'Calendar'],
];

describe('every console page at 390 and 1280 px, in Chromium', () => {
  let c: ConsoleFixture;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    browser = await launchChromium();
    c = await consoleFixture({ packs: [echoPack()] });
    const k = c.fx.kernel;
    k.providers.register('scripted', (config) => Object.assign(new ScriptedProvider(() => reply('All quiet.')), { name: config.name }), 'test');
    k.providerSettings.put({ name: 'a-provider-with-a-rather-long-name', kind: 'scripted', model: 'model-with-a-long-name-2026-12-01-preview' });
    fs.mkdirSync(path.join(c.fx.root, 'vault'), { recursive: true });
    fs.writeFileSync(path.join(c.fx.root, 'vault', 'A note with a fairly long title about the quarterly planning.md'), '# Plan\n\nText.\n');
    await k.loadPacks([{ dir: path.resolve('plugins'), source: 'builtin', only: ['routines', 'vault', 'calendar'] }]);
    k.packs.setConfig('calendar', { timeZone: 'UTC' });
    k.packs.setConfig('vault', { watch: false });
    k.permissions.set({ tool: 'echo_medium', decision: 'allow', plugin: 'echo-pack', scope: 'forever' }, new Date());
    context = await browser.newContext({ viewport: { width: 1280, height: 900 }, timezoneId: 'UTC', locale: 'en-US' });
    page = await context.newPage();
    await page.goto(c.link());
    await page.getByRole('heading', { name: 'Approvals' }).waitFor();
    // With the page's event stream open the broker has someone to ask (the fixture has no face of its own).
    await page.getByText('live', { exact: true }).waitFor();
    // A routine to list (asked, and answered as a person), then a request left waiting in the inbox.
    const made = k.invoke({
      tool: 'create_routine',
      args: { name: 'Weekly digest of everything that happened', prompt: 'Summarise.', schedule: { kind: 'cron', cron: '0 8 * * 1', time_zone: 'UTC' } },
      caller: { kind: 'host', id: 'test' },
    });
    const asked = await waitFor(() => k.approvals.pending().find((p) => p.request.tool === 'create_routine'), { what: 'create_routine to be asked' });
    k.approvals.answer(asked.id, 'allow-once', 'test');
    expect((await made).ok).toBe(true);
    void k.invoke({
      tool: 'echo_dangerous',
      args: { text: 'a waiting request with a long argument '.repeat(4) },
      caller: { kind: 'agent', conversationId: 'c-layout' },
    });
    await waitFor(() => k.approvals.pending().length === 1, { what: 'the request to wait' });
  });
  afterAll(async () => {
    await context?.close();
    await c?.close();
  });

  /** What does not fit: the page wider than the screen, or a table wider than its box (a clipped column). */
  const overflow = () =>
    page.evaluate(() => {
      const out: string[] = [];
      const width = document.documentElement.clientWidth;
      if (document.documentElement.scrollWidth > width) {
        // Name the widest element that sticks out, so a failure says where to look.
        const wide = Array.from(document.querySelectorAll('main *, header *, nav *')).filter((e) => e.getBoundingClientRect().right > width + 1);
        const last = wide.filter((e) => !wide.some((o) => o !== e && e.contains(o)))[0];
        out.push(`page ${document.documentElement.scrollWidth} px wide${last ? ` (${last.tagName.toLowerCase()}.${[...last.classList].join('.')})` : ''}`);
      }
      for (const t of Array.from(document.querySelectorAll('table'))) {
        const box = t.parentElement!;
        if (t.getBoundingClientRect().width > box.clientWidth + 1)
          out.push(`table ${t.className || '(no class)'} ${Math.round(t.getBoundingClientRect().width)} px in ${box.clientWidth} px`);
      }
      return out;
    });

  for (const width of [390, 1280]) {
    it(`shows every page at ${width} px with nothing wider than the screen or its box, and no serious axe violation`, async () => {
      await page.setViewportSize({ width, height: 900 });
      const found: Array<[string, string[], string[]]> = [];
      for (const [route, heading] of PAGES) {
        await page.evaluate((r) => (window.location.hash = r), route);
        await page.getByRole('heading', { name: heading, exact: true, level: 1 }).waitFor();
        // Lists and tables load after the heading: wait until nothing says it is loading.
        await page.waitForFunction(() => !document.querySelector('main')?.textContent?.includes('Loading…'));
        found.push([route, await overflow(), await seriousViolations(page)]);
      }
      expect(found).toEqual(PAGES.map(([route]) => [route, [], []]));
    });
  }
});
