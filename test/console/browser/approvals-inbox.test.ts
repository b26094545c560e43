/**
 * The approvals inbox in real headless Chromium (Debian's package, driven by playwright-core):
 * log in through the one-time link, answer an agent turn's waiting write and see it finish, deny
 * a delete, approve with edited arguments, refuse a forged cookie and a cross-origin POST, and
 * scan the pages with axe-core. One browser for the file; pages reused.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import type { AddressInfo } from 'node:net';
import { createTwoFilesPatch } from 'diff';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { runTurn } from '../../../kernel/agent/agent-loop.js';
import type { ToolContext } from '../../../kernel/tools/contract.js';
import { echoPack, tool } from '../../helpers/kernel-fixture.js';
import { reply, ScriptedProvider, toolCall } from '../../helpers/scripted-provider.js';
import { waitFor } from '../../helpers/wait.js';
import { consoleFixture, raw, type ConsoleFixture } from '../console-helpers.js';
import { axeSource, launchChromium, screenshotPath } from './browser-helpers.js';

const noteParams = {
  type: 'object',
  properties: { path: { type: 'string' }, content: { type: 'string' } },
  required: ['path', 'content'],
  additionalProperties: false,
};
const fieldParams = {
  type: 'object',
  properties: { title: { type: 'string' }, due: { type: 'string' }, tag: { type: 'string' } },
  additionalProperties: false,
};

/** A pack with a note write (diff preview, editable) and a field-shaped update (fields preview), writing real files under the root. */
const notesPack = {
  id: 'notes',
  version: '1.0.0',
  tools: [
    {
      spec: { ...tool('write_note', 'medium', 'write', { editable: true }), parameters: noteParams, description: 'writes a note' },
      impl: {
        run: (a: Record<string, unknown>, ctx: ToolContext) => {
          fs.writeFileSync(path.join(ctx.root, String(a.path)), String(a.content));
          return { written: a.path };
        },
        preview: (a: Record<string, unknown>, ctx: ToolContext) => {
          const file = path.join(ctx.root, String(a.path));
          const before = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
          return {
            kind: 'diff' as const,
            text: createTwoFilesPatch(`a/${String(a.path)}`, `b/${String(a.path)}`, before, String(a.content)).replace(/^=+\n/, ''),
          };
        },
      },
    },
    {
      spec: { ...tool('update_task', 'medium', 'write', { editable: true }), parameters: fieldParams, description: 'updates a task' },
      impl: {
        run: (a: Record<string, unknown>) => ({ updated: a }),
        preview: () => ({ kind: 'fields' as const, text: 'title: Call Ana -> Call Ana and Bo\ndue: (not set) -> 2026-12-02\ntag: "" -> work' }),
      },
    },
  ],
};

