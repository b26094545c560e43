#!/usr/bin/env node
// `npm run docs` (after `npm run build`): the documentation site, built from docs/ into
// docs/.vitepress/dist, in four timed steps:
//   1. the reference pages generated from the code (scripts/docs-reference.mjs): the CLI from its
//      commander definitions, plugin.json and SKILL.md from their JSON Schemas, each pack's tools
//      from its manifest. `--check` (CI) refuses a committed copy that differs instead of rewriting it;
//   2. the API pages from the public entries' types (TypeDoc, docs/typedoc.json; not committed); a
//      warning fails it, so a public signature that names a type the entries do not export fails here;
//   3. VitePress (a link to a missing page fails it);
//   4. every link, asset and #anchor of the built site (scripts/docs-links.mjs).
// The toolchain (VitePress, TypeDoc) is its own package in docs/, kept out of the kernel's install:
// the first run installs it from docs/package-lock.json (`npm ci --prefix docs`, about 150 MB, 20 s here).
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DOCS = path.join(ROOT, 'docs');
const check = process.argv.includes('--check');

function step(what, cmd, args, cwd = ROOT) {
  const started = Date.now();
  process.stdout.write(`docs: ${what}\n`);
  const r = spawnSync(cmd, args, { cwd, stdio: 'inherit', env: { ...process.env, NODE_OPTIONS: '' } });
  const took = ((Date.now() - started) / 1000).toFixed(1);
  if (r.status !== 0) {
    process.stderr.write(`docs: ${what} failed (exit ${r.status ?? r.signal}, ${took} s)\n`);
    process.exit(1);
  }
  process.stdout.write(`docs: ${what}: done in ${took} s\n`);
}

/** Whether docs/node_modules holds what docs/package-lock.json asks for (npm records it in .package-lock.json). */
function toolchainCurrent() {
  try {
    const wanted = JSON.parse(fs.readFileSync(path.join(DOCS, 'package-lock.json'), 'utf8')).packages;
    const have = JSON.parse(fs.readFileSync(path.join(DOCS, 'node_modules', '.package-lock.json'), 'utf8')).packages;
    return Object.entries(wanted).every(([where, p]) => where === '' || p.optional || have[where]?.version === p.version);
  } catch {
    return false;
  }
}

if (!fs.existsSync(path.join(ROOT, 'dist', 'kernel', 'cli', 'main.js'))) {
  process.stderr.write('docs: the kernel is not built: run `npm run build` first (`npm run docs` does)\n');
  process.exit(2);
}
if (!toolchainCurrent()) step('installing the docs toolchain (npm ci --prefix docs)', 'npm', ['ci', '--prefix', 'docs', '--no-audit', '--no-fund']);
step(check ? 'checking the generated reference is current' : 'generating the reference', process.execPath, [
  'scripts/docs-reference.mjs',
  ...(check ? ['--check'] : []),
]);
fs.rmSync(path.join(DOCS, 'reference', 'api'), { recursive: true, force: true });
step(
  'API pages from the public entries (TypeDoc)',
  path.join(DOCS, 'node_modules', '.bin', 'typedoc'),
  ['--options', 'typedoc.json', '--treatWarningsAsErrors'],
  DOCS,
);
step('building the site (VitePress)', path.join(DOCS, 'node_modules', '.bin', 'vitepress'), ['build', '.'], DOCS);
step('checking every link and anchor of the built site', process.execPath, ['scripts/docs-links.mjs']);
process.stdout.write(`docs: the site is in ${path.relative(process.cwd(), path.join(DOCS, '.vitepress', 'dist')) || '.'}\n`);
