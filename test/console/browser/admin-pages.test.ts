/**
 * The console's audit viewer, packs and stored permissions pages in real headless Chromium:
 * disabling a pack in the page takes its tools away from an MCP client, its settings form saves
 * through the pack's schema, a stored permission is revoked, and the audit viewer filters, opens an
 * entry and verifies the chain. Each page passes an axe-core scan with no serious violations.
 */
import * as path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { PackApi } from '../../../kernel/packs/pack-api.js';
import { echoPack, tool } from '../../helpers/kernel-fixture.js';
import { waitFor } from '../../helpers/wait.js';
import { connect, type Connected } from '../../mcp/mcp-helpers.js';
import { consoleFixture, type ConsoleFixture } from '../console-helpers.js';
import { axeSource, launchChromium, screenshotPath, seriousViolations as violationsOn } from './browser-helpers.js';

/** A pack registered in code with a console panel: one action, a medium write with a fixed argument. */
const greeter = {
  id: 'greeter',
  version: '1.0.0',
  tools: [
    {
      spec: {
        ...tool('greet', 'medium', 'write'),
        parameters: {
          type: 'object',
          properties: { name: { type: 'string', description: 'who to greet' }, loud: { type: 'boolean' }, times: { type: 'integer', minimum: 1 } },
          required: ['name'],
          additionalProperties: false,
        },
      },
      impl: (a: Record<string, unknown>) => ({ greeting: `hello ${String(a.name)}${a.loud ? '!' : ''}`, times: a.times }),
    },
  ],
  activate: (api: PackApi) => {
    api.panels.register({
      id: 'greetings',
      title: 'Greetings',
      description: 'Say hello to someone.',
      actions: [{ id: 'greet', label: 'Greet', tool: 'greet', args: { times: 2 } }],
    });
  },
};

