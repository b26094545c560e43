/**
 * The console's Packs page with eleven packs (seven built-in, the echo-tools fixture, a pack with
 * settings, one that fails to load, the console), in real headless Chromium: every pack starts closed
 * on one summary line (a failure shows even so), search narrows the list and says how many match, a
 * pack opens with its button (by mouse or keyboard) to its description, tools, settings and panels,
 * every Enable/Disable button says which pack it acts on, settings are labelled by their schema title
 * or their key in words with the key beside it, and a refused value is shown under its field while
 * nothing is saved. axe-core finds no serious violation in each state; at 390 px nothing is wider than
 * the screen and the closed list stays short.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { tempDir } from '../../helpers/kernel-fixture.js';
import { waitFor } from '../../helpers/wait.js';
import { consoleFixture, type ConsoleFixture } from '../console-helpers.js';
import { launchChromium, screenshotPath, seriousViolations } from './browser-helpers.js';

const BUILTIN = ['calendar', 'canvas', 'fs-tools', 'providers', 'routines', 'shell', 'web-search'];
const TOTAL = BUILTIN.length + 4; // + echo-tools, mailer, broken and the console itself

/** A pack folder: its plugin.json and index.js. */
function writePack(root: string, id: string, manifest: Record<string, unknown>, code: string): void {
  fs.mkdirSync(path.join(root, id));
  fs.writeFileSync(path.join(root, id, 'plugin.json'), JSON.stringify({ id, version: '1.0.0', main: 'index.js', ...manifest }, null, 2));
  fs.writeFileSync(path.join(root, id, 'index.js'), code);
}

const object = (properties: Record<string, unknown> = {}) => ({ type: 'object', properties, additionalProperties: false });

