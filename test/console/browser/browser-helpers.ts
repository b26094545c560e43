import * as fs from 'node:fs';
import * as path from 'node:path';
import axe from 'axe-core';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { atTeardown } from '../../helpers/cleanup.js';

/** Debian's chromium, which .ci/run installs. No browser is downloaded. */
export const CHROMIUM = process.env.MEMO_CHROMIUM ?? '/usr/bin/chromium';

/** Starts headless Chromium, closed when the test file ends. Fails (never skips) when it is not installed. */
export async function launchChromium(): Promise<Browser> {
  if (!fs.existsSync(CHROMIUM))
    throw new Error(
      `The console's browser tests need Chromium at ${CHROMIUM} (Debian: apt-get install -y chromium; .ci/run installs it). Set MEMO_CHROMIUM to use another binary.`,
    );
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  atTeardown(() => browser.close());
  return browser;
}

/** Where screenshots go: MEMO_SCREENSHOTS (to look at them) or nowhere. */
export function screenshotPath(name: string): string | undefined {
  const dir = process.env.MEMO_SCREENSHOTS;
  if (!dir) return undefined;
  fs.mkdirSync(dir, { recursive: true });
  return path.join(dir, `${name}.png`);
}

/** axe-core's source, injected into a page to scan it. */
export function axeSource(): string {
  return axe.source;
}

/** axe-core's serious and critical violations on the page as it is now, by rule id. */
export async function seriousViolations(page: Page): Promise<string[]> {
  await page.evaluate(axeSource());
  return page.evaluate(async () => {
    const r = await (window as any).axe.run(document, { resultTypes: ['violations'] });
    return r.violations.filter((v: any) => v.impact === 'serious' || v.impact === 'critical').map((v: any) => v.id);
  });
}

/**
 * The browser's notification API as the page sees it, for a context: granted, each notification
 * recorded in `window.__notifications`, and `document.hidden` read from `window.__hidden` (headless
 * Chromium shows no system notification: that edge is recorded instead).
 */
export async function recordNotifications(context: BrowserContext): Promise<void> {
  await context.addInitScript(() => {
    const w = window as any;
    w.__notifications = [];
    w.__hidden = false;
    Object.defineProperty(document, 'hidden', { get: () => w.__hidden });
    w.Notification = class {
      static permission = 'granted';
      static requestPermission = () => Promise.resolve('granted');
      constructor(title: string, options: { body?: string; tag?: string }) {
        w.__notifications.push({ title, body: options?.body, tag: options?.tag });
      }
    };
  });
}
