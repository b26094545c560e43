/**
 * Packs' own pages in the console (#/pack/ID), made from their console panels' lists, in real
 * headless Chromium with the real routines, vault, calendar and WhatsApp packs: routines as rows with
 * their own Runs / Run now / Cancel buttons (an empty list says so in words), notes searched and the
 * latest changes (a note opens, and Back returns to the pack's page), the week's events and the
 * calendars read, and the WhatsApp pairing QR replaced while shown (on the page's clock) until the
 * phone is linked. An outcome stays when the person goes to another page and back. axe-core finds no
 * serious violation; at 390 px nothing is wider than the screen.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { echoPack } from '../../helpers/kernel-fixture.js';
import { reply, ScriptedProvider } from '../../helpers/scripted-provider.js';
import { waitFor } from '../../helpers/wait.js';
import { fakeMaker, fakeWhatsAppHost } from '../../plugins/whatsapp/fake-socket.js';
import { consoleFixture, type ConsoleFixture } from '../console-helpers.js';
import { launchChromium, seriousViolations } from './browser-helpers.js';

/** WhatsApp's servers are the edge of the world: a host pack offers the fake socket. */
const whatsappServers = fakeMaker();

describe("packs' own pages in the console, in Chromium", () => {
  let c: ConsoleFixture;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    browser = await launchChromium();
    c = await consoleFixture({ packs: [echoPack(), fakeWhatsAppHost(whatsappServers)] });
    const k = c.fx.kernel;
    k.providers.register('scripted', (config) => Object.assign(new ScriptedProvider(() => reply('All quiet.')), { name: config.name }), 'test');
    k.providerSettings.put({ name: 'scripted-one', kind: 'scripted', model: 'model-a' });
    const vault = path.join(c.fx.root, 'vault');
    fs.mkdirSync(path.join(vault, 'ops'), { recursive: true });
    fs.writeFileSync(path.join(vault, 'ops', 'Kubernetes upgrade.md'), '# Kubernetes upgrade\n\nDrain the nodes one by one.\n');
    fs.writeFileSync(path.join(vault, 'Groceries.md'), '# Groceries\n\nMilk, bread.\n');
    const loaded = await k.loadPacks([{ dir: path.resolve('plugins'), source: 'builtin', only: ['routines', 'vault', 'calendar', 'whatsapp'] }]);
    expect(loaded.map((s) => [s.id, s.status])).toEqual(
      expect.arrayContaining([
        ['routines', 'loaded'],
        ['vault', 'loaded'],
        ['calendar', 'loaded'],
        ['whatsapp', 'loaded'],
      ]),
    );
    k.packs.setConfig('calendar', { timeZone: 'UTC' });
    k.packs.setConfig('vault', { watch: false });
    context = await browser.newContext({ viewport: { width: 1280, height: 900 }, timezoneId: 'UTC', locale: 'en-US' });
    page = await context.newPage();
    await page.goto(c.link());
    await page.getByRole('heading', { name: 'Approvals' }).waitFor();
  });
  afterAll(async () => {
    await context?.close();
    await c?.close();
  });

  const open = async (pack: string, heading: string) => {
    await page.evaluate((p) => (window.location.hash = `#/pack/${p}`), pack);
    await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
  };
  /** A call a person answers: made as the host, allowed in the broker once asked. */
  const approved = async (tool: string, args: Record<string, unknown>) => {
    const k = c.fx.kernel;
    const made = k.invoke({ tool, args, caller: { kind: 'host', id: 'test' } });
    const asked = await waitFor(() => k.approvals.pending().find((p) => p.request.tool === tool), { what: `${tool} to be asked` });
    k.approvals.answer(asked.id, 'allow-once', 'test');
    const r = await made;
    if (!r.ok) throw new Error(r.error.message);
    return r.value as Record<string, unknown>;
  };

  it('says in words that there are no routines yet, never as raw JSON', async () => {
    await open('routines', 'Routines');
    await page.getByText(/^No routines yet\. Ask the agent for one/).waitFor();
    expect(await page.locator('main').innerText()).not.toContain('{"routines"');
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('lists a routine with its schedule and buttons of its own: Run now (asked in the inbox), then Runs shows the run; the outcome stays across pages', async () => {
    await approved('create_routine', { name: 'Evening check', prompt: 'Anything new?', schedule: { kind: 'cron', cron: '0 18 * * *', time_zone: 'UTC' } });
    await page.getByRole('button', { name: 'Refresh Routines' }).click();
    const row = page.locator('table.panel-rows tr', { hasText: 'Evening check' });
    await row.waitFor();
    expect(await row.innerText()).toContain('active');
    await row.getByRole('button', { name: 'Run now: Evening check' }).click();
    const asked = await waitFor(() => c.fx.kernel.approvals.pending().find((p) => p.request.tool === 'run_routine_now'), {
      what: 'run_routine_now to be asked',
    });
    expect(asked.request.caller).toEqual({ kind: 'host', id: 'console' });
    c.fx.kernel.approvals.answer(asked.id, 'allow-once', 'test');
    await page.getByText(/^Run now \(Evening check\): Done: started a run of Evening check/).waitFor();
    await waitFor(
      async () => {
        await row.getByRole('button', { name: 'Runs: Evening check' }).click();
        await page.getByText(/^Runs \(Evening check\): Done/).waitFor();
        return (await page.locator('.list-outcome').getByRole('cell', { name: 'ok', exact: true }).count()) > 0;
      },
      { what: 'the run to show as ok' },
    );
    expect(await seriousViolations(page)).toEqual([]);
    // Away and back: the outcome is still there.
    await page.getByRole('link', { name: 'Audit' }).click();
    await page.getByRole('heading', { name: 'Audit trail' }).waitFor();
    await open('routines', 'Routines');
    await page.getByText(/^Runs \(Evening check\): Done/).waitFor();
  });

  it('searches notes and lists the latest changes; a note opens, and Back returns to the vault page', async () => {
    await open('vault', 'Vault');
    const recent = page.locator('section.panel-list', { has: page.getByRole('heading', { name: 'Recent changes' }) });
    await recent.getByRole('link', { name: 'Groceries' }).waitFor();
    await recent.getByRole('link', { name: 'Kubernetes upgrade' }).waitFor();
    const search = page.locator('section.panel-list', { has: page.getByRole('heading', { name: 'Search notes' }) });
    await search.getByLabel('Query').fill('drain nodes');
    await search.getByRole('button', { name: 'Search Search notes' }).click();
    await search.getByText('1 row.', { exact: true }).waitFor();
    expect(await search.locator('tbody tr').innerText()).toContain('ops/Kubernetes upgrade.md');
    expect(await seriousViolations(page)).toEqual([]);
    await search.getByRole('link', { name: 'Kubernetes upgrade' }).click();
    await page.getByText('Drain the nodes one by one.').waitFor();
    await page.getByRole('link', { name: '← Back to the vault page' }).click();
    await page.getByRole('heading', { name: 'Vault', level: 1 }).waitFor();
  });

  it("lists the week's events and the calendars it reads", async () => {
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    await approved('create_calendar_event', { title: 'Dentist', start: `${tomorrow}T09:00`, end: `${tomorrow}T09:30`, timeZone: 'UTC' });
    await open('calendar', 'Calendar');
    const upcoming = page.locator('section.panel-list', { has: page.getByRole('heading', { name: 'Upcoming events' }) });
    await upcoming.getByRole('link', { name: 'Dentist' }).waitFor();
    expect(await upcoming.locator('tbody tr').innerText()).toContain(`${tomorrow}T09:00`);
    const sources = page.locator('section.panel-list', { has: page.getByRole('heading', { name: 'Calendars' }) });
    await sources.getByRole('rowheader', { name: 'local' }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('fits a 390 px phone on each pack page: nothing is wider than the screen', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    for (const [pack, heading] of [
      ['routines', 'Routines'],
      ['vault', 'Vault'],
      ['calendar', 'Calendar'],
      ['whatsapp', 'WhatsApp'],
    ] as const) {
      await open(pack, heading);
      await page.locator('section.panel').first().waitFor();
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      expect([pack, width <= 390 ? 'fits' : `${width} px wide`]).toEqual([pack, 'fits']);
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('replaces the WhatsApp pairing QR while it is shown (on the page clock), and stops once the phone is linked', async () => {
    const clocked = await context.newPage();
    await clocked.clock.install();
    await clocked.goto(c.link());
    await clocked.getByRole('heading', { name: 'Approvals' }).waitFor();
    await clocked.evaluate(() => (window.location.hash = '#/pack/whatsapp'));
    const panel = clocked.locator('section.panel', { has: clocked.getByRole('heading', { name: 'WhatsApp link' }) });
    await panel.getByRole('button', { name: 'Show the pairing QR' }).click();
    await waitFor(() => whatsappServers.sockets.length > 0, { what: 'the link to open a socket' });
    whatsappServers.last().showQr('2@first-ref');
    const img = panel.getByRole('img', { name: 'Show the pairing QR: qr' });
    await img.waitFor();
    const first = await img.getAttribute('src');
    // WhatsApp offers a new code; the panel asks again after 15 s and shows it.
    whatsappServers.last().showQr('2@second-ref');
    await clocked.clock.runFor(15_000);
    await waitFor(async () => (await img.getAttribute('src')) !== first, { what: 'the QR to be replaced' });
    // Linked (Baileys restarts the socket after pairing, then it opens): the next answer says so, and nothing is asked after it.
    const sock = whatsappServers.last();
    const count = whatsappServers.sockets.length;
    sock.pair();
    await sock.settle();
    await waitFor(() => whatsappServers.sockets.length > count, { what: 'the socket after the restart' });
    whatsappServers.last().open();
    await whatsappServers.last().settle();
    await clocked.clock.runFor(15_000);
    // The answer is {linked: true, account}: no QR any more.
    await img.waitFor({ state: 'detached' });
    expect(await panel.locator('.result-view').innerText()).toContain('"linked": true');
    const asked = await clocked.evaluate(() => performance.getEntriesByType('resource').filter((e) => e.name.includes('/panels/whatsapp/link/qr')).length);
    await clocked.clock.runFor(60_000);
    expect(await clocked.evaluate(() => performance.getEntriesByType('resource').filter((e) => e.name.includes('/panels/whatsapp/link/qr')).length)).toBe(
      asked,
    );
    await clocked.close();
  });
});
