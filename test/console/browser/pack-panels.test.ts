/**
 * Pack panels and pictures in the console, in real headless Chromium, with the real vault,
 * calendar, WhatsApp and canvas packs, each panel on its pack's page (the routines' list and the
 * other lists: pack-pages.test.ts): the vault index checked, calendar consent answered as the
 * person, the WhatsApp pairing QR shown; a panel action whose result carries a PNG (a QR, as
 * a WhatsApp link would give) shows it as an image under the strict CSP; a canvas drawing waiting
 * for approval shows the rendered canvas. axe-core scans; screenshots at 1280 and 360 px.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import QRCode from 'qrcode';
import type { Browser, Page } from 'playwright-core';
import type { PackApi } from '../../../kernel/packs/pack-api.js';
import { echoPack, tool } from '../../helpers/kernel-fixture.js';
import { reply, ScriptedProvider } from '../../helpers/scripted-provider.js';
import { waitFor } from '../../helpers/wait.js';
import { fakeMaker, fakeWhatsAppHost } from '../../plugins/whatsapp/fake-socket.js';
import { consoleFixture, type ConsoleFixture } from '../console-helpers.js';
import { axeSource, launchChromium, screenshotPath } from './browser-helpers.js';

/** A pack whose panel action returns a pairing QR as a PNG data: URL (the shape a link tool gives). */
const qrPack = {
  id: 'pairing',
  version: '1.0.0',
  tools: [
    {
      spec: { ...tool('pairing_qr', 'safe', 'read'), parameters: { type: 'object', properties: {}, additionalProperties: false } },
      impl: async () => ({ status: 'waiting for the phone', qr: await QRCode.toDataURL('2@pairing-test-code,abc,def', { margin: 1 }) }),
    },
  ],
  activate: (api: PackApi) => {
    api.panels.register({ id: 'link', title: 'Link a phone', actions: [{ id: 'qr', label: 'Show the QR', tool: 'pairing_qr' }] });
  },
};

async function axeViolations(page: Page): Promise<string[]> {
  await page.evaluate(axeSource());
  return page.evaluate(async () => {
    const r = await (window as any).axe.run(document, { resultTypes: ['violations'] });
    return r.violations
      .filter((v: any) => v.impact === 'serious' || v.impact === 'critical')
      .map((v: any) => `${v.id}: ${v.nodes.map((n: any) => n.target.join(' ')).join(', ')}`);
  });
}

/** WhatsApp's servers are the edge of the world: a host pack offers the fake socket. */
const whatsappServers = fakeMaker();

