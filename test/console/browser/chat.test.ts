/**
 * Chat in the console, in real headless Chromium, against a model served over loopback HTTP in
 * OpenAI's chat-completions wire format (the shape of test/fixtures/providers/openai), through the
 * providers pack's real adapter: log in, send a message, watch the tool step appear while the turn
 * is still running, see the answer; a turn stopped with the Stop button ends as stopped; the
 * waiting step links to the inbox. axe-core scans the page; screenshots at 1280 and 360 px.
 */
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { chatCompletionsServer } from '../../helpers/chat-completions.js';
import { echoPack, tool } from '../../helpers/kernel-fixture.js';
import { waitFor } from '../../helpers/wait.js';
import { consoleFixture, type ConsoleFixture } from '../console-helpers.js';
import { axeSource, launchChromium, screenshotPath } from './browser-helpers.js';

interface Held {
  release(): void;
}

/**
 * A chat-completions server: it passes the capability probe (a loopback model is probed before it
 * gets tools), answers a title request, calls echo_safe (or echo_medium for "write ...") for a
 * message, and holds each final answer until the test releases it. "hang ..." never answers.
 */
function modelServer() {
  const held: Held[] = [];
  const { server, requests } = chatCompletionsServer((json, { reply, calls, res }) => {
    const msgs = json.messages as any[];
    const last = msgs.at(-1);
    const user = [...msgs].reverse().find((m) => m.role === 'user')?.content ?? '';
    const probe = JSON.stringify(json.tools ?? []).includes('get_magic_number');
    const call = (name: string, args: object) => calls([[name, args]]);
    if (probe) return last.role === 'tool' ? reply({ role: 'assistant', content: last.content }) : call('get_magic_number', {});
    if (!json.tools) return reply({ role: 'assistant', content: 'Echo test' });
    if (user.startsWith('hang')) return;
    if (last.role === 'tool') {
      const content = `The echo came back: ${last.content}`;
      const reasoning_content = 'The tool answered; say what it said.';
      if (!json.stream) {
        held.push({ release: () => reply({ role: 'assistant', content, reasoning_content }) });
        return;
      }
      // Streamed (chat.completion.chunk events): the first words now, the rest when released.
      const chunk = (delta: object, finish: string | null = null) =>
        res.write(
          `data: ${JSON.stringify({ id: 'chatcmpl-s', object: 'chat.completion.chunk', created: 1733400000, model: json.model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`,
        );
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      chunk({ role: 'assistant', reasoning_content });
      chunk({ content: content.slice(0, 19) });
      held.push({
        release: () => {
          chunk({ content: content.slice(19) });
          chunk({}, 'stop');
          res.end('data: [DONE]\n\n');
        },
      });
      return;
    }
    if (user.startsWith('edit')) return call('echo_editable', { text: user });
    if (user.startsWith('write')) return call('echo_medium', { text: user });
    return call('echo_safe', { text: user });
  });
  return { server, held, requests };
}

