/**
 * Linked items in the console's chat, in real headless Chromium, with the real vault, calendar and
 * canvas packs and a model served over loopback HTTP in OpenAI's chat-completions wire format: the
 * model reads one item of each type through the tools and answers in markdown with [title](memo:TYPE/ID)
 * links. Each link to an item the tools returned is a citation chip (the item's own icon, else its
 * type's; an emoji the model wrote moves into the icon slot), a link to anything else an ordinary
 * mention; the reply lists its sources; Copy hands over the markdown as written; each chip opens the
 * item's view (a note's markdown rendered, a task, an event, a canvas as its render). Raw HTML and
 * script links in a reply never reach the DOM as markup. axe-core scans each view.
 */
import * as fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { chatCompletionsServer } from '../../helpers/chat-completions.js';
import { tempDir } from '../../helpers/kernel-fixture.js';
import { waitFor } from '../../helpers/wait.js';
import { writeFakeClis } from '../../kernel/agent/fake-clis.js';
import { consoleFixture, type ConsoleFixture } from '../console-helpers.js';
import { launchChromium, screenshotPath, seriousViolations } from './browser-helpers.js';

/** What the model reads, one call each: every kind of item. */
const READS: Array<[string, Record<string, unknown>]> = [
  ['vault_read_note', { note: 'Projects/Launch plan.md' }],
  ['vault_list_tasks', {}],
  ['vault_list_inbox_items', {}],
  ['vault_list_journal_entries', {}],
  ['get_calendar_events', { start: '2026-12-01T00:00:00Z', end: '2027-01-31T00:00:00Z' }],
  ['vault_list_projects', {}],
  ['vault_list_folder', {}],
  ['vault_list_canvases', {}],
];

/**
 * A chat-completions model: it passes the capability probe, calls every read of READS at once, then
 * answers with `answer(results)`, built from the ids in the tool results it was sent (as a model does).
 */
function modelServer(answer: (results: Record<string, any>) => string) {
  return chatCompletionsServer((json, { reply, calls }) => {
    const msgs = json.messages as any[];
    const last = msgs.at(-1);
    const probe = JSON.stringify(json.tools ?? []).includes('get_magic_number');
    if (probe) return last.role === 'tool' ? reply({ role: 'assistant', content: last.content }) : calls([['get_magic_number', {}]]);
    if (!json.tools) return reply({ role: 'assistant', content: 'Everything found' });
    const user = [...msgs].reverse().find((m) => m.role === 'user')?.content ?? '';
    // "revise ...": one edit of the long note's body, as REVISED says.
    if (user.startsWith('revise')) {
      if (last.role === 'tool') return reply({ role: 'assistant', content: `Revised: ${last.content.slice(0, 80)}` });
      return calls([['vault_update_note', { note: 'Projects/Long.md', content: REVISED.text }]]);
    }
    if (last.role !== 'tool') return calls(READS);
    const results: Record<string, any> = {};
    for (const m of msgs) if (m.role === 'tool') results[m.name ?? READS[Object.keys(results).length]![0]] = JSON.parse(m.content);
    return reply({ role: 'assistant', content: answer(results) });
  });
}

/** A long note, and the body the model proposes for it (one word changed in the middle). */
const LONG = Array.from({ length: 30 }, (_, i) => (i === 14 ? 'The launch moves to Friday at noon.' : `Line ${i + 1} of the plan.`)).join('\n') + '\n';
const REVISED = { text: LONG.replace('Friday at noon', 'Saturday at noon') };

const HOSTILE = '<img src=x onerror="window.__xss=1"> <script>window.__xss=2</script> [click me](javascript:window.__xss=3)';

