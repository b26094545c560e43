#!/usr/bin/env node
// Installs optional packages that are left out of the default install, in node_modules/.memo-extras: a
// project of its own (this checkout's package.json and package-lock.json are not touched; `npm ci`
// removes it with the rest of node_modules; `npm install` leaves it alone). The canvas pack looks there
// after Node's own lookup (plugins/canvas/extras.ts).
//
//   canvas         Excalidraw's renderer and fonts: what rendering and measuring text on a canvas need
//                  (@excalidraw/utils, fontkit, jsdom, @resvg/resvg-js at the versions package.json's
//                  peerDependencies give; one already installed in the checkout is not installed again)
//   canvas-editor  Excalidraw's editor of the same snapshot as @excalidraw/element, with mermaid and React
//                  under it: only the canvas tests use it (they open files with its restoreElements)
//
// Usage: node scripts/install-extras.mjs canvas [canvas-editor]   (npm run install:canvas is the first)
// A host app that depends on memo-kernel installs the canvas group in its own project instead:
// `npm install @excalidraw/utils@0.1.5 fontkit@2.0.4 jsdom@26.1.0 @resvg/resvg-js@2.6.2`.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const folder = join(root, 'node_modules', '.memo-extras');

/** A peer range's lowest version (the one tested): `^2.0.4` -> `2.0.4`. */
const lowest = (range) => /\d+\.\d+\.\d+(?:-[\w.-]+)?/.exec(range)?.[0] ?? range;

const GROUPS = {
  // Keep in step with CANVAS_EXTRAS in plugins/canvas/extras.ts (test/plugins/canvas/extras.test.ts checks).
  canvas: Object.fromEntries(['@excalidraw/utils', 'fontkit', 'jsdom', '@resvg/resvg-js'].map((n) => [n, lowest(pkg.peerDependencies[n])])),
  'canvas-editor': { '@excalidraw/excalidraw': pkg.dependencies['@excalidraw/element'] },
};

const asked = process.argv.slice(2);
if (!asked.length || asked.some((g) => !(g in GROUPS))) {
  console.error(`usage: node scripts/install-extras.mjs ${Object.keys(GROUPS).join('|')} [...]`);
  process.exit(2);
}

const versionAt = (dir, name) => {
  try {
    return JSON.parse(readFileSync(join(dir, 'node_modules', name, 'package.json'), 'utf8')).version;
  } catch {
    return null;
  }
};

const manifest = join(folder, 'package.json');
const current = existsSync(manifest) ? JSON.parse(readFileSync(manifest, 'utf8')) : {};
const wanted = { ...current.dependencies };
for (const group of asked)
  for (const [name, version] of Object.entries(GROUPS[group])) {
    if (versionAt(root, name) === version) {
      console.log(`${name}@${version}: already installed in this checkout`);
      continue;
    }
    wanted[name] = version;
  }

const missing = Object.entries(wanted).filter(([name, version]) => versionAt(folder, name) !== version);
if (!missing.length) {
  console.log(`install-extras: ${asked.join(', ')}: nothing to install (${folder})`);
  process.exit(0);
}
mkdirSync(folder, { recursive: true });
writeFileSync(
  manifest,
  JSON.stringify(
    {
      name: 'memo-extras',
      private: true,
      description: "Memo's optional packages, out of the default install (scripts/install-extras.mjs).",
      dependencies: Object.fromEntries(Object.entries(wanted).sort(([a], [b]) => a.localeCompare(b))),
    },
    null,
    2,
  ) + '\n',
);
console.log(`install-extras: ${missing.map(([n, v]) => `${n}@${v}`).join(' ')} -> ${folder}`);
const started = Date.now();
const npm = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: folder, stdio: 'inherit' });
if (npm.status !== 0) {
  console.error(`install-extras: npm install failed (exit ${npm.status ?? npm.signal})`);
  process.exit(1);
}
let size = '';
try {
  size = `, ${execFileSync('du', ['-sm', folder], { encoding: 'utf8' }).split('\t')[0]} MB`;
} catch {
  // no du: the size is only information
}
console.log(`install-extras: done in ${Math.round((Date.now() - started) / 1000)} s${size}`);