/** One tool that takes edited arguments before approval. */
const editablePack = {
  id: 'editable-pack',
  version: '1.0.0',
  tools: [{ spec: tool('echo_editable', 'medium', 'write', { editable: true }), impl: (args: Record<string, unknown>) => ({ echoed: args }) }],
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

describe('chat in the console, in Chromium', () => {
  let c: ConsoleFixture;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const model = modelServer();

  beforeAll(async () => {
    browser = await launchChromium();
    await new Promise<void>((r) => model.server.listen(0, '127.0.0.1', () => r()));
    c = await consoleFixture({ packs: [echoPack(), editablePack] });
    await c.fx.kernel.packs.load([{ dir: path.resolve('plugins'), source: 'builtin', only: ['providers'] }]);
    const { port } = model.server.address() as AddressInfo;
    c.fx.kernel.providerSettings.put({
      name: 'loopback',
      kind: 'openai-compatible',
      preset: 'custom',
      baseUrl: `http://127.0.0.1:${port}/v1`,
      model: 'gpt-4o',
    });
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    await page.goto(c.link());
    await page.getByRole('heading', { name: 'Approvals' }).waitFor();
  });
  afterAll(async () => {
    await context?.close();
    await c?.close();
    model.server.closeAllConnections();
    await new Promise<void>((r) => model.server.close(() => r()));
  });

  const seriousViolations = () => axeViolations(page);

  it('sends a message, shows the tool step while the turn still runs, then the answer with its reasoning folded', async () => {
    await page.getByRole('link', { name: 'Chat' }).click();
    await page.getByRole('heading', { name: 'Chat' }).waitFor();
    expect(await page.getByLabel('Provider').inputValue()).toBe('loopback');
    await page.getByRole('textbox', { name: 'Message', exact: true }).fill('echo hello from the browser');
    await page.getByRole('button', { name: 'Send' }).click();
    // The turn's calls fold into one activity row, which counts them while the turn runs; opened, it
    // shows the step done while the model still holds the final answer: it came live.
    const row = page.locator('.live-turn .activity');
    await row.locator('summary', { hasText: /1 step so far/ }).waitFor();
    await row.locator('summary').first().click();
    const step = page.locator('.live-turn .step[data-tool="echo_safe"][data-state="ok"]');
    await step.waitFor();
    expect(await page.locator('.live-turn').getAttribute('data-state')).toBe('running');
    expect(await step.locator('.step-args').textContent()).toBe('echo hello from the browser');
    const shot = screenshotPath('chat-running-1280');
    if (shot) await page.screenshot({ path: shot, fullPage: true });
    await step.locator('summary').click();
    await step.getByText('"text": "echo hello from the browser"').waitFor();
    await waitFor(() => model.held.length === 1, { what: 'the final request' });
    // The reply streams: its first words show while the turn still runs.
    await page
      .locator('.live-turn .msg.streaming')
      .getByText(/^The echo came back:$/)
      .waitFor();
    expect(await page.locator('.live-turn').getAttribute('data-state')).toBe('running');
    const streaming = screenshotPath('chat-streaming-1280');
    if (streaming) await page.screenshot({ path: streaming, fullPage: true });
    model.held.shift()!.release();
    const answer = page.locator('.msg.assistant', { hasText: 'The echo came back:' });
    await answer.waitFor();
    expect(await answer.locator('details.reasoning').getAttribute('open')).toBeNull();
    await answer.getByText(/^Thought \(\d+ words\)$/).click();
    await answer.getByText('The tool answered; say what it said.').waitFor();
    // The stored turn keeps its step in a folded row that settled to a count, with the result the model was given.
    const storedRow = page.locator('.transcript .activity').last();
    await storedRow.locator('summary', { hasText: /^\s*1 step\s*$/ }).click();
    const stored = page.locator('.transcript .step[data-tool="echo_safe"]');
    await stored.locator('summary').click();
    await stored.locator('pre', { hasText: '{"echoed":{"text":"echo hello from the browser"}}' }).waitFor();
    await page
      .locator('.conversations button.conv', { hasText: /Echo test|echo hello/ })
      .first()
      .waitFor();
    expect(await seriousViolations()).toEqual([]);
    const done = screenshotPath('chat-1280');
    if (done) await page.screenshot({ path: done, fullPage: true });
    await page.setViewportSize({ width: 360, height: 800 });
    expect(await page.evaluate(() => document.scrollingElement!.scrollWidth)).toBeLessThanOrEqual(360);
    const narrow = screenshotPath('chat-360');
    if (narrow) await page.screenshot({ path: narrow, fullPage: true });
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('links a step waiting for approval to the inbox', async () => {
    await page.getByRole('textbox', { name: 'Message', exact: true }).fill('write a note');
    await page.getByRole('button', { name: 'Send' }).click();
    const waiting = page.getByText(/^Waiting for your approval: echo_medium\./);
    await waiting.waitFor();
    const asked = await waitFor(() => c.fx.kernel.approvals.pending()[0], { what: 'the request' });
    expect(asked.request.caller).toMatchObject({ kind: 'agent' });
    await page.getByRole('link', { name: 'Approvals inbox' }).click();
    await page.locator('article.approval[data-tool="echo_medium"]').getByRole('button', { name: 'Allow once' }).click();
    await page.getByRole('link', { name: 'Chat' }).click();
    // The chat page, opened again, finds the turn still running in the conversation it shows.
    await page.locator('.conversations button.conv').first().click();
    await waitFor(() => model.held.length === 1, { what: 'the final request' });
    model.held.shift()!.release();
    await page.locator('.msg.assistant', { hasText: '"text":"write a note"' }).waitFor();
  });

  it('answers a step waiting for approval inline, in the turn itself, through the same broker', async () => {
    await page.getByRole('textbox', { name: 'Message', exact: true }).fill('write a note inline');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByText(/^Waiting for your approval: echo_medium\./).waitFor();
    const card = page.locator('.live-turn article.approval[data-tool="echo_medium"]');
    await card.waitFor();
    expect(await card.getByRole('checkbox').count()).toBe(0);
    expect(await seriousViolations()).toEqual([]);
    await card.getByRole('button', { name: 'Allow once' }).click();
    await waitFor(() => model.held.length === 1, { what: 'the final request after the inline answer' });
    expect(c.fx.kernel.approvals.pending()).toEqual([]);
    expect(c.fx.kernel.audit.tail({ tool: 'echo_medium' }).at(-1)).toMatchObject({ answeredBy: 'console', args: { text: 'write a note inline' } });
    model.held.shift()!.release();
    await page.locator('.msg.assistant', { hasText: '"text":"write a note inline"' }).waitFor();
  });

  it('marks a step whose arguments a person edited before approving, and shows what ran beside what the agent asked for', async () => {
    await page.getByRole('textbox', { name: 'Message', exact: true }).fill('edit this note');
    await page.getByRole('button', { name: 'Send' }).click();
    const card = page.locator('.live-turn article.approval[data-tool="echo_editable"]');
    await card.waitFor();
    await card.getByRole('button', { name: 'Edit arguments…' }).click();
    await card.getByLabel('text', { exact: true }).fill('what I meant');
    await card.getByRole('button', { name: 'Send edit for review' }).click();
    await page.locator('.live-turn article.approval[data-tool="echo_editable"]').getByText('2, edited by console').waitFor();
    await page.locator('.live-turn article.approval[data-tool="echo_editable"]').getByRole('button', { name: 'Allow once' }).click();
    await waitFor(() => model.held.length === 1, { what: 'the final request after the edited call' });
    model.held.shift()!.release();
    const step = page.locator('li.step[data-tool="echo_editable"]').last();
    // The stored turn's row (once the transcript has it) opens to its steps.
    await step.waitFor({ state: 'attached' });
    await page.locator('.transcript .activity', { has: step }).locator('summary').first().click();
    await step.locator('.edited-mark', { hasText: 'edited by console' }).waitFor();
    await step.locator('summary').click();
    await step.getByText('Arguments as run (edited by console before approving)').waitFor();
    await step.getByText('Arguments the agent asked for').waitFor();
    const pre = await step.locator('pre').allInnerTexts();
    expect(pre[0]).toContain('what I meant');
    expect(pre[1]).toContain('edit this note');
  });

  it('stops a turn with the Stop button: it ends as stopped and the model request is cancelled', async () => {
    await page.getByRole('button', { name: 'New conversation', exact: true }).click();
    await page.getByLabel('Web search only').waitFor();
    await page.getByRole('textbox', { name: 'Message', exact: true }).fill('hang on a moment');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByRole('button', { name: 'Stop' }).waitFor();
    expect(await page.getByRole('button', { name: 'Send' }).isDisabled()).toBe(true);
    await page.getByRole('button', { name: 'Stop' }).click();
    await page.getByText('Turn stopped.').waitFor();
    expect(await page.getByRole('button', { name: 'Stop' }).count()).toBe(0);
    expect(await seriousViolations()).toEqual([]);
    await page.setViewportSize({ width: 360, height: 800 });
    expect(await page.evaluate(() => document.scrollingElement!.scrollWidth)).toBeLessThanOrEqual(360);
    const shot = screenshotPath('chat-stopped-360');
    if (shot) await page.screenshot({ path: shot, fullPage: true });
    await page.setViewportSize({ width: 1280, height: 900 });
    // The stopped turn was stored; deleting the conversation (after confirming) removes it.
    const [stopped] = await c.fx.kernel.conversations.list(1);
    expect(stopped).toMatchObject({ title: 'hang on a moment' });
    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await page.getByText('Conversation deleted.').waitFor();
    expect(await c.fx.kernel.conversations.exists(stopped!.id)).toBe(false);
    await page.locator('.conversations button.conv', { hasText: 'hang on a moment' }).waitFor({ state: 'detached' });
  });
});

describe('providers in the console, in Chromium', () => {
  let c: ConsoleFixture;
  let browser: Browser;
  let page: Page;
  const model = modelServer();
  const key = `sk-${'k4'.repeat(24)}`;

  beforeAll(async () => {
    browser = await launchChromium();
    await new Promise<void>((r) => model.server.listen(0, '127.0.0.1', () => r()));
    c = await consoleFixture({ packs: [echoPack()] });
    await c.fx.kernel.packs.load([{ dir: path.resolve('plugins'), source: 'builtin', only: ['providers'] }]);
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    await page.goto(c.link());
    await page.getByRole('heading', { name: 'Approvals' }).waitFor();
  });
  afterAll(async () => {
    await page?.context().close();
    await c?.close();
    model.server.closeAllConnections();
    await new Promise<void>((r) => model.server.close(() => r()));
  });

  it('adds a provider from the form with a key that never comes back to the page, probes it, and shows the pack’s refusal of a bad one', async () => {
    const { port } = model.server.address() as AddressInfo;
    await page.getByRole('link', { name: 'Providers' }).click();
    await page.getByRole('heading', { name: 'Add a provider' }).waitFor();
    const form = page.locator('form.provider-form');
    await form.locator('#prov-name').fill('loopback');
    await form.locator('#prov-kind').selectOption('openai-compatible');
    await form.locator('#prov-preset').selectOption('custom');
    await form.locator('#prov-baseUrl').fill(`http://127.0.0.1:${port}/v1`);
    await form.locator('#prov-model').fill('gpt-4o');
    expect(await form.locator('#prov-apiKey').getAttribute('type')).toBe('password');
    await form.locator('#prov-apiKey').fill(key);
    await form.getByRole('button', { name: 'Add provider' }).click();
    const row = page.locator('tr[data-provider="loopback"]');
    await row.getByRole('cell', { name: 'set', exact: true }).waitFor();
    expect(c.fx.kernel.providerSettings.get('loopback')).toMatchObject({ apiKey: key, baseUrl: `http://127.0.0.1:${port}/v1`, model: 'gpt-4o' });
    expect(await page.content()).not.toContain(key);
    expect(await form.locator('#prov-apiKey').inputValue()).toBe('');

    await row.getByRole('button', { name: 'Probe loopback' }).click();
    await row.getByText('Can call tools: the model called the test tool and used its result').waitFor();

    await row.getByRole('button', { name: 'Edit loopback' }).click();
    await page.getByRole('heading', { name: 'Update loopback' }).waitFor();
    expect(await form.locator('#prov-apiKey').getAttribute('placeholder')).toBe('set (leave empty to keep it)');
    await form.locator('#prov-model').fill('gpt-4o-mini');
    await form.getByRole('button', { name: 'Save changes' }).click();
    await row.getByRole('cell', { name: 'gpt-4o-mini' }).waitFor();
    expect(c.fx.kernel.providerSettings.get('loopback')).toMatchObject({ apiKey: key, model: 'gpt-4o-mini' });

    await form.locator('#prov-name').fill('faraway');
    await form.locator('#prov-preset').selectOption('ollama');
    await form.locator('#prov-baseUrl').fill('http://10.1.2.3:11434/v1');
    await form.getByRole('button', { name: 'Add provider' }).click();
    await form.getByRole('alert').filter({ hasText: 'must be a loopback address' }).waitFor();
    expect(c.fx.kernel.providerSettings.get('faraway')).toBeUndefined();
    expect(await axeViolations(page)).toEqual([]);
    const shot = screenshotPath('providers-1280');
    if (shot) await page.screenshot({ path: shot, fullPage: true });
    await page.setViewportSize({ width: 360, height: 800 });
    expect(await page.evaluate(() => document.scrollingElement!.scrollWidth)).toBeLessThanOrEqual(360);
    const narrow = screenshotPath('providers-360');
    if (narrow) await page.screenshot({ path: narrow, fullPage: true });
  });
});