function linkedAnswer(r: Record<string, any>): string {
  const note = r.vault_read_note;
  const task = r.vault_list_tasks.tasks[0];
  const inbox = r.vault_list_inbox_items.items[0];
  const journal = r.vault_list_journal_entries.entries[0];
  const event = r.get_calendar_events.events[0];
  const project = r.vault_list_projects.projects[0];
  const folder = r.vault_list_folder.entries.find((e: any) => e.type === 'folder' && e.name === 'Projects');
  const canvas = r.vault_list_canvases.canvases[0];
  return [
    'Here is **everything** I found:',
    '',
    `- the plan: [Launch plan](memo:note/${note.id})`,
    `- a task: [${task.title}](memo:task/${task.id})`,
    `- in the inbox: [${inbox.title}](memo:inbox/${inbox.id})`,
    `- the journal: [📓 ${journal.date}](memo:journal/${journal.date})`,
    `- on the calendar: [${event.title}](memo:event/${encodeURIComponent(event.id)})`,
    `- the project [${project.name}](memo:project/${project.id}), in the folder [${folder.name}](memo:folder/${folder.path})`,
    `- and the canvas [Board](memo:canvas/${encodeURIComponent(canvas.name)})`,
    '',
    'Not from a tool: [an old note](memo:note/0000000000000000).',
    '',
    HOSTILE,
  ].join('\n');
}