describe('the Packs page in Chromium', () => {
  let c: ConsoleFixture;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    browser = await launchChromium();
    c = await consoleFixture({});
    const dir = tempDir('memo-packs-page-');
    writePack(
      dir,
      'mailer',
      {
        name: 'Mailer',
        version: '2.1.0',
        description: 'Sends mail through an SMTP relay and keeps an outbox.',
        tools: [
          { name: 'mail_send', description: 'Sends one message.', parameters: object({ to: { type: 'string' } }), danger: 'medium', effect: 'write' },
          { name: 'mail_outbox', description: 'Lists the messages sent.', parameters: object(), danger: 'safe', effect: 'read' },
        ],
        config: {
          type: 'object',
          additionalProperties: false,
          properties: {
            server: {
              type: 'string',
              title: 'SMTP server',
              pattern: '^[a-z0-9.-]+$',
              default: 'smtp.example.org',
              description: 'The relay mail goes through.',
            },
            timeoutMs: { type: 'integer', minimum: 1000, maximum: 60000, default: 5000, description: 'How long one send may take.' },
            apiKeyEnv: { type: 'string', default: 'MAILER_KEY', description: 'The environment variable that holds the relay key.' },
            tls: { type: 'boolean', default: true },
          },
        },
      },
      'export const tools = { mail_send: () => ({ sent: true }), mail_outbox: () => ({ messages: [] }) };\n',
    );
    writePack(dir, 'broken', { name: 'Broken', description: 'Never starts.', tools: [] }, 'throw new Error("cannot start: no licence file");\n');
    const k = c.fx.kernel;
    const builtin = await k.loadPacks([{ dir: path.resolve('plugins'), source: 'builtin', only: BUILTIN }]);
    expect(builtin.map((s) => [s.id, s.status])).toEqual(BUILTIN.map((id) => [id, 'loaded']));
    const extra = await k.packs.load([
      { dir: path.resolve('test/fixtures/packs'), source: 'extra', only: ['echo-tools'] },
      { dir, source: 'extra' },
    ]);
    expect(Object.fromEntries(extra.map((s) => [s.id, s.status]))).toEqual({ 'echo-tools': 'loaded', mailer: 'loaded', broken: 'failed' });
    expect(k.packs.list()).toHaveLength(TOTAL);
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    await page.goto(c.link());
    await page.getByRole('heading', { name: 'Approvals' }).waitFor();
    await page.getByRole('link', { name: 'Packs' }).click();
    await page.getByRole('heading', { name: 'Skills' }).waitFor();
  });
  afterAll(async () => {
    await context?.close();
    await c?.close();
  });

  const card = (id: string) => page.locator(`article.pack[data-pack="${id}"]`);
  const toggle = (name: string) => page.getByRole('button', { name, exact: true });
  const total = () => page.locator('p.pack-total');
  const pageHeight = () => page.evaluate(() => document.documentElement.scrollHeight);
  const expanded = (l: Locator) => l.getAttribute('aria-expanded');

  it('starts with every pack closed on one summary line, a load failure shown even so', async () => {
    await total().getByText(`${TOTAL} packs.`, { exact: true }).waitFor();
    expect(await page.locator('article.pack[data-pack]').count()).toBe(TOTAL);
    const toggles = page.locator('article.pack button.pack-toggle');
    expect(await toggles.count()).toBe(TOTAL);
    for (const t of await toggles.all()) expect(await expanded(t)).toBe('false');
    // Closed: the summary only (name, version, status, tool count and its button), not the description or tools.
    const mailer = card('mailer');
    expect((await mailer.innerText()).replace(/\s+/g, ' ').trim()).toBe('Mailer 2.1.0 enabled 2 tools Disable');
    expect(await mailer.getByText('Sends mail through an SMTP relay').isVisible()).toBe(false);
    // Panels show only in an open pack (Routines has one).
    expect(await card('routines').locator('section.panel').count()).toBe(0);
    await card('broken').getByText('failed to load', { exact: true }).waitFor();
    await card('broken')
      .getByText(/cannot start: no licence file/)
      .waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    const shot = screenshotPath('packs-closed-1280');
    if (shot) await page.screenshot({ path: shot, fullPage: true });
  });

  it("shows a newer version that did not load on the closed line too (the server's list answered with one)", async () => {
    // A reload failure needs a pack folder changed under a watching kernel: here the list says so instead.
    await page.route('**/ui/api/packs', async (route) => {
      const res = await route.fetch();
      const packs = (await res.json()) as Array<Record<string, unknown>>;
      const changed = packs.map((p) => (p.id === 'shell' ? { ...p, reloadError: 'index.js: SyntaxError: Unexpected token\n  at line 3' } : p));
      await route.fulfill({ response: res, json: changed });
    });
    try {
      await page.getByRole('link', { name: 'Tools', exact: true }).click();
      await page.getByRole('link', { name: 'Packs' }).click();
      const shell = card('shell');
      await shell.getByText('Newest version did not load (the previous one runs): index.js: SyntaxError: Unexpected token', { exact: true }).waitFor();
      expect(await expanded(toggle('Shell'))).toBe('false');
      await toggle('Shell').click();
      await shell.locator('pre.problem', { hasText: 'at line 3' }).waitFor();
      await toggle('Shell').click();
    } finally {
      await page.unroute('**/ui/api/packs');
    }
    await page.getByRole('link', { name: 'Tools', exact: true }).click();
    await page.getByRole('link', { name: 'Packs' }).click();
    await total().getByText(`${TOTAL} packs.`, { exact: true }).waitFor();
    expect(
      await card('shell')
        .getByText(/Newest version did not load/)
        .count(),
    ).toBe(0);
  });

  it('narrows the list by name, description or tool name as one types, saying how many match', async () => {
    const search = page.getByRole('searchbox', { name: 'Search' });
    await search.fill('mail_outbox');
    await total().getByText(`1 of ${TOTAL} packs.`, { exact: true }).waitFor();
    expect(await page.locator('article.pack[data-pack]').evaluateAll((els) => els.map((e) => e.getAttribute('data-pack')))).toEqual(['mailer']);
    await search.fill('duckduckgo');
    await total().getByText(`1 of ${TOTAL} packs.`, { exact: true }).waitFor();
    await card('web-search').waitFor();
    await search.fill('Shell');
    await total().getByText(`1 of ${TOTAL} packs.`, { exact: true }).waitFor();
    await card('shell').waitFor();
    // Words each match somewhere: "echo" (fixture name) and "note_write" (its tool).
    await search.fill('echo note_write');
    await total().getByText(`1 of ${TOTAL} packs.`, { exact: true }).waitFor();
    await card('echo-tools').waitFor();
    await search.fill('file');
    await waitFor(async () => /^\d+ of \d+ packs\.$/.test(await total().innerText()), { what: 'a partial count' });
    const shown = await page.locator('article.pack[data-pack]').count();
    expect(shown).toBeGreaterThan(1);
    expect(shown).toBeLessThan(TOTAL);
    expect(await total().innerText()).toBe(`${shown} of ${TOTAL} packs.`);
    expect(await seriousViolations(page)).toEqual([]);
    await search.fill('no such pack anywhere');
    await total().getByText(`0 of ${TOTAL} packs: none matches.`, { exact: true }).waitFor();
    expect(await page.locator('article.pack[data-pack]').count()).toBe(0);
    await search.fill('');
    await total().getByText(`${TOTAL} packs.`, { exact: true }).waitFor();
  });

  it('opens a pack with its button, by mouse or keyboard, to its description, tools, settings and panels', async () => {
    const mailer = card('mailer');
    await toggle('Mailer').click();
    expect(await expanded(toggle('Mailer'))).toBe('true');
    await mailer.getByText('Sends mail through an SMTP relay and keeps an outbox.').waitFor();
    await mailer.getByText('2 tools: mail_send, mail_outbox', { exact: true }).waitFor();
    await mailer.getByRole('button', { name: 'Settings of Mailer', exact: true }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await toggle('Mailer').click();
    expect(await expanded(toggle('Mailer'))).toBe('false');
    expect(await mailer.getByText('2 tools: mail_send, mail_outbox').count()).toBe(0);

    // The keyboard: focus the name, Enter opens, Space closes.
    await toggle('Routines').focus();
    await page.keyboard.press('Enter');
    expect(await expanded(toggle('Routines'))).toBe('true');
    await card('routines')
      .locator('section.panel', { has: page.getByRole('heading', { name: 'Routines' }) })
      .waitFor();
    await page.keyboard.press('Space');
    expect(await expanded(toggle('Routines'))).toBe('false');
    expect(await card('routines').locator('section.panel').count()).toBe(0);

    // A failed pack opens to its whole error.
    await toggle('broken').click();
    await card('broken').locator('pre.problem', { hasText: 'cannot start: no licence file' }).waitFor();
    await toggle('broken').click();

    // Open all / Close all act on the packs shown.
    await page.getByRole('button', { name: 'Open all', exact: true }).click();
    for (const t of await page.locator('article.pack button.pack-toggle').all()) expect(await expanded(t)).toBe('true');
    expect(await seriousViolations(page)).toEqual([]);
    const shot = screenshotPath('packs-open-1280');
    if (shot) await page.screenshot({ path: shot, fullPage: true });
    await page.getByRole('button', { name: 'Close all', exact: true }).click();
    for (const t of await page.locator('article.pack button.pack-toggle').all()) expect(await expanded(t)).toBe('false');
  });

  it('names every Enable and Disable button with its pack, and the one clicked acts on that pack', async () => {
    expect(await page.getByRole('button', { name: 'Disable', exact: true }).count()).toBe(0);
    for (const state of c.fx.kernel.packs.list().filter((s) => s.status === 'loaded')) {
      const name = state.manifest!.name;
      expect(
        await card(state.id)
          .getByRole('button', { name: `Disable ${name}`, exact: true })
          .count(),
      ).toBe(1);
    }
    await page.getByRole('button', { name: 'Disable Mailer', exact: true }).click();
    await page.getByRole('button', { name: 'Enable Mailer', exact: true }).waitFor();
    expect(c.fx.kernel.packs.get('mailer')!.enabled).toBe(false);
    expect(c.fx.kernel.packs.get('web-search')!.enabled).toBe(true);
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByRole('button', { name: 'Enable Mailer', exact: true }).click();
    await page.getByRole('button', { name: 'Disable Mailer', exact: true }).waitFor();
    expect(c.fx.kernel.packs.get('mailer')!.enabled).toBe(true);
  });

  it('labels each setting by its schema title, or its key in words, with the key beside it as memo plugins config takes it', async () => {
    const mailer = card('mailer');
    await toggle('Mailer').click();
    await mailer.getByRole('button', { name: 'Settings of Mailer', exact: true }).click();
    const form = mailer.getByRole('form', { name: 'Settings of Mailer' });
    const fields: Array<[string, string]> = [
      ['SMTP server', 'server'],
      ['Timeout (ms)', 'timeoutMs'],
      ['API key env', 'apiKeyEnv'],
      ['TLS', 'tls'],
    ];
    for (const [label, key] of fields) {
      const input = form.getByLabel(label, { exact: true });
      await input.waitFor();
      const id = await input.getAttribute('id');
      // The key, in code, beside the label, and read out with the field's description.
      await form.locator('.field-name code', { hasText: key }).waitFor();
      expect(await form.locator(`#${id}-key`).innerText()).toBe(key);
      expect((await input.getAttribute('aria-describedby'))!.split(' ')).toContain(`${id}-key`);
    }
    expect(await form.getByLabel('Timeout (ms)', { exact: true }).inputValue()).toBe('5000');
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('shows a refused value under its field, marked invalid, and saves nothing; a valid value is then saved', async () => {
    const form = card('mailer').getByRole('form', { name: 'Settings of Mailer' });
    const timeout = form.getByLabel('Timeout (ms)', { exact: true });
    const server = form.getByLabel('SMTP server', { exact: true });
    await timeout.fill('10');
    await server.fill('not a host!');
    await form.getByRole('button', { name: 'Save settings' }).click();
    await form
      .getByRole('alert')
      .getByText(/^Invalid settings for pack "mailer": /)
      .waitFor();
    expect(await timeout.getAttribute('aria-invalid')).toBe('true');
    expect(await server.getAttribute('aria-invalid')).toBe('true');
    expect(await form.getByLabel('API key env', { exact: true }).getAttribute('aria-invalid')).toBeNull();
    const problem = async (input: Locator) => {
      const ids = (await input.getAttribute('aria-describedby'))!.split(' ').filter((i) => i.endsWith('-problem'));
      expect(ids).toHaveLength(1);
      return form.locator(`#${ids[0]}`).innerText();
    };
    expect(await problem(timeout)).toBe('must be >= 1000');
    expect(await problem(server)).toBe('must match pattern "^[a-z0-9.-]+$"');
    // The first field refused takes the focus.
    expect(await server.evaluate((el) => el === document.activeElement)).toBe(true);
    expect(c.fx.kernel.packs.config('mailer')).toMatchObject({ server: 'smtp.example.org', timeoutMs: 5000 });
    expect(await seriousViolations(page)).toEqual([]);
    const shot = screenshotPath('packs-settings-refused-1280');
    if (shot) await card('mailer').screenshot({ path: shot });

    // Correcting one field clears its mark; the other keeps its own until the next save.
    await server.fill('relay.example.org');
    expect(await server.getAttribute('aria-invalid')).toBeNull();
    expect(await timeout.getAttribute('aria-invalid')).toBe('true');
    await timeout.fill('2500');
    await form.getByRole('button', { name: 'Save settings' }).click();
    await form.getByText('Saved.', { exact: true }).waitFor();
    expect(await form.getByRole('alert').count()).toBe(0);
    expect(await timeout.getAttribute('aria-invalid')).toBeNull();
    expect(c.fx.kernel.packs.config('mailer')).toMatchObject({ server: 'relay.example.org', timeoutMs: 2500, apiKeyEnv: 'MAILER_KEY' });
  });

  it('fits a 390 px screen, and the closed list is a fraction of the page it was', async () => {
    await page.getByRole('button', { name: 'Open all', exact: true }).click();
    const open1280 = await pageHeight();
    await page.getByRole('button', { name: 'Close all', exact: true }).click();
    const closed1280 = await pageHeight();
    await page.setViewportSize({ width: 390, height: 800 });
    try {
      await waitFor(async () => (await page.evaluate(() => window.innerWidth)) === 390, { what: 'the narrow viewport' });
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
      const closed390 = await pageHeight();
      // Every pack open, as the page was before it closed them (3,711 and 5,480 px for these packs then).
      await page.getByRole('button', { name: 'Open all', exact: true }).click();
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
      const open390 = await pageHeight();
      expect(await seriousViolations(page)).toEqual([]);
      const shot = screenshotPath('packs-open-390');
      if (shot) await page.screenshot({ path: shot, fullPage: true });
      await page.getByRole('button', { name: 'Close all', exact: true }).click();
      const narrow = screenshotPath('packs-closed-390');
      if (narrow) await page.screenshot({ path: narrow, fullPage: true });
      // Measured: 1,043 px closed at 1280 and 1,473 px at 390 (every pack open: 3,856 and 6,220); margins for fonts and a pack more.
      expect(closed1280).toBeLessThan(1500);
      expect(closed390).toBeLessThan(2000);
      expect(closed1280 * 2).toBeLessThan(open1280);
      expect(closed390 * 2).toBeLessThan(open390);
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
    }
  });
});