describe('the console admin pages in Chromium', () => {
  let c: ConsoleFixture;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let mcp: Connected;

  beforeAll(async () => {
    browser = await launchChromium();
    c = await consoleFixture({ packs: [echoPack(), greeter] });
    await c.fx.kernel.packs.load([{ dir: path.resolve('test/fixtures/packs'), source: 'extra', only: ['echo-tools'] }]);
    mcp = await connect(c.endpoint.url, c.endpoint.token, { name: 'admin-browser' });
    context = await browser.newContext({ viewport: { width: 1024, height: 800 } });
    page = await context.newPage();
    await page.goto(c.link());
    await page.getByRole('heading', { name: 'Approvals' }).waitFor();
  });
  afterAll(async () => {
    await mcp?.close();
    await context?.close();
    await c?.close();
  });

  async function seriousViolations(): Promise<string[]> {
    await page.evaluate(axeSource());
    return page.evaluate(async () => {
      const r = await (window as any).axe.run(document, { resultTypes: ['violations'] });
      return r.violations
        .filter((v: any) => v.impact === 'serious' || v.impact === 'critical')
        .map((v: any) => `${v.id}: ${v.nodes.map((n: any) => n.target.join(' ')).join(', ')}`);
    });
  }

  const mcpTools = async () => (await mcp.client.listTools()).tools.map((t) => t.name);

  it('disables a pack: its tools vanish from MCP; enabling brings them back', async () => {
    expect(await mcpTools()).toContain('echo');
    await page.getByRole('link', { name: 'Packs' }).click();
    const pack = page.locator('article.pack[data-pack="echo-tools"]');
    await pack.waitFor();
    await page.getByRole('heading', { name: 'Skills' }).waitFor();
    expect(await seriousViolations()).toEqual([]);
    await pack.getByRole('button', { name: 'Disable Echo tools (test fixture)', exact: true }).click();
    await pack.getByText('disabled', { exact: true }).waitFor();
    await waitFor(async () => !(await mcpTools()).includes('echo'), { what: 'echo to leave the MCP tool list' });
    await pack.getByRole('button', { name: 'Enable Echo tools (test fixture)', exact: true }).click();
    await waitFor(async () => (await mcpTools()).includes('echo'), { what: 'echo to come back' });
  });

  it('saves pack settings from the form the config schema makes; an out-of-range value is refused under its field and not saved', async () => {
    const pack = page.locator('article.pack[data-pack="echo-tools"]');
    // Packs start closed: the name opens one.
    await pack.getByRole('button', { name: 'Echo tools (test fixture)', exact: true }).click();
    await pack.getByRole('button', { name: 'Settings of Echo tools (test fixture)', exact: true }).click();
    await pack.getByLabel('Prefix', { exact: true }).fill('>> ');
    await pack.getByLabel('Repeat', { exact: true }).fill('3');
    await pack.getByRole('button', { name: 'Save settings' }).click();
    await pack.getByText('Saved.').waitFor();
    expect(c.fx.kernel.packs.config('echo-tools')).toMatchObject({ prefix: '>> ', repeat: 3 });
    const repeat = pack.getByLabel('Repeat', { exact: true });
    await repeat.fill('9');
    // The input carries the schema's bounds; the kernel is the one that refuses, and says why beside the field.
    expect(await repeat.evaluate((el) => (el as HTMLInputElement).validity.rangeOverflow)).toBe(true);
    await pack.getByRole('button', { name: 'Save settings' }).click();
    await pack.getByRole('alert').getByText('Invalid settings for pack "echo-tools": repeat must be <= 5.').waitFor();
    expect(await repeat.getAttribute('aria-invalid')).toBe('true');
    await pack.getByText('must be <= 5', { exact: true }).waitFor();
    expect(await pack.getByText('Saved.').count()).toBe(0);
    expect(c.fx.kernel.packs.config('echo-tools')).toMatchObject({ repeat: 3 });
    const shot = screenshotPath('packs');
    if (shot) await page.screenshot({ path: shot, fullPage: true });
  });

  it("runs a pack panel's action as a tool call through the pipeline: it is asked like any call, then done", async () => {
    const panel = page.locator('section.panel', { hasText: 'Greetings' });
    await panel.waitFor();
    expect(await panel.getByLabel('times').count()).toBe(0);
    await panel.getByLabel('name').fill('Ana');
    await panel.getByLabel('loud').check();
    await panel.getByRole('button', { name: 'Greet' }).click();
    const asked = await waitFor(() => c.fx.kernel.approvals.pending().find((p) => p.request.tool === 'greet'), { what: 'the action to be asked' });
    expect(asked.request).toMatchObject({ args: { name: 'Ana', loud: true, times: 2 }, caller: { kind: 'host', id: 'console' } });
    c.fx.kernel.approvals.answer(asked.id, 'allow-once', 'test');
    await panel.getByText(/^Done/).waitFor();
    // The result itself is shown under the action.
    await panel.locator('.result-view').getByText('"greeting": "hello Ana!"').waitFor();
    const shot = screenshotPath('panel');
    if (shot) await panel.screenshot({ path: shot });
  });

  it('revokes a stored permission', async () => {
    c.fx.kernel.permissions.set({ tool: 'note_write', decision: 'allow', plugin: 'echo-tools', scope: 'forever' }, new Date());
    await page.getByRole('link', { name: 'Permissions' }).click();
    const row = page.locator('tr[data-tool="note_write"]');
    await row.waitFor();
    expect(await seriousViolations()).toEqual([]);
    await row.getByRole('button', { name: 'Revoke note_write' }).click();
    await page.getByText('No stored decisions').waitFor();
    expect(c.fx.kernel.permissions.list()).toEqual([]);
    await page.getByLabel('Global always-allow').check();
    // Turning it on is asked first (test/console/browser/risky-actions.test.ts).
    await page.getByRole('button', { name: 'Turn on always-allow' }).click();
    await waitFor(() => c.fx.kernel.permissions.alwaysAllow, { what: 'always-allow on' });
    await page.getByLabel('Global always-allow').uncheck();
    await waitFor(() => !c.fx.kernel.permissions.alwaysAllow, { what: 'always-allow off' });
  });

  it('lets one MCP client name ask for writes, lists it with Stop, and stops it, saying that a name is a claim', async () => {
    await page.getByRole('link', { name: 'Permissions' }).click();
    const box = page.getByRole('group', { name: 'External MCP clients' });
    await box.getByText(/any client with a token can claim it/).waitFor();
    await box.getByLabel('Only clients named').fill('claude-ai');
    await box.getByRole('button', { name: 'Let this name ask' }).click();
    await waitFor(() => c.fx.kernel.permissions.externalWritesFor('claude-ai'), { what: 'external writes on for claude-ai' });
    const stop = box.getByRole('button', { name: 'Stop external writes for claude-ai' });
    await stop.waitFor();
    expect(await seriousViolations()).toEqual([]);
    const shot = screenshotPath('external-writes');
    if (shot) await box.screenshot({ path: shot });
    await stop.click();
    await waitFor(() => !c.fx.kernel.permissions.externalWritesFor('claude-ai'), { what: 'external writes off again' });
    await box.getByLabel('Every external client may ask to write').check();
    await box.getByRole('button', { name: 'Let them ask' }).click();
    await waitFor(() => c.fx.kernel.permissions.externalWrites.all, { what: 'external writes on for all' });
    await box.getByLabel('Every external client may ask to write').uncheck();
    await waitFor(() => !c.fx.kernel.permissions.externalWrites.all, { what: 'external writes off for all' });
  });

  it('lists providers with keys masked and switches the one the agent uses', async () => {
    const key = `sk-${'q7'.repeat(24)}`;
    c.fx.kernel.providerSettings.put({ name: 'hosted', kind: 'openai', model: 'gpt-test', apiKey: key });
    c.fx.kernel.providerSettings.put({ name: 'local', kind: 'openai', model: 'small' });
    await page.getByRole('link', { name: 'Providers' }).click();
    await page.locator('tr[data-provider="hosted"]').getByRole('cell', { name: 'set', exact: true }).waitFor();
    expect(await page.content()).not.toContain(key);
    expect(await seriousViolations()).toEqual([]);
    await page.getByRole('button', { name: 'Use local' }).click();
    await page.locator('tr[data-provider="local"]').getByText('active').waitFor();
    expect(c.fx.kernel.providerSettings.active()?.name).toBe('local');
  });

  it('shows the MCP endpoint with snippets and no token, and rotates the token after confirming', async () => {
    await page.getByRole('link', { name: 'MCP' }).click();
    await page.getByRole('heading', { name: 'MCP endpoint' }).waitFor();
    await page.getByText(c.endpoint.url, { exact: true }).waitFor();
    expect(await page.content()).not.toContain(c.endpoint.token);
    expect(await seriousViolations()).toEqual([]);
    const old = c.endpoint.token;
    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Rotate the token' }).click();
    await page.getByText(/^The MCP token was rotated/).waitFor();
    expect(c.endpoint.token).not.toBe(old);
    expect(await page.content()).not.toContain(c.endpoint.token);
    await mcp.close();
    mcp = await connect(c.endpoint.url, c.endpoint.token, { name: 'admin-browser' });
  });

  it('shows the audit trail live, filters it by tool, opens an entry and verifies the chain', async () => {
    await page.getByRole('link', { name: 'Audit' }).click();
    await page.getByRole('heading', { name: 'Audit trail' }).waitFor();
    await c.fx.kernel.invoke({ tool: 'echo', args: { text: 'seen live' }, caller: { kind: 'host', id: 'browser-test' } });
    const row = page.locator('.audit-row', { hasText: 'echo' }).first();
    await row.waitFor();
    // A tool name is a prefix: echo finds echo and the echo_* tools, nothing else.
    await page.getByLabel('Tool', { exact: true }).fill('echo');
    await page.getByRole('button', { name: 'Search' }).click();
    await waitFor(async () => (await page.locator('.audit-row code.tool').allTextContents()).every((t) => t.startsWith('echo')), { what: 'only echo rows' });
    await row.locator('summary').click();
    await row.getByText('seen live').waitFor();
    await page.getByRole('button', { name: 'Verify the chain' }).click();
    await page.getByText(/^Verified: \d+ entr(y|ies), the keyed chain and its head are intact\.$/).waitFor();
    expect(await seriousViolations()).toEqual([]);
    await page.setViewportSize({ width: 360, height: 800 });
    expect(await page.evaluate(() => document.scrollingElement!.scrollWidth)).toBeLessThanOrEqual(360);
    const shot = screenshotPath('audit-360');
    if (shot) await page.screenshot({ path: shot, fullPage: true });
  });

  it('follows the system into dark mode on every page, each with its own title, with no serious axe violation (contrast included)', async () => {
    const dark = await browser.newContext({ viewport: { width: 1024, height: 800 }, colorScheme: 'dark' });
    try {
      const p = await dark.newPage();
      await p.goto(c.link());
      await p.getByRole('heading', { name: 'Approvals' }).waitFor();
      const background = await p.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
      // #0f1115: the dark --bg.
      expect(background).toBe('rgb(15, 17, 21)');
      for (const [link, heading, title] of [
        ['Approvals', 'Approvals', 'Approvals · Memo console'],
        ['Chat', 'Chat', 'Chat · Memo console'],
        ['Audit', 'Audit trail', 'Audit · Memo console'],
        ['Tools', 'Tools', 'Tools · Memo console'],
        ['Packs', 'Packs', 'Packs · Memo console'],
        ['Permissions', 'Stored permissions', 'Permissions · Memo console'],
        ['Providers', 'Providers', 'Providers · Memo console'],
        ['MCP', 'MCP endpoint', 'MCP · Memo console'],
      ]) {
        await p.getByRole('navigation').getByRole('link', { name: link!, exact: true }).click();
        await p.getByRole('heading', { name: heading!, exact: true }).first().waitFor();
        await waitFor(async () => (await p.title()) === title, { what: `the title ${title}` });
        expect([link, await violationsOn(p)]).toEqual([link, []]);
      }
      // A pack's own page, with its panel's form.
      await p.evaluate(() => (window.location.hash = '#/pack/greeter'));
      await p.getByRole('heading', { name: 'Greetings' }).waitFor();
      await waitFor(async () => (await p.title()) === 'Pack greeter · Memo console', { what: "the pack page's title" });
      expect(['pack page', await violationsOn(p)]).toEqual(['pack page', []]);
      const shot = screenshotPath('console-dark-1024');
      if (shot) await p.screenshot({ path: shot, fullPage: true });
    } finally {
      await dark.close();
    }
  });
});