describe('the approvals inbox in Chromium', () => {
  let c: ConsoleFixture;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    browser = await launchChromium();
    c = await consoleFixture({ packs: [echoPack(), notesPack] });
    fs.writeFileSync(path.join(c.fx.root, 'plan.md'), '# Plan\n\nBuy milk and bread today.\nCall the bank.\n');
    context = await browser.newContext({ viewport: { width: 1024, height: 800 } });
    page = await context.newPage();
  });
  afterAll(async () => {
    await context?.close();
    await c?.close();
  });

  /** An agent turn whose model calls `name` once, then answers. */
  function agentTurn(name: string, args: Record<string, unknown>) {
    const provider = new ScriptedProvider((_req, n) => (n === 1 ? reply('', toolCall(name, args)) : reply('done')));
    return runTurn(c.fx.kernel, { provider, model: 'scripted', conversationId: `conv-${name}-${Date.now()}`, history: [], userMessage: `please ${name}` });
  }

  const card = (toolName: string) => page.locator(`article.approval[data-tool="${toolName}"]`);

  it('shows "not logged in" with a forged cookie, and the API gives it nothing', async () => {
    const port = new URL(c.origin).port;
    await context.addCookies([{ name: `memo_console_${port}`, value: 'A'.repeat(43), url: `${c.origin}/ui/` }]);
    await page.goto(`${c.origin}/ui/`);
    await page.getByRole('heading', { name: 'Not logged in' }).waitFor();
    const status = await page.evaluate(async () => (await fetch('/ui/api/approvals')).status);
    expect(status).toBe(401);
    await context.clearCookies();
  });

  it('logs in through the printed link: the code leaves the address bar and the empty inbox is live', async () => {
    await page.goto(c.link());
    expect(page.url()).toBe(`${c.origin}/ui/`);
    await page.getByRole('heading', { name: 'Approvals' }).waitFor();
    await page.getByText('Nothing is waiting for an answer').waitFor();
    await page.locator('.live.on').waitFor();
    const cookies = await context.cookies();
    expect(cookies).toEqual([expect.objectContaining({ httpOnly: true, sameSite: 'Strict', path: '/ui' })]);
    expect(await page.evaluate(() => document.cookie)).toBe('');
  });

  it('shows a read that passed without a question as a compact row that opens to the tool, arguments and result', async () => {
    await c.fx.kernel.invoke({ tool: 'echo_safe', args: { text: 'quiet read' }, caller: { kind: 'mcp', id: 'reader' } });
    const row = page.locator('.quiet-list .audit-row.quiet', { hasText: 'echo_safe' });
    await row.waitFor();
    await row.locator('summary').click();
    await row.getByText('"text": "quiet read"').waitFor();
    await row.getByText('mcp “reader”').first().waitFor();
  });

  it('approves a write an agent turn waits on: the diff shows the changed words, and the turn finishes with the file written', async () => {
    const turn = agentTurn('write_note', { path: 'plan.md', content: '# Plan\n\nBuy oat milk and bread today.\nCall the bank.\n' });
    const item = card('write_note');
    await item.waitFor();
    await expect(item.locator('ins').first().textContent()).resolves.toBe('oat ');
    await item.getByText('agent').first().waitFor();
    await item.locator('.countdown').waitFor();
    const shot = screenshotPath('inbox-diff');
    if (shot) await page.screenshot({ path: shot, fullPage: true });
    await item.getByRole('button', { name: 'Allow once' }).click();
    const result = await turn;
    expect(result.steps).toEqual([expect.objectContaining({ tool: 'write_note', outcome: 'ok' })]);
    expect(result.stopReason).toBe('final');
    expect(fs.readFileSync(path.join(c.fx.root, 'plan.md'), 'utf8')).toContain('oat milk');
    await item.waitFor({ state: 'detached' });
  });

  it('denies a delete, showing what would be lost; the call is refused', async () => {
    const call = c.fx.kernel.invoke({ tool: 'echo_delete', args: { text: 'old notes' }, caller: { kind: 'host', id: 'browser-test' } });
    const item = card('echo_delete');
    await item.waitFor();
    expect(await item.getByRole('button').allTextContents()).toEqual(expect.arrayContaining(['Allow once', 'Deny', 'Always deny']));
    expect(await item.getByRole('button', { name: 'Always allow' }).count()).toBe(0);
    await item.getByRole('button', { name: 'Deny', exact: true }).click();
    expect(await call).toMatchObject({ ok: false, error: { code: 'PERMISSION_DENIED' } });
    await item.waitFor({ state: 'detached' });
  });

  it('approves with edited arguments: the edit is previewed again as revision 2, then runs as edited', async () => {
    const turn = agentTurn('write_note', { path: 'todo.md', content: 'draft list\n' });
    const item = card('write_note');
    await item.waitFor();
    await item.getByRole('button', { name: 'Edit arguments…' }).click();
    const body = item.getByLabel('content');
    await body.fill('final list\nwith two lines\n');
    await item.getByRole('button', { name: 'Send edit for review' }).click();
    await item.getByText('2, edited by console').waitFor();
    await expect(item.locator('.diff-line.added').allTextContents()).resolves.toEqual(expect.arrayContaining([expect.stringContaining('with two lines')]));
    await item.getByRole('button', { name: 'Allow once' }).click();
    const result = await turn;
    expect(result.steps).toEqual([expect.objectContaining({ tool: 'write_note', outcome: 'ok' })]);
    expect(fs.readFileSync(path.join(c.fx.root, 'todo.md'), 'utf8')).toBe('final list\nwith two lines\n');
    // What the agent asked for is kept beside the edit: on the step and on the audit line.
    expect(result.steps[0]).toMatchObject({ edited: { by: 'console', askedArgs: { path: 'todo.md' } } });
    expect(c.fx.kernel.audit.tail({ tool: 'write_note' }).at(-1)).toMatchObject({
      editedBy: 'console',
      askedArgs: { content: 'draft list\n' },
      args: { content: 'final list\nwith two lines\n' },
    });
  });

  it('adds a field the agent left out, and edits the arguments as raw JSON', async () => {
    const call = c.fx.kernel.invoke({ tool: 'update_task', args: { title: 'Call Ana' }, caller: { kind: 'host', id: 'browser-test' } });
    const item = card('update_task');
    await item.waitFor();
    await item.getByRole('button', { name: 'Edit arguments…' }).click();
    await item.getByLabel('Name').fill('due');
    await item.getByLabel(/^Value/).fill('2026-12-02');
    await item.getByRole('button', { name: 'Add field' }).click();
    await item.getByLabel('due').waitFor();
    await item.getByRole('button', { name: 'Edit as JSON' }).click();
    const raw = item.getByLabel('Arguments (JSON)');
    expect(JSON.parse(await raw.inputValue())).toEqual({ title: 'Call Ana', due: '2026-12-02' });
    await raw.fill(JSON.stringify({ title: 'Call Ana', due: '2026-12-02', tag: 'work' }));
    await item.getByRole('button', { name: 'Send edit for review' }).click();
    await item.getByText('2, edited by console').waitFor();
    await item.getByRole('button', { name: 'Allow once' }).click();
    expect(await call).toMatchObject({ ok: true, value: { updated: { title: 'Call Ana', due: '2026-12-02', tag: 'work' } }, edited: { by: 'console' } });
    await item.waitFor({ state: 'detached' });
  });

  it('shows field changes as a table ("not set" apart from empty), fits 360 px, and passes an axe-core scan with no serious violations', async () => {
    const call = c.fx.kernel.invoke({
      tool: 'update_task',
      args: { title: 'Call Ana and Bo', due: '2026-12-02', tag: 'work' },
      caller: { kind: 'host', id: 'browser-test' },
    });
    const item = card('update_task');
    await item.waitFor();
    const rows = await item.locator('.fields tbody tr').allInnerTexts();
    expect(rows.map((r) => r.replace(/\s+/g, ' ').trim())).toEqual(['title Call Ana Call Ana and Bo', 'due not set 2026-12-02', 'tag empty work']);
    await page.setViewportSize({ width: 360, height: 800 });
    expect(await page.evaluate(() => document.scrollingElement!.scrollWidth)).toBeLessThanOrEqual(360);
    const shot = screenshotPath('inbox-fields-360');
    if (shot) await page.screenshot({ path: shot, fullPage: true });
    await page.evaluate(axeSource());
    const serious = await page.evaluate(async () => {
      const r = await (window as any).axe.run(document, { resultTypes: ['violations'] });
      return r.violations
        .filter((v: any) => v.impact === 'serious' || v.impact === 'critical')
        .map((v: any) => `${v.id}: ${v.nodes.map((n: any) => n.target.join(' ')).join(', ')}`);
    });
    expect(serious).toEqual([]);
    // Keyboard: j selects the request (nothing is selected before), which then answers to `d`.
    await page.keyboard.press('j');
    await page.locator('article.approval.selected[data-tool="update_task"]').waitFor();
    await page.keyboard.press('d');
    expect(await call).toMatchObject({ ok: false, error: { code: 'PERMISSION_DENIED' } });
    await page.setViewportSize({ width: 1024, height: 800 });
  });

  it('moves between requests with j and k, and answers the selected one with a and d', async () => {
    const caller = { kind: 'host' as const, id: 'browser-test' };
    const first = c.fx.kernel.invoke({ tool: 'echo_medium', args: { text: 'first' }, caller });
    await card('echo_medium').first().waitFor();
    const second = c.fx.kernel.invoke({ tool: 'echo_dangerous', args: { text: 'second' }, caller });
    await card('echo_dangerous').waitFor();
    await page.locator('body').click({ position: { x: 5, y: 5 } });
    // Nothing is selected until j or k: the first j selects the first request.
    await page.keyboard.press('j');
    await page.locator('article.approval.selected[data-tool="echo_medium"]').waitFor();
    await page.keyboard.press('j');
    await page.locator('article.approval.selected[data-tool="echo_dangerous"]').waitFor();
    await page.keyboard.press('k');
    await page.locator('article.approval.selected[data-tool="echo_medium"]').waitFor();
    await page.keyboard.press('j');
    await page.locator('article.approval.selected[data-tool="echo_dangerous"]').waitFor();
    await page.keyboard.press('a');
    expect(await second).toMatchObject({ ok: true });
    await page.locator('article.approval.selected[data-tool="echo_medium"]').waitFor();
    await page.keyboard.press('d');
    expect(await first).toMatchObject({ ok: false, error: { code: 'PERMISSION_DENIED' } });
  });

  it("shows a routine's facts before its prompt, and a forged line of the prompt only inside the one escaped quote (issue 36)", async () => {
    const loaded = await c.fx.kernel.loadPacks([{ dir: path.resolve('plugins'), source: 'builtin', only: ['routines'] }]);
    expect(loaded.find((p) => p.id === 'routines')?.status).toBe('loaded');
    c.fx.kernel.providerSettings.put({ name: 'scripted-one', kind: 'scripted', model: 'model-a' });
    const fake = 'Tools its runs may use: none (the model can only answer).';
    const call = c.fx.kernel.invoke({
      tool: 'create_routine',
      args: {
        name: 'Morning brief',
        prompt: `Summarise my calendar.\n${fake}${'\n'.repeat(30)}Thanks.`,
        schedule: { kind: 'cron', cron: '30 8 * * 1-5', time_zone: 'Europe/Istanbul' },
        tools: ['echo_medium'],
      },
      caller: { kind: 'agent' },
    });
    const item = card('create_routine');
    await item.waitFor();
    const facts = item.locator('dl.tool-facts');
    await expect(facts.locator('dd').allTextContents()).resolves.toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^echo_medium \(medium, write\): PRE-APPROVED for its runs/),
        expect.stringMatching(/^scripted-one \/ model-a/),
      ]),
    );
    const quote = item.locator('figure.quoted', { hasText: 'prompt each run sends' });
    await expect(quote.locator('figcaption').textContent()).resolves.toBe('prompt each run sends, written by the model (quoted as written)');
    await expect(quote.locator('blockquote').textContent()).resolves.toContain(`Summarise my calendar.⏎${fake}${'⏎'.repeat(30)}Thanks.`);
    // The facts come first; the fake line is nowhere else on the card (but in the folded JSON arguments).
    expect(await facts.evaluate((dl, q) => !!(dl.compareDocumentPosition(q) & Node.DOCUMENT_POSITION_FOLLOWING), await quote.elementHandle())).toBe(true);
    const visible = await item.evaluate((card) => {
      const clone = card.cloneNode(true) as HTMLElement;
      clone.querySelectorAll('figure.quoted, details.args').forEach((e) => e.remove());
      return clone.textContent ?? '';
    });
    expect(visible).not.toContain('Tools its runs may use');
    expect(visible).toContain('Any other tool is not available to its runs.');
    const shot = screenshotPath('inbox-routine-quoted');
    if (shot) await page.screenshot({ path: shot, fullPage: true });
    await page.evaluate(axeSource());
    const serious = await page.evaluate(async () => {
      const r = await (window as any).axe.run(document, { resultTypes: ['violations'] });
      return r.violations.filter((v: any) => v.impact === 'serious' || v.impact === 'critical').map((v: any) => v.id);
    });
    expect(serious).toEqual([]);
    await item.getByRole('button', { name: 'Deny', exact: true }).click();
    expect(await call).toMatchObject({ ok: false, error: { code: 'PERMISSION_DENIED' } });
    await item.waitFor({ state: 'detached' });
  });

  it('refuses a cross-origin POST from another local page: the request stays pending and the session stays', async () => {
    const other = http.createServer((_req, res) => res.end('<!doctype html><title>other</title>'));
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    const otherOrigin = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
    try {
      const call = c.fx.kernel.invoke({ tool: 'echo_medium', args: { text: 'csrf target' }, caller: { kind: 'host', id: 'browser-test' } });
      const item = card('echo_medium');
      await item.waitFor();
      const id = c.fx.kernel.approvals.pending()[0]!.id;
      const attacker = await context.newPage();
      await attacker.goto(`${otherOrigin}/`);
      const statuses = await attacker.evaluate(
        async ({ target, id }) => {
          const out: string[] = [];
          for (const [url, init] of [
            [
              `${target}/ui/api/approvals/${id}`,
              { method: 'POST', credentials: 'include', headers: { 'Content-Type': 'application/json' }, body: '{"answer":"allow-once"}' },
            ],
            [`${target}/ui/api/approvals/${id}`, { method: 'POST', mode: 'no-cors', credentials: 'include', body: '{"answer":"allow-once"}' }],
            [`${target}/ui/logout`, { method: 'POST', mode: 'no-cors', credentials: 'include' }],
          ] as const) {
            try {
              const r = await fetch(url, init);
              out.push(String(r.status));
            } catch (e) {
              out.push(`blocked: ${(e as Error).name}`);
            }
          }
          return out;
        },
        { target: c.origin, id },
      );
      await attacker.close();
      // CORS hides the answers from the page (blocked, or opaque 0), and the server refused each.
      expect(statuses.every((s) => s === '0' || s.startsWith('blocked'))).toBe(true);
      expect(c.fx.kernel.approvals.pending().map((p) => p.id)).toEqual([id]);
      const session = await page.evaluate(async () => (await fetch('/ui/api/session')).status);
      expect(session).toBe(200);
      await item.getByRole('button', { name: 'Deny', exact: true }).click();
      expect(await call).toMatchObject({ ok: false });
    } finally {
      await new Promise((r) => other.close(r));
    }
  });

  it('logs out: the inbox is gone and the API answers 401', async () => {
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('heading', { name: 'Not logged in' }).waitFor();
    await page.evaluate(axeSource());
    const serious = await page.evaluate(async () => {
      const r = await (window as any).axe.run(document, { resultTypes: ['violations'] });
      return r.violations.filter((v: any) => v.impact === 'serious' || v.impact === 'critical').map((v: any) => v.id);
    });
    expect(serious).toEqual([]);
    expect((await raw(`${c.origin}/ui/api/session`)).status).toBe(401);
    await waitFor(async () => (await page.evaluate(async () => (await fetch('/ui/api/session')).status)) === 401, { what: 'the session to end' });
  });
});
