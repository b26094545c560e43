/**
 * The console of a real `memo serve` (bin/memo, child process), in Chromium: the link it prints logs
 * in; an MCP client's call that needs approval waits while the page is open and is answered there;
 * SIGHUP prints a new link and the old one stops working; a text-mode start prints the link.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Browser, Page } from 'playwright-core';
import { requireFreshBuild } from '../../helpers/dist.js';
import { waitFor, WAIT_DEADLINE_MS } from '../../helpers/wait.js';
import { connect, raw, ServeProcess, serveWorkspace, type Connected, type ServeWorkspace } from '../../mcp/mcp-helpers.js';
import { launchChromium } from './browser-helpers.js';

beforeAll(requireFreshBuild);

/** A pack with one medium read tool an MCP client may call, so only the approval stands between. */
function workspace(): ServeWorkspace {
  const w = serveWorkspace('memo-console-serve-');
  const dir = path.join(w.packs, 'asker');
  fs.mkdirSync(dir);
  fs.writeFileSync(
    path.join(dir, 'plugin.json'),
    JSON.stringify({
      id: 'asker',
      name: 'asker',
      version: '1.0.0',
      description: 'a medium read tool',
      main: 'index.js',
      tools: [
        {
          name: 'peek',
          description: 'peeks at a name',
          parameters: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'], additionalProperties: false },
          danger: 'medium',
          effect: 'read',
        },
      ],
    }),
  );
  fs.writeFileSync(path.join(dir, 'index.js'), 'export const tools = { peek: (a) => ({ peeked: a.name }) };\n');
  return w;
}

describe('the console of memo serve', () => {
  let w: ServeWorkspace;
  let serve: ServeProcess;
  let info: { url: string; token: string; console: string; pid: number };
  let browser: Browser;
  let page: Page;
  let mcp: Connected;

  beforeAll(async () => {
    browser = await launchChromium();
    w = workspace();
    serve = ServeProcess.start(['--packs', w.packs, '--root', w.root, '--data', w.data, 'serve', '--json']);
    info = await serve.json(0);
    mcp = await connect(info.url, info.token, { name: 'console-e2e' });
    page = await browser.newPage();
  });
  afterAll(async () => {
    await mcp?.close();
    await page?.close();
    expect(await serve.stop()).toBe(0);
  });

  it('prints a console link on the same port that logs in once', async () => {
    expect(info.console).toMatch(new RegExp(`^${new URL(info.url).origin}/ui/login\\?code=[A-Za-z0-9_-]{43}$`));
    expect(info.console).not.toContain(info.token);
    await page.goto(info.console);
    await page.getByRole('heading', { name: 'Approvals' }).waitFor();
    await page.locator('.live.on').waitFor();
    expect((await raw(info.console)).status).toBe(403);
  });

  it("answers an MCP client's call in the page: it waits while the console is open, and returns once allowed", async () => {
    const result = mcp.client.callTool({ name: 'peek', arguments: { name: 'from the console' } }, undefined, {
      timeout: WAIT_DEADLINE_MS,
    }) as Promise<CallToolResult>;
    const item = page.locator('article.approval[data-tool="peek"]');
    await item.waitFor();
    await item.getByText('mcp "console-e2e"').waitFor();
    await item.getByRole('button', { name: 'Allow once' }).click();
    const r = await result;
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent).toEqual({ peeked: 'from the console' });
    const audit = fs
      .readFileSync(path.join(w.data, 'agent-audit.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(audit.at(-1)).toMatchObject({ tool: 'peek', decision: 'allow:once', answeredBy: 'console', outcome: 'ok' });
  });

  it('prints a new link on SIGHUP; the previous one no longer logs in', async () => {
    process.kill(info.pid, 'SIGHUP');
    const first = await serve.json(1);
    process.kill(info.pid, 'SIGHUP');
    const second = await serve.json(2);
    expect(new Set([info.console, first.console, second.console]).size).toBe(3);
    expect((await raw(first.console)).status).toBe(403);
    expect((await raw(second.console)).status).toBe(303);
    // The MCP token rotated with it: the client reconnects with the new one.
    await mcp.close();
    mcp = await connect(second.url, second.token, { name: 'console-e2e' });
  });

  it('prints the link in the text banner too', async () => {
    const text = ServeProcess.start(['--packs', w.packs, '--root', w.root, '--data', `${w.data}-text`, 'serve']);
    try {
      const line = await waitFor(() => text.lines.find((l) => /^\s+http:\/\/127\.0\.0\.1:\d+\/ui\/login\?code=/.test(l)), { what: 'the console link' });
      expect((await raw(line.trim())).status).toBe(303);
    } finally {
      expect(await text.stop()).toBe(0);
    }
  });
});
