import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { atTeardown } from '../../helpers/cleanup.js';
import { nth } from '../../helpers/nth.js';
import { deferred } from '../../helpers/wait.js';
import { isNotPublic } from '../../../plugins/vault/page-title.js';
import { error, PLUGINS, planningSql, value, vaultKernel, type VaultFixture, bridgeRefusal } from './helpers.js';

/** The vault kernel with the calendar pack loaded beside it (local calendar in UTC). */
async function withCalendar(files: Record<string, string> = {}): Promise<VaultFixture> {
  const fx = await vaultKernel({ files });
  const statuses = await fx.kernel.loadPacks([{ dir: PLUGINS, source: 'builtin', only: ['vault', 'calendar'] }]);
  const cal = statuses.find((s) => s.id === 'calendar');
  if (cal?.status !== 'loaded') throw new Error(`calendar did not load: ${cal?.error ?? 'not found'}`);
  fx.kernel.packs.setConfig('calendar', { timeZone: 'UTC' });
  return fx;
}

/** Pages on loopback: a title with entities, an og:title only, redirects, a redirect loop, a PDF, a page past 2 MiB. */
async function pageServer() {
  const server = http.createServer((req, res) => {
    const html = (body: string) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(body);
    switch (req.url) {
      case '/article':
        return html('<html><head><title>\n  Fish &amp; Chips &#8212; Ann&#39;s &quot;guide&quot;\n</title></head><body>x</body></html>');
      case '/og':
        return html('<html><head><meta property="og:title" content="Only &amp; OG"></head><body></body></html>');
      case '/moved':
        return void res.writeHead(302, { location: '/article' }).end();
      case '/loop':
        return void res.writeHead(302, { location: '/loop' }).end();
      case '/to-file':
        return void res.writeHead(302, { location: 'file:///etc/passwd' }).end();
      case '/paper.pdf':
        return void res.writeHead(200, { 'content-type': 'application/pdf' }).end('%PDF-1.4');
      case '/big':
        res.writeHead(200, { 'content-type': 'text/html' });
        res.write('<html><head><title>Big page</title></head><body>');
        for (let i = 0; i < 40; i++) res.write('x'.repeat(100_000));
        return void res.end('</body></html>');
      default:
        return void res.writeHead(404).end('no');
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  atTeardown(() => {
    server.closeAllConnections();
    return new Promise((r) => server.close(r));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** An address nothing listens on. */
async function deadAddress(): Promise<string> {
  const s = http.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return `http://127.0.0.1:${port}`;
}

const write = (fx: VaultFixture, operation: string, args: unknown[]) => fx.call('vault_desktop_write', { operation, args });

async function setFeatures(fx: VaultFixture, features: Record<string, boolean>): Promise<void> {
  value(await fx.call('vault_list_inbox_items', {}));
  await planningSql(fx, `DELETE FROM vault_settings WHERE key = 'features'`);
  await planningSql(fx, `INSERT INTO vault_settings (key, value) VALUES ('features', ?)`, [JSON.stringify(features)]);
}

describe('inbox.captureLink', () => {
  let fx: VaultFixture;
  let site: string;
  beforeAll(async () => {
    site = await pageServer();
    // The test pages are served on loopback, which the bridge fetches only when the setting allows it.
    fx = await vaultKernel({ config: { fetch_private_addresses: true } });
  });
  afterAll(() => fx.close());
  beforeEach(() => void (fx.prompter.asked.length = 0));

  it('fetches the page title (entities decoded, white space folded) and adds an item with the link', async () => {
    const r = value(await write(fx, 'inbox.captureLink', [{ url: `${site}/article` }]));
    expect(r).toMatchObject({ success: true, title_fetched: true, item: { title: 'Fish & Chips — Ann\'s "guide"', url: `${site}/article`, archived: false } });
    expect(r.warning).toBeUndefined();
    expect(value(await fx.call('vault_get_inbox_item', { item: r.item.id }))).toMatchObject({ title: 'Fish & Chips — Ann\'s "guide"' });
    const q = nth(fx.prompter.asked, 0);
    expect(q.preview!.kind).toBe('fields');
    const lines = q.preview!.text.split('\n');
    expect(lines[0]).toBe('inbox.captureLink (write)');
    expect(lines).toContain('This fetches from the network (the address given).');
    expect(lines).toContain(`url: (not set) -> ${site}/article`);
    expect(lines).toContain(`title: (not set) -> the page's title (127.0.0.1:${new URL(site).port}/article if it cannot be fetched)`);
    expect(q.preview!.text).toContain(`Fetches ${site}/article`);
  });

  it('fetches nothing on this machine or a private network unless the setting allows it, whether named by address or by name', async () => {
    const strict = await vaultKernel();
    try {
      for (const url of [`${site}/article`, `http://localhost:${new URL(site).port}/article`, `http://[::ffff:127.0.0.1]:${new URL(site).port}/article`]) {
        const r = value(await write(strict, 'inbox.captureLink', [{ url }]));
        expect(r).toMatchObject({ success: true, title_fetched: false });
        expect(r.warning).toMatch(
          /is not a public address: pages on this machine or a private network are not fetched \(the vault setting fetch_private_addresses allows them\)/,
        );
        expect(r.item.title).not.toContain('Fish');
      }
    } finally {
      await strict.close();
    }
  });

  it.each([
    ['127.0.0.1', true],
    ['10.1.2.3', true],
    ['172.20.0.1', true],
    ['192.168.1.10', true],
    ['169.254.169.254', true],
    ['100.64.0.1', true],
    ['0.0.0.0', true],
    ['::1', true],
    ['fe80::1', true],
    ['fd12:3456::1', true],
    ['::ffff:10.0.0.1', true],
    ['::ffff:8.8.8.8', false],
    ['8.8.8.8', false],
    ['1.1.1.1', false],
    ['2606:4700:4700::1111', false],
  ])('judges %s as %s for "not public"', (address, expected) => {
    expect(isNotPublic(address)).toBe(expected);
  });

  it("falls back to og:title, and follows a redirect to the page's title", async () => {
    expect(value(await write(fx, 'inbox.captureLink', [{ url: `${site}/og` }])).item.title).toBe('Only & OG');
    expect(value(await write(fx, 'inbox.captureLink', [{ url: `${site}/moved` }])).item).toMatchObject({
      title: expect.stringMatching(/^Fish & Chips/),
      url: `${site}/moved`,
    });
  });

  it('reads the title of a page larger than 2 MiB from its first part', async () => {
    expect(value(await write(fx, 'inbox.captureLink', [{ url: `${site}/big` }])).item.title).toBe('Big page');
  });

  it('titles the item by host and path, and says so, when the page cannot be fetched or read', async () => {
    const dead = await deadAddress();
    const cases: Array<[string, RegExp]> = [
      [`${dead}/gone/page`, /could not be reached/],
      [`${site}/missing`, /HTTP 404/],
      [`${site}/loop`, /more than 5 redirects/],
      [`${site}/to-file`, /redirects to a file: address/],
      [`${site}/paper.pdf`, /not a web page \(application\/pdf\)/],
    ];
    for (const [url, why] of cases) {
      const r = value(await write(fx, 'inbox.captureLink', [{ url }]));
      const u = new URL(url);
      expect(r).toMatchObject({ success: true, title_fetched: false, item: { title: `${u.host}${u.pathname}`, url } });
      expect(r.warning).toMatch(/^The title could not be fetched/);
      expect(r.warning).toMatch(why);
    }
  });

  it('refuses a link that is not http or https, or unknown keys, before anyone is asked', async () => {
    for (const args of [[{ url: 'file:///etc/passwd' }], [{ url: 'not a link' }], [{ url: `${site}/article`, title: 'x' }], []]) {
      expect(bridgeRefusal(await write(fx, 'inbox.captureLink', args)).code).toBe('VALIDATION');
    }
    expect(fx.prompter.asked).toHaveLength(0);
  });
});

describe('inbox conversions', () => {
  let fx: VaultFixture;
  beforeEach(async () => {
    fx = await withCalendar({ 'Home.md': '# Home\n', 'Projects/Plan.md': '# Plan\n' });
  });
  afterEach(() => fx.close());

  const CONTENT = 'Talked about [[Home]] and [[Plan|the plan]].\nSee https://example.com/ref for more.\n';
  const addItem = async (extra: Record<string, unknown> = {}) =>
    value(await fx.call('vault_add_to_inbox', { title: 'Follow up', content: CONTENT, url: 'https://example.com/src', tags: ['work', 'later'], ...extra }))
      .id as string;

  it('converts an item to a note (content, links, url as source:, tags) and archives it with converted_to', async () => {
    const id = await addItem();
    fx.prompter.asked.length = 0;
    const r = value(await write(fx, 'inbox.convertToNote', [{ itemId: id, folder: 'Inbox notes' }]));
    expect(r.note).toEqual({ id: expect.stringMatching(/^[0-9a-z]+$/), path: 'Inbox notes/Follow up.md', title: 'Follow up' });
    expect(r.item).toMatchObject({ id, archived: true, converted_to: `note:${r.note.id}` });
    const text = fx.read('Inbox notes/Follow up.md');
    expect(text).toContain('source: https://example.com/src');
    expect(text).toMatch(/tags:\n\s+- work\n\s+- later/);
    expect(text.endsWith(CONTENT)).toBe(true);
    // The note is indexed: its wiki links resolve and its tags are the vault's.
    const read = value(await fx.call('vault_read_note', { note: r.note.id }));
    expect(read).toMatchObject({ path: 'Inbox notes/Follow up.md' });
    expect(JSON.stringify(read)).toContain('https://example.com/ref');
    const tags = value(await fx.call('vault_get_tags', {})).tags.map((t: any) => t.tag ?? t.name);
    expect(tags).toEqual(expect.arrayContaining(['work', 'later']));
    expect(value(await fx.call('vault_get_inbox_item', { item: id }))).toMatchObject({ archived: true, converted_to: `note:${r.note.id}` });

    const q = nth(fx.prompter.asked, 0);
    expect(q.preview!.kind).toBe('diff');
    const t = q.preview!.text;
    expect(t).toContain('+++ b/Inbox notes/Follow up.md');
    expect(t).toContain('+source: https://example.com/src');
    expect(t).toContain('+Talked about [[Home]] and [[Plan|the plan]].');
    expect(t).toContain(`Archives the inbox item Follow up (id ${id}):\n  archived: false -> true\n  converted_to: (not set) -> note:<the new note id>`);
  });

  it('refuses converting an item a second time, or an unknown item, before anyone is asked', async () => {
    const id = await addItem();
    value(await write(fx, 'inbox.convertToNote', [{ itemId: id }]));
    fx.prompter.asked.length = 0;
    const again = bridgeRefusal(await write(fx, 'inbox.convertToTask', [{ itemId: id }]));
    expect(again.code).toBe('CONFLICT');
    expect(again.message).toMatch(/already converted \(note:/);
    expect(bridgeRefusal(await write(fx, 'inbox.convertToNote', [{ itemId: id }])).code).toBe('CONFLICT');
    expect(bridgeRefusal(await write(fx, 'inbox.convertToReminder', [{ itemId: id, remindAt: '2099-01-01T09:00:00Z' }])).code).toBe('CONFLICT');
    expect(bridgeRefusal(await write(fx, 'inbox.convertToNote', [{ itemId: 'nope' }])).code).toBe('NOT_FOUND');
    expect(bridgeRefusal(await write(fx, 'inbox.convertToNote', [{ itemId: id, folder: '../out' }])).code).toBe('PATH_OUTSIDE_ROOT');
    expect(fx.prompter.asked).toHaveLength(0);
  });

  it('names the note file without the characters a file cannot carry, keeps the title in front matter, and never overwrites', async () => {
    fx.put('Re- plans - Q3?.md', 'taken\n');
    const id = await addItem({ title: 'Re: plans / Q3?' });
    const first = value(await write(fx, 'inbox.convertToNote', [{ itemId: id }]));
    expect(first.note).toMatchObject({ path: 'Re- plans - Q3-.md', title: 'Re: plans / Q3?' });
    const id2 = await addItem({ title: 'Re: plans / Q3?' });
    expect(value(await write(fx, 'inbox.convertToNote', [{ itemId: id2 }])).note.path).toBe('Re- plans - Q3- 2.md');
    expect(fx.read('Re- plans - Q3?.md')).toBe('taken\n');
  });

  it('converts an item to a task in a project named by name, keeping text, link and tags', async () => {
    const project = value(await fx.call('vault_create_project', { name: 'Launch' }));
    const id = await addItem();
    fx.prompter.asked.length = 0;
    const r = value(await write(fx, 'inbox.convertToTask', [{ itemId: id, projectId: 'launch' }]));
    expect(r.task).toMatchObject({ title: 'Follow up', project_id: project.id, tags: ['work', 'later'] });
    expect(r.task.description).toBe(`${CONTENT.trimEnd()}\n\nhttps://example.com/src\n`);
    expect(r.item).toMatchObject({ id, archived: true, converted_to: `task:${r.task.id}` });
    expect(value(await fx.call('vault_get_task', { task: r.task.id }))).toMatchObject({ description: r.task.description, project_name: 'Launch' });
    const q = nth(fx.prompter.asked, 0);
    expect(q.preview!.kind).toBe('fields');
    const lines = q.preview!.text.split('\n');
    expect(lines).toContain('title: (not set) -> Follow up');
    expect(lines).toContain('project: (not set) -> Launch');
    expect(lines).toContain('tags: (not set) -> ["work","later"]');
    expect(lines).toContain('  converted_to: (not set) -> task:<the new task id>');
  });

  it('refuses a task conversion while the Tasks feature is off, or for an unknown project, before anyone is asked', async () => {
    const id = await addItem();
    fx.prompter.asked.length = 0;
    expect(bridgeRefusal(await write(fx, 'inbox.convertToTask', [{ itemId: id, projectId: 'nope' }])).code).toBe('NOT_FOUND');
    await setFeatures(fx, { tasks: false });
    const off = bridgeRefusal(await write(fx, 'inbox.convertToTask', [{ itemId: id }]));
    expect(off.code).toBe('TOOL_DISABLED');
    expect(off.message).toMatch(/Tasks feature is switched off/);
    expect(fx.prompter.asked).toHaveLength(0);
    // The item is untouched and the note conversion, an inbox operation, still works.
    expect(value(await write(fx, 'inbox.convertToNote', [{ itemId: id }])).item.converted_to).toMatch(/^note:/);
    await setFeatures(fx, { inbox: false });
    expect(bridgeRefusal(await write(fx, 'inbox.captureLink', [{ url: 'https://example.com/' }])).code).toBe('TOOL_DISABLED');
  });

  it('converts an item to a calendar event through the calendar pack', async () => {
    const id = await addItem();
    fx.prompter.asked.length = 0;
    const r = value(await write(fx, 'inbox.convertToEvent', [{ itemId: id, startAt: '2026-05-20T09:00:00Z', endAt: '2026-05-20T10:00:00Z' }]));
    expect(r.event).toMatchObject({
      id: expect.stringMatching(/^local:/),
      title: 'Follow up',
      start: '2026-05-20T09:00:00Z',
      end: '2026-05-20T10:00:00Z',
      calendar: 'local',
    });
    expect(r.item).toMatchObject({ archived: true, converted_to: `event:${r.event.id}` });
    const events = value(await fx.call('get_calendar_events', { start: '2026-05-20' })).events;
    expect(events).toEqual([expect.objectContaining({ id: r.event.id, title: 'Follow up', description: expect.stringContaining('[[Home]]') })]);
    expect(events[0].description).toContain('https://example.com/src');
    const q = nth(fx.prompter.asked, 0);
    expect(q.preview!.text.split('\n')).toEqual(
      expect.arrayContaining([
        'calendar: (not set) -> local',
        'start: (not set) -> 2026-05-20T09:00:00Z',
        '  converted_to: (not set) -> event:<the new event id>',
      ]),
    );
    // A date is an all-day event.
    const day = value(await write(fx, 'inbox.convertToEvent', [{ itemId: await addItem({ title: 'All day' }), startAt: '2026-05-21' }]));
    expect(day.event).toMatchObject({ start: '2026-05-21', end: '2026-05-22' });
  });

  it('refuses an event conversion before anyone is asked when the calendar pack is not loaded', async () => {
    const bare = await vaultKernel();
    try {
      const id = value(await bare.call('vault_add_to_inbox', { title: 'Meet' })).id;
      bare.prompter.asked.length = 0;
      const e = error(await bare.call('vault_desktop_write', { operation: 'inbox.convertToEvent', args: [{ itemId: id, startAt: '2026-05-20T09:00:00Z' }] }));
      expect(e.message).toMatch(/the calendar pack is not loaded/);
      expect(bare.prompter.asked).toHaveLength(0);
      expect(value(await bare.call('vault_get_inbox_item', { item: id }))).toMatchObject({ archived: false, converted_to: null });
    } finally {
      await bare.close();
    }
  });

  it('sets a reminder: stored as UTC, shown as a field change, the item stays in the inbox', async () => {
    const id = await addItem();
    fx.prompter.asked.length = 0;
    const r = value(await write(fx, 'inbox.convertToReminder', [{ itemId: id, remindAt: '2099-03-01T09:30:00+02:00' }]));
    expect(r.item).toMatchObject({ id, remind_at: '2099-03-01T07:30:00.000Z', archived: false, converted_to: null, content: CONTENT });
    expect(nth(fx.prompter.asked, 0).preview).toEqual({
      kind: 'fields',
      text: `inbox.convertToReminder (write)\nInbox item Follow up (id ${id}) (stays in the inbox)\nremind_at: (not set) -> 2099-03-01T07:30:00.000Z`,
    });
    const listed = value(await fx.call('vault_list_inbox_items', {})).items.map((i: any) => i.id);
    expect(listed).toContain(id);
    expect(value(await fx.call('vault_get_inbox_item', { item: id }))).toMatchObject({ remind_at: '2099-03-01T07:30:00.000Z' });
    value(await write(fx, 'inbox.convertToReminder', [{ itemId: id, remindAt: '2099-03-02T07:30:00Z' }]));
    expect(fx.prompter.asked.at(-1)!.preview!.text).toContain('remind_at: 2099-03-01T07:30:00.000Z -> 2099-03-02T07:30:00.000Z');
  });

  it('refuses a reminder in the past, without a zone, or on a day that does not exist, before anyone is asked', async () => {
    const id = await addItem();
    fx.prompter.asked.length = 0;
    for (const remindAt of ['2020-01-01T09:00:00Z', '2099-01-01T09:00:00', '2099-02-30T09:00:00Z', 'tomorrow']) {
      expect(bridgeRefusal(await write(fx, 'inbox.convertToReminder', [{ itemId: id, remindAt }])).code).toBe('VALIDATION');
    }
    expect(fx.prompter.asked).toHaveLength(0);
  });

  it('writes nothing when the item changed after the preview was shown', async () => {
    const id = await addItem();
    const asked = deferred();
    const release = deferred<'allow-once'>();
    (fx.prompter as any).ask = async () => {
      asked.resolve();
      return release.promise;
    };
    const call = write(fx, 'inbox.convertToNote', [{ itemId: id }]);
    await asked.promise;
    await planningSql(fx, `UPDATE inbox_items SET title = 'Changed' WHERE id = ?`, [id]);
    release.resolve('allow-once');
    const r = value(await call);
    expect(r).toMatchObject({ success: false, code: 'CONFLICT' });
    expect(r.error).toMatch(/changed after the preview/);
    expect(value(await fx.call('vault_get_inbox_item', { item: id }))).toMatchObject({ archived: false, converted_to: null, title: 'Changed' });
  });
});
