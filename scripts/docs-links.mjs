#!/usr/bin/env node
// The built site's links, checked offline: every link, image and asset in every page of
// docs/.vitepress/dist must lead to a file of the site, and every #fragment to an element with that
// id on its page. VitePress's own check (ignoreDeadLinks: false) catches a link to a missing page in
// the Markdown; this one also catches a missing anchor, a broken sidebar entry and a link written as
// HTML. Links off the site (http, mailto) are counted, not fetched: the docs build runs offline.
// `node scripts/docs-links.mjs [dir]`: exit 1 listing each broken link with the page it is on.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'node-html-parser';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function htmlFiles(dir) {
  const out = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...htmlFiles(full));
    else if (e.name.endsWith('.html')) out.push(full);
  }
  return out;
}

/** The broken links of the site built in `site`: [{ page, href, why }], and how many were checked. */
export function brokenLinks(site) {
  const pages = new Map();
  for (const file of htmlFiles(site)) pages.set(file, parse(fs.readFileSync(file, 'utf8')));
  const ids = new Map();
  const idsOf = (file) => {
    if (!ids.has(file))
      ids.set(
        file,
        new Set(
          pages
            .get(file)
            .querySelectorAll('[id]')
            .map((el) => el.getAttribute('id')),
        ),
      );
    return ids.get(file);
  };
  const broken = [];
  let checked = 0;
  let external = 0;
  for (const [file, doc] of pages) {
    const page = '/' + path.relative(site, file).split(path.sep).join('/');
    for (const el of doc.querySelectorAll('a[href], img[src], link[href], script[src]')) {
      const href = el.getAttribute('href') ?? el.getAttribute('src');
      if (!href || /^(https?:|mailto:|data:|javascript:)/i.test(href)) {
        if (href && /^https?:/i.test(href)) external++;
        continue;
      }
      checked++;
      const url = new URL(href, `http://site${page}`);
      let target = path.join(site, decodeURIComponent(url.pathname));
      if (url.pathname.endsWith('/')) target = path.join(target, 'index.html');
      if (!fs.existsSync(target) && fs.existsSync(target + '.html')) target += '.html';
      if (!fs.existsSync(target) || fs.statSync(target).isDirectory()) {
        broken.push({ page, href, why: 'no such file in the site' });
        continue;
      }
      const fragment = decodeURIComponent(url.hash.slice(1));
      if (fragment && target.endsWith('.html') && pages.has(target) && !idsOf(target).has(fragment)) {
        broken.push({ page, href, why: `no element with id "${fragment}" on ${path.relative(site, target)}` });
      }
    }
  }
  return { broken, checked, external, pages: pages.size };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const site = path.resolve(process.argv[2] ?? path.join(ROOT, 'docs', '.vitepress', 'dist'));
  if (!fs.existsSync(site)) {
    process.stderr.write(`docs-links: ${site} does not exist: build the site first (npm run docs)\n`);
    process.exit(2);
  }
  const { broken, checked, external, pages } = brokenLinks(site);
  for (const b of broken) process.stderr.write(`broken link on ${b.page}: ${b.href} (${b.why})\n`);
  process.stdout.write(`${pages} pages, ${checked} links inside the site checked, ${external} links off the site not fetched: ${broken.length} broken\n`);
  process.exit(broken.length ? 1 : 0);
}