describe('pack panels and pictures in the console, in Chromium', () => {
  let c: ConsoleFixture;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    browser = await launchChromium();
    c = await consoleFixture({ packs: [echoPack(), qrPack, fakeWhatsAppHost(whatsappServers)] });
    const k = c.fx.kernel;
    k.providers.register('scripted', (config) => Object.assign(new ScriptedProvider(() => reply('All quiet.')), { name: config.name }), 'test');
    k.providerSettings.put({ name: 'scripted-one', kind: 'scripted', model: 'model-a' });
    const loaded = await k.loadPacks([{ dir: path.resolve('plugins'), source: 'builtin', only: ['routines', 'vault', 'canvas', 'calendar', 'whatsapp'] }]);
    expect(loaded.filter((s) => ['routines', 'vault', 'canvas', 'calendar'].includes(s.id)).map((s) => s.status)).toEqual([
      'loaded',
      'loaded',
      'loaded',
      'loaded',
    ]);
    k.packs.setConfig('calendar', { timeZone: 'UTC' });
    k.packs.setConfig('vault', { watch: false });
    fs.mkdirSync(path.join(c.fx.root, 'vault'));
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    await page.goto(c.link());
    await page.getByRole('heading', { name: 'Approvals' }).waitFor();
    // With the page open the broker has someone to ask (the fixture has no face of its own).
    await page.getByText('live', { exact: true }).waitFor();
  });
  afterAll(async () => {
    await page?.context().close();
    await c?.close();
  });

  /** A pack's own page (#/pack/ID), where its panels are. */
  const openPack = async (id: string) => {
    await page.evaluate((p) => (window.location.hash = `#/pack/${p}`), id);
    await page.locator('section.pack-page').waitFor();
  };

  it('checks the vault index from its panel: one click, and it says the index is sound', async () => {
    await openPack('vault');
    const panel = page.locator('section.panel', { has: page.getByRole('heading', { name: 'Vault index' }) });
    await panel.waitFor();
    const check = panel.locator('form.panel-action', { has: page.getByRole('button', { name: 'Check the index' }) });
    await check.getByRole('button', { name: 'Check the index' }).click();
    await check
      .getByRole('status')
      .getByText(/^Done: 0 notes indexed in vault; the index is sound; the planning database is sound/)
      .waitFor();
    expect(await axeViolations(page)).toEqual([]);
    const shot = screenshotPath('vault-index-panel-1280');
    if (shot) await panel.screenshot({ path: shot });
  });

  it('answers calendar consent as the person through the pack’s command (no tool), and shows the answer', async () => {
    await openPack('calendar');
    const panel = page.locator('section.panel', { has: page.getByRole('heading', { name: 'Calendar consent' }) });
    const allow = panel.locator('form.panel-action', { has: page.getByRole('button', { name: 'Allow the AI to read it' }) });
    await allow.getByLabel('service').fill('subscriptions');
    expect(await allow.getByLabel('answer').count()).toBe(0);
    await allow.getByRole('button', { name: 'Allow the AI to read it' }).click();
    await allow.locator('.result-view').getByText('"state": "allowed"').waitFor();
    const shown = panel.locator('form.panel-action', { has: page.getByRole('button', { name: 'Show the answers' }) });
    await shown.getByRole('button', { name: 'Show the answers' }).click();
    await shown.getByRole('cell', { name: 'allowed', exact: true }).waitFor();
    expect(await axeViolations(page)).toEqual([]);
    const shot = screenshotPath('consent-panel-1280');
    if (shot) await panel.screenshot({ path: shot });
  });

  it('shows the WhatsApp pairing QR Baileys built, as an image, from the link panel', async () => {
    await openPack('whatsapp');
    const panel = page.locator('section.panel', { has: page.getByRole('heading', { name: 'WhatsApp link' }) });
    await panel.getByRole('button', { name: 'Show the pairing QR' }).click();
    await waitFor(() => whatsappServers.sockets.length > 0, { what: 'the link to open a socket' });
    whatsappServers.last().showQr();
    const img = panel.getByRole('img', { name: 'Show the pairing QR: qr' });
    await img.waitFor();
    await waitFor(() => img.evaluate((el) => (el as HTMLImageElement).complete && (el as HTMLImageElement).naturalWidth > 0), { what: 'the QR to decode' });
    await panel.getByText(/^Done: memo whatsapp console-qr$/).waitFor();
    await panel.getByText(/^Scan with the phone: WhatsApp > Settings > Linked devices/).waitFor();
    expect(await axeViolations(page)).toEqual([]);
    const shot = screenshotPath('whatsapp-link-1280');
    if (shot) await panel.screenshot({ path: shot });
  });

  it("shows a panel action's PNG result as an image under the console's CSP", async () => {
    await openPack('pairing');
    const panel = page.locator('section.panel', { has: page.getByRole('heading', { name: 'Link a phone' }) });
    await panel.getByRole('button', { name: 'Show the QR' }).click();
    const img = panel.getByRole('img', { name: 'Show the QR: qr' });
    await img.waitFor();
    await waitFor(() => img.evaluate((el) => (el as HTMLImageElement).complete && (el as HTMLImageElement).naturalWidth > 0), { what: 'the QR to decode' });
    expect(await img.getAttribute('src')).toMatch(/^data:image\/png;base64,/);
    await panel.getByRole('cell', { name: 'waiting for the phone' }).count();
    const shot = screenshotPath('qr-panel-1280');
    if (shot) await panel.screenshot({ path: shot });
  });

  it('shows the rendered canvas in a drawing’s approval, and the drawing is made once approved', async () => {
    const making = c.fx.kernel.invoke({ tool: 'vault_create_canvas', args: { name: 'Board' }, caller: { kind: 'host', id: 'test' } });
    const create = await waitFor(() => c.fx.kernel.approvals.pending().find((p) => p.request.tool === 'vault_create_canvas'), {
      what: 'the canvas to be asked',
    });
    c.fx.kernel.approvals.answer(create.id, 'allow-once', 'test');
    expect((await making).ok).toBe(true);
    await page.getByRole('link', { name: 'Approvals' }).click();
    const drawing = c.fx.kernel.invoke({
      tool: 'vault_draw_on_canvas',
      args: { canvas: 'Board', elements: [{ type: 'rectangle', x: 0, y: 0, width: 240, height: 90, label: { text: 'Launch plan' } }] },
      caller: { kind: 'agent', conversationId: 'c-canvas' },
    });
    const card = page.locator('article.approval[data-tool="vault_draw_on_canvas"]');
    const img = card.getByRole('img', { name: 'How the canvas would look after this change' });
    await img.waitFor();
    await waitFor(() => img.evaluate((el) => (el as HTMLImageElement).complete && (el as HTMLImageElement).naturalWidth > 0), {
      what: 'the drawing to decode',
    });
    expect(await axeViolations(page)).toEqual([]);
    const shot = screenshotPath('canvas-approval-1280');
    if (shot) await card.screenshot({ path: shot });
    await page.setViewportSize({ width: 360, height: 800 });
    expect(await page.evaluate(() => document.scrollingElement!.scrollWidth)).toBeLessThanOrEqual(360);
    const narrow = screenshotPath('canvas-approval-360');
    if (narrow) await page.screenshot({ path: narrow, fullPage: true });
    await card.getByRole('button', { name: 'Allow once' }).click();
    const r = await drawing;
    expect(r.ok).toBe(true);
    await page.setViewportSize({ width: 1280, height: 900 });
  });
});