describe('linked items in the console chat, in Chromium', () => {
  let c: ConsoleFixture;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const model = modelServer(linkedAnswer);
  let vault: string;

  /** A write through the pipeline as a host call, answered as a person would (the fixture has no face). */
  async function made(tool: string, args: Record<string, unknown>): Promise<any> {
    const k = c.fx.kernel;
    const call = k.invoke({ tool, args, caller: { kind: 'host', id: 'test' } });
    const asked = await waitFor(() => k.approvals.pending().find((p) => p.request.tool === tool), { what: `${tool} to be asked` });
    k.approvals.answer(asked.id, 'allow-once', 'test');
    const r = await call;
    if (!r.ok) throw new Error(`${tool}: ${r.error.code} ${r.error.message}`);
    return r.value;
  }

  beforeAll(async () => {
    // The repository's fake claude on PATH (an agent CLI we cannot install is the edge of the world).
    const bin = tempDir('memo-fake-bin-');
    writeFakeClis(bin, ['claude']);
    const rec = tempDir('memo-fake-rec-');
    process.env.PATH = `${bin}${path.delimiter}${process.env.PATH ?? ''}`;
    process.env.FAKE_CLI_RECORD = rec;
    process.env.MEMO_CLI_WRITABLE = rec;
    browser = await launchChromium();
    await new Promise<void>((r) => model.server.listen(0, '127.0.0.1', () => r()));
    c = await consoleFixture();
    const k = c.fx.kernel;
    vault = path.join(c.fx.root, 'vault');
    fs.mkdirSync(path.join(vault, 'Projects'), { recursive: true });
    fs.mkdirSync(path.join(vault, 'Journal'), { recursive: true });
    fs.writeFileSync(
      path.join(vault, 'Projects', 'Launch plan.md'),
      '---\nicon: 🚀\n---\n# Launch plan\n\nThe **launch** is on Friday.\n\n- [ ] fuel\n- [x] paint\n',
    );
    fs.writeFileSync(path.join(vault, 'Journal', '2026-12-01.md'), 'A cold day.\n');
    fs.writeFileSync(path.join(vault, 'Projects', 'Long.md'), LONG);
    const loaded = await k.loadPacks([{ dir: path.resolve('plugins'), source: 'builtin', only: ['providers', 'vault', 'calendar', 'canvas', 'fs-tools'] }]);
    expect(loaded.map((s) => `${s.id}:${s.status}`).sort()).toEqual([
      'calendar:loaded',
      'canvas:loaded',
      'fs-tools:loaded',
      'providers:loaded',
      'vault:loaded',
    ]);
    k.packs.setConfig('vault', { watch: false });
    k.packs.setConfig('calendar', { timeZone: 'UTC' });
    const { port } = model.server.address() as AddressInfo;
    k.providerSettings.put({ name: 'loopback', kind: 'openai-compatible', preset: 'custom', baseUrl: `http://127.0.0.1:${port}/v1`, model: 'gpt-4o' });
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: c.origin });
    page = await context.newPage();
    await page.goto(c.link());
    await page.getByRole('heading', { name: 'Approvals' }).waitFor();
    // The items the model will find, made through the tools (a person approves each write).
    await made('vault_create_project', { name: 'Rocket', icon: '🛰️' });
    await made('vault_create_task', { title: 'Fuel the rocket', project: 'Rocket' });
    await made('vault_add_to_inbox', { title: 'Read later', content: 'https://example.com/launch' });
    await made('create_calendar_event', { title: 'Launch party', start: '2026-12-18T18:00:00Z', end: '2026-12-18T21:00:00Z' });
    await made('vault_create_canvas', { name: 'Board' });
    const board = await c.fx.kernel.invoke({ tool: 'vault_read_canvas', args: { canvas: 'Board' }, caller: { kind: 'host', id: 'test' } });
    await made('vault_draw_on_canvas', {
      canvas: 'Board',
      version: (board as any).value.version,
      elements: [{ type: 'rectangle', x: 0, y: 0, width: 120, height: 60, label: { text: 'Launch' } }],
    });
  }, 120_000);
  afterAll(async () => {
    await context?.close();
    await c?.close();
    model.server.closeAllConnections();
    await new Promise<void>((r) => model.server.close(() => r()));
  });

  it('links every item the tools returned as a chip with its icon, lists the sources, and shows raw HTML and script links as text', async () => {
    await page.getByRole('link', { name: 'Chat' }).click();
    await page.getByRole('textbox', { name: 'Message', exact: true }).fill('find everything about the launch');
    await page.getByRole('button', { name: 'Send' }).click();
    const reply = page.locator('.transcript .msg.assistant', { hasText: 'Here is everything I found' });
    await reply.waitFor();
    const chips = reply.locator('.md a.item-link.chip');
    expect(await chips.evaluateAll((as) => as.map((a) => [a.getAttribute('data-type'), a.querySelector('.item-icon')!.textContent, a.textContent]))).toEqual([
      ['note', '🚀', '🚀Launch plan'],
      ['task', '☑️', '☑️Fuel the rocket'],
      ['inbox', '🔗', '🔗Read later'],
      ['journal', '📓', '📓2026-12-01'],
      ['event', '📅', '📅Launch party'],
      ['project', '🛰️', '🛰️Rocket'],
      ['folder', '🗂️', '🗂️Projects'],
      ['canvas', '🎨', '🎨Board'],
    ]);
    // A link to an item no tool returned is an ordinary mention, not a chip.
    expect(await reply.locator('.md a.item-link.mention').evaluateAll((as) => as.map((a) => a.textContent))).toEqual(['📄an old note']);
    // Markdown is rendered; the hostile HTML is text, and the script link lost its address.
    expect(await reply.locator('.md strong').first().textContent()).toBe('everything');
    expect(await reply.locator('.md img, .md script').count()).toBe(0);
    expect(await reply.locator('.md a[href^="javascript"]').count()).toBe(0);
    await reply.getByText('<img src=x onerror="window.__xss=1">', { exact: false }).waitFor();
    expect(await page.evaluate(() => (window as any).__xss)).toBeUndefined();
    // The sources: the first icons and a count, opening into one row per item with its type.
    const sources = reply.locator('details.sources');
    // 9: one of each kind, and both folders the listing returned.
    expect((await sources.locator('summary').textContent())!.replace(/\s+/g, ' ').trim()).toBe('🚀☑️🔗9 sources');
    await sources.locator('summary').click();
    const rows = await sources.locator('li').evaluateAll((lis) => lis.map((li) => li.querySelector('.source-type')!.textContent));
    expect(rows).toEqual(expect.arrayContaining(['Note', 'Task', 'Inbox item', 'Journal entry', 'Event', 'Project', 'Folder', 'Canvas']));
    // The reads in the turn's activity row read as what they do; the raw tool name is inside.
    const row = page.locator('.transcript .activity').last();
    await row.locator('summary').first().click();
    expect(await row.locator('.read-label').allTextContents()).toEqual([
      'Reading note',
      'Reading tasks',
      'Reading inbox items',
      'Reading journal entries',
      'Reading calendar events',
      'Reading projects',
      'Reading folder',
      'Reading canvases',
    ]);
    await row.locator('li.step[data-tool="vault_read_note"] summary').click();
    await row.getByText('Tool: vault_read_note').waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    const shot = screenshotPath('chat-linked-items-1280');
    if (shot) await reply.screenshot({ path: shot });
  });

  it('Copy hands over the markdown the model wrote, and says so for a moment', async () => {
    const reply = page.locator('.transcript .msg.assistant', { hasText: 'Here is everything I found' });
    await reply.getByRole('button', { name: 'Copy the reply as markdown' }).click();
    await reply.getByRole('button', { name: 'Copy the reply as markdown' }).getByText('Copied').waitFor();
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    const stored = (await c.fx.kernel.conversations.messages!((await c.fx.kernel.conversations.list(1))[0]!.id)).filter((m) => m.role === 'assistant').at(-1)!;
    expect(copied).toBe(stored.content);
    expect(copied).toContain('[Launch plan](memo:note/');
    expect(copied).toContain(HOSTILE);
    await reply.getByRole('button', { name: 'Copy the reply as markdown' }).getByText('Copy', { exact: true }).waitFor();
  });

  it('each chip opens its item: the note with its markdown rendered, the task, the event, the canvas as its render', async () => {
    const reply = page.locator('.transcript .msg.assistant', { hasText: 'Here is everything I found' });
    await reply.locator('.md a.item-link.chip[data-type="note"]').click();
    const view = page.locator('section.item-view');
    await view.getByRole('heading', { name: 'Launch plan' }).first().waitFor();
    expect(await view.locator('.note-body strong').textContent()).toBe('launch');
    expect(await view.locator('.note-body input[type="checkbox"]').count()).toBe(2);
    expect(await seriousViolations(page)).toEqual([]);
    const shot = screenshotPath('item-note-1280');
    if (shot) await page.screenshot({ path: shot, fullPage: true });
    await page.goBack();

    await reply.locator('.md a.item-link.chip[data-type="task"]').click();
    await view.getByRole('heading', { name: 'Fuel the rocket' }).waitFor();
    await view.getByText('Rocket', { exact: true }).waitFor();
    await page.goBack();

    await reply.locator('.md a.item-link.chip[data-type="event"]').click();
    await view.getByRole('heading', { name: 'Launch party' }).waitFor();
    await view
      .getByText(/2026-12-18/)
      .first()
      .waitFor();
    await page.goBack();

    await reply.locator('.md a.item-link.chip[data-type="canvas"]').click();
    const img = view.locator('img.canvas-render');
    await img.waitFor();
    expect(await img.getAttribute('src')).toMatch(/^data:image\/svg\+xml;base64,/);
    expect(await img.evaluate((i: HTMLImageElement) => i.complete && i.naturalWidth > 0)).toBe(true);
    await page.goBack();

    // An item no tool knows says so.
    await reply.locator('.md a.item-link.mention[data-type="note"]').click();
    await view.getByRole('alert').waitFor();
    expect(await view.getByRole('alert').textContent()).toMatch(/0000000000000000|No note/);
  });

  describe('the @mention picker (its own page, on a clock the test moves)', () => {
    let mpage: Page;
    let searches: string[];
    const box = () => mpage.getByRole('textbox', { name: 'Message', exact: true });

    beforeAll(async () => {
      mpage = await context.newPage();
      // The page's timers run only when the test says: the debounce is exact, whatever the machine's load.
      await mpage.clock.install();
      searches = [];
      mpage.on('request', (r) => {
        const u = new URL(r.url());
        if (u.pathname.endsWith('/api/mentions')) searches.push(u.searchParams.get('q') ?? '');
      });
      await mpage.goto(`${c.origin}/ui/#/chat`);
      await mpage.getByRole('heading', { name: 'Chat' }).waitFor();
    });
    afterAll(async () => mpage?.close());

    /** Types `text` a key at a time (no timer runs meanwhile), then lets the debounce pass. */
    async function typeThenPause(text: string): Promise<void> {
      await mpage.keyboard.type(text);
      await mpage.clock.runFor(300);
    }

    it('offers each kind of item with its icon and type, searching once per pause in typing', async () => {
      await box().click();
      const before = searches.length;
      await typeThenPause('Tell me about @Launch');
      // One search for the whole word, not one per character.
      await waitFor(() => searches.length === before + 1 && searches.at(-1) === 'Launch', { what: 'one search for "Launch"' });
      const options = mpage.getByRole('listbox', { name: 'Items to mention' }).getByRole('option');
      await options.first().waitFor();
      expect(
        await options.evaluateAll((os) => os.map((o) => [o.getAttribute('data-type'), [...o.querySelectorAll('span')].map((x) => x.textContent).join(' ')])),
      ).toEqual(
        expect.arrayContaining([
          ['note', '🚀 Launch plan Note'],
          ['event', '📅 Launch party Event'],
        ]),
      );
      expect(await box().getAttribute('aria-activedescendant')).toBe('mention-0');
      expect(await seriousViolations(mpage)).toEqual([]);
      const shot = screenshotPath('chat-mention-picker-1280');
      if (shot) await mpage.screenshot({ path: shot });
      let typed = 'Launch';
      for (const [query, type, title] of [
        ['Fuel', 'task', 'Fuel the rocket'],
        ['2026-12', 'journal', '2026-12-01'],
        ['Read', 'inbox', 'Read later'],
      ] as const) {
        // Back to the bare @, then the next query.
        for (let i = 0; i < typed.length; i++) await mpage.keyboard.press('Backspace');
        await typeThenPause(query);
        typed = query;
        const option = mpage.getByRole('option').filter({ hasText: title });
        await option.first().waitFor();
        expect(await option.first().getAttribute('data-type')).toBe(type);
      }
      await mpage.keyboard.press('Escape');
      expect(await mpage.getByRole('listbox').count()).toBe(0);
    });

    it('shows only the answer to the last thing typed: a slower answer to an earlier query is dropped', async () => {
      await box().fill('');
      let releaseStale!: () => void;
      const staleHeld = new Promise<void>((r) => (releaseStale = r));
      await mpage.route(
        (u) => u.pathname.endsWith('/api/mentions') && u.searchParams.get('q') === 'Fu',
        async (route) => {
          await staleHeld;
          await route.fulfill({
            contentType: 'application/json',
            body: JSON.stringify({ query: 'Fu', results: [{ type: 'note', id: 'stale', title: 'STALE answer' }], missing: [] }),
          });
        },
      );
      await typeThenPause('@Fu');
      await waitFor(() => searches.at(-1) === 'Fu', { what: 'the search for "Fu"' });
      await typeThenPause('el');
      await mpage.getByRole('option').filter({ hasText: 'Fuel the rocket' }).waitFor();
      releaseStale();
      // The late answer arrives and is dropped: the list still answers "Fuel".
      await mpage.waitForResponse((r) => new URL(r.url()).searchParams.get('q') === 'Fu');
      await mpage.clock.runFor(50);
      expect(await mpage.getByRole('option').filter({ hasText: 'STALE' }).count()).toBe(0);
      await mpage.getByRole('option').filter({ hasText: 'Fuel the rocket' }).waitFor();
      await mpage.unroute((u) => u.pathname.endsWith('/api/mentions'));
      await mpage.keyboard.press('Escape');
    });

    it('choosing puts @Title in the message and sends the item as a reference with it; one taken out of the text is not sent', async () => {
      await box().fill('');
      await box().click();
      await typeThenPause('Summarise @Launch');
      await mpage.getByRole('option').filter({ hasText: 'Launch plan' }).waitFor();
      // Keyboard: the first option is selected; Enter chooses it (and does not send).
      await mpage.keyboard.press('Enter');
      expect(await box().inputValue()).toBe('Summarise @Launch plan ');
      await typeThenPause('and @Fuel');
      // Mouse: the task.
      await mpage.getByRole('option').filter({ hasText: 'Fuel the rocket' }).click();
      await typeThenPause('and @Read');
      await mpage.getByRole('option').filter({ hasText: 'Read later' }).click();
      expect(await box().inputValue()).toBe('Summarise @Launch plan and @Fuel the rocket and @Read later ');
      const picked = mpage.getByRole('list', { name: 'Mentioned items' }).getByRole('listitem');
      expect(await picked.allTextContents()).toHaveLength(3);
      // The inbox item is taken out of the text again: it is not sent.
      await box().fill('Summarise @Launch plan and @Fuel the rocket');
      const sent = model.requests.length;
      await mpage.getByRole('button', { name: 'Send' }).click();
      await waitFor(() => model.requests.slice(sent).find((r: any) => r.tools && r.messages.at(-1).role === 'user'), { what: 'the turn to reach the model' });
      const turn = model.requests.slice(sent).find((r: any) => r.tools && r.messages.at(-1).role === 'user');
      const user = turn.messages.at(-1).content as string;
      expect(user).toMatch(/^Summarise @Launch plan and @Fuel the rocket\n\nMentioned vault items:\n/);
      expect(user).toMatch(/- @Launch plan: note "Launch plan" \(id [0-9a-f]+\)/);
      expect(user).toMatch(/- @Fuel the rocket: task "Fuel the rocket" \(id [0-9a-f]+\)/);
      expect(user).not.toContain('Read later');
      // The picked items were sent: the list is empty again.
      await waitFor(async () => (await mpage.getByRole('list', { name: 'Mentioned items' }).count()) === 0, { what: 'the picked list to clear' });
    });
  });

  it("shows a note's HTML artifact in a sandboxed frame: its script runs, but cannot read the console's cookie, call its API or reach the page", async () => {
    const probe = [
      '<!doctype html><title>Chart</title><h1>Launch chart</h1><pre id="out">not run</pre><script>',
      'const out = ["script ran"];',
      'try { out.push("cookie read: " + JSON.stringify(document.cookie)); } catch (e) { out.push("cookie blocked: " + e.name); }',
      'try { out.push("parent read: " + parent.document.title); } catch (e) { out.push("parent blocked: " + e.name); }',
      'fetch("/ui/api/approvals").then((r) => out.push("api answered " + r.status), (e) => out.push("api blocked: " + e.name))',
      '  .finally(() => { document.getElementById("out").textContent = out.join(" | "); });',
      '</script>',
    ].join('\n');
    const saved = await made('vault_add_html_artifact', { note: 'Projects/Launch plan.md', title: 'Chart', html: probe });
    await page.goto(`${c.origin}/ui/#/item/note/${encodeURIComponent(saved.id)}`);
    const frame = page.frameLocator('iframe[title^="HTML artifact"]');
    const out = frame.locator('#out');
    await out.filter({ hasText: 'script ran' }).waitFor();
    await waitFor(async () => /api (answered|blocked)/.test((await out.textContent()) ?? ''), { what: "the artifact's API probe" });
    const text = (await out.textContent())!;
    expect(text).toMatch(/cookie blocked: SecurityError|cookie read: ""/);
    expect(text).toContain('parent blocked: SecurityError');
    expect(text).not.toContain('api answered 200');
    expect(await page.locator('iframe[title^="HTML artifact"]').getAttribute('sandbox')).toBe('allow-scripts');
    // The rest of the note renders around it.
    expect(await page.locator('section.item-view .note-body strong').first().textContent()).toBe('launch');
    expect(await seriousViolations(page)).toEqual([]);
    const shot = screenshotPath('item-note-artifact-1280');
    if (shot) await page.screenshot({ path: shot, fullPage: true });
    // A name the note does not embed is not served.
    const other = await page.evaluate(async (id) => (await fetch(`/ui/api/artifact?note=${encodeURIComponent(id)}&name=secrets.html`)).status, saved.id);
    expect(other).toBe(404);
  });

  describe('reviewing an edit in the note', () => {
    const long = () => fs.readFileSync(path.join(vault, 'Projects', 'Long.md'), 'utf8');
    /** Sends a "revise" turn and opens the note from the waiting card's link; returns the review. */
    async function openReview() {
      await page.getByRole('link', { name: 'Chat', exact: true }).click();
      await page.getByRole('button', { name: 'New conversation', exact: true }).click();
      await page.getByLabel('Provider').selectOption('loopback');
      await page.getByRole('textbox', { name: 'Message', exact: true }).fill('revise the long note');
      await page.getByRole('button', { name: 'Send' }).click();
      // The waiting request opens the activity row; its card points at the note.
      const card = page.locator('.live-turn .activity article.approval[data-tool="vault_update_note"]');
      await card.waitFor();
      await card.getByRole('link', { name: 'Open note to review the change in place' }).click();
      const review = page.getByRole('region', { name: "Review of the agent's change to this note" });
      await review.waitFor();
      return review;
    }

    it('shows the change in the note word by word, unchanged runs collapsed; Accept writes it as shown', async () => {
      const review = await openReview();
      expect(await review.locator('ins').allTextContents()).toEqual(['Saturday']);
      expect(await review.locator('del').allTextContents()).toEqual(['Friday']);
      expect(await review.locator('pre.changed').count()).toBe(1);
      // 14 unchanged lines before the change and 15 after: each run shows its first and last 2 lines.
      expect(await review.getByRole('button', { name: /^Show \d+ unchanged lines/ }).allTextContents()).toEqual([
        expect.stringContaining('10 unchanged lines'),
        expect.stringContaining('11 unchanged lines'),
      ]);
      await review.getByRole('button', { name: /^Show 10 unchanged lines/ }).click();
      await review.getByText('Line 7 of the plan.', { exact: false }).waitFor();
      expect(await seriousViolations(page)).toEqual([]);
      const shot = screenshotPath('note-review-1280');
      if (shot) await page.screenshot({ path: shot, fullPage: true });
      await review.getByRole('button', { name: 'Accept', exact: true }).click();
      await waitFor(() => long().includes('Saturday at noon'), { what: 'the note to be written' });
      expect(long()).toBe(REVISED.text);
      // The view shows the note again, with its new text.
      await page.locator('section.item-view .note-body', { hasText: 'Saturday at noon' }).waitFor();
      expect(c.fx.kernel.audit.tail({ tool: 'vault_update_note' }).at(-1)).toMatchObject({ outcome: 'ok', answeredBy: 'console' });
    });

    it('Reject leaves the note as it was, and the agent is told', async () => {
      fs.writeFileSync(path.join(vault, 'Projects', 'Long.md'), LONG);
      await c.fx.kernel.invoke({ tool: 'vault_reindex', args: {}, caller: { kind: 'host', id: 'test' } });
      const review = await openReview();
      await review.getByRole('button', { name: 'Reject' }).click();
      await waitFor(() => c.fx.kernel.audit.tail({ tool: 'vault_update_note' }).at(-1)?.error?.code === 'PERMISSION_DENIED', {
        what: 'the edit to be refused',
      });
      expect(long()).toBe(LONG);
      await page.getByRole('link', { name: 'Chat', exact: true }).click();
      await page.locator('.transcript .msg.assistant', { hasText: 'Revised: ' }).last().waitFor();
    });

    it('Edit makes a copy to change; Show changes compares it with the note; Accept edits writes the copy through the edit-before-approve flow', async () => {
      const review = await openReview();
      await review.getByRole('button', { name: 'Edit', exact: true }).click();
      const copy = review.getByLabel('Your copy of the suggested text');
      expect(await copy.inputValue()).toBe(REVISED.text);
      await copy.fill(REVISED.text.replace('Saturday at noon', 'Sunday at dawn'));
      await review.getByRole('button', { name: 'Show changes' }).click();
      expect(await review.locator('ins').allTextContents()).toEqual(['Sunday', 'dawn']);
      expect(await review.locator('del').allTextContents()).toEqual(['Friday', 'noon']);
      // Nothing reached the note yet.
      expect(long()).toBe(LONG);
      await review.getByRole('button', { name: 'Accept edits' }).click();
      await waitFor(() => long().includes('Sunday at dawn'), { what: 'the edited copy to be written' });
      expect(long()).toBe(REVISED.text.replace('Saturday at noon', 'Sunday at dawn'));
      // The audit line is committed just after the write: waited for, not raced.
      await waitFor(() => c.fx.kernel.audit.tail({ tool: 'vault_update_note' }).at(-1)?.editedBy, { what: "the edited call's audit line" });
      expect(c.fx.kernel.audit.tail({ tool: 'vault_update_note' }).at(-1)).toMatchObject({ outcome: 'ok', editedBy: 'console' });
    });
  });

  it("runs a turn through an agent CLI (the fake claude): its calls come back through memo serve's endpoint, the reply lists what they returned, and the conversation reopens with its CLI and mode", async () => {
    await page.bringToFront();
    await page.getByRole('link', { name: 'Chat', exact: true }).click();
    await page.getByRole('button', { name: 'New conversation', exact: true }).click();
    await page.getByLabel('Provider').selectOption('cli:claude');
    expect(await page.getByLabel('Web search only').isDisabled()).toBe(true);
    await page.getByLabel('Vault only').check();
    await page.getByRole('textbox', { name: 'Message', exact: true }).fill('call vault_list_tasks');
    await page.getByRole('button', { name: 'Send' }).click();
    const reply = page.locator('.transcript .msg.assistant', { hasText: 'Done:' });
    await reply.waitFor();
    await page.getByText("Claude CLI 2.1.3 runs this turn with Memo's Vault tools only.").waitFor();
    // The CLI's call went through the pipeline (audited as an MCP caller with the turn's capability); its result named the task.
    expect(c.fx.kernel.audit.tail({ tool: 'vault_list_tasks' }).at(-1)).toMatchObject({ outcome: 'ok', caller: expect.objectContaining({ kind: 'mcp' }) });
    await reply.locator('details.sources summary', { hasText: '1 source' }).click();
    await reply.locator('details.sources a.item-link[data-type="task"]', { hasText: 'Fuel the rocket' }).waitFor();
    // The only conversation a CLI ran (not the newest: an earlier test's turn may have been stored after this one began).
    const convs = (await c.fx.kernel.conversations.list(50)).filter((x) => x.provider === 'claude-cli');
    expect(convs).toEqual([expect.objectContaining({ provider: 'claude-cli', mode: 'vault' })]);
    expect(await seriousViolations(page)).toEqual([]);
    // Another conversation, then back: the picker shows this one's CLI and access mode again.
    // (By its id: a title arriving for another conversation refreshes the list meanwhile.)
    const earlier = (await c.fx.kernel.conversations.list(50)).find((x) => x.provider === 'loopback' && x.messages > 0);
    if (!earlier) throw new Error('this test reopens a conversation the earlier tests of this file had with the loopback model');
    await page.locator(`.conversations button.conv[data-id="${earlier.id}"]`).click();
    await waitFor(async () => (await page.getByLabel('Provider').inputValue()) === 'loopback', { what: 'the first conversation to bring back its provider' });
    await page.locator(`.conversations button.conv[data-id="${convs[0]!.id}"]`).click();
    await waitFor(async () => (await page.getByLabel('Provider').inputValue()) === 'cli:claude', { what: 'the CLI conversation to bring back its CLI' });
    expect(await page.getByLabel('Vault only').isChecked()).toBe(true);
  });
});
