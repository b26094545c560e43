// The files the memo-kernel package must ship (bin, the built kernel and its entries' types, the
// console's page, every built-in pack's manifest and code), for scripts/check-package.mjs and
// test/packaging/package-manifest.test.ts alike.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Paths relative to the package root, as `npm pack` lists them. */
export function requiredPackageFiles(root) {
  const builtin = readdirSync(join(root, 'plugins')).filter((d) => existsSync(join(root, 'plugins', d, 'plugin.json')));
  return [
    'package.json',
    'README.md',
    'bin/memo',
    'dist/kernel/index.js',
    'dist/kernel/index.d.ts',
    'dist/kernel/pack.d.ts',
    'dist/kernel/testing.d.ts',
    'dist/kernel/mcp/index.d.ts',
    'dist/kernel/cli/main.js',
    'dist/kernel/sandbox/sandbox-bridge.mjs',
    'dist/kernel/util/heavy-worker.mjs',
    'dist/plugins/console/ui/index.html',
    'dist/plugins/console/ui/app.js',
    'dist/plugins/console/ui/style.css',
    ...builtin.flatMap((id) => [`dist/plugins/${id}/plugin.json`, `dist/plugins/${id}/index.js`]),
  ];
}

/** The docs a package ships: the Markdown pages and their screenshots, not the site's toolchain or the generated API. */
export const isShippedDoc = (f) => /^docs\/(?!node_modules\/|reference\/api\/|\.vitepress\/).*\.md$/.test(f) || /^docs\/screenshots\/[^/]+\.png$/.test(f);

/** Pages `npm run docs` generates in a checkout (TypeDoc's API): linked from the docs, never shipped. */
const GENERATED = /^docs\/reference\/api\//;

/**
 * The relative links of the shipped README and docs (`[text](target)`, outside code blocks) that lead to
 * no file of the package: what a person reading them in node_modules would find dead. `files` are the
 * paths `npm pack` lists; `read(path)` gives a file's text.
 */
export function deadPackageLinks(files, read) {
  const shipped = new Set(files);
  const dirs = new Set(
    files.flatMap((f) =>
      f
        .split('/')
        .slice(0, -1)
        .map((_, i, parts) => parts.slice(0, i + 1).join('/')),
    ),
  );
  const dead = [];
  for (const file of files.filter((f) => f === 'README.md' || (f.startsWith('docs/') && f.endsWith('.md')))) {
    const base = file.split('/').slice(0, -1);
    let fenced = false;
    for (const line of read(file).split('\n')) {
      if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
      if (fenced) continue;
      for (const m of line.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
        const target = m[1].split('#')[0];
        // Other sites, other schemes (memo:note/...), and anchors on the same page are not files.
        if (!target || /^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
        const parts = [...base];
        for (const p of decodeURIComponent(target).split('/')) {
          if (p === '..') parts.pop();
          else if (p && p !== '.') parts.push(p);
        }
        const to = parts.join('/');
        if (GENERATED.test(to)) continue;
        if (!shipped.has(to) && !(dirs.has(to) && shipped.has(`${to}/index.md`))) dead.push(`${file}: ${m[1]}`);
      }
    }
  }
  return dead;
}
